"""The fused step (sim/step/fused.py, sim/kernels/fused.py) against the per-stage step (`_GroupStep`, its oracle:
``sim.step.fused.FUSED_STEP = False``), both on the compiled Newton.

The fused kernels do the per-stage path's arithmetic in its order, with numpy's 3x3 matmul as OpenBLAS's x86-64
kernels round it (a chain of fused multiply-adds) and the 3-term einsum contractions in numpy's SIMD order, so the
two give the same bits on these hosts: every comparison below is exact. Each case runs the same scene and inputs
on both paths and compares every field of the state, the statuses and the report's maxima after every step.
"""

import math
import warnings

import gymnasium as gym
import numpy as np
import pytest

import superdex_gym  # noqa: F401  (registers the environments)
import superdex_gym.sim as mochi
from superdex_gym.sim.step import fused as fused_step, pipeline

FIELDS = ("com_position", "rotation", "linear_velocity", "angular_velocity", "velocity_sym")


@pytest.fixture(autouse=True)
def compiled_newton(monkeypatch):
    monkeypatch.setattr(pipeline, "COMPILED_NEWTON", True)
    monkeypatch.setattr(fused_step, "FUSED_STEP", True)


def _record(scene):
    st = scene._state
    report = scene._last_report
    return ([getattr(h, f).copy() for h in st.history for f in FIELDS], st.status.copy(),
            report.actor_status.copy(), report.max_iterations, report.max_line_search_iterations)


def _run_both(monkeypatch, build, steps, between=None):
    """``build()`` -> scene, stepped ``steps`` times at 0.01 s on each path (``between(scene, k)`` before step k);
    returns the records of both runs, after asserting which path each took."""
    runs = {}
    for fused in (False, True):
        monkeypatch.setattr(fused_step, "FUSED_STEP", fused)
        scene = build()
        expected = "compiled (fused step)" if fused else "compiled (per-stage step: the fused step is off"
        assert scene.solver_path().startswith(expected)
        records = []
        for k in range(steps):
            if between is not None:
                between(scene, k)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # the divergence case warns on both paths
                scene.step(0.01)
            records.append(_record(scene))
        runs[fused] = records
    return runs[False], runs[True]


def _assert_same(per_stage, fused):
    assert len(per_stage) == len(fused) > 0
    for k, (a, b) in enumerate(zip(per_stage, fused)):
        for x, y in zip(a[0], b[0]):
            np.testing.assert_array_equal(y, x, err_msg=f"step {k}")
        np.testing.assert_array_equal(b[1], a[1], err_msg=f"status, step {k}")
        np.testing.assert_array_equal(b[2], a[2], err_msg=f"actor status, step {k}")
        assert b[3:] == a[3:], f"iteration maxima, step {k}"


def _stack(num_worlds, boxes=5):
    scene = mochi.create_scene("stack")
    scene.create_rigid_actor(name="ground", shape=mochi.create_plane_shape(normal=[0, 1, 0], distance=0.0),
                             is_static=True)
    box = mochi.create_box_mesh_shape([0.1, 0.1, 0.1])
    actors = [scene.create_rigid_actor(name=f"box{k}", shape=box, density=1000.0,
                                       collider_type=mochi.ColliderType.BOX,
                                       world_from_local=mochi.TransformRT(translation=[0, 0.0993 + 0.1993 * k, 0]))
              for k in range(boxes)]
    scene.set_num_worlds(num_worlds)
    for w in range(num_worlds):
        rng = np.random.default_rng(w)
        for a in actors:
            a.set_velocity(rng.normal(scale=0.3, size=3).tolist(), rng.normal(scale=1.0, size=3).tolist(), world=w)
    return scene


def test_push_env_is_bit_identical_on_both_paths(monkeypatch):
    actions = np.random.default_rng(3).uniform(-1, 1, (60, 4)).astype(np.float32)
    obs = {}
    for fused in (False, True):
        monkeypatch.setattr(fused_step, "FUSED_STEP", fused)
        env = gym.make("SuperDex/Push-v0")
        env.reset(seed=5)
        scene = env.unwrapped.worlds.scene
        assert scene.solver_path() == ("compiled (fused step)" if fused else
                                       "compiled (per-stage step: the fused step is off (SUPERDEX_FUSED_STEP=0 or "
                                       "superdex_gym.sim.step.fused.FUSED_STEP = False))")
        rows = []
        for a in actions:
            o = env.step(a)[0]
            st = scene._state.current
            rows.append(np.concatenate([o["observation"].astype(float), st.com_position.ravel(),
                                        st.rotation.ravel(), st.velocity_sym.ravel()]))
        obs[fused] = np.array(rows)
        env.close()
    np.testing.assert_array_equal(obs[True], obs[False])
    assert np.abs(np.diff(obs[True][:, :3], axis=0)).max() > 1e-3  # the gripper really moved


def test_five_box_stack_in_three_worlds(monkeypatch):
    _assert_same(*_run_both(monkeypatch, lambda: _stack(3), 40))


def _driven_box(damping):
    """A box held by a pivot-position drive (stiff: the CONSTANT_VELOCITY_AND_TARGETS guess puts it on its
    target) and a pivot-rotation drive, on a plane, in two worlds with different targets."""
    scene = mochi.create_scene("drives")
    solver = scene.get_solver_params()
    solver.non_linear_solver.initial_guess = mochi.InitialGuess.CONSTANT_VELOCITY_AND_TARGETS
    scene.set_solver_params(solver)
    scene.create_rigid_actor(name="ground", shape=mochi.create_plane_shape(), is_static=True)
    box = scene.create_rigid_actor(name="box", shape=mochi.create_box_mesh_shape([0.05, 0.05, 0.05]),
                                   density=1000.0, collider_type=mochi.ColliderType.BOX,
                                   world_from_local=mochi.TransformRT(translation=[0.0, 0.2, 0.0]))
    free = scene.create_rigid_actor(name="free", shape=mochi.create_box_mesh_shape([0.04, 0.04, 0.04]),
                                    density=500.0, collider_type=mochi.ColliderType.BOX,
                                    world_from_local=mochi.TransformRT(translation=[0.3, 0.1, 0.0]))
    free.set_velocity([-1.0, 0.0, 0.0], [0.0, 3.0, 0.0])
    scene.set_num_worlds(2)
    pos = scene.create_rigid_pivot_position_constraint(actor=box, target_position=[0.0, 0.2, 0.0],
                                                       local_position=[0.0, 0.05, 0.0], stiffness=1e5,
                                                       damping=damping)
    rot = scene.create_rigid_pivot_rotation_constraint(actor=box, stiffness=50.0)
    return scene, pos, rot


@pytest.mark.parametrize("damping", [0.0, 20.0])
def test_pivot_drives_with_moving_targets(monkeypatch, damping):
    """The drives' targets move every step (the guess on targets; with damping, the stage-start values g_old)."""
    holder = {}

    def build():
        scene, pos, rot = _driven_box(damping)
        holder["pos"] = pos
        return scene

    def between(scene, k):
        t = 0.01 * k
        for w in range(2):
            holder["pos"].set_target_position([0.1 * math.sin(3 * t + w), 0.2 + 0.05 * w, 0.1 * t], world=w)

    per_stage, fused = _run_both(monkeypatch, build, 30, between)
    _assert_same(per_stage, fused)
    assert np.abs(fused[-1][0][0][:, 1] - fused[0][0][0][:, 1]).max() > 1e-3  # the driven box followed


@pytest.mark.parametrize("method", [mochi.IntegrationMethod.BDF2, mochi.IntegrationMethod.BDF3,
                                    mochi.IntegrationMethod.DIRK33, mochi.IntegrationMethod.SYMPLECTIC_DIRK22])
def test_multistep_and_multistage_methods_with_a_world_reset(monkeypatch, method):
    """BDF2/3 combine two or three history states (a reset world restarts its history: two world groups),
    DIRK33 and the symplectic DIRK22 run several stages per step."""

    def build():
        scene = _stack(3, boxes=3)
        solver = scene.get_solver_params()
        solver.integration_method = method
        solver.non_linear_solver.initial_guess = mochi.InitialGuess.CONSTANT_VELOCITY
        scene.set_solver_params(solver)
        return scene

    def between(scene, k):
        if k == 5:
            actor = scene.find_actor("box1")
            actor.set_velocity([0.5, 0.2, 0.0], [0.0, 0.0, 4.0], world=1)

    per_stage, fused = _run_both(monkeypatch, build, 14, between)
    _assert_same(per_stage, fused)


def test_a_diverging_world_is_reset_as_on_the_per_stage_path(monkeypatch):
    def build():
        scene = _stack(2, boxes=2)
        solver = scene.get_solver_params()
        solver.non_linear_solver.abs_div_tol = 1e3
        scene.set_solver_params(solver)
        return scene

    def between(scene, k):
        if k == 3:  # world 1's top box thrown at 1 km/s: an inertia residual m v / dt ~ 1e6 N, far above 1e3
            scene.find_actor("box1").set_velocity([1e3, 0.0, 0.0], [0.0, 0.0, 0.0], world=1)

    per_stage, fused = _run_both(monkeypatch, build, 6, between)
    _assert_same(per_stage, fused)
    assert fused[3][1].tolist() == [mochi.ConvergenceStatus.CONVERGED.value, mochi.ConvergenceStatus.DIVERGED.value]


def _stack_with_post(num_worlds, boxes, method, initial_guess=None):
    """`_stack` on ``method`` (and ``initial_guess``) with a static post beside it that tests move."""
    scene = _stack(num_worlds, boxes=boxes)
    solver = scene.get_solver_params()
    solver.integration_method = method
    if initial_guess is not None:
        solver.non_linear_solver.initial_guess = initial_guess
    scene.set_solver_params(solver)
    scene.create_rigid_actor(name="post", shape=mochi.create_box_mesh_shape([0.05, 0.3, 0.05]),
                             is_static=True, collider_type=mochi.ColliderType.BOX,
                             world_from_local=mochi.TransformRT(translation=[0.3, 0.3, 0.0]))
    return scene


def test_moving_static_actors(monkeypatch):
    """A static box turned and moved between steps in one world: its implied velocity (the moved-statics branch
    and the stage poses interpolated between its previous and new pose by the two-stage method)."""

    def build():
        return _stack_with_post(2, 2, mochi.IntegrationMethod.DIRK22)

    def between(scene, k):
        half = 0.02 * k
        post = scene.find_actor("post")
        post.set_root_transform(mochi.TransformRT(translation=[0.3 - 0.01 * k, 0.3, 0.0],
                                                  rotation=[0.0, math.sin(half), 0.0, math.cos(half)]), world=1)

    per_stage, fused = _run_both(monkeypatch, build, 8, between)
    _assert_same(per_stage, fused)
    post_velocity = fused[-1][0][2][:, 3]  # y_n's linear velocity of the post (model row 3), per world
    assert np.abs(post_velocity[1]).max() > 0.5 and not post_velocity[0].any()  # implied in world 1 only


def test_worlds_together_equal_worlds_alone():
    together = _stack(4)
    for _ in range(20):
        together.step(0.01)
    assert together.solver_path() == "compiled (fused step)"
    for w in range(4):
        alone = _stack(1)
        rng = np.random.default_rng(w)  # world w's kick, as _stack gives it
        for k in range(5):
            alone.find_actor(f"box{k}").set_velocity(rng.normal(scale=0.3, size=3).tolist(),
                                                      rng.normal(scale=1.0, size=3).tolist())
        for _ in range(20):
            alone.step(0.01)
        for f in FIELDS:
            np.testing.assert_array_equal(getattr(alone._state.current, f)[0], getattr(together._state.current, f)[w])


def test_outside_guess_on_a_yawed_squeeze_equals_the_per_stage_step(monkeypatch):
    """The free-finger rows' start (CONSTANT_VELOCITY_AND_TARGETS_OUTSIDE): the fused step's guess, its depth test
    and the statics put back give the per-stage step's bits through squeezes that snap yawed cubes straight
    (where the test replaces rotations), refined substeps included."""
    from test_pick_and_place import PP, _pick

    from superdex_gym.sim.potentials import base

    yaws = [40.0, 0.0, -35.0]
    monkeypatch.setattr(fused_step, "FUSED_STEP", False)
    numpy_replaced = []
    real_numpy = base.guess_outside

    def watched_numpy(potentials, latest, predicted_c, guess_c, guess_r):
        out = real_numpy(potentials, latest, predicted_c, guess_c, guess_r)
        numpy_replaced.append(out is not guess_r)
        return out

    monkeypatch.setattr(pipeline, "guess_outside", watched_numpy)
    per_stage, per_stage_refined = _pick(yaws, 2)
    monkeypatch.setattr(fused_step, "FUSED_STEP", True)
    assert gym.make(PP).unwrapped.worlds.scene.solver_path() == "compiled (fused step)"
    replaced = []
    real = fused_step._guess_outside

    def watched(*args):
        replaced.append(real(*args))
        return replaced[-1]

    monkeypatch.setattr(fused_step, "_guess_outside", watched)
    fused, fused_refined = _pick(yaws, 2)
    # the kernel replaced rotations (kernels.guess) in as many stages as the numpy test did on the per-stage step
    assert sum(replaced) > 0 and sum(replaced) == sum(numpy_replaced)
    np.testing.assert_array_equal(fused_refined, per_stage_refined)
    np.testing.assert_array_equal(fused, per_stage)


@pytest.mark.parametrize("method", [mochi.IntegrationMethod.DIRK33, mochi.IntegrationMethod.BDF2])
def test_outside_guess_with_several_stages_and_moving_statics(monkeypatch, method):
    """Later stages start from the previous stage (the test's latest pose), and a static's pose in the depth test
    is its constant-velocity prediction on both paths (then its prescribed pose)."""

    def build():
        return _stack_with_post(2, 3, method, mochi.InitialGuess.CONSTANT_VELOCITY_AND_TARGETS_OUTSIDE)

    def between(scene, k):
        if k == 4:
            scene.find_actor("box1").set_velocity([0.0, -2.0, 0.0], [0.0, 0.0, 30.0], world=1)
        scene.find_actor("post").set_root_transform(
            mochi.TransformRT(translation=[0.3 - 0.02 * k, 0.3, 0.0], rotation=[0.0, 0.0, 0.0, 1.0]), world=0)

    per_stage, fused = _run_both(monkeypatch, build, 10, between)
    _assert_same(per_stage, fused)


def test_the_cold_cache_child_compiles_the_kernels_the_step_calls():
    """`kernels.fused.compile_kernels` (a child process's work on a cold cache) compiles stage_begin and stage_end
    for exactly the argument types of a step: after a step there is still one specialization of each (a second
    one would be compiled in the stepping process, the child's work wasted)."""
    from superdex_gym.sim.kernels import fused

    fused.compile_kernels()
    scene = _stack(2)
    scene.step(0.01)
    assert len(fused.stage_begin.signatures) == 1 and len(fused.stage_end.signatures) == 1
