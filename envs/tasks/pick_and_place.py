"""PickAndPlace (FetchPickAndPlace): bring a 4 cm cube to a goal on the table or in the air; the fingers are free.

Push's scene, observation (25,) and reset options, with what grasping needs (docs/environments.md, Grasping): the
cube and the table take the grasp contact (``GRASP_CONTACT``: a 0.25 mm penalty ramp, sticking friction) and the
cube 16 quadrature points per face, so a held cube settles and Newton converges while it is held. Goals: with
probability ``goal_in_air_prob`` (FetchPickAndPlace: 0.5) the goal is lifted up to ``goal_height`` = 0.3 m above
its resting height, else it lies on the table. Registered with ``block_gripper=False`` (action: dx, dy, dz, finger
opening).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import superdex_gym.sim as mochi
from superdex_gym.sim.validation import as_real, bounded_real

from ..core.config import GRASP_CONTACT
from .push import PushConfig, PushTask


@dataclass(frozen=True)
class PickAndPlaceConfig(PushConfig):
    goal_height_m: float = 0.3  # the highest goal above the cube's resting height
    goal_in_air_prob: float = 0.5  # share of episodes whose goal is above the table

    def validate(self) -> "PickAndPlaceConfig":
        super().validate()
        bounded_real(self.goal_height_m, "goal_height", 0.0, 0.3, "the gripper's workspace ends 0.3 m above the table")
        bounded_real(self.goal_in_air_prob, "goal_in_air_prob", 0.0, 1.0, "a probability")
        return self


class PickAndPlaceTask(PushTask):
    name = "PickAndPlace"
    cube_actor_kwargs = {"boundary_element_type": mochi.ActorBoundaryElementType.P1Q16}
    goals_in_air = True

    @staticmethod
    def make_config(cube_size=0.04, cube_mass=0.064, friction=0.5, goal_range=0.3, distance_threshold=0.05,
                    gripper_extra_height=0.0, cube_gripper_min_distance=0.1, goal_height=0.3,
                    goal_in_air_prob=0.5) -> PickAndPlaceConfig:
        push = PushTask.make_config(cube_size, cube_mass, friction, goal_range, distance_threshold,
                                    gripper_extra_height, cube_gripper_min_distance)
        return PickAndPlaceConfig(**vars(push), goal_height_m=as_real(goal_height, "goal_height"),
                                  goal_in_air_prob=as_real(goal_in_air_prob, "goal_in_air_prob")).validate()

    def surface_contact(self):
        return mochi.ContactParams(coulomb_friction_coefficient=self.config.friction, **GRASP_CONTACT)

    def sample_episode(self, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """Push's cube and goal, then the goal lifted by U(0, goal_height) with probability goal_in_air_prob (two
        more draws every episode, so the stream does not depend on the outcome)."""
        goal, cube = super().sample_episode(rng)
        in_air, height = rng.uniform() < self.config.goal_in_air_prob, rng.uniform(0.0, self.config.goal_height_m)
        goal[2] += height if in_air else 0.0
        return goal, cube
