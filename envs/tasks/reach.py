"""Reach (FetchReach, PandaReach): bring the grip point within 5 cm of a goal in the air. The smallest task on
the robot and physics, the quick check that a training set-up learns, and the worked example of a task: this
file plus one row of the registration table (``envs/__init__.py``) make ``SuperDex/Reach-v0`` and
``SuperDex/ReachDense-v0``, and the contract tests (``tests/test_env_contract.py``) run over them.

* observation (10,): grip point (3), finger offsets (2), grip velocity (3), finger velocities (2) (FetchReach's
  layout, all the robot's); the achieved goal is the grip point, so the goal bounds are the workspace's (1 cm
  margin).
* goal: the grip point's start (0, 0, 0.15) m plus a uniform offset in a cube of side ``goal_range`` = 0.3 m
  (FetchReach: +-0.15 m around its initial gripper position), never within the success radius at reset;
  success within ``distance_threshold`` = 5 cm; sparse -1 / 0 or -distance rewards.
* ``reset(seed=..., options={"goal": (3,)})``; the scene: the table (top at z = 0) and the gripper.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from superdex_gym.sim.validation import as_real

from ..core.task import Task, check_goals_reachable
from .arena import create_table


@dataclass(frozen=True)
class ReachConfig:
    home_m: tuple = (0.0, 0.0, 0.15)  # grip point at reset; the goal cube is centred on it
    goal_range_m: float = 0.3  # side of the goal cube
    distance_threshold_m: float = 0.05  # success radius
    table_half_extents: tuple = (0.4, 0.4, 0.2)  # m; the top is at z = 0

    def validate(self) -> "ReachConfig":
        for name in ("goal_range_m", "distance_threshold_m"):
            value = getattr(self, name)
            if not (np.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be finite and > 0, got {value!r}")
        check_goals_reachable(self)
        return self


class ReachTask(Task):
    name = "Reach"
    observation_layout = ("grip", "fingers", "grip_velocity", "finger_velocity")

    def observed_objects(self):
        return []  # the robot's parts only
    achieved_goal_parts = ("grip",)
    marker_radius_m = 0.02  # the goal's sphere in pictures

    @staticmethod
    def make_config(goal_range=0.3, distance_threshold=0.05) -> ReachConfig:
        return ReachConfig(goal_range_m=as_real(goal_range, "goal_range"),
                           distance_threshold_m=as_real(distance_threshold, "distance_threshold")).validate()

    def __init__(self, config: ReachConfig, robot):
        super().__init__(config, robot)
        home, h = self.robot_home(), config.goal_range_m / 2
        ws_low, ws_high = robot.workspace()
        # a goal the grip point cannot come within the success radius of would make episodes unsolvable
        if np.any(home - h < ws_low - config.distance_threshold_m) or np.any(home + h > ws_high + 1e-12):
            raise ValueError(f"the goal cube {(home - h).tolist()} .. {(home + h).tolist()} must lie in the workspace "
                             f"{ws_low.tolist()} .. {ws_high.tolist()} (below it, within the success radius)")

    def build(self, scene) -> None:
        self.table = create_table(scene, self.config.table_half_extents)

    def robot_home(self) -> np.ndarray:
        return np.asarray(self.config.home_m, dtype=np.float64)

    def sample_episode(self, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """A goal (3,) in the cube around the home, outside the success radius of the home; no objects."""
        home, h = self.robot_home(), self.config.goal_range_m / 2
        while True:
            goal = home + rng.uniform(-h, h, size=3)
            if np.linalg.norm(goal - home) > self.config.distance_threshold_m:
                return goal, np.zeros((self.objects, 3))
