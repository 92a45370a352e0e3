"""The main job: every registered SuperDex task, its scripted policy acting on a batch of worlds, and a GIF of each.

    python -m superdex_gym            # or: superdex-gym
    python -m superdex_gym --num-envs 64 --output my_tour

For each task (`superdex_gym.suite.task_ids`: the registered ids, dense-reward variants left out) it runs one
seeded episode per world on the native vector env (``gym.make_vec``: all worlds in one engine scene), prints the
success rate and the env steps per second, and writes ``<task>.gif``: the first ``--gif-worlds`` worlds of the same
batch (world i replays seed SEED + i), tiled. Then it prints the command that trains a policy.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import gymnasium as gym
import numpy as np

from .suite import scripted_policy, task_ids
from .training.rollout import run_batched_episodes, write_video

DEFAULT_OUTPUT = "superdex_gym_tour"
TRAIN_COMMAND = "superdex-train --config reach"
TRAIN_NOTE = ("SAC + HER on Reach-v0, 20 000 timesteps; writes runs/reach-s0/: model, learning-curve PNG, "
              "evaluation GIF; needs the train extra")


def task_name(env_id: str) -> str:
    """``SuperDex/Push-v0`` -> ``Push``."""
    return env_id.split("/")[-1].split("-")[0]


@dataclass
class TaskResult:
    env_id: str
    episodes: int
    successes: int
    mean_final_distance_m: float
    env_steps: int
    seconds: float
    gif: Path | None
    warmup_s: float = 0.0  # the untimed first step: JIT compile (a cold numba cache) and first-call costs

    @property
    def task(self) -> str:
        return task_name(self.env_id)

    @property
    def success_rate(self) -> float:
        return self.successes / self.episodes

    @property
    def env_steps_per_s(self) -> float:
        return self.env_steps / self.seconds


class _Ticking:
    """A policy that advances a progress bar each time it acts (once per batched step)."""

    def __init__(self, policy, bar):
        self.policy, self.bar = policy, bar

    def __call__(self, obs):
        self.bar.update(1)
        return self.policy(obs)


def tile(frames, columns: int) -> np.ndarray:
    """Equal-sized (H, W, 3) frames as one image, ``columns`` per row (black where a row is short)."""
    frames = [np.asarray(f) for f in frames]
    rows = math.ceil(len(frames) / columns)
    h, w, c = frames[0].shape
    grid = np.zeros((rows * h, columns * w, c), dtype=np.uint8)
    for k, f in enumerate(frames):
        r, q = divmod(k, columns)
        grid[r * h:(r + 1) * h, q * w:(q + 1) * w] = f
    return grid


def record_gif(env_id: str, path: Path, worlds: int, seed: int, frame_px: int, bar) -> Path:
    """One episode of the first ``worlds`` worlds (seeds seed .. seed + worlds - 1), rendered and tiled."""
    venv = gym.make_vec(env_id, num_envs=worlds, vectorization_mode="vector_entry_point", render_mode="rgb_array",
                        render_width=frame_px, render_height=frame_px)
    policy = scripted_policy(env_id)
    columns = math.ceil(math.sqrt(worlds))
    try:
        obs, _ = venv.reset(seed=seed)
        frames = [tile(venv.render(), columns)]
        for _ in range(venv.max_episode_steps):
            obs, _, terminated, truncated, _ = venv.step(policy(obs))
            frames.append(tile(venv.render(), columns))
            bar.update(1)
            if np.all(terminated | truncated):
                break
        fps = int(venv.metadata.get("render_fps", 25))
    finally:
        venv.close()
    return write_video(path, frames, fps)


def run_task(env_id: str, num_envs: int, seed: int, output: Path | None, gif_worlds: int, frame_px: int,
             progress: bool) -> TaskResult:
    """The scripted policy on ``num_envs`` worlds (one seeded episode each), timed; then the GIF."""
    from tqdm import tqdm

    venv = gym.make_vec(env_id, num_envs=num_envs, vectorization_mode="vector_entry_point")
    steps = int(venv.max_episode_steps)
    total = steps + (steps if output is not None and gif_worlds > 0 else 0)
    with tqdm(total=total, desc=f"{env_id:24s}", unit="step", leave=False, disable=not progress,
              file=sys.stderr) as bar:
        try:
            # one untimed step builds the scene's caches and compiles the kernels (seconds on a cold numba cache);
            # the timed episodes reset from their seeds, so they are the same without it
            obs, _ = venv.reset(seed=seed)
            t0 = time.perf_counter()
            venv.step(scripted_policy(env_id)(obs))
            warmup = time.perf_counter() - t0
            t0 = time.perf_counter()
            rollouts = run_batched_episodes(venv, _Ticking(scripted_policy(env_id), bar), num_envs, seed)
            seconds = time.perf_counter() - t0
        finally:
            venv.close()
        gif = None
        if total > steps:
            gif = record_gif(env_id, output / f"{task_name(env_id).lower()}.gif", gif_worlds, seed, frame_px, bar)
    eps = rollouts.episodes
    return TaskResult(env_id, len(eps), sum(e.success for e in eps), float(np.mean([e.final_distance for e in eps])),
                      sum(e.length for e in eps), seconds, gif, warmup)


def format_table(results: list[TaskResult]) -> str:
    header = ("id", "task", "success rate", "mean final distance", "env steps/s", "first step", "GIF")
    rows = [(r.env_id, r.task, f"{r.success_rate:.2f} ({r.successes}/{r.episodes})",
             f"{1000 * r.mean_final_distance_m:.3g} mm", f"{r.env_steps_per_s:,.0f}", f"{1000 * r.warmup_s:.3g} ms",
             "-" if r.gif is None else str(r.gif)) for r in results]
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    lines = ["  ".join(str(x).ljust(w) for x, w in zip(line, widths)).rstrip() for line in (header, *rows)]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="superdex-gym", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--num-envs", type=int, default=32, help="worlds per task, stepped together; one episode each")
    p.add_argument("--seed", type=int, default=0, help="world i is reset with seed SEED + i")
    p.add_argument("--output", default=DEFAULT_OUTPUT, help="folder for the GIFs")
    p.add_argument("--gif-worlds", type=int, default=4, help="worlds shown in each GIF, tiled (0: no GIFs)")
    p.add_argument("--frame-px", type=int, default=240, help="width and height of one world's frame in the GIF")
    p.add_argument("--only", default=None, help="only the ids containing this text")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    return p


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    for name in ("num_envs", "frame_px"):
        if getattr(args, name) < 1:
            print(f"error: --{name.replace('_', '-')} must be >= 1", file=sys.stderr)
            return 2
    if not 0 <= args.gif_worlds <= args.num_envs:
        print(f"error: --gif-worlds must be in [0, --num-envs = {args.num_envs}]", file=sys.stderr)
        return 2
    ids = [i for i in task_ids() if args.only is None or args.only in i]
    if not ids:
        print(f"error: no registered task id contains {args.only!r}; there are {task_ids()}", file=sys.stderr)
        return 2
    output = Path(args.output) if args.gif_worlds > 0 else None
    print(f"SuperDex Gym: {len(ids)} tasks, each task's scripted policy on {args.num_envs} worlds stepped together "
          f"(seeds {args.seed}..{args.seed + args.num_envs - 1}), one episode per world", flush=True)
    results = [run_task(env_id, args.num_envs, args.seed, output, args.gif_worlds, args.frame_px,
                        not args.no_progress) for env_id in ids]
    print(format_table(results))
    print("success: info['is_success'] at the episode's last step (achieved goal within the task's distance threshold "
          "of the desired goal); env steps/s: worlds x steps / wall time after one warm-up step, scripted policy included; "
          "first step: that warm-up step (JIT compile on a cold cache)")
    if output is not None:
        print(f"GIFs ({args.gif_worlds} worlds per task, seeds {args.seed}..{args.seed + args.gif_worlds - 1}): "
              f"{output.resolve()}")
    print(f"\nTrain a policy ({TRAIN_NOTE}):\n  {TRAIN_COMMAND}")
    return 0
