"""The staged Throw reward PPO trains on (training/rewards.py, ``throw_staged``): the aim term against the ballistic
closed form, each stage on hand-made states, a thrown or aimed cube keeping the grasp stages' credit, the bounds,
the wrapper scoring an ended episode on its terminal observation, and bad constants refused by name."""

import numpy as np
import pytest
from helpers import staged_reward_episode_end

pytest.importorskip("stable_baselines3")

from superdex_gym.training import train as train_mod  # noqa: E402
from superdex_gym.training.rewards import ThrowStagedReward, throw_staged_reward  # noqa: E402

BIN = np.array([0.8, 0.0, -0.73])  # the bin's target point: its floor centre at the cube's resting height
RIM = BIN[2] + 0.36  # the cube's centre when its bottom face passes the rim
CUBE = np.array([0.1, 0.05, 0.02])  # resting on the table (top at z = 0)
G = 9.8


def fingers_for(gap):
    half = 0.5 * gap + 0.006
    return [half, -half]


def terms(grip, cube, velocity=(0.0, 0.0, 0.0), gap=0.08, goal=BIN, success=False, **params):
    t = throw_staged_reward(np.atleast_2d(grip), np.atleast_2d(cube), np.atleast_2d(velocity),
                            np.atleast_2d(fingers_for(gap)), np.atleast_2d(goal), [success], **params)
    return {k: float(v[0]) for k, v in t.items()}


def discrete_landing(p, v, z, h=0.02):
    """Backward Euler free flight, stepped: where the cube first comes down through height z (linear between the
    two steps that bracket it; an independent check of the closed form the reward uses)."""
    p, v = np.array(p, float), np.array(v, float)
    while True:
        v_next = v + h * np.array([0.0, 0.0, -G])
        p_next = p + h * v_next
        if p_next[2] <= z:
            s = (p[2] - z) / (p[2] - p_next[2])
            return p + s * (p_next - p)
        p, v = p_next, v_next


def test_aim_reads_the_free_flight_crossing_of_the_rim():
    # a cube at rest on the table aims at its own position: straight down
    rest = terms(CUBE + [0, 0, 0.3], CUBE)
    assert rest["aim"] == pytest.approx(1 - np.tanh(2.0 * np.linalg.norm(CUBE[:2] - BIN[:2])))
    # a thrown cube: the crossing point of its discrete flight, from stepping the flight itself. The reward's
    # polynomial interpolates within a step (quadratic) where the stepped check interpolates linearly: they differ
    # by at most the flight's curvature over one step, h^2 g / 8 ~ 0.5 mm vertically, i.e. ~1 mm along the path.
    p, v = np.array([0.15, 0.0, 0.2]), np.array([1.6, 0.1, 1.2])
    landing = discrete_landing(p, v, RIM)
    got = terms(CUBE + [0, 0, 0.3], p, v)
    d = np.linalg.norm(landing[:2] - BIN[:2])
    assert got["aim"] == pytest.approx(1 - np.tanh(2.0 * d), abs=2.0 * 2e-3)
    # a throw into the bin's centre aims at 1; below the rim the cube's own position counts
    assert terms(CUBE, BIN + [0.0, 0.0, 0.3])["aim"] == pytest.approx(1.0)
    assert terms(CUBE, BIN + [0.05, 0.0, 0.0])["aim"] == pytest.approx(1 - np.tanh(2.0 * 0.05))


def test_each_stage_and_the_loose_cube():
    pose = CUBE - [0, 0, 0.01]
    aim = 1 - np.tanh(2.0 * np.linalg.norm(CUBE[:2] - BIN[:2]))
    # stage_share 0.4, success_bonus 0.3; the aim paid in proportion to grasped x lift, or in full when loose
    shaped = lambda stages, a=aim, credit=0.0: (0.4 * stages + 0.6 * a * credit) * 0.7  # noqa: E731
    far = terms(pose + [0, 0, 0.2], CUBE)
    assert far["reward"] == pytest.approx(shaped((1 - np.tanh(5 * 0.2)) / 4))
    at = terms(pose, CUBE)
    assert (at["reached"], at["close"], at["grasped"], at["loose"]) == (1.0, 0.0, 0.0, 0.0)
    assert at["reward"] == pytest.approx(shaped(1 / 4))
    held = terms(pose, CUBE, gap=0.04)  # held on the table: no aim yet
    assert (held["grasped"], held["lift"]) == (1.0, 0.0) and held["reward"] == pytest.approx(shaped(3 / 4))
    half = CUBE + [0, 0, 0.025]
    assert terms(half - [0, 0, 0.01], half, gap=0.04)["reward"] == pytest.approx(shaped(3.5 / 4, aim, 0.5))
    up = CUBE + [0, 0, 0.05]
    lifted = terms(up - [0, 0, 0.01], up, gap=0.04)
    assert lifted["lift"] == 1.0 and lifted["reward"] == pytest.approx(shaped(1.0, aim, 1.0))
    # let go 5 cm up, moving at 1 m/s: not held, but loose, so the stages count as done and only the aim moves
    flying = terms(up - [0.1, 0, 0.01], up + [0, 0, 0.001], velocity=(1.0, 0.0, 0.5))
    assert (flying["grasped"], flying["loose"]) == (0.0, 1.0)
    assert flying["reward"] == pytest.approx(shaped(1.0, flying["aim"], 1.0)) and flying["aim"] > lifted["aim"]
    # a cube batted along the table toward the bin, short of it (its flight comes down 0.46 m from the centre),
    # pays no aim: it is neither held nor loose
    batted = terms(pose, CUBE + [0.1, 0, 0], velocity=(0.5, 0.0, 0.0))
    assert batted["aim"] > aim and batted["reward"] == pytest.approx(shaped(batted["reach"] / 4))
    # a cube batted along the table is not loose, nor one knocked off it away from the bin; one coming down
    # within aimed_m (15 cm) of the bin's centre is, at any height
    assert terms(pose + [0.1, 0, 0], CUBE, velocity=(2.0, 0, 0))["loose"] == 0.0
    assert terms(pose, [0.4, 0.3, -0.5])["loose"] == 0.0
    aimed = terms(pose, BIN + [0.1, 0.0, 0.5], velocity=(0.0, 0.0, -1.0))
    assert aimed["loose"] == 1.0 and aimed["aim"] == pytest.approx(1 - np.tanh(2.0 * 0.1))
    # success is the maximum
    assert terms(pose, BIN, success=True)["reward"] == 1.0


def test_rewards_stay_in_bounds_and_letting_go_of_an_aimed_cube_never_pays_less():
    rng = np.random.default_rng(0)
    n = 4000
    cube = rng.uniform([-0.3, -0.3, -0.7], [1.0, 0.3, 0.4], (n, 3))
    grip = cube - [0, 0, 0.01] + rng.normal(0, 0.01, (n, 3))
    vel = rng.normal(0, 1.5, (n, 3))
    gap = rng.uniform(0.0, 0.08, n)
    fingers = np.stack([gap / 2 + 0.006, -gap / 2 - 0.006], 1)
    goal = np.tile(BIN, (n, 1))
    t = throw_staged_reward(grip, cube, vel, fingers, goal, np.zeros(n, bool))
    assert np.all((t["reward"] >= 0) & (t["reward"] <= 0.7)) and 0 < t["loose"].sum() < n
    # the same cube, position and velocity, held or let go higher than lift_m: letting go pays at least as much
    high = cube[:, 2] - 0.02 > 0.05
    open_ = throw_staged_reward(grip, cube, vel, np.tile(fingers_for(0.08), (n, 1)), goal, np.zeros(n, bool))
    assert high.sum() > 100 and np.all(open_["reward"][high] >= t["reward"][high] - 1e-12)


def test_wrapper_scores_an_ended_episode_on_its_terminal_observation():
    rewards, infos = staged_reward_episode_end(ThrowStagedReward, "SuperDex/Throw-v0")
    for i, info in enumerate(infos):
        last = info["terminal_observation"]
        o = last["observation"][None]
        want = throw_staged_reward(o[:, 0:3], o[:, 3:6], o[:, 14:17], o[:, 9:11], last["desired_goal"][None],
                                   [info["is_success"]])
        assert rewards[i] == np.float32(want["reward"][0])
        for name in ThrowStagedReward.terms:
            assert info[f"reward_{name}"] == want[name][0]


def test_bad_constants_and_envs_are_refused_by_name():
    cfg = train_mod.resolve("throw_ppo")
    assert cfg["algo"] == "ppo" and cfg["train"]["reward"] == "throw_staged"
    with pytest.raises(ValueError, match="k_aimm"):
        train_mod.resolve("throw_ppo", overrides=["reward.k_aimm=3"])
    with pytest.raises(ValueError, match="stage_share"):
        train_mod.resolve("throw_ppo", overrides=["reward.stage_share=1.5"])
    with pytest.raises(ValueError, match="success_bonus"):
        train_mod.resolve("throw_ppo", overrides=["reward.success_bonus=1.0"])
    with pytest.raises(ValueError, match="SuperDex/Throw-v0"):
        train_mod.resolve("throw_ppo", overrides=['env_id="SuperDex/Push-v0"'])


def test_the_config_trains_and_evaluates_on_throw(tmp_path):
    tiny = ["model.n_steps=32", "model.batch_size=64", "model.n_epochs=2", "model.policy_kwargs.net_arch=[32, 32]"]
    result = train_mod.train("throw_ppo", output=tmp_path / "run", total_timesteps=256, num_envs=8, eval_freq=0,
                             eval_episodes=2, overrides=tiny, verbose=0)
    assert result.metrics["timesteps"] == 256 and result.metrics["env_id"] == "SuperDex/Throw-v0"
    assert len(result.curve) == 1 and -50.0 <= result.curve[0]["mean_return"] <= 0.0  # the env's -1/0 reward
