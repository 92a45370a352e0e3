"""The two-actor joint kernels (sim/kernels/joints.py) against their numpy oracles, finite differences and themselves.

Oracle tolerance (``ROUND_OFF``, relative to the array's largest entry): the kernels do the oracle's arithmetic
with the same operations in another grouping (loops instead of einsum, numpy's matmul rounding kept with fma; the
accumulation into shared actors in the same order). Each output is a short sum (3-term rows of 3x3 products,
J^T lam over 3 rows, at most 3 constraints per actor: at most ~8 terms) whose regrouping moves it by at most ~8
ulps of its largest partial sum, and the partial sums are at most ~4x the largest entry here (0.5 m CoM positions
cancelling into 0.05-0.1 m deviations): ~32 eps of the largest entry; we allow 64 eps = 1.4e-14. Measured over 25
seeds, quadratic and saturated: at most 6.7 eps (prismatic couplings), 2-3 eps for the other types.

Finite differences use the step and tolerance of tests/test_constraint_potentials.py (100 (h^2 + eps/h) * scale).
"""

from __future__ import annotations

import numba
import numpy as np
import pytest

from superdex_gym.sim import lie
from superdex_gym.sim.constraints import RigidSphericalJointConstraintParams, RigidSphericalJointConstraints
from superdex_gym.sim.jit import kernel_array
from superdex_gym.sim.kernels.joints import (rotation_scratch, rotation_tracking_values, spherical_joint_values,
                                             two_actor_compliance)
from superdex_gym.sim.potentials.base import PotentialTerms
from helpers import dense_hessian
from test_constraint_fixtures import NUM_BODIES, assert_worlds_alone_equal_together, build_scenario, make_ctx
from test_constraint_potentials import H_GRADIENT, H_HESSIAN, assert_gradient_is_fd_of_energy, fd_tolerance, perturbed

ROUND_OFF = 64 * np.finfo(np.float64).eps  # relative to the largest entry (module docstring)
JOINT_KINDS = ("spherical", "prismatic", "rotation_range", "rotation_tracking")


def assert_close(kernel, oracle):
    scale = max(float(np.max(np.abs(oracle))), 1e-300)
    np.testing.assert_allclose(kernel, oracle, rtol=0, atol=ROUND_OFF * scale)


def _scenario(kind, seed=3, saturation=-1.0, damping=4.0):
    sc = build_scenario(kind, seed=seed, saturation=saturation, exact_hessian=False, damping=damping)
    if kind == "rotation_tracking":  # new targets: current != old, so damping sees both
        cs = sc.constraints
        for i in range(len(cs)):
            cs.set_target_rotation(i, lie.exp_so3(sc.rng.normal(scale=0.05, size=(cs.num_worlds, 3)))
                                   @ cs._targets["rotation"][:, i])
    return sc


def _evaluate_both(cs, ctx, pos, rot, want_hessian):
    shape = pos.shape[:2]
    got = cs.evaluate(ctx, pos, rot, want_hessian, out=PotentialTerms.zeros(*shape, want_hessian))
    ref = cs.evaluate_numpy(ctx, pos, rot, want_hessian, PotentialTerms.zeros(*shape, want_hessian))
    return got, ref


@pytest.mark.parametrize("kind", JOINT_KINDS)
@pytest.mark.parametrize("saturation", [-1.0, 1.0], ids=["quadratic", "saturated"])
@pytest.mark.parametrize("damping", [0.0, 4.0])
@pytest.mark.parametrize("want_hessian", [False, True])
def test_joint_kernels_equal_numpy_oracle(kind, saturation, damping, want_hessian):
    """The kernel path (Gauss-Newton) against `evaluate_numpy` on the fixture's three constraints over four actors
    (actor 1 is B of two constraints, actor 0 is A of one and B of another: the `_distinct_rows` False case), all
    worlds and a world subset that reads its own frames and targets."""
    sc = _scenario(kind, saturation=saturation, damping=damping)
    cs = sc.constraints
    assert not cs._distinct_rows(1)
    for worlds in (None, np.array([2, 0])):
        ctx = sc.ctx if worlds is None else make_ctx(sc.pos_start[worlds], sc.rot_start[worlds])
        ctx.world_index = worlds
        pos, rot = (sc.pos, sc.rot) if worlds is None else (sc.pos[worlds], sc.rot[worlds])
        got, ref = _evaluate_both(cs, ctx, pos, rot, want_hessian)
        assert np.all(np.abs(ref.gradient).max(axis=(1, 2)) > 0)
        assert_close(got.energy, ref.energy)
        assert_close(got.gradient, ref.gradient)
        if want_hessian:
            assert_close(got.hessian_diag, ref.hessian_diag)
            assert len(got.couplings) == len(ref.couplings) == 1
            (gc,), (rc,) = got.couplings, ref.couplings
            np.testing.assert_array_equal(gc.body_a, rc.body_a)
            np.testing.assert_array_equal(gc.body_b, rc.body_b)
            assert np.abs(rc.block).max() > 0
            assert_close(gc.block, rc.block)
        else:
            assert got.couplings == [] and got.hessian_diag is None
    if saturation > 0:  # the fixture puts deviations on both sides of the ramp width
        norms = np.linalg.norm(cs.deviation(sc.pos, sc.rot), axis=-1)
        assert np.any(norms < cs.saturation) and np.any(norms > cs.saturation)


def test_range_kernel_sees_active_and_inactive_components():
    sc = _scenario("rotation_range")
    g, jac = sc.constraints._values_kernel(kernel_array(sc.pos), kernel_array(sc.rot), np.arange(3),
                                           sc.constraints._targets, True)
    assert np.any(g == 0.0) and np.any(g > 0.0)
    inactive = g == 0.0
    assert np.all(jac[:, :, :, :, :][np.broadcast_to(inactive[:, :, None, :, None], jac.shape)] == 0.0)
    ref = sc.constraints._kinematics(sc.pos, sc.rot, {}, sc.constraints._world_data, True)
    assert_close(g, ref.value)
    assert_close(jac, ref.jacobian)


def test_prismatic_kernel_limits_above_below_and_inside():
    sc = _scenario("prismatic")
    cs = sc.constraints
    g = cs._values_kernel(kernel_array(sc.pos), kernel_array(sc.rot), np.arange(3), cs._targets, False)[0]
    travel = g[..., 2]
    assert np.any(travel > 0.0) and np.any(travel < 0.0) and np.any(travel == 0.0)


@pytest.mark.parametrize("kind", JOINT_KINDS)
def test_all_worlds_together_equal_each_world_alone_bit_for_bit(kind):
    assert_worlds_alone_equal_together(_scenario(kind))


@pytest.mark.parametrize("kind", JOINT_KINDS)
@pytest.mark.parametrize("saturation", [-1.0, 0.05], ids=["quadratic", "saturated"])
def test_kernel_gradient_matches_fd_of_kernel_energy(kind, saturation):
    sc = _scenario(kind, saturation=saturation)
    cs, ctx = sc.constraints, sc.ctx
    assert not cs.exact_hessian  # evaluate runs the kernels
    terms = cs.evaluate(ctx, sc.pos, sc.rot, want_hessian=False)
    assert np.all(np.abs(terms.gradient).max(axis=(1, 2)) > 0)
    assert_gradient_is_fd_of_energy(cs, ctx, sc.pos, sc.rot, terms)


@pytest.mark.parametrize("kind", JOINT_KINDS)
def test_kernel_jacobian_matches_fd_of_kernel_values(kind):
    """J from the values kernel against central differences of its g (the Gauss-Newton Hessian is built from J)."""
    sc = _scenario(kind)
    cs = sc.constraints
    rows = np.arange(cs.num_worlds)
    g, jac = cs._values_kernel(kernel_array(sc.pos), kernel_array(sc.rot), rows, cs._targets, True)
    assert np.abs(jac).max() > 0
    fd = np.zeros_like(jac)
    for slot in range(2):
        for c in range(len(cs)):
            body = cs.actors[c, slot]
            for dof in range(6):
                values = []
                for h in (H_GRADIENT, -H_GRADIENT):
                    pos, rot = perturbed(sc.pos, sc.rot, body, dof, h)
                    values.append(cs._values_kernel(pos, rot, rows, cs._targets, False)[0][:, c])
                fd[:, c, slot, :, dof] = (values[0] - values[1]) / (2 * H_GRADIENT)
    # Range components and prismatic travel switch on and off only at their bounds (none within h here).
    scale = max(np.abs(g).max(), np.abs(jac).max())
    np.testing.assert_allclose(jac, fd, rtol=0, atol=fd_tolerance(H_GRADIENT, scale))


def _satisfied_scenario(kind):
    """One world, undamped, quadratic, every constraint satisfied at the pose (g = 0, so lam = 0 and the exact
    Hessian is the Gauss-Newton one): spherical joints get local_pos_b on A's pivot, prismatic and tracking joints
    are evaluated at their creation pose."""
    sc = build_scenario(kind, seed=8, exact_hessian=False, damping=0.0)
    cs = sc.constraints
    pos, rot = sc.pos_create[:1].copy(), sc.rot_create[:1].copy()
    if kind == "spherical":
        pos, rot = sc.pos[:1].copy(), sc.rot[:1].copy()
        sub = RigidSphericalJointConstraints(cs.com_local, 1, exact_hessian=False)
        for c, (a, b) in enumerate(cs.actors):
            pivot = pos[0, a] + rot[0, a] @ (cs._data["local_pos_a"][c] - cs.com_local[a])
            local_b = cs.com_local[b] + rot[0, b].T @ (pivot - pos[0, b])
            sub.add(RigidSphericalJointConstraintParams(actor_a=int(a), actor_b=int(b),
                                                        local_pos_a=cs._data["local_pos_a"][c], local_pos_b=local_b,
                                                        stiffness=1e3, damping=0.0, saturation=-1.0))
        return sub, pos, rot
    sub = type(cs)(cs.com_local, 1, exact_hessian=False)
    sub.actors, sub.stiffness, sub.damping, sub.saturation = cs.actors, cs.stiffness, cs.damping, cs.saturation
    sub._data = cs._data
    sub._world_data = {k: v[:1].copy() for k, v in cs._world_data.items()}
    if kind == "rotation_tracking":  # the creation-time targets R_A^T R_B
        relative = np.swapaxes(rot[0, cs.actors[:, 0]], -1, -2) @ rot[0, cs.actors[:, 1]]
        sub._targets = {"rotation": relative[None].copy()}
        sub._old_targets = {"rotation": relative[None].copy()}
    return sub, pos, rot


@pytest.mark.parametrize("kind", ["spherical", "prismatic", "rotation_tracking"])
def test_gauss_newton_hessian_matches_fd_of_kernel_gradient_where_constraints_hold(kind):
    """At g = 0 (undamped, quadratic) lam = 0, so the curvature term vanishes and the Gauss-Newton Hessian (diagonal
    blocks and couplings) is the exact one: FD of the kernel gradient must reproduce it. (Range joints are zero
    inside their bounds: nothing to check there.)"""
    cs, pos, rot = _satisfied_scenario(kind)
    ctx = make_ctx(pos, rot)
    terms = cs.evaluate(ctx, pos, rot, want_hessian=True)
    assert np.abs(cs.deviation(pos, rot)).max() < 1e-12
    expected = dense_hessian(terms)
    assert np.abs(expected).max() > 0 and np.abs(terms.couplings[0].block).max() > 0
    fd = np.zeros_like(expected)
    for body in range(NUM_BODIES):
        for dof in range(6):
            g_plus = cs.evaluate(ctx, *perturbed(pos, rot, body, dof, H_HESSIAN), False).gradient
            g_minus = cs.evaluate(ctx, *perturbed(pos, rot, body, dof, -H_HESSIAN), False).gradient
            fd[:, :, 6 * body + dof] = (g_plus - g_minus).reshape(1, -1) / (2 * H_HESSIAN)
    np.testing.assert_allclose(fd, expected, rtol=0, atol=fd_tolerance(H_HESSIAN, np.abs(expected).max()))


def test_exact_hessian_sets_keep_the_numpy_path():
    sc = build_scenario("spherical", seed=3, exact_hessian=True)
    cs = sc.constraints
    calls = []
    cs._evaluate_kernel = lambda *args: calls.append(args) or True
    terms = cs.evaluate(sc.ctx, sc.pos, sc.rot, True)
    assert calls == [] and len(terms.couplings) == 1


@pytest.mark.parametrize("kind", JOINT_KINDS)
@pytest.mark.parametrize("broken", ["position", "rotation"])
def test_a_non_finite_iterate_gives_the_oracles_nans_in_its_world_only(kind, broken):
    """A diverged world gives NaN where the numpy path does (a NaN g gives a NaN energy, which the line search
    rejects; a range joint's NaN angle compares as inside its bounds, as in numpy), the other worlds unchanged."""
    sc = _scenario(kind)
    cs = sc.constraints
    pos, rot = sc.pos.copy(), sc.rot.copy()
    if broken == "position":
        pos[1, 1, 0] = np.nan
    else:
        rot[1, 1, 0, 0] = np.nan
    got, ref = _evaluate_both(cs, sc.ctx, pos, rot, False)
    np.testing.assert_array_equal(np.isnan(got.energy), np.isnan(ref.energy))
    np.testing.assert_array_equal(np.isnan(got.gradient), np.isnan(ref.gradient))
    assert not np.isnan(got.energy[[0, 2]]).any() and not np.isnan(got.gradient[[0, 2]]).any()
    assert_close(np.nan_to_num(got.energy), np.nan_to_num(ref.energy))
    assert_close(np.nan_to_num(got.gradient), np.nan_to_num(ref.gradient))
    clean = cs.evaluate(sc.ctx, sc.pos, sc.rot, False)
    np.testing.assert_array_equal(got.energy[[0, 2]], clean.energy[[0, 2]])
    np.testing.assert_array_equal(got.gradient[[0, 2]], clean.gradient[[0, 2]])


@numba.njit(cache=False)
def _world_by_world(com, rot, com0, rot0, actors, arm_a, arm_b, stiffness, damp, saturation, g, g_old, jac,
                    energy, grad, hess, coupling):
    """The spherical joints as a compiled Newton would evaluate them: one world per call, from compiled code."""
    for w in range(com.shape[0]):
        one = slice(w, w + 1)
        spherical_joint_values(com0[one], rot0[one], actors, arm_a, arm_b, False, g_old, jac)
        spherical_joint_values(com[one], rot[one], actors, arm_a, arm_b, True, g, jac)
        two_actor_compliance(g, g_old, jac, actors, stiffness, damp, saturation, True, True, energy[one], grad[one],
                             hess[one], coupling[one])


def test_spherical_kernels_called_world_by_world_from_compiled_code_equal_the_batch_path():
    sc = _scenario("spherical")
    cs = sc.constraints
    ref = cs.evaluate(sc.ctx, sc.pos, sc.rot, True)
    w, n, c = sc.pos.shape[0], sc.pos.shape[1], len(cs)
    actors, arm_a, arm_b = cs._kernel_geometry()
    out = (np.zeros(w), np.zeros((w, n, 6)), np.zeros((w, n, 6, 6)), np.zeros((w, c, 6, 6)))
    _world_by_world(kernel_array(sc.pos), kernel_array(sc.rot), kernel_array(sc.pos_start), kernel_array(sc.rot_start),
                    actors, arm_a, arm_b, cs.stiffness, cs.damping / sc.ctx.stage_dt, cs.saturation,
                    np.empty((1, c, 3)), np.empty((1, c, 3)), np.empty((1, c, 2, 3, 6)), *out)
    for got, want in zip(out, (ref.energy, ref.gradient, ref.hessian_diag, ref.couplings[0].block)):
        np.testing.assert_array_equal(got, want)


@numba.njit(cache=False)
def _tracking_world_by_world(rot, rot0, actors, frame, target, old_target, stiffness, damp, saturation, g, g_old,
                             jac, mats, vecs, energy, grad, hess, coupling):
    for w in range(rot.shape[0]):
        one = slice(w, w + 1)
        rows = np.full(1, w)
        rotation_tracking_values(rot0[one], actors, rows, frame, old_target, False, g_old, jac, mats, vecs)
        rotation_tracking_values(rot[one], actors, rows, frame, target, True, g, jac, mats, vecs)
        two_actor_compliance(g, g_old, jac, actors, stiffness, damp, saturation, True, True, energy[one], grad[one],
                             hess[one], coupling[one])


def test_rotation_kernels_called_world_by_world_from_compiled_code_equal_the_batch_path():
    """The rotation kernels with one scratch reused for every call (nothing allocated per world)."""
    sc = _scenario("rotation_tracking")
    cs = sc.constraints
    ref = cs.evaluate(sc.ctx, sc.pos, sc.rot, True)
    w, n, c = sc.pos.shape[0], sc.pos.shape[1], len(cs)
    out = (np.zeros(w), np.zeros((w, n, 6)), np.zeros((w, n, 6, 6)), np.zeros((w, c, 6, 6)))
    _tracking_world_by_world(kernel_array(sc.rot), kernel_array(sc.rot_start), cs.actors, cs._world_data["frame"],
                             cs._targets["rotation"], cs._old_targets["rotation"], cs.stiffness,
                             cs.damping / sc.ctx.stage_dt, cs.saturation, np.empty((1, c, 3)), np.empty((1, c, 3)),
                             np.empty((1, c, 2, 3, 6)), *rotation_scratch(), *out)
    for got, want in zip(out, (ref.energy, ref.gradient, ref.hessian_diag, ref.couplings[0].block)):
        np.testing.assert_array_equal(got, want)
