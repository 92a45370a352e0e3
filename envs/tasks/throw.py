"""Throw: pick the 4 cm cube up and throw it into a bin on the floor beyond the gripper's reach (TossingBot's task,
goal-conditioned).

* scene: PickAndPlace's cube (grasp contact) on a 0.35 m square table whose top is 0.75 m above the floor (a real
  table's height: the drop is what lets a 3 m/s arm reach a bin 1 m away); an open static bin (four 2 cm thick
  walls, 0.36 m high, 0.2 m square inside: a waste basket) stands on the floor at ``bin_distance`` = 0.5-1.0 m from
  the workspace centre and ``bin_bearing`` = -25..25 deg from +x, sampled per episode; walls 2.2 m above the table
  around a 3 m square floor keep a thrown cube in the world.
* goals: ``desired_goal`` = the bin's target point (its floor centre at the cube's resting height), so the bin's
  position reaches the policy there; ``achieved_goal`` = the cube's position. Success: the cube inside the bin, below
  its rim (a box test in the goal's frame, so any achieved goal relabelled as a desired one is a success: HER-valid).
  Dense reward: -distance to the target point.
* observation (25,): Push's layout (grip, cube pose and velocities, fingers). ``info``: ``landed`` (the cube at rest
  below the table top) and ``landing_x/y/z`` (its position then; 0 before).
* ``reset(options=...)``: ``goal`` (a bin target point: at the cube's resting height above the floor, the bin clear
  of the table, the workspace and the arena walls) moves the bin; ``object_pose`` as Push (over the table).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import superdex_gym.sim as mochi
from superdex_gym.sim.validation import as_real, real_array

from ..core.config import GRASP_CONTACT
from .push import PushConfig, PushTask

BIN_COLOR = (0.22, 0.42, 0.78)
REST_SPEED_M_S = 0.05  # below this the cube counts as at rest (a landed cube settles to < 1 mm/s)


@dataclass(frozen=True)
class ThrowConfig(PushConfig):
    table_half_extents: tuple = (0.35, 0.35, 0.375)  # m; top at z = 0, standing on the floor
    floor_depth_m: float = 0.75
    arena_half_m: float = 1.5
    wall_height_m: float = 2.95  # 2.2 m above the table, as Push: the escape speed stays 6.1 m/s
    bin_distance_m: tuple = (0.5, 1.0)  # bin centre from the workspace centre, horizontally
    bin_bearing_deg: tuple = (-25.0, 25.0)  # from +x
    bin_inner_half_m: float = 0.1  # half the inside width
    # 2 cm walls: the tunnelling guard measures how deep a cube's samples end past a wall's face along its normal
    # (sim/tunnelling.py), so a cube falling beside a wall is not limited by its thickness, only one pressed into it
    bin_wall_half_thickness_m: float = 0.01
    bin_height_m: float = 0.36  # >= the wall thickness, so the thickness is the walls' smallest side

    def validate(self) -> "ThrowConfig":
        super().validate()
        (d0, d1), (b0, b1) = self.bin_distance_m, self.bin_bearing_deg
        if not (np.isfinite(d0) and np.isfinite(d1) and 0 < d0 <= d1):
            raise ValueError(f"bin_distance must be (low, high) with 0 < low <= high [m], got {self.bin_distance_m}")
        if not (np.isfinite(b0) and np.isfinite(b1) and -45.0 <= b0 <= b1 <= 45.0):
            raise ValueError(f"bin_bearing must be (low, high) degrees within [-45, 45] (the bin in front of the "
                             f"table), got {self.bin_bearing_deg}")
        # the bin's inside clears the table at the nearest, most oblique default bin (max(|x|, |y|) = d cos(bearing))
        nearest = d0 * np.cos(np.radians(max(abs(b0), abs(b1)))) - self.bin_inner_half_m
        if nearest < self.table_half_extents[0]:
            raise ValueError(f"bin_distance {self.bin_distance_m} and bin_bearing {self.bin_bearing_deg} put the "
                             f"bin's inside over the table (its inner edge {nearest:.3f} m < the table's half size "
                             f"{self.table_half_extents[0]} m)")
        outer = d1 + self.bin_inner_half_m + 2 * self.bin_wall_half_thickness_m
        if outer > self.arena_half_m:
            raise ValueError(f"bin_distance high {d1} m puts the bin's outer wall at {outer:.3f} m, beyond the arena "
                             f"walls at {self.arena_half_m} m")
        return self


class ThrowTask(PushTask):
    name = "Throw"
    reset_options = ("goal", "object_pose")
    cube_actor_kwargs = {"boundary_element_type": mochi.ActorBoundaryElementType.P1Q16}
    colors = {**PushTask.colors, **{f"bin_wall_{k}": BIN_COLOR for k in range(4)}}
    camera = {"distance_m": 2.2, "azimuth_deg": -65.0, "elevation_deg": 40.0, "target": (0.5, 0.0, -0.3)}

    @staticmethod
    def make_config(cube_size=0.04, cube_mass=0.064, friction=0.5, goal_range=0.3, gripper_extra_height=0.0,
                    cube_gripper_min_distance=0.1, bin_distance=(0.5, 1.0), bin_bearing=(-25.0, 25.0)) -> ThrowConfig:
        """``goal_range``: the side of the square the cube starts in; ``bin_distance`` (m) and ``bin_bearing``
        (degrees from +x): the ranges the bin's centre is sampled from, uniformly."""
        push = PushTask.make_config(cube_size, cube_mass, friction, goal_range, 0.05, gripper_extra_height,
                                    cube_gripper_min_distance)
        pairs = {}
        for name, value in (("bin_distance", bin_distance), ("bin_bearing", bin_bearing)):
            arr = real_array(value, name)
            if arr.shape != (2,):
                raise ValueError(f"{name} must be a (low, high) pair, got {value!r}")
            pairs[name] = tuple(float(as_real(v, name)) for v in arr)
        fields = {k: v for k, v in vars(push).items()
                  if k not in ("table_half_extents", "floor_depth_m", "arena_half_m", "wall_height_m")}
        return ThrowConfig(**fields, bin_distance_m=pairs["bin_distance"],
                           bin_bearing_deg=pairs["bin_bearing"]).validate()

    def __init__(self, config: ThrowConfig, robot):
        super().__init__(config, robot)
        ws_lo, ws_hi = robot.workspace()
        self.target_z = -config.floor_depth_m + self.half  # the cube's resting height on the bin's floor
        # the most a held cube or the gripper's bodies reach beyond the grip point's workspace, horizontally
        self.reach_margin_m = max(robot.reach_margin_m(), self.half * np.sqrt(2) + 0.015)
        self.reach_m = float(np.max(np.abs(np.concatenate([ws_lo[:2], ws_hi[:2]])))) + self.reach_margin_m
        self.reach_low_z = ws_lo[2] - self.half - 0.015  # a held cube's lowest point
        self.check_bin_xy(self.bin_xy(config.bin_distance_m[0], max(np.abs(config.bin_bearing_deg))),
                          "bin_distance and bin_bearing")

    # --- scene ---------------------------------------------------------------------------------------------------
    def surface_contact(self):
        return mochi.ContactParams(coulomb_friction_coefficient=self.config.friction, **GRASP_CONTACT)

    def build(self, scene) -> None:
        super().build(scene)
        self.bin_walls = [
            scene.create_rigid_actor(name=f"bin_wall_{k}", shape=mochi.create_box_mesh_shape(list(half)),
                                     is_static=True, collider_type=mochi.ColliderType.BOX,
                                     world_from_local=mochi.TransformRT(
                                         translation=offset + [0.75, 0.0, self.target_z]))
            for k, (half, offset) in enumerate(self.bin_wall_boxes())
        ]

    def bin_wall_boxes(self) -> list:
        """(half extents (3,), centre offset from the bin's target point (3,)) of the four walls: each spans the
        bin's whole outer side, so every wall's smallest side is its thickness (the tunnelling bound)."""
        c = self.config
        a, t, h = c.bin_inner_half_m, c.bin_wall_half_thickness_m, c.bin_height_m / 2
        length, z = a + 2 * t, h - self.half  # wall centre above the target point (the cube's centre)
        return [((length, t, h), np.array([0.0, s * (a + t), z])) for s in (1, -1)] + \
               [((t, length, h), np.array([s * (a + t), 0.0, z])) for s in (1, -1)]

    @staticmethod
    def bin_xy(distance: float, bearing_deg: float) -> np.ndarray:
        th = np.radians(bearing_deg)
        return distance * np.array([np.cos(th), np.sin(th)])

    def check_bin_xy(self, xy, what: str) -> None:
        """A bin centred at ``xy`` must keep its inside off the table and out of the gripper's reach, and its walls
        inside the arena (ValueError naming ``what``)."""
        c = self.config
        a, outer = c.bin_inner_half_m, c.bin_inner_half_m + 2 * c.bin_wall_half_thickness_m
        inner_edge = float(np.max(np.abs(xy))) - a
        if inner_edge < max(c.table_half_extents[0], self.reach_m):
            raise ValueError(f"{what} puts the bin's inside over the table or within the gripper's reach (its inner "
                             f"edge at {inner_edge:.3f} m from the centre; the table ends at "
                             f"{c.table_half_extents[0]} m, the gripper reaches {self.reach_m:.3f} m)")
        if float(np.max(np.abs(xy))) + outer > c.arena_half_m:
            raise ValueError(f"{what} puts the bin's walls beyond the arena walls at {c.arena_half_m} m")

    def place_scenery(self, scene, goals, worlds) -> None:
        centres = np.stack([goals[:, None, :] + offset for _, offset in self.bin_wall_boxes()], axis=1)[:, :, 0]
        quats = np.zeros((len(worlds), 4, 4))
        quats[..., 3] = 1.0
        scene.set_actor_poses(self.bin_walls, centres, quats, worlds=worlds)

    # --- episodes ------------------------------------------------------------------------------------------------
    def sample_episode(self, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """The cube as Push samples it (its goal draw unused), then the bin: distance and bearing uniform in their
        ranges (two draws every episode)."""
        _, cube = super().sample_episode(rng)
        distance, bearing = rng.uniform(*self.config.bin_distance_m), rng.uniform(*self.config.bin_bearing_deg)
        return np.array([*self.bin_xy(distance, bearing), self.target_z]), cube

    def check_goal(self, goal: np.ndarray, what: str = "options['goal']") -> None:
        if abs(goal[2] - self.target_z) > 1e-6:
            raise ValueError(f"{what} must be a bin target point at the cube's resting height on the floor, "
                             f"z = {self.target_z} m, got z = {goal[2]}")
        self.check_bin_xy(goal[:2], what)

    def parse_options(self, options: dict) -> dict:
        options = super().parse_options(options)
        if "object_pose" in options:
            position = options["object_pose"][0]
            hx, hy = self.config.table_half_extents[:2]
            if not (abs(position[0]) <= hx and abs(position[1]) <= hy and position[2] > 0):
                raise ValueError(f"options['object_pose'] must put the cube above the table (|x| <= {hx}, "
                                 f"|y| <= {hy}, z > 0), got {position.tolist()}")
        return options

    # --- success and info ----------------------------------------------------------------------------------------
    def is_success(self, achieved_goal, desired_goal) -> np.ndarray:
        """The cube inside the bin whose target point is ``desired_goal``: its centre within the inside walls
        (1 mm slack for a cube resting against one) and its top below the rim."""
        d = np.asarray(achieved_goal, dtype=np.float64) - np.asarray(desired_goal, dtype=np.float64)
        c = self.config
        lateral = np.max(np.abs(d[..., :2]), axis=-1) <= c.bin_inner_half_m - self.half + 1e-3
        return lateral & (d[..., 2] >= -0.005) & (d[..., 2] <= c.bin_height_m - 2 * self.half)

    def step_infos(self, scene) -> dict:
        """``landed``: the cube at rest below the table top (thrown, wherever it came down); ``landing_x/y/z``:
        where (0 while it has not: Gymnasium's determinism check compares infos with ==, which NaN fails)."""
        cube = scene.get_actor_translations([self.cube])[:, 0]
        lin, _ = scene.get_actor_velocities([self.cube])
        landed = (np.linalg.norm(lin[:, 0], axis=1) < REST_SPEED_M_S) & (cube[:, 2] < -self.half)
        point = np.where(landed[:, None], cube, 0.0)
        return {"landed": landed, "landing_x": point[:, 0], "landing_y": point[:, 1], "landing_z": point[:, 2]}
