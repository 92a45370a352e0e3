"""Training configs: one TOML file per environment (``configs/<name>.toml``), resolved into a plain dict.

A config is looked up by name (the packaged files: ``available_configs()``, e.g. ``reach``, ``push``) or by path
(``.toml`` or ``.json``; the ``config.json`` a training run writes is a resolved config and trains again as it
is). Sections:

* ``env_id``, ``algo`` (``"sac"``, or ``"tqc"`` when sb3-contrib is installed: off-policy, with HER; or ``"ppo"``:
  on-policy, no replay buffer, HER or warm-up)
* ``[env]``: extra ``gym.make`` kwargs of the environment (physics, cube, goal range, ...)
* ``[train]``: total_timesteps, num_envs, seed, device, progress_bar, checkpoint_freq, eval_freq, eval_episodes,
  eval_seed, deterministic_torch, torch_threads, normalize (running mean / std of the observation dict,
  ``VecNormalize``), clip_obs, warmup_policy (the actions of the first ``model.learning_starts`` timesteps:
  ``"random"``, SB3's uniform samples, or ``"scripted"``, the task's scripted policy), warmup_random_prob (with
  ``"scripted"``: the probability that a world's action is a uniform sample instead), clip_target_q (sparse
  rewards only: the critic's bootstrapped values clamped to the -1/0 reward's return range [-1 / (1 - gamma), 0],
  as the HER baselines clip their targets), video (``"gif"``,
  ``"mp4"`` or ``"none"``: one rendered episode of the final model, seed eval_seed, written after training),
  normalize_reward (``"ppo"`` only: ``VecNormalize``'s running return scaling of the reward), reward (``"env"``:
  the env's own; ``"push_staged"`` / ``"pick_and_place_staged"``: shaped rewards for learners without HER,
  ``training/rewards.py``),
  policy_keys (the observation keys the policy sees, e.g. ``["rgb", "proprioception", "desired_goal"]`` with an
  ``[env] obs_mode``; empty: all; ``normalize`` then leaves the images alone)
* ``[model]``: keyword arguments of the algorithm (``SAC(...)``), with ``policy`` and ``policy_kwargs``
* ``[her]``: ``HerReplayBuffer`` kwargs (n_sampled_goal, goal_selection_strategy); off-policy algos only
* ``[reward]``: keyword arguments of the ``train.reward`` wrapper (its shaping constants)

Overrides are ``"section.key=value"`` strings (value in TOML or JSON syntax, else a plain string), e.g.
``model.policy_kwargs.net_arch=[64, 64]`` or ``train.eval_freq=0``.
"""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    try:
        import tomli as tomllib
    except ModuleNotFoundError:
        tomllib = None

CONFIG_DIR = Path(__file__).resolve().parent / "configs"

DEFAULTS = {
    "env_id": "SuperDex/Push-v0",
    "algo": "sac",
    "env": {},
    "train": {
        "total_timesteps": 1_000_000,
        "num_envs": 16,
        "seed": 0,
        "device": "auto",
        "progress_bar": True,
        "checkpoint_freq": 100_000,
        "eval_freq": 20_000,
        "eval_episodes": 32,
        "eval_seed": 1_000_000,
        "deterministic_torch": True,
        "torch_threads": 1,
        "normalize": True,
        "clip_obs": 5.0,
        "warmup_policy": "random",
        "warmup_random_prob": 0.3,
        "clip_target_q": False,
        "video": "gif",
        "normalize_reward": False,
        "reward": "env",
        "policy_keys": [],
    },
    "model": {"policy": "MultiInputPolicy", "policy_kwargs": {}},
    "her": {"n_sampled_goal": 4, "goal_selection_strategy": "future"},
    "reward": {},
}
SECTIONS = ("env", "train", "model", "her", "reward")
TOP_LEVEL = ("env_id", "algo")
RECORD_KEYS = ("source", "versions", "notes")  # written into a run's config.json; ignored when it is read back


def available_configs() -> list[str]:
    """Names of the packaged configs (``push``, ``push_dense``, ...)."""
    return sorted(p.stem for p in CONFIG_DIR.glob("*.toml"))


def config_path(name_or_path: str | Path) -> Path:
    """The file of a packaged config name, or the given path when it is a file."""
    p = Path(name_or_path)
    if p.suffix in (".toml", ".json") and p.is_file():
        return p
    packaged = CONFIG_DIR / f"{name_or_path}.toml"
    if packaged.is_file():
        return packaged
    raise FileNotFoundError(f"no config {str(name_or_path)!r}: not a .toml/.json file and not one of the packaged "
                            f"configs {available_configs()} (in {CONFIG_DIR})")


def read_config_file(path: str | Path) -> dict:
    path = Path(path)
    if path.suffix == ".json":
        return json.loads(path.read_text())
    if tomllib is None:
        raise ModuleNotFoundError("reading TOML configs on Python 3.10 needs the 'tomli' package (pip install tomli)")
    with open(path, "rb") as f:
        return tomllib.load(f)


def parse_value(text: str):
    """A value in TOML or JSON syntax (``1e-3``, ``1_000``, ``[64, 64]``, ``true``, ``"x"``), else the string."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    if tomllib is not None:
        try:
            return tomllib.loads(f"v = {text}")["v"]
        except tomllib.TOMLDecodeError:
            pass
    return text


def apply_override(config: dict, override: str) -> None:
    """Set ``section.key[.subkey]=value`` in place."""
    if "=" not in override:
        raise ValueError(f"override {override!r} is not of the form key=value (e.g. train.eval_freq=0)")
    key, text = override.split("=", 1)
    parts = key.strip().split(".")
    if parts[0] not in SECTIONS + TOP_LEVEL:
        raise ValueError(f"override {override!r}: unknown section {parts[0]!r}; one of {list(SECTIONS + TOP_LEVEL)}")
    node = config
    for p in parts[:-1]:
        node = node.setdefault(p, {})
        if not isinstance(node, dict):
            raise ValueError(f"override {override!r}: {p!r} is not a table")
    node[parts[-1]] = parse_value(text.strip())


def _merge(base: dict, extra: dict) -> dict:
    out = copy.deepcopy(base)
    for k, v in extra.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = _merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


def load_config(config: str | Path | dict = "push", overrides=()) -> dict:
    """Resolve a config (name, path or dict) over the defaults, then apply the overrides (strings or a dict of
    ``"section.key": value``). Unknown top-level keys are an error (a typo would otherwise be ignored)."""
    if isinstance(config, dict):
        raw, source = config, None
    else:
        path = config_path(config)
        raw, source = read_config_file(path), str(path)
    raw = {k: v for k, v in raw.items() if k not in RECORD_KEYS}
    unknown = set(raw) - set(SECTIONS) - set(TOP_LEVEL)
    if unknown:
        raise ValueError(f"unknown config keys {sorted(unknown)}; expected {list(TOP_LEVEL + SECTIONS)}")
    resolved = _merge(DEFAULTS, raw)
    if isinstance(overrides, dict):
        overrides = [f"{k}={json.dumps(v)}" for k, v in overrides.items()]
    for o in overrides or ():
        apply_override(resolved, o)
    unknown_train = set(resolved["train"]) - set(DEFAULTS["train"])
    if unknown_train:
        raise ValueError(f"unknown [train] keys {sorted(unknown_train)}; expected {sorted(DEFAULTS['train'])}")
    resolved["source"] = source
    return resolved


def cli_exit_code(call) -> int:
    """A command's exit code: 0 when ``call()`` returns; a user's mistake it raises (a missing file or extra, a bad
    value) is printed as ``error: ...`` and gives 2, as argparse does."""
    try:
        call()
    except (FileNotFoundError, ModuleNotFoundError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0
