"""The compiled Newton's PSD projection retry modes and RigidPivotToRigidTarget sets against the numpy Newton.

**psd_proj_mode IF_FAIL_RETRY / IF_FAIL_ALWAYS** (sim/solver/numpy_newton.py `_NewtonRun.newton_direction`): a world solves with
its unprojected Hessian; when the solve fails or dx is no descent direction (g . dx <= 0), its terms are evaluated
again at the same iterate with PSD-projected blocks and it solves again; IF_FAIL_ALWAYS keeps the projection for
the rest of the stage. The first evaluation of a stage is unprojected, the line search's evaluations project
only for IF_FAIL_ALWAYS worlds that retried. Only the rotational inertia (and offset forces) have blocks that
projection changes, so the scene is fast-spinning flat boxes: their inertia block is indefinite when a stage turns
them far from the prediction. Each box has a soft RigidPivotRotation spring (20 N m/rad): without it, a projected
block with a clipped eigenvalue is singular, the two paths' LU solves then return different huge steps along the
null direction and the trajectories part (the same happens with ALWAYS); with it, projected systems are regular.

**RigidPivotToRigidTarget**: the point pivots' values kernel on the target points t_hat + R_hat x_t, computed once
per stage from the current targets (and for damped sets from the old ones for g_old); the numpy Newton's kernel
path (`_values_kernel`) computes them per evaluation with the same numpy expression as `_kinematics`.

Bounds: round-off of ~1e-16 per solve (the LU solves, rotation update and norms differ, tests/test_newton_kernel.py),
amplified by the Newton iterations of a stage and the steps. Measured on this host (2026-12-05): the spinning tops,
30 steps of 8 or 64 worlds: at most 3.6e-15 m and 7.4e-15 in rotation entries for both IF_FAIL modes (ALWAYS /
NEVER on the same scene: 3.6e-15 / 7.6e-15), with 8 retries in 3 of 8 worlds (IF_FAIL_RETRY; 3 with
IF_FAIL_ALWAYS) and 12 in 5 of 64; the carried boxes, 20 steps of 3 or 64 worlds with per-world targets moved every
step: at most 2.7e-15 m and 3.7e-14 (BDF2 with world groups the largest). We allow 1e-11, a factor >1e2 over the
measured for another host's LAPACK (the pivot and joint tests allow ~1e3-1e4 over theirs, which are larger).
"""

import numpy as np
import pytest

import superdex_gym.sim as mochi
from helpers import assert_worker_threads_give_the_serial_bits
from superdex_gym.sim.solver import numpy_newton
from superdex_gym.sim.step import pipeline
from superdex_gym.sim.kernels import newton as newton_kernels
from superdex_gym.sim.params import PsdProjMode

BOUND = 1e-11  # m and rotation entries (module docstring)
IF_FAIL = [PsdProjMode.IF_FAIL_RETRY, PsdProjMode.IF_FAIL_ALWAYS]


def _tops(num_worlds, spin=15.0, first_seed=0):
    """Three flat boxes in the air, each on a soft rotation spring, spun at ~``spin`` rad/s (world w: seed w)."""
    scene = mochi.create_scene("tops")
    box = mochi.create_box_mesh_shape([0.1, 0.05, 0.2])
    actors = [scene.create_rigid_actor(name=f"top{k}", shape=box, density=1000.0,
                                       world_from_local=mochi.TransformRT(translation=[0.6 * k, 0.3, 0]))
              for k in range(3)]
    for a in actors:
        scene.create_rigid_pivot_rotation_constraint(actor=a, stiffness=20.0)
    scene.set_num_worlds(num_worlds)
    for w in range(num_worlds):
        rng = np.random.default_rng(first_seed + w)
        for a in actors:
            a.set_velocity(rng.normal(scale=0.5, size=3).tolist(), rng.normal(scale=spin, size=3).tolist(), world=w)
    return scene


def _step_all(scene, steps, dt, between=None):
    """Step; per step the per-world statuses and the most Newton and line-search iterations."""
    stats = []
    for step in range(steps):
        if between is not None:
            between(step)
        scene.step(dt)
        s = scene.get_solver_stats()
        stats.append((tuple(scene.get_world_status()), s.max_non_linear_iters, s.max_line_search_iters))
    cur = scene._state.current
    return scene.solver_path(), cur.com_position.copy(), cur.rotation.copy(), stats


def _run_tops(compiled, mode, monkeypatch, num_worlds, steps=30):
    monkeypatch.setattr(pipeline, "COMPILED_NEWTON", compiled)
    scene = _tops(num_worlds)
    params = scene.get_solver_params()
    params.non_linear_solver.psd_proj_mode = mode
    scene.set_solver_params(params)
    return _step_all(scene, steps, 0.02)


@pytest.fixture
def retried_worlds(monkeypatch):
    """Records, per numpy `newton_direction` call, the batch worlds re-evaluated for the retry (a test-only
    counter on the oracle: the retry is the only evaluation newton_direction makes)."""
    record = []
    direction = numpy_newton._NewtonRun.newton_direction

    def recording(run):
        evaluate = run.evaluate

        def evaluate_and_record(cc, rr, project_mask, rows=None, base=None):
            assert np.all(project_mask[rows])  # the retry projects exactly the worlds it re-evaluates
            record.extend(run.idx[rows].tolist())
            return evaluate(cc, rr, project_mask, rows, base)

        run.evaluate = evaluate_and_record
        try:
            return direction(run)
        finally:
            del run.evaluate

    monkeypatch.setattr(numpy_newton._NewtonRun, "newton_direction", recording)
    return record


def test_psd_mode_codes_are_the_params_values():
    assert (newton_kernels.PSD_ALWAYS, newton_kernels.PSD_NEVER, newton_kernels.PSD_IF_FAIL_RETRY,
            newton_kernels.PSD_IF_FAIL_ALWAYS) == tuple(m.value for m in (
                PsdProjMode.ALWAYS, PsdProjMode.NEVER, PsdProjMode.IF_FAIL_RETRY, PsdProjMode.IF_FAIL_ALWAYS))


@pytest.mark.parametrize("mode", IF_FAIL, ids=lambda m: m.name)
@pytest.mark.parametrize("num_worlds", [8, pytest.param(64, marks=pytest.mark.slow)])
def test_if_fail_modes_on_the_compiled_newton_match_the_numpy_one(mode, num_worlds, monkeypatch, retried_worlds):
    path_n, c_n, r_n, stats_n = _run_tops(False, mode, monkeypatch, num_worlds)
    retries = len(retried_worlds)
    path_c, c_c, r_c, stats_c = _run_tops(True, mode, monkeypatch, num_worlds)
    assert path_n.startswith("numpy") and path_c == "compiled (fused step)"
    assert retries >= 2 and len(set(retried_worlds)) >= 2  # the oracle retried, in several worlds
    assert len(retried_worlds) == retries  # (the compiled path never calls the numpy Newton)
    assert stats_c == stats_n
    np.testing.assert_allclose(c_c, c_n, rtol=0, atol=BOUND)
    np.testing.assert_allclose(r_c, r_n, rtol=0, atol=BOUND)
    # The retries change the trajectory: NEVER (no retry) and ALWAYS (every block projected) end elsewhere.
    for other in (PsdProjMode.NEVER, PsdProjMode.ALWAYS):
        _, c_o, r_o, _ = _run_tops(True, other, monkeypatch, num_worlds)
        assert np.abs(r_o - r_c).max() > 1e4 * BOUND, other


def test_if_fail_always_keeps_projecting_and_if_fail_retry_does_not(monkeypatch, retried_worlds):
    """IF_FAIL_RETRY retries again where IF_FAIL_ALWAYS projects from its first retry on: more retries, another
    trajectory (both paths, as the agreement test above checks each)."""
    ends = {}
    counts = {}
    for mode in IF_FAIL:
        retried_worlds.clear()
        ends[mode] = _run_tops(True, mode, monkeypatch, 8)[2]
        _run_tops(False, mode, monkeypatch, 8)
        counts[mode] = len(retried_worlds)
    assert counts[PsdProjMode.IF_FAIL_RETRY] > counts[PsdProjMode.IF_FAIL_ALWAYS] > 0
    assert np.abs(ends[PsdProjMode.IF_FAIL_RETRY] - ends[PsdProjMode.IF_FAIL_ALWAYS]).max() > 1e4 * BOUND


@pytest.mark.parametrize("mode", IF_FAIL, ids=lambda m: m.name)
def test_if_fail_worlds_stepped_together_equal_worlds_stepped_alone(mode, monkeypatch):
    _, c_all, r_all, _ = _run_tops(True, mode, monkeypatch, 3, steps=12)
    for w in range(3):
        scene = _tops(1, first_seed=w)
        params = scene.get_solver_params()
        params.non_linear_solver.psd_proj_mode = mode
        scene.set_solver_params(params)
        _, c_w, r_w, _ = _step_all(scene, 12, 0.02)
        assert np.array_equal(c_w[0], c_all[w])
        assert np.array_equal(r_w[0], r_all[w])


@pytest.mark.slow
def test_if_fail_worker_threads_give_the_serial_bits(monkeypatch):
    assert_worker_threads_give_the_serial_bits(
        lambda: _run_tops(True, PsdProjMode.IF_FAIL_RETRY, monkeypatch, 5, steps=12)[1:3])


# --- RigidPivotToRigidTarget -------------------------------------------------------------------------------------


def _carried(num_worlds, damping=0.0, com_frame=False, with_position_pivot=False, method=None):
    """Two boxes, each carried by a RigidPivotToRigidTarget constraint on a corner point, over a ground plane (the
    boxes touch it as they swing), and a third box on a RigidPivotPosition pivot (``with_position_pivot``: both
    point-pivot kinds in one stage). The targets move per world every step (`_move_targets`). ``method``: the
    integration method (default: the scene's)."""
    scene = mochi.create_scene("carried")
    scene.create_rigid_actor(name="ground", shape=mochi.create_plane_shape(normal=[0, 1, 0], distance=0.0),
                             is_static=True)
    box = mochi.create_box_mesh_shape([0.05, 0.05, 0.05])
    # A CoM off the root frame, so that the CoM-frame target (``com_frame``) is another target.
    boxes = [scene.create_rigid_actor(name=f"box{k}", shape=box, mass=1.0, center_of_mass=(0.02, -0.01, 0.01),
                                      moment_of_inertia=(0.002, 0.0, 0.0, 0.002, 0.0, 0.002),
                                      world_from_local=mochi.TransformRT(translation=[0.3 * k, 0.1, 0]))
             for k in range(3)]
    if with_position_pivot:
        scene.create_rigid_pivot_position_constraint(actor=boxes[2], local_position=[0, 0.05, 0],
                                                     target_position=[0.6, 0.2, 0.0], stiffness=1000.0,
                                                     damping=damping)
    carriers = []
    for k, b in enumerate(boxes[:2]):
        carriers.append(scene.create_rigid_pivot_to_rigid_target_constraint(
            actor=b, local_position=[0.05, 0.05, 0.0], stiffness=2000.0, damping=damping,
            target_transform=mochi.TransformRT(translation=[0.3 * k, 0.1, 0])))
    scene.set_num_worlds(num_worlds)
    if method is not None:
        solver = scene.get_solver_params()
        solver.integration_method = method
        scene.set_solver_params(solver)
    if com_frame:
        scene._constraint_system._sets["RigidPivotToRigidTarget"].target_transform_is_com_frame = True
    return scene, carriers


def _move_targets(carriers, num_worlds, first_world=0, rekick=None):
    """Per world, every step: the targets turn and swing (world w's phase from its index ``first_world + w``).
    ``rekick`` (actor, world): at step 5 that world's actor gets a new velocity (its history restarts, so BDF2
    stages solve world groups: the target points' rows are ctx.world_index's)."""
    def move(step):
        if rekick is not None and step == 5:
            rekick[0].set_velocity([0.2, 0.1, 0.0], [1.0, 0.0, 2.0], world=rekick[1])
        t = 0.05 * step
        for w in range(num_worlds):
            phase = first_world + w
            q = mochi.Quaternion.from_rotation_vector([0.0, 0.3 * t + 0.1 * phase, 0.2 * t])
            for k, c in enumerate(carriers):
                c.set_target_transform(mochi.TransformRT(q, [0.3 * k + 0.1 * np.sin(3 * t + phase), 0.12, 0.05 * t]),
                                       world=w)
    return move


TARGET_CASES = {
    "plain": {},
    "damped": dict(damping=5.0),
    "com_frame": dict(com_frame=True),
    "with_position_pivot": dict(with_position_pivot=True, damping=5.0),
    "bdf2_world_groups": dict(damping=5.0, method=mochi.IntegrationMethod.BDF2),
}


def _run_carried(compiled, monkeypatch, num_worlds, steps=20, **kw):
    monkeypatch.setattr(pipeline, "COMPILED_NEWTON", compiled)
    scene, carriers = _carried(num_worlds, **kw)
    rekick = (scene.get_actors()[2], 1) if "method" in kw else None
    return _step_all(scene, steps, 0.01, _move_targets(carriers, num_worlds, rekick=rekick))


@pytest.mark.parametrize("case", sorted(TARGET_CASES))
@pytest.mark.parametrize("num_worlds", [3, pytest.param(64, marks=pytest.mark.slow)])
def test_target_pivots_on_the_compiled_newton_match_the_numpy_one(case, num_worlds, monkeypatch):
    path_n, c_n, r_n, stats_n = _run_carried(False, monkeypatch, num_worlds, **TARGET_CASES[case])
    path_c, c_c, r_c, stats_c = _run_carried(True, monkeypatch, num_worlds, **TARGET_CASES[case])
    assert path_n.startswith("numpy") and path_c == "compiled (fused step)"
    assert stats_c == stats_n
    np.testing.assert_allclose(c_c, c_n, rtol=0, atol=BOUND)
    np.testing.assert_allclose(r_c, r_n, rtol=0, atol=BOUND)
    assert np.abs(c_c[1] - c_c[0]).max() > 1e-3  # the worlds' targets really differ


@pytest.mark.parametrize("case", ["plain", "with_position_pivot"])
def test_target_pivot_worlds_stepped_together_equal_worlds_stepped_alone(case, monkeypatch):
    _, c_all, r_all, _ = _run_carried(True, monkeypatch, 3, steps=10, **TARGET_CASES[case])
    for w in range(3):
        scene, carriers = _carried(1, **TARGET_CASES[case])
        _, c_w, r_w, _ = _step_all(scene, 10, 0.01, _move_targets(carriers, 1, first_world=w))
        assert np.array_equal(c_w[0], c_all[w])
        assert np.array_equal(r_w[0], r_all[w])


@pytest.mark.slow
def test_target_pivots_on_worker_threads_give_the_serial_bits(monkeypatch):
    """The threaded compiled Newton slices the target set's per-world g_old (damped) like the others."""
    assert_worker_threads_give_the_serial_bits(lambda: _run_carried(True, monkeypatch, 5, steps=8, damping=5.0)[1:3])


def test_target_pivots_take_the_compiled_path_unless_exact_hessian(monkeypatch):
    from superdex_gym.sim.solver.compiled_newton import plan

    monkeypatch.setattr(pipeline, "COMPILED_NEWTON", True)
    scene, _ = _carried(1, with_position_pivot=True)
    assert scene.solver_path() == "compiled (fused step)"
    scene._constraint_system._sets["RigidPivotToRigidTarget"].exact_hessian = True  # the FD tests' exact curvature
    params = scene.get_solver_params().non_linear_solver
    kplan, reason = plan(pipeline.CORE_POTENTIALS + tuple(scene._extra_potentials), params)
    assert kplan is None and reason == "constraint type RigidPivotToRigidTarget has no per-world kernel"
