"""PPO on RLlib (new API stack) over the native batched vector env.

    superdex-rllib --config reach_ppo --total-timesteps 64000 --output runs/rllib-reach
    superdex-rllib --config push_ppo --num-env-runners 2 --address head:6379     # or RAY_ADDRESS

The recipe (``ppo_config``): RLlib samples through ``gym.make_vec(id, num_envs, vectorization_mode=...)``; with
``gym_env_vectorize_mode="vector_entry_point"`` that is our ``RobotTaskVectorEnv`` (all worlds in one engine call)
instead of ``SyncVectorEnv`` over single envs (~9x slower here). Three things it needs, each a failure otherwise:

* ``env_to_module_connector=FlattenObservations()``: RLlib has no default encoder for the Dict observation
  (``No default encoder config for obs space=Dict``);
* the id as ``"superdex_gym:SuperDex/Reach-v0"``: gymnasium imports ``superdex_gym`` (which registers the ids)
  in remote env runners too (else ``NamespaceNotFound`` there and an ``IndexError`` in ``get_spaces`` on the
  driver);
* success logged from ``info["is_success"]`` of each episode's last step (``on_episode_end``): RLlib logs
  returns and lengths only.

Configs are TOML files in ``configs/rllib/`` (``reach_ppo``, ``push_ppo``) or a path: ``env_id``, ``[env]``
(gym.make kwargs), ``[env_runners]`` (``gym_env_vectorize_mode = "sync"`` there measures the slow path),
``[training]`` (``PPOConfig.training`` kwargs), ``[model]``
(``DefaultModelConfig``), ``[run]`` (total_timesteps, seed). The run writes, in OUTPUT: ``learning_curve.csv``
(per iteration: timesteps, success_rate and mean_return of the last 100 training episodes, wall time, env steps
per second of the iteration and of sampling alone), ``metrics.json``, ``config.json`` and the final
``checkpoint/`` (``Algorithm.from_checkpoint``). RLlib pins gymnasium 1.2.2: install the ``rllib`` extra in its own
venv (``pip install 'superdex-gym[rllib]'``).
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import time
from pathlib import Path

from .config import _merge, cli_exit_code, parse_value, read_config_file
from .ray_session import ray_session
from .run_outputs import atomic_write_text, write_curve

RLLIB_EXTRA = "pip install 'superdex-gym[rllib]' (ray[rllib]==2.60.0, which pins gymnasium 1.2.2: use its own venv)"
CONFIG_DIR = Path(__file__).resolve().parent / "configs" / "rllib"
DEFAULTS = {
    "env_id": "SuperDex/ReachDense-v0",
    "env": {},
    "env_runners": {"num_env_runners": 0, "num_envs_per_env_runner": 16},
    "training": {},
    "model": {},
    "run": {"total_timesteps": 64_000, "seed": 0},
}
CURVE_FIELDS = ("iteration", "timesteps", "success_rate", "mean_return", "episodes", "wall_time_s",
                "env_steps_per_s", "sample_steps_per_s")


def import_rllib():
    try:
        import ray
        from ray.rllib.algorithms.ppo import PPOConfig
        from ray.rllib.connectors.env_to_module import FlattenObservations
    except ModuleNotFoundError as e:
        raise ModuleNotFoundError(f"superdex-rllib needs RLlib ({e}); {RLLIB_EXTRA}") from e
    return ray, PPOConfig, FlattenObservations


def available_configs() -> list[str]:
    return sorted(p.stem for p in CONFIG_DIR.glob("*.toml"))


def load_rllib_config(config="reach_ppo", overrides=()) -> dict:
    """A config (packaged name, .toml/.json path or dict) over ``DEFAULTS``, with ``section.key=value``
    overrides."""
    if isinstance(config, dict):
        raw = copy.deepcopy(config)
    else:
        p = Path(config)
        if not (p.suffix in (".toml", ".json") and p.is_file()):
            p = CONFIG_DIR / f"{config}.toml"
        if not p.is_file():
            raise FileNotFoundError(f"no RLlib config {str(config)!r}: not a .toml/.json file and not one of "
                                    f"{available_configs()} (in {CONFIG_DIR})")
        raw = read_config_file(p)
    unknown = set(raw) - set(DEFAULTS)
    if unknown:
        raise ValueError(f"unknown RLlib config keys {sorted(unknown)}; expected {list(DEFAULTS)}")
    cfg = _merge(DEFAULTS, raw)
    for o in overrides:
        if "=" not in o:
            raise ValueError(f"override {o!r} is not of the form key=value (e.g. training.lr=1e-4)")
        key, text = o.split("=", 1)
        parts = key.strip().split(".")
        if parts[0] not in DEFAULTS:
            raise ValueError(f"override {o!r}: unknown section {parts[0]!r}; one of {list(DEFAULTS)}")
        node = cfg
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = parse_value(text.strip())
    r = cfg["run"]
    r["total_timesteps"], r["seed"] = int(r["total_timesteps"]), int(r["seed"])
    er = cfg["env_runners"]
    if r["total_timesteps"] < 1 or int(er["num_env_runners"]) < 0 or int(er["num_envs_per_env_runner"]) < 1:
        raise ValueError(f"need run.total_timesteps >= 1, env_runners.num_env_runners >= 0 and "
                         f"num_envs_per_env_runner >= 1; got {r}, {er}")
    return cfg


def env_name(env_id: str) -> str:
    """The id with the module gymnasium imports first (registers the ids in every process)."""
    return env_id if ":" in env_id else f"superdex_gym:{env_id}"


def on_episode_end(*, episode, metrics_logger, **_):
    """Log the success of each finished episode (its last ``info["is_success"]``), averaged over 100."""
    info = episode.get_infos(-1)
    metrics_logger.log_value("success_rate", float(info["is_success"]), reduce="mean", window=100)


def flatten_connector(env, spaces, device):
    _, _, FlattenObservations = import_rllib()
    return FlattenObservations()


def ppo_config(cfg: dict):
    """The ``PPOConfig`` of a resolved config: the native vector env, flattened observations, success logging."""
    _, PPOConfig, _ = import_rllib()
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig

    er = cfg["env_runners"]
    return (PPOConfig()
            .environment(env_name(cfg["env_id"]), env_config=dict(cfg["env"]))
            .env_runners(**{"gym_env_vectorize_mode": "vector_entry_point", **er,
                            "env_to_module_connector": flatten_connector})
            .training(**cfg["training"])
            .rl_module(model_config=DefaultModelConfig(**cfg["model"]))
            .callbacks(on_episode_end=on_episode_end)
            .debugging(seed=int(cfg["run"]["seed"])))


def _row(result: dict, iteration: int, wall: float, iter_s: float) -> dict:
    er = result.get("env_runners", {})
    sampled = float(er.get("num_env_steps_sampled", 0))
    sample_s = float(result.get("timers", {}).get("env_runner_sampling_timer", 0.0) or 0.0)
    ret = er.get("episode_return_mean")
    return {"iteration": iteration, "timesteps": int(result["num_env_steps_sampled_lifetime"]),
            "success_rate": None if er.get("success_rate") is None else round(float(er["success_rate"]), 4),
            "mean_return": None if ret is None else round(float(ret), 4),
            "episodes": int(er.get("num_episodes_lifetime", 0)), "wall_time_s": round(wall, 3),
            "env_steps_per_s": round(sampled / max(iter_s, 1e-9), 1),
            "sample_steps_per_s": round(sampled / sample_s, 1) if sample_s > 0 else None}


def train_ppo(config="reach_ppo", *, output="runs/rllib", total_timesteps=None, num_env_runners=None, seed=None,
              overrides=(), address=None, num_cpus=None, checkpoint=True, verbose: int = 1) -> dict:
    """Train PPO until ``total_timesteps`` env steps are sampled; write the run (module doc); return its metrics
    with the curve (``"curve"``) and the algorithm's env runner classes (``"env_classes"``)."""
    over = list(overrides)
    for key, value in (("run.total_timesteps", total_timesteps), ("run.seed", seed),
                       ("env_runners.num_env_runners", num_env_runners)):
        if value is not None:
            over.append(f"{key}={json.dumps(value)}")
    cfg = load_rllib_config(config, over)
    ray, _, _ = import_rllib()
    out = Path(output)
    out.mkdir(parents=True, exist_ok=True)
    with ray_session(ray, address, num_cpus, log_to_driver=verbose >= 2):
        import gymnasium as gym

        cfg["versions"] = {"ray": ray.__version__, "gymnasium": gym.__version__}
        atomic_write_text(out / "config.json", json.dumps(cfg, indent=2) + "\n")
        algo = ppo_config(cfg).build_algo()
        try:
            rows, start = [], time.perf_counter()
            while not rows or rows[-1]["timesteps"] < cfg["run"]["total_timesteps"]:
                t0 = time.perf_counter()
                result = algo.train()
                rows.append(_row(result, len(rows) + 1, time.perf_counter() - start, time.perf_counter() - t0))
                write_curve(out / "learning_curve.csv", rows, CURVE_FIELDS)
                if verbose:
                    r = rows[-1]
                    print(f"iter {r['iteration']}: {r['timesteps']} steps, success {r['success_rate']}, return "
                          f"{r['mean_return']}, {r['env_steps_per_s']} steps/s ({r['wall_time_s']:.0f} s)",
                          flush=True)
            wall = time.perf_counter() - start
            if checkpoint:
                algo.save_to_path(str((out / "checkpoint").resolve()))
            env_classes = _env_classes(algo)
        finally:
            algo.stop()
    later = rows[1:] or rows  # the first iteration includes compiling and worker start-up
    metrics = {"env_id": cfg["env_id"], "timesteps": rows[-1]["timesteps"], "iterations": len(rows),
               "wall_time_s": round(wall, 3), "num_env_runners": int(cfg["env_runners"]["num_env_runners"]),
               "num_envs_per_env_runner": int(cfg["env_runners"]["num_envs_per_env_runner"]),
               "last_success_rate": rows[-1]["success_rate"], "last_mean_return": rows[-1]["mean_return"],
               "first_mean_return": rows[0]["mean_return"],
               "env_steps_per_s_median": _median([r["env_steps_per_s"] for r in later]),
               "sample_steps_per_s_median": _median([r["sample_steps_per_s"] for r in later]),
               "env_classes": env_classes, "versions": cfg["versions"]}
    atomic_write_text(out / "metrics.json", json.dumps(metrics, indent=2) + "\n")
    if verbose:
        print(f"wrote {out}/: learning_curve.csv, metrics.json, config.json"
              + (", checkpoint/" if checkpoint else ""))
    return {**metrics, "curve": rows}


def _median(values):
    v = sorted(x for x in values if x is not None)
    return None if not v else (v[len(v) // 2] if len(v) % 2 else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2)


def _env_classes(algo) -> list[str]:
    """The unwrapped env class of the local runner (0 remote runners) or of each remote one."""
    group = algo.env_runner_group

    def name(runner):
        env = runner.env.unwrapped
        return f"{type(env).__module__}.{type(env).__qualname__}"

    if group.num_remote_env_runners() == 0:
        return [name(algo.env_runner)]
    return list(group.foreach_env_runner(name, local_env_runner=False))


# --- command line -------------------------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="superdex-rllib", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("--config", default="reach_ppo",
                   help=f"a packaged RLlib config ({', '.join(available_configs())}) or a .toml/.json path")
    p.add_argument("--total-timesteps", type=int, default=None)
    p.add_argument("--num-env-runners", type=int, default=None, help="remote env runners (0: the driver samples)")
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--output", default=None, help="run directory (default runs/rllib-<config>)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="SECTION.KEY=VALUE",
                   help="override a config value, e.g. --set training.lr=1e-4 (repeatable)")
    p.add_argument("--address", default=None, help="a Ray cluster to join (default: RAY_ADDRESS, else local)")
    p.add_argument("--num-cpus", type=int, default=None, help="CPUs of a local Ray (default: all)")
    p.add_argument("-q", "--quiet", action="store_true")
    return p


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    return cli_exit_code(lambda: train_ppo(
        args.config, output=args.output or f"runs/rllib-{Path(args.config).stem}",
        total_timesteps=args.total_timesteps, num_env_runners=args.num_env_runners, seed=args.seed,
        overrides=args.overrides, address=args.address, num_cpus=args.num_cpus, verbose=0 if args.quiet else 1))


if __name__ == "__main__":
    sys.exit(main())
