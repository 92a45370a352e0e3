"""superdex-dataset: Minari datasets round-trip, replay bit for bit from their seeds and rebuild their env."""

import gymnasium as gym
import numpy as np
import pytest

minari = pytest.importorskip("minari")

from superdex_gym.training import dataset as dataset_mod  # noqa: E402

PUSH, REACH = "SuperDex/Push-v0", "SuperDex/Reach-v0"
REACH_KWARGS = {"terminate_on_success": True}  # episodes of different lengths, ended by terminations


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    """One datasets root for the module: Push (3 episodes over 2 worlds: a full and a partial batch) and Reach
    ending on success."""
    path = tmp_path_factory.mktemp("minari")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MINARI_DATASETS_PATH", str(path))
        figures = {
            PUSH: dataset_mod.make_dataset(PUSH, "scripted", 3, seed=7, num_envs=2),
            REACH: dataset_mod.make_dataset(REACH, "scripted", 3, seed=11, num_envs=3, env_kwargs=REACH_KWARGS),
        }
        yield path, figures


def same_bits(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def episodes_of(ds):
    meta = list(ds.storage.get_episode_metadata(range(ds.total_episodes)))
    return list(zip(ds.iterate_episodes(), meta))


@pytest.mark.parametrize("env_id", [PUSH, REACH])
def test_round_trip_keeps_spaces_shapes_dtypes_counts_and_success(root, env_id):
    _, figures = root
    out = figures[env_id]
    ds = minari.load_dataset(out["dataset_id"])
    env = gym.make(env_id, **(REACH_KWARGS if env_id == REACH else {}))
    assert ds.observation_space == env.observation_space and ds.action_space == env.action_space
    assert ds.total_episodes == out["episodes"] == 3
    assert ds.total_steps == out["transitions"]
    successes = []
    for ep, meta in episodes_of(ds):
        t = len(ep)
        assert meta["seed"] == out["seed"] + ep.id
        assert set(ep.observations) == set(env.observation_space.spaces)
        for key, space in env.observation_space.spaces.items():
            assert ep.observations[key].shape == (t + 1, *space.shape)
            assert ep.observations[key].dtype == space.dtype
        assert ep.actions.shape == (t, 4) and ep.actions.dtype == np.float32
        assert all(env.action_space.contains(a) for a in ep.actions)
        assert ep.rewards.shape == (t,) and ep.rewards.dtype == np.float32
        assert ep.terminations.dtype == ep.truncations.dtype == np.bool_
        # exactly one end, at the last step
        assert not (ep.terminations[:-1] | ep.truncations[:-1]).any()
        assert ep.terminations[-1] or ep.truncations[-1]
        assert {"is_success", "distance", "physics_diverged"} <= set(ep.infos)
        assert all(v.shape == (t + 1,) for v in ep.infos.values())
        assert ep.infos["is_success"].dtype == np.bool_
        successes.append(bool(ep.infos["is_success"][-1]))
        if env_id == PUSH:
            # no termination on success: every episode runs its 50 steps and is truncated
            assert t == 50 and ep.truncations[-1] and not ep.terminations.any()
        else:
            assert t < 50 and ep.terminations[-1] and ep.infos["is_success"][-1]
    assert out["success_rate"] == np.mean(successes)
    assert out["size_bytes"] > 0


@pytest.mark.parametrize("env_id", [PUSH, REACH])
def test_replaying_the_actions_from_the_seeds_gives_the_same_bits(root, env_id):
    _, figures = root
    ds = minari.load_dataset(figures[env_id]["dataset_id"])
    env = ds.recover_environment()
    for ep, meta in episodes_of(ds):
        obs, info = env.reset(seed=meta["seed"])
        for t in range(len(ep) + 1):
            if t:
                obs, reward, terminated, truncated, info = env.step(ep.actions[t - 1])
                assert same_bits(np.float32(reward), ep.rewards[t - 1])
                assert (terminated, truncated) == (ep.terminations[t - 1], ep.truncations[t - 1])
            for key in obs:
                assert same_bits(obs[key], ep.observations[key][t]), (ep.id, t, key)
            for key, stored in ep.infos.items():
                assert same_bits(np.asarray(info[key], dtype=stored.dtype), stored[t]), (ep.id, t, key)
    env.close()


def test_recover_environment_gives_the_id_and_kwargs(root):
    _, figures = root
    for env_id, kwargs in ((PUSH, {}), (REACH, REACH_KWARGS)):
        env = minari.load_dataset(figures[env_id]["dataset_id"]).recover_environment()
        assert env.spec.id == env_id
        assert env.spec.kwargs == gym.make(env_id, **kwargs).spec.kwargs
        assert env.unwrapped.terminate_on_success == (env_id == REACH)
        env.close()


def test_same_command_writes_the_same_bits_whatever_the_batch(root):
    _, figures = root
    again = dataset_mod.make_dataset(REACH, "scripted", 3, seed=11, num_envs=1, env_kwargs=REACH_KWARGS,
                                     dataset_id="superdex/reach/again-v0")
    first = minari.load_dataset(figures[REACH]["dataset_id"])
    second = minari.load_dataset(again["dataset_id"])
    for (a, _), (b, _) in zip(episodes_of(first), episodes_of(second), strict=True):
        for key in a.observations:
            assert same_bits(a.observations[key], b.observations[key])
        for key in a.infos:
            assert same_bits(a.infos[key], b.infos[key])
        for field in ("actions", "rewards", "terminations", "truncations"):
            assert same_bits(getattr(a, field), getattr(b, field))


def test_a_model_policy_records_its_deterministic_actions(tmp_path, monkeypatch):
    from stable_baselines3 import PPO

    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "data"))
    model = PPO("MultiInputPolicy", gym.make(REACH), n_steps=8, batch_size=8, seed=0, device="cpu")
    model.save(tmp_path / "model.zip")
    out = dataset_mod.make_dataset(REACH, str(tmp_path / "model.zip"), 2, seed=3, num_envs=2, algo="ppo")
    assert out["dataset_id"] == "superdex/reach/model-v0"
    for ep, _ in episodes_of(minari.load_dataset(out["dataset_id"])):
        for t in (0, len(ep) - 1):
            obs = {k: v[t:t + 1] for k, v in ep.observations.items()}
            assert same_bits(model.predict(obs, deterministic=True)[0][0], ep.actions[t])


@pytest.mark.parametrize("argv, named", [
    (["--env", "SuperDex/Nope-v0", "--policy", "scripted", "--episodes", "1"], "env 'SuperDex/Nope-v0'"),
    (["--env", REACH, "--policy", "scripted", "--episodes", "0"], "episodes must be"),
    (["--env", REACH, "--policy", "scripted", "--episodes", "1", "--seed", "-1"], "seed must be"),
    (["--env", REACH, "--policy", "scripted", "--episodes", "1", "--num-envs", "0"], "num_envs must be"),
    (["--env", REACH, "--policy", "random", "--episodes", "1"], "policy must be 'scripted'"),
    (["--env", REACH, "--policy", "missing/model.zip", "--episodes", "1"], "policy: no model file missing/model.zip"),
    (["--env", REACH, "--policy", "scripted", "--episodes", "1", "--dataset-id", "no version"], "dataset_id"),
    (["--env", REACH, "--policy", "scripted", "--episodes", "1", "--env-kwargs", "{nope"], "--env-kwargs"),
    (["--env", REACH, "--policy", "scripted", "--episodes", "1", "--env-kwargs", '{"nope": 1}'],
     "env_kwargs {'nope': 1}"),
])
def test_bad_arguments_are_named_and_write_nothing(tmp_path, monkeypatch, capsys, argv, named):
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path))
    assert dataset_mod.main(argv) == 2
    assert named in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_an_existing_dataset_is_refused_before_collecting(root, capsys):
    path, figures = root
    before = sorted(p.relative_to(path) for p in path.rglob("*"))
    argv = ["--env", PUSH, "--policy", "scripted", "--episodes", "1", "--output", str(path)]
    assert dataset_mod.main(argv) == 2
    assert f"dataset_id {figures[PUSH]['dataset_id']!r} already exists" in capsys.readouterr().err
    assert sorted(p.relative_to(path) for p in path.rglob("*")) == before


def test_help_names_every_option(capsys):
    with pytest.raises(SystemExit) as exit_:
        dataset_mod.main(["--help"])
    assert exit_.value.code == 0
    text = capsys.readouterr().out
    for option in ("--env", "--policy", "--episodes", "--seed", "--num-envs", "--output", "--dataset-id"):
        assert option in text
