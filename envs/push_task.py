"""The Push task (DESIGN section 3): a cube on a static table, pushed to a goal on the table.

The task owns the scene contents beyond the robot (table, cube), goal sampling, the achieved goal, success and
the vectorized reward, as in panda-gym's ``tasks/push.py``. Everything is batched over worlds; randomness comes
from one ``np.random.Generator`` per world.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import superdex_gym.sim as mochi

from .goal_task import GoalTask, check_goals_reachable, create_table


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
    wall_height_m: float = 1.0  # walls rise from the floor to floor + wall_height_m
    # The cube is sampled at least this far (in the table plane) from the gripper's home, which is at the cube's
    # height (FetchPush: 0.1 m, its object's distance from the initial gripper position).
    cube_gripper_min_distance_m: float = 0.1

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
        # the square of side goal_range_m must reach outside the keep-out circle around the gripper's home (at its
        # centre), with at least ~10% of its area left to sample from
        if self.cube_gripper_min_distance_m > 0.55 * self.goal_range_m:
            raise ValueError(f"cube_gripper_min_distance_m {self.cube_gripper_min_distance_m} leaves too little of "
                             f"the goal_range_m {self.goal_range_m} square to sample the cube from (at most 0.55 x "
                             "goal_range_m)")
        check_goals_reachable(self)
        return self


class PushTask(GoalTask):
    def __init__(self, scene, config: PushConfig):
        self.config = config.validate()
        contact = mochi.ContactParams(coulomb_friction_coefficient=config.friction)
        self.table = create_table(scene, config.table_half_extents, contact)
        self.floor = scene.create_rigid_actor(
            name="floor", shape=mochi.create_plane_shape(normal=[0, 0, 1], distance=-config.floor_depth_m),
            is_static=True,
        )
        # Four walls around the floor: the cube cannot leave the arena, so its position has real bounds. They are
        # 0.5 m thick (half thickness t): penalty contact pushes a body out through the nearest face, and a cube
        # at 8 m/s went through 0.1 m walls in one 20 ms step; 0.5 m holds it up to V_MAX = 10 m/s (tested).
        a, t, h = config.arena_half_m, 0.25, config.wall_height_m / 2
        zc = -config.floor_depth_m + h
        self.walls = [
            scene.create_rigid_actor(
                name=f"wall_{k}", shape=mochi.create_box_mesh_shape(list(half)), is_static=True,
                collider_type=mochi.ColliderType.BOX, world_from_local=mochi.TransformRT(translation=centre),
            )
            for k, (half, centre) in enumerate([
                ((t, a + 2 * t, h), (a + t, 0.0, zc)), ((t, a + 2 * t, h), (-a - t, 0.0, zc)),
                ((a, t, h), (0.0, a + t, zc)), ((a, t, h), (0.0, -a - t, zc)),
            ])
        ]
        half = config.cube_size_m / 2
        self.cube = scene.create_rigid_actor(
            name="cube", shape=mochi.create_box_mesh_shape([half] * 3), mass=config.cube_mass_kg, contact=contact,
            # the exact box distance: smooth where a grid SDF's trilinear gradient jumps between cells
            collider_type=mochi.ColliderType.BOX,
            world_from_local=mochi.TransformRT(translation=[0, 0, half]),
        )
        self.scene = scene
        # Resting height: the penalty ramp settles a body slightly below contact (digest 5.6); measured once.
        self.rest_height_m = half
        self.marker_radius_m = half  # the goal's sphere in pictures: the cube's size

    @property
    def actors(self):
        return [self.table, self.floor, *self.walls, self.cube]

    # --- sampling -------------------------------------------------------------------------------------------------
    def sample_xy(self, rng: np.random.Generator) -> np.ndarray:
        h = self.config.goal_range_m / 2
        return rng.uniform(-h, h, size=2)

    def sample_episode(self, rng: np.random.Generator, gripper_xy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(cube position (3,), goal (3,)): the cube at least ``cube_gripper_min_distance_m`` from the gripper's
        home ``gripper_xy`` (2,), the goal outside the success radius (never solved at reset). Rejection sampling,
        as FetchPush does."""
        while True:
            cube_xy = self.sample_xy(rng)
            if np.linalg.norm(cube_xy - gripper_xy) >= self.config.cube_gripper_min_distance_m:
                break
        while True:
            goal_xy = self.sample_xy(rng)
            if np.linalg.norm(goal_xy - cube_xy) > self.config.distance_threshold_m:
                break
        z = self.rest_height_m
        return np.array([*cube_xy, z]), np.array([*goal_xy, z])
