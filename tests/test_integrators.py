"""Closed forms of the discrete schemes, the reference engine's numbers, and measured orders of convergence."""

import numpy as np
import pytest
from reference import REFERENCE, TIGHT, box_mesh, fp64, set_solver

import superdex_gym.sim as mochi
from superdex_gym.sim import lie
from superdex_gym.sim.potentials.base import Potential, PotentialTerms

G = 9.8
METHODS = [m for m in mochi.IntegrationMethod if m is not mochi.IntegrationMethod.COUNT]


def falling_box(method, y0=5.0, **solver):
    scene = mochi.create_scene()
    set_solver(scene, method, **solver)
    actor = scene.create_rigid_actor(
        shape=box_mesh((0.2, 0.2, 0.2)), density=1000.0, world_from_local=mochi.TransformRT(translation=[0, y0, 0])
    )
    return scene, actor


def test_backward_euler_free_fall_closed_form():
    dt, y0 = 1 / 60, 5.0
    scene, actor = falling_box(mochi.IntegrationMethod.BACKWARD_EULER, y0)
    for n in range(1, 31):
        scene.step(dt)
        y = actor.get_center_of_mass_transform().translation[1]
        # y_n = y0 - g dt^2 n(n+1)/2; one Newton iteration solves the linear stage problem to round-off.
        assert y == pytest.approx(y0 - G * dt**2 * n * (n + 1) / 2, abs=1e-12)


def test_digest_free_fall_values():
    """Digest 3.3 [RUN]: BE y1 = 4.9972777, BDF2 y2 = 4.9927406, DIRK22 / implicit midpoint y1 = 4.998638/9."""
    dt = 1 / 60
    scene, actor = falling_box(mochi.IntegrationMethod.BDF2)
    scene.step(dt)
    assert actor.get_center_of_mass_transform().translation[1] == pytest.approx(4.9972777, abs=5e-7)
    scene.step(dt)
    y2 = actor.get_center_of_mass_transform().translation[1]
    # y* = 4/3 y1 - 1/3 y0, v* = 4/3 v1 - 1/3 v0, dt_i = 2 dt / 3, y2 = y* + dt_i v* - dt_i^2 g
    y1, v1 = 5 - G * dt**2, -G * dt
    dti = 2 * dt / 3
    assert y2 == pytest.approx(4 / 3 * y1 - 5 / 3 + dti * 4 / 3 * v1 - dti**2 * G, abs=1e-12)
    assert y2 == pytest.approx(4.9927406, abs=5e-7)  # the digest prints the fp32 build to 8 digits
    for method in (mochi.IntegrationMethod.DIRK22, mochi.IntegrationMethod.SYMPLECTIC_DIRK12):
        scene, actor = falling_box(method)
        scene.step(dt)
        # second-order methods are exact on constant acceleration: y1 = y0 - g dt^2 / 2
        assert actor.get_center_of_mass_transform().translation[1] == pytest.approx(5 - G * dt**2 / 2, abs=1e-12)


@pytest.mark.parametrize("method", METHODS, ids=lambda m: m.name)
def test_free_fall_matches_reference_engine(method):
    ref = fp64("free_fall")["runs"][method.name]
    scene, actor = falling_box(method)
    for n in range(10):
        scene.step(ref["last_time_step"])
        com = actor.get_center_of_mass_transform().translation
        # float64 round-off over 10 steps of a 1-iteration linear solve in both engines
        assert com[1] == pytest.approx(ref["com_y"][n], abs=1e-12)
        assert actor.get_linear_velocity()[1] == pytest.approx(ref["vel_y"][n], abs=1e-9)
    stats = scene.get_solver_stats()
    assert stats.convergence_status is mochi.ConvergenceStatus.CONVERGED
    assert stats.max_non_linear_iters == 1


def spinning_box(method, omega, newton_euler=False, **solver):
    scene = mochi.create_scene()
    scene.set_gravity([0, 0, 0])
    set_solver(scene, method, **solver)
    actor = scene.create_rigid_actor(shape=box_mesh((0.1, 0.2, 0.3)), density=1000.0, angular_velocity=omega)
    if newton_euler:
        mochi.experimental.enable_newton_euler_inertia(actor, True)
    return scene, actor


def test_one_step_spin_closed_form():
    """Digest 2.4: BE, dt 0.1, omega_z 3.0 -> 3.0 (S initialisation) -> 2.7568 (closed form)."""
    h, w = 0.1, 3.0
    scene, actor = spinning_box(mochi.IntegrationMethod.BACKWARD_EULER, [0, 0, w], **TIGHT)
    scene.step(h)
    assert actor.get_angular_velocity()[2] == pytest.approx(3.0, abs=1e-10)
    scene.step(h)
    th1 = np.arcsin(h * w)
    th2 = np.arctan(np.sin(th1) / (2 - np.cos(th1)))
    assert actor.get_angular_velocity()[2] == pytest.approx(np.sin(th2) / h, abs=1e-10)
    assert np.sin(th2) / h == pytest.approx(2.7568, abs=5e-5)


@pytest.mark.parametrize(
    "run, method, newton_euler, tight, tol",
    [
        # tight runs are converged discrete solutions: agreement to the solver tolerance
        ("BACKWARD_EULER(tight)", mochi.IntegrationMethod.BACKWARD_EULER, False, True, 1e-9),
        ("BDF2(tight)", mochi.IntegrationMethod.BDF2, False, True, 1e-9),
        ("SYMPLECTIC_DIRK12(tight)", mochi.IntegrationMethod.SYMPLECTIC_DIRK12, False, True, 1e-9),
        ("BACKWARD_EULER+newton_euler(tight)", mochi.IntegrationMethod.BACKWARD_EULER, True, True, 1e-9),
        # default-solver runs: the same Newton path (stage-start guess, 4 iterations, abs_tol 1e-3 weighted), so
        # the iterates agree closely too; the weights are not the reference's exactly, so allow 1e-6.
        ("BACKWARD_EULER", mochi.IntegrationMethod.BACKWARD_EULER, False, False, 1e-6),
        ("BDF2", mochi.IntegrationMethod.BDF2, False, False, 1e-6),
    ],
)
def test_principal_spin_matches_reference_engine(run, method, newton_euler, tight, tol):
    ref = fp64("spin")["principal_axis_spin"][run]
    scene, actor = spinning_box(method, [0, 0, 3.0], newton_euler, **(TIGHT if tight else REFERENCE))
    got = []
    for _ in range(len(ref["omega_z"])):
        scene.step(ref["dt"])
        got.append(actor.get_angular_velocity()[2])
    np.testing.assert_allclose(got, ref["omega_z"], atol=tol, rtol=0)


def test_non_principal_spin_matches_reference_engine():
    ref = fp64("spin")["non_principal_spin"]["BACKWARD_EULER(tight)"]
    scene, actor = spinning_box(mochi.IntegrationMethod.BACKWARD_EULER, ref["omega0"], **TIGHT)
    for n in range(ref["steps"]):
        scene.step(ref["dt"])
        np.testing.assert_allclose(actor.get_angular_velocity(), ref["angular_velocity"][n], atol=1e-9)
        q = actor.get_root_transform().rotation.to_array()
        q_ref = np.array(ref["rotation_xyzw"][n])
        assert min(np.abs(q - q_ref).max(), np.abs(q + q_ref).max()) < 1e-10


class HarmonicSpring(Potential):
    """Test potential U = k/2 |c|^2 on every body: a smooth problem with a closed-form solution."""

    def __init__(self, stiffness):
        self.k = stiffness

    def evaluate(self, ctx, com_position, rotation, want_hessian):
        w, n = com_position.shape[:2]
        t = PotentialTerms.zeros(w, n, want_hessian)
        t.energy = 0.5 * self.k * np.einsum("wni,wni->w", com_position, com_position)
        t.gradient[..., :3] = self.k * com_position
        if want_hessian:
            t.hessian_diag[..., [0, 1, 2], [0, 1, 2]] = self.k
        return t


EXPECTED_ORDER = {
    mochi.IntegrationMethod.BACKWARD_EULER: 1,
    mochi.IntegrationMethod.BDF2: 2,
    # BDF3 starts with BE and BDF2 steps (digest 3.2); their local errors cap the global error at second order.
    mochi.IntegrationMethod.BDF3: 2,  # observed 2.27 at dt 0.02/0.01, 2.1 at 0.01/0.005
    mochi.IntegrationMethod.DIRK22: 2,
    mochi.IntegrationMethod.DIRK23: 3,
    mochi.IntegrationMethod.DIRK33: 3,
    mochi.IntegrationMethod.SYMPLECTIC_DIRK12: 2,
    mochi.IntegrationMethod.SYMPLECTIC_DIRK22: 2,
}


def _oscillator_error(method, dt, t_end=0.4, omega=4.0):
    scene = mochi.create_scene()
    scene.set_gravity([0, 0, 0])
    set_solver(scene, method, abs_tol=1e-13, rel_tol=0.0, max_iter=10)
    actor = scene.create_rigid_actor(
        shape=box_mesh((0.1, 0.2, 0.3)), density=1000.0,
        world_from_local=mochi.TransformRT(translation=[1, 0, 0]), linear_velocity=[0, 0.5, 0],
    )
    scene.add_potential(HarmonicSpring(actor.get_mass() * omega**2))
    for _ in range(int(round(t_end / dt))):
        scene.step(dt)
    x = actor.get_center_of_mass_transform().translation_array
    exact = np.array([np.cos(omega * t_end), 0.5 / omega * np.sin(omega * t_end), 0.0])
    return np.linalg.norm(x - exact)


@pytest.mark.parametrize("method", METHODS, ids=lambda m: m.name)
def test_order_of_convergence_translation(method):
    errors = [_oscillator_error(method, dt) for dt in (0.01, 0.005)]
    order = np.log2(errors[0] / errors[1])
    # observed order within 0.2 of the method's order (asymptotic regime, omega dt <= 0.04)
    assert order == pytest.approx(EXPECTED_ORDER[method], abs=0.2)


def test_order_of_convergence_rotation_is_first_order():
    """The incremental-potential rotation (seed page) converges only at first order, for every method.

    Measured on a torque-free asymmetric spin against an accurate ODE solution: the log-error ratios are
    0.83-0.97 for all 8 methods at dt 0.02/0.01/0.005 (see README). It is a property of the discretization (the
    seed page: "only convergence in the limit dt -> 0 ... noticeable dissipation"), shared by the reference engine,
    whose spin numbers the tests above match to 1e-9. Here: BE and BDF2 between dt 0.01 and 0.005.
    """
    from scipy.integrate import solve_ivp

    inertia = 48.0 * np.diag([0.4**2 + 0.6**2, 0.2**2 + 0.6**2, 0.2**2 + 0.4**2]) / 12
    w0 = np.array([1.0, 2.0, 3.0])

    def rhs(t, y):
        rot, w = y[:9].reshape(3, 3), y[9:]
        iw = rot @ inertia @ rot.T
        return np.concatenate([(lie.skew(w) @ rot).ravel(), np.linalg.solve(iw, -np.cross(w, iw @ w))])

    sol = solve_ivp(rhs, [0, 0.5], np.concatenate([np.eye(3).ravel(), w0]), rtol=1e-12, atol=1e-12, method="DOP853")
    rot_exact = sol.y[:9, -1].reshape(3, 3)
    for method in (mochi.IntegrationMethod.BACKWARD_EULER, mochi.IntegrationMethod.BDF2):
        errs = []
        for dt in (0.01, 0.005):
            scene, actor = spinning_box(method, w0, **TIGHT)
            for _ in range(int(round(0.5 / dt))):
                scene.step(dt)
            rot = actor.get_center_of_mass_transform().rotation_matrix
            errs.append(np.linalg.norm(lie.log_so3(rot @ rot_exact.T)))
        order = np.log2(errs[0] / errs[1])
        assert 0.75 < order < 1.25, (method, errs)


def test_newton_euler_keeps_spin():
    """Digest 2.5 [RUN]: with the Newton-Euler residual, omega_z stays ~3 (2.9981 after 20 steps, default solver)."""
    scene, actor = spinning_box(mochi.IntegrationMethod.BACKWARD_EULER, [0, 0, 3.0], newton_euler=True)
    assert mochi.experimental.is_newton_euler_inertia_enabled(actor)
    for _ in range(20):
        scene.step(0.1)
    assert actor.get_angular_velocity()[2] == pytest.approx(3.0, abs=2e-3)


def test_bdf2_history_reset_after_set_velocity():
    """Any set_velocity / set_root_transform resets the history: the next step is backward Euler (digest 3.2)."""
    dt = 1 / 60
    scene, actor = falling_box(mochi.IntegrationMethod.BDF2)
    ref_scene, ref_actor = falling_box(mochi.IntegrationMethod.BACKWARD_EULER)
    for _ in range(3):
        scene.step(dt)
    actor.set_velocity(actor.get_linear_velocity(), [0, 0, 0])
    ref_actor.set_center_of_mass_transform(actor.get_center_of_mass_transform())
    ref_actor.set_velocity(actor.get_linear_velocity(), [0, 0, 0])
    scene.step(dt)
    ref_scene.step(dt)
    assert actor.get_center_of_mass_transform().translation[1] == ref_actor.get_center_of_mass_transform().translation[1]
