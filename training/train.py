"""Train SAC + HER (or PPO) on a SuperDex environment from a config file.

    python -m superdex_gym.training.train --config push --total-timesteps 1000000 --seed 0 --num-envs 16 \\
        --output runs/push-s0

The environment is the native batched SB3 VecEnv (``SuperDexSB3VecEnv``: ``--num-envs`` worlds in one engine
scene, world i seeded with seed + i), the replay buffer ``HerReplayBuffer``, the policy ``MultiInputPolicy``; the
hyperparameters come from the config (``configs/push.toml``, sources cited there). With ``algo = "ppo"``
(``configs/push_ppo.toml``) there is no replay buffer, HER or warm-up: SB3's PPO collects ``model.n_steps``
batched steps of every world per update, usually with a shaped reward (``train.reward``, ``rewards.py``). ``--total-timesteps`` is
rounded up to a multiple of ``--num-envs`` (each batched step adds that many; the run says so). The run writes,
in OUTPUT, and lists at its end:

    model.zip               the final model (evaluate it with ``python -m superdex_gym.training.evaluate``)
    model_vecnormalize.pkl  its observation-normalization statistics (when ``normalize``; evaluate loads them)
    best_model.zip          the model at the best periodic evaluation (when evaluations run), + _vecnormalize.pkl
    config.json             the resolved config (trains again as ``--config OUTPUT/config.json``)
    metrics.json            timesteps, wall time (this process; run_wall_time_s with the legs before a resume),
                            final / best success rate, train success rate, versions
    learning_curve.csv      timesteps, success_rate, mean_return, mean_final_distance, wall_time_s per evaluation
                            (the run's wall-clock: a resumed run counts on from its checkpoint's)
    learning_curve.png      the same, plotted (matplotlib, in the train extra; the run says when it is skipped)
    eval_episode.gif        one episode of the final model (seed eval_seed); ``--video mp4`` / ``none``
    progress.csv            SB3's logger (losses, entropy coefficient, rollout success rate, ...)
    checkpoints/            model_<timesteps>_steps.zip (+ model_vecnormalize_<timesteps>_steps.pkl, and .json:
                            the run's wall-clock then) every --checkpoint-freq timesteps (no folder when none
                            falls due), and the replay buffer
                            of the latest one, model_replay_buffer_<timesteps>_steps.pkl (what --resume needs;
                            PPO has none: its rollout buffer is refilled after every update)

Evaluations run ``eval_episodes`` seeded episodes (seeds eval_seed + i, the same every time) of the deterministic
policy on a separate batched env every ``--eval-freq`` timesteps and once at the end. The same seed and config
give the same run (``set_random_seed`` for python / numpy / torch, seeded worlds and action space,
``torch.use_deterministic_algorithms``).

The replay buffer holds at most the run's total timesteps (``model.buffer_size`` is capped there, plus one batched
step, with a note: a larger one only costs memory and checkpoint size). CSV / JSON / PNG outputs and checkpoint
files are written to a temporary file and renamed over the old one, so a reader never sees a partial file.

``--resume RUN_DIR`` continues a run from its latest checkpoint (model, normalization statistics, replay buffer,
learning curve up to there) to the config's total timesteps (``--total-timesteps`` may raise it): SB3's
``learn(remaining, reset_num_timesteps=False)``, so timesteps, gradient-step counts and the evaluation schedule go
on where they were. The worlds restart from a reset (their mid-episode state is not saved; the buffer's unfinished
episodes are closed), seeded from (seed, timesteps), so a resume from the same checkpoint is itself reproducible
but not bit-identical to the run that never stopped.

``train(..., on_evaluation=fn)`` calls ``fn(row, save_checkpoint)`` after every evaluation, with ``row`` the
learning-curve row (timesteps, success_rate, mean_return, mean_final_distance, wall_time_s) and
``save_checkpoint(dir)`` writing a resumable copy of the run into ``dir`` (``config.json``, ``learning_curve.csv``
and a ``checkpoints/`` folder: ``--resume dir`` continues from it). Evaluations and checkpoints run at the end of
a rollout (SB3 stores a step's transitions after the step callbacks, so a checkpoint there holds the whole
step). The Ray Tune sweep (``superdex_gym.training.tune``) reports and checkpoints through it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import pickle
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

try:
    import stable_baselines3
    import torch
    from stable_baselines3 import HerReplayBuffer
    from stable_baselines3.common.callbacks import BaseCallback, CallbackList
    from stable_baselines3.common.logger import configure
    from stable_baselines3.common.utils import set_random_seed
    from stable_baselines3.common.vec_env import VecMonitor, VecNormalize
except ModuleNotFoundError as _e:  # pragma: no cover - depends on the install
    raise ModuleNotFoundError(f"superdex_gym.training needs stable-baselines3 and torch ({_e}); "
                              "pip install stable-baselines3") from _e

import gymnasium as gym
import numpy as np

from .config import DEFAULTS, available_configs, cli_exit_code, load_config
from .evaluate import algorithm_class
from .obs_keys import KeepObservationKeys, named_extractor, vector_keys
from .rewards import wrap_reward
from .rollout import ModelPolicy, check_mp4_support, make_eval_vec_env, run_batched_episodes
from .run_outputs import (atomic_open, atomic_write_text, format_outputs, plot_curve, read_curve, record_episode,
                          remove_if_empty, write_curve, written_since)

VIDEO_FORMATS = ("gif", "mp4", "none")


@dataclass
class TrainResult:
    model: object
    output: Path
    config: dict
    metrics: dict
    curve: list = field(default_factory=list)

    @property
    def model_path(self) -> Path:
        return self.output / "model.zip"


# --- evaluation callback ------------------------------------------------------------------------------------------
class SuccessEvalCallback(BaseCallback):
    """Every ``eval_freq`` timesteps (and at the end): ``n_episodes`` seeded episodes of the deterministic policy on
    a batched eval env; logs ``eval/success_rate`` and ``eval/mean_return``, appends a row to the learning curve
    CSV, and saves ``best_model.zip`` when the success rate improves."""

    def __init__(self, eval_env, n_episodes: int, eval_seed: int, eval_freq: int, curve_path: Path,
                 best_model_path: Path | None, start_time: float, verbose: int = 1, rows=(), start_timesteps=0,
                 on_evaluation=None, save_checkpoint=None):
        super().__init__(verbose)
        self.eval_env, self.n_episodes, self.eval_seed = eval_env, int(n_episodes), int(eval_seed)
        self.eval_freq, self.curve_path, self.best_model_path = int(eval_freq), curve_path, best_model_path
        self.start_time = start_time
        self.rows: list[dict] = list(rows)  # a resumed run's evaluations so far
        self.best_success = max((r["success_rate"] for r in self.rows), default=-1.0)
        self.on_evaluation, self.save_checkpoint = on_evaluation, save_checkpoint
        self._next_eval = self.eval_freq
        while self.eval_freq > 0 and self._next_eval <= start_timesteps:
            self._next_eval += self.eval_freq

    def _on_step(self) -> bool:
        return True

    def _on_rollout_end(self) -> None:  # after the step's transitions are stored: a checkpoint here is complete
        if self.eval_freq > 0 and self.num_timesteps >= self._next_eval:
            while self._next_eval <= self.num_timesteps:
                self._next_eval += self.eval_freq
            self.run_evaluation()

    def run_evaluation(self, dump: bool = False) -> dict:
        if self.rows and self.rows[-1]["timesteps"] == self.num_timesteps:
            return self.rows[-1]  # the final evaluation coincides with the last periodic one
        policy = ModelPolicy(self.model, deterministic=True, normalizer=self.model.get_vec_normalize_env())
        r = run_batched_episodes(self.eval_env, policy, self.n_episodes, self.eval_seed)
        s = r.summary()
        row = {"timesteps": int(self.num_timesteps), "success_rate": s["success_rate"],
               "mean_return": s["mean_return"], "mean_final_distance": s["mean_final_distance"],
               "wall_time_s": round(time.perf_counter() - self.start_time, 3)}
        self.rows.append(row)
        write_curve(self.curve_path, self.rows)
        self.logger.record("eval/success_rate", row["success_rate"])
        self.logger.record("eval/mean_return", row["mean_return"])
        self.logger.record("eval/mean_final_distance", row["mean_final_distance"])
        if dump:  # after learn(): nothing else writes the logger's row
            self.logger.dump(self.num_timesteps)
        if self.best_model_path is not None and row["success_rate"] > self.best_success:
            self.best_success = row["success_rate"]
            save_model(self.model, self.best_model_path)
        if self.verbose:
            msg = (f"eval @ {row['timesteps']} timesteps: success rate {row['success_rate']:.3f}, "
                   f"mean return {row['mean_return']:.2f} ({self.n_episodes} episodes)")
            _print(msg)
        if self.on_evaluation is not None:
            self.on_evaluation(dict(row), self.save_checkpoint)
        return row


def _print(msg: str) -> None:
    try:  # above an active tqdm / rich progress bar
        from tqdm import tqdm

        tqdm.write(msg)
    except ImportError:
        print(msg, flush=True)


def save_model(model, path: Path, norm_path: Path | None = None) -> None:
    """``<name>.zip`` and, when the model trains behind ``VecNormalize``, its statistics ``<name>_vecnormalize.pkl``
    (``evaluate`` finds them there), each written atomically."""
    path = Path(path)
    with atomic_open(path, "wb") as f:
        model.save(f)
    norm = model.get_vec_normalize_env()
    if norm is not None:
        with atomic_open(norm_path or path.with_name(path.stem + "_vecnormalize.pkl"), "wb") as f:
            pickle.dump(norm, f)


CHECKPOINT_RE = re.compile(r"model_(\d+)_steps\.zip")


def save_run_checkpoint(model, directory: Path, rows: list[dict], cfg: dict, wall_time_s: float | None = None) -> Path:
    """A resumable copy of the run at ``model.num_timesteps`` in ``directory``: ``checkpoints/model_<n>_steps.zip``,
    its ``model_vecnormalize_<n>_steps.pkl`` and ``model_replay_buffer_<n>_steps.pkl`` (older replay buffers there
    are deleted: resuming needs the latest only), ``model_<n>_steps.json`` (the run's wall-clock so far, so a
    resumed run's learning curve keeps counting from it), ``learning_curve.csv`` up to now and ``config.json``. The
    replay buffer is written last, so a checkpoint that has one is complete."""
    directory = Path(directory)
    ck = directory / "checkpoints"
    ck.mkdir(parents=True, exist_ok=True)
    n = int(model.num_timesteps)
    atomic_write_text(directory / "config.json", json.dumps(cfg, indent=2) + "\n")
    write_curve(directory / "learning_curve.csv", [r for r in rows if r["timesteps"] <= n])
    if wall_time_s is not None:
        atomic_write_text(ck / f"model_{n}_steps.json", json.dumps({"wall_time_s": round(wall_time_s, 3)}) + "\n")
    save_model(model, ck / f"model_{n}_steps.zip", ck / f"model_vecnormalize_{n}_steps.pkl")
    if not has_replay_buffer(model):  # on-policy: the model and its statistics are the whole state
        return directory
    with atomic_open(ck / f"model_replay_buffer_{n}_steps.pkl", "wb") as f:
        pickle.dump(model.replay_buffer, f)
    for old in ck.glob("model_replay_buffer_*_steps.pkl"):
        if old.name != f"model_replay_buffer_{n}_steps.pkl":
            old.unlink()
    return directory


def checkpoint_wall_time(checkpoint: Path, timesteps: int, rows: list[dict]) -> float:
    """The run's wall-clock [s] when the checkpoint ``checkpoint`` (``model_<n>_steps.zip``) was written: its
    ``.json`` beside it, else (checkpoints written before those existed) the latest evaluation's at or before it."""
    info = checkpoint.with_suffix(".json")
    if info.is_file():
        return float(json.loads(info.read_text())["wall_time_s"])
    return max((float(r["wall_time_s"]) for r in rows if r["timesteps"] <= timesteps), default=0.0)


def has_replay_buffer(model) -> bool:
    return getattr(model, "replay_buffer", None) is not None


def latest_checkpoint(run_dir: Path, needs_replay_buffer: bool = True) -> tuple[int, Path]:
    """The timesteps and model file of the newest complete checkpoint in ``run_dir/checkpoints`` (one with its
    replay buffer, unless the algorithm is on-policy: ``needs_replay_buffer=False``)."""
    ck = Path(run_dir) / "checkpoints"
    found = []
    for p in ck.glob("model_*_steps.zip"):
        m = CHECKPOINT_RE.fullmatch(p.name)
        if m and (not needs_replay_buffer or (ck / f"model_replay_buffer_{m.group(1)}_steps.pkl").is_file()):
            found.append((int(m.group(1)), p))
    if not found and not needs_replay_buffer:
        raise FileNotFoundError(f"resume: no checkpoint in {ck} (runs write one every train.checkpoint_freq "
                                f"timesteps; a run with checkpoint_freq = 0 cannot resume)")
    if not found:
        raise FileNotFoundError(f"resume: no checkpoint with a replay buffer in {ck} (runs write one every "
                                f"train.checkpoint_freq timesteps; a run with checkpoint_freq = 0 cannot resume)")
    return max(found)


class RunCheckpointCallback(BaseCallback):
    """Every ``freq`` timesteps (multiples of it, also across a resume): ``save_run_checkpoint`` into the run."""

    def __init__(self, freq: int, out: Path, cfg: dict, rows_of, start_timesteps: int = 0, clock=None):
        super().__init__(0)
        self.freq, self.out, self.cfg, self.rows_of, self.clock = int(freq), Path(out), cfg, rows_of, clock
        self._next = (int(start_timesteps) // self.freq + 1) * self.freq

    def _on_step(self) -> bool:
        return True

    def _on_rollout_end(self) -> None:  # SB3 stores a step's transitions after _on_step, before this
        if self.num_timesteps >= self._next:
            while self._next <= self.num_timesteps:
                self._next += self.freq
            save_run_checkpoint(self.model, self.out, self.rows_of(), self.cfg,
                                None if self.clock is None else self.clock())


# --- scripted warm-up ----------------------------------------------------------------------------------------------
class ScriptedWarmup:
    """Mixin for an SB3 off-policy algorithm: before ``learning_starts`` the actions come from the task's scripted
    policy (on the raw observations, before ``VecNormalize``), each world's replaced by a uniform sample with
    probability ``warmup_random_prob``, instead of SB3's uniform samples. The replay buffer then starts with
    episodes that move the cube, which uniform actions rarely do (10% of Push episodes). After the warm-up the
    algorithm is unchanged; a saved model loads with the plain class."""

    def setup_warmup(self, policy, random_prob: float, seed: int) -> None:
        self._warmup_policy, self._warmup_random_prob = policy, float(random_prob)
        self._warmup_rng = np.random.default_rng([int(seed), 7])

    def _excluded_save_params(self):
        return [*super()._excluded_save_params(), "_warmup_policy", "_warmup_random_prob", "_warmup_rng"]

    def _sample_action(self, learning_starts, action_noise=None, n_envs=1):
        if self.num_timesteps >= learning_starts:
            return super()._sample_action(learning_starts, action_noise, n_envs)
        obs = self._last_original_obs if self._vec_normalize_env is not None else self._last_obs
        action = np.asarray(self._warmup_policy(obs), dtype=np.float32).reshape(n_envs, -1)
        rand = self._warmup_rng.random(n_envs) < self._warmup_random_prob
        uniform = self._warmup_rng.uniform(self.action_space.low, self.action_space.high,
                                           size=(n_envs, *self.action_space.shape))
        action = np.clip(np.where(rand[:, None], uniform, action), self.action_space.low, self.action_space.high)
        return action, self.policy.scale_action(action)


# --- the run ------------------------------------------------------------------------------------------------------
def clip_target_q(model, gamma: float) -> None:
    """Clamp the target critic's values to [-1 / (1 - gamma), 0], the return range of the sparse -1/0 reward, as
    the HER baselines clip their targets: a bootstrapped target outside it can only be extrapolation error, and
    on long tasks (Stack2 at gamma 0.98, Stack3 at 0.95) SAC fed on it until the critic diverged
    (docs/training_log.md). The online critic and the actor are unchanged; the saved model loads as plain SAC."""
    import torch

    critic_target = model.policy.critic_target
    forward = critic_target.forward
    low = -1.0 / (1.0 - gamma)

    def clipped(obs, actions):
        return tuple(torch.clamp(q, low, 0.0) for q in forward(obs, actions))

    critic_target.forward = clipped


@contextlib.contextmanager
def torch_settings(deterministic: bool, threads: int):
    """``torch.use_deterministic_algorithms(True)`` and ``torch.set_num_threads(threads)`` (when > 0) inside the
    block; both restored after."""
    previous_det = torch.are_deterministic_algorithms_enabled()
    previous_threads = torch.get_num_threads()
    if deterministic:
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # needed by deterministic cuBLAS on CUDA
        torch.use_deterministic_algorithms(True, warn_only=True)
    if threads > 0:
        torch.set_num_threads(int(threads))
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(previous_det)
        torch.set_num_threads(previous_threads)


ON_POLICY = ("ppo",)
# [model] keys of the off-policy algorithms' replay buffers and warm-up, which PPO does not take
OFF_POLICY_MODEL_KEYS = ("buffer_size", "learning_starts", "train_freq", "gradient_steps", "tau",
                         "optimize_memory_usage", "target_update_interval", "action_noise")


def check_on_policy(cfg: dict) -> None:
    """An on-policy config has no warm-up, HER or replay buffer: a key that asks for one is an error naming it
    (it would otherwise be ignored, or fail deep in SB3). ``[her]`` is emptied so the written config says so."""
    t, algo = cfg["train"], cfg["algo"]
    if t["warmup_policy"] != "random":
        raise ValueError(f"train.warmup_policy = {t['warmup_policy']!r}: algo {algo!r} is on-policy, it learns from "
                         "its own rollouts only and has no warm-up (remove the key)")
    for key in OFF_POLICY_MODEL_KEYS:
        if key in cfg["model"]:
            raise ValueError(f"model.{key} is a replay-buffer / warm-up option of the off-policy algos; algo "
                             f"{algo!r} has none (remove the key)")
    for key, value in cfg["her"].items():
        if DEFAULTS["her"].get(key) != value:
            raise ValueError(f"her.{key}: algo {algo!r} is on-policy, it has no replay buffer to relabel with HER "
                             "(remove the [her] section)")
    if t["normalize_reward"] and not t["normalize"]:
        raise ValueError("train.normalize_reward scales rewards in the VecNormalize that train.normalize adds; set "
                         "train.normalize = true too")
    cfg["her"] = {}


def check_reward(cfg: dict) -> None:
    """``train.reward`` names a known wrapper, for an env it can read, with valid ``[reward]`` constants."""
    from .rewards import REWARDS

    name, params = cfg["train"]["reward"], cfg["reward"]
    if name == "env":
        if params:
            raise ValueError(f"[reward] sets {sorted(params)}, but train.reward = 'env' uses the env's own reward")
        return
    if name not in REWARDS:
        raise ValueError(f"train.reward must be 'env' or one of {sorted(REWARDS)}, got {name!r}")
    if cfg["env_id"] not in REWARDS[name].env_ids:
        raise ValueError(f"train.reward = {name!r} reads the observation layout of these ids; env_id must be one of "
                         f"{list(REWARDS[name].env_ids)}, got {cfg['env_id']!r}")
    REWARDS[name].check_params(params)


def check_policy_keys(cfg: dict) -> None:
    """``train.policy_keys``: a list of observation key names; an off-policy algo relabels goals with HER, so its
    policy must keep both goal keys."""
    keys = cfg["train"]["policy_keys"]
    if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
        raise ValueError(f"train.policy_keys must be a list of observation key names, got {keys!r}")
    if keys and cfg["algo"] not in ON_POLICY and not {"achieved_goal", "desired_goal"} <= set(keys):
        raise ValueError(f"train.policy_keys {keys}: algo {cfg['algo']!r} relabels goals with HER, so they must "
                         "include 'achieved_goal' and 'desired_goal'")


def resolve(config, *, total_timesteps=None, seed=None, num_envs=None, device=None, progress_bar=None,
            checkpoint_freq=None, eval_freq=None, eval_episodes=None, video=None, overrides=()) -> dict:
    """The config (name, path or dict) with the overrides and the command-line values applied, validated."""
    cfg = load_config(config, overrides)
    t = cfg["train"]
    for key, value in (("total_timesteps", total_timesteps), ("seed", seed), ("num_envs", num_envs),
                       ("device", device), ("progress_bar", progress_bar), ("checkpoint_freq", checkpoint_freq),
                       ("eval_freq", eval_freq), ("eval_episodes", eval_episodes), ("video", video)):
        if value is not None:
            t[key] = value
    for key in ("total_timesteps", "num_envs", "checkpoint_freq", "eval_freq", "eval_episodes", "seed",
                "torch_threads"):
        t[key] = int(t[key])
    if t["warmup_policy"] not in ("random", "scripted"):
        raise ValueError(f"train.warmup_policy must be 'random' or 'scripted', got {t['warmup_policy']!r}")
    if not 0.0 <= float(t["warmup_random_prob"]) <= 1.0:
        raise ValueError(f"train.warmup_random_prob must be in [0, 1], got {t['warmup_random_prob']!r}")
    if not isinstance(t["clip_target_q"], bool):
        raise ValueError(f"train.clip_target_q must be true or false, got {t['clip_target_q']!r}")
    if cfg["algo"] in ON_POLICY:
        check_on_policy(cfg)
    else:
        if t["normalize_reward"]:
            raise ValueError(f"train.normalize_reward is for on-policy algos ({', '.join(ON_POLICY)}): HER recomputes "
                             f"{cfg['algo']!r}'s rewards from the stored goals, unnormalized")
        if t["reward"] != "env":
            raise ValueError(f"train.reward = {t['reward']!r} is for on-policy algos ({', '.join(ON_POLICY)}): HER "
                             f"relabels {cfg['algo']!r}'s rewards with the env's compute_reward, which it would not "
                             "match")
    check_reward(cfg)
    check_policy_keys(cfg)
    if t["clip_target_q"] and cfg["algo"] != "sac":
        raise ValueError(f"train.clip_target_q is implemented for algo 'sac' (its twin critics), not {cfg['algo']!r}")
    if t["clip_target_q"] and gym.spec(cfg["env_id"]).kwargs.get("dense_reward", False):
        raise ValueError(f"train.clip_target_q clamps to the sparse -1/0 reward's return range; {cfg['env_id']} has "
                         "a dense reward")
    if t["num_envs"] < 1 or t["total_timesteps"] < 1 or t["eval_episodes"] < 0:
        raise ValueError(f"need num_envs >= 1, total_timesteps >= 1, eval_episodes >= 0; got {t}")
    for key in ("replay_buffer_class", "replay_buffer_kwargs", "env", "seed", "device"):
        if key in cfg["model"]:
            raise ValueError(f"[model] must not set {key!r} (HER is configured in [her], seed/device in [train])")
    if t["video"] not in VIDEO_FORMATS:
        raise ValueError(f"train.video must be one of {list(VIDEO_FORMATS)}, got {t['video']!r}")
    n = t["num_envs"]
    if t["total_timesteps"] % n:  # every batched step adds num_envs timesteps; SB3 stops at the first >= the total
        rounded = -(-t["total_timesteps"] // n) * n
        cfg.setdefault("notes", []).append(f"train.total_timesteps rounded up from {t['total_timesteps']} to {rounded},"
                                           f" a multiple of num_envs = {n} (each batched step adds {n} timesteps)")
        t["total_timesteps"] = rounded
    if cfg["algo"] in ON_POLICY:  # no replay buffer to size, no episodes HER must wait for
        return cfg
    buffer, cap = int(cfg["model"].get("buffer_size", 1_000_000)), t["total_timesteps"] + t["num_envs"]
    if buffer > cap:  # never filled past the run's length: the rest is memory and checkpoint size
        cfg["model"]["buffer_size"] = cap  # + one batched step: the last one fills it without wrapping around
        cfg.setdefault("notes", []).append(f"model.buffer_size capped from {buffer} to the run's total_timesteps "
                                           f"+ num_envs = {cap}")
    spec = gym.spec(cfg["env_id"])
    episode = int(spec.max_episode_steps or 50)
    ls = int(cfg["model"].get("learning_starts", 100))
    if ls < t["num_envs"] * episode:  # HER samples finished episodes only: one must end before training starts
        cfg["model"]["learning_starts"] = t["num_envs"] * episode
        cfg.setdefault("notes", []).append(f"model.learning_starts raised from {ls} to num_envs * episode length "
                                           f"= {t['num_envs'] * episode} (HER needs a finished episode)")
    return cfg


def train(config=None, *, output: str | Path | None = None, total_timesteps=None, seed=None, num_envs=None,
          device=None, progress_bar=None, checkpoint_freq=None, eval_freq=None, eval_episodes=None, video=None,
          overrides=(), verbose: int = 1, resume: str | Path | None = None, on_evaluation=None) -> TrainResult:
    """Train from a config (``"push"``, the default, a path, or a dict) and write the run to ``output`` (default
    ``runs/train``; see the module doc). ``resume``: a run directory (or a ``save_checkpoint`` copy) to continue
    from its latest checkpoint, with its ``config.json`` (``config`` must then be None; the other arguments and
    ``overrides`` still apply) and by default into itself. ``on_evaluation(row, save_checkpoint)``: see the module
    doc."""
    from .. import envs as _envs
    from ..envs.adapters.sb3 import SuperDexSB3VecEnv

    _envs.register_envs()
    resume_from = None
    if resume is not None:
        resume = Path(resume)
        if config is not None:
            raise ValueError(f"resume: the config is the run's own ({resume / 'config.json'}); pass config=None "
                             f"(change values with overrides / total_timesteps), got config={config!r}")
        if not (resume / "config.json").is_file():
            raise FileNotFoundError(f"resume: {resume} is not a run directory (no config.json in it)")
        run_algo = json.loads((resume / "config.json").read_text()).get("algo", "sac")
        resume_from = latest_checkpoint(resume, run_algo not in ON_POLICY)  # fails before anything is written
        config = resume / "config.json"
    cfg = resolve("push" if config is None else config, total_timesteps=total_timesteps, seed=seed,
                  num_envs=num_envs, device=device, progress_bar=progress_bar, checkpoint_freq=checkpoint_freq,
                  eval_freq=eval_freq, eval_episodes=eval_episodes, video=video, overrides=overrides)
    t = cfg["train"]
    if on_evaluation is not None and not callable(on_evaluation):
        raise ValueError(f"on_evaluation must be callable(row, save_checkpoint), got {on_evaluation!r}")
    if resume_from is not None and resume_from[0] > t["total_timesteps"]:
        raise ValueError(f"resume: the checkpoint is at {resume_from[0]} timesteps, past total_timesteps = "
                         f"{t['total_timesteps']}")
    out = Path(output if output is not None else (resume if resume is not None else "runs/train"))
    out.mkdir(parents=True, exist_ok=True)
    start_wall = time.time()
    cfg["versions"] = {"stable_baselines3": stable_baselines3.__version__, "torch": torch.__version__,
                       "gymnasium": gym.__version__}
    atomic_write_text(out / "config.json", json.dumps(cfg, indent=2) + "\n")
    for note in cfg.get("notes", []):
        _print(f"note: {note}")

    spec = gym.spec(cfg["env_id"])
    env_kwargs = {**spec.kwargs, **cfg["env"]}
    n, s = t["num_envs"], t["seed"]
    if t["video"] == "mp4":
        check_mp4_support()  # fail before training, not after
    start = time.perf_counter()
    start_n, rows, before = 0, [], 0.0  # before: the run's wall-clock up to the checkpoint resumed from
    with torch_settings(bool(t["deterministic_torch"]), int(t["torch_threads"])):
        if resume_from is not None:  # fresh worlds, seeded apart from the run's first ones, reproducibly
            start_n = resume_from[0]
            s_env = int(np.random.SeedSequence([s, start_n]).generate_state(1)[0] % 2**31)
            rows = [r for r in read_curve(resume / "learning_curve.csv") if r["timesteps"] <= start_n]
            before = checkpoint_wall_time(resume_from[1], start_n, rows)
        else:
            s_env = s
        set_random_seed(s_env)
        venv = SuperDexSB3VecEnv(n, seed=s_env, env_id=cfg["env_id"],
                                 **{"max_episode_steps": int(spec.max_episode_steps or 50), **env_kwargs})
        # inside the monitor: episode returns (and the rollout/ep_rew_mean log) are the reward trained on
        venv = VecMonitor(wrap_reward(venv, t["reward"], cfg["reward"]))
        if t["policy_keys"]:
            venv = KeepObservationKeys(venv, t["policy_keys"])
        cls = algorithm_class(cfg["algo"])
        if t["warmup_policy"] == "scripted":
            cls = type(cls.__name__, (ScriptedWarmup, cls), {})
        if resume_from is not None:
            ck = resume_from[1].parent
            if t["normalize"]:
                norm = ck / f"model_vecnormalize_{start_n}_steps.pkl"
                if not norm.is_file():
                    raise FileNotFoundError(f"resume: the run normalizes observations but {norm} is missing")
                venv = VecNormalize.load(str(norm), venv)
            model = cls.load(resume_from[1], env=venv, device=t["device"])
            model.set_random_seed(s_env)
            if cfg["algo"] not in ON_POLICY:  # the buffer's unfinished episodes are closed: the worlds restart
                model.load_replay_buffer(ck / f"model_replay_buffer_{start_n}_steps.pkl", truncate_last_traj=True)
            model._last_obs = None  # the saved observation belongs to worlds that no longer exist: reset them
            if verbose >= 1:
                _print(f"resuming {resume} from {start_n} timesteps ({resume_from[1].name}) to "
                       f"{t['total_timesteps']}")
        else:
            if t["normalize"]:  # rewards only on-policy: HER recomputes rewards from the stored (raw) goals
                venv = VecNormalize(venv, norm_obs=True, norm_reward=bool(t["normalize_reward"]),
                                    clip_obs=float(t["clip_obs"]), gamma=float(cfg["model"].get("gamma", 0.99)),
                                    norm_obs_keys=vector_keys(venv.observation_space))
            model_kwargs = dict(cfg["model"])
            policy = model_kwargs.pop("policy", "MultiInputPolicy")
            model_kwargs["policy_kwargs"] = named_extractor(model_kwargs.get("policy_kwargs", {}))
            if isinstance(model_kwargs.get("train_freq"), list):
                model_kwargs["train_freq"] = tuple(model_kwargs["train_freq"])
            if cfg["algo"] in ON_POLICY:
                model = cls(policy, venv, seed=s, device=t["device"], verbose=0, **model_kwargs)
            else:
                model = cls(policy, venv, replay_buffer_class=HerReplayBuffer,
                            replay_buffer_kwargs=dict(cfg["her"]), seed=s, device=t["device"], verbose=0,
                            **model_kwargs)
        if t["clip_target_q"]:
            clip_target_q(model, float(cfg["model"].get("gamma", 0.99)))
        if t["warmup_policy"] == "scripted":
            from ..suite import scripted_policy

            model.setup_warmup(scripted_policy(cfg["env_id"]), float(t["warmup_random_prob"]), s_env)
        model.set_logger(configure(str(out), ["csv"] + (["stdout"] if verbose >= 2 else [])))

        callbacks = []
        eval_cb = None
        eval_env = None

        def clock() -> float:  # the run's wall-clock, across resumes
            return before + time.perf_counter() - start

        def save_checkpoint(directory) -> Path:
            return save_run_checkpoint(model, Path(directory), eval_cb.rows if eval_cb is not None else [], cfg,
                                       clock())

        if t["eval_episodes"] > 0:  # before the checkpoint callback: a checkpoint holds a coinciding evaluation
            eval_env = make_eval_vec_env(cfg["env_id"], min(t["eval_episodes"], 64), cfg["env"])
            eval_cb = SuccessEvalCallback(eval_env, t["eval_episodes"], t["eval_seed"], t["eval_freq"],
                                          out / "learning_curve.csv",
                                          out / "best_model.zip" if t["eval_freq"] > 0 else None, start - before,
                                          verbose=int(verbose >= 1), rows=rows, start_timesteps=start_n,
                                          on_evaluation=on_evaluation, save_checkpoint=save_checkpoint)
            callbacks.append(eval_cb)
        if t["checkpoint_freq"] > 0:
            callbacks.append(RunCheckpointCallback(t["checkpoint_freq"], out, cfg,
                                                   lambda: eval_cb.rows if eval_cb is not None else [], start_n,
                                                   clock))
        remaining = t["total_timesteps"] - int(model.num_timesteps)
        if remaining > 0:
            model.learn(total_timesteps=remaining, callback=CallbackList(callbacks),
                        progress_bar=bool(t["progress_bar"]), reset_num_timesteps=resume_from is None)
        train_time = time.perf_counter() - start
        final = eval_cb.run_evaluation(dump=True) if eval_cb is not None else None
        save_model(model, out / "model.zip")
        if eval_env is not None:
            eval_env.close()
        video = None
        if t["video"] != "none":
            video = record_episode(model, cfg, out / f"eval_episode.{t['video']}")
    remove_if_empty(out / "checkpoints")  # an earlier version made it up front; keep runs tidy either way
    wall = time.perf_counter() - start

    curve = eval_cb.rows if eval_cb is not None else []
    png, png_skipped = plot_curve(curve, out / "learning_curve.png", cfg["env_id"]), None
    if png is None:
        png_skipped = "no evaluation ran (eval_episodes = 0)" if not curve else \
            "matplotlib is not installed (pip install 'superdex-gym[train]')"
    success_buffer = list(model.ep_success_buffer or [])
    metrics = {
        "env_id": cfg["env_id"],
        "algo": cfg["algo"],
        "seed": s,
        "num_envs": n,
        "timesteps": int(model.num_timesteps),
        "wall_time_s": round(wall, 3),
        "run_wall_time_s": round(before + wall, 3),  # with the legs before a resume
        "train_time_s": round(train_time, 3),
        "timesteps_per_s": round((model.num_timesteps - start_n) / max(train_time, 1e-9), 2),
        "last_success_rate": None if final is None else final["success_rate"],
        "last_mean_return": None if final is None else final["mean_return"],
        "best_success_rate": max((r["success_rate"] for r in curve), default=None),
        "eval_episodes": t["eval_episodes"],
        "train_success_rate_last_100": (sum(map(float, success_buffer)) / len(success_buffer)
                                        if success_buffer else None),
        "learning_curve_png": None if png is None else str(png.name),
        "learning_curve_png_skipped": png_skipped,
        "video": None if video is None else video["path"].name,
        "video_episode": None if video is None else {k: v for k, v in video.items() if k != "path"},
        "resumed_from_timesteps": None if resume_from is None else start_n,
        "versions": cfg["versions"],
    }
    atomic_write_text(out / "metrics.json", json.dumps(metrics, indent=2) + "\n")
    if verbose >= 1:
        last = "n/a" if final is None else f"{final['success_rate']:.3f}"
        _print(f"trained {metrics['timesteps']} timesteps in {wall:.1f} s; final success rate {last}")
        _print(format_outputs(out, written_since(out, start_wall - 1.0), png_skipped))  # 1 s: coarse file mtimes
    return TrainResult(model=model, output=out, config=cfg, metrics=metrics, curve=curve)


# --- command line -------------------------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="superdex-train", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", default=None,
                   help=f"a packaged config ({', '.join(available_configs())}) or a .toml/.json path "
                        "(default push; with --resume, the run's own)")
    p.add_argument("--resume", default=None, metavar="RUN_DIR",
                   help="continue RUN_DIR from its latest checkpoint (model, normalization, replay buffer) to the "
                        "total timesteps, writing into RUN_DIR unless --output is given")
    p.add_argument("--total-timesteps", type=int, default=None)
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--num-envs", type=int, default=None, help="batched worlds")
    p.add_argument("--output", default=None, help="run directory (default runs/<config>-s<seed>)")
    p.add_argument("--device", default=None, help="cpu, cuda or auto")
    p.add_argument("--progress-bar", action=argparse.BooleanOptionalAction, default=None)
    p.add_argument("--checkpoint-freq", type=int, default=None, help="timesteps between checkpoints (0: none)")
    p.add_argument("--eval-freq", type=int, default=None, help="timesteps between evaluations (0: final only)")
    p.add_argument("--eval-episodes", type=int, default=None, help="episodes per evaluation (0: no evaluation)")
    p.add_argument("--video", choices=VIDEO_FORMATS, default=None,
                   help="one episode of the final model as a GIF (default) or an MP4, or none")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="SECTION.KEY=VALUE",
                   help="override a config value, e.g. --set model.batch_size=256 (repeatable)")
    p.add_argument("-v", "--verbose", action="count", default=0, help="also print SB3's logger tables")
    p.add_argument("-q", "--quiet", action="store_true")
    return p


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    output = args.output
    if output is None and args.resume is None:
        name = Path(args.config or "push").stem
        output = f"runs/{name}-s{args.seed if args.seed is not None else 0}"
    return cli_exit_code(lambda: train(
        args.config, output=output, resume=args.resume, total_timesteps=args.total_timesteps, seed=args.seed,
        num_envs=args.num_envs, device=args.device, progress_bar=args.progress_bar,
        checkpoint_freq=args.checkpoint_freq, eval_freq=args.eval_freq, eval_episodes=args.eval_episodes,
        video=args.video, overrides=args.overrides, verbose=0 if args.quiet else 1 + args.verbose))


if __name__ == "__main__":
    sys.exit(main())
