"""Every term of the articulated stage energy (sim/articulated/energy.py): gradients against central differences
of the energy along Lie increments, Hessians against central differences of the gradient."""

import numpy as np
import pytest

import superdex_gym.sim as mochi
from superdex_gym.sim import articulated as art
from superdex_gym.sim import lie
from superdex_gym.sim.articulated import energy, kinematics as kin

JT = art.ArticulatedJointType
SHAPE = mochi.create_box_mesh_shape([0.05, 0.2, 0.05])
FR = art.ArticulatedJointFrictionParams


def model(spherical_coulomb=0.1):
    """Spherical (friction, rotor inertia), prismatic (limited, frictional), two revolutes (rotor inertia, Stribeck)."""
    p = art.ArticulatedActorParams(name="m", world_from_root=mochi.TransformRT(translation=[0, 2, 0]))
    p.joints = [
        art.ArticulatedJointParams(type=JT.SPHERICAL, inertia=0.03, friction=FR(viscous=0.4, coulomb=spherical_coulomb),
                                   min_limit=[-0.2, -0.1, -0.25], max_limit=[0.1, 0.2, 0.05], limit_damping=1.5),
        art.ArticulatedJointParams(type=JT.PRISMATIC, axis=[1, 0.5, 0], min_limit=[-0.1, -0.05, 0],
                                   max_limit=[0.1, 0.05, 0], friction=FR(viscous=0.5, coulomb=0.2),
                                   parent_link_from_joint=mochi.TransformRT(translation=[0, -0.3, 0.1])),
        art.ArticulatedJointParams(type=JT.REVOLUTE, axis=[0, 0, 1], inertia=0.02, limit_damping=3.0,
                                   min_limit=[0, 0, -0.2], max_limit=[0, 0, 0.2],
                                   friction=FR(coulomb=0.1, stiction_extra=0.05, stribeck_vel=0.01),
                                   parent_link_from_joint=mochi.TransformRT(translation=[0.1, -0.3, 0])),
        art.ArticulatedJointParams(type=JT.REVOLUTE, axis=[1, 0, 1],
                                   parent_link_from_joint=mochi.TransformRT(translation=[0, -0.3, 0])),
    ]
    p.links = [art.ArticulatedLinkParams(parent_link=i - 1, shape=SHAPE, density=1000.0,
                                         center_of_mass=(0.01, 0.02, -0.01),
                                         moment_of_inertia=(0.05, 0.001, 0, 0.006, 0.0005, 0.05),
                                         parent_joint_from_link=mochi.TransformRT(translation=[0, -0.2, 0]))
               for i in range(4)]
    p.cycles = [art.ArticulatedCycleJointParams(parent_link=0, child_link=3, stiffness=800.0,
                                                joint_from_child_link=mochi.TransformRT(translation=[0.02, 0.1, 0]))]
    return art.build_model(p)


def stage(m, rng, num_worlds=2):
    q0 = rng.uniform(-0.3, 0.3, (num_worlds, m.num_dofs))
    rot0, _, com0 = kin.forward_kinematics(m, q0)
    spin = lie.skew(rng.normal(size=(num_worlds, m.num_links, 3))) + 0.1 * lie.sym(
        rng.normal(size=(num_worlds, m.num_links, 3, 3)))
    dt = 0.01
    jrot0, jtrans0 = kin.joint_transforms(m, q0)
    return energy.StageData(
        dt=dt, q0=q0, link_pred_com=com0 + dt * rng.normal(size=com0.shape), link_pred_rot=rot0 + dt * spin @ rot0,
        joint_pred_trans=jtrans0 + dt * rng.normal(size=jtrans0.shape), joint_pred_rot=jrot0 + dt * spin @ jrot0,
        joint_velocity0=rng.normal(size=q0.shape), gravity=np.tile([0.0, -9.8, 0.0], (num_worlds, 1)),
        drives=[energy.Drive(dof=3, target=0.2, stiffness=300.0, damping=4.0, target_old=0.1)], psd=False,
        ranges=[energy.RangeConstraint(dof=4, min_value=-0.05, max_value=0.02, stiffness=500.0, damping=2.0)],
        dof_loads=rng.normal(size=q0.shape),
        # targets 0.3-0.5 rad away, where the increment Jacobian is exact (the engine's is first order below 2e-2)
        tracking=[energy.RotationTarget(0, "joint", lie.exp_so3(rng.uniform(0.3, 0.5, (num_worlds, 3))),
                                        lie.exp_so3(rng.uniform(0.3, 0.5, (num_worlds, 3))), 40.0, 3.0),
                  energy.RotationTarget(2, "link", lie.exp_so3(rng.uniform(0.3, 0.5, (num_worlds, 3))) @ rot0[:, 2],
                                        rot0[:, 2], 7.0, 0.5),
                  energy.PositionTarget(3, com0[:, 3] + 0.1, com0[:, 3], 150.0, 6.0)])


TERMS = [energy.rotor_inertia, energy.viscous_friction, energy.soft_limits, energy.drives,
         lambda m, q, s: energy.dry_friction(m, q, s, hessian="exact"), energy.rotation_joint_terms, energy.ranges]


def _fd_gradient(term, m, q, s, eps):
    out = np.zeros_like(q)
    for d in range(q.shape[1]):
        e = np.zeros_like(q)
        e[:, d] = eps
        out[:, d] = (term(m, kin.add_delta(m, q, e), s)[0] - term(m, kin.add_delta(m, q, -e), s)[0]) / (2 * eps)
    return out


def _away_from_kinks(m, q, s):
    """Move scalar DoFs off the limits' and the friction ramp's switching points, where the second derivative jumps."""
    dt = s.dt
    q = q.copy()
    for d in range(m.num_dofs):
        for edge in (m.dof_lower[d], m.dof_upper[d], s.q0[0, d], s.q0[0, d] + dt * 0.001, s.q0[0, d] - dt * 0.001):
            near = np.abs(q[:, d] - edge) < 1e-4
            q[near, d] += 3e-4
    return q


@pytest.mark.parametrize("term", TERMS, ids=["rotor", "viscous", "limits", "drive", "dry", "spherical", "range"])
def test_joint_term_gradient_and_hessian_match_central_differences(term):
    m = model()
    rng = np.random.default_rng(7)
    s = stage(m, rng)
    for scale in (0.0005, 0.3):  # inside the friction ramp's cubic zone and beyond it; inside and past the limits
        q = _away_from_kinks(m, s.q0 + rng.uniform(-scale, scale, s.q0.shape), s)
        e, g, h = term(m, q, s)
        assert np.abs(_fd_gradient(term, m, q, s, 1e-7) - g).max() <= 1e-6 * max(1.0, np.abs(g).max())
        eps = 1e-7
        for d in range(m.num_dofs):
            if m.joint_type[m.dof_joint[d]] == JT.SPHERICAL:
                continue  # joint terms act on scalar DoFs only
            ed = np.zeros_like(q)
            ed[:, d] = eps
            col = (term(m, q + ed, s)[1] - term(m, q - ed, s)[1]) / (2 * eps)
            assert np.abs(col - h[:, :, d]).max() <= 1e-5 * max(1.0, np.abs(h).max()), d


def test_dof_loads_gradient_is_minus_the_force_and_the_merit_agrees_at_the_stage_start():
    """Scalar DoFs: U = -f q exactly. Rotation blocks: the engine's merit is only valid near R_j = R_j0, so its
    derivative is checked there."""
    m = model()
    s = stage(m, np.random.default_rng(12))
    _, g, h = energy.dof_loads(m, s.q0, s)
    assert np.array_equal(g, -s.dof_loads) and not np.any(h)
    assert np.abs(_fd_gradient(energy.dof_loads, m, s.q0, s, 1e-6) - g).max() < 1e-8


def test_spherical_viscous_and_rotor_hessian_is_the_second_derivative_along_increments():
    """u^T H u == d^2/ds^2 E(exp(s u) R_j) for the merits (dry friction's Hessian drops the log map's curvature,
    as the engine's does, so it is left out here)."""
    m = model(spherical_coulomb=0.0)
    rng = np.random.default_rng(11)
    s = stage(m, rng)
    q = s.q0 + rng.uniform(-0.05, 0.05, s.q0.shape)
    _, _, h = energy.rotation_joint_terms(m, q, s)
    step = 1e-4
    for u in rng.normal(size=(4, 3)):
        d = np.zeros_like(q)
        d[:, 0:3] = step * u
        vals = [energy.rotation_joint_terms(m, kin.add_delta(m, q, sg * d), s)[0] for sg in (1, 0, -1)]
        second = (vals[0] - 2 * vals[1] + vals[2]) / step**2
        want = np.einsum("i,wij,j->w", u, h[:, 0:3, 0:3], u)
        assert np.abs(second - want).max() <= 1e-4 * max(1.0, np.abs(want).max())


def test_link_terms_cartesian_gradient_and_hessian_match_central_differences():
    """The rigid formulas per link in (dc, dtheta), exact (not projected) Hessian blocks."""
    m = model()
    rng = np.random.default_rng(3)
    s = stage(m, rng)
    rot, _, com = kin.forward_kinematics(m, s.q0 + 0.05)
    e, g, h = energy.link_terms_cartesian(m, com, rot, s)
    eps = 1e-6

    def perturbed(k, sign):
        c, r = com.copy(), rot.copy()
        if k < 3:
            c[..., k] += sign * eps
        else:
            r = lie.exp_so3(sign * eps * np.eye(3)[k - 3]) @ r
        return c, r

    for link in range(m.num_links):
        for k in range(6):
            sel = np.zeros(m.num_links, dtype=bool)
            sel[link] = True
            cp, rp = perturbed(k, +1)
            cm, rm = perturbed(k, -1)
            cp, rp = np.where(sel[:, None], cp, com), np.where(sel[:, None, None], rp, rot)
            cm, rm = np.where(sel[:, None], cm, com), np.where(sel[:, None, None], rm, rot)
            ep, gp, _ = energy.link_terms_cartesian(m, cp, rp, s)
            em, gm, _ = energy.link_terms_cartesian(m, cm, rm, s)
            assert np.abs((ep - em) / (2 * eps) - g[:, link, k]).max() <= 1e-6 * np.abs(g).max()
            col = (gp[:, link] - gm[:, link]) / (2 * eps)
            assert np.abs(col[:, :3] - h[:, link, :3, k]).max() <= 1e-5 * np.abs(h).max()
        # Rotation block: the second derivative along exp(s u) R is u^T H u for any direction u.
        for u in rng.normal(size=(4, 3)):
            step = 1e-4
            vals = []
            for sgn in (1, 0, -1):
                r = rot.copy()
                r[:, link] = lie.exp_so3(sgn * step * u) @ rot[:, link]
                vals.append(energy.link_terms_cartesian(m, com, r, s)[0])
            second = (vals[0] - 2 * vals[1] + vals[2]) / step**2
            want = np.einsum("i,wij,j->w", u, h[:, link, 3:, 3:], u)
            assert np.abs(second - want).max() <= 1e-4 * max(1.0, np.abs(want).max())


@pytest.mark.parametrize("term", [energy.link_terms, energy.cycle_joints, energy.tracking],
                         ids=["links", "cycle", "tracking"])
def test_pulled_back_gradient_matches_central_differences(term):
    """Gradients through the kinematics (Gauss-Newton Hessians: symmetric, and PSD for the cycle's k J^T J)."""
    m = model()
    rng = np.random.default_rng(5)
    s = stage(m, rng)
    q = s.q0 + rng.uniform(-0.1, 0.1, s.q0.shape)
    _, g, h = term(m, q, s)
    assert np.abs(g).max() > 0
    fd = _fd_gradient(term, m, q, s, 1e-6)
    assert np.abs(fd - g).max() <= 1e-6 * np.abs(g).max()
    assert np.allclose(h, np.swapaxes(h, -1, -2), rtol=0, atol=1e-9 * np.abs(h).max())
    if term is not energy.link_terms:
        assert np.linalg.eigvalsh(h).min() > -1e-9 * np.abs(h).max()


def test_dry_friction_ramp_is_the_documented_one():
    vf, vs, r = 1e-3, 0.01, 0.6
    x = np.array([0.0, 0.5e-3, vf, 2e-3, 1.0])
    phi, d1, _, d1x = energy.dry_friction_ramp(x, vf, r, vs)
    assert phi[0] == 0 and phi[2] == pytest.approx(2 * vf / 3) and d1[2] == pytest.approx(1.0)
    assert d1[-1] == pytest.approx(r, abs=1e-12)  # far above the Stribeck width: the dynamic ratio
    assert d1x[0] == 2 / vf


def world_stage(s, w):
    """Stage data ``s`` restricted to world w (per-world drive targets too)."""
    return energy.take_worlds(s, slice(w, w + 1))


def test_worlds_together_equal_each_alone_bit_for_bit():
    m = model()
    s = stage(m, np.random.default_rng(9), num_worlds=3)
    q = s.q0 + 0.01
    together = energy.total(m, q, s)
    for w in range(3):
        alone = energy.total(m, q[w:w + 1], world_stage(s, w))
        for a, b in zip(together, alone):
            assert np.array_equal(a[w:w + 1], b)
