"""`GripperPushWorlds`: W worlds of the Push scene in one engine scene, advanced by one call per substep.

This is the shared core of the single environment (W = 1), the native vector environment and the SB3 VecEnv:
every per-world operation (reset, action, observation, reward) is written once, vectorized over worlds, so a
batch of N worlds behaves exactly like N single environments with the same seeds and actions.

Control: 25 Hz by default (``control_dt = physics_dt * substeps``); an action (W, 4) in [-1, 1] moves the grip
point target by ``action[:3] * max_step_m`` from the measured grip point (clipped to the workspace), and sets the
finger opening from ``action[3]`` unless the fingers are blocked. Targets are interpolated linearly over the
substeps, so the gripper moves smoothly toward them.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

import superdex_gym.sim as mochi

from .push_task import PushConfig, PushTask
from .robot import FloatingGripper, GripperConfig


@dataclass(frozen=True)
class PushWorldConfig:
    # 2 physics steps of 20 ms per 25 Hz control step. One 40 ms step is not cheaper in practice: measured on 100
    # scripted episodes, 6.3 s instead of 7.3 s (each step needs more Newton iterations) and the success rate
    # falls from 100% to 75% (cubes are flung and tip over).
    physics_dt: float = 0.02  # s
    substeps: int = 2  # physics steps per control step -> 25 Hz
    max_step_m: float = 0.05  # grip point displacement per control step at |action| = 1
    block_gripper: bool = True
    workspace_low: tuple = (-0.3, -0.3, 0.005)  # m, grip point limits (z above the table top at 0)
    workspace_high: tuple = (0.3, 0.3, 0.3)
    # Grip point at reset: above the table centre, at the cube's centre height plus this (FetchPush's
    # gripper_extra_height, 0 for Push: its gripper starts at the object's height, so exploring moves bump the
    # cube. Random actions move the cube in 17.5% of FetchPush episodes; in 6.5% of ours when the gripper started
    # 8 cm higher; measured over 200 episodes each).
    gripper_extra_height_m: float = 0.0
    gripper: GripperConfig = field(default_factory=GripperConfig)
    task: PushConfig = field(default_factory=PushConfig)
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
    def home(self) -> np.ndarray:
        """Grip point at reset (3,) [m]: (0, 0, cube half size + gripper_extra_height_m)."""
        return np.array([0.0, 0.0, self.task.cube_size_m / 2 + self.gripper_extra_height_m])

    @property
    def control_dt(self) -> float:
        return self.physics_dt * self.substeps

    def validate(self) -> "PushWorldConfig":
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
        home = self.home
        if np.any(home < lo) or np.any(home > hi):
            raise ValueError(f"the gripper's home {home.tolist()} (cube half size + gripper_extra_height_m above the "
                             f"table) must lie inside the workspace {lo.tolist()} .. {hi.tolist()}")
        # the cube is sampled at least cube_gripper_min_distance_m from the home: it must not start on the fingers
        # (they reach down to the home height)
        g, half = self.gripper, self.task.cube_size_m / 2
        footprint = np.hypot(g.finger_half_extents[0], 2 * g.finger_half_extents[1]) + half * np.sqrt(2)
        if home[2] < 2 * half and self.task.cube_gripper_min_distance_m < footprint:
            raise ValueError(f"cube_gripper_min_distance_m {self.task.cube_gripper_min_distance_m} would let the cube "
                             f"start on the gripper's closed fingers (needs >= {footprint:.4f} m)")
        if not isinstance(self.solver_initial_guess, mochi.InitialGuess):
            raise TypeError(f"solver_initial_guess must be an InitialGuess, got {self.solver_initial_guess!r}")
        self.task.validate()
        return self


OBS_DIM = 25
V_MAX = 10.0  # m/s, bound of every linear velocity in the observation (see observation_bounds)


class GripperPushWorlds:
    def __init__(self, num_worlds: int, config: PushWorldConfig):
        self.config = config.validate()
        self.num_worlds = int(num_worlds)
        scene = mochi.create_scene("SuperDex Push")
        scene.set_gravity([0.0, 0.0, -9.8])  # robotics convention: Z up
        sp = scene.get_solver_params()
        sp.integration_method = config.integration_method
        sp.non_linear_solver.abs_tol = float(config.solver_abs_tol)
        sp.non_linear_solver.max_iter = int(config.solver_max_iter)
        sp.non_linear_solver.initial_guess = config.solver_initial_guess
        sp.non_linear_solver.line_search_max_iter = config.solver_line_search_max_iter
        scene.set_solver_params(sp)  # validates both
        self.scene = scene
        self.task = PushTask(scene, config.task)
        self.gripper = FloatingGripper(scene, config.gripper)
        self.cube = self.task.cube
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

    # --- reset ---------------------------------------------------------------------------------------------------
    def reset_worlds(self, worlds: np.ndarray, rngs: list, options: dict | None = None) -> None:
        """Fresh episodes in ``worlds`` (K,), each sampled from its own generator ``rngs[k]``.

        ``options`` (single-world resets): ``goal`` (3,) and ``object_pose`` (position (3,) or position +
        quaternion (x, y, z, w) (7,)) override the sampled values. Both positions must lie in the achieved /
        desired goal bounds, and the cube must not overlap the table (resting on it is z = cube_size / 2) or the
        gripper at home; a bad option raises ValueError before anything changes.
        """
        worlds = np.asarray(worlds, dtype=np.int64)
        if worlds.size == 0:
            return
        options = dict(options or {})
        unknown = set(options) - {"goal", "object_pose"}
        if unknown:
            raise ValueError(f"unknown reset options {sorted(unknown)}; supported: 'goal', 'object_pose'")
        if options and worlds.size != 1:
            raise ValueError("reset options apply to one world at a time")
        # Every option is checked before anything changes (a bad option leaves the world and its generator as
        # they were), then the episode is sampled (always: the options override draws, so the stream is the same).
        goal = pose = quat = None
        if options:
            obs_low, obs_high = self.observation_bounds()
            cube_lo, cube_hi = obs_low[3:6].astype(np.float64), obs_high[3:6].astype(np.float64)
        if "goal" in options:
            goal = _finite_array(options["goal"], (3,), "options['goal']")
            if np.any(goal < cube_lo) or np.any(goal > cube_hi):
                raise ValueError(f"options['goal'] {goal.tolist()} lies outside the desired_goal bounds "
                                 f"{cube_lo.tolist()} .. {cube_hi.tolist()} (the arena)")
        if "object_pose" in options:
            pose = np.asarray(options["object_pose"], dtype=np.float64).ravel()
            if pose.shape not in ((3,), (7,)) or not np.all(np.isfinite(pose)):
                raise ValueError("options['object_pose'] must be 3 (position) or 7 (position + quaternion x, y, z, w) "
                                 f"finite numbers, got {options['object_pose']!r}")
            quat = np.array([0.0, 0.0, 0.0, 1.0])
            if pose.size == 7:
                if np.linalg.norm(pose[3:]) < 1e-12:
                    raise ValueError("options['object_pose'] quaternion must be non-zero")
                quat = pose[3:] / np.linalg.norm(pose[3:])
            self._check_object_pose(pose[:3], quat, cube_lo, cube_hi)
        cube_pos = np.zeros((worlds.size, 3))
        cube_quat = np.tile([0.0, 0.0, 0.0, 1.0], (worlds.size, 1))
        for k, rng in enumerate(rngs):
            cube_pos[k], self.goal[worlds[k]] = self.task.sample_episode(rng, self.config.home[:2])
        if goal is not None:
            self.goal[worlds[0]] = goal
        if pose is not None:
            cube_pos[0], cube_quat[0] = pose[:3], quat
        self.scene.restore_snapshot(self._template, worlds=worlds)
        self.scene.set_actor_poses([self.cube], cube_pos[:, None], cube_quat[:, None], worlds=worlds)
        self._target[worlds] = self.config.home
        self._opening[worlds] = 0.0

    def _check_object_pose(self, position, quat, low, high) -> None:
        """A requested cube pose must lie in the achieved_goal bounds and must not start inside the table."""
        if np.any(position < low) or np.any(position > high):
            raise ValueError(f"options['object_pose'] position {position.tolist()} lies outside the achieved_goal "
                             f"bounds {low.tolist()} .. {high.tolist()} (the arena)")
        t = self.config.task
        half = t.cube_size_m / 2
        extent = half * np.abs(mochi.lie.quat_to_matrix(quat)).sum(axis=1)  # the rotated cube's AABB half size
        hx, hy, hz = t.table_half_extents
        tol = 1e-6  # m: a cube resting exactly on the top (z = half size) is fine
        inside = (np.abs(position[0]) < hx + extent[0] - tol and np.abs(position[1]) < hy + extent[1] - tol
                  and position[2] - extent[2] < -tol and position[2] + extent[2] > -2 * hz + tol)
        if inside:
            raise ValueError(f"options['object_pose'] puts the cube inside the table (its lowest point at z = "
                             f"{position[2] - extent[2]:.4f} m, the top is at z = 0; resting: z = {half} m)")
        # nor on the gripper, which starts at home with closed fingers (axis-aligned boxes)
        g = self.config.gripper
        centres = self.gripper.body_targets(self.config.home[None], np.zeros(1))[0]
        halves = np.array([g.palm_half_extents, g.finger_half_extents, g.finger_half_extents])
        overlap = np.all(np.abs(centres - position) < halves + extent - tol, axis=1)
        if np.any(overlap):
            raise ValueError(f"options['object_pose'] puts the cube inside the gripper, which starts with its grip "
                             f"point at {self.config.home.tolist()} (home)")

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
    def observations(self) -> dict:
        """Goal-conditioned observation dict of float32 arrays with a leading world axis."""
        grip, grip_vel = self.gripper.grip_point()
        fingers, finger_vel = self.gripper.finger_state()
        cube = self.scene.get_actor_translations([self.cube])[:, 0]
        cube_rot = mochi.lie.log_so3(self.scene.get_actor_rotations([self.cube])[:, 0])
        lin, ang = self.scene.get_actor_velocities([self.cube])
        spin = V_MAX / (self.config.task.cube_size_m / 2)
        obs = np.concatenate(
            [grip, cube, cube - grip, fingers, cube_rot, np.clip(lin[:, 0], -V_MAX, V_MAX),
             np.clip(ang[:, 0], -spin, spin), np.clip(grip_vel, -V_MAX, V_MAX), np.clip(finger_vel, -V_MAX, V_MAX)],
            axis=1,
        )
        return {
            "observation": obs.astype(np.float32),
            "achieved_goal": cube.astype(np.float32),
            "desired_goal": self.goal.astype(np.float32),
        }

    def observation_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Real bounds of the 25 observation components.

        Positions: the grip point stays in the workspace (plus the drive's sub-millimetre compliance; 1 cm
        margin); the cube stays inside the arena walls (|x|, |y| < arena_half, z between the floor and
        ``z_max``: the top of the workspace plus the height a cube reaches when flung at ``V_MAX``). Rotation
        vector: |theta| <= pi. Velocities: the gripper moves at most max_step / control_dt (1.25 m/s); a struck
        cube at most twice that plus the fall from the table (sqrt(2 g h)), < ``V_MAX`` = 10 m/s, and spins at
        most V_MAX / (cube half size) rad/s; finger velocities likewise. Velocities are clipped to these bounds
        in the observation (documented in the env; not reached in operation: the 10 000-step random test shows
        it).
        """
        c, t = self.config, self.config.task
        margin = 0.01
        g = c.gripper
        arena = t.arena_half_m
        z_low, z_high = -t.floor_depth_m, c.workspace_high[2] + V_MAX**2 / (2 * 9.8)
        finger = 0.5 * g.max_opening_m + 2 * g.finger_half_extents[1] + margin
        spin = V_MAX / (t.cube_size_m / 2)
        grip_lo, grip_hi = self._workspace_low - margin, self._workspace_high + margin
        cube_lo, cube_hi = np.array([-arena, -arena, z_low]), np.array([arena, arena, z_high])
        low = np.concatenate([grip_lo, cube_lo, cube_lo - grip_hi, [-finger] * 2, [-np.pi] * 3, [-V_MAX] * 3,
                              [-spin] * 3, [-V_MAX] * 3, [-V_MAX] * 2])
        high = np.concatenate([grip_hi, cube_hi, cube_hi - grip_lo, [finger] * 2, [np.pi] * 3, [V_MAX] * 3,
                               [spin] * 3, [V_MAX] * 3, [V_MAX] * 2])
        return low.astype(np.float32), high.astype(np.float32)

    # --- state ---------------------------------------------------------------------------------------------------
    def get_state(self) -> dict:
        return {"scene": self.scene.snapshot(), "goal": self.goal.copy(), "target": self._target.copy(),
                "opening": self._opening.copy()}

    def set_state(self, state: dict) -> None:
        self.scene.restore_snapshot(state["scene"])
        self.goal, self._target, self._opening = (state["goal"].copy(), state["target"].copy(),
                                                  state["opening"].copy())


def _finite_array(value, shape, name) -> np.ndarray:
    arr = np.asarray(value, dtype=np.float64)
    if arr.shape != shape or not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be {shape} finite numbers, got {value!r}")
    return arr
