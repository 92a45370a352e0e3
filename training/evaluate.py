"""Evaluate a trained model (or the scripted baseline) on seeded episodes; optionally write a GIF / MP4.

    python -m superdex_gym.training.evaluate runs/push/model.zip --episodes 100 --seed 0 --gif push.gif
    python -m superdex_gym.training.evaluate --scripted --env SuperDex/Push-v0 --episodes 20 --json scripted.json

Episode ``i`` is reset with seed ``S + i`` and the policy acts deterministically, so a run is reproducible. The
episodes are batched over the native vector env (``--num-envs`` worlds at a time; a world replays the single env
exactly, so the batch size does not change the results); the first ``--video-episodes`` episodes run in a single
``render_mode="rgb_array"`` env when a video is asked for. When the model has a ``config.json`` beside it (as
``train`` writes), the env id and env kwargs default to the ones it was trained on.
"""

from __future__ import annotations

import argparse
import json
import pickle
import re
import sys
from pathlib import Path

import gymnasium as gym

from .config import cli_exit_code
from .rollout import (ModelPolicy, Rollouts, ScriptedPolicy, check_mp4_support, make_eval_vec_env,
                      run_batched_episodes, run_rendered_episode, write_video)

DEFAULT_ENV = "SuperDex/Push-v0"


def _register() -> None:
    from .. import envs

    envs.register_envs()


def algorithm_class(name: str):
    name = name.lower()
    if name == "sac":
        from stable_baselines3 import SAC

        return SAC
    if name == "tqc":
        try:
            from sb3_contrib import TQC
        except ModuleNotFoundError as e:
            raise ModuleNotFoundError("algo 'tqc' needs the 'sb3-contrib' package (pip install sb3-contrib)") from e
        return TQC
    if name == "ppo":
        from stable_baselines3 import PPO

        return PPO
    raise ValueError(f"unknown algo {name!r}; expected 'sac', 'tqc' or 'ppo'")


def run_config_of(model_path: str | Path) -> dict | None:
    """The resolved config a training run wrote beside its model (``config.json``), if any."""
    p = Path(model_path).resolve().parent / "config.json"
    if p.is_file():
        return json.loads(p.read_text())
    return None


def vecnormalize_path_for(model_path: str | Path) -> Path | None:
    """The ``VecNormalize`` statistics saved with a model: ``<name>_vecnormalize.pkl`` beside ``<name>.zip``, or
    for a checkpoint ``<prefix>_<n>_steps.zip`` SB3's ``<prefix>_vecnormalize_<n>_steps.pkl``; None if absent."""
    p = Path(model_path)
    candidates = [p.with_name(p.stem + "_vecnormalize.pkl")]
    m = re.fullmatch(r"(.*)_(\d+)_steps", p.stem)
    if m:
        candidates.append(p.with_name(f"{m.group(1)}_vecnormalize_{m.group(2)}_steps.pkl"))
    return next((c for c in candidates if c.is_file()), None)


def load_normalizer(path: str | Path):
    """Saved ``VecNormalize`` statistics, usable without an env (``normalize_obs`` only)."""
    with open(path, "rb") as f:
        norm = pickle.load(f)
    norm.training = False
    return norm


def load_model(path: str | Path, algo: str | None = None, device: str = "cpu"):
    """Load an SB3 model for inference. The replay buffer is not rebuilt (a HER model would otherwise need an env
    and allocate its full buffer): ``replay_buffer_class`` is replaced by the plain dict buffer of size 1."""
    from stable_baselines3.common.buffers import DictReplayBuffer

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no model file {path}")
    if algo is None:
        cfg = run_config_of(path)
        algo = (cfg or {}).get("algo", "sac")
    cls = algorithm_class(algo)
    custom = {"replay_buffer_class": DictReplayBuffer, "replay_buffer_kwargs": {}, "buffer_size": 1,
              "learning_rate": 0.0, "lr_schedule": lambda _: 0.0}
    return cls.load(path, device=device, custom_objects=custom)


def load_model_and_normalizer(model_path: str | Path, algo: str | None = None, device: str = "cpu", normalizer=None):
    """The model at ``model_path`` and its ``VecNormalize`` (``normalizer``: an object or ``.pkl`` path; default the
    statistics saved beside the model, an error if its run config says ``normalize`` and there are none)."""
    model_path = Path(model_path)
    model = load_model(model_path, algo=algo, device=device)
    if normalizer is None:
        normalizer = vecnormalize_path_for(model_path)
        if normalizer is None and (run_config_of(model_path) or {}).get("train", {}).get("normalize"):
            raise FileNotFoundError(f"{model_path} was trained with normalized observations but its "
                                    f"statistics ({model_path.stem}_vecnormalize.pkl) are missing; pass "
                                    "--vecnormalize PATH")
    if isinstance(normalizer, (str, Path)):
        normalizer = load_normalizer(normalizer)
    return model, normalizer


def check_model_fits_env(model, env_id: str, env_kwargs: dict, guessed: bool) -> None:
    """A model evaluated on an env whose observations it was not trained on fails here, with the env named,
    instead of deep in a normalizer or policy with a broadcasting error."""
    probe = gym.make(env_id, **env_kwargs)
    try:
        space = probe.observation_space
    finally:
        probe.close()
    keys = getattr(model.observation_space, "spaces", None)
    if keys is not None and isinstance(space, gym.spaces.Dict) and set(keys) <= set(space.spaces):
        # a model trained on some keys (train.policy_keys), its images channels first as SB3 transposes them
        from stable_baselines3.common.preprocessing import is_image_space, is_image_space_channels_first
        from stable_baselines3.common.vec_env import VecTransposeImage

        space = gym.spaces.Dict({k: VecTransposeImage.transpose_space(space[k])
                                 if is_image_space(space[k]) and not is_image_space_channels_first(space[k])
                                 else space[k] for k in keys})
    if space != model.observation_space:
        why = " (the default env: the model has no config.json beside it)" if guessed else ""
        raise ValueError(f"the model's observations {_shapes(model.observation_space)} do not match {env_id}'s "
                         f"{_shapes(space)}{why}; pass the env it was trained on (--env ID)")


def _shapes(space) -> str:
    if isinstance(space, gym.spaces.Dict):
        return "{" + ", ".join(f"{k}: {v.shape}" for k, v in space.spaces.items()) + "}"
    return str(space.shape)


def evaluate(model=None, env_id: str | None = None, episodes: int = 10, seed: int = 0, *, scripted: bool = False,
             env_kwargs: dict | None = None, num_envs: int = 16, gif: str | Path | None = None,
             mp4: str | Path | None = None, video_episodes: int = 1, render_width: int = 320,
             render_height: int = 320, deterministic: bool = True, json_path: str | Path | None = None,
             algo: str | None = None, device: str = "cpu", normalizer=None, verbose: bool = False) -> dict:
    """Run ``episodes`` seeded episodes of ``model`` (an SB3 model or a path to its ``.zip``), or of the scripted
    policy with ``scripted=True``. Returns a dict with ``success_rate``, ``mean_return``, ``std_return``,
    ``mean_length``, ``mean_final_distance``, per-episode results and the video path / frame count.

    ``normalizer``: the model's ``VecNormalize`` (object or ``.pkl`` path); for a model path it defaults to the
    statistics saved beside it (an error if its run config says ``normalize`` and there are none)."""
    _register()
    if gif is not None and mp4 is not None:
        raise ValueError("pass either gif or mp4, not both")
    video = gif if gif is not None else mp4
    if mp4 is not None:
        check_mp4_support()  # fail before running anything
    if episodes < 1:
        raise ValueError(f"episodes must be >= 1, got {episodes}")
    model_path = None
    run_cfg = None
    if scripted:
        policy, label = ScriptedPolicy(env_id or DEFAULT_ENV), "scripted"
    else:
        if model is None:
            raise ValueError("give a model (or a path to its .zip), or scripted=True")
        if isinstance(model, (str, Path)):
            model_path = Path(model)
            run_cfg = run_config_of(model_path)
            model, normalizer = load_model_and_normalizer(model_path, algo, device, normalizer)
        if isinstance(normalizer, (str, Path)):
            normalizer = load_normalizer(normalizer)
        policy, label = ModelPolicy(model, deterministic=deterministic, normalizer=normalizer), "model"
    env_arg = env_id
    if env_id is None:
        env_id = (run_cfg or {}).get("env_id", DEFAULT_ENV)
    if env_kwargs is None:
        env_kwargs = dict((run_cfg or {}).get("env", {}))
    if not scripted:
        check_model_fits_env(model, env_id, env_kwargs, guessed=run_cfg is None and env_arg is None)

    results = Rollouts()
    frames = []
    n_video = min(int(video_episodes), episodes) if video is not None else 0
    if n_video:
        env = gym.make(env_id, render_mode="rgb_array", render_width=render_width, render_height=render_height,
                       **env_kwargs)
        try:
            fps = int(env.metadata.get("render_fps", 25))
            for i in range(n_video):
                stats, ep_frames = run_rendered_episode(env, policy, seed + i)
                results.episodes.append(stats)
                frames.extend(ep_frames)
        finally:
            env.close()
    remaining = episodes - n_video
    if remaining:
        venv = make_eval_vec_env(env_id, min(int(num_envs), remaining), env_kwargs)
        try:
            results.extend(run_batched_episodes(venv, policy, remaining, seed + n_video))
        finally:
            venv.close()

    out = {"policy": label, "model": None if model_path is None else str(model_path), "env_id": env_id,
           "env_kwargs": env_kwargs, "seed": int(seed), "deterministic": bool(deterministic), **results.summary(),
           "per_episode": [e.as_dict() for e in results.episodes], "video": None, "video_frames": 0}
    if n_video:
        out["video"] = str(write_video(video, frames, fps))
        out["video_frames"] = len(frames)
    if json_path is not None:
        Path(json_path).parent.mkdir(parents=True, exist_ok=True)
        Path(json_path).write_text(json.dumps(out, indent=2) + "\n")
    if verbose:
        print(format_summary(out))
    return out


def format_summary(r: dict) -> str:
    who = "scripted policy" if r["policy"] == "scripted" else (r["model"] or "model")
    text = (f"{who} on {r['env_id']}: {r['episodes']} episodes (seeds {r['seed']}..{r['seed'] + r['episodes'] - 1})"
            f"\n  success rate {r['success_rate']:.3f}   mean return {r['mean_return']:.3f} +- {r['std_return']:.3f}"
            f"   mean final distance {r['mean_final_distance']:.4f} m")
    if r["video"]:
        text += f"\n  video: {r['video']} ({r['video_frames']} frames)"
    return text


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="superdex-evaluate", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", nargs="?", help="the model .zip (omit with --scripted)")
    p.add_argument("--env", default=None,
                   help=f"environment id (default: the model's training env, else {DEFAULT_ENV})")
    p.add_argument("--episodes", type=int, default=10)
    p.add_argument("--seed", type=int, default=0, help="episode i is reset with seed SEED + i (default 0)")
    p.add_argument("--scripted", action="store_true", help="run the task's scripted policy instead of a model")
    p.add_argument("--stochastic", action="store_true", help="sample actions instead of the deterministic policy")
    p.add_argument("--num-envs", type=int, default=16, help="worlds stepped together (default 16)")
    p.add_argument("--env-kwargs", default=None, help="JSON dict of gym.make kwargs (default: the model's config)")
    video = p.add_mutually_exclusive_group()
    video.add_argument("--gif", default=None, help="write the first episode(s) as a GIF")
    video.add_argument("--mp4", default=None, help="write the first episode(s) as an MP4 (needs imageio-ffmpeg)")
    p.add_argument("--video-episodes", type=int, default=1, help="episodes in the video (default 1)")
    p.add_argument("--width", type=int, default=320, help="video width (default 320)")
    p.add_argument("--height", type=int, default=320, help="video height (default 320)")
    p.add_argument("--json", default=None, help="write the results as JSON to this path")
    p.add_argument("--vecnormalize", default=None,
                   help="observation-normalization statistics (default: <model>_vecnormalize.pkl beside the model)")
    p.add_argument("--algo", default=None, help="sac, tqc or ppo (default: from the model's config.json, else sac)")
    p.add_argument("--device", default="cpu")
    return p


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    if args.model is None and not args.scripted:
        build_parser().error("give a MODEL.zip or --scripted")
    env_kwargs = json.loads(args.env_kwargs) if args.env_kwargs else None
    return cli_exit_code(lambda: evaluate(
        None if args.scripted else args.model, env_id=args.env, episodes=args.episodes, seed=args.seed,
        scripted=args.scripted, env_kwargs=env_kwargs, num_envs=args.num_envs, gif=args.gif, mp4=args.mp4,
        video_episodes=args.video_episodes, render_width=args.width, render_height=args.height,
        deterministic=not args.stochastic, json_path=args.json, algo=args.algo, device=args.device,
        normalizer=args.vecnormalize, verbose=True))


if __name__ == "__main__":
    sys.exit(main())
