"""The worlds' compiled substep bookkeeping (envs/core/kernels.py) against the numpy it replaced."""

import numpy as np
import pytest

from superdex_gym.envs.core.kernels import guard_substep

STOPPED, DIVERGED = 2, 3


def _numpy_guard(status, ratio, lin, escape):
    speed = np.sqrt(np.maximum.reduce(np.einsum("wni,wni->wn", lin, lin), axis=1))
    undo = (ratio >= 1.0) | (speed > escape)
    diverged = status == DIVERGED
    return (status == STOPPED).astype(np.int64), diverged.astype(np.int64), undo, diverged | undo


@pytest.mark.parametrize("bodies", [1, 4])
def test_guard_substep_matches_numpy(bodies):
    rng = np.random.default_rng(3)
    w = 400
    status = rng.integers(1, 4, w).astype(np.int64)
    ratio = rng.uniform(0.0, 1.5, w)
    ratio[::37] = np.nan
    ratio[5] = 1.0  # the boundary: >= 1 undoes
    lin = rng.normal(0.0, 2.0, (w, bodies, 3))
    lin[::53, 0, 1] = np.nan
    escape = 3.0
    lin[7] = 0.0
    lin[7, 0, 2] = escape  # exactly the escape speed: not faster
    out = [np.empty(w, np.int64), np.empty(w, np.int64), np.empty(w, bool), np.empty(w, bool)]
    any_undo = guard_substep(status, ratio, lin, escape, STOPPED, DIVERGED, *out)
    expected = _numpy_guard(status, ratio, lin, escape)
    for got, want in zip(out, expected):
        np.testing.assert_array_equal(got, want)
    assert any_undo == bool(expected[2].any())
    assert expected[2].any() and not expected[2].all()  # the case exercises both verdicts


def test_guard_substep_without_dynamic_bodies_undoes_on_the_ratio_only():
    status = np.array([1, 3], dtype=np.int64)
    ratio = np.array([0.2, 1.2])
    out = [np.empty(2, np.int64), np.empty(2, np.int64), np.empty(2, bool), np.empty(2, bool)]
    assert guard_substep(status, ratio, np.zeros((2, 0, 3)), 1.0, STOPPED, DIVERGED, *out)
    np.testing.assert_array_equal(out[2], [False, True])
    np.testing.assert_array_equal(out[3], [False, True])
    np.testing.assert_array_equal(out[1], [0, 1])


# --- the compiled observation (RobotTaskWorlds._compiled_obs) against the robot's and task's numpy parts -------------

import gymnasium as gym  # noqa: E402

import superdex_gym  # noqa: E402,F401  (registers the envs)
from superdex_gym.envs import ENV_IDS, ENVS  # noqa: E402
from superdex_gym.envs.core.env import make_worlds  # noqa: E402
from superdex_gym.envs.tasks.push import PushTask  # noqa: E402

# the floating gripper's ids: the compiled observation reads two finger bodies (the arm's parts stay numpy)
SPARSE_IDS = [env_id for env_id in ENV_IDS if "Dense" not in env_id and ENVS[env_id].robot.startswith("floating")]


def _same_bits(a: dict, b: dict):
    assert a.keys() == b.keys()
    for key in a:
        assert a[key].dtype == b[key].dtype == np.float32
        np.testing.assert_array_equal(a[key].view(np.uint32), b[key].view(np.uint32), err_msg=key)


@pytest.mark.parametrize("env_id", SPARSE_IDS)
def test_compiled_observation_has_the_numpy_parts_bits(env_id):
    env = gym.make(env_id)
    worlds = env.unwrapped.worlds
    assert worlds._compiled_obs is not None  # every registered task's parts are the standard ones
    env.reset(seed=5)
    rng = np.random.default_rng(5)
    for _ in range(60):
        _, _, terminated, truncated, _ = env.step(rng.uniform(-1, 1, env.action_space.shape).astype(np.float32))
        _same_bits(worlds.observations(), worlds.numpy_observations())
        if terminated or truncated:
            env.reset()


def test_compiled_observation_of_many_worlds_and_near_pi_rotations():
    """Four worlds at random poses and velocities; then one object of one world turned by nearly pi (log_so3's
    quaternion route, redone in numpy for that world): the same bits either way."""
    worlds = make_worlds(4, "floating_gripper:FloatingGripper", "stack:StackTask", {"cubes": 3})
    scene = worlds.scene
    rng = np.random.default_rng(11)
    cubes = worlds.task.cubes
    axis = rng.normal(size=(4, 3, 3))
    axis /= np.linalg.norm(axis, axis=-1, keepdims=True)
    angle = rng.uniform(0, 3.0, (4, 3, 1))
    quat = np.concatenate([np.sin(angle / 2) * axis, np.cos(angle / 2)], axis=-1)
    scene.set_actor_poses(cubes, rng.uniform(-0.3, 0.3, (4, 3, 3)), quat)
    scene.set_actor_velocities(cubes, rng.normal(0, 3.0, (4, 3, 3)), rng.normal(0, 80.0, (4, 3, 3)))
    _same_bits(worlds.observations(), worlds.numpy_observations())
    quat[2, 1] = [np.sin((np.pi - 1e-4) / 2), 0.0, 0.0, np.cos((np.pi - 1e-4) / 2)]
    scene.set_actor_poses(cubes, rng.uniform(-0.3, 0.3, (4, 3, 3)), quat)
    assert np.linalg.norm(worlds.numpy_observations()["observation"][2, 31:34]) > np.pi - 2e-3  # cube1 rotation
    _same_bits(worlds.observations(), worlds.numpy_observations())


class _OwnObservation(PushTask):
    def observation(self, scene, robot):
        parts = super().observation(scene, robot)
        parts["cube"] = parts["cube"] + 1.0
        return parts


def test_a_task_redefining_observation_gets_its_own_parts():
    base = make_worlds(1, "floating_gripper:FloatingGripper", "push:PushTask", {})
    robot = type(base.robot)(base.robot.config)
    worlds = type(base)(1, base.config, robot, _OwnObservation(base.task.config, robot))
    assert worlds._compiled_obs is None
    obs = worlds.observations()
    assert np.all(obs["achieved_goal"] > base.observations()["achieved_goal"] + 0.5)


@pytest.mark.parametrize("task, kwargs", [("push:PushTask", {}), ("pick_and_place:PickAndPlaceTask", {}),
                                          ("push:PushTask", {"block_gripper": False})])
def test_compiled_action_plan_has_the_numpy_bits(task, kwargs):
    """`FloatingGripper.begin_action` with the substeps' fractions (one kernel) against its numpy code: the end
    commands and every substep's body targets, bit for bit, over random states, commands and actions (past +-1)."""
    worlds = make_worlds(8, "floating_gripper:FloatingGripper", task, kwargs)
    robot, scene = worlds.robot, worlds.scene
    rng = np.random.default_rng(2)
    fractions = (0.25, 0.5, 0.75, 1.0)
    for _ in range(5):
        scene.set_actor_poses(robot.actors, rng.uniform(-0.3, 0.3, (8, 3, 3)), rng.normal(size=(8, 3, 4)))
        robot._target = rng.uniform(-0.3, 0.3, (8, 3))
        robot._opening = rng.uniform(0.0, 0.08, 8)
        actions = rng.uniform(-1.5, 1.5, (8, 4))
        robot.begin_action(actions, fractions)
        compiled = robot._start, robot._end, robot._planned
        robot._max_travel_m = 1e9  # finite: the numpy code (the cap is far, so the same motion)
        robot.begin_action(actions, fractions)
        robot._max_travel_m = np.inf
        numpy_ = robot._start, robot._end, robot._planned
        for got, want in zip(compiled[:2], numpy_[:2]):
            for g, w in zip(got, want):
                np.testing.assert_array_equal(g, w)
        assert compiled[2].keys() == numpy_[2].keys()
        for f in fractions:
            np.testing.assert_array_equal(compiled[2][f], numpy_[2][f])
