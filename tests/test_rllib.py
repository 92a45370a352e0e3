"""superdex-rllib (issue 19): RLlib PPO over the native batched vector env.

ray[rllib] pins gymnasium 1.2.2, so these run in their own venv (.ci/run: .venv-ci-rllib, ``pytest -m rllib``);
in the main venv they skip (no RLlib: its dm-tree dependency is missing; tests/test_tune.py checks the error
message there). Ray starts in-process
(ray.init(num_cpus=2, include_dashboard=False)) and is shut down after; never `ray stop`. ~40 s here.
"""

import csv
import json
import os

import pytest

pytestmark = pytest.mark.rllib

if os.environ.get("SUPERDEX_REQUIRE_RLLIB"):  # .ci/run's RLlib venv: a broken install fails instead of skipping
    import ray.rllib.algorithms.ppo  # noqa: F401
pytest.importorskip("ray.rllib.algorithms.ppo")
pytest.importorskip("torch")

from superdex_gym.training import rllib as rl  # noqa: E402

# one 50-step episode per world per iteration: 16 worlds x 50 steps
TINY = ["training.train_batch_size_per_learner=800", "training.minibatch_size=400", "training.num_epochs=1",
        "model.fcnet_hiddens=[16, 16]"]


@pytest.fixture(scope="module")
def ray_local():
    import ray

    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


def test_an_iteration_samples_the_native_vector_env(ray_local):
    """0 env runners: the driver's runner steps our RobotTaskVectorEnv (not SyncVectorEnv over single envs), all
    16 worlds, 800 env steps an iteration, and the episode callback logs their success."""
    from superdex_gym.envs.core.vector_env import RobotTaskVectorEnv

    cfg = rl.load_rllib_config("reach_ppo", TINY)
    algo = rl.ppo_config(cfg).build_algo()
    try:
        env = algo.env_runner.env.unwrapped
        assert type(env) is RobotTaskVectorEnv and env.num_envs == 16
        result = algo.train()
    finally:
        algo.stop()
    er = result["env_runners"]
    assert er["num_env_steps_sampled"] == 800 and result["num_env_steps_sampled_lifetime"] == 800
    assert er["num_episodes"] == 16 and er["episode_len_mean"] == 50
    assert 0.0 <= er["success_rate"] <= 1.0  # logged from info["is_success"] of each finished episode
    assert -50.0 <= er["episode_return_mean"] < 0.0  # ReachDense: -distance per step, goals >= 5 cm away


def test_a_remote_runner_iteration_through_the_cli(ray_local, tmp_path):
    """1 remote env runner: it imports superdex_gym through the prefixed id and steps the native vector env; the
    command writes its learning curve and metrics."""
    out = tmp_path / "run"
    argv = ["--config", "reach_ppo", "--num-env-runners", "1", "--total-timesteps", "800", "--output", str(out),
            "-q"]
    for o in TINY:
        argv += ["--set", o]
    assert rl.main(argv) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["env_classes"] == ["superdex_gym.envs.core.vector_env.RobotTaskVectorEnv"]
    assert metrics["num_env_runners"] == 1 and metrics["timesteps"] == 800 and metrics["iterations"] == 1
    with open(out / "learning_curve.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 1 and int(rows[0]["timesteps"]) == 800 and float(rows[0]["env_steps_per_s"]) > 0
    assert (out / "checkpoint").is_dir()
    assert json.loads((out / "config.json").read_text())["env_runners"]["num_env_runners"] == 1


def test_configs_and_bad_input():
    assert {"reach_ppo", "push_ppo"} <= set(rl.available_configs())
    assert rl.load_rllib_config("push_ppo")["env_id"] == "SuperDex/PushDense-v0"
    assert rl.env_name("SuperDex/Reach-v0") == "superdex_gym:SuperDex/Reach-v0"
    with pytest.raises(ValueError, match="unknown section"):
        rl.load_rllib_config("reach_ppo", ["trainig.lr=1"])
    with pytest.raises(FileNotFoundError, match="reach_ppo"):
        rl.load_rllib_config("nope")
    with pytest.raises(ValueError, match="num_env_runners"):
        rl.load_rllib_config("reach_ppo", ["env_runners.num_env_runners=-1"])
