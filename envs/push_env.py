"""`SuperDex/Push-v0` and `SuperDex/PushDense-v0`: push a 4 cm cube to a goal with a floating gripper.

Conventions follow Gymnasium-Robotics ``FetchPush`` and panda-gym ``PandaPush``:

* action ``Box(-1, 1, (4,))``: grip-point displacement dx, dy, dz (x 5 cm per 25 Hz control step) and a finger
  command (ignored while ``block_gripper=True``, the default for Push). Out-of-range actions are clipped to
  [-1, 1]; NaN or inf raise ``ValueError`` and nothing is stepped.
* observation ``Dict(observation (25,), achieved_goal (3,), desired_goal (3,))`` in float32. ``observation`` is
  grip point (3), cube position (3), cube - grip (3), finger offsets (2), cube rotation vector (3), cube linear
  velocity (3), cube angular velocity (3), grip velocity (3), finger velocities (2); world frame, SI units;
  bounds are physical (walls keep the cube in a 2 m arena; velocities are clipped to documented bounds that
  operation does not reach, see ``GripperPushWorlds.observation_bounds``).
* reward: sparse -1 / 0 (``Push-v0``), or -distance (``PushDense-v0``); ``compute_reward(achieved_goal,
  desired_goal, info)`` is vectorized over leading batch axes for HER relabelling; ``info["is_success"]``.
* reset: the grip point starts above the table centre at the cube's height (``gripper_extra_height`` = 0, as
  FetchPush), the cube at least ``cube_gripper_min_distance`` = 0.1 m from it, both in a ``goal_range`` = 0.3 m
  square.
* episodes: 50 steps (``TimeLimit`` from the registration), ``terminate_on_success`` (default False, as Fetch).
* ``reset(seed=..., options={"goal": (3,), "object_pose": (3,) or (7,)})``; a sampled goal is never within the
  success radius at reset (requested ones are taken as given). Requested positions must lie in the goal bounds (the
  arena) and the cube must not start inside the table or the gripper, else ``ValueError`` and nothing changes (the
  episode goes on). ``get_state()`` / ``set_state()`` round-trip exactly.
"""

from __future__ import annotations

from .batched import GripperPushWorlds, PushWorldConfig
from .goal_env import GripperGoalEnv
from .gripper_worlds import gripper_world_kwargs
from .push_task import PushConfig


def make_config(cube_size=0.04, cube_mass=0.064, friction=0.5, goal_range=0.3, distance_threshold=0.05,
                gripper_extra_height=0.0, cube_gripper_min_distance=0.1, **robot) -> PushWorldConfig:
    """The ``gym.make`` kwargs of the Push environments as a validated `PushWorldConfig`.

    ``gripper_extra_height``: the grip point starts this far [m] above the cube's centre height (FetchPush's
    ``gripper_extra_height``, 0 for Push). ``cube_gripper_min_distance``: the cube is sampled at least this far [m]
    from the gripper's start in the table plane (FetchPush: 0.1). The robot and solver kwargs (``physics_dt``,
    ``substeps``, ``block_gripper``, ``solver_*``, ``gripper_max_force``): `gripper_world_kwargs`."""
    task = PushConfig(cube_size_m=float(cube_size), cube_mass_kg=float(cube_mass), friction=float(friction),
                      goal_range_m=float(goal_range), distance_threshold_m=float(distance_threshold),
                      cube_gripper_min_distance_m=float(cube_gripper_min_distance))
    return PushWorldConfig(task=task, gripper_extra_height_m=float(gripper_extra_height),
                           **gripper_world_kwargs(**robot)).validate()


class SuperDexPushEnv(GripperGoalEnv):
    worlds_class = GripperPushWorlds
    make_config = staticmethod(make_config)
