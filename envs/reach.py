"""`SuperDex/Reach-v0` and `SuperDex/ReachDense-v0`: bring the grip point to a goal in the air (FetchReach,
PandaReach): the smallest task on the gripper and physics, and the quick check that a training set-up learns.

Conventions follow Gymnasium-Robotics ``FetchReach``:

* action ``Box(-1, 1, (4,))`` as in Push (dx, dy, dz x 5 cm per 25 Hz control step; the finger command is
  ignored while ``block_gripper=True``, the default, as in FetchReach).
* observation ``Dict(observation (10,), achieved_goal (3,), desired_goal (3,))`` in float32: grip point (3),
  finger offsets (2), grip velocity (3), finger velocities (2) (FetchReach's layout); the achieved goal is the
  grip point. Bounds: the workspace (1 cm margin) and the robot's velocity bound.
* goal: the grip point's start (0, 0, 0.15) m plus a uniform offset in a cube of side ``goal_range`` = 0.3 m
  (FetchReach: +-0.15 m around its initial gripper position), never within the success radius at reset;
  success within ``distance_threshold`` = 5 cm; sparse -1 / 0 or -distance rewards; 50 steps.
* ``reset(seed=..., options={"goal": (3,)})``; a goal outside the goal bounds raises ``ValueError`` and nothing
  changes. The scene: the table (top at z = 0) and the gripper.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .goal_env import GripperGoalEnv, GripperGoalVectorEnv
from .goal_task import GoalTask, check_goals_reachable, create_table
from .gripper_worlds import GripperWorldConfig, GripperWorlds, gripper_world_kwargs


@dataclass(frozen=True)
class ReachConfig:
    home_m: tuple = (0.0, 0.0, 0.15)  # grip point at reset; the goal cube is centred on it
    goal_range_m: float = 0.3  # side of the goal cube
    distance_threshold_m: float = 0.05  # success radius
    table_half_extents: tuple = (0.4, 0.4, 0.2)  # m; the top is at z = 0
    marker_radius_m: float = 0.02  # the goal's sphere in pictures

    def validate(self) -> "ReachConfig":
        for name in ("goal_range_m", "distance_threshold_m"):
            value = getattr(self, name)
            if not (np.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be finite and > 0, got {value!r}")
        check_goals_reachable(self)
        return self


class ReachTask(GoalTask):
    def __init__(self, scene, config: ReachConfig):
        self.config = config.validate()
        self.table = create_table(scene, config.table_half_extents)
        self.marker_radius_m = config.marker_radius_m

    def sample_goal(self, rng: np.random.Generator) -> np.ndarray:
        """A goal (3,) in the cube around the home, outside the success radius of the home."""
        home, h = np.asarray(self.config.home_m, dtype=np.float64), self.config.goal_range_m / 2
        while True:
            goal = home + rng.uniform(-h, h, size=3)
            if np.linalg.norm(goal - home) > self.config.distance_threshold_m:
                return goal


@dataclass(frozen=True)
class ReachWorldConfig(GripperWorldConfig):
    task: ReachConfig = field(default_factory=ReachConfig)

    @property
    def home(self) -> np.ndarray:
        return np.asarray(self.task.home_m, dtype=np.float64)

    def validate(self) -> "ReachWorldConfig":
        self.task.validate()
        super().validate()
        low, high = self.home - self.task.goal_range_m / 2, self.home + self.task.goal_range_m / 2
        ws_low, ws_high = np.asarray(self.workspace_low), np.asarray(self.workspace_high)
        # a goal the grip point cannot come within the success radius of would make episodes unsolvable
        if np.any(low < ws_low - self.task.distance_threshold_m) or np.any(high > ws_high + 1e-12):
            raise ValueError(f"the goal cube {low.tolist()} .. {high.tolist()} must lie in the workspace "
                             f"{ws_low.tolist()} .. {ws_high.tolist()} (below it, within the success radius)")
        return self


class GripperReachWorlds(GripperWorlds):
    scene_name = "SuperDex Reach"

    def _create_task(self, scene) -> ReachTask:
        return ReachTask(scene, self.config.task)

    def reset_worlds(self, worlds: np.ndarray, rngs: list, options: dict | None = None) -> None:
        """Fresh episodes in ``worlds`` (K,): the gripper at home, a goal from each world's generator; ``options``
        (one world): ``goal`` (3,) overrides the sampled goal (it must lie in the goal bounds)."""
        worlds = np.asarray(worlds, dtype=np.int64)
        if worlds.size == 0:
            return
        options = self._checked_options(worlds, options, ("goal",))
        for k, rng in enumerate(rngs):
            self.goal[worlds[k]] = self.task.sample_goal(rng)  # always drawn: an option leaves the stream as is
        if "goal" in options:
            self.goal[worlds[0]] = options["goal"]
        self._restart_worlds(worlds)

    def observations(self) -> dict:
        grip, fingers, grip_vel, finger_vel = self.robot_observation()
        obs = np.concatenate([grip, fingers, grip_vel, finger_vel], axis=1)
        return {
            "observation": obs.astype(np.float32),
            "achieved_goal": grip.astype(np.float32),
            "desired_goal": self.goal.astype(np.float32),
        }

    def goal_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """The grip point's bounds (the workspace, 1 cm margin): achieved goals stay in them, goals are sampled in
        them."""
        return self.robot_observation_bounds()["grip"]

    def observation_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        robot = self.robot_observation_bounds()
        parts = [robot[k] for k in ("grip", "fingers", "grip_velocity", "finger_velocity")]
        low = np.concatenate([lo for lo, _ in parts])
        high = np.concatenate([hi for _, hi in parts])
        return low.astype(np.float32), high.astype(np.float32)


def make_config(goal_range=0.3, distance_threshold=0.05, **robot) -> ReachWorldConfig:
    """The ``gym.make`` kwargs of the Reach environments as a validated `ReachWorldConfig` (the robot and solver
    kwargs: `gripper_world_kwargs`)."""
    task = ReachConfig(goal_range_m=float(goal_range), distance_threshold_m=float(distance_threshold))
    return ReachWorldConfig(task=task, **gripper_world_kwargs(**robot)).validate()


class SuperDexReachEnv(GripperGoalEnv):
    worlds_class = GripperReachWorlds
    make_config = staticmethod(make_config)


class SuperDexReachVectorEnv(GripperGoalVectorEnv):
    worlds_class = GripperReachWorlds
    make_config = staticmethod(make_config)

