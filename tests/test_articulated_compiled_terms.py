"""The compiled articulation terms (sim/articulated/compiled_terms.py, sim/kernels/articulated_terms.py) against
their numpy oracles: the stage objective against energy.total, its gradient against central differences, the
row pull-back against pull_back_numpy; W worlds together == each alone, bit for bit."""

import dataclasses

import numpy as np
import pytest

import superdex_gym.sim as mochi
from superdex_gym.sim import articulated as art
from superdex_gym.sim.articulated import compiled_terms, coupled, energy, kinematics as kin
from superdex_gym.sim.potentials.base import Coupling

from test_articulated_energy import SHAPE, _away_from_kinks, model as mixed_model, stage, world_stage

JT = art.ArticulatedJointType
FR = art.ArticulatedJointFrictionParams


def chain_model():
    """1-DoF joints only (the kernel owns every limit): a prismatic and three revolutes, each with friction, rotor
    inertia and limits, one Stribeck ramp, a branch (links 2 and 3 both on link 1)."""
    p = art.ArticulatedActorParams(name="chain", world_from_root=mochi.TransformRT(translation=[0, 1, 0]))
    p.joints = [
        art.ArticulatedJointParams(type=JT.PRISMATIC, axis=[1, 0, 0], min_limit=[-0.05, 0, 0], max_limit=[0.05, 0, 0],
                                   friction=FR(viscous=0.5, coulomb=0.2), inertia=0.1, limit_damping=2.0),
        art.ArticulatedJointParams(type=JT.REVOLUTE, axis=[0, 0, 1], inertia=0.02, limit_damping=3.0,
                                   min_limit=[0, 0, -0.1], max_limit=[0, 0, 0.1],
                                   friction=FR(coulomb=0.1, stiction_extra=0.05, stribeck_vel=0.01),
                                   parent_link_from_joint=mochi.TransformRT(translation=[0.1, -0.3, 0])),
        art.ArticulatedJointParams(type=JT.REVOLUTE, axis=[1, 0, 1], friction=FR(viscous=0.3),
                                   parent_link_from_joint=mochi.TransformRT(translation=[0, -0.3, 0])),
        art.ArticulatedJointParams(type=JT.REVOLUTE, axis=[0, 1, 0], min_limit=[0, -0.05, 0], max_limit=[0, 0.2, 0],
                                   friction=FR(coulomb=0.3), parent_link_from_joint=mochi.TransformRT(
                                       translation=[0, -0.3, 0.1])),
    ]
    p.links = [art.ArticulatedLinkParams(parent_link=parent, shape=SHAPE, density=1000.0,
                                         center_of_mass=(0.01, 0.02, -0.01),
                                         moment_of_inertia=(0.05, 0.001, 0, 0.006, 0.0005, 0.05),
                                         parent_joint_from_link=mochi.TransformRT(translation=[0, -0.2, 0]))
               for parent in (-1, 0, 1, 1)]
    return art.build_model(p)


def chain_stage(m, rng, num_worlds=3, psd=True):
    s = stage(m, rng, num_worlds)
    drives = [energy.Drive(dof=1, target=rng.normal(size=num_worlds), stiffness=300.0, damping=4.0,
                           target_old=rng.normal(size=num_worlds)),
              energy.Drive(dof=2, target=0.3, stiffness=1e4, damping=1.0, saturation=0.02),  # past its saturation
              energy.Drive(dof=3, target=0.05, stiffness=1e3, damping=0.0, saturation=10.0)]  # below it
    return dataclasses.replace(s, drives=drives, ranges=[], dof_loads=None, tracking=[], psd=psd)


def _scale(parts):
    return max(1.0, max(np.abs(p).max() for p in parts))


@pytest.mark.parametrize("which", ["chain", "mixed"])
@pytest.mark.parametrize("psd", [True, False])
def test_compiled_total_equals_the_numpy_terms_to_round_off(which, psd):
    m = chain_model() if which == "chain" else mixed_model()
    rng = np.random.default_rng(3)
    s = chain_stage(m, rng, psd=psd) if which == "chain" else dataclasses.replace(stage(m, rng, 3), psd=psd)
    for spread in (0.0005, 0.3):  # inside the friction ramp's cubic zone and past it; inside and past the limits
        q = s.q0 + rng.uniform(-spread, spread, s.q0.shape)
        e0, g0, h0 = energy.total(m, q, s)
        e1, g1, h1 = compiled_terms.total(m, q, s)
        # each entry sums a few dozen rounded products no larger than the largest term, in another order: a few
        # dozen ulps of that term (measured: at most 5.5e-16 of it)
        terms = [t(m, q, s) for t in energy.TERMS]
        bound = 64 * np.finfo(np.float64).eps
        assert np.abs(e1 - e0).max() <= bound * _scale([t[0] for t in terms])
        assert np.abs(g1 - g0).max() <= bound * _scale([t[1] for t in terms])
        assert np.abs(h1 - h0).max() <= bound * _scale([t[2] for t in terms])
        assert np.array_equal(h1, np.swapaxes(h1, 1, 2))


def test_compiled_gradient_matches_central_differences_of_its_energy():
    m = chain_model()
    rng = np.random.default_rng(5)
    s = chain_stage(m, rng)
    q = _away_from_kinks(m, s.q0 + rng.uniform(-0.2, 0.2, s.q0.shape), s)
    _, g, _ = compiled_terms.total(m, q, s)
    eps = 1e-7
    fd = np.zeros_like(q)
    for d in range(m.num_dofs):
        e = np.zeros_like(q)
        e[:, d] = eps
        fd[:, d] = (compiled_terms.total(m, kin.add_delta(m, q, e), s)[0]
                    - compiled_terms.total(m, kin.add_delta(m, q, -e), s)[0]) / (2 * eps)
    # central differences: h^2 U''' / 6 plus round-off |U| eps_mach / h
    assert np.abs(fd - g).max() <= 1e-6 * max(1.0, np.abs(g).max())


def test_compiled_total_of_worlds_together_equals_each_alone_bit_for_bit():
    m = chain_model()
    s = chain_stage(m, np.random.default_rng(9), num_worlds=3)
    q = s.q0 + 0.01
    together = compiled_terms.total(m, q, s)
    for w in range(3):
        alone = compiled_terms.total(m, q[w:w + 1], world_stage(s, w))
        for a, b in zip(together, alone):
            assert np.array_equal(a[w:w + 1], b)


@dataclasses.dataclass
class _Art:
    rows: np.ndarray
    offset: int


def _pull_back_case(num_worlds, rng):
    """Rows: static 0, rigid 1 and 4, links of two articulations (D = 4 and 3) at rows 2, 3, 5 and 6, 7; dense
    random blocks, a zero row, couplings rigid-link, link-link and with the static row."""
    is_static = np.array([True, False, True, True, False, True, True, True])  # link rows are static rigid rows
    arts = [_Art(np.array([2, 3, 5]), 12), _Art(np.array([6, 7]), 16)]
    kinematics = [(None, None, None, rng.normal(size=(num_worlds, 3, 6, 4))),
                  (None, None, None, rng.normal(size=(num_worlds, 2, 6, 3)))]
    grad6 = rng.normal(size=(num_worlds, 8, 6))
    hess6 = rng.normal(size=(num_worlds, 8, 6, 6))
    hess6 = hess6 + np.swapaxes(hess6, -1, -2)
    grad6[:, 5], hess6[:, 5] = 0.0, 0.0
    couplings = [Coupling(np.array([1, 2]), np.array([6, 7]), rng.normal(size=(num_worlds, 2, 6, 6))),
                 Coupling(np.array([0, 3]), np.array([4, 4]), rng.normal(size=(num_worlds, 2, 6, 6)))]
    return is_static, arts, kinematics, 19, grad6, hess6, couplings


def test_pull_back_kernel_equals_numpy():
    case = _pull_back_case(4, np.random.default_rng(11))
    g0, h0 = coupled.pull_back_numpy(*case)
    g1, h1 = coupled.pull_back_kernel(*case)
    # sums of at most ~ (rows + couplings) x 36 products of unit-size normals
    np.testing.assert_allclose(g1, g0, rtol=0, atol=1e-12)
    np.testing.assert_allclose(h1, h0, rtol=0, atol=1e-12)
    # rigid 1 couples to the second articulation, rigid 4 to the first only (its pair with the static row is dropped)
    assert np.any(h1[:, :6, 16:]) and np.any(h1[:, 6:12, 12:16]) and not np.any(h1[:, 6:12, 16:])


def test_pull_back_of_worlds_together_equals_each_alone_bit_for_bit():
    is_static, arts, kinematics, size, grad6, hess6, couplings = _pull_back_case(3, np.random.default_rng(2))
    g, h = coupled.pull_back_kernel(is_static, arts, kinematics, size, grad6, hess6, couplings)
    for w in range(3):
        one = [(None, None, None, k[3][w:w + 1]) for k in kinematics]
        cps = [Coupling(c.body_a, c.body_b, c.block[w:w + 1]) for c in couplings]
        gw, hw = coupled.pull_back_kernel(is_static, arts, one, size, grad6[w:w + 1], hess6[w:w + 1], cps)
        assert np.array_equal(gw, g[w:w + 1]) and np.array_equal(hw, h[w:w + 1])
