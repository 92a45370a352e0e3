"""Multi-seed sweeps of ``train`` on Ray Tune: configs x seeds (x a hyperparameter grid) as Tune trials.

    superdex-tune --config reach --seeds 0 1 2 3 4 --total-timesteps 4000 --output runs/tune --name reach5
    superdex-tune --config push --config push_dense --num-seeds 3 --grid model.learning_rate=[1e-3,3e-4]
    RAY_ADDRESS=head:6379 superdex-tune ...        # or --address head:6379: the same command on a cluster

Each trial is one ``train()`` run (1 CPU by default, ``--cpus-per-trial``). After every evaluation it reports the
learning-curve row (timesteps, success_rate, mean_return, mean_final_distance, wall_time_s) to Tune with a
checkpoint (the model, its normalization statistics, the replay buffer and the curve so far: a run directory
``train --resume`` continues). A trial that crashes is restarted from its last checkpoint up to ``--max-failures`` times (Tune's
``FailureConfig``). ``--restore DIR`` continues an interrupted sweep (Tune's ``Tuner.restore``, errored trials
resumed from their checkpoints).

When the trials end, OUTPUT/NAME/ holds Tune's own files (one folder per trial) and:

    summary.csv        per config and timesteps: seeds, success mean / std / min / max, return mean / std,
                       wall-clock seconds to it mean / std
    summary.md         the same at each config's last evaluation, as a markdown table
    <config>.png       success rate mean +- std (band) and each seed's, against wall-clock and against timesteps

Ray is imported only here and only when a sweep runs (``pip install 'superdex-gym[tune]'``). Locally the sweep
starts Ray in-process (``ray.init``, ``--num-cpus``); with ``--address`` or ``RAY_ADDRESS`` it joins a running
cluster. A head started with login tokens (it has ``~/.ray/auth_token``) needs ``RAY_AUTH_MODE=token`` in the
client's environment. Never stop a shared Ray with ``ray stop``: it kills every Ray process on the host by name.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import re
import shutil
import sys
import tempfile
from pathlib import Path

from .config import available_configs, cli_exit_code, parse_value
from .ray_session import ray_session
from .run_outputs import atomic_open, atomic_write_text, read_curve

TUNE_EXTRA = "pip install 'superdex-gym[tune]' (ray[tune]==2.60.0)"
REPORTED = ("timesteps", "success_rate", "mean_return", "mean_final_distance", "wall_time_s")


class InjectedFailure(RuntimeError):
    """Raised by a trial told to fail (``inject_failure``): drills Tune's restart from a checkpoint."""


def import_tune():
    """``(ray, ray.tune)``, or an error naming the extra to install."""
    try:
        import ray
        from ray import tune
    except ModuleNotFoundError as e:
        raise ModuleNotFoundError(f"superdex-tune needs Ray Tune ({e}); {TUNE_EXTRA}") from e
    return ray, tune


# --- the trainable ------------------------------------------------------------------------------------------------
def train_trial(trial: dict) -> None:
    """Tune function trainable: one ``train()`` run of ``trial["config"]`` with ``trial["seed"]`` and
    ``trial["overrides"]``, reporting every evaluation with a resumable checkpoint; restored from the latest
    checkpoint when Tune restarts it."""
    _, tune = import_tune()
    from .train import train

    checkpoint = tune.get_checkpoint()
    out = Path(tune.get_context().get_trial_dir()) / "run"
    fail = trial.get("inject_failure")
    resumed = None

    def report(row, save_checkpoint):
        if fail is not None and resumed is None and row["timesteps"] >= fail:
            raise InjectedFailure(f"injected failure at {row['timesteps']} timesteps (seed {trial['seed']})")
        with tempfile.TemporaryDirectory(prefix="superdex-ckpt-") as d:
            save_checkpoint(d)
            metrics = {k: row[k] for k in REPORTED}
            metrics["resumed_from_timesteps"] = resumed or 0
            tune.report(metrics, checkpoint=tune.Checkpoint.from_directory(d))

    kwargs = dict(output=out, overrides=[f"{k}={json.dumps(v)}" for k, v in trial["overrides"].items()],
                  on_evaluation=report, progress_bar=False, video="none", verbose=0, **trial["train_kwargs"])
    if checkpoint is None:
        train(trial["config"], seed=int(trial["seed"]), **kwargs)
        return
    with checkpoint.as_directory() as d:
        local = out.parent / "restored"  # the checkpoint may be a remote copy: resume from a local one
        shutil.rmtree(local, ignore_errors=True)
        shutil.copytree(d, local)
    from .train import latest_checkpoint

    resumed = latest_checkpoint(local)[0]
    train(resume=local, **kwargs)


# --- the sweep ----------------------------------------------------------------------------------------------------
def parse_grid(items) -> dict:
    """``["model.learning_rate=[1e-3, 3e-4]", ...]`` -> ``{"model.learning_rate": [1e-3, 3e-4]}``."""
    grid = {}
    for item in items or ():
        if "=" not in item:
            raise ValueError(f"grid: {item!r} is not KEY=[v1, v2, ...]")
        key, text = item.split("=", 1)
        values = parse_value(text.strip())
        if not isinstance(values, list) or not values:
            raise ValueError(f"grid: {item!r}: the value must be a non-empty list, e.g. {key}=[1e-3, 3e-4]")
        grid[key.strip()] = values
    return grid


def grid_points(grid: dict) -> list[dict]:
    points = [{}]
    for key, values in grid.items():
        points = [{**p, key: v} for p in points for v in values]
    return points


def label_of(config: str, point: dict) -> str:
    name = Path(config).stem if str(config).endswith((".toml", ".json")) else str(config)
    return " ".join([name] + [f"{k}={json.dumps(v)}" for k, v in point.items()])


def file_label(label: str) -> str:
    return re.sub(r"[^A-Za-z0-9._=-]+", "_", label).strip("_")


def _param_space(configs, seeds, grid, overrides, cpus_per_trial, max_failures, train_kwargs) -> dict:
    """The trials' labels, seeds and settings, validated before Ray starts (unknown config, bad override or grid
    key, repeated seeds)."""
    from .config import load_config

    configs, seeds = [str(c) for c in configs], [int(s) for s in seeds]
    if not configs or not seeds:
        raise ValueError(f"need at least one config and one seed, got configs={configs} seeds={seeds}")
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"seeds must be distinct, got {seeds}")
    if cpus_per_trial <= 0 or max_failures < 0:
        raise ValueError(f"need cpus_per_trial > 0 and max_failures >= 0, got {cpus_per_trial}, {max_failures}")
    base = [o if isinstance(o, str) else f"{o[0]}={json.dumps(o[1])}" for o in overrides]
    trials = []
    for c in configs:
        for p in grid_points(dict(grid or {})):
            load_config(c, base + [f"{k}={json.dumps(v)}" for k, v in p.items()])
            ov = {o.split("=", 1)[0]: parse_value(o.split("=", 1)[1]) for o in base}
            ov.update(p)
            trials.append({"config": c, "label": label_of(c, p), "overrides": ov, "train_kwargs": train_kwargs})
    if len({t["label"] for t in trials}) != len(trials):
        raise ValueError(f"configs must be distinct, got {configs}")
    # grid-searched: the labels, so Tune's progress table shows them rather than whole trial dicts
    return {"label": [t["label"] for t in trials], "seed": seeds, "trials": {t["label"]: t for t in trials}}


def run_sweep(configs=("reach",), seeds=(0,), *, grid=None, overrides=(), output="runs/tune", name="sweep",
              cpus_per_trial: float = 1.0, max_failures: int = 2, address: str | None = None,
              num_cpus: int | None = None, restore: str | Path | None = None, inject_failure=None,
              verbose: int = 1, **train_kwargs) -> dict:
    """Run the sweep (see the module doc) and write its summary; returns ``{"rows", "final", "dir", "results"}``.

    ``overrides``: ``section.key=value`` strings for every trial; ``grid``: ``{"section.key": [values]}``, one
    trial per combination, config and seed; ``train_kwargs``: ``train()`` keywords (total_timesteps, num_envs,
    eval_freq, eval_episodes, checkpoint_freq, device). ``inject_failure=(seed, timesteps)``: the trials of that
    seed raise once at that evaluation, before its checkpoint (tests Tune's restart)."""
    if restore is not None:
        restore = Path(restore).resolve()
        ray, tune = import_tune()
        if not tune.Tuner.can_restore(str(restore)):
            raise FileNotFoundError(f"restore: {restore} is not a Tune sweep folder (OUTPUT/NAME of a sweep)")
    else:
        space = _param_space(configs, seeds, grid, overrides, cpus_per_trial, max_failures, train_kwargs)
        ray, tune = import_tune()
        space = {k: (tune.grid_search(v) if k in ("label", "seed") else v) for k, v in space.items()}
    storage = Path(output).resolve()
    with ray_session(ray, address, num_cpus, log_to_driver=verbose >= 2):
        trainable = tune.with_resources(_trial_entry, {"cpu": float(cpus_per_trial)})
        if restore is not None:
            tuner = tune.Tuner.restore(str(restore), trainable, resume_errored=True)
        else:
            run_config = tune.RunConfig(
                name=name, storage_path=str(storage), verbose=min(int(verbose), 1),
                failure_config=tune.FailureConfig(max_failures=int(max_failures)),
                checkpoint_config=tune.CheckpointConfig(num_to_keep=2))
            tuner = tune.Tuner(trainable, param_space={**space, "inject_failure": inject_failure},
                               run_config=run_config)
        results = tuner.fit()
    sweep_dir = Path(results.experiment_path) if restore is None else restore
    summary = summarize(results, sweep_dir)
    if verbose:
        print(format_final(summary["final"]))
        print(f"wrote {sweep_dir}/summary.csv, summary.md and one plot per config")
    return {**summary, "dir": sweep_dir, "results": results}


def _trial_entry(space: dict) -> None:
    trial = dict(space["trials"][space["label"]])
    trial["seed"] = space["seed"]
    inject = space.get("inject_failure")
    if inject is not None and int(inject[0]) == int(space["seed"]):
        trial["inject_failure"] = int(inject[1])
    train_trial(trial)


# --- the summary --------------------------------------------------------------------------------------------------
SUMMARY_FIELDS = ("config", "timesteps", "seeds", "success_mean", "success_std", "success_min", "success_max",
                  "return_mean", "return_std", "wall_time_s_mean", "wall_time_s_std")


def curves_of(results) -> list[tuple[str, int, list[dict]]]:
    """(label, seed, learning curve) per trial: its latest checkpoint's curve, which holds every evaluation of the
    run (a restarted trial's too), with the rows it reported to Ray for any later timesteps (a restarted trial
    reports some timesteps twice: the latest report wins). Ray's own log alone can miss a row reported just
    before a crash."""
    out = []
    for r in results:
        df = r.metrics_dataframe
        if r.config is None:
            continue
        by_t = {}
        if r.checkpoint is not None:
            with r.checkpoint.as_directory() as d:
                for row in read_curve(Path(d) / "learning_curve.csv"):
                    by_t[row["timesteps"]] = {k: row[k] for k in REPORTED}
        if df is not None and "timesteps" in df:
            for rec in df.to_dict("records"):
                if rec.get("timesteps") is not None and not math.isnan(rec["timesteps"]):
                    by_t[int(rec["timesteps"])] = rec
        if by_t:
            out.append((r.config["label"], int(r.config["seed"]), [by_t[t] for t in sorted(by_t)]))
    return out


def aggregate(curves) -> list[dict]:
    """Mean / std (population) / min / max over the seeds of each config at each timesteps value, and the seeds'
    wall-clock seconds to it (NaN where a row predates the wall-clock column)."""
    import numpy as np

    groups = {}
    for label, _seed, rows in curves:
        for row in rows:
            groups.setdefault((label, int(row["timesteps"])), []).append(row)
    labels = list(dict.fromkeys(label for label, _, _ in curves))
    out = []
    for (label, t), rows in sorted(groups.items(), key=lambda kv: (labels.index(kv[0][0]), kv[0][1])):
        s = np.array([r["success_rate"] for r in rows], dtype=float)
        g = np.array([r["mean_return"] for r in rows], dtype=float)
        w = np.array([r.get("wall_time_s", math.nan) for r in rows], dtype=float)
        out.append({"config": label, "timesteps": t, "seeds": len(rows), "success_mean": float(s.mean()),
                    "success_std": float(s.std()), "success_min": float(s.min()), "success_max": float(s.max()),
                    "return_mean": float(g.mean()), "return_std": float(g.std()),
                    "wall_time_s_mean": float(w.mean()), "wall_time_s_std": float(w.std())})
    return out


def summarize(results, sweep_dir: Path) -> dict:
    curves = curves_of(results)
    rows = aggregate(curves)
    final = []
    for label in dict.fromkeys(r["config"] for r in rows):
        mine = [r for r in rows if r["config"] == label]
        last = max(mine, key=lambda r: r["timesteps"])
        final.append({**last, "errored": sum(1 for r in results if r.error is not None
                                             and r.config and r.config["label"] == label)})
    with atomic_open(sweep_dir / "summary.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=SUMMARY_FIELDS)
        w.writeheader()
        w.writerows({k: (round(v, 4) if isinstance(v, float) else v) for k, v in r.items()} for r in rows)
    atomic_write_text(sweep_dir / "summary.md", format_final(final) + "\n")
    plots = [plot_config(label, [r for r in rows if r["config"] == label], curves, sweep_dir)
             for label in dict.fromkeys(r["config"] for r in rows)]
    return {"rows": rows, "final": final, "curves": curves, "plots": [p for p in plots if p is not None]}


def format_final(final: list[dict]) -> str:
    lines = ["| config | seeds | timesteps | wall-clock (s) | success rate (mean +- std) | min / max | mean return |",
             "|---|---|---|---|---|---|---|"]
    for r in final:
        err = f" ({r['errored']} errored)" if r.get("errored") else ""
        wall = f"{r['wall_time_s_mean']:.0f} +- {r['wall_time_s_std']:.0f}" if "wall_time_s_mean" in r else ""
        lines.append(f"| {r['config']} | {r['seeds']}{err} | {r['timesteps']} | {wall} | {r['success_mean']:.2f} +- "
                     f"{r['success_std']:.2f} | {r['success_min']:.2f} / {r['success_max']:.2f} | "
                     f"{r['return_mean']:.1f} +- {r['return_std']:.1f} |")
    return "\n".join(lines)


def plot_config(label: str, rows: list[dict], curves, sweep_dir: Path) -> Path | None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import numpy as np
    except ImportError:
        return None
    mean, std = np.array([r["success_mean"] for r in rows]), np.array([r["success_std"] for r in rows])
    seeds = [c for c in curves if c[0] == label]
    # against wall-clock first (what a user waits for), then against timesteps (what the algorithm sees)
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6), sharey=True)
    for ax, key, mean_key, xlabel in ((axes[0], "wall_time_s", "wall_time_s_mean", "wall-clock (s)"),
                                      (axes[1], "timesteps", "timesteps", "timesteps")):
        for i, (_, _seed, curve) in enumerate(seeds):
            ax.plot([r.get(key, np.nan) for r in curve], [r["success_rate"] for r in curve], color="0.75", lw=0.8,
                    label="each seed" if i == 0 else None)
        x = np.array([r[mean_key] for r in rows], dtype=float)
        ax.fill_between(x, mean - std, mean + std, alpha=0.3, label="mean +- std")
        ax.plot(x, mean, marker="o", label=f"mean over {max(r['seeds'] for r in rows)} seeds")
        ax.set(xlabel=xlabel + (" (mean over seeds at each evaluation)" if key == "wall_time_s" else ""),
               ylim=(-0.02, 1.02), title=label)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("evaluation success rate")
    axes[1].legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    path = sweep_dir / f"{file_label(label)}.png"
    with atomic_open(path, "wb") as f:
        fig.savefig(f, dpi=120, format="png")
    plt.close(fig)
    return path


# --- command line -------------------------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="superdex-tune", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("--config", action="append", default=None,
                   help=f"a packaged config ({', '.join(available_configs())}) or a path; repeatable (default reach)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--seeds", type=int, nargs="+", default=None, help="the seeds (default 0 1 2 3 4)")
    g.add_argument("--num-seeds", type=int, default=None, help="seeds 0 .. N-1")
    p.add_argument("--grid", action="append", default=[], metavar="SECTION.KEY=[V1,V2]",
                   help="one trial per value (and per config and seed); repeatable: the product of the lists")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="SECTION.KEY=VALUE",
                   help="override a config value in every trial (repeatable)")
    for flag, kind in (("--total-timesteps", int), ("--num-envs", int), ("--eval-freq", int),
                       ("--eval-episodes", int), ("--checkpoint-freq", int)):
        p.add_argument(flag, type=kind, default=None)
    p.add_argument("--device", default="cpu")
    p.add_argument("--output", default="runs/tune", help="Tune's storage path (default runs/tune)")
    p.add_argument("--name", default="sweep", help="the sweep's folder in OUTPUT (default sweep)")
    p.add_argument("--cpus-per-trial", type=float, default=1.0)
    p.add_argument("--max-failures", type=int, default=2, help="restarts of a crashed trial from its checkpoint")
    p.add_argument("--address", default=None, help="a Ray cluster to join (default: RAY_ADDRESS, else local)")
    p.add_argument("--num-cpus", type=int, default=None, help="CPUs of a local Ray (default: all)")
    p.add_argument("--restore", default=None, metavar="SWEEP_DIR", help="continue an interrupted sweep")
    p.add_argument("-q", "--quiet", action="store_true")
    return p


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    seeds = args.seeds if args.seeds is not None else list(range(args.num_seeds if args.num_seeds else 5))
    train_kwargs = {k: getattr(args, k) for k in ("total_timesteps", "num_envs", "eval_freq", "eval_episodes",
                                                  "checkpoint_freq", "device") if getattr(args, k) is not None}
    return cli_exit_code(lambda: run_sweep(
        args.config or ["reach"], seeds, grid=parse_grid(args.grid), overrides=args.overrides, output=args.output,
        name=args.name, cpus_per_trial=args.cpus_per_trial, max_failures=args.max_failures, address=args.address,
        num_cpus=args.num_cpus, restore=args.restore, verbose=0 if args.quiet else 1, **train_kwargs))


if __name__ == "__main__":
    sys.exit(main())
