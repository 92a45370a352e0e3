"""The contract every registered id keeps (Gymnasium, SB3 and HER conventions, determinism, batching, bad input),
parametrized over ``ENV_IDS`` from the registration table: a new task inherits these tests by being registered."""

import pathlib
import subprocess
import sys
import warnings

import gymnasium as gym
import numpy as np
import pytest

import superdex_gym  # noqa: F401  (registers the environments)
from superdex_gym.envs import ENV_IDS, ENVS

from test_trajectory_hash import trajectory_hash


def _random_actions(env, steps, seed=0):
    return np.random.default_rng(seed).uniform(-1, 1, (steps, *env.action_space.shape))


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_gymnasium_check_env_passes_without_warnings(env_id, monkeypatch):
    """No skip flags: the render check makes every declared render mode (human only where pygame is installed,
    offscreen here)."""
    from gymnasium.utils.env_checker import check_env

    monkeypatch.setenv("SDL_VIDEODRIVER", "dummy")
    env = gym.make(env_id)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env.unwrapped)
    assert [str(w.message) for w in caught] == []


def test_check_env_passes_for_every_id_without_pygame():
    """Out of the box (no `human` extra): pygame blocked in a fresh process, every id passes the checker unskipped
    and does not declare ``human``; asking for it says what to install (ours directly, Gymnasium's through
    ``gym.make``'s HumanRendering fallback)."""
    import subprocess
    import sys

    code = """
import sys, warnings
sys.modules["pygame"] = None
import gymnasium as gym
from gymnasium.utils.env_checker import check_env
from superdex_gym.envs import ENV_IDS
for env_id in ENV_IDS:
    env = gym.make(env_id)
    assert "human" not in env.unwrapped.metadata["render_modes"], env_id
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(env.unwrapped)
from superdex_gym.envs.core.env import RobotTaskEnv
try:
    RobotTaskEnv(render_mode="human", task="push:PushTask")
except ValueError as exc:
    assert "pip install 'superdex-gym[human]'" in str(exc), exc
else:
    raise AssertionError("render_mode='human' accepted without pygame")
# gym.make falls back to Gymnasium's HumanRendering wrapper, which names pygame when it first renders
env = gym.make(ENV_IDS[0], render_mode="human")
try:
    env.reset(seed=0)
except Exception as exc:
    assert "pygame" in str(exc), exc
else:
    raise AssertionError("human rendering ran without pygame")
print("ok", len(ENV_IDS))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split() == ["ok", str(len(ENV_IDS))]


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_sb3_check_env_passes_without_warnings(env_id):
    from stable_baselines3.common.env_checker import check_env

    env = gym.make(env_id)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env.unwrapped, warn=True)
    assert [str(w.message) for w in caught] == []


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_registration_row(env_id):
    env = gym.make(env_id)
    assert env.spec.max_episode_steps == ENVS[env_id].max_episode_steps
    assert env.unwrapped.dense_reward == ENVS[env_id].dense_reward == ("Dense" in env_id)
    assert isinstance(gym.make_vec(env_id, num_envs=2), gym.vector.VectorEnv)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_vector_env_equals_single_envs_bit_for_bit(env_id):
    """3 worlds x 8 random steps: every observation array, reward, flag and info of world i equals a single env
    seeded 10 + i with the same actions, to the last bit (a world's float64 physics never depends on the others)."""
    n, steps = 3, 8
    venv = gym.make_vec(env_id, num_envs=n)
    actions = np.random.default_rng(0).uniform(-1, 1, (steps, n, *venv.single_action_space.shape))
    obs, info = venv.reset(seed=10)
    batched = [(obs, None, None, None, info)]
    for a in actions:
        batched.append(venv.step(a))
    for i in range(n):
        env = gym.make(env_id)
        single = [(*env.reset(seed=10 + i),)]
        single = [(single[0][0], None, None, None, single[0][1])]
        for a in actions[:, i]:
            single.append(env.step(a))
        for (b_obs, b_r, b_te, b_tr, b_info), (s_obs, s_r, s_te, s_tr, s_info) in zip(batched, single):
            for key in s_obs:
                np.testing.assert_array_equal(b_obs[key][i], s_obs[key])
            if s_r is not None:
                assert (b_r[i], b_te[i], b_tr[i]) == (np.float32(s_r), s_te, s_tr)
            for key, value in s_info.items():
                assert b_info[key][i] == value, key


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_reward_is_the_sum_of_its_terms_and_her_compute_reward_equals_step_rewards(env_id):
    env = gym.make(env_id)
    obs, info = env.reset(seed=1)
    assert any(k.startswith("reward_") for k in info)
    achieved, desired, rewards = [], [], []
    for a in _random_actions(env, 10):
        obs, r, _, _, info = env.step(a)
        terms = [v for k, v in info.items() if k.startswith("reward_")]
        assert np.float32(r) == np.float32(np.sum(terms))  # pusher_v5's habit: the terms add up to the reward
        achieved.append(obs["achieved_goal"])
        desired.append(obs["desired_goal"])
        rewards.append(r)
    achieved, desired = np.array(achieved), np.array(desired)
    u = env.unwrapped
    np.testing.assert_array_equal(u.compute_reward(achieved, desired, [{}] * 10), np.array(rewards, np.float32))
    # HER relabelling: goals replaced by achieved goals (some the same step's: solved), batched (B,) and (B, K)
    relabelled = u.compute_reward(achieved, achieved[::-1], None)
    expected = [u.compute_reward(a, g, None) for a, g in zip(achieved, achieved[::-1])]
    np.testing.assert_array_equal(relabelled, np.array(expected))
    assert relabelled.dtype == np.float32
    pairs = np.stack([achieved, achieved[::-1]], axis=1)  # (10, 2, goal)
    assert u.compute_reward(pairs, pairs[:, ::-1], None).shape == (10, 2)
    assert np.all(u.worlds.task.is_success(achieved, achieved))
    if not ENVS[env_id].dense_reward:
        assert set(np.unique(relabelled)) <= {-1.0, 0.0} and np.all(u.compute_reward(achieved, achieved, None) == 0)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_vector_reward_terms_add_up_and_autoreset_step_has_zero_terms(env_id):
    venv = gym.make_vec(env_id, num_envs=2, max_episode_steps=2)
    venv.reset(seed=0)
    for k, a in enumerate(np.random.default_rng(1).uniform(-1, 1, (3, 2, *venv.single_action_space.shape))):
        _, r, _, _, infos = venv.step(a)
        terms = np.sum([v for key, v in infos.items() if key.startswith("reward_")], axis=0)
        np.testing.assert_array_equal(r, terms.astype(np.float32))
    assert np.all(r == 0) and np.all(terms == 0)  # the third step is the autoreset one


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_seeded_replay_is_bit_identical_across_processes(env_id):
    here = trajectory_hash(env_id, steps=20)
    code = ("import sys; sys.path.insert(0, %r); from test_trajectory_hash import trajectory_hash; "
            "print(trajectory_hash(%r, steps=20))" % (str(pathlib.Path(__file__).parent), env_id))
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert other == here


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_get_state_set_state_round_trip(env_id):
    env = gym.make(env_id).unwrapped
    env.reset(seed=4)
    for a in _random_actions(env, 3, seed=5):
        env.step(a)
    state = env.get_state()
    actions = _random_actions(env, 6)
    first = [env.step(a)[0] for a in actions] + [env.reset()[0]]
    env.set_state(state)
    second = [env.step(a)[0] for a in actions] + [env.reset()[0]]  # the generator is part of the state
    for a, b in zip(first, second):
        for key in a:
            np.testing.assert_array_equal(a[key], b[key])


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_reset_goal_option_and_bad_options_leave_the_episode_as_it_was(env_id):
    env, twin = gym.make(env_id), gym.make(env_id)
    goal = twin.reset(seed=99)[0]["desired_goal"]  # a goal the task itself sampled: inside the bounds
    obs, _ = env.reset(seed=3, options={"goal": goal})
    np.testing.assert_array_equal(obs["desired_goal"], goal)
    twin.reset(seed=3, options={"goal": goal})
    space = env.observation_space["desired_goal"]
    for bad, match in (({"goal": space.high + 1.0}, "outside the desired_goal bounds"),
                       ({"goal": np.full(space.shape, np.nan)}, "finite"),
                       ({"goal": np.zeros(space.shape[0] + 1)}, "options\\['goal'\\]"),
                       ({"bogus": 1}, "unknown reset options")):
        with pytest.raises(ValueError, match=match):
            env.reset(options=bad)
    a = _random_actions(env, 1)[0]
    after, expected = env.step(a)[0], twin.step(a)[0]
    for key in after:
        np.testing.assert_array_equal(after[key], expected[key])
    np.testing.assert_array_equal(env.reset()[0]["desired_goal"], twin.reset()[0]["desired_goal"])  # same stream


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_nan_actions_raise_and_step_nothing(env_id):
    env, twin = gym.make(env_id), gym.make(env_id)
    env.reset(seed=0)
    twin.reset(seed=0)
    bad = np.zeros(env.action_space.shape)
    for value in (np.nan, np.inf):
        bad[0] = value
        with pytest.raises(ValueError, match="NaN or inf"):
            env.step(bad)
    with pytest.raises(ValueError, match="shape"):
        env.step(np.zeros(env.action_space.shape[0] + 1))
    a = _random_actions(env, 1)[0]
    np.testing.assert_array_equal(env.step(a)[0]["observation"], twin.step(a)[0]["observation"])
    venv = gym.make_vec(env_id, num_envs=2)
    venv.reset(seed=0)
    with pytest.raises(ValueError, match="NaN or inf"):
        venv.step(np.full((2, *env.action_space.shape), np.nan))


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_observations_stay_in_the_space_under_random_actions(env_id):
    """4 worlds x 60 random steps with an autoreset: every observation inside the real bounds of the space."""
    venv = gym.make_vec(env_id, num_envs=4)
    obs, _ = venv.reset(seed=0)
    for a in np.random.default_rng(2).uniform(-1, 1, (60, 4, *venv.single_action_space.shape)):
        obs, *_ = venv.step(a)
        assert venv.observation_space.contains(obs)


HOVER = '''
import numpy as np

from ..core.task import Task


class Config:
    distance_threshold_m = 0.05

    def validate(self):
        return self


class HoverTask(Task):
    """Hold the grip point on a goal 10 cm above the home, anywhere on a 5 cm circle (no table: the robot alone)."""
    name = "Hover"
    observation_layout = ("grip", "grip_velocity")
    achieved_goal_parts = ("grip",)
    marker_radius_m = 0.02

    @staticmethod
    def make_config():
        return Config()

    def build(self, scene):
        pass

    def robot_home(self):
        return np.array([0.0, 0.0, 0.1])

    def sample_episode(self, rng):
        angle = rng.uniform(0, 2 * np.pi)
        return np.array([0.08 * np.cos(angle), 0.08 * np.sin(angle), 0.2]), np.zeros((1, 3))
'''


def test_a_new_task_is_one_file_in_tasks_and_one_row(tmp_path, monkeypatch):
    """The README's claim, literally: a file in envs/tasks/ and a table row give a registered id (and its Dense
    twin) that gym.make, gym.make_vec, both checkers and the SB3 adapter accept."""
    from gymnasium.utils.env_checker import check_env

    import superdex_gym.envs.tasks as tasks
    from superdex_gym.envs import Row, env_specs, register_envs

    (tmp_path / "hover.py").write_text(HOVER)
    monkeypatch.setattr(tasks, "__path__", [*tasks.__path__, str(tmp_path)])
    specs = env_specs((Row("Hover", "floating_gripper:FloatingGripper", "hover:HoverTask", 20),))
    assert set(specs) == {"SuperDex/Hover-v0", "SuperDex/HoverDense-v0"}
    try:
        register_envs(specs)
        env = gym.make("SuperDex/HoverDense-v0")
        assert env.spec.max_episode_steps == 20 and env.observation_space["observation"].shape == (6,)
        check_env(env.unwrapped, skip_render_check=True)
        obs, info = env.reset(seed=0)
        obs, r, _, _, info = env.step(np.zeros(4))
        assert r == pytest.approx(-np.linalg.norm(obs["achieved_goal"] - obs["desired_goal"]), rel=1e-6)
        venv = gym.make_vec("SuperDex/Hover-v0", num_envs=2)
        obs, _ = venv.reset(seed=0)
        assert obs["desired_goal"].shape == (2, 3) and np.allclose(obs["desired_goal"][:, 2], 0.2)
    finally:
        for env_id in specs:
            gym.registry.pop(env_id, None)
        sys.modules.pop("superdex_gym.envs.tasks.hover", None)


def test_success_is_per_object_not_one_norm_over_the_stacked_goal():
    """Two objects, 5 cm threshold: each 4 cm off along a different axis succeeds (the stacked 6-D norm, 5.7 cm,
    would not), one 6 cm off fails (with the other exact, the stacked norm would be the same 6 cm); the dense
    reward is minus the sum of the objects' distances."""
    from types import SimpleNamespace

    from superdex_gym.envs.core.task import Task

    class TwoObjects(Task):
        objects = 2

    config = SimpleNamespace(distance_threshold_m=0.05)
    config.validate = lambda: config
    task = TwoObjects(config, robot=None)
    desired = np.zeros((3, 6))
    achieved = np.array([[0.04, 0, 0, 0, 0.04, 0], [0.06, 0, 0, 0, 0, 0], [0.049, 0, 0, 0, 0, 0.049]])
    assert task.goal_shape == (6,)
    np.testing.assert_array_equal(task.is_success(achieved, desired), [True, False, True])
    np.testing.assert_allclose(task.distances(achieved, desired), [[0.04, 0.04], [0.06, 0.0], [0.049, 0.049]])
    np.testing.assert_array_equal(task.compute_reward(achieved, desired, dense=False), np.float32([0, -1, 0]))
    np.testing.assert_allclose(task.compute_reward(achieved, desired, dense=True), [-0.08, -0.06, -0.098],
                               rtol=1e-6)  # float32 rewards
    task.marker_radius_m = 0.02
    np.testing.assert_array_equal([p for p, _ in task.goal_markers(np.arange(6.0))], [[0, 1, 2], [3, 4, 5]])
