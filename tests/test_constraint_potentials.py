"""Finite-difference checks of every constraint potential (DESIGN 5.4), the Gauss-Newton PSD property, the
saturation cap, range inactivity and target damping.

Rotational derivatives are taken on the Lie algebra: a body's rotation is perturbed as R <- exp(skew(h e_k)) R.
The gradient is the derivative at theta = 0 of E(exp(skew(theta)) R), so central differences of the energy check
it directly. The exact Hessian returned by the potentials is the (symmetric) Hessian of that chart. Central
differences of the *gradient* at perturbed rotations measure d/dh grad(exp(h e_k) R), which differs from the chart
Hessian by the BCH bracket exp(d) exp(h e) = exp(d + h e + h (d x e)/2 + ...): on each body's rotation-rotation
block, FD = H_chart - skew(g_rot)/2 (worked out in `_expected_gradient_jacobian`). Translations commute and pairs of
different bodies do not interact through the bracket, so every other block compares directly.

Tolerances come from the step: central differences err by ~h^2 |f'''| / 6 (truncation) plus ~eps |f| / h
(round-off); with O(1) arms and angles, |f'''| is of the order of the largest |f|, |f'|, |f''| (``scale``), so we
allow 100 (h^2 + eps / h) * scale.
"""

from __future__ import annotations

import numpy as np
import pytest

from superdex_gym.sim import lie
from superdex_gym.sim.constraints import RigidPivotPositionConstraintParams, RigidPivotPositionConstraints, \
    JointRotationRangeConstraintParams, JointRotationRangeConstraints
from test_constraint_fixtures import ALL_KINDS, NUM_BODIES, STAGE_DT, build_scenario, make_ctx
from helpers import dense_hessian

EPS = np.finfo(np.float64).eps
H_GRADIENT = 1e-5  # m or rad, FD step for energy -> gradient
H_HESSIAN = 1e-5  # FD step for gradient -> Hessian


def fd_tolerance(h: float, scale: float) -> float:
    return 100.0 * (h * h + EPS / h) * scale


def assert_gradient_is_fd_of_energy(cs, ctx, pos, rot, terms) -> None:
    """``terms.gradient`` (the set's at pos, rot) against central differences of its energy, every body and DoF."""
    fd = np.zeros_like(terms.gradient)
    for body in range(NUM_BODIES):
        for dof in range(6):
            e_plus = cs.evaluate(ctx, *perturbed(pos, rot, body, dof, H_GRADIENT), False).energy
            e_minus = cs.evaluate(ctx, *perturbed(pos, rot, body, dof, -H_GRADIENT), False).energy
            fd[:, body, dof] = (e_plus - e_minus) / (2 * H_GRADIENT)
    scale = max(np.abs(terms.energy).max(), np.abs(terms.gradient).max())
    np.testing.assert_allclose(terms.gradient, fd, rtol=0, atol=fd_tolerance(H_GRADIENT, scale))


def perturbed(pos, rot, body, dof, h):
    pos, rot = pos.copy(), rot.copy()
    if dof < 3:
        pos[:, body, dof] += h
    else:
        rot[:, body] = lie.exp_so3(h * np.eye(3)[dof - 3]) @ rot[:, body]
    return pos, rot




def _expected_gradient_jacobian(terms) -> np.ndarray:
    """What central differences of the gradient measure: chart Hessian - skew(g_rot)/2 on each rot-rot block."""
    dense = dense_hessian(terms)
    for b in range(terms.gradient.shape[1]):
        dense[:, 6 * b + 3:6 * b + 6, 6 * b + 3:6 * b + 6] -= 0.5 * lie.skew(terms.gradient[:, b, 3:])
    return dense


CASES = [(kind, sat) for kind in ALL_KINDS for sat in (False, True)]
IDS = [f"{kind}-{'saturated' if sat else 'quadratic'}" for kind, sat in CASES]


@pytest.mark.parametrize("kind,saturated", CASES, ids=IDS)
def test_gradient_matches_fd_of_energy(kind, saturated):
    sc = build_scenario(kind, seed=3, saturation=0.05 if saturated else -1.0)
    cs, ctx = sc.constraints, sc.ctx
    terms = cs.evaluate(ctx, sc.pos, sc.rot, want_hessian=False)
    assert np.all(np.linalg.norm(terms.gradient.reshape(terms.gradient.shape[0], -1), axis=1) > 0)
    assert_gradient_is_fd_of_energy(cs, ctx, sc.pos, sc.rot, terms)


@pytest.mark.parametrize("kind,saturated", CASES, ids=IDS)
def test_exact_hessian_matches_fd_of_gradient(kind, saturated):
    sc = build_scenario(kind, seed=4, saturation=0.05 if saturated else -1.0, exact_hessian=True)
    cs, ctx = sc.constraints, sc.ctx
    terms = cs.evaluate(ctx, sc.pos, sc.rot, want_hessian=True)
    w = terms.gradient.shape[0]
    fd = np.zeros((w, 6 * NUM_BODIES, 6 * NUM_BODIES))
    for body in range(NUM_BODIES):
        for dof in range(6):
            g_plus = cs.evaluate(ctx, *perturbed(sc.pos, sc.rot, body, dof, H_HESSIAN), False).gradient
            g_minus = cs.evaluate(ctx, *perturbed(sc.pos, sc.rot, body, dof, -H_HESSIAN), False).gradient
            fd[:, :, 6 * body + dof] = (g_plus - g_minus).reshape(w, -1) / (2 * H_HESSIAN)
    expected = _expected_gradient_jacobian(terms)
    assert np.abs(expected).max() > 0
    scale = max(np.abs(terms.gradient).max(), np.abs(expected).max())
    np.testing.assert_allclose(fd, expected, rtol=0, atol=fd_tolerance(H_HESSIAN, scale))


@pytest.mark.parametrize("kind,saturated", CASES, ids=IDS)
def test_gauss_newton_hessian_is_psd_and_symmetric(kind, saturated):
    sc = build_scenario(kind, seed=5, saturation=0.05 if saturated else -1.0, exact_hessian=False)
    terms = sc.constraints.evaluate(sc.ctx, sc.pos, sc.rot, want_hessian=True)
    dense = dense_hessian(terms)
    np.testing.assert_array_equal(dense, np.swapaxes(dense, -1, -2))
    eig = np.linalg.eigvalsh(dense)
    assert eig.max() > 0
    assert eig.min() >= -1e-12 * eig.max()  # round-off of the J^T J products


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_force_is_minus_gradient_per_constrained_actor(kind):
    sc = build_scenario(kind, seed=6)
    cs = sc.constraints
    force = cs.force(sc.ctx, sc.pos, sc.rot)
    assert force.shape == (sc.pos.shape[0], len(cs), cs.num_constrained_actors, 6)
    summed = np.zeros((sc.pos.shape[0], NUM_BODIES, 6))
    for a in range(cs.num_constrained_actors):
        np.add.at(summed, (slice(None), cs.actors[:, a]), force[:, :, a])
        unused = [d for d in range(6) if d not in cs.actor_dofs[a]]
        assert np.all(force[:, :, a, unused] == 0.0)
    np.testing.assert_allclose(summed, -cs.evaluate(sc.ctx, sc.pos, sc.rot, False).gradient, atol=1e-9)


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_worlds_are_independent(kind):
    """Each world's energy and gradient depend on that world's poses only (no mixing along the world axis)."""
    sc = build_scenario(kind, seed=7)
    cs = sc.constraints
    base = cs.evaluate(sc.ctx, sc.pos, sc.rot, True)
    pos, rot = sc.pos.copy(), sc.rot.copy()
    pos[1] += 0.3
    rot[1] = lie.exp_so3(np.array([0.2, -0.1, 0.3])) @ rot[1]
    moved = cs.evaluate(sc.ctx, pos, rot, True)
    for w in (0, 2):
        assert moved.energy[w] == base.energy[w]
        np.testing.assert_array_equal(moved.gradient[w], base.gradient[w])
        np.testing.assert_array_equal(moved.hessian_diag[w], base.hessian_diag[w])


# -- saturation ----------------------------------------------------------------------------------------------


def _single_pivot(stiffness=1e4, damping=0.0, saturation=-1.0, num_worlds=1):
    com_local = np.zeros((1, 3))
    cs = RigidPivotPositionConstraints(com_local, num_worlds)
    cs.add(RigidPivotPositionConstraintParams(actor=0, stiffness=stiffness, damping=damping, saturation=saturation))
    return cs


def test_saturation_force_never_exceeds_cap_and_has_stiffness_2k_near_zero():
    k, gbar = 1e4, 0.01
    distances = np.concatenate([[0.0, 1e-9, 1e-6], np.geomspace(1e-4, 10.0, 200)])
    w = distances.size
    cs = _single_pivot(stiffness=k, saturation=gbar, num_worlds=w)
    direction = np.array([0.36, -0.48, 0.8])
    pos = (distances[:, None] * direction)[:, None]  # (W, 1, 3): pivot at the CoM, target at the origin
    rot = np.broadcast_to(np.eye(3), (w, 1, 3, 3)).copy()
    force = cs.force(make_ctx(pos, rot), pos, rot)[:, 0, 0, :3]
    magnitude = np.linalg.norm(force, axis=-1)
    assert np.all(magnitude <= k * gbar * (1 + 1e-12))
    np.testing.assert_allclose(magnitude[distances >= gbar], k * gbar, rtol=1e-12)  # exactly capped beyond gbar
    small = (distances > 0) & (distances <= 1e-6)
    # rho'(x) = 2x/gbar - x^2/gbar^2: force = 2 k x (1 - x / (2 gbar)), stiffness 2k at 0.
    np.testing.assert_allclose(magnitude[small], 2 * k * distances[small], rtol=1e-4)
    np.testing.assert_allclose(force / np.maximum(magnitude, 1e-300)[:, None], np.where(
        (distances > 0)[:, None], -direction, 0.0), atol=1e-12)  # along -g
    # Energy k gbar rho(x): continuous across the ramp end, k gbar (x - gbar/3) beyond it.
    energy = cs.evaluate(make_ctx(pos, rot), pos, rot, False).energy
    beyond = distances >= gbar
    np.testing.assert_allclose(energy[beyond], k * gbar * (distances[beyond] - gbar / 3), rtol=1e-12)


def test_saturation_leaves_damping_untouched():
    k, d, gbar = 1e4, 50.0, 0.01
    cs = _single_pivot(stiffness=k, damping=d, saturation=gbar)
    pos0 = np.zeros((1, 1, 3))
    pos = np.array([[[3.0, 0.0, 0.0]]])  # moved 3 m during the stage, far beyond gbar
    rot = np.eye(3)[None, None]
    force = cs.force(make_ctx(pos0, rot), pos, rot)[0, 0, 0, :3]
    np.testing.assert_allclose(force, -(k * gbar + d / STAGE_DT * 3.0) * np.array([1.0, 0.0, 0.0]), rtol=1e-12)


# -- range constraints ---------------------------------------------------------------------------------------


def _range_pair(bounds=(-0.1, 0.1), damping=10.0):
    com_local = np.zeros((2, 3))
    pos = np.zeros((1, 2, 3))
    rot = np.broadcast_to(np.eye(3), (1, 2, 3, 3)).copy()
    cs = JointRotationRangeConstraints(com_local, 1, exact_hessian=True)
    cs.add(JointRotationRangeConstraintParams(actor_a=0, actor_b=1, angle_range_x=bounds, angle_range_y=bounds,
                                              angle_range_z=bounds, stiffness=1e3, damping=damping), pos, rot)
    return cs, pos, rot


def _turn_b(rot, rotvec):
    out = rot.copy()
    out[:, 1] = lie.exp_so3(np.asarray(rotvec, dtype=float)) @ out[:, 1]
    return out


def test_range_inactive_inside_bounds_at_both_stage_start_and_iterate():
    cs, pos, rot = _range_pair()
    ctx = make_ctx(pos, _turn_b(rot, [0.05, -0.03, 0.09]))
    terms = cs.evaluate(ctx, pos, _turn_b(rot, [-0.08, 0.02, 0.0]), True)
    assert terms.energy[0] == 0.0
    assert np.all(terms.gradient == 0.0) and np.all(terms.hessian_diag == 0.0)
    assert all(np.all(c.block == 0.0) for c in terms.couplings)
    np.testing.assert_array_equal(cs.deviation(pos, _turn_b(rot, [-0.08, 0.02, 0.0])), 0.0)


def test_range_violated_only_at_stage_start_gives_constant_damping_energy():
    cs, pos, rot = _range_pair(damping=10.0)
    rot_start = _turn_b(rot, [0.25, 0.0, 0.0])  # 0.15 rad beyond the bound at the stage start
    terms = cs.evaluate(make_ctx(pos, rot_start), pos, rot, True)
    np.testing.assert_allclose(terms.energy[0], 0.5 * 10.0 / STAGE_DT * 0.15**2, rtol=1e-12)
    assert np.all(terms.gradient == 0.0)


def test_range_violation_value_and_sign():
    cs, pos, rot = _range_pair()
    g = cs.deviation(pos, _turn_b(rot, [0.3, -0.25, 0.0]))[0, 0]
    np.testing.assert_allclose(g, [0.2, 0.15, 0.0], atol=1e-12)  # one-sided violations are positive magnitudes


# -- target damping ------------------------------------------------------------------------------------------


def test_moving_target_between_steps_damps_until_update_old_target():
    k, d = 1e3, 20.0
    cs = _single_pivot(stiffness=k, damping=d)
    pos = np.array([[[0.1, 0.0, 0.0]]])
    rot = np.eye(3)[None, None]
    ctx = make_ctx(pos, rot)  # the body does not move during the stage
    step = np.array([0.0, 0.02, 0.0])
    cs.set_target_position(0, step)  # old target (creation) is the origin
    g = pos[0, 0] - step
    terms = cs.evaluate(ctx, pos, rot, False)
    np.testing.assert_allclose(terms.energy[0], 0.5 * k * g @ g + 0.5 * d / STAGE_DT * step @ step, rtol=1e-12)
    np.testing.assert_allclose(terms.gradient[0, 0, :3], k * g - d / STAGE_DT * step, rtol=1e-12)
    cs.update_old_target(0)  # teleport: no damping transient
    terms = cs.evaluate(ctx, pos, rot, False)
    np.testing.assert_allclose(terms.energy[0], 0.5 * k * g @ g, rtol=1e-12)


def test_advance_old_targets_makes_the_previous_step_target_the_old_one():
    cs = _single_pivot(stiffness=0.0, damping=1.0)
    pos, rot = np.zeros((1, 1, 3)), np.eye(3)[None, None]
    ctx = make_ctx(pos, rot)
    cs.set_target_position(0, [0.0, 0.0, 0.5])
    assert cs.evaluate(ctx, pos, rot, False).energy[0] > 0  # target moved during this step: damping
    cs.advance_old_targets()  # end of step
    assert cs.evaluate(ctx, pos, rot, False).energy[0] == 0.0
