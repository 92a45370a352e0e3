"""`GripperWorlds`: W worlds of one gripper task in one engine scene, advanced by one engine call per substep.

The robot half of the robot / task split (DESIGN section 3), shared by every task: the scene and its solver
settings, the floating gripper, actions, the gripper's part of the observation, and state. A task's worlds class
(`GripperPushWorlds`, `GripperReachWorlds`) adds its scene contents, episode sampling, observation and bounds.

This is the core of the single environment (W = 1), the native vector environment and the SB3 VecEnv: every
per-world operation (reset, action, observation, reward) is written once, vectorized over worlds, so a batch of N
worlds behaves exactly like N single environments with the same seeds and actions.

Control: 25 Hz by default (``control_dt = physics_dt * substeps``); an action (W, 4) in [-1, 1] moves the grip
point target by ``action[:3] * max_step_m`` from the measured grip point (clipped to the workspace), and sets the
finger opening from ``action[3]`` unless the fingers are blocked. Targets are interpolated linearly over the
substeps, so the gripper moves smoothly toward them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

import superdex_gym.sim as mochi

from .robot import FloatingGripper, GripperConfig

V_MAX = 10.0  # m/s, bound of every linear velocity in the observation (see robot_observation_bounds)


@dataclass(frozen=True)
class GripperWorldConfig:
    """Physics, control and solver settings shared by every gripper task (a task's config extends it)."""

    # 2 physics steps of 20 ms per 25 Hz control step. One 40 ms step is not cheaper in practice: measured on 100
    # scripted Push episodes, 6.3 s instead of 7.3 s (each step needs more Newton iterations) and the success rate
    # falls from 100% to 75% (cubes are flung and tip over).
    physics_dt: float = 0.02  # s
    substeps: int = 2  # physics steps per control step -> 25 Hz
    max_step_m: float = 0.05  # grip point displacement per control step at |action| = 1
    block_gripper: bool = True
    workspace_low: tuple = (-0.3, -0.3, 0.005)  # m, grip point limits (z above the table top at 0)
    workspace_high: tuple = (0.3, 0.3, 0.3)
    gripper: GripperConfig = field(default_factory=GripperConfig)
    integration_method: mochi.IntegrationMethod = mochi.IntegrationMethod.BACKWARD_EULER
    # Newton settings of the env's scene. Pushing contacts converge linearly (~0.6 per iteration: the active
    # samples of the fingers and cube change between iterates), so the engine default (1e-3, 16) spends 16
    # iterations on residuals of ~1 mN. 1e-2 of the cube's weight (6 mN) with at most 8 iterations halves the
    # step time with the same scripted success (100% on 20 seeds, measured); both are gym.make kwargs. Fewer
    # iterations cost accuracy: one-step cube position error against a tight solve (W=64 random actions, 12 700
    # world steps) p99 3.7 um at 8, 16 um at 6, 47 um at 4 (p99.9 0.8 / 4.0 / 7.2 mm).
    solver_abs_tol: float = 1e-2
    solver_max_iter: int = 8
    # Newton starts every step from the bodies' constant-velocity prediction (not the reference's latest
    # solution): a cube pushed at steady speed then starts near its answer. Measured on 4 scripted episodes
    # (max_iter 40): 4.2 -> 2.0 Newton iterations per step on average, same success. The gripper's bodies start
    # on their drive targets (..._AND_TARGETS: in free motion they end within micrometres of them). The drives'
    # force cap (GripperConfig.drive_max_force, 50 N) makes a guess centimetres off expensive (a capped drive
    # walks in over 2-7 iterations); started on the targets, about half the random-action world steps converge
    # at the guess. Still, capped envs are slower than the old uncapped ones: W=64 ~62 vs ~48 ms per env step
    # (same machine, back to back), the price of not launching squeezed cubes.
    solver_initial_guess: mochi.InitialGuess = mochi.InitialGuess.CONSTANT_VELOCITY_AND_TARGETS
    # At most 2 line-search tries per Newton iteration (engine default 4). The rare hard steps (impacts, lagged
    # friction at a box edge: ~1% of random-action world steps) backtrack on every iteration and each try is a
    # full evaluation; with 64 worlds some world is almost always in one. Measured (W=64, random actions, one-step
    # position error against a tight solve, abs_tol 1e-5 / 60 iterations, 12 700 world steps): cube p99 4.1 um ->
    # 3.7 um, p99.9 0.63 -> 0.83 mm, max 42 -> 19 mm; unconverged steps 1.02% -> 1.00%; evaluations per env step
    # 19.4 -> 16.4 (make_vec(64) +14%); scripted success 100% with both (100 episodes, mean final distance 3.6 mm).
    solver_line_search_max_iter: int = 2

    @property
    def control_dt(self) -> float:
        return self.physics_dt * self.substeps

    @property
    def home(self) -> np.ndarray:
        """Grip point at reset (3,) [m]; each task defines it."""
        raise NotImplementedError

    def validate(self):
        if not (np.isfinite(self.physics_dt) and self.physics_dt > 0):
            raise ValueError(f"physics_dt must be finite and > 0, got {self.physics_dt!r}")
        if isinstance(self.substeps, bool) or not isinstance(self.substeps, (int, np.integer)) or self.substeps < 1:
            raise ValueError(f"substeps must be an integer >= 1, got {self.substeps!r}")
        if not (np.isfinite(self.max_step_m) and self.max_step_m > 0):
            raise ValueError(f"max_step_m must be finite and > 0, got {self.max_step_m!r}")
        lo, hi = np.asarray(self.workspace_low, float), np.asarray(self.workspace_high, float)
        if lo.shape != (3,) or hi.shape != (3,) or np.any(lo >= hi):
            raise ValueError(f"workspace_low must be below workspace_high in every axis, got {lo}, {hi}")
        if lo[2] < 0:
            raise ValueError("workspace_low z must keep the grip point above the table top (z >= 0)")
        if not isinstance(self.solver_initial_guess, mochi.InitialGuess):
            raise TypeError(f"solver_initial_guess must be an InitialGuess, got {self.solver_initial_guess!r}")
        home = self.home
        if np.any(home < lo) or np.any(home > hi):
            raise ValueError(f"the gripper's home {home.tolist()} must lie inside the workspace {lo.tolist()} .. "
                             f"{hi.tolist()}")
        return self


class GripperWorlds:
    """The robot half of a task's worlds; subclasses create the task (``_create_task``) and define reset
    sampling, ``observations`` and ``observation_bounds``."""

    scene_name = "SuperDex"

    def __init__(self, num_worlds: int, config: GripperWorldConfig):
        self.config = config.validate()
        self.num_worlds = int(num_worlds)
        scene = mochi.create_scene(self.scene_name)
        scene.set_gravity([0.0, 0.0, -9.8])  # robotics convention: Z up
        sp = scene.get_solver_params()
        sp.integration_method = config.integration_method
        sp.non_linear_solver.abs_tol = float(config.solver_abs_tol)
        sp.non_linear_solver.max_iter = int(config.solver_max_iter)
        sp.non_linear_solver.initial_guess = config.solver_initial_guess
        sp.non_linear_solver.line_search_max_iter = config.solver_line_search_max_iter
        scene.set_solver_params(sp)  # validates both
        self.scene = scene
        self.task = self._create_task(scene)
        self.gripper = FloatingGripper(scene, config.gripper)
        self._workspace_low = np.asarray(config.workspace_low, dtype=np.float64)
        self._workspace_high = np.asarray(config.workspace_high, dtype=np.float64)
        # One world at rest at home: the template every reset starts from.
        home = config.home[None]
        self.gripper.place(home, np.zeros(1), np.arange(1))
        self._template = scene.snapshot()
        scene.set_num_worlds(self.num_worlds)
        self.goal = np.zeros((self.num_worlds, 3))
        self._target = np.repeat(home, self.num_worlds, axis=0)  # commanded grip point (W, 3)
        self._opening = np.zeros(self.num_worlds)  # commanded finger opening (W,) m

    def _create_task(self, scene):
        raise NotImplementedError

    # --- reset ---------------------------------------------------------------------------------------------------
    def _restart_worlds(self, worlds: np.ndarray) -> None:
        """Worlds back to the template (everything at rest, the gripper at home, fingers closed)."""
        self.scene.restore_snapshot(self._template, worlds=worlds)
        self._target[worlds] = self.config.home
        self._opening[worlds] = 0.0

    def _checked_options(self, worlds: np.ndarray, options: dict | None, supported: tuple) -> dict:
        """Reset options validated before anything changes: only ``supported`` keys, one world at a time, and a
        ``goal`` (3,) inside the goal bounds (returned as float64)."""
        options = dict(options or {})
        unknown = set(options) - set(supported)
        if unknown:
            raise ValueError(f"unknown reset options {sorted(unknown)}; supported: {', '.join(map(repr, supported))}")
        if options and worlds.size != 1:
            raise ValueError("reset options apply to one world at a time")
        if "goal" in options:
            goal = finite_array(options["goal"], (3,), "options['goal']")
            low, high = self._goal_bounds_float32()
            if np.any(goal < low) or np.any(goal > high):
                raise ValueError(f"options['goal'] {goal.tolist()} lies outside the desired_goal bounds "
                                 f"{low.tolist()} .. {high.tolist()}")
            options["goal"] = goal
        return options

    def _goal_bounds_float32(self) -> tuple[np.ndarray, np.ndarray]:
        """``goal_bounds`` as the observation space holds them (float32), in float64."""
        return tuple(b.astype(np.float32).astype(np.float64) for b in self.goal_bounds())

    # --- actions -------------------------------------------------------------------------------------------------
    def apply_actions(self, actions: np.ndarray) -> None:
        """Validate, clip and apply (W, 4) actions, then advance every world by one control step."""
        actions = np.asarray(actions, dtype=np.float64)
        if actions.shape != (self.num_worlds, 4):
            raise ValueError(f"actions must have shape ({self.num_worlds}, 4), got {actions.shape}")
        if not np.all(np.isfinite(actions)):
            bad = np.argwhere(~np.isfinite(actions))[0]
            raise ValueError(f"action contains NaN or inf (world {bad[0]}, component {bad[1]}); nothing was stepped")
        actions = np.clip(actions, -1.0, 1.0)  # documented: out-of-range actions are clipped to [-1, 1]
        grip, _ = self.gripper.grip_point()
        start_target, start_opening = self._target.copy(), self._opening.copy()
        new_target = np.clip(grip + actions[:, :3] * self.config.max_step_m, self._workspace_low, self._workspace_high)
        if self.config.block_gripper:
            new_opening = np.zeros(self.num_worlds)
        else:
            new_opening = 0.5 * (actions[:, 3] + 1.0) * self.config.gripper.max_opening_m
        n = self.config.substeps
        for j in range(1, n + 1):
            a = j / n
            self.gripper.set_targets(start_target + a * (new_target - start_target),
                                     start_opening + a * (new_opening - start_opening))
            self.scene.step(self.config.physics_dt)
        self._target, self._opening = new_target, new_opening

    # --- observations --------------------------------------------------------------------------------------------
    def robot_observation(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Grip point (W, 3) [m], finger offsets (W, 2) [m], grip velocity (W, 3) and finger velocities (W, 2)
        [m/s] (velocities clipped to +-V_MAX, see ``robot_observation_bounds``)."""
        grip, grip_vel = self.gripper.grip_point()
        fingers, finger_vel = self.gripper.finger_state()
        return grip, fingers, np.clip(grip_vel, -V_MAX, V_MAX), np.clip(finger_vel, -V_MAX, V_MAX)

    def robot_observation_bounds(self) -> dict:
        """Real bounds of the robot's observation parts, each a (low, high) pair.

        The grip point stays in the workspace (plus the drive's sub-millimetre compliance; 1 cm margin); the
        fingers within half the maximum opening plus their thickness; the gripper moves at most max_step /
        control_dt (1.25 m/s by default) < ``V_MAX``, to which velocities are clipped."""
        g, margin = self.config.gripper, 0.01
        finger = 0.5 * g.max_opening_m + 2 * g.finger_half_extents[1] + margin
        return {
            "grip": (self._workspace_low - margin, self._workspace_high + margin),
            "fingers": (np.full(2, -finger), np.full(2, finger)),
            "grip_velocity": (np.full(3, -V_MAX), np.full(3, V_MAX)),
            "finger_velocity": (np.full(2, -V_MAX), np.full(2, V_MAX)),
        }

    def goal_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Real bounds (3,) of the achieved and desired goals [m]; each task defines them."""
        raise NotImplementedError

    def observation_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Real bounds of the ``observation`` vector; each task defines them."""
        raise NotImplementedError

    def observations(self) -> dict:
        """Goal-conditioned observation dict of float32 arrays with a leading world axis; each task defines it."""
        raise NotImplementedError

    def reset_worlds(self, worlds: np.ndarray, rngs: list, options: dict | None = None) -> None:
        """Fresh episodes in ``worlds`` (K,), each sampled from its own generator ``rngs[k]``; each task defines
        it (and the reset options it accepts)."""
        raise NotImplementedError

    # --- state ---------------------------------------------------------------------------------------------------
    def get_state(self) -> dict:
        return {"scene": self.scene.snapshot(), "goal": self.goal.copy(), "target": self._target.copy(),
                "opening": self._opening.copy()}

    def set_state(self, state: dict) -> None:
        self.scene.restore_snapshot(state["scene"])
        self.goal, self._target, self._opening = (state["goal"].copy(), state["target"].copy(),
                                                  state["opening"].copy())


def gripper_world_kwargs(physics_dt=0.02, substeps=2, block_gripper=True, solver_abs_tol=1e-2, solver_max_iter=8,
                         solver_initial_guess="CONSTANT_VELOCITY_AND_TARGETS", solver_line_search_max_iter=2,
                         gripper_max_force=50.0) -> dict:
    """The robot and solver ``gym.make`` kwargs every gripper task shares, as `GripperWorldConfig` fields.

    ``solver_initial_guess``: an ``InitialGuess`` or its name; ``"LATEST_SOLUTION"`` is the reference's.
    ``solver_line_search_max_iter``: line-search tries per Newton iteration (the engine's default is 4); the
    Newton settings' reasons and measurements are in `GripperWorldConfig`. ``gripper_max_force``: the cap [N] on
    each gripper body's drive force (`GripperConfig.drive_max_force`; None: uncapped)."""
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
    return dict(physics_dt=float(physics_dt), substeps=substeps, block_gripper=bool(block_gripper),
                solver_abs_tol=solver_abs_tol, solver_max_iter=solver_max_iter,
                solver_initial_guess=solver_initial_guess, solver_line_search_max_iter=solver_line_search_max_iter,
                gripper=gripper)


def finite_array(value, shape, name) -> np.ndarray:
    arr = np.asarray(value, dtype=np.float64)
    if arr.shape != shape or not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be {shape} finite numbers, got {value!r}")
    return arr
