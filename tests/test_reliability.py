"""Issue 16: divergence is reported and contained, tunnelling is measured and undone, the launch sequences the issue
found stay in the arena (docs/reliability.md)."""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest

import superdex_gym  # noqa: F401  (registers the ids)
import superdex_gym.sim as mochi
from superdex_gym.envs import ENV_IDS
from superdex_gym.soak import StaticGeometry

PHYSICS_KEYS = {"solver_status": int, "stopped_substeps": int, "diverged_substeps": int, "refined_substeps": int,
                "tunnelling_ratio": float, "physics_diverged": bool}

# The two sequences of issue 16: (make kwargs, reset object_pose, actions).
LAUNCHES = {
    "push_into_wall": ({}, [-0.1415523868762882, -0.10432139703032486, 0.02], [-np.ones(4)] * 4),
    "fingers_into_table": ({"block_gripper": False}, [-0.10828855628466094, -0.13826486722315856, 0.02],
                           [[-1, -1, -0.2, -1], [-1, -1, -0.0017386116087436676, 1],
                            [-1, 0.6935116648674011, 0.026108212769031525, -1]]),
}


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_physics_info_keys_in_every_env(env_id):
    env = gym.make(env_id)
    _, info = env.reset(seed=0)
    for key, kind in PHYSICS_KEYS.items():
        assert type(info[key]) is kind and not info[key], key  # nothing stepped yet: zero / False
    _, _, _, truncated, info = env.step(np.zeros(4))
    assert info["solver_status"] == mochi.ConvergenceStatus.CONVERGED.value
    assert info["stopped_substeps"] == info["diverged_substeps"] == 0 and not info["physics_diverged"]
    assert 0.0 <= info["tunnelling_ratio"] < 1.0 and truncated is False
    venv = gym.make_vec(env_id, num_envs=2)
    _, infos = venv.reset(seed=0)
    _, _, _, _, infos = venv.step(np.zeros((2, 4)))
    for key, kind in PHYSICS_KEYS.items():
        assert infos[key].shape == (2,) and infos[f"_{key}"].all()
        assert type(infos[key][0].item()) is kind


def _diverge_world(scene, world):
    """Make one world's solve diverge: a lowered divergence bound (1e3 N; ordinary Push residuals stay far below)
    and the cube teleported half into the table, whose penalty force (~3e4 N) exceeds it."""
    params = scene.get_solver_params()
    params.non_linear_solver.abs_div_tol = 1e3
    scene.set_solver_params(params)
    cube = scene.find_actor("cube")
    pos, quat = scene.get_actor_poses([cube])
    pos[world, 0, 2] = 0.0
    scene.set_actor_poses([cube], pos[[world]], quat[[world]], worlds=[world])


def test_a_diverging_world_is_truncated_with_a_flag_and_the_others_go_on():
    venv = gym.make_vec("SuperDex/Push-v0", num_envs=2)
    venv.reset(seed=0)
    twin = gym.make_vec("SuperDex/Push-v0", num_envs=2)
    twin.reset(seed=0)
    scene = venv.worlds.scene
    _diverge_world(scene, 1)
    params = twin.worlds.scene.get_solver_params()
    params.non_linear_solver.abs_div_tol = 1e3
    twin.worlds.scene.set_solver_params(params)
    a = np.array([[0.5, 0.2, 0.0, 0.0], [0.5, 0.2, 0.0, 0.0]])
    obs, _, _, truncated, infos = venv.step(a)
    ref = twin.step(a)
    assert infos["physics_diverged"].tolist() == [False, True]
    assert infos["diverged_substeps"][1] >= 1 and infos["solver_status"][1] == mochi.ConvergenceStatus.DIVERGED.value
    assert truncated.tolist() == [False, True]
    # world 0 did not notice: bit for bit the twin's world 0
    for key in obs:
        assert obs[key][0].tobytes() == ref[0][key][0].tobytes()
    # the next step starts world 1's new episode (NEXT_STEP autoreset), with the flags cleared
    _, reward, _, truncated, infos = venv.step(a)
    assert reward[1] == 0.0 and not truncated[1] and not infos["physics_diverged"][1]


def test_engine_warns_when_a_world_diverges():
    venv = gym.make_vec("SuperDex/Push-v0", num_envs=2)
    venv.reset(seed=0)
    scene = venv.worlds.scene
    assert scene.get_step_warnings() is False  # the env reports it in info instead of warning
    scene.set_step_warnings(True)  # the engine's default
    _diverge_world(scene, 1)
    with pytest.warns(RuntimeWarning, match=r"diverged in world\(s\) \[1\]"):
        scene.step(0.02)
    assert scene.get_world_status().tolist() == [1, 3]
    scene.set_step_warnings(False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _diverge_world(scene, 1)
        scene.step(0.02)  # silent, and the status says it
        assert scene.get_world_status().tolist() == [1, 3]
        _diverge_world(scene, 1)
        _, _, _, truncated, _ = venv.step(np.zeros((2, 4)))
    assert truncated.tolist() == [False, True]
    with pytest.raises(TypeError, match="enabled"):
        scene.set_step_warnings("no")
    assert scene.get_step_warnings() is False


def test_single_env_truncates_a_diverging_world():
    env = gym.make("SuperDex/Push-v0")
    env.reset(seed=0)
    _diverge_world(env.unwrapped.worlds.scene, 0)
    _, _, terminated, truncated, info = env.step(np.zeros(4))
    assert truncated is True and terminated is False and info["physics_diverged"] is True


@pytest.mark.parametrize("name", LAUNCHES)
def test_the_issue_launch_sequences_stay_in_the_arena(name):
    kwargs, pose, actions = LAUNCHES[name]
    env = gym.make("SuperDex/Push-v0", **kwargs)
    obs, _ = env.reset(seed=0, options={"object_pose": pose})
    scene, cube = env.unwrapped.worlds.scene, env.unwrapped.worlds.task.cube
    statics = StaticGeometry(scene)
    for a in actions:
        obs, _, _, _, info = env.step(np.asarray(a, dtype=float))
        assert env.observation_space.contains(obs)
        x = scene.get_actor_translations([cube])[0, 0]
        assert np.all(np.abs(x[:2]) < 1.0) and x[2] > -0.4
        assert statics.depths(x[None, None])[0, 0] == 0.0  # the centre in no static collider (the soak's test)
        assert info["tunnelling_ratio"] < 1.0 and not info["physics_diverged"]
        # Newton's best iterate on stopping: the last iterates launched the cube at 29.4 and 28.3 m/s; the
        # lowest-energy ones leave 0.26 and 2.96 m/s (a squeeze between the fingers)
        assert np.linalg.norm(scene.get_actor_velocities([cube])[0][0, 0]) < 3.0


def _box_by_a_thin_wall(start, velocity):
    """A 1 cm static wall (half thickness 5 mm, normal x) and a 10 cm box without a collider (so it flies through
    whatever the ratio says) at ``start`` moving at ``velocity``, no gravity."""
    scene = mochi.create_scene("wall")
    scene.set_gravity([0, 0, 0])
    scene.create_rigid_actor(name="wall", shape=mochi.create_box_mesh_shape([0.005, 0.5, 0.5]), is_static=True)
    scene.create_rigid_actor(name="box", shape=mochi.create_box_mesh_shape([0.05] * 3),
                             collider_type=mochi.ColliderType.NONE,
                             world_from_local=mochi.TransformRT(translation=start), linear_velocity=velocity)
    return scene


def test_engine_reports_and_warns_the_tunnelling_ratio():
    """The box's front face 0.5 mm before the wall at 5 m/s into it: one step of dt carries it 5 dt, so its front
    samples end 5 dt - 0.5 mm past the wall's face, over the 5 mm half thickness: 9.9 at dt 0.01 (past the middle:
    warned) and 0.1 at dt 0.0002 (silent)."""
    for dt, expected in ((0.01, 9.9), (0.0002, 0.1)):
        scene = _box_by_a_thin_wall([-0.0555, 0.0, 0.0], [5.0, 0.0, 0.0])
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            scene.step(dt)
        ratio = scene.get_solver_stats().max_tunnelling_ratio
        front = scene.get_actor_translations([scene.find_actor("box")])[0, 0, 0] + 0.05
        assert ratio == pytest.approx((front + 0.005) / 0.005, rel=1e-9)  # the definition, on the step's result
        assert ratio == pytest.approx(expected, rel=2e-3)  # a Newton step within its tolerance of v dt
        np.testing.assert_allclose(scene.get_tunnelling_ratio(), [ratio], rtol=0)
        tunnel_warnings = [w for w in caught if "static collider 'wall'" in str(w.message)]
        assert len(tunnel_warnings) == (1 if expected >= 1 else 0)


def test_travel_along_a_thin_wall_does_not_count():
    """The same box 0.5 mm beside the wall's face moving along it at 5 m/s (0.05 m per step, ten half thicknesses)
    never meets the wall: ratio 0 (the travel-based bound said 10); moving at most 1 mm into it as well: at most
    0.2, however far it slides along."""
    scene = _box_by_a_thin_wall([-0.0555, 0.0, 0.0], [0.0, 5.0, -1.0])
    scene.step(0.01)
    assert scene.get_tunnelling_ratio()[0] == 0.0
    scene = _box_by_a_thin_wall([-0.0555, 0.0, 0.0], [0.1, 5.0, -1.0])
    scene.step(0.01)
    assert 0.0 < scene.get_tunnelling_ratio()[0] < 0.2  # at most 1 mm of 5 mm: the travel along x only


def test_planes_do_not_limit_the_tunnelling_ratio():
    """A half-space has no far side: a scene with only a ground plane reports ratio 0 at any speed."""
    scene = mochi.create_scene("plane")
    scene.create_rigid_actor(name="floor", shape=mochi.create_plane_shape(normal=[0, 0, 1]), is_static=True)
    scene.create_rigid_actor(name="box", shape=mochi.create_box_mesh_shape([0.05] * 3),
                             world_from_local=mochi.TransformRT(translation=[0, 0, 1.0]), linear_velocity=[0, 0, -50])
    scene.step(0.01)
    assert scene.get_solver_stats().max_tunnelling_ratio == 0.0
