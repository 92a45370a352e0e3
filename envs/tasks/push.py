"""Push (FetchPush, PandaPush): push a 4 cm cube across the table to a goal on it.

* observation (25,): grip point (3), cube position (3), cube - grip (3), finger offsets (2), cube rotation vector
  (3), cube linear velocity (3), cube angular velocity (3), grip velocity (3), finger velocities (2) (FetchPush's
  layout); the achieved goal is the cube's position. Walls keep the cube in a 2 m arena, so the bounds are real;
  velocities are clipped to bounds operation does not reach.
* reset: the grip point starts above the table centre at the cube's height (``gripper_extra_height`` = 0, as
  FetchPush), the cube at least ``cube_gripper_min_distance`` = 0.1 m from it, cube and goal in a ``goal_range``
  = 0.3 m square, never solved at reset. ``options``: ``goal`` (3,), ``object_pose`` (3,) or (7,) (position +
  quaternion x, y, z, w): in the goal bounds, not inside the table or the gripper, else ValueError.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import superdex_gym.sim as mochi
from superdex_gym.sim.validation import as_real, check_mass

from ..core.config import V_MAX, clip
from ..core.task import Task, check_goals_reachable
from .arena import (box_extent, check_clear_of_boxes, check_clear_of_statics, check_outside_table, create_table,
                    create_walled_floor, parse_pose, wall_boxes)


@dataclass(frozen=True)
class PushConfig:
    cube_size_m: float = 0.04  # edge length
    cube_mass_kg: float = 0.064  # (density 1000 for the 4 cm cube)
    friction: float = 0.5  # Coulomb coefficient of cube and table
    goal_range_m: float = 0.3  # cube and goal are sampled in a square of this side, centred on the table
    distance_threshold_m: float = 0.05  # success radius
    table_half_extents: tuple = (0.4, 0.4, 0.2)  # m; the top is at z = 0
    floor_depth_m: float = 0.4  # a floor plane below the table catches a pushed-off cube
    arena_half_m: float = 1.0  # walls around the floor keep everything within |x|, |y| < arena_half_m
    # walls rise from the floor to floor + wall_height_m: 2.2 m above the table, so a body leaving the workspace
    # (top 0.3 m) at up to the escape speed sqrt(2 g 1.9 m) = 6.1 m/s falls back inside (docs/reliability.md)
    wall_height_m: float = 2.6
    cube_gripper_min_distance_m: float = 0.1  # in the table plane, from the gripper's home (FetchPush: 0.1 m)
    # Grip point at reset above the cube's centre height (FetchPush's gripper_extra_height; docs/envs_notes.md).
    gripper_extra_height_m: float = 0.0

    def validate(self) -> "PushConfig":
        for name in ("cube_size_m", "cube_mass_kg", "goal_range_m", "distance_threshold_m", "floor_depth_m"):
            value = getattr(self, name)
            if not (np.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be finite and > 0, got {value!r}")
        if not (np.isfinite(self.friction) and self.friction >= 0):
            raise ValueError(f"friction must be finite and >= 0, got {self.friction!r}")
        if self.goal_range_m / 2 > min(self.table_half_extents[:2]) - self.cube_size_m:
            raise ValueError(f"goal_range_m {self.goal_range_m} does not fit on the table {self.table_half_extents}")
        if not (np.isfinite(self.cube_gripper_min_distance_m) and self.cube_gripper_min_distance_m >= 0):
            raise ValueError("cube_gripper_min_distance_m must be finite and >= 0, got "
                             f"{self.cube_gripper_min_distance_m!r}")
        # the square must reach outside the keep-out circle around the home, with ~10% of its area left
        if self.cube_gripper_min_distance_m > 0.55 * self.goal_range_m:
            raise ValueError(f"cube_gripper_min_distance_m {self.cube_gripper_min_distance_m} leaves too little of "
                             f"the goal_range_m {self.goal_range_m} square to sample the cube from (at most 0.55 x "
                             "goal_range_m)")
        check_mass(self.cube_mass_kg, "cube_mass")
        check_goals_reachable(self)
        return self


class PushTask(Task):
    name = "Push"
    reset_options = ("goal", "object_pose")
    observation_layout = ("grip", "cube", "cube_rel_grip", "fingers", "cube_rotation", "cube_velocity",
                          "cube_spin", "grip_velocity", "finger_velocity")
    achieved_goal_parts = ("cube",)
    colors = {"cube": (0.85, 0.2, 0.15)}

    @staticmethod
    def make_config(cube_size=0.04, cube_mass=0.064, friction=0.5, goal_range=0.3, distance_threshold=0.05,
                    gripper_extra_height=0.0, cube_gripper_min_distance=0.1) -> PushConfig:
        return PushConfig(cube_size_m=as_real(cube_size, "cube_size"), cube_mass_kg=as_real(cube_mass, "cube_mass"),
                          friction=as_real(friction, "friction"), goal_range_m=as_real(goal_range, "goal_range"),
                          distance_threshold_m=as_real(distance_threshold, "distance_threshold"),
                          cube_gripper_min_distance_m=as_real(cube_gripper_min_distance, "cube_gripper_min_distance"),
                          gripper_extra_height_m=as_real(gripper_extra_height, "gripper_extra_height")).validate()

    def __init__(self, config: PushConfig, robot):
        super().__init__(config, robot)
        self.half = config.cube_size_m / 2
        self.marker_radius_m = self.half  # the goal's sphere in pictures: the cube's size
        # the cube is sampled at least cube_gripper_min_distance_m from the home: not on the closed fingers
        if config.cube_size_m > robot.max_opening_m:
            raise ValueError(f"cube_size {config.cube_size_m} m must be at most the gripper's opening "
                             f"{robot.max_opening_m} m, so the cube can be grasped")
        cap = robot.drive_max_force_n
        if cap is not None and config.friction * config.cube_mass_kg * 9.8 >= cap:
            raise ValueError(f"cube_mass {config.cube_mass_kg} kg is too heavy to push: its friction on the table "
                             f"(friction x mass x 9.8 = {config.friction * config.cube_mass_kg * 9.8:.3g} N) must stay "
                             f"below the gripper's drive force cap gripper_max_force = {cap} N")
        footprint = robot.footprint_m() + self.half * np.sqrt(2)
        if self.robot_home()[2] < 2 * self.half and config.cube_gripper_min_distance_m < footprint:
            raise ValueError(f"cube_gripper_min_distance_m {config.cube_gripper_min_distance_m} would let the cube "
                             f"start on the gripper's closed fingers (needs >= {footprint:.4f} m)")

    goals_in_air = False  # goals only on the table: a pushed cube cannot be lifted
    cube_actor_kwargs: dict = {}  # extra creation fields of the cube (tasks that grasp it refine its samples)

    def surface_contact(self):
        """ContactParams of the table and the cube."""
        return mochi.ContactParams(coulomb_friction_coefficient=self.config.friction)

    def build(self, scene) -> None:
        c = self.config
        contact = self.build_arena(scene)
        self.cube = scene.create_rigid_actor(
            name="cube", shape=mochi.create_box_mesh_shape([self.half] * 3), mass=c.cube_mass_kg, contact=contact,
            # the exact box distance: smooth where a grid SDF's trilinear gradient jumps between cells
            collider_type=mochi.ColliderType.BOX, world_from_local=mochi.TransformRT(translation=[0, 0, self.half]),
            **self.cube_actor_kwargs,
        )

    def build_arena(self, scene):
        """The table and the walled floor; returns the surface contact (the objects' too)."""
        c = self.config
        contact = self.surface_contact()
        self.table = create_table(scene, c.table_half_extents, contact)
        create_walled_floor(scene, c.floor_depth_m, c.arena_half_m, c.wall_height_m)
        return contact

    def static_boxes(self) -> list:
        """(name, centre, half extents) of the static boxes an object must not start in: the arena walls (the table
        has its own check, `check_outside_table`)."""
        c = self.config
        return [(f"arena wall {k}", centre, half)
                for k, (half, centre) in enumerate(wall_boxes(c.floor_depth_m, c.arena_half_m, c.wall_height_m))]

    def start_height_limit_m(self) -> float:
        """The highest a cube's centre may start: dropped from there onto the floor it stays below the escape
        speed (backward Euler's discrete fall is slower than the exact one, so the exact drop bounds it)."""
        return -self.config.floor_depth_m + self.half + self.escape_speed_m_s() ** 2 / (2 * 9.8)

    def goal_region(self) -> tuple[np.ndarray, np.ndarray]:
        """The cube centres a goal may ask for, where the gripper's workspace reaches: resting on the table (within
        the success radius of the resting height) or, where ``goals_in_air``, up to a held cube's centre with the
        grip point at the workspace's top."""
        lo, hi = self.robot.workspace()
        top = hi[2] + self.half if self.goals_in_air else self.half + self.config.distance_threshold_m
        return np.array([lo[0], lo[1], self.half]), np.array([hi[0], hi[1], top])

    def check_goal(self, goal: np.ndarray, what: str = "options['goal']") -> None:
        """ValueError unless every goal block lies in `goal_region` and no two cubes' targets overlap."""
        low, high = self.goal_region()
        targets = goal.reshape(self.objects, 3)
        for i, target in enumerate(targets):
            if np.any(target < low - 1e-6) or np.any(target > high + 1e-6):  # float32 goals pass
                which = f" target {i}" if self.objects > 1 else ""
                raise ValueError(f"{what}{which} {target.tolist()} cannot be reached: {self.name}'s goals lie in "
                                 f"{low.tolist()} .. {high.tolist()} (on the table, within the gripper's workspace)")
        for i in range(self.objects):
            for j in range(i):
                if np.all(np.abs(targets[i] - targets[j]) < 2 * self.half - 1e-6):
                    raise ValueError(f"{what} puts targets {j} and {i} closer than a cube's size: two cubes cannot "
                                     "both be there")

    def robot_home(self) -> np.ndarray:
        """Above the table centre at the cube's centre height plus ``gripper_extra_height_m``."""
        return np.array([0.0, 0.0, self.half + self.config.gripper_extra_height_m])

    # --- episodes ------------------------------------------------------------------------------------------------
    def sample_episode(self, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """Goal (3,) and cube position (1, 3): the cube at least ``cube_gripper_min_distance_m`` from the home,
        the goal outside the success radius. Rejection sampling, as FetchPush does."""
        h, home_xy = self.config.goal_range_m / 2, self.robot_home()[:2]
        while True:
            cube_xy = rng.uniform(-h, h, size=2)
            if np.linalg.norm(cube_xy - home_xy) >= self.config.cube_gripper_min_distance_m:
                break
        while True:
            goal_xy = rng.uniform(-h, h, size=2)
            if np.linalg.norm(goal_xy - cube_xy) > self.config.distance_threshold_m:
                break
        return np.array([*goal_xy, self.half]), np.array([[*cube_xy, self.half]])

    def parse_options(self, options: dict) -> dict:
        if "goal" in options:
            self.check_goal(options["goal"])
        if "object_pose" in options:
            position, quat, _ = self.parse_cube_pose(options["object_pose"], "options['object_pose']", "the cube")
            options["object_pose"] = position, quat
        return options

    def parse_cube_pose(self, value, what: str, cube: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """A requested cube pose (3,) or (7,) as (position, unit quaternion, world AABB half size); ValueError
        (naming ``what`` and ``cube``) if it lies outside the arena, inside the table or inside the gripper."""
        position, quat = parse_pose(value, what)
        low, high = (b.astype(np.float32).astype(np.float64) for b in self.cube_bounds())
        if np.any(position < low) or np.any(position > high):
            raise ValueError(f"{what} position {position.tolist()} lies outside the achieved_goal bounds "
                             f"{low.tolist()} .. {high.tolist()} (the arena)")
        extent = box_extent(self.half, quat)
        check_outside_table(position, extent, self.config.table_half_extents, f"{what} puts {cube}", self.half)
        check_clear_of_statics(position, extent, self.static_boxes(), -self.config.floor_depth_m,
                               self.start_height_limit_m(), f"{what} puts {cube}")
        home = self.robot_home()
        check_clear_of_boxes(position, extent, *self.robot.boxes_at(home),
                             f"{what} puts {cube} inside the gripper, which starts with its grip point at "
                             f"{home.tolist()} (home)")
        return position, quat, extent

    def apply_options(self, options, goal, positions, quats) -> None:
        super().apply_options(options, goal, positions, quats)
        if "object_pose" in options:
            positions[0], quats[0] = options["object_pose"]

    def place_objects(self, scene, positions, quats, worlds) -> None:
        scene.set_actor_poses([self.cube], positions, quats, worlds=worlds)

    # --- observation ---------------------------------------------------------------------------------------------
    def observation(self, scene, robot: dict) -> dict:
        cube = scene.get_actor_translations([self.cube])[:, 0]
        lin, ang = scene.get_actor_velocities([self.cube])
        spin = V_MAX / self.half
        return {"cube": cube, "cube_rel_grip": cube - robot["grip"],
                "cube_rotation": mochi.lie.log_so3(scene.get_actor_rotations([self.cube])[:, 0]),
                "cube_velocity": clip(lin[:, 0], -V_MAX, V_MAX), "cube_spin": clip(ang[:, 0], -spin, spin)}

    def observed_objects(self):
        return [("cube", self.cube, V_MAX / self.half)]

    def escape_speed_m_s(self) -> float:
        """The speed [m/s] a body may reach: leaving the workspace's top faster, it could clear the walls (the
        worlds undo a substep that leaves any body faster and truncate the episode)."""
        wall_top = self.config.wall_height_m - self.config.floor_depth_m
        return float(np.sqrt(2 * 9.8 * (wall_top - self.robot.workspace()[1][2])))

    def cube_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Inside the arena walls: |x|, |y| < arena_half, z between the floor and the workspace top plus the
        height a cube flung at ``V_MAX`` reaches."""
        c, a = self.config, self.config.arena_half_m
        z_high = self.robot.workspace()[1][2] + V_MAX**2 / (2 * 9.8)
        return np.array([-a, -a, -c.floor_depth_m]), np.array([a, a, z_high])

    def observation_bounds(self, robot: dict) -> dict:
        """Rotation vector: |theta| <= pi. A struck cube moves at most twice the gripper's top speed plus the fall
        from the table, < ``V_MAX``, and spins at most V_MAX / (cube half size) rad/s (clipped to both)."""
        (grip_lo, grip_hi), (lo, hi) = robot["grip"], self.cube_bounds()
        spin = V_MAX / self.half
        return {"cube": (lo, hi), "cube_rel_grip": (lo - grip_hi, hi - grip_lo),
                "cube_rotation": (np.full(3, -np.pi), np.full(3, np.pi)),
                "cube_velocity": (np.full(3, -V_MAX), np.full(3, V_MAX)), "cube_spin": (np.full(3, -spin), np.full(3, spin))}
