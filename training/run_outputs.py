"""What a training run writes besides the model: the learning curve (CSV, PNG), a video of one episode of the final
model, and the closing list of the files written."""

from __future__ import annotations

import contextlib
import csv
import fnmatch
import io
import os
import tempfile
from pathlib import Path

import gymnasium as gym

from .rollout import ModelPolicy, run_rendered_episode, write_video

CURVE_FIELDS = ("timesteps", "success_rate", "mean_return", "mean_final_distance", "wall_time_s")


@contextlib.contextmanager
def atomic_open(path: str | Path, mode: str = "w", **kwargs):
    """A file to write ``path`` through: a temporary file in the same folder, flushed, synced and renamed over
    ``path`` (``os.replace``) when the block ends without an error, deleted when it raises. A reader (a sweep's
    aggregator, a plotting script) sees the old file or the new one, never a partial one."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, mode, **kwargs) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def atomic_write_text(path: str | Path, text: str) -> None:
    with atomic_open(path, "w") as f:
        f.write(text)


def read_curve(path: Path) -> list[dict]:
    """The rows of a learning-curve CSV, typed as ``write_curve`` wrote them ([] when there is no file)."""
    path = Path(path)
    if not path.is_file():
        return []
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    return [{k: (int(r[k]) if k == "timesteps" else float(r[k])) for k in CURVE_FIELDS} for r in rows]


def write_curve(path: Path, rows: list[dict], fields=CURVE_FIELDS) -> None:
    buf = io.StringIO(newline="")
    w = csv.DictWriter(buf, fieldnames=fields)
    w.writeheader()
    w.writerows(rows)
    with atomic_open(path, "w", newline="") as f:
        f.write(buf.getvalue())


def record_episode(model, cfg: dict, path: Path, size_px: int = 320) -> dict:
    """One episode of the deterministic model (seed ``train.eval_seed``, the first evaluation episode), rendered
    to a GIF or MP4; its seed, return, success and final distance."""
    env = gym.make(cfg["env_id"], render_mode="rgb_array", render_width=size_px, render_height=size_px,
                   **cfg["env"])
    try:
        policy = ModelPolicy(model, deterministic=True, normalizer=model.get_vec_normalize_env())
        stats, frames = run_rendered_episode(env, policy, int(cfg["train"]["eval_seed"]))
        fps = int(env.metadata.get("render_fps", 25))
    finally:
        env.close()
    return {"path": write_video(path, frames, fps), **stats.as_dict()}


def remove_if_empty(folder: Path) -> None:
    if folder.is_dir() and not any(folder.iterdir()):
        folder.rmdir()


# what each file of a run is (fnmatch patterns, relative to the run directory; first match wins)
OUTPUT_DESCRIPTIONS = (
    ("model.zip", "the final model (superdex-evaluate OUTPUT/model.zip)"),
    ("model_vecnormalize.pkl", "its observation-normalization statistics"),
    ("best_model.zip", "the model at the best periodic evaluation"),
    ("best_model_vecnormalize.pkl", "its observation-normalization statistics"),
    ("config.json", "the resolved config (trains again as --config OUTPUT/config.json)"),
    ("metrics.json", "timesteps, wall time, final / best success rate, versions"),
    ("learning_curve.csv", "success rate, mean return, final distance per evaluation"),
    ("learning_curve.png", "the learning curve, plotted"),
    ("eval_episode.*", "one episode of the final model (seed train.eval_seed)"),
    ("progress.csv", "SB3's logger: losses, entropy coefficient, rollout success rate"),
    ("checkpoints/*.zip", "a checkpoint"),
    ("checkpoints/*_replay_buffer_*.pkl", "the latest checkpoint's replay buffer (superdex-train --resume)"),
    ("checkpoints/*.pkl", "a checkpoint's normalization statistics"),
)


def written_since(out: Path, since: float) -> list[Path]:
    """The files under ``out`` written at or after ``since`` (a reused run directory keeps older files)."""
    return sorted(p.relative_to(out) for p in out.rglob("*") if p.is_file() and p.stat().st_mtime >= since)


def format_outputs(out: Path, files: list[Path], png_skipped: str | None) -> str:
    width = max((len(str(f)) for f in files), default=0)
    lines = [f"wrote {len(files)} files in {out}/:"]
    for f in files:
        what = next((d for pattern, d in OUTPUT_DESCRIPTIONS if fnmatch.fnmatch(f.as_posix(), pattern)), "")
        lines.append(f"  {str(f):{width}s}  {what.replace('OUTPUT', str(out))}".rstrip())
    if png_skipped:
        lines.append(f"  (no learning_curve.png: {png_skipped})")
    return "\n".join(lines)


def plot_curve(csv_rows: list[dict], path: Path, title: str) -> Path | None:
    """A PNG of success rate and mean return against timesteps, when matplotlib is installed."""
    if not csv_rows:
        return None
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    t = [r["timesteps"] for r in csv_rows]
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 3.6))
    a.plot(t, [r["success_rate"] for r in csv_rows], marker="o")
    a.set(xlabel="timesteps", ylabel="success rate", ylim=(-0.02, 1.02), title=title)
    b.plot(t, [r["mean_return"] for r in csv_rows], marker="o", color="tab:orange")
    b.set(xlabel="timesteps", ylabel="mean return", title="mean episode return")
    for ax in (a, b):
        ax.grid(alpha=0.3)
    fig.tight_layout()
    with atomic_open(path, "wb") as f:
        fig.savefig(f, dpi=120, format="png")
    plt.close(fig)
    return path
