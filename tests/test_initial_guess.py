"""NonLinearSolverParams.initial_guess (not a reference setting): where each stage's Newton iteration starts.

LATEST_SOLUTION (default) is the reference's behaviour (the reference-run tests pin it). CONSTANT_VELOCITY starts
from c + h v, exp(h omega) R. Both solve the same stage problems, so with a tight tolerance they give the same
trajectory; on a steadily pushed box the prediction starts near the answer and needs fewer iterations."""

import numpy as np
import pytest
from reference import box_mesh

import superdex_gym.sim as mochi

DT = 0.01


def pushed_box(initial_guess, abs_tol=1e-3, steps=40):
    """A 4 cm pusher driven at 0.3 m/s by a stiff pivot drive pushes a 4 cm cube along a table (Y up).

    Returns the cube's x per step and the Newton iterations per step."""
    scene = mochi.create_scene()
    sp = scene.get_solver_params()
    sp.non_linear_solver.initial_guess = initial_guess
    sp.non_linear_solver.abs_tol = abs_tol
    sp.non_linear_solver.max_iter = 60
    scene.set_solver_params(sp)
    scene.create_rigid_actor(name="table", shape=mochi.create_plane_shape(normal=[0, 1, 0], distance=0.0),
                             is_static=True)
    cube = scene.create_rigid_actor(shape=box_mesh((0.02, 0.02, 0.02)), mass=0.064,
                                    collider_type=mochi.ColliderType.BOX,
                                    world_from_local=mochi.TransformRT(translation=[0.0, 0.02, 0.0]))
    pusher = scene.create_rigid_actor(shape=box_mesh((0.02, 0.02, 0.02)), mass=0.05, has_gravity=False,
                                      collider_type=mochi.ColliderType.BOX,
                                      world_from_local=mochi.TransformRT(translation=[-0.05, 0.03, 0.0]))
    drive = scene.create_rigid_pivot_position_constraint(actor=pusher, local_position=[0, 0, 0],
                                                         target_position=[-0.05, 0.03, 0.0], stiffness=1e6)
    scene.create_rigid_pivot_rotation_constraint(actor=pusher, local_rotation=[0, 0, 0],
                                                 target_rotation=[0, 0, 0], stiffness=1e3)
    for _ in range(10):  # settle the cube on the table
        scene.step(DT)
    xs, iters = [], []
    for k in range(steps):
        drive.set_target_position([-0.05 + 0.3 * DT * (k + 1), 0.03, 0.0])
        scene.step(DT)
        xs.append(cube.get_root_transform().translation[0])
        iters.append(scene.get_solver_stats().max_non_linear_iters)
    return np.array(xs), np.array(iters)


def test_default_is_the_reference_behaviour():
    assert mochi.NonLinearSolverParams().initial_guess is mochi.InitialGuess.LATEST_SOLUTION
    assert mochi.NonLinearSolverParams.reference().initial_guess is mochi.InitialGuess.LATEST_SOLUTION


def test_invalid_initial_guess_is_rejected():
    with pytest.raises(TypeError, match="initial_guess"):
        mochi.NonLinearSolverParams(initial_guess="velocity").validate()


def test_same_trajectory_at_tight_tolerance():
    # Both runs solve the same stage problems to a weighted residual of 1e-9. Measured: they agree exactly
    # before contact and to 1.2e-8 m from the contact onset on, the same with abs_tol 1e-11 (so this is where
    # the two iterations stop at rounding level, rel_step_tol, not a tolerance effect); 1e-7 m bounds it.
    x_latest, _ = pushed_box(mochi.InitialGuess.LATEST_SOLUTION, abs_tol=1e-9)
    x_pred, _ = pushed_box(mochi.InitialGuess.CONSTANT_VELOCITY, abs_tol=1e-9)
    assert x_latest[-1] - x_latest[0] > 0.05  # the cube was pushed (contact from step 4 on)
    np.testing.assert_allclose(x_pred[:3], x_latest[:3], rtol=0, atol=1e-15)
    np.testing.assert_allclose(x_pred, x_latest, rtol=0, atol=1e-7)


def test_prediction_needs_fewer_iterations_on_a_steady_push():
    _, it_latest = pushed_box(mochi.InitialGuess.LATEST_SOLUTION)
    _, it_pred = pushed_box(mochi.InitialGuess.CONSTANT_VELOCITY)
    # Measured: 40 steps, 303 vs 58 iterations in total (this setup, abs_tol 1e-3): at 8 per step the latest
    # solution works off the whole step's overlap through the penalty's cubic blend region every step.
    assert it_pred.sum() < 0.5 * it_latest.sum()


def test_singular_newton_system_gets_the_minimum_norm_step():
    # PSD projection can leave a singular Hessian (seen once in 10^4 random Push steps with this guess: a
    # fast-spinning cube's projected rotational block). The solve then takes the least-squares minimum-norm
    # step instead of returning inf/NaN (which would mark the world DIVERGED).
    from superdex_gym.sim.solver.numpy_newton import batched_solve

    rng = np.random.default_rng(0)
    q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    singular = np.zeros((6, 6))
    singular[:3, :3] = (q * np.array([1.0, 10.0, 1e3])) @ q.T  # the rotational block is exactly zero
    regular = np.diag([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    rhs = rng.normal(size=(2, 6, 1))
    out = batched_solve(np.stack([singular, regular]), rhs)
    assert np.all(np.isfinite(out))
    np.testing.assert_allclose(out[0], np.linalg.pinv(singular) @ rhs[0, :, 0], rtol=1e-12, atol=1e-15)
    assert np.all(out[0, 3:] == 0.0)  # the singular directions are left alone
    np.testing.assert_array_equal(out[1], np.linalg.solve(regular, rhs[1])[:, 0])


def test_the_numpy_newtons_dense_solve_runs_on_one_blas_thread(monkeypatch):
    """OpenBLAS threads the LU of a large dense system; on shared cores its threads wait for busy ones (the 20-body
    pile: 1 287 -> 22 ms per step with one thread) and the threaded LU rounds differently with the core count.
    The numpy Newton's solve limits numpy's and scipy's BLAS to one thread, and restores them after."""
    from threadpoolctl import threadpool_info

    from superdex_gym.sim.solver import numpy_newton

    real_solve = np.linalg.solve
    seen = []

    def recording_solve(a, b):
        seen.append({lib["filepath"]: lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"})
        return real_solve(a, b)

    before = {lib["filepath"]: lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"}
    monkeypatch.setattr(numpy_newton.np.linalg, "solve", recording_solve)
    mats = np.stack([np.eye(120) * 2.0 + 0.01 * np.ones((120, 120))])
    numpy_newton.batched_solve(mats, np.ones((1, 120, 1)))
    assert seen and seen[0] and set(seen[0].values()) == {1}
    assert {lib["filepath"]: lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"} == before


def driven_body(initial_guess, abs_tol=1e-3, steps=30, second_drive=False, **drive):
    """A free 50 g box (no gravity) whose pivot, 1 cm off the CoM, is driven by a pivot-position constraint to a
    new random target every step (a teleoperated / mocap-driven body; an upright-keeping rotation drive as on the
    gripper). Returns its CoM per step (steps, 3) and the Newton iterations per step. rel_tol 0: the runs stop on
    the absolute tolerance only."""
    scene = mochi.create_scene()
    sp = scene.get_solver_params()
    sp.non_linear_solver.initial_guess = initial_guess
    sp.non_linear_solver.abs_tol = abs_tol
    sp.non_linear_solver.rel_tol = 0.0
    sp.non_linear_solver.max_iter = 60
    scene.set_solver_params(sp)
    body = scene.create_rigid_actor(shape=box_mesh((0.02, 0.03, 0.01)), mass=0.05, has_gravity=False)
    constraint = scene.create_rigid_pivot_position_constraint(actor=body, local_position=[0.01, 0.0, 0.0],
                                                              target_position=[0.01, 0.0, 0.0], **drive)
    scene.create_rigid_pivot_rotation_constraint(actor=body, local_rotation=[0, 0, 0], target_rotation=[0, 0, 0],
                                                 stiffness=1e3)  # keeps it upright, as the gripper's fingers
    if second_drive:
        scene.create_rigid_pivot_position_constraint(actor=body, local_position=[0.0, 0.0, 0.0],
                                                     target_position=[0.0, 0.0, 0.0], stiffness=1e6)
    rng = np.random.default_rng(0)
    cs, iters = [], []
    for _ in range(steps):
        constraint.set_target_position(rng.uniform(-0.05, 0.05, 3))
        scene.step(DT)
        cs.append(body.get_root_transform().translation)
        iters.append(scene.get_solver_stats().max_non_linear_iters)
    return np.array(cs), np.array(iters)


TARGETS = mochi.InitialGuess.CONSTANT_VELOCITY_AND_TARGETS


def test_targets_guess_solves_the_same_problems_in_fewer_iterations():
    # A stiff drive (k h^2 = 100 >> m = 0.05) capped at 500 N (saturation 5e-4 m, as the Push gripper's) decides
    # where the body ends. From the constant-velocity guess the pivot starts centimetres off, in the capped
    # (linear) part of the drive, and Newton walks in; started on the target only the inertial deviation is
    # left. At abs_tol 1e-9 both reach the same solution (measured: 2.6e-16 m apart): the weighted force tolerance 1e-9 m a_ref = 4.9e-10 N
    # over the drive's stiffness near its target (2k = 2e6 N/m) is 2.5e-16 m; 1e-12 m bounds the difference.
    drive = dict(stiffness=1e6, saturation=5e-4)
    _, it_cv = driven_body(mochi.InitialGuess.CONSTANT_VELOCITY, **drive)
    _, it_tg = driven_body(TARGETS, **drive)
    assert it_tg.sum() < 0.7 * it_cv.sum()  # measured: 114 vs 214 iterations over 30 steps
    x_cv, _ = driven_body(mochi.InitialGuess.CONSTANT_VELOCITY, abs_tol=1e-9, **drive)
    x_tg, _ = driven_body(TARGETS, abs_tol=1e-9, **drive)
    assert np.ptp(x_cv, axis=0).min() > 0.02  # the body really moved around
    np.testing.assert_allclose(x_tg, x_cv, rtol=0, atol=1e-12)


@pytest.mark.parametrize("case", [dict(stiffness=1.0), dict(stiffness=1e6, damping=10.0),
                                  dict(stiffness=1e6, second_drive=True)])
def test_targets_guess_leaves_bodies_the_target_does_not_decide(case):
    # soft (k h^2 = 1e-4 < 100 m), damped, or held by two drives: the guess stays the constant-velocity one,
    # so the two modes give bit-identical steps
    x_cv, it_cv = driven_body(mochi.InitialGuess.CONSTANT_VELOCITY, steps=10, **case)
    x_tg, it_tg = driven_body(TARGETS, steps=10, **case)
    np.testing.assert_array_equal(x_tg, x_cv)
    np.testing.assert_array_equal(it_tg, it_cv)


def test_best_iterate_on_stop_keeps_the_lowest_energy_iterate_at_the_cap():
    """E = s sqrt(1 + x^2) on the box's CoM x: from |x0| > 1 plain Newton overshoots (x -> -x^3, the energy and
    the residual |x| / sqrt(1 + x^2) grow every iteration), so with the line search off and 3 iterations the last
    iterate is the worst and the start the best. With the flag the world stops (STOPPED) at its start; off (the default)
    it ends at the last iterate, as before. The inertia of a 100 s step is ~1e-4 of the curvature here."""
    from superdex_gym.sim.potentials.base import Potential, PotentialTerms

    class Hump(Potential):
        def evaluate(self, ctx, com_position, rotation, want_hessian):
            x = com_position[..., 0]
            root = np.sqrt(1.0 + x * x)
            terms = PotentialTerms.zeros(*com_position.shape[:2], want_hessian)
            terms.energy = (50.0 * root).sum(axis=1)
            terms.gradient[..., 0] = 50.0 * x / root
            if want_hessian:
                terms.hessian_diag[..., 0, 0] = 50.0 / root**3
            return terms

    results = {}
    for flag in (False, True):
        scene = mochi.create_scene()
        scene.set_gravity([0, 0, 0])
        params = mochi.SolverParams()
        nl = params.non_linear_solver
        nl.max_iter, nl.line_search_type, nl.best_iterate_on_stop = 3, mochi.LineSearchType.NONE, flag
        scene.set_solver_params(params)
        actor = scene.create_rigid_actor(shape=mochi.create_box_mesh_shape([0.1, 0.1, 0.1]), density=1.0,
                                         world_from_local=mochi.TransformRT(translation=[1.1, 0, 0]))
        scene.add_potential(Hump())
        scene.step(100.0)
        stats = scene.get_solver_stats()
        assert stats.convergence_status is mochi.ConvergenceStatus.STOPPED
        results[flag] = (actor.get_center_of_mass_transform().translation_array[0], stats.residual_norm)
    (x_last, r_last), (x_best, r_best) = results[False], results[True]
    assert abs(x_last) > 10.0  # 1.1 -> -1.33 -> 2.35 -> -13: the overshooting iterates (inertia aside)
    assert abs(x_best) < 1.2 and r_best < r_last
    with pytest.raises(TypeError, match="best_iterate_on_stop must be a bool"):
        mochi.NonLinearSolverParams(best_iterate_on_stop=1).validate()
