"""SuperDex/Reach-v0 and ReachDense-v0: what is particular to Reach (the contract every id keeps:
test_env_contract.py)."""

import gymnasium as gym
import numpy as np
import pytest

import superdex_gym  # noqa: F401  (registers the environments)
from superdex_gym.envs.scripted import scripted_reach_action

HOME = np.array([0.0, 0.0, 0.15])


def test_observation_is_fetchreach_layout_with_the_grip_point_as_achieved_goal():
    env = gym.make("SuperDex/Reach-v0")
    obs, info = env.reset(seed=0)
    assert env.observation_space["observation"].shape == (10,)
    assert env.spec.max_episode_steps == 50 and env.metadata["render_fps"] == 25
    np.testing.assert_allclose(obs["observation"][:3], HOME, atol=1e-6)  # the gripper starts at home, at rest
    np.testing.assert_array_equal(obs["observation"][5:], 0.0)
    for _ in range(5):
        obs, *_ = env.step(np.array([1.0, -0.5, 0.2, 0.0]))
        np.testing.assert_array_equal(obs["achieved_goal"], obs["observation"][:3])
        assert env.observation_space.contains(obs)
    np.testing.assert_allclose(obs["observation"][:3], HOME + 5 * 0.05 * np.array([1.0, -0.5, 0.2]), atol=2e-3)


def test_sampled_goals_are_in_the_goal_cube_and_never_solved_at_reset():
    venv = gym.make_vec("SuperDex/Reach-v0", num_envs=512)
    obs, info = venv.reset(seed=0)
    offset = obs["desired_goal"] - HOME
    assert np.abs(offset).max() <= 0.15 + 1e-6  # FetchReach's +-0.15 m around the start
    assert np.linalg.norm(offset, axis=1).min() > 0.05 and not info["is_success"].any()
    assert np.abs(offset).max(axis=0).min() > 0.14  # the whole cube is sampled, in every axis
    for k in range(3):
        assert venv.single_observation_space["desired_goal"].contains(obs["desired_goal"][k])


def test_reach_refuses_push_options():
    env = gym.make("SuperDex/Reach-v0")
    env.reset(seed=0)
    with pytest.raises(ValueError, match="unknown reset options"):
        env.reset(options={"object_pose": [0.1, 0.0, 0.02]})


def test_scripted_reach_succeeds_and_rewards_follow_the_distance():
    venv = gym.make_vec("SuperDex/Reach-v0", num_envs=50)
    obs, _ = venv.reset(seed=100)
    steps_to_success = np.full(50, -1)
    for t in range(50):
        obs, r, te, tr, info = venv.step(scripted_reach_action(obs))
        d = np.linalg.norm(obs["achieved_goal"] - obs["desired_goal"], axis=1)
        np.testing.assert_array_equal(r, np.where(d < 0.05, 0.0, -1.0).astype(np.float32))
        steps_to_success[(steps_to_success < 0) & info["is_success"]] = t + 1
    assert info["is_success"].all() and (steps_to_success > 0).all()
    # the farthest goal is sqrt(3) x 0.15 m away: at 5 cm per step the grip point is within 5 cm after 5 steps
    assert steps_to_success.max() <= 5
    dense = gym.make("SuperDex/ReachDense-v0")
    obs, _ = dense.reset(seed=0)
    obs, r, *_ = dense.step(np.zeros(4))
    assert r == pytest.approx(-np.linalg.norm(obs["achieved_goal"] - obs["desired_goal"]), rel=1e-6)


def test_config_validation():
    with pytest.raises(ValueError, match="goal cube"):
        gym.make("SuperDex/Reach-v0", goal_range=0.5)  # above the workspace top (0.3 m)
    with pytest.raises(ValueError, match="twice distance_threshold"):
        gym.make("SuperDex/Reach-v0", goal_range=0.06)
    with pytest.raises(ValueError, match="distance_threshold_m"):
        gym.make("SuperDex/Reach-v0", distance_threshold=-1.0)
    with pytest.raises(TypeError, match="cube_size"):
        gym.make("SuperDex/Reach-v0", cube_size=0.05)  # a Push kwarg


@pytest.mark.parametrize("mode", ["rgb_array", "depth_array"])
def test_rendering(mode):
    env = gym.make("SuperDex/Reach-v0", render_mode=mode, render_width=96, render_height=64)
    env.reset(seed=0)
    frame = env.render()
    assert frame.shape == ((64, 96, 3) if mode == "rgb_array" else (64, 96))
    assert frame.dtype == (np.uint8 if mode == "rgb_array" else np.float32)
    assert len(np.unique(frame.reshape(-1, frame.shape[-1]) if frame.ndim == 3 else frame)) > 10


def test_sb3_vec_env_builds_the_registered_task():
    pytest.importorskip("stable_baselines3")
    from superdex_gym.envs.adapters.sb3 import SuperDexSB3VecEnv

    venv = SuperDexSB3VecEnv(num_envs=3, seed=0, env_id="SuperDex/ReachDense-v0")
    assert venv.venv.dense_reward  # the registration's kwargs apply
    obs = venv.reset()
    assert obs["observation"].shape == (3, 10)
    venv.step_async(np.zeros((3, 4)))
    _, rewards, _, _ = venv.step_wait()
    np.testing.assert_allclose(rewards, -np.linalg.norm(obs["achieved_goal"] - obs["desired_goal"], axis=1),
                               rtol=1e-5)
