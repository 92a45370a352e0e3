"""The staged Stack reward PPO trains on (training/rewards.py, ``stack_staged``): the tower counted from the bottom,
the cube worked on and its PickAndPlace stages toward its own target, the bounds, the wrapper reading Stack2's and
Stack3's layouts, and bad constants refused by name."""

import numpy as np
import pytest
from helpers import staged_reward_episode_end

pytest.importorskip("stable_baselines3")

from superdex_gym.training import train as train_mod  # noqa: E402
from superdex_gym.training.rewards import (StackStagedReward, pick_and_place_staged_reward,  # noqa: E402
                                           stack_staged_reward)

TARGETS = np.array([[0.05, -0.05, 0.02], [0.05, -0.05, 0.06]])  # the tower: bottom on the table, top on it
CUBES = np.array([[-0.1, 0.1, 0.02], [0.15, 0.1, 0.02]])  # both resting elsewhere


def fingers_for(gap):
    half = 0.5 * gap + 0.006
    return [half, -half]


def terms(grip, cubes, gap=0.08, targets=TARGETS, success=False, **params):
    t = stack_staged_reward(np.atleast_2d(grip), np.atleast_2d(fingers_for(gap)), np.asarray(cubes)[None],
                            np.asarray(targets)[None], [success], **params)
    return {k: float(v[0]) for k, v in t.items()}


def pnp(grip, cube, target, gap):
    return float(pick_and_place_staged_reward(np.atleast_2d(grip), np.atleast_2d(cube),
                                              np.atleast_2d(fingers_for(gap)), np.atleast_2d(target),
                                              [False])["reward"][0])


def test_the_tower_counts_from_the_bottom_and_the_next_cube_is_worked_on():
    grip = CUBES[0] - [0, 0, 0.01]
    start = terms(grip, CUBES, gap=0.04)  # holding the bottom cube where it spawned
    assert (start["placed"], start["working"], start["grasped"]) == (0.0, 0.0, 1.0)
    assert start["reward"] == pytest.approx(pnp(grip, CUBES[0], TARGETS[0], 0.04) / 2 * 0.7)
    # the bottom cube on its target (1.5 cm off: within placed_tol_m 2 cm): one placed, the top cube worked on
    bottom = np.array([TARGETS[0] + [0.015, 0, 0], CUBES[1]])
    grip = bottom[0] + [0, 0, 0.1]
    one = terms(grip, bottom)
    assert (one["placed"], one["working"]) == (1.0, 1.0)
    assert one["reward"] == pytest.approx((1 + pnp(grip, CUBES[1], TARGETS[1], 0.08)) / 2 * 0.7)
    # 2.5 cm off is not placed (the task's 5 cm success radius would pass it)
    assert terms(grip, [TARGETS[0] + [0.025, 0, 0], CUBES[1]])["placed"] == 0.0
    # the top cube on target but the bottom one not: nothing counts (the tower is counted from the bottom)
    assert terms(grip, [CUBES[0], TARGETS[1]])["placed"] == 0.0
    # both placed: the count alone, then success pays 1
    done = terms(TARGETS[1] + [0, 0, 0.1], TARGETS)
    assert (done["placed"], done["reward"]) == (2.0, pytest.approx(0.7))
    assert terms(TARGETS[1] + [0, 0, 0.1], TARGETS, success=True)["reward"] == 1.0
    assert terms(grip, bottom, success_bonus=0.0)["reward"] == pytest.approx(one["reward"] / 0.7)


def test_rewards_rise_with_the_tower_and_stay_in_bounds():
    rng = np.random.default_rng(1)
    n = 3000
    cubes = rng.uniform([-0.15, -0.15, 0.02], [0.15, 0.15, 0.1], (n, 3, 3))
    targets = np.tile(np.array([[0.0, 0.0, 0.02], [0.0, 0.0, 0.06], [0.0, 0.0, 0.10]]), (n, 1, 1))
    k = rng.integers(0, 4, n)  # the first k cubes placed (within 1 cm)
    for i in range(3):
        cubes[k > i, i] = targets[k > i, i] + rng.uniform(-0.005, 0.005, ((k > i).sum(), 3))
    gap = rng.uniform(0, 0.08, n)
    grip = rng.uniform(-0.2, 0.2, (n, 3))
    t = stack_staged_reward(grip, np.stack([gap / 2 + 0.006, -gap / 2 - 0.006], 1), cubes, targets,
                            np.zeros(n, bool))
    assert np.all(t["placed"] >= k)  # a random cube may land within 2 cm of its target as well
    r = t["reward"]
    assert np.all((r >= 0) & (r <= 0.7))
    # any state with more cubes placed pays more than any with fewer
    for m in range(3):
        assert r[t["placed"] == m].max() < r[t["placed"] == m + 1].min()


@pytest.mark.parametrize("env_id, cubes", [("SuperDex/Stack2-v0", 2), ("SuperDex/Stack3-v0", 3)])
def test_wrapper_reads_each_stack_layout(env_id, cubes):
    rewards, infos = staged_reward_episode_end(StackStagedReward, env_id, seed=3)
    assert infos[0]["terminal_observation"]["observation"].shape == (10 + 15 * cubes,)
    for i, info in enumerate(infos):
        last = info["terminal_observation"]
        o = last["observation"]
        # the cube positions the wrapper reads are the achieved goal (Stack's cubes, bottom first)
        positions = np.stack([o[10 + 15 * j:13 + 15 * j] for j in range(cubes)])
        np.testing.assert_array_equal(positions.reshape(-1), last["achieved_goal"])
        want = stack_staged_reward(o[None, 0:3], o[None, 3:5], positions[None],
                                   last["desired_goal"].reshape(1, cubes, 3), [info["is_success"]])
        assert rewards[i] == np.float32(want["reward"][0])
        assert info["reward_placed"] == want["placed"][0]


def test_bad_constants_and_envs_are_refused_by_name():
    cfg = train_mod.resolve("stack2_ppo")
    assert cfg["algo"] == "ppo" and cfg["train"]["reward"] == "stack_staged"
    with pytest.raises(ValueError, match="placed_tol"):
        train_mod.resolve("stack2_ppo", overrides=["reward.placed_tol=0.01"])
    with pytest.raises(ValueError, match="success_bonus"):
        train_mod.resolve("stack2_ppo", overrides=["reward.success_bonus=1.0"])
    with pytest.raises(ValueError, match="Stack2-v0"):
        train_mod.resolve("stack2_ppo", overrides=['env_id="SuperDex/Push-v0"'])
    train_mod.resolve("stack2_ppo", overrides=['env_id="SuperDex/Stack3-v0"'])  # the same reward reads Stack3
