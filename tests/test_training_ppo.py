"""PPO through superdex-train (algo = "ppo", configs/push_ppo.toml) and the staged Push reward it trains on
(training/rewards.py): the reward's terms on hand-placed positions, the wrapper scoring an ended episode on its
terminal observation, a tiny PPO run and what it writes (evaluations with wall-clock times, a checkpoint it
resumes from, a model evaluate loads), and the option combinations PPO refuses.
"""

import json

import numpy as np
import pytest

pytest.importorskip("stable_baselines3")
torch = pytest.importorskip("torch")

from superdex_gym.training import evaluate as evaluate_mod  # noqa: E402
from superdex_gym.training import train as train_mod  # noqa: E402
from superdex_gym.training.config import load_config  # noqa: E402
from superdex_gym.training.rewards import PushStagedReward, push_staged_reward  # noqa: E402

# 8 worlds x 32 steps = 256 timesteps per rollout, 2 epochs of 4 minibatches on a [32, 32] net
TINY = ["model.n_steps=32", "model.batch_size=64", "model.n_epochs=2", "model.policy_kwargs.net_arch=[32, 32]"]


def test_push_staged_reward_terms_on_placed_positions():
    cube = np.array([[0.1, 0.0, 0.02]] * 4)
    goal = np.array([[0.3, 0.0, 0.02], [-0.1, 0.0, 0.02], [0.1, 0.2, 0.02], [0.3, 0.0, 0.02]])
    # behind the cube on the goal -> cube line, 3.5 cm from its centre, 1 cm above the table: the goal's direction
    pose = np.array([[0.065, 0.0, 0.01], [0.135, 0.0, 0.01], [0.1, -0.035, 0.01], [0.065, 0.0, 0.25]])
    t = push_staged_reward(pose, cube, goal, [False, False, False, False])
    np.testing.assert_allclose(t["reach"][:3], 1.0)
    np.testing.assert_array_equal(t["reached"], [1, 1, 1, 0])
    place = 1 - np.tanh(5 * 0.2)
    np.testing.assert_allclose(t["place"], [place, place, place, place])
    np.testing.assert_allclose(t["reward"][:3], 0.5 * (1 + place))
    # not reached: the reach term alone, half weight (the 4th grip is 24 cm above the pose)
    np.testing.assert_allclose(t["reward"][3], 0.5 * (1 - np.tanh(5 * 0.24)))
    # k_gate: the place term weighted by a sharp kernel of the grip's distance to the pose, not switched at 1.5 cm
    off = pose + [0.0, 0.02, 0.0]  # 2 cm beside the pose: the hard gate pays no place term there
    hard, soft = push_staged_reward(off, cube, goal, [False] * 4), push_staged_reward(off, cube, goal, [False] * 4,
                                                                                     k_gate=30.0)
    np.testing.assert_array_equal(hard["reached"][:3], 0.0)
    np.testing.assert_allclose(soft["reached"][:3], 1 - np.tanh(30 * 0.02))
    np.testing.assert_allclose(soft["reward"][:3], 0.5 * (hard["reach"][:3] + (1 - np.tanh(0.6)) * place))
    # success is the maximum, whatever the gripper does; every reward lies in [0, 1]
    s = push_staged_reward(np.array([[0.9, 0.9, 0.3]]), cube[:1], cube[:1] + [0.01, 0, 0], [True])
    assert s["reward"][0] == 1.0 and s["reached"][0] == 0
    rng = np.random.default_rng(0)
    r = push_staged_reward(rng.uniform(-1, 1, (500, 3)), rng.uniform(-1, 1, (500, 3)), rng.uniform(-1, 1, (500, 3)),
                           rng.random(500) < 0.2, k_gate=30.0)["reward"]
    assert np.all((r >= 0) & (r <= 1))


def test_wrapper_scores_an_ended_episode_on_its_terminal_observation():
    from superdex_gym.envs.adapters.sb3 import SuperDexSB3VecEnv

    venv = PushStagedReward(SuperDexSB3VecEnv(2, seed=4, max_episode_steps=3))
    venv.reset()
    for step in range(3):
        obs, rewards, dones, infos = venv.step(np.tile([[0.5, 0.2, -0.3, -1.0]], (2, 1)))
    assert dones.all() and rewards.dtype == np.float32  # the 3rd step ends both episodes (time limit)
    for i, info in enumerate(infos):
        last = info["terminal_observation"]
        want = push_staged_reward(last["observation"][None, 0:3], last["observation"][None, 3:6],
                                  last["desired_goal"][None], [info["is_success"]])
        assert rewards[i] == np.float32(want["reward"][0])
        assert info["reward_reach"] == want["reach"][0] and info["reward_env"] == -1.0  # Push-v0's sparse reward
        # the observation handed out is the next episode's first: scoring it would give another reward
        fresh = push_staged_reward(obs["observation"][None, i, 0:3], obs["observation"][None, i, 3:6],
                                   obs["desired_goal"][None, i], [False])
        assert fresh["reach"][0] != want["reach"][0]


@pytest.fixture(scope="module")
def ppo_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("ppo")
    argv = ["--config", "push_ppo", "--total-timesteps", "512", "--seed", "2", "--num-envs", "8", "--output",
            str(out), "--device", "cpu", "--no-progress-bar", "--checkpoint-freq", "256", "--eval-freq", "256",
            "--eval-episodes", "3", "--video", "none", "-q"]
    for o in TINY:
        argv += ["--set", o]
    assert train_mod.main(argv) == 0
    return out


def test_ppo_run_writes_its_curve_against_wall_clock(ppo_run):
    out = ppo_run
    for name in ("model.zip", "model_vecnormalize.pkl", "best_model.zip", "config.json", "metrics.json",
                 "learning_curve.csv", "progress.csv", "checkpoints/model_256_steps.zip",
                 "checkpoints/model_vecnormalize_256_steps.pkl", "checkpoints/model_512_steps.zip"):
        assert (out / name).is_file(), name
    assert not list((out / "checkpoints").glob("*replay_buffer*"))  # on-policy: nothing to replay
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["algo"] == "ppo" and cfg["her"] == {} and cfg["train"]["reward"] == "push_staged"
    assert "buffer_size" not in cfg["model"] and "learning_starts" not in cfg["model"]  # no off-policy sizing
    assert cfg["model"]["n_steps"] == 32 and cfg["model"]["gamma"] == 0.8
    again = load_config(out / "config.json")  # the written config trains again as it is
    assert again["model"] == cfg["model"] and again["train"] == cfg["train"]
    train_mod.resolve(out / "config.json")

    lines = (out / "learning_curve.csv").read_text().strip().splitlines()
    assert lines[0] == "timesteps,success_rate,mean_return,mean_final_distance,wall_time_s"
    rows = [[float(x) for x in line.split(",")] for line in lines[1:]]
    assert [int(r[0]) for r in rows] == [256, 512]  # one evaluation per rollout of 8 x 32 steps
    assert 0 < rows[0][4] < rows[1][4]  # wall-clock seconds since the start, growing
    assert all(0.0 <= r[1] <= 1.0 and -50.0 <= r[2] <= 0.0 for r in rows)  # evaluated on Push-v0's own reward

    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["algo"] == "ppo" and metrics["timesteps"] == 512 and metrics["timesteps_per_s"] > 0
    progress = (out / "progress.csv").read_text().splitlines()
    header = progress[0].split(",")
    assert "train/approx_kl" in header and "rollout/ep_rew_mean" in header
    # two rollouts of 8 x 32 steps: 4 episodes of 50 steps have ended by the second, scored by the staged reward
    last = dict(zip(header, progress[-1].split(",")))
    assert 0.0 <= float(last["rollout/ep_rew_mean"]) <= 50.0


def test_ppo_model_loads_for_evaluation_and_resumes(ppo_run, tmp_path):
    from stable_baselines3 import PPO

    out = ppo_run
    model = evaluate_mod.load_model(out / "model.zip", device="cpu")  # algo from the run's config.json
    assert type(model) is PPO
    r = evaluate_mod.evaluate(out / "model.zip", episodes=2, seed=5, num_envs=2)
    assert r["episodes"] == 2 and 0.0 <= r["success_rate"] <= 1.0
    # resume from the 512-step checkpoint (no replay buffer needed) to one more rollout
    res = train_mod.train(resume=out, output=tmp_path / "more", total_timesteps=768, verbose=0)
    assert res.metrics["resumed_from_timesteps"] == 512 and res.metrics["timesteps"] == 768
    assert [r["timesteps"] for r in res.curve] == [256, 512, 768]


def test_ppo_refuses_off_policy_options():
    ok = train_mod.resolve("push_ppo")
    assert ok["algo"] == "ppo" and ok["her"] == {}
    with pytest.raises(ValueError, match="train.warmup_policy"):
        train_mod.resolve("push_ppo", overrides=['train.warmup_policy="scripted"'])
    with pytest.raises(ValueError, match="her.n_sampled_goal"):
        train_mod.resolve("push_ppo", overrides=["her.n_sampled_goal=8"])
    for key in ("learning_starts=100", "buffer_size=1000", "gradient_steps=2"):
        with pytest.raises(ValueError, match=f"model.{key.split('=')[0]}"):
            train_mod.resolve("push_ppo", overrides=[f"model.{key}"])
    with pytest.raises(ValueError, match="train.normalize = true"):
        train_mod.resolve("push_ppo", overrides=["train.normalize_reward=true", "train.normalize=false"])


def test_shaped_rewards_are_refused_where_they_do_not_apply():
    # HER relabels with the env's compute_reward: a shaped training reward would not match it
    with pytest.raises(ValueError, match="train.reward = 'push_staged'"):
        train_mod.resolve("push", overrides=['train.reward="push_staged"'])
    with pytest.raises(ValueError, match="train.normalize_reward"):
        train_mod.resolve("push", overrides=["train.normalize_reward=true"])
    with pytest.raises(ValueError, match="observation layout"):
        train_mod.resolve("push_ppo", overrides=['env_id="SuperDex/Reach-v0"'])
    with pytest.raises(ValueError, match="k_rech"):
        train_mod.resolve("push_ppo", overrides=["reward.k_rech=3"])
    with pytest.raises(ValueError, match="must be >= 0"):
        train_mod.resolve("push_ppo", overrides=["reward.k_reach=-1"])
    with pytest.raises(ValueError, match="must be 'env' or one of"):
        train_mod.resolve("push_ppo", overrides=['train.reward="staged"'])
    with pytest.raises(ValueError, match="uses the env's own reward"):
        train_mod.resolve("push_ppo", overrides=['train.reward="env"'])


def test_ppo_from_pixels_trains_on_the_policy_keys_and_evaluates(tmp_path):
    """configs/push_rgb_ppo.toml, tiny: the policy sees the image, proprioception and goal only (train.policy_keys,
    the small CNN); observation normalization leaves the image alone; evaluate runs the saved model on the env's
    full observations."""
    from stable_baselines3.common.preprocessing import is_image_space

    out = tmp_path / "run"
    result = train_mod.train("push_rgb_ppo", output=out, total_timesteps=256, num_envs=8, eval_freq=0,
                             eval_episodes=2, overrides=TINY + ["env.image_size=24"], verbose=0)
    model = result.model
    assert set(model.observation_space.spaces) == {"rgb", "proprioception", "desired_goal"}
    assert is_image_space(model.observation_space["rgb"])  # channels first: SB3's CNN path
    assert type(model.policy.features_extractor).__name__ == "SmallCNNExtractor"
    norm = model.get_vec_normalize_env()
    assert set(norm.norm_obs_keys) == {"proprioception", "desired_goal"}
    summary = evaluate_mod.evaluate(out / "model.zip", episodes=2, seed=5, num_envs=2)
    assert summary["env_kwargs"]["obs_mode"] == "state+rgb" and len(summary["per_episode"]) == 2


def test_policy_keys_must_be_observation_keys(tmp_path):
    with pytest.raises(ValueError, match="policy_keys"):
        train_mod.train("reach_rgb_ppo", output=tmp_path / "run", total_timesteps=64, num_envs=2, eval_episodes=0,
                        overrides=TINY + ['train.policy_keys=["rgb", "cube"]', "env.image_size=8"], verbose=0)
    with pytest.raises(ValueError, match="policy_keys"):
        train_mod.resolve("reach_rgb_ppo", overrides=['train.policy_keys="rgb"'])
    with pytest.raises(ValueError, match="HER"):  # SAC + HER needs the goal keys
        train_mod.resolve("reach", overrides=['train.policy_keys=["observation", "desired_goal"]'])


def test_keypoint_encoder_finds_a_spot_where_it_is():
    """KeypointEncoder's coordinates: with its filters set to pass the red channel, a red 4 x 4 patch at row r,
    column c of a 64 x 64 image gives x at the patch column's centre (c / 15 * 2 - 1 over the 16 patch columns)
    and y at its row's, as the softmax sharpens (a large temperature's inverse)."""
    import torch as th

    from superdex_gym.training.obs_keys import KeypointEncoder

    enc = KeypointEncoder(3, 2)
    with th.no_grad():
        first, second = enc.convs[0], enc.convs[2]
        first.weight.zero_()
        first.bias.zero_()
        first.weight[0, 0] = 1.0 / 16  # filter 0: the patch's mean red
        second.weight.zero_()
        second.bias.zero_()
        second.weight[:, 0] = 200.0  # both maps: filter 0, sharp
        enc.log_temperature.zero_()
    for row, col in [(0, 0), (5, 11), (15, 3)]:
        image = th.zeros(1, 3, 64, 64)
        image[0, 0, 4 * row:4 * row + 4, 4 * col:4 * col + 4] = 1.0
        out = enc(image)[0].detach().numpy()
        assert out.shape == (4,)  # x of both maps, then y of both
        assert out[:2] == pytest.approx([col / 15 * 2 - 1] * 2, abs=1e-6)
        assert out[2:] == pytest.approx([row / 15 * 2 - 1] * 2, abs=1e-6)


def test_ppo_from_pixels_through_keypoints(tmp_path):
    """configs/push_rgb_keypoints_ppo.toml, tiny: the top camera, the keypoint extractor's features (2 per keypoint
    per image beside the vector keys), and bad extractor arguments refused by name."""
    from superdex_gym.training.obs_keys import SpatialSoftmaxExtractor

    out = tmp_path / "run"
    result = train_mod.train("push_rgb_keypoints_ppo", output=out, total_timesteps=256, num_envs=8, eval_freq=0,
                             eval_episodes=2, overrides=TINY + ["env.image_size=24"], verbose=0)
    extractor = result.model.policy.features_extractor
    assert type(extractor).__name__ == "SpatialSoftmaxExtractor"
    assert extractor.features_dim == 2 * 16 + 10 + 3  # keypoints, proprioception, desired_goal
    assert result.metrics["timesteps"] == 256
    space = result.model.observation_space
    with pytest.raises(ValueError, match="num_keypoints"):
        SpatialSoftmaxExtractor(space, num_keypoints=0)
    for bad in (0.0, -1.0, float("nan"), "0.1"):
        with pytest.raises(ValueError, match="temperature"):
            SpatialSoftmaxExtractor(space, temperature=bad)
    from gymnasium import spaces

    small = spaces.Dict({"rgb": spaces.Box(0, 255, (3, 6, 6), np.uint8)})
    with pytest.raises(ValueError, match="'rgb' of 6 x 6"):
        SpatialSoftmaxExtractor(small)
