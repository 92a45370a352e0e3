"""The staged PickAndPlace reward PPO trains on (training/rewards.py, ``pick_and_place_staged``): each stage's terms
on hand-made states, the stages' rewards increasing, the bounds, the wrapper scoring an ended episode on its
terminal observation, and bad constants refused by name."""

import numpy as np
import pytest
from helpers import staged_reward_episode_end

pytest.importorskip("stable_baselines3")

from superdex_gym.training import train as train_mod  # noqa: E402
from superdex_gym.training.rewards import PickAndPlaceStagedReward, pick_and_place_staged_reward  # noqa: E402

CUBE = np.array([0.1, 0.05, 0.02])  # resting on the table (top at z = 0): centre 2 cm up
GOAL = np.array([-0.1, 0.05, 0.22])  # 0.2 m from the cube along -x, 0.2 m up


def fingers_for(gap):
    """Finger offsets (2,) from the grip axis for a gap between their inner faces (6 mm half thickness)."""
    half = 0.5 * gap + 0.006
    return [half, -half]


def terms(grip, cube, gap, goal=GOAL, success=False, **params):
    t = pick_and_place_staged_reward(np.atleast_2d(grip), np.atleast_2d(cube), np.atleast_2d(fingers_for(gap)),
                                     np.atleast_2d(goal), [success], **params)
    return {k: float(v[0]) for k, v in t.items()}


def test_each_stage_term_on_hand_made_states():
    pose = CUBE - [0, 0, 0.01]  # the grasp pose: the grip point 1 cm below the cube's centre
    carry = 1 - np.tanh(5 * np.linalg.norm(GOAL - CUBE))
    # reach: 20 cm above the pose, fingers open; nothing else counts yet
    far = terms(pose + [0, 0, 0.2], CUBE, 0.08)
    assert far["reached"] == 0 and far["grasped"] == 0
    assert far["reward"] == pytest.approx((1 - np.tanh(5 * 0.2)) / 5)
    # at the pose, open (gap 8 cm, the maximum): reach is full, close is 0
    at = terms(pose, CUBE, 0.08)
    assert (at["reach"], at["reached"], at["close"], at["grasped"]) == (1.0, 1.0, 0.0, 0.0)
    assert at["reward"] == pytest.approx(1 / 5)
    # half way closed (gap 6 cm): close 0.5, counted because the grip is at the pose
    half = terms(pose, CUBE, 0.06)
    assert half["close"] == pytest.approx(0.5) and half["reward"] == pytest.approx(1.5 / 5)
    # closed on the cube (gap = its 4 cm width): held; on the table, lift 0, the carry term counts
    held = terms(pose, CUBE, 0.04)
    assert held["close"] == pytest.approx(1.0) and (held["grasped"], held["lift"]) == (1.0, 0.0)
    assert held["carry"] == pytest.approx(carry) and held["reward"] == pytest.approx((3 + carry) / 5)
    # lifted 1.5 cm: half the lift term; 10 cm: all of it (lift_m 3 cm), carry nearer the goal
    up = CUBE + [0, 0, 0.015]
    assert terms(up - [0, 0, 0.01], up, 0.04)["lift"] == pytest.approx(0.5)
    high = CUBE + [-0.1, 0, 0.1]
    t = terms(high - [0, 0, 0.01], high, 0.04)
    d = np.linalg.norm(GOAL - high)
    assert t["lift"] == 1.0 and t["reward"] == pytest.approx((4 + 1 - np.tanh(5 * d)) / 5)
    # fingers closed beside the cube (2 cm off the pose): neither close nor hold pays
    beside = terms(pose + [0, 0.02, 0], CUBE, 0.0)
    assert beside["reached"] == 0 and beside["grasped"] == 0
    assert beside["reward"] == pytest.approx((1 - np.tanh(5 * 0.02)) / 5)
    # the fingers closed wider than the cube + 4 mm do not hold it
    assert terms(pose, CUBE, 0.045)["grasped"] == 0
    # success is the maximum, whatever the gripper does
    assert terms(pose + [0.3, 0.3, 0.3], GOAL, 0.08, success=True)["reward"] == 1.0
    # success_bonus: the stages share what is left, success still pays 1
    assert terms(pose, CUBE, 0.04, success_bonus=0.4)["reward"] == pytest.approx(0.6 * (3 + carry) / 5)
    assert terms(pose, GOAL, 0.04, success=True, success_bonus=0.4)["reward"] == 1.0


def test_stages_rise_and_rewards_stay_in_bounds():
    pose = CUBE - [0, 0, 0.01]
    high = CUBE + [-0.1, 0, 0.1]
    stages = [terms(pose + [0, 0, 0.2], CUBE, 0.08), terms(pose + [0, 0, 0.05], CUBE, 0.08),
              terms(pose, CUBE, 0.08), terms(pose, CUBE, 0.06), terms(pose, CUBE, 0.04),
              terms(high - [0, 0, 0.01], high, 0.04), terms(GOAL - [0.04, 0, 0.01], GOAL - [0.04, 0, 0], 0.04),
              terms(GOAL - [0, 0, 0.01], GOAL, 0.04, success=True)]
    rewards = [s["reward"] for s in stages]
    assert all(a < b for a, b in zip(rewards, rewards[1:])), rewards
    # over random states: every reward in [0, 1], and any held state pays more than any state not holding (the
    # most without holding is reach + close = 2 / 5; holding needs the grip within 1.5 cm and the gap <= 4.4 cm)
    rng = np.random.default_rng(0)
    n = 4000
    cube = rng.uniform([-0.2, -0.2, 0.0], [0.2, 0.2, 0.3], (n, 3))
    grip = cube - [0, 0, 0.01] + rng.normal(0, 0.01, (n, 3))
    gap = rng.uniform(0.0, 0.08, n)
    t = pick_and_place_staged_reward(grip, cube, np.stack([gap / 2 + 0.006, -gap / 2 - 0.006], 1),
                                     rng.uniform(-0.3, 0.3, (n, 3)), np.zeros(n, bool))
    r, held = t["reward"], t["grasped"] == 1
    assert np.all((r >= 0) & (r <= 1)) and 0 < held.sum() < n
    assert r[~held].max() <= 2 / 5 < (1 - np.tanh(5 * 0.015) + 0.9 + 1) / 5 <= r[held].min()


def test_wrapper_scores_an_ended_episode_on_its_terminal_observation():
    rewards, infos = staged_reward_episode_end(PickAndPlaceStagedReward, "SuperDex/PickAndPlace-v0")
    for i, info in enumerate(infos):
        last = info["terminal_observation"]
        o = last["observation"][None]
        want = pick_and_place_staged_reward(o[:, 0:3], o[:, 3:6], o[:, 9:11], last["desired_goal"][None],
                                            [info["is_success"]])
        assert rewards[i] == np.float32(want["reward"][0])
        for name in ("reach", "close", "grasped", "lift", "carry"):
            assert info[f"reward_{name}"] == want[name][0]


def test_bad_constants_and_envs_are_refused_by_name():
    cfg = train_mod.resolve("pick_and_place_ppo")
    assert cfg["algo"] == "ppo" and cfg["train"]["reward"] == "pick_and_place_staged"
    with pytest.raises(ValueError, match="k_rech"):
        train_mod.resolve("pick_and_place_ppo", overrides=["reward.k_rech=3"])
    with pytest.raises(ValueError, match=r"\['lift_m'\] must be >= 0"):
        train_mod.resolve("pick_and_place_ppo", overrides=["reward.lift_m=-0.01"])
    with pytest.raises(ValueError, match="must be >= 0"):
        train_mod.resolve("pick_and_place_ppo", overrides=["reward.k_carry=nan"])
    with pytest.raises(ValueError, match="success_bonus"):
        train_mod.resolve("pick_and_place_ppo", overrides=["reward.success_bonus=1.0"])
    with pytest.raises(ValueError, match="max_opening_m"):
        train_mod.resolve("pick_and_place_ppo", overrides=["reward.max_opening_m=0.03"])
    with pytest.raises(ValueError, match="SuperDex/PickAndPlace-v0"):  # Push's ids have no fingers to close
        train_mod.resolve("pick_and_place_ppo", overrides=['env_id="SuperDex/Push-v0"'])
    with pytest.raises(ValueError, match="pick_and_place_staged"):
        PickAndPlaceStagedReward.check_params({"k_rech": 1.0})


def test_the_config_trains_and_evaluates_on_pick_and_place(tmp_path):
    """pick_and_place_ppo.toml through train(), tiny: the shaped reward on the env's worlds, evaluated on the env's
    own sparse reward."""
    tiny = ["model.n_steps=32", "model.batch_size=64", "model.n_epochs=2", "model.policy_kwargs.net_arch=[32, 32]"]
    out = tmp_path / "run"
    result = train_mod.train("pick_and_place_ppo", output=out, total_timesteps=256, num_envs=8, eval_freq=0,
                             eval_episodes=2, overrides=tiny, verbose=0)
    assert result.metrics["timesteps"] == 256 and result.metrics["env_id"] == "SuperDex/PickAndPlace-v0"
    assert len(result.curve) == 1 and -50.0 <= result.curve[0]["mean_return"] <= 0.0  # the env's -1/0 reward
    wrappers, env = [], result.model.get_env()
    while env is not None:  # VecNormalize -> VecMonitor -> the staged reward -> the batched env
        wrappers.append(type(env).__name__)
        env = getattr(env, "venv", None)
    assert wrappers[:4] == ["VecNormalize", "VecMonitor", "PickAndPlaceStagedReward", "SuperDexSB3VecEnv"]
