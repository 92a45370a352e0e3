"""Offline datasets: a policy's seeded episodes on a SuperDex env, written as a Minari dataset.

    superdex-dataset --env SuperDex/Push-v0 --policy scripted --episodes 100 --seed 0
    superdex-dataset --env SuperDex/Push-v0 --policy runs/push/model.zip --episodes 100 --seed 0 --output data

Episode ``i`` is reset with seed ``S + i`` (stored as the episode's ``seed``) and the policy acts deterministically,
so the same command writes the same data bit for bit. Each episode holds, as Minari expects: ``observations`` (the
goal-conditioned dict, T + 1 rows: the reset's first), ``actions`` (T rows), ``rewards``, ``terminations``,
``truncations`` (T) and ``infos`` (T + 1 rows: the reset's info, then each step's: ``is_success``, ``distance``,
the reward terms, the physics report). The actions are the policy's cast to the action space's float32 before the
env steps them, so replaying the stored actions from the stored seed gives the stored observations exactly.

The episodes run batched on the native vector env (``--num-envs`` worlds at a time; a world replays the single env
bit for bit) and are written with ``minari.create_dataset_from_buffers``: Minari's ``DataCollector`` wraps a single
env and needs jax to append steps. The dataset keeps the env spec (id and ``gym.make`` kwargs), so
``minari.load_dataset(ID).recover_environment()`` rebuilds the env. Datasets go under ``MINARI_DATASETS_PATH``
(default ``~/.minari/datasets``) or ``--output``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
import warnings
from importlib import metadata
from pathlib import Path

import gymnasium as gym
import numpy as np

from .config import cli_exit_code
from .rollout import ModelPolicy, ScriptedPolicy, make_eval_vec_env

SCRIPTED = "scripted"


def _minari():
    try:
        import minari
    except ModuleNotFoundError as e:
        raise ModuleNotFoundError("datasets need the 'minari' package: pip install 'superdex-gym[datasets]'") from e
    return minari


def default_dataset_id(env_id: str, policy: str) -> str:
    """``SuperDex/Push-v0`` + ``scripted`` -> ``superdex/push/scripted-v0``; a model is named by its file's stem."""
    name = env_id.split("/")[-1].rsplit("-v", 1)[0].lower()
    label = SCRIPTED if policy == SCRIPTED else Path(policy).stem.lower()
    return f"superdex/{name}/{label.replace('_', '-')}-v0"


def _checked_int(value, name: str, minimum: int) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def _checked_env_id(env_id) -> str:
    from .. import envs

    envs.register_envs()
    if not isinstance(env_id, str) or env_id not in gym.registry:
        ours = [i for i, spec in gym.registry.items() if spec.namespace == "SuperDex"]
        raise ValueError(f"env {env_id!r} is not a registered id; the SuperDex ids are {ours}")
    return env_id


def _checked_policy(policy) -> str:
    if not isinstance(policy, (str, Path)) or (str(policy) != SCRIPTED and Path(policy).suffix != ".zip"):
        raise ValueError(f"policy must be {SCRIPTED!r} or the path of an SB3 model .zip, got {policy!r}")
    if str(policy) != SCRIPTED and not Path(policy).is_file():
        raise FileNotFoundError(f"policy: no model file {policy}")
    return str(policy)


def make_policy(policy: str, env_id: str, env_kwargs: dict, algo: str | None = None, device: str = "cpu"):
    """The batched policy (observation dict -> (W, 4) actions) of ``--policy``; a model must fit the env."""
    if policy == SCRIPTED:
        return ScriptedPolicy(env_id)
    from .evaluate import check_model_fits_env, load_model_and_normalizer

    model, normalizer = load_model_and_normalizer(policy, algo=algo, device=device)
    check_model_fits_env(model, env_id, env_kwargs, guessed=False)
    return ModelPolicy(model, deterministic=True, normalizer=normalizer)


def collect_episodes(env_id: str, policy, episodes: int, seed: int, num_envs: int = 16,
                     env_kwargs: dict | None = None) -> list:
    """``episodes`` episodes (seeds ``seed ..``) of a batched ``policy`` as Minari ``EpisodeBuffer``s, ``num_envs``
    worlds at a time; a world's steps after its episode ended (the vector env's autoreset) are left out."""
    from minari.data_collector import EpisodeBuffer

    venv = make_eval_vec_env(env_id, min(num_envs, episodes), env_kwargs)
    k, dtype = venv.num_envs, venv.single_action_space.dtype
    buffers = []
    try:
        for start in range(0, episodes, k):
            n = min(k, episodes - start)
            obs, info = venv.reset(seed=seed + start)
            steps = {"obs": [obs], "info": [info], "action": [], "reward": [], "terminated": [], "truncated": []}
            lengths = np.zeros(k, dtype=np.int64)
            done = np.zeros(k, dtype=bool)
            for _ in range(venv.max_episode_steps):
                action = np.asarray(policy(obs), dtype=dtype)
                obs, reward, terminated, truncated, info = venv.step(action)
                for key, value in zip(steps, (obs, info, action, reward, terminated, truncated)):
                    steps[key].append(value)
                live = ~done
                lengths[live] += 1
                done |= live & (terminated | truncated)
                if done[:n].all():
                    break
            # (steps, worlds, ...) arrays; np.stack copies, so the env reusing its buffers cannot alias them
            ob = {key: np.stack([o[key] for o in steps["obs"]]) for key in obs}
            inf = {key: np.stack([i[key] for i in steps["info"]]) for key in info if not key.startswith("_")}
            act, rew, term, trunc = (np.stack(steps[key]) for key in ("action", "reward", "terminated", "truncated"))
            for j in range(n):
                t = int(lengths[j])
                buffers.append(EpisodeBuffer(
                    id=start + j, seed=seed + start + j,
                    observations={key: v[:t + 1, j] for key, v in ob.items()}, actions=act[:t, j],
                    rewards=rew[:t, j], terminations=term[:t, j], truncations=trunc[:t, j],
                    infos={key: v[:t + 1, j] for key, v in inf.items()}))
    finally:
        venv.close()
    return buffers


@contextlib.contextmanager
def _datasets_root(output):
    """Minari takes the datasets' root from ``MINARI_DATASETS_PATH`` only: set it for the write, then restore it."""
    if output is None:
        yield
        return
    before = os.environ.get("MINARI_DATASETS_PATH")
    os.environ["MINARI_DATASETS_PATH"] = str(Path(output).resolve())
    try:
        yield
    finally:
        if before is None:
            del os.environ["MINARI_DATASETS_PATH"]
        else:
            os.environ["MINARI_DATASETS_PATH"] = before


def _size_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def make_dataset(env_id: str, policy: str = SCRIPTED, episodes: int = 100, seed: int = 0, *, num_envs: int = 16,
                 output: str | Path | None = None, dataset_id: str | None = None, env_kwargs: dict | None = None,
                 algo: str | None = None, device: str = "cpu", verbose: bool = False) -> dict:
    """Write ``episodes`` seeded episodes of ``policy`` (``"scripted"`` or an SB3 model ``.zip``) on ``env_id`` as a
    Minari dataset. Every argument is checked before anything runs. Returns the dataset's id, path and figures:
    episodes, transitions, success rate (``is_success`` at each episode's last step), size on disk, seconds.

    ``env_kwargs``: ``gym.make`` kwargs (stored in the env spec); for a model they default to those of its run's
    ``config.json`` when it was trained on ``env_id``."""
    minari = _minari()
    env_id = _checked_env_id(env_id)
    policy = _checked_policy(policy)
    episodes = _checked_int(episodes, "episodes", 1)
    seed = _checked_int(seed, "seed", 0)
    num_envs = _checked_int(num_envs, "num_envs", 1)
    if env_kwargs is not None and not isinstance(env_kwargs, dict):
        raise ValueError(f"env_kwargs must be a dict of gym.make kwargs, got {env_kwargs!r}")
    if env_kwargs is None:
        from .evaluate import run_config_of

        cfg = run_config_of(policy) if policy != SCRIPTED else None
        env_kwargs = dict(cfg.get("env", {})) if cfg and cfg.get("env_id") == env_id else {}
    dataset_id = default_dataset_id(env_id, policy) if dataset_id is None else dataset_id
    from minari.dataset.minari_dataset import parse_dataset_id
    from minari.storage import get_dataset_path

    try:
        parse_dataset_id(dataset_id)
    except (ValueError, TypeError) as e:
        raise ValueError(f"dataset_id {dataset_id!r} is malformed: IDs are (namespace/)name-v(version)") from e
    with _datasets_root(output):
        path = Path(get_dataset_path(dataset_id))
        if path.exists():
            raise ValueError(f"dataset_id {dataset_id!r} already exists at {path}; pass another --dataset-id or "
                             "delete it (minari delete ID)")
        try:
            env = gym.make(env_id, **env_kwargs)  # the spec with the kwargs merged, for recover_environment
        except TypeError as e:  # gym.make's unexpected or mistyped kwarg: the caller's input, not a bug
            raise ValueError(f"env_kwargs {env_kwargs!r} do not make {env_id}: {e}") from e
        try:
            act = make_policy(policy, env_id, env_kwargs, algo, device)
            t0 = time.perf_counter()
            buffers = collect_episodes(env_id, act, episodes, seed, num_envs, env_kwargs)
            seconds = time.perf_counter() - t0
            with warnings.catch_warnings():
                # Minari nags about the optional author, e-mail and code link, which a local dataset has none of
                warnings.filterwarnings("ignore", message=r"`(author|author_email|code_permalink)` is set to None")
                minari.create_dataset_from_buffers(
                    dataset_id, buffers, env=env.spec, eval_env=env.spec,
                    algorithm_name=SCRIPTED if policy == SCRIPTED else f"SB3 model {Path(policy).name}",
                    description=f"{episodes} episodes of {policy} on {env_id}, episode i reset with seed {seed} + i",
                    requirements=[f"superdex-gym=={metadata.version('superdex-gym')}"])
        finally:
            env.close()
    successes = [bool(b.infos["is_success"][-1]) for b in buffers]
    out = {"dataset_id": dataset_id, "path": str(path), "env_id": env_id, "env_kwargs": env_kwargs,
           "policy": policy, "seed": seed, "episodes": len(buffers),
           "transitions": int(sum(len(b.rewards) for b in buffers)), "success_rate": float(np.mean(successes)),
           "size_bytes": _size_bytes(path), "seconds": seconds}
    if verbose:
        print(f"{dataset_id}: {out['episodes']} episodes of {policy} on {env_id} (seeds {seed}..{seed + episodes - 1})"
              f", {out['transitions']} transitions, success rate {out['success_rate']:.3f}, "
              f"{out['size_bytes'] / 1e6:.2f} MB, {seconds:.1f} s\n  {path}\n"
              f"  load: minari.load_dataset({dataset_id!r})"
              + ("" if output is None else f" with MINARI_DATASETS_PATH={Path(output).resolve()}"))
    return out


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="superdex-dataset", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("--env", required=True, help="environment id, e.g. SuperDex/Push-v0")
    p.add_argument("--policy", required=True, help=f"'{SCRIPTED}' (the task's scripted policy) or an SB3 MODEL.zip")
    p.add_argument("--episodes", type=int, required=True, help="number of episodes")
    p.add_argument("--seed", type=int, default=0, help="episode i is reset with seed SEED + i (default 0)")
    p.add_argument("--num-envs", type=int, default=16, help="worlds stepped together (default 16)")
    p.add_argument("--output", default=None,
                   help="datasets root (default: MINARI_DATASETS_PATH, else ~/.minari/datasets)")
    p.add_argument("--dataset-id", default=None, help="Minari id (default superdex/<task>/<policy>-v0)")
    p.add_argument("--env-kwargs", default=None,
                   help="JSON dict of gym.make kwargs (default: the model's config, else none)")
    p.add_argument("--json", default=None, help="write the figures as JSON to this path")
    p.add_argument("--algo", default=None, help="a model's algorithm: sac, tqc or ppo (default: from the model's "
                   "config.json, else sac)")
    p.add_argument("--device", default="cpu")
    return p


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)

    def run():
        try:
            env_kwargs = None if args.env_kwargs is None else json.loads(args.env_kwargs)
        except json.JSONDecodeError as e:
            raise ValueError(f"--env-kwargs is not JSON: {e}") from e
        out = make_dataset(args.env, args.policy, args.episodes, args.seed, num_envs=args.num_envs,
                           output=args.output, dataset_id=args.dataset_id, env_kwargs=env_kwargs, algo=args.algo,
                           device=args.device, verbose=True)
        if args.json is not None:
            Path(args.json).parent.mkdir(parents=True, exist_ok=True)
            Path(args.json).write_text(json.dumps(out, indent=2) + "\n")

    return cli_exit_code(run)


if __name__ == "__main__":
    sys.exit(main())
