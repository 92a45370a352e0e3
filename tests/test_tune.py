"""superdex-tune (issue 19): a Ray Tune sweep of two tiny Reach trials, one crashing once and resumed from its last
checkpoint by Tune's FailureConfig, then aggregated into summary.csv / summary.md / a plot.

Ray starts in-process (ray.init(num_cpus=2, include_dashboard=False)) and is shut down after; never `ray stop`,
which kills every Ray process on the host by name. ~40 s here, most of it Ray starting its workers.
"""

import csv
import json
import sys

import pytest

pytest.importorskip("stable_baselines3")
pytest.importorskip("ray.tune")

from superdex_gym.training import tune as sweep  # noqa: E402
from superdex_gym.training.run_outputs import read_curve  # noqa: E402

TINY = ["model.learning_starts=400", "model.policy_kwargs.net_arch=[32, 32]", "model.batch_size=32",
        "model.gradient_steps=1"]


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    import ray

    out = tmp_path_factory.mktemp("tune")
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        summary = sweep.run_sweep(["reach"], [0, 1], overrides=TINY, output=out, name="tiny", total_timesteps=1200,
                                  num_envs=8, eval_freq=400, eval_episodes=2, checkpoint_freq=0, max_failures=1,
                                  inject_failure=(1, 800), verbose=0)
        (summary["dir"] / "summary.md").unlink()
        # --restore of a finished sweep: nothing left to run, the same results summarized again
        summary["restored"] = sweep.run_sweep(restore=summary["dir"], verbose=0)
    finally:
        ray.shutdown()
    return summary


def test_sweep_runs_every_seed_and_resumes_the_crashed_trial(swept):
    results = swept["results"]
    assert len(results) == 2 and results.errors == []
    by_seed = {r.config["seed"]: r for r in results}
    assert sorted(by_seed) == [0, 1]
    for seed, r in by_seed.items():
        assert r.metrics["timesteps"] == 1200 and 0.0 <= r.metrics["success_rate"] <= 1.0
        assert r.checkpoint is not None
        with r.checkpoint.as_directory() as d:  # a Tune checkpoint is a run train --resume continues
            assert [row["timesteps"] for row in read_curve(f"{d}/learning_curve.csv")] == [400, 800, 1200]
            assert json.loads(open(f"{d}/config.json").read())["train"]["seed"] == seed
    # seed 1 crashed at its 800 evaluation (before that checkpoint) and went on from the 400 one
    assert by_seed[1].metrics["resumed_from_timesteps"] == 400
    assert by_seed[0].metrics["resumed_from_timesteps"] == 0
    reported = by_seed[1].metrics_dataframe
    rows = [(int(t), int(r)) for t, r in zip(reported["timesteps"], reported["resumed_from_timesteps"])]
    # 800 and 1200 reported once each, after the restart from 400. The 400 row is missing from Ray's log in some
    # runs (3 of 5 suite runs once Reach's steps got faster, never alone; most likely the crash reaching Ray's
    # controller before that result did); the checkpoint's own curve above holds it in every run.
    assert rows[-2:] == [(800, 400), (1200, 400)]
    assert rows[:-2] in ([], [(400, 0)])


def test_sweep_writes_the_aggregated_table_and_plot(swept):
    d = swept["dir"]
    with open(d / "summary.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [(r["config"], int(r["timesteps"]), int(r["seeds"])) for r in rows] == \
        [("reach", 400, 2), ("reach", 800, 2), ("reach", 1200, 2)]
    curves = {seed: rows_ for _, seed, rows_ in swept["curves"]}
    for r in rows:  # the aggregate is the mean / population std of the seeds' reported success rates
        t = int(r["timesteps"])
        s = [next(x["success_rate"] for x in curves[seed] if x["timesteps"] == t) for seed in (0, 1)]
        assert float(r["success_mean"]) == pytest.approx(sum(s) / 2, abs=1e-4)
        assert float(r["success_std"]) == pytest.approx(abs(s[0] - s[1]) / 2, abs=1e-4)
        assert float(r["success_min"]) == min(s) and float(r["success_max"]) == max(s)
        w = [next(x["wall_time_s"] for x in curves[seed] if x["timesteps"] == t) for seed in (0, 1)]
        assert all(x > 0 for x in w) and float(r["wall_time_s_mean"]) == pytest.approx(sum(w) / 2, abs=1e-4)
    assert swept["restored"]["rows"] == swept["rows"] and swept["restored"]["dir"] == d
    md = (d / "summary.md").read_text()
    assert md.startswith("| config | seeds | timesteps | wall-clock (s) |") and "| reach | 2 | 1200 | " in md
    from PIL import Image

    with Image.open(d / "reach.png") as im:
        assert im.format == "PNG" and im.size[0] > 300


def test_bad_sweep_arguments_fail_before_ray_starts(tmp_path, monkeypatch):
    with pytest.raises(ValueError, match="seeds must be distinct"):
        sweep.run_sweep(["reach"], [1, 1], output=tmp_path)
    with pytest.raises(FileNotFoundError, match="no_such"):
        sweep.run_sweep(["no_such"], [0], output=tmp_path)
    with pytest.raises(ValueError, match="unknown section"):
        sweep.run_sweep(["reach"], [0], grid={"modle.batch_size": [1, 2]}, output=tmp_path)
    with pytest.raises(ValueError, match="non-empty list"):
        sweep.parse_grid(["model.learning_rate=1e-3"])
    assert sweep.parse_grid(["model.learning_rate=[1e-3, 3e-4]"]) == {"model.learning_rate": [1e-3, 3e-4]}
    assert sweep.label_of("reach", {"model.batch_size": 64}) == "reach model.batch_size=64"
    with pytest.raises(FileNotFoundError, match="not a Tune sweep"):
        sweep.run_sweep(restore=tmp_path / "nowhere")
    assert list(tmp_path.iterdir()) == []
    monkeypatch.setitem(sys.modules, "ray", None)  # as if Ray were not installed
    with pytest.raises(ModuleNotFoundError, match=r"superdex-gym\[tune\]"):
        sweep.run_sweep(["reach"], [0], output=tmp_path)
    assert sweep.main(["--config", "reach", "--seeds", "0", "--output", str(tmp_path)]) == 2


def test_rllib_without_rllib_names_the_extra(monkeypatch, capsys):
    from superdex_gym.training import rllib

    monkeypatch.setitem(sys.modules, "ray.rllib.algorithms.ppo", None)  # as in the main venv: RLlib not importable
    assert rllib.main(["--total-timesteps", "16", "--output", "unused"]) == 2
    assert "superdex-gym[rllib]" in capsys.readouterr().err and "gymnasium 1.2.2" in rllib.RLLIB_EXTRA


def test_ray_session_starts_a_fresh_local_ray_unless_given_an_address(monkeypatch):
    """Without an address it asks for address="local": a plain ray.init() joins the cluster that a past `ray start`
    recorded in /tmp/ray/ray_current_cluster, even a dead one (met here: "When connecting to an existing cluster,
    num_cpus and num_gpus must not be provided"). Only a Ray it started is shut down."""
    from superdex_gym.training.ray_session import ray_session

    class FakeRay:
        def __init__(self, up=False):
            self.up, self.calls = up, []

        def is_initialized(self):
            return self.up

        def init(self, **kwargs):
            self.calls.append(("init", kwargs))

        def shutdown(self):
            self.calls.append(("shutdown", {}))

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    fake = FakeRay()
    with ray_session(fake, num_cpus=2):
        pass
    assert fake.calls == [("init", {"address": "local", "num_cpus": 2, "include_dashboard": False,
                                    "log_to_driver": False}), ("shutdown", {})]
    monkeypatch.setenv("RAY_ADDRESS", "head:6379")
    fake = FakeRay()
    with ray_session(fake):
        pass
    assert fake.calls == [("init", {"address": "head:6379"}), ("shutdown", {})]
    fake = FakeRay(up=True)  # a test's or a notebook's Ray: used, left running
    with ray_session(fake, address="elsewhere:1"):
        pass
    assert fake.calls == []
