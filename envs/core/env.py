"""`RobotTaskEnv`: the single Gymnasium environment of a registered robot + task (one world of `RobotTaskWorlds`).

``robot`` and ``task`` name their classes as ``"module:Class"`` inside ``envs/robots`` and ``envs/tasks`` (the
registration table passes them); every other ``gym.make`` kwarg goes to the part that names it: the worlds'
physics and solver settings (`world_config`), the robot's ``make_config`` or the task's ``make_config``.
"""

from __future__ import annotations

import importlib

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from superdex_gym.sim.validation import as_bool, real_array

from ..rendering.scene_view import HUMAN_MODE_HINT, HumanWindow, default_camera, human_mode_available
from .config import split_kwargs, world_config
from .pixels import PixelObservations, RenderView
from .worlds import RobotTaskWorlds

# "human" is declared only where pygame is installed (the `human` extra): everything declared can run.
RENDER_MODES = (["human"] if human_mode_available() else []) + ["rgb_array", "depth_array"]
DEFAULT_ROBOT = "floating_gripper:FloatingGripper"


def load_part(package: str, name: str):
    """The class ``"module:Class"`` of ``superdex_gym.envs.<package>``."""
    module, _, attr = str(name).partition(":")
    try:
        return getattr(importlib.import_module(f"superdex_gym.envs.{package}.{module}"), attr)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"no {package[:-1]} {name!r} in superdex_gym.envs.{package} ('module:Class')") from exc


def make_worlds(num_worlds: int, robot: str, task: str, kwargs: dict) -> RobotTaskWorlds:
    """Worlds of ``robot`` + ``task`` with the ``gym.make`` kwargs dealt to their parts."""
    robot_cls, task_cls = load_part("robots", robot), load_part("tasks", task)
    world_kw, robot_kw, task_kw = split_kwargs(kwargs, world_config, robot_cls.make_config, task_cls.make_config)
    config = world_config(**world_kw)
    task_config = task_cls.make_config(**task_kw)
    the_robot = robot_cls(robot_cls.make_config(**robot_kw))
    return RobotTaskWorlds(num_worlds, config, the_robot, task_cls(task_config, the_robot))


def goal_spaces(worlds) -> spaces.Dict:
    """``Dict(observation, achieved_goal, desired_goal)`` with the worlds' real bounds (float32)."""
    obs_low, obs_high = worlds.observation_bounds()
    goal_low, goal_high = worlds.goal_bounds()
    goal = spaces.Box(goal_low, goal_high, shape=goal_low.shape, dtype=np.float32)
    return spaces.Dict({
        "observation": spaces.Box(obs_low, obs_high, shape=obs_low.shape, dtype=np.float32),
        "achieved_goal": goal,
        "desired_goal": goal,
    })


def rewards_and_infos(worlds, obs: dict, dense: bool, copies: bool = True) -> tuple[np.ndarray, dict]:
    """Rewards (float32, the sum of the terms) and infos: ``is_success``, ``distance`` (the farthest object's),
    each term as ``reward_<term>`` and the step's physics (`worlds.physics_report`), arrays over the worlds.
    ``copies`` False: the physics entries are the worlds' own arrays (for a caller that only reads them now)."""
    task = worlds.task
    terms, success, distance = task.step_evaluation(obs["achieved_goal"], obs["desired_goal"], dense)
    infos = {"is_success": success, "distance": distance.astype(np.float64),
             **(worlds.physics_infos() if copies else worlds.physics), **task.step_infos(worlds.scene)}
    infos.update({f"reward_{name}": np.asarray(value, dtype=np.float64) for name, value in terms.items()})
    values = list(terms.values())
    # np.sum adds from its +0 identity (so a -0.0 term sums to +0.0): the same, without its Python wrapper
    total = 0.0 + values[0] if len(values) == 1 else np.sum(values, axis=0)
    return total.astype(np.float32), infos


def checked_episode_steps(value, allow_none: bool = False):
    """An episode length: an int >= 1 (None where ``allow_none``)."""
    if value is None and allow_none:
        return None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"max_episode_steps must be an integer >= 1, got {value!r}")
    return int(value)


class RobotTaskEnv(gym.Env):
    metadata = {"render_modes": RENDER_MODES, "render_fps": 25}

    def __init__(self, render_mode=None, dense_reward: bool = False, terminate_on_success: bool = False,
                 render_width: int = 480, render_height: int = 480, camera_distance: float | None = None,
                 camera_azimuth: float | None = None, camera_elevation: float | None = None,
                 max_episode_steps: int | None = None, obs_mode: str = "state", image_size=64, camera: str = "task",
                 randomize=False, *, task: str, robot: str = DEFAULT_ROBOT, **kwargs):
        if render_mode == "human" and "human" not in RENDER_MODES:
            raise ValueError(HUMAN_MODE_HINT)
        if render_mode is not None and render_mode not in RENDER_MODES:
            raise ValueError(f"render_mode must be one of {RENDER_MODES} or None, got {render_mode!r}")
        self.max_episode_steps = checked_episode_steps(max_episode_steps, allow_none=True)
        self.worlds = make_worlds(1, robot, task, kwargs)
        self.dense_reward = as_bool(dense_reward, "dense_reward")
        self.terminate_on_success = as_bool(terminate_on_success, "terminate_on_success")
        self.render_mode = render_mode
        self.metadata = {**self.metadata, "render_fps": int(round(1.0 / self.worlds.config.control_dt))}
        self.pixels = PixelObservations(self.worlds, obs_mode, image_size, camera, randomize)
        self.observation_space = self.pixels.space(goal_spaces(self.worlds))
        self.action_space = spaces.Box(-1.0, 1.0, shape=(self.worlds.robot.action_dim,), dtype=np.float32)
        given = {"distance_m": camera_distance, "azimuth_deg": camera_azimuth, "elevation_deg": camera_elevation}
        # the task's view (Throw's bin stands 1 m away), then the robot's (the whole arm), unless the caller sets it
        # (default: 0.9 m, -135, 40 deg)
        view = {**self.worlds.task.camera, **self.worlds.robot.render_camera,
                **{k: v for k, v in given.items() if v is not None}}
        self._camera = default_camera(render_width, render_height, **view)
        self._view = None
        self._window = None
        self._has_reset = False
        self._elapsed = 0  # steps since the last reset that succeeded (or set_state)
        self._count_restarted = False  # a reset was rejected in this episode: a TimeLimit around us restarted its count

    # --- Gymnasium API ------------------------------------------------------------------------------------------
    def reset(self, *, seed=None, options=None):
        world = np.array([0])
        try:
            self.worlds.check_options(world, options)  # before seeding: a rejected reset changes nothing
            super().reset(seed=seed)  # a bad seed raises before the generator changes
        except Exception:
            # Gymnasium's TimeLimit (gym.make's outermost wrapper) zeroed its count before these checks could run:
            # the episode goes on, and this env ends it at its length itself (`step`).
            self._count_restarted = self._has_reset
            raise
        self.worlds.reset_worlds(world, [self.np_random], options)
        self.pixels.randomize_worlds(world, [self.np_random])
        self._has_reset = True
        self._elapsed, self._count_restarted = 0, False
        obs = self._obs()
        if self.render_mode == "human":
            self.render()
        return obs, self._reward_and_info(obs)[1]

    def step(self, action):
        if not self._has_reset:
            raise RuntimeError("call reset() before step()")
        action = real_array(action, "action")
        if action.shape != self.action_space.shape:
            raise ValueError(f"action must have shape {self.action_space.shape}, got {action.shape}")
        self.worlds.apply_actions(action[None])
        obs = self._obs()
        reward, info = self._reward_and_info(obs)
        terminated = bool(self.terminate_on_success and info["is_success"])
        self._elapsed += 1
        # the episode ends rather than go on in a frozen or undone world, and at its length when a TimeLimit's
        # count was restarted by a rejected reset
        truncated = info["physics_diverged"] or (self._count_restarted and self.max_episode_steps is not None
                                                 and self._elapsed >= self.max_episode_steps)
        if self.render_mode == "human":
            self.render()
        return obs, reward, terminated, truncated, info

    def compute_reward(self, achieved_goal, desired_goal, info=None):
        """Vectorized over leading axes: (..., goal) goals -> (...) float32 rewards (HER relabelling)."""
        return self.worlds.task.compute_reward(achieved_goal, desired_goal, self.dense_reward)

    def render(self):
        if self.render_mode is None:
            gym.logger.warn("render() called without a render_mode; pass render_mode='rgb_array' to gym.make")
            return None
        if self._view is None:
            self._view = RenderView(self.worlds, self._camera, self.pixels)
        rgb, depth = self._view.frames(self.render_mode == "depth_array")
        if self.render_mode == "depth_array":
            return depth[0]
        rgb = rgb[0]
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
        """Restore a `get_state` of any env of the same configuration (any instance, any process); a state that does
        not fit raises ValueError and changes nothing. Counts as a reset: ``step`` may follow."""
        if not isinstance(state, dict) or set(state) != {"worlds", "np_random"}:
            got = sorted(state) if isinstance(state, dict) else type(state).__name__
            raise ValueError(f"state must be a dict from get_state() with keys ['np_random', 'worlds'], got {got}")
        checked = self.worlds.check_state(state["worlds"])
        generator = type(self.np_random.bit_generator)()
        try:
            generator.state = state["np_random"]  # validated on a spare generator first
        except (TypeError, ValueError, KeyError, OverflowError) as exc:
            raise ValueError(f"state['np_random'] is not a {type(generator).__name__} state: {exc}") from exc
        self.worlds.set_state(checked)
        self.np_random.bit_generator.state = state["np_random"]
        self._has_reset = True
        self._elapsed, self._count_restarted = 0, False

    # --- helpers -------------------------------------------------------------------------------------------------
    def _obs(self) -> dict:
        return {k: v[0] for k, v in self.pixels.observe(self.worlds.observations()).items()}

    def _reward_and_info(self, obs) -> tuple[float, dict]:
        reward, info = rewards_and_infos(self.worlds, obs, self.dense_reward, copies=False)
        info = {k: v.item() for k, v in info.items()}  # Python bool / int / float of world 0
        return float(reward), info
