"""What train() offers sweeps (issue 19), useful without Ray too: the evaluation hook, --resume from a run's latest
checkpoint, atomic writes of its CSV / JSON outputs, the replay buffer capped at the run's length.

Runs are tiny (Reach, 8 worlds, [32, 32] net, 1 200 timesteps = 150 batched steps, training from 400) so the
whole file takes well under a minute here.
"""

import json
import pickle
import shutil

import numpy as np
import pytest

pytest.importorskip("stable_baselines3")
torch = pytest.importorskip("torch")

from superdex_gym.training import train as train_mod  # noqa: E402
from superdex_gym.training.run_outputs import atomic_open, atomic_write_text, read_curve, write_curve  # noqa: E402

TINY = ["model.learning_starts=400", "model.policy_kwargs.net_arch=[32, 32]", "model.batch_size=32",
        "model.gradient_steps=1", "train.eval_seed=5000"]
KW = dict(num_envs=8, seed=2, device="cpu", progress_bar=False, checkpoint_freq=400, eval_freq=400,
          eval_episodes=2, video="none", verbose=0)


class Crash(RuntimeError):
    pass


def _crash_at(timesteps, seen):
    def hook(row, save_checkpoint):
        seen.append(row)
        if row["timesteps"] >= timesteps:
            raise Crash(f"injected at {row['timesteps']}")
    return hook


def _params(model):
    return {k: v.clone() for k, v in model.policy.state_dict().items()}


def test_resume_continues_a_crashed_run_from_its_latest_checkpoint(tmp_path):
    """A run that crashes in its evaluation at 800 timesteps (before the 800 checkpoint is written) resumes from
    the 400 one: the checkpoint's replay buffer and evaluations are kept, timesteps / gradient steps / the
    evaluation schedule continue (to the counts of a run that never stopped), and resuming twice from the same
    checkpoint gives the same networks."""
    run = tmp_path / "run"
    seen = []
    with pytest.raises(Crash):
        train_mod.train("reach", output=run, total_timesteps=1200, overrides=TINY, on_evaluation=_crash_at(800, seen),
                        **KW)
    assert [r["timesteps"] for r in seen] == [400, 800]
    ck = run / "checkpoints"
    assert sorted(p.name for p in ck.iterdir()) == ["model_400_steps.json", "model_400_steps.zip",
                                                     "model_replay_buffer_400_steps.pkl",
                                                     "model_vecnormalize_400_steps.pkl"]
    # the run's wall-clock at the checkpoint, written after the 400 evaluation in the same rollout's end
    at_checkpoint = json.loads((ck / "model_400_steps.json").read_text())["wall_time_s"]
    assert at_checkpoint >= seen[0]["wall_time_s"] > 0
    with open(ck / "model_replay_buffer_400_steps.pkl", "rb") as f:
        saved_buffer = pickle.load(f)
    assert saved_buffer.pos == 400 // 8 and saved_buffer.buffer_size == (1200 + 8) // 8  # capped: see below
    twin = tmp_path / "twin"
    shutil.copytree(run, twin)

    result = train_mod.train(resume=run, **{k: v for k, v in KW.items() if k != "seed"})
    m = result.metrics
    assert m["timesteps"] == 1200 and m["resumed_from_timesteps"] == 400
    assert [r["timesteps"] for r in result.curve] == [400, 800, 1200]
    # the resumed leg's evaluations count the run's wall-clock on from the checkpoint's, not from 0
    assert result.curve[1]["wall_time_s"] > at_checkpoint and result.curve[2]["wall_time_s"] > \
        result.curve[1]["wall_time_s"]
    assert m["run_wall_time_s"] == pytest.approx(at_checkpoint + m["wall_time_s"], abs=2e-3)
    assert result.curve[0] == seen[0]  # the checkpoint's evaluation, read back from its learning_curve.csv
    assert read_curve(run / "learning_curve.csv") == result.curve
    model = result.model
    assert model._n_updates == (1200 - 400) // 8  # 1 gradient step per batched step after learning_starts
    rb = model.replay_buffer
    assert rb.pos == 1200 // 8
    for key in rb.observations:  # the checkpoint's transitions are the start of the resumed buffer
        np.testing.assert_array_equal(rb.observations[key][:50], saved_buffer.observations[key][:50])
    np.testing.assert_array_equal(rb.actions[:50], saved_buffer.actions[:50])
    assert not np.array_equal(rb.actions[50:100], saved_buffer.actions[50:100])  # and it went on writing
    assert sorted(p.name for p in ck.glob("model_*_steps.zip")) == ["model_1200_steps.zip", "model_400_steps.zip",
                                                                    "model_800_steps.zip"]
    assert [p.name for p in ck.glob("model_replay_buffer_*")] == ["model_replay_buffer_1200_steps.pkl"]

    again = train_mod.train(resume=twin, **{k: v for k, v in KW.items() if k != "seed"})
    a, b = _params(model), _params(again.model)
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    assert again.curve == [{**r, "wall_time_s": s["wall_time_s"]} for r, s in zip(result.curve, again.curve)]


def test_resume_refuses_bad_input_and_leaves_the_run_as_it_was(tmp_path):
    run = tmp_path / "run"
    train_mod.train("reach", output=run, total_timesteps=400, overrides=TINY, **{**KW, "checkpoint_freq": 0})
    before = {p: p.read_bytes() for p in sorted(run.rglob("*")) if p.is_file()}
    with pytest.raises(FileNotFoundError, match="checkpoint_freq"):
        train_mod.train(resume=run, verbose=0)
    with pytest.raises(ValueError, match="config"):
        train_mod.train("reach", resume=run, verbose=0)
    with pytest.raises(FileNotFoundError, match="not a run directory"):
        train_mod.train(resume=tmp_path / "nowhere", verbose=0)
    assert train_mod.main(["--resume", str(run), "-q"]) == 2
    assert {p: p.read_bytes() for p in sorted(run.rglob("*")) if p.is_file()} == before


def test_evaluation_hook_reports_every_evaluation_and_saves_resumable_checkpoints(tmp_path):
    """on_evaluation(row, save_checkpoint) gets each learning-curve row; save_checkpoint(dir) writes a run that
    --resume continues."""
    seen, saved = [], []

    def hook(row, save_checkpoint):
        seen.append(row)
        saved.append(save_checkpoint(tmp_path / f"ck{row['timesteps']}"))

    result = train_mod.train("reach", output=tmp_path / "run", total_timesteps=800, overrides=TINY,
                             on_evaluation=hook, **{**KW, "checkpoint_freq": 0})
    assert [r["timesteps"] for r in seen] == [400, 800] and seen == result.curve
    assert not (tmp_path / "run" / "checkpoints").exists()
    assert read_curve(saved[0] / "learning_curve.csv") == seen[:1]
    cfg = json.loads((saved[0] / "config.json").read_text())
    assert cfg["env_id"] == "SuperDex/Reach-v0" and cfg["train"]["total_timesteps"] == 800
    resumed = train_mod.train(resume=saved[0], output=tmp_path / "resumed", total_timesteps=1200,
                              **{k: v for k, v in KW.items() if k != "seed"})
    assert resumed.metrics["resumed_from_timesteps"] == 400 and resumed.metrics["timesteps"] == 1200
    assert [r["timesteps"] for r in resumed.curve] == [400, 800, 1200]
    with pytest.raises(ValueError, match="on_evaluation"):
        train_mod.train("reach", output=tmp_path / "x", on_evaluation="print", verbose=0)


def test_replay_buffer_is_capped_at_the_run_length():
    cfg = train_mod.resolve("reach", total_timesteps=2000, num_envs=8)
    assert cfg["model"]["buffer_size"] == 2008 and any("buffer_size capped" in n for n in cfg["notes"])
    cfg = train_mod.resolve("reach", total_timesteps=2000, num_envs=8, overrides=["model.buffer_size=1000"])
    assert cfg["model"]["buffer_size"] == 1000 and not any("buffer_size" in n for n in cfg.get("notes", []))


def test_atomic_writes_never_leave_a_partial_file(tmp_path):
    path = tmp_path / "learning_curve.csv"
    rows = [{"timesteps": 8, "success_rate": 0.5, "mean_return": -3.0, "mean_final_distance": 0.01,
             "wall_time_s": 1.0}]
    write_curve(path, rows)
    old = path.read_bytes()
    with pytest.raises(ValueError):  # an unknown column: csv raises in the middle of writing
        write_curve(path, rows + [{**rows[0], "extra": 1}])
    with pytest.raises(KeyboardInterrupt):
        with atomic_open(path, "w") as f:
            f.write("timesteps,succ")
            raise KeyboardInterrupt
    assert path.read_bytes() == old and read_curve(path) == rows
    assert sorted(p.name for p in tmp_path.iterdir()) == ["learning_curve.csv"]  # no temporary file left
    atomic_write_text(tmp_path / "m.json", "{}\n")
    assert (tmp_path / "m.json").read_text() == "{}\n"
