"""`SuperDex/Push-v0` and `SuperDex/PushDense-v0`: push a 4 cm cube to a goal with a floating gripper.

Conventions follow Gymnasium-Robotics ``FetchPush`` and panda-gym ``PandaPush``:

* action ``Box(-1, 1, (4,))``: grip-point displacement dx, dy, dz (x 5 cm per 25 Hz control step) and a finger
  command (ignored while ``block_gripper=True``, the default for Push). Out-of-range actions are clipped to
  [-1, 1]; NaN or inf raise ``ValueError`` and nothing is stepped.
* observation ``Dict(observation (25,), achieved_goal (3,), desired_goal (3,))`` in float32. ``observation`` is
  grip point (3), cube position (3), cube - grip (3), finger offsets (2), cube rotation vector (3), cube linear
  velocity (3), cube angular velocity (3), grip velocity (3), finger velocities (2); world frame, SI units;
  bounds are physical (walls keep the cube in a 2 m arena; velocities are clipped to documented bounds that
  operation does not reach, see ``GripperPushWorlds.observation_bounds``).
* reward: sparse -1 / 0 (``Push-v0``), or -distance (``PushDense-v0``); ``compute_reward(achieved_goal,
  desired_goal, info)`` is vectorized over leading batch axes for HER relabelling; ``info["is_success"]``.
* reset: the grip point starts above the table centre at the cube's height (``gripper_extra_height`` = 0, as
  FetchPush), the cube at least ``cube_gripper_min_distance`` = 0.1 m from it, both in a ``goal_range`` = 0.3 m
  square.
* episodes: 50 steps (``TimeLimit`` from the registration), ``terminate_on_success`` (default False, as Fetch).
* ``reset(seed=..., options={"goal": (3,), "object_pose": (3,) or (7,)})``; a sampled goal is never within the
  success radius at reset (requested ones are taken as given). Requested positions must lie in the goal bounds (the
  arena) and the cube must not start inside the table or the gripper, else ``ValueError`` and nothing changes (the
  episode goes on). ``get_state()`` / ``set_state()`` round-trip exactly.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium import spaces

import superdex_gym.sim as mochi

from .batched import OBS_DIM, GripperPushWorlds, PushWorldConfig
from .push_task import PushConfig
from .robot import GripperConfig
from .scene_view import HumanWindow, SceneView, default_camera

RENDER_MODES = ["human", "rgb_array", "depth_array"]


def make_config(physics_dt=0.02, substeps=2, block_gripper=True, cube_size=0.04, cube_mass=0.064, friction=0.5,
                goal_range=0.3, distance_threshold=0.05, solver_abs_tol=1e-2, solver_max_iter=8,
                solver_initial_guess="CONSTANT_VELOCITY_AND_TARGETS",
                solver_line_search_max_iter=2, gripper_max_force=50.0, gripper_extra_height=0.0,
                cube_gripper_min_distance=0.1) -> PushWorldConfig:
    """The ``gym.make`` kwargs of the Push environments as a validated `PushWorldConfig`.

    ``solver_initial_guess``: an ``InitialGuess`` or its name; ``"LATEST_SOLUTION"`` is the reference's.
    ``solver_line_search_max_iter``: line-search tries per Newton iteration (the engine's default is 4); the
    Newton settings' reasons and measurements are in `PushWorldConfig`. ``gripper_max_force``: the cap [N] on
    each gripper body's drive force (`GripperConfig.drive_max_force`; None: uncapped). ``gripper_extra_height``:
    the grip point starts this far [m] above the cube's centre height (FetchPush's ``gripper_extra_height``, 0 for
    Push). ``cube_gripper_min_distance``: the cube is sampled at least this far [m] from the gripper's start in
    the table plane (FetchPush: 0.1)."""
    if isinstance(solver_initial_guess, str):
        try:
            solver_initial_guess = mochi.InitialGuess[solver_initial_guess.upper()]
        except KeyError:
            names = [g.name for g in mochi.InitialGuess]
            raise ValueError(f"solver_initial_guess must be one of {names}, got {solver_initial_guess!r}") from None
    if gripper_max_force is not None and not (isinstance(gripper_max_force, (int, float, np.integer, np.floating))
                                              and np.isfinite(gripper_max_force) and gripper_max_force > 0):
        raise ValueError(f"gripper_max_force must be None or a finite force > 0 [N], got {gripper_max_force!r}")
    gripper = GripperConfig(drive_max_force=None if gripper_max_force is None else float(gripper_max_force))
    task = PushConfig(cube_size_m=float(cube_size), cube_mass_kg=float(cube_mass), friction=float(friction),
                      goal_range_m=float(goal_range), distance_threshold_m=float(distance_threshold),
                      cube_gripper_min_distance_m=float(cube_gripper_min_distance))
    return PushWorldConfig(physics_dt=float(physics_dt), substeps=substeps, block_gripper=bool(block_gripper),
                           task=task, solver_abs_tol=solver_abs_tol, solver_max_iter=solver_max_iter,
                           solver_initial_guess=solver_initial_guess,
                           solver_line_search_max_iter=solver_line_search_max_iter, gripper=gripper,
                           gripper_extra_height_m=float(gripper_extra_height)).validate()


def goal_spaces(worlds: GripperPushWorlds) -> spaces.Dict:
    obs_low, obs_high = worlds.observation_bounds()
    # goals are cube positions: the arena bounds
    goal = spaces.Box(obs_low[3:6], obs_high[3:6], shape=(3,), dtype=np.float32)
    return spaces.Dict({
        "observation": spaces.Box(obs_low, obs_high, shape=(OBS_DIM,), dtype=np.float32),
        "achieved_goal": goal,
        "desired_goal": goal,
    })


class SuperDexPushEnv(gym.Env):
    metadata = {"render_modes": RENDER_MODES, "render_fps": 25}

    def __init__(self, render_mode=None, dense_reward: bool = False, terminate_on_success: bool = False,
                 render_width: int = 480, render_height: int = 480, camera_distance: float = 0.9,
                 camera_azimuth: float = -135.0, camera_elevation: float = 40.0, **physics):
        if render_mode is not None and render_mode not in RENDER_MODES:
            raise ValueError(f"render_mode must be one of {RENDER_MODES} or None, got {render_mode!r}")
        config = make_config(**physics)
        self.worlds = GripperPushWorlds(1, config)
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
