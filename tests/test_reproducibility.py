"""Seeding, state and episode-length promises: a seedless reset continues each world's generator (single env,
native vector env with and without ``reset_mask``, SB3 adapter, as Gymnasium's ``SyncVectorEnv``); ``set_state``
refuses corrupted or foreign states and changes nothing; a rejected reset through ``gym.make``'s wrappers does not
restart the episode's step count."""

from __future__ import annotations

import copy

import gymnasium as gym
import numpy as np
import pytest

import superdex_gym  # noqa: F401  (registers the ids)
from superdex_gym.envs import ENV_IDS
from superdex_gym.envs.adapters.sb3 import SuperDexSB3VecEnv

PUSH = "SuperDex/Push-v0"


def _goals(obs) -> bytes:
    return obs["desired_goal"].tobytes() + obs["achieved_goal"].tobytes()


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_seedless_resets_continue_the_seeded_generators(env_id):
    """Two identical instances seeded alike give the same episodes on every later seedless reset: single, vector
    (whole and masked) and SB3; and world i of the vector env replays a single env seeded with 0 + i."""
    singles = [gym.make(env_id) for _ in range(2)]
    vectors = [gym.make_vec(env_id, num_envs=2) for _ in range(2)]
    sb3 = [SuperDexSB3VecEnv(2, seed=0, env_id=env_id) for _ in range(2)]
    for a, b in (singles, vectors):
        assert _goals(a.reset(seed=0)[0]) == _goals(b.reset(seed=0)[0])
        for _ in range(2):
            assert _goals(a.reset()[0]) == _goals(b.reset()[0])
    mask = np.array([False, True])
    first = [v.reset(options={"reset_mask": mask})[0] for v in vectors]
    assert _goals(first[0]) == _goals(first[1])
    for a, b in (sb3,):
        for _ in range(3):
            assert _goals(a.reset()) == _goals(b.reset())
    # world 1 after: seed 1, two seedless resets, one masked one = a single env seeded 1 then reset three times
    single = gym.make(env_id)
    single.reset(seed=1)
    for _ in range(2):
        single.reset()
    expected = single.reset()[0]
    assert _goals({k: v[1] for k, v in first[0].items()}) == _goals(expected)
    # world 0 was not reset by the mask: it still holds its second seedless episode's goal
    single.reset(seed=0)
    single.reset()
    assert first[0]["desired_goal"][0].tobytes() == single.reset()[0]["desired_goal"].tobytes()


def test_sb3_second_reset_continues_and_seed_restarts():
    a, b = SuperDexSB3VecEnv(2, seed=3), SuperDexSB3VecEnv(2, seed=3)
    first, second = a.reset(), a.reset()
    assert _goals(first) != _goals(second)  # the generators moved on
    assert _goals(b.reset()) == _goals(first) and _goals(b.reset()) == _goals(second)
    a.seed(3)
    assert _goals(a.reset()) == _goals(first)


@pytest.mark.parametrize("seed", [1.5, "7", b"7", {"a": 1}, True])
def test_vector_reset_seed_of_another_type_names_the_seed(seed):
    venv = gym.make_vec(PUSH, num_envs=2)
    venv.reset(seed=0)
    rngs = [r.bit_generator.state for r in venv._rngs]
    with pytest.raises(TypeError, match="seed must be None, an int or a list"):
        venv.reset(seed=seed)
    assert [r.bit_generator.state for r in venv._rngs] == rngs


# --- set_state ----------------------------------------------------------------------------------------------------
def _stepped(env_id=PUSH, **kwargs):
    env = gym.make(env_id, **kwargs)
    env.reset(seed=4)
    env.step(np.array([0.4, -0.2, 0.1, 0.0]))
    return env


def _kinematics(state):
    return state["worlds"]["scene"][1].history[0]


def _cube_row(env):
    worlds = env.unwrapped.worlds
    return worlds.scene.get_actor_rows([worlds.task.cube])[0]


def _set(path, value):
    def edit(state, row):
        getattr(_kinematics(state), path[0])[(0, row, *path[1:])] = value
    return edit


def _drop_row(state, row):
    kin = _kinematics(state)
    kin.com_position = np.delete(kin.com_position, row, axis=1)


def _bad_generator(state, row):
    state["np_random"]["state"]["state"] = 2**200


CORRUPTIONS = [
    ("nan_position", _set(("com_position", 0), np.nan), "com_position .*NaN"),
    ("inf_velocity", _set(("angular_velocity", 2), np.inf), "angular_velocity .*NaN or inf"),
    ("zero_rotation", _set(("rotation",), 0.0), "not a rotation matrix"),
    ("mirror_rotation", _set(("rotation",), np.diag([1.0, 1.0, -1.0])), "not a rotation matrix"),
    ("sheared_rotation", _set(("rotation", 0, 1), 0.01), "not a rotation matrix"),
    ("cube_at_1e6_m_s", _set(("linear_velocity", 0), 1e6), "moves 'cube' .* above the"),
    ("cube_at_7_m_s", _set(("linear_velocity", 2), -7.0), "moves 'cube' .* above the 6.1 m/s"),
    ("cube_spinning_1e4_rad_s", _set(("angular_velocity", 1), 1e4), "spins the surface of 'cube' .* above the 10"),
    ("missing_actor_row", _drop_row, "an actor's row missing"),
    ("generator_overflow", _bad_generator, "np_random"),
]


@pytest.mark.parametrize("corrupt, fragment", [c[1:] for c in CORRUPTIONS], ids=[c[0] for c in CORRUPTIONS])
def test_set_state_refuses_corrupted_values_and_changes_nothing(corrupt, fragment):
    env, twin = _stepped(), _stepped()
    state = copy.deepcopy(env.unwrapped.get_state())
    corrupt(state, _cube_row(env))
    with pytest.raises(ValueError, match=fragment):
        env.unwrapped.set_state(state)
    _assert_same_future(env, twin)


def _assert_same_future(env, twin):
    for action in np.random.default_rng(0).uniform(-1, 1, size=(3, 4)):
        out, ref = env.step(action), twin.step(action)
        assert _goals(out[0]) == _goals(ref[0]) and out[0]["observation"].tobytes() == ref[0]["observation"].tobytes()
    assert _goals(env.reset()[0]) == _goals(twin.reset()[0])


@pytest.mark.parametrize("source, target, fragment", [
    ((PUSH, {}), ("SuperDex/PickAndPlace-v0", {}), "PushTask on FloatingGripper, this env is PickAndPlaceTask"),
    ((PUSH, {"cube_mass": 0.1}), (PUSH, {}), "cube_mass_kg = 0.1 in the state, 0.064 here"),
    ((PUSH, {}), (PUSH, {"physics_dt": 0.01}), "physics_dt = 0.02 in the state, 0.01 here"),
    (("SuperDex/Stack2-v0", {}), ("SuperDex/Stack2-v0", {"friction": 0.6}), "friction = 0.5 in the state"),
])
def test_set_state_refuses_a_state_of_another_configuration(source, target, fragment):
    state = _stepped(source[0], **source[1]).unwrapped.get_state()
    env, twin = _stepped(target[0], **target[1]), _stepped(target[0], **target[1])
    with pytest.raises(ValueError, match=f"another configuration: {fragment}"):
        env.unwrapped.set_state(state)
    _assert_same_future(env, twin)


def test_a_state_of_the_same_configuration_still_restores():
    """The Dense twin shares the configuration (the reward is not part of the physics' future)."""
    source = _stepped("SuperDex/PushDense-v0")
    env = _stepped()
    env.unwrapped.set_state(source.unwrapped.get_state())
    action = np.array([0.1, 0.2, -0.3, 0.0])
    assert source.step(action)[0]["observation"].tobytes() == env.step(action)[0]["observation"].tobytes()


# --- the episode's step count through gym.make --------------------------------------------------------------------
@pytest.mark.parametrize("bad_reset", [
    lambda e: e.reset(options={"goal": [9.0, 9.0, 9.0]}),
    lambda e: e.reset(seed=-3),
    lambda e: e.reset(options={"bogus": 1}),
])
def test_a_rejected_reset_does_not_restart_the_episode_count(bad_reset):
    env = gym.make(PUSH)
    limit = env.spec.max_episode_steps
    env.reset(seed=0)
    for _ in range(45):
        assert not env.step(np.zeros(4))[3]
    with pytest.raises((ValueError, gym.error.Error)):
        bad_reset(env)
    ends = [env.step(np.zeros(4))[3] for _ in range(limit - 45)]
    assert ends == [False] * (limit - 46) + [True]  # truncated at step 50 of 50, not 95
    env.reset(seed=1)  # a new episode counts from 0 again, for both counters
    assert [env.step(np.zeros(4))[3] for _ in range(limit)] == [False] * (limit - 1) + [True]


def test_a_shorter_limit_given_to_gym_make_still_holds():
    env = gym.make(PUSH, max_episode_steps=5)
    env.reset(seed=0)
    assert [env.step(np.zeros(4))[3] for _ in range(5)] == [False] * 4 + [True]
