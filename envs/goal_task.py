"""What every goal-conditioned task shares (panda-gym's ``Task``): the distance between achieved and desired goals,
success, the sparse / dense reward (vectorized over leading batch axes for HER relabelling), and the table.

A task's config carries ``distance_threshold_m`` and ``table_half_extents``.
"""

from __future__ import annotations

import numpy as np

import superdex_gym.sim as mochi


class GoalTask:
    config = None  # a task config with distance_threshold_m (set by the subclass)

    def distance(self, achieved_goal: np.ndarray, desired_goal: np.ndarray) -> np.ndarray:
        """Euclidean distance [m] over the last axis (batched)."""
        return np.linalg.norm(np.asarray(achieved_goal) - np.asarray(desired_goal), axis=-1)

    def is_success(self, achieved_goal, desired_goal) -> np.ndarray:
        return self.distance(achieved_goal, desired_goal) < self.config.distance_threshold_m

    def compute_reward(self, achieved_goal, desired_goal, dense: bool) -> np.ndarray:
        """Sparse: -1 until the goal is within the success radius, then 0; dense: -distance [m]."""
        d = self.distance(achieved_goal, desired_goal)
        if dense:
            return (-d).astype(np.float32)
        return -(d >= self.config.distance_threshold_m).astype(np.float32)


def check_goals_reachable(config) -> None:
    """Sampled goals must be able to lie outside the success radius: goal_range_m >= 2 x distance_threshold_m."""
    if config.goal_range_m < 2 * config.distance_threshold_m:
        raise ValueError("goal_range_m must be at least twice distance_threshold_m (goals must be reachable "
                         "outside the success radius)")


def create_table(scene, half_extents, contact=None):
    """A static box table whose top is the plane z = 0 (``contact``: its ContactParams, default the engine's)."""
    hx, hy, hz = half_extents
    return scene.create_rigid_actor(
        name="table", shape=mochi.create_box_mesh_shape([hx, hy, hz]), is_static=True,
        contact=mochi.ContactParams() if contact is None else contact,
        collider_type=mochi.ColliderType.BOX, world_from_local=mochi.TransformRT(translation=[0, 0, -hz]),
    )
