"""Gymnasium environments over a task's worlds (``GripperWorlds`` subclasses): the single environment
(`GripperGoalEnv`, one world) and the native batched vector environment (`GripperGoalVectorEnv`, every world in one
engine scene, one engine call per physics substep). Each task subclasses both, naming its worlds class and its
``gym.make`` kwargs (``make_config``).

Vector contract (Gymnasium 1.x ``VectorEnv``): ``metadata["autoreset_mode"] = AutoresetMode.NEXT_STEP``: the step
after an episode ends (terminated or truncated at ``max_episode_steps``) resets that world: it returns the new
episode's first observation with reward 0 and terminated = truncated = False, and ignores that world's action.
Infos are dicts of arrays with ``_key`` masks. Seeding: ``reset(seed=s)`` seeds world i with ``s + i`` (a list
seeds each world), exactly as ``SyncVectorEnv`` does, so world i replays a single env reset with that seed.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.utils import seeding
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from .scene_view import HumanWindow, SceneView, default_camera

RENDER_MODES = ["human", "rgb_array", "depth_array"]


def goal_spaces(worlds) -> spaces.Dict:
    """``Dict(observation, achieved_goal, desired_goal)`` with the worlds' real bounds (float32)."""
    obs_low, obs_high = worlds.observation_bounds()
    goal_low, goal_high = worlds.goal_bounds()
    goal = spaces.Box(goal_low.astype(np.float32), goal_high.astype(np.float32), shape=(3,), dtype=np.float32)
    return spaces.Dict({
        "observation": spaces.Box(obs_low, obs_high, shape=obs_low.shape, dtype=np.float32),
        "achieved_goal": goal,
        "desired_goal": goal,
    })


class GripperGoalEnv(gym.Env):
    """A single gripper-task environment (one world of a task's worlds class); subclasses set ``worlds_class`` and
    ``make_config`` (the task's ``gym.make`` kwargs -> its validated config)."""

    metadata = {"render_modes": RENDER_MODES, "render_fps": 25}
    worlds_class = None
    make_config = None

    def __init__(self, render_mode=None, dense_reward: bool = False, terminate_on_success: bool = False,
                 render_width: int = 480, render_height: int = 480, camera_distance: float = 0.9,
                 camera_azimuth: float = -135.0, camera_elevation: float = 40.0, **physics):
        if render_mode is not None and render_mode not in RENDER_MODES:
            raise ValueError(f"render_mode must be one of {RENDER_MODES} or None, got {render_mode!r}")
        config = type(self).make_config(**physics)
        self.worlds = self.worlds_class(1, config)
        self.dense_reward = bool(dense_reward)
        self.terminate_on_success = bool(terminate_on_success)
        self.render_mode = render_mode
        self.metadata = {**self.metadata, "render_fps": int(round(1.0 / config.control_dt))}
        self.observation_space = goal_spaces(self.worlds)
        self.action_space = spaces.Box(-1.0, 1.0, shape=(4,), dtype=np.float32)
        self._camera = default_camera(render_width, render_height, camera_distance, camera_azimuth, camera_elevation)
        self._view = None
        self._window = None
        self._has_reset = False

    # --- Gymnasium API ------------------------------------------------------------------------------------------
    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.worlds.reset_worlds(np.array([0]), [self.np_random], options)
        self._has_reset = True
        obs = self._obs()
        if self.render_mode == "human":
            self.render()
        return obs, self._info(obs)

    def step(self, action):
        if not self._has_reset:
            raise RuntimeError("call reset() before step()")
        action = np.asarray(action, dtype=np.float64)
        if action.shape != (4,):
            raise ValueError(f"action must have shape (4,), got {action.shape}")
        self.worlds.apply_actions(action[None])
        obs = self._obs()
        info = self._info(obs)
        reward = float(self.compute_reward(obs["achieved_goal"], obs["desired_goal"], info))
        terminated = bool(self.terminate_on_success and info["is_success"])
        if self.render_mode == "human":
            self.render()
        return obs, reward, terminated, False, info

    def compute_reward(self, achieved_goal, desired_goal, info=None):
        """Vectorized over leading axes: (..., 3) goals -> (...) float32 rewards (HER relabelling)."""
        return self.worlds.task.compute_reward(achieved_goal, desired_goal, self.dense_reward)

    def render(self):
        if self.render_mode is None:
            gym.logger.warn("render() called without a render_mode; pass render_mode='rgb_array' to gym.make")
            return None
        if self._view is None:
            self._view = SceneView(self.worlds, camera=self._camera)
        if self.render_mode == "depth_array":
            return self._view.depth(0)
        rgb = self._view.rgb(0)
        if self.render_mode == "human":
            if self._window is None:
                self._window = HumanWindow(self._camera.width, self._camera.height, self.metadata["render_fps"])
            self._window.show(rgb)
            return None
        return rgb

    def close(self):
        if self._window is not None:
            self._window.close()
            self._window = None

    # --- state -----------------------------------------------------------------------------------------------
    def get_state(self) -> dict:
        """Everything that determines the future (physics, goal, commanded targets, RNG state)."""
        return {"worlds": self.worlds.get_state(), "np_random": self.np_random.bit_generator.state}

    def set_state(self, state: dict) -> None:
        self.worlds.set_state(state["worlds"])
        self.np_random.bit_generator.state = state["np_random"]
        self._has_reset = True

    # --- helpers -------------------------------------------------------------------------------------------------
    def _obs(self) -> dict:
        return {k: v[0] for k, v in self.worlds.observations().items()}

    def _info(self, obs) -> dict:
        d = float(self.worlds.task.distance(obs["achieved_goal"], obs["desired_goal"]))
        return {"is_success": bool(d < self.worlds.task.config.distance_threshold_m), "distance": d}


class GripperGoalVectorEnv(VectorEnv):
    """The native batched vector env of a gripper task (all worlds in one engine scene); subclasses set
    ``worlds_class`` and ``make_config`` as `GripperGoalEnv` does."""

    metadata = {"render_modes": ["rgb_array", "depth_array"], "render_fps": 25, "autoreset_mode": AutoresetMode.NEXT_STEP}
    worlds_class = None
    make_config = None

    def __init__(self, num_envs: int = 1, render_mode=None, dense_reward: bool = False,
                 terminate_on_success: bool = False, max_episode_steps: int = 50, render_width: int = 480,
                 render_height: int = 480, **physics):
        if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)) or num_envs < 1:
            raise ValueError(f"num_envs must be an integer >= 1, got {num_envs!r}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']} or None, got {render_mode!r}")
        if max_episode_steps is None or int(max_episode_steps) < 1:
            raise ValueError(f"max_episode_steps must be >= 1, got {max_episode_steps!r}")
        config = type(self).make_config(**physics)
        self.num_envs = int(num_envs)
        self.worlds = self.worlds_class(self.num_envs, config)
        self.dense_reward = bool(dense_reward)
        self.terminate_on_success = bool(terminate_on_success)
        self.max_episode_steps = int(max_episode_steps)
        self.render_mode = render_mode
        self.metadata = {**self.metadata, "render_fps": int(round(1.0 / config.control_dt))}
        self.single_observation_space = goal_spaces(self.worlds)
        self.single_action_space = gym.spaces.Box(-1.0, 1.0, shape=(4,), dtype=np.float32)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self._rngs = [seeding.np_random(None)[0] for _ in range(self.num_envs)]
        self._elapsed = np.zeros(self.num_envs, dtype=np.int64)
        self._autoreset = np.zeros(self.num_envs, dtype=bool)
        self._view = None
        self._camera = default_camera(render_width, render_height)
        self._has_reset = False

    # --- seeding -----------------------------------------------------------------------------------------------
    def _seed_worlds(self, seed, worlds):
        if seed is None:
            seeds = [None] * len(worlds)
        elif isinstance(seed, (int, np.integer)):
            seeds = [int(seed) + int(i) for i in worlds]
        else:
            seeds = list(seed)
            if len(seeds) != self.num_envs:
                raise ValueError(f"a seed list must have num_envs = {self.num_envs} entries, got {len(seeds)}")
            seeds = [seeds[int(i)] for i in worlds]
        for i, s in zip(worlds, seeds):
            self._rngs[int(i)] = seeding.np_random(s)[0]

    # --- VectorEnv API ---------------------------------------------------------------------------------------
    def reset(self, *, seed=None, options=None):
        options = dict(options or {})
        mask = options.pop("reset_mask", None)
        worlds = np.arange(self.num_envs) if mask is None else np.nonzero(np.asarray(mask, dtype=bool))[0]
        if options:
            raise ValueError(f"unknown vector reset options {sorted(options)}; supported: 'reset_mask'")
        self._seed_worlds(seed, worlds)
        self.worlds.reset_worlds(worlds, [self._rngs[i] for i in worlds])
        self._elapsed[worlds] = 0
        self._autoreset[worlds] = False
        self._has_reset = True
        obs = self.worlds.observations()
        return obs, self._infos(obs)

    def step(self, actions):
        if not self._has_reset:
            raise RuntimeError("call reset() before step()")
        actions = np.asarray(actions, dtype=np.float64)
        if actions.shape != (self.num_envs, 4):
            raise ValueError(f"actions must have shape ({self.num_envs}, 4), got {actions.shape}")
        if not np.all(np.isfinite(actions)):
            raise ValueError("actions contain NaN or inf; nothing was stepped")
        resetting = np.nonzero(self._autoreset)[0]
        self.worlds.apply_actions(np.where(self._autoreset[:, None], 0.0, actions))
        if resetting.size:
            self.worlds.reset_worlds(resetting, [self._rngs[i] for i in resetting])
        obs = self.worlds.observations()
        infos = self._infos(obs)
        rewards = self.worlds.task.compute_reward(obs["achieved_goal"], obs["desired_goal"], self.dense_reward)
        self._elapsed += 1
        self._elapsed[resetting] = 0
        terminated = self.terminate_on_success & infos["is_success"]
        truncated = self._elapsed >= self.max_episode_steps
        rewards[resetting] = 0.0
        terminated[resetting] = False
        truncated[resetting] = False
        self._autoreset = terminated | truncated
        return obs, rewards.astype(np.float32), terminated, truncated, infos

    def compute_reward(self, achieved_goal, desired_goal, info=None):
        return self.worlds.task.compute_reward(achieved_goal, desired_goal, self.dense_reward)

    def render(self):
        if self.render_mode is None:
            gym.logger.warn("render() called without a render_mode")
            return None
        if self._view is None:
            self._view = SceneView(self.worlds, camera=self._camera)
        frames = [self._view.depth(i) if self.render_mode == "depth_array" else self._view.rgb(i)
                  for i in range(self.num_envs)]
        return tuple(frames)

    def _infos(self, obs) -> dict:
        d = self.worlds.task.distance(obs["achieved_goal"], obs["desired_goal"])
        ok = np.ones(self.num_envs, dtype=bool)
        return {"is_success": d < self.worlds.task.config.distance_threshold_m, "_is_success": ok,
                "distance": d.astype(np.float64), "_distance": ok}
