"""Reset poses and goals that cannot happen are refused, naming what they would collide with or why no policy could
reach them, and leave the episode as it was; the poses and goals the tasks sample themselves always pass."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import superdex_gym  # noqa: F401  (registers the ids)

HALF = 0.02

BAD_RESETS = [
    # (id, options, message fragment)
    ("SuperDex/PickAndPlace-v0", {"object_pose": [0.6, 0.0, -0.4 + HALF - 0.019]}, "into the floor"),
    ("SuperDex/Stack2-v0", {"object_poses": [[0.6, 0.0, -0.399], [0.1, 0.1, HALF]]}, "cube 0 into the floor"),
    ("SuperDex/PickAndPlace-v0", {"object_pose": [0.995, 0.0, -0.38]}, "inside the arena wall 0"),
    ("SuperDex/Stack3-v0", {"object_poses": [[0.1, 0.1, HALF], [0.0, -0.99, -0.38], [-0.1, 0.1, HALF]]},
     "cube 1 inside the arena wall 3"),
    ("SuperDex/Push-v0", {"object_pose": [0.1, 0.1, 5.0]}, "above 1.520 m: falling from there"),
    ("SuperDex/Throw-v0", {"object_pose": [0.1, 0.1, 1.5]}, "above 1.170 m"),
    ("SuperDex/PickAndPlace-v0", {"goal": [0.1, 0.1, -0.05]}, "cannot be reached"),
    ("SuperDex/PickAndPlace-v0", {"goal": [0.1, 0.1, 2.0]}, "cannot be reached"),
    ("SuperDex/PickAndPlace-v0", {"goal": [0.6, 0.1, -0.38]}, "cannot be reached"),
    ("SuperDex/Push-v0", {"goal": [0.1, 0.1, 0.2]}, "cannot be reached"),
    ("SuperDex/Stack2-v0", {"goal": [0.1, 0.1, HALF, 0.1, 0.1, HALF]}, "targets 0 and 1 closer than a cube"),
    ("SuperDex/Stack2-v0", {"goal": [0.1, 0.1, -0.1, 0.1, 0.1, -0.06]}, "target 0 .* cannot be reached"),
    ("SuperDex/Stack3-v0", {"goal": [0.0, 0.0, HALF, 0.0, 0.0, 3 * HALF, 0.01, 0.0, 4 * HALF]},
     "targets 1 and 2 closer"),
    ("SuperDex/Throw-v0", {"object_pose": "abc"}, "object_pose'\\] must be real numbers"),
    ("SuperDex/Throw-v0", {"goal": [0.2, 0.0, -0.73]}, "over the table or within the gripper's reach"),
]


@pytest.mark.parametrize("env_id, options, fragment", BAD_RESETS,
                         ids=[f"{c[0].split('/')[1]}-{i}" for i, c in enumerate(BAD_RESETS)])
def test_impossible_reset_is_refused_and_changes_nothing(env_id, options, fragment):
    env, twin = gym.make(env_id), gym.make(env_id)
    for e in (env, twin):
        e.reset(seed=2)
        e.step(np.array([0.3, 0.0, -0.2, 0.5]))
    with pytest.raises((ValueError, TypeError), match=fragment):
        env.reset(options=options)
    action = np.array([-0.1, 0.4, 0.0, -1.0])
    assert env.step(action)[0]["observation"].tobytes() == twin.step(action)[0]["observation"].tobytes()
    assert env.reset()[0]["desired_goal"].tobytes() == twin.reset()[0]["desired_goal"].tobytes()


GOOD_RESETS = [
    ("SuperDex/PickAndPlace-v0", {"object_pose": [0.6, 0.0, -0.4 + HALF]}),  # on the floor beside the table
    ("SuperDex/PickAndPlace-v0", {"object_pose": [0.1, 0.1, 1.5]}),  # dropped from below the escape height
    ("SuperDex/PickAndPlace-v0", {"goal": [0.3, -0.3, 0.32]}),  # the workspace's corner, held
    ("SuperDex/Stack3-v0", {"goal": [0.0, 0.0, HALF, 0.0, 0.0, 3 * HALF, 0.0, 0.0, 5 * HALF]}),
]


@pytest.mark.parametrize("env_id, options", GOOD_RESETS)
def test_possible_resets_pass(env_id, options):
    obs, _ = gym.make(env_id).reset(seed=0, options=options)
    if "goal" in options:
        np.testing.assert_allclose(obs["desired_goal"], options["goal"], atol=1e-7)


@pytest.mark.parametrize("env_id", ["SuperDex/Push-v0", "SuperDex/PickAndPlace-v0", "SuperDex/Stack2-v0",
                                    "SuperDex/Stack3-v0", "SuperDex/Throw-v0"])
def test_every_sampled_goal_passes_the_goal_check(env_id):
    """The check and the sampler agree: 2 000 sampled episodes' goals (as float32 observations give them back) all
    pass, so a relabelled or replayed goal is never refused."""
    task = gym.make(env_id).unwrapped.worlds.task
    rng = np.random.default_rng(0)
    for _ in range(2000):
        goal, _ = task.sample_episode(rng)
        task.check_goal(goal.astype(np.float32).astype(np.float64))


def test_gripper_max_speed_is_bounded_where_the_escape_guard_holds():
    """Up to 3 m/s (a struck cube leaves at up to twice that, below the 6.1 m/s escape speed); 5 m/s swings tripped
    the guard (docs/environments.md)."""
    gym.make("SuperDex/PickAndPlace-v0", gripper_max_speed=3.0)
    for speed in (3.01, 5.0):
        with pytest.raises(ValueError,
                           match=r"gripper_max_speed must be a finite number in \(0, 3\].*twice the striker's speed"):
            gym.make("SuperDex/PickAndPlace-v0", gripper_max_speed=speed)


def test_swings_at_the_speed_bound_stay_below_the_escape_speed():
    """Bang-bang actions at 3 m/s on 16 Throw worlds for 100 steps (swings with and without a held cube): no
    escape truncation, and the fastest body stays under the 6.1 m/s guard."""
    from superdex_gym.soak import soak

    counts = soak("SuperDex/Throw-v0", {"gripper_max_speed": 3.0}, world_steps=1600, num_worlds=16, seed=1)
    assert counts["physics_diverged"] == 0 and counts["max_object_speed"] < 6.1, counts
