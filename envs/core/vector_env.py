"""`RobotTaskVectorEnv`: the native batched vector environment of a registered robot + task (every world in one
engine scene, one engine call per physics substep), ``gym.make_vec``'s ``vector_entry_point``.

Vector contract (Gymnasium 1.x ``VectorEnv``): ``metadata["autoreset_mode"] = AutoresetMode.NEXT_STEP``: the step
after an episode ends (terminated or truncated at ``max_episode_steps``) resets that world: it returns the new
episode's first observation with reward 0 and terminated = truncated = False, and ignores that world's action.
Infos are dicts of arrays with ``_key`` masks. Seeding: ``reset(seed=s)`` seeds world i with ``s + i`` (a list
seeds each world), exactly as ``SyncVectorEnv`` does, so world i replays a single env reset with that seed; a
``reset()`` without a seed (with or without a ``reset_mask``) continues each world's generator, as there.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium.utils import seeding
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from superdex_gym.sim.validation import as_bool, real_array

from ..rendering.scene_view import default_camera
from .env import DEFAULT_ROBOT, checked_episode_steps, goal_spaces, make_worlds, rewards_and_infos
from .pixels import PixelObservations, RenderView


class RobotTaskVectorEnv(VectorEnv):
    metadata = {"render_modes": ["rgb_array", "depth_array"], "render_fps": 25, "autoreset_mode": AutoresetMode.NEXT_STEP}

    def __init__(self, num_envs: int = 1, render_mode=None, dense_reward: bool = False,
                 terminate_on_success: bool = False, max_episode_steps: int = 50, render_width: int = 480,
                 render_height: int = 480, obs_mode: str = "state", image_size=64, camera: str = "task",
                 randomize=False, *, task: str, robot: str = DEFAULT_ROBOT, **kwargs):
        if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)) or num_envs < 1:
            raise ValueError(f"num_envs must be an integer >= 1, got {num_envs!r}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']} or None, got {render_mode!r}")
        max_episode_steps = checked_episode_steps(max_episode_steps)
        self.num_envs = int(num_envs)
        self.worlds = make_worlds(self.num_envs, robot, task, kwargs)
        self.dense_reward = as_bool(dense_reward, "dense_reward")
        self.terminate_on_success = as_bool(terminate_on_success, "terminate_on_success")
        self.max_episode_steps = int(max_episode_steps)
        self.render_mode = render_mode
        self.metadata = {**self.metadata, "render_fps": int(round(1.0 / self.worlds.config.control_dt))}
        self.pixels = PixelObservations(self.worlds, obs_mode, image_size, camera, randomize)
        self.single_observation_space = self.pixels.space(goal_spaces(self.worlds))
        self.single_action_space = gym.spaces.Box(-1.0, 1.0, shape=(self.worlds.robot.action_dim,), dtype=np.float32)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self._rngs = [seeding.np_random(None)[0] for _ in range(self.num_envs)]
        self._elapsed = np.zeros(self.num_envs, dtype=np.int64)
        self._autoreset = np.zeros(self.num_envs, dtype=bool)
        self._view = None
        self._camera = default_camera(render_width, render_height,
                                      **{**self.worlds.task.camera, **self.worlds.robot.render_camera})
        self._has_reset = False

    # --- seeding -----------------------------------------------------------------------------------------------
    def _seed_worlds(self, seed, worlds):
        """Seed ``worlds``: ``s + i`` for an int, entry i of a list (None keeps that world's generator); None keeps
        every generator, as Gymnasium's ``SyncVectorEnv`` does (each env's ``reset(seed=None)`` continues its own)."""
        if seed is None:
            return
        if isinstance(seed, (int, np.integer)) and not isinstance(seed, (bool, np.bool_)):
            seeds = [int(seed) + int(i) for i in worlds]
        elif isinstance(seed, (list, tuple, np.ndarray)):
            seeds = list(seed)
            if len(seeds) != self.num_envs:
                raise ValueError(f"a seed list must have num_envs = {self.num_envs} entries, got {len(seeds)}")
            seeds = [seeds[int(i)] for i in worlds]
        else:
            raise TypeError(f"seed must be None, an int or a list of num_envs ints, got {seed!r}")
        # all first: a bad seed changes no generator
        generators = {int(i): seeding.np_random(s)[0] for i, s in zip(worlds, seeds) if s is not None}
        for i, generator in generators.items():
            self._rngs[i] = generator

    # --- VectorEnv API ---------------------------------------------------------------------------------------
    def reset(self, *, seed=None, options=None):
        if options is not None and not isinstance(options, dict):
            raise TypeError(f"options must be a dict or None, got {type(options).__name__}")
        options = dict(options or {})
        mask = options.pop("reset_mask", None)
        if options:
            raise ValueError(f"unknown vector reset options {sorted(options)}; supported: 'reset_mask'")
        worlds = np.arange(self.num_envs) if mask is None else np.nonzero(self._checked_mask(mask))[0]
        self._seed_worlds(seed, worlds)
        self.reset_worlds(worlds)
        self._has_reset = True
        obs = self.observations()
        return obs, self._rewards_and_infos(obs)[1]

    def _checked_mask(self, mask) -> np.ndarray:
        """``options["reset_mask"]``: a bool array of shape (num_envs,), as Gymnasium's vector envs take it (a list
        of indices like [0, 2] would otherwise be read as a mask)."""
        arr = np.asarray(mask)
        if arr.dtype != np.bool_:
            raise TypeError(f"options['reset_mask'] must be a bool array of shape ({self.num_envs},), got dtype "
                            f"{arr.dtype} ({mask!r})")
        if arr.shape != (self.num_envs,):
            raise ValueError(f"options['reset_mask'] must have shape ({self.num_envs},), got {arr.shape}")
        return arr

    def reset_worlds(self, worlds: np.ndarray) -> None:
        """New episodes in ``worlds`` from their own generators, their step counters back to 0 (the SB3 adapter
        resets finished worlds in the same step through this)."""
        self.worlds.reset_worlds(worlds, [self._rngs[i] for i in worlds])
        self.pixels.randomize_worlds(worlds, [self._rngs[i] for i in worlds])
        self._elapsed[worlds] = 0
        self._autoreset[worlds] = False

    def step(self, actions):
        if not self._has_reset:
            raise RuntimeError("call reset() before step()")
        actions = real_array(actions, "actions")
        if actions.shape != self.action_space.shape:
            raise ValueError(f"actions must have shape {self.action_space.shape}, got {actions.shape}")
        if not np.logical_and.reduce(np.isfinite(actions), axis=None):
            raise ValueError("actions contain NaN or inf; nothing was stepped")
        resetting = np.nonzero(self._autoreset)[0]
        self.worlds.apply_actions(np.where(self._autoreset[:, None], 0.0, actions))
        if resetting.size:
            self.worlds.reset_worlds(resetting, [self._rngs[i] for i in resetting])
            self.pixels.randomize_worlds(resetting, [self._rngs[i] for i in resetting])
        obs = self.observations()
        rewards, infos = self._rewards_and_infos(obs)
        self._elapsed += 1
        self._elapsed[resetting] = 0
        terminated = self.terminate_on_success & infos["is_success"]
        truncated = (self._elapsed >= self.max_episode_steps) | infos["physics_diverged"]
        rewards[resetting] = 0.0
        terminated[resetting] = False
        truncated[resetting] = False
        for key in infos:
            if key.startswith("reward_"):
                infos[key][resetting] = 0.0  # the autoreset step's reward is 0, and so are its terms
        self._autoreset = terminated | truncated
        return obs, rewards, terminated, truncated, infos

    def compute_reward(self, achieved_goal, desired_goal, info=None):
        return self.worlds.task.compute_reward(achieved_goal, desired_goal, self.dense_reward)

    def render(self):
        if self.render_mode is None:
            gym.logger.warn("render() called without a render_mode")
            return None
        if self._view is None:
            self._view = RenderView(self.worlds, self._camera, self.pixels)
        rgb, depth = self._view.frames(self.render_mode == "depth_array")  # every world in one kernel call
        return tuple(depth if self.render_mode == "depth_array" else rgb)

    def observations(self) -> dict:
        """Every world's observation dict (the state one, with the ``obs_mode``'s images)."""
        return self.pixels.observe(self.worlds.observations())

    def _rewards_and_infos(self, obs) -> tuple[np.ndarray, dict]:
        rewards, infos = rewards_and_infos(self.worlds, obs, self.dense_reward)
        ok = np.ones(self.num_envs, dtype=bool)
        return rewards, {**infos, **{f"_{k}": ok for k in infos}}
