"""`GripperPushWorlds`: W worlds of the Push scene in one engine scene (the task half of the Push environments;
the robot half, actions and state are `GripperWorlds`, ``gripper_worlds.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

import superdex_gym.sim as mochi

from .gripper_worlds import V_MAX, GripperWorldConfig, GripperWorlds, finite_array
from .push_task import PushConfig, PushTask


@dataclass(frozen=True)
class PushWorldConfig(GripperWorldConfig):
    task: PushConfig = field(default_factory=PushConfig)
    # Grip point at reset: above the table centre, at the cube's centre height plus this (FetchPush's
    # gripper_extra_height, 0 for Push: its gripper starts at the object's height, so exploring moves bump the
    # cube. Random actions move the cube in 17.5% of FetchPush episodes; in 6.5% of ours when the gripper started
    # 8 cm higher; measured over 200 episodes each).
    gripper_extra_height_m: float = 0.0

    @property
    def home(self) -> np.ndarray:
        """Grip point at reset (3,) [m]: (0, 0, cube half size + gripper_extra_height_m)."""
        return np.array([0.0, 0.0, self.task.cube_size_m / 2 + self.gripper_extra_height_m])

    def validate(self) -> "PushWorldConfig":
        self.task.validate()
        super().validate()
        # the cube is sampled at least cube_gripper_min_distance_m from the home: it must not start on the fingers
        # (they reach down to the home height)
        g, half = self.gripper, self.task.cube_size_m / 2
        footprint = np.hypot(g.finger_half_extents[0], 2 * g.finger_half_extents[1]) + half * np.sqrt(2)
        if self.home[2] < 2 * half and self.task.cube_gripper_min_distance_m < footprint:
            raise ValueError(f"cube_gripper_min_distance_m {self.task.cube_gripper_min_distance_m} would let the cube "
                             f"start on the gripper's closed fingers (needs >= {footprint:.4f} m)")
        return self


class GripperPushWorlds(GripperWorlds):
    scene_name = "SuperDex Push"

    def _create_task(self, scene) -> PushTask:
        task = PushTask(scene, self.config.task)
        self.cube = task.cube
        return task

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
        # Every option is checked before anything changes (a bad option leaves the world and its generator as
        # they were), then the episode is sampled (always: the options override draws, so the stream is the same).
        options = self._checked_options(worlds, options, ("goal", "object_pose"))
        goal, pose, quat = options.get("goal"), None, None
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
            self._check_object_pose(pose[:3], quat, *self._goal_bounds_float32())
        cube_pos = np.zeros((worlds.size, 3))
        cube_quat = np.tile([0.0, 0.0, 0.0, 1.0], (worlds.size, 1))
        for k, rng in enumerate(rngs):
            cube_pos[k], self.goal[worlds[k]] = self.task.sample_episode(rng, self.config.home[:2])
        if goal is not None:
            self.goal[worlds[0]] = goal
        if pose is not None:
            cube_pos[0], cube_quat[0] = pose[:3], quat
        self._restart_worlds(worlds)
        self.scene.set_actor_poses([self.cube], cube_pos[:, None], cube_quat[:, None], worlds=worlds)

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

    # --- observations --------------------------------------------------------------------------------------------
    def observations(self) -> dict:
        """Goal-conditioned observation dict of float32 arrays with a leading world axis (FetchPush's layout):
        grip point, cube position, cube - grip, finger offsets, cube rotation vector, cube linear and angular
        velocity, grip velocity, finger velocities (25)."""
        grip, fingers, grip_vel, finger_vel = self.robot_observation()
        cube = self.scene.get_actor_translations([self.cube])[:, 0]
        cube_rot = mochi.lie.log_so3(self.scene.get_actor_rotations([self.cube])[:, 0])
        lin, ang = self.scene.get_actor_velocities([self.cube])
        spin = V_MAX / (self.config.task.cube_size_m / 2)
        obs = np.concatenate(
            [grip, cube, cube - grip, fingers, cube_rot, np.clip(lin[:, 0], -V_MAX, V_MAX),
             np.clip(ang[:, 0], -spin, spin), grip_vel, finger_vel],
            axis=1,
        )
        return {
            "observation": obs.astype(np.float32),
            "achieved_goal": cube.astype(np.float32),
            "desired_goal": self.goal.astype(np.float32),
        }

    def goal_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """The cube stays inside the arena walls: |x|, |y| < arena_half, z between the floor and the top of the
        workspace plus the height a cube reaches when flung at ``V_MAX``."""
        c, t = self.config, self.config.task
        z_low, z_high = -t.floor_depth_m, c.workspace_high[2] + V_MAX**2 / (2 * 9.8)
        return np.array([-t.arena_half_m, -t.arena_half_m, z_low]), np.array([t.arena_half_m, t.arena_half_m, z_high])

    def observation_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Real bounds of the 25 observation components.

        The robot's parts: ``robot_observation_bounds``; the cube: ``goal_bounds``. Rotation vector: |theta| <=
        pi. A struck cube moves at most twice the gripper's top speed plus the fall from the table (sqrt(2 g h)),
        < ``V_MAX`` = 10 m/s, and spins at most V_MAX / (cube half size) rad/s. Velocities are clipped to these
        bounds in the observation (documented in the env; not reached in operation: the 10 000-step random test
        shows it).
        """
        robot = self.robot_observation_bounds()
        spin = V_MAX / (self.config.task.cube_size_m / 2)
        (grip_lo, grip_hi), (cube_lo, cube_hi) = robot["grip"], self.goal_bounds()
        parts = [robot["grip"], (cube_lo, cube_hi), (cube_lo - grip_hi, cube_hi - grip_lo), robot["fingers"],
                 (np.full(3, -np.pi), np.full(3, np.pi)), (np.full(3, -V_MAX), np.full(3, V_MAX)),
                 (np.full(3, -spin), np.full(3, spin)), robot["grip_velocity"], robot["finger_velocity"]]
        low = np.concatenate([lo for lo, _ in parts])
        high = np.concatenate([hi for _, hi in parts])
        return low.astype(np.float32), high.astype(np.float32)
