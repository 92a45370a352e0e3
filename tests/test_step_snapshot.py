"""`Scene.step_snapshot`: shares the arrays a step replaces instead of copying them, so after the step it must still
hold exactly what a full `snapshot` taken at the same moment holds, and restoring it must undo the step bit for
bit. Checked on the env's Push scene (drives, contact), on both step paths, on a batch whose worlds have
different history lengths (several groups) and a diverging world; where a step can write in place (spins set
from outside, callbacks) it must be a full copy."""

import gymnasium as gym
import numpy as np
import pytest

import superdex_gym  # noqa: F401
import superdex_gym.sim as mochi
from superdex_gym.sim.step import fused as fused_step
from superdex_gym.sim.state_io import _to_arrays


def _flat(snapshot) -> dict:
    """Every array and scalar a snapshot holds, by path."""
    layout, state, actor_status, extra = snapshot
    out = {f"state/{k}": np.asarray(v) for k, v in _to_arrays(state).items()}
    out["layout"] = np.asarray(layout)
    out["actor_status"] = np.asarray(actor_status)

    def walk(prefix, value):
        if isinstance(value, dict):
            for k, v in value.items():
                walk(f"{prefix}/{k}", v)
        elif isinstance(value, (list, tuple)):
            for i, v in enumerate(value):
                walk(f"{prefix}/{i}", v)
        else:
            out[prefix] = np.asarray(value)

    walk("extra", extra)
    return out


def _assert_same(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for key in a:
        assert a[key].dtype == b[key].dtype and a[key].shape == b[key].shape, key
        np.testing.assert_array_equal(a[key], b[key], err_msg=key)


def _push_scene():
    env = gym.make("SuperDex/Push-v0")
    env.reset(seed=3)
    return env, env.unwrapped.worlds


@pytest.mark.parametrize("fused", [True, False])
def test_step_snapshot_holds_what_a_full_snapshot_holds_after_the_step(monkeypatch, fused):
    monkeypatch.setattr(fused_step, "FUSED_STEP", fused)
    env, worlds = _push_scene()
    scene = worlds.scene
    rng = np.random.default_rng(0)
    for k in range(30):
        worlds.robot.begin_action(rng.uniform(-1, 1, size=(1, 4)))
        worlds.robot.drive(1.0)
        shared, full = scene.step_snapshot(), scene.snapshot()
        scene.step(0.02)
        worlds.robot.end_action()
        _assert_same(_flat(shared), _flat(full))
        if k % 10 == 9:  # undo: the same bits as restoring the full copy
            after_shared = scene.capture_state_to_bytes()
            scene.restore_snapshot(shared, worlds=np.array([0]))
            undone = scene.capture_state_to_bytes()
            scene.restore_snapshot(full, worlds=np.array([0]))
            assert scene.capture_state_to_bytes() == undone
            assert undone != after_shared
            scene.step(0.02)
    env.close()


def _pair_scene(num_worlds, div_tol=None):
    scene = mochi.create_scene()
    scene.create_rigid_actor(name="ground", shape=mochi.create_plane_shape(), is_static=True)
    box = scene.create_rigid_actor(name="box", shape=mochi.create_box_mesh_shape([0.05, 0.05, 0.05]), density=1000.0,
                                   collider_type=mochi.ColliderType.BOX,
                                   world_from_local=mochi.TransformRT(translation=[0.0, 0.0, 0.05]))
    params = scene.get_solver_params()
    params.integration_method = mochi.IntegrationMethod.BDF2  # worlds with 1 and 2 history entries: two groups
    if div_tol is not None:
        params.non_linear_solver.abs_div_tol = div_tol
    scene.set_solver_params(params)
    scene.set_num_worlds(num_worlds)
    return scene, box


def test_step_snapshot_across_world_groups_and_a_divergence():
    scene, box = _pair_scene(3, div_tol=1e7)  # resting: ~1e6; thrown at 1000 km/s: m v / dt ~ 1e8 N
    for _ in range(3):
        scene.step(0.01)
    # world 1 restarts its history (one group of 1 entry beside one of 3); world 2's box is thrown at 1000 km/s
    scene.set_actor_poses([box], np.array([[[0.0, 0.0, 0.2]]]), np.array([[[0.0, 0.0, 0.0, 1.0]]]), worlds=[1])
    box.set_velocity([1e6, 0.0, 0.0], [0.0, 0.0, 0.0], world=2)
    shared, full = scene.step_snapshot(), scene.snapshot()
    with pytest.warns(RuntimeWarning, match="diverged"):
        scene.step(0.01)
    assert scene.get_world_status().tolist() == [mochi.ConvergenceStatus.CONVERGED.value] * 2 + [
        mochi.ConvergenceStatus.DIVERGED.value]
    _assert_same(_flat(shared), _flat(full))


def test_step_snapshot_is_a_full_copy_where_a_step_writes_in_place():
    scene, box = _pair_scene(1)
    scene.step(0.01)
    scene.set_actor_velocities([box], np.zeros((1, 1, 3)), np.array([[[0.0, 0.0, 3.0]]]))  # S filled by the step
    shared = scene.step_snapshot()
    assert shared[1].history[0].velocity_sym is not scene.current_kinematics().velocity_sym
    full = scene.snapshot()
    scene.step(0.01)
    _assert_same(_flat(shared), _flat(full))

    scene.register_pre_step_callback(lambda s, dt: None)
    assert scene.step_snapshot()[1].history[0].com_position is not scene.current_kinematics().com_position
