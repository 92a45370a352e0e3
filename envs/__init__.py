"""superdex_gym.envs: Gymnasium environments on the superdex_gym.sim engine, robots + tasks.

``import superdex_gym`` registers them (``register_envs``) from the table below: each row is a task on a robot
(classes named ``"module:Class"`` in ``envs/robots`` and ``envs/tasks``) with its episode length; each row gives
an id with the sparse reward and its ``Dense`` twin, both with the native batched ``vector_entry_point`` for
``gym.make_vec``. A new task is one file in ``envs/tasks`` and one row here (``tasks/reach.py`` is the example);
the contract tests (``tests/test_env_contract.py``) run over every id in ``ENV_IDS``.
"""

from __future__ import annotations

from typing import NamedTuple

ENTRY_POINT = "superdex_gym.envs.core.env:RobotTaskEnv"
VECTOR_ENTRY_POINT = "superdex_gym.envs.core.vector_env:RobotTaskVectorEnv"


class Row(NamedTuple):
    name: str  # the id's task name: SuperDex/<name>-v0 and SuperDex/<name>Dense-v0
    robot: str
    task: str
    max_episode_steps: int
    kwargs: tuple = ()  # (name, value) pairs: the id's default gym.make kwargs (a caller's kwargs override them)


# Free fingers: Newton's start keeps a cube snapping straight between them out of a finger (docs/environments.md,
# Grasping: 100/100 seed-0 picks held instead of 94).
FREE_FINGERS = (("block_gripper", False), ("solver_initial_guess", "CONSTANT_VELOCITY_AND_TARGETS_OUTSIDE"))
# Grasping tasks also redo a world's stopped substep as halves, twice nested: a squeeze that snaps a yawed cube
# straight is then held (499/500 picks over seeds 0-4 against 490/500), at 8-15% of a scripted batch's speed.
# Throw keeps 0: its impacts on the bin stop Newton often, and refining them cost it 35% for no throw it missed.
# Throw's bin has 2 cm walls: a substep that carries a cube past a wall's middle (a 3 m/s cube travels 6 cm) is
# redone in halves, up to 4 nested levels (4 mm of travel), instead of being undone and the episode truncated.
GRASPING = FREE_FINGERS + (("substep_refinement", 2),)

TABLE = (
    Row("Push", "floating_gripper:FloatingGripper", "push:PushTask", 50),
    Row("Reach", "floating_gripper:FloatingGripper", "reach:ReachTask", 50),
    Row("PickAndPlace", "floating_gripper:FloatingGripper", "pick_and_place:PickAndPlaceTask", 50, GRASPING),
    Row("Stack2", "floating_gripper:FloatingGripper", "stack:StackTask", 100, GRASPING + (("cubes", 2),)),
    Row("Stack3", "floating_gripper:FloatingGripper", "stack:StackTask", 150, GRASPING + (("cubes", 3),)),
    Row("Throw", "floating_gripper:FloatingGripper", "throw:ThrowTask", 50,
        FREE_FINGERS + (("gripper_max_speed", 3.0), ("tunnelling_refinement", 4))),
    # The Panda arm (envs/robots/panda_arm.py): the same tasks on a 7-DoF arm, "ee" control by default.
    Row("PandaReach", "panda_arm:PandaArm", "reach:ReachTask", 50),
    Row("PandaPush", "panda_arm:PandaArm", "push:PushTask", 50),
    Row("PandaPickAndPlace", "panda_arm:PandaArm", "pick_and_place:PickAndPlaceTask", 50, GRASPING),
    Row("PandaStack2", "panda_arm:PandaArm", "stack:StackTask", 100, GRASPING + (("cubes", 2),)),
    Row("PandaStack3", "panda_arm:PandaArm", "stack:StackTask", 150, GRASPING + (("cubes", 3),)),
)


class EnvSpecRow(NamedTuple):
    robot: str
    task: str
    max_episode_steps: int
    dense_reward: bool
    kwargs: tuple = ()


def env_specs(table=TABLE) -> dict:
    """id -> `EnvSpecRow` for the rows of ``table``: each row's sparse id and its Dense twin."""
    return {f"SuperDex/{row.name}{'Dense' if dense else ''}-v0": EnvSpecRow(row.robot, row.task,
                                                                             row.max_episode_steps, dense, row.kwargs)
            for row in table for dense in (False, True)}


ENVS = env_specs()
ENV_IDS = tuple(ENVS)


def register_envs(envs: dict | None = None) -> None:
    """Register the SuperDex environments (``envs``: `env_specs` of other rows; default the table's; idempotent)."""
    import gymnasium as gym

    for env_id, spec in (ENVS if envs is None else envs).items():
        if env_id in gym.registry:
            continue
        gym.register(
            id=env_id,
            entry_point=ENTRY_POINT,
            vector_entry_point=VECTOR_ENTRY_POINT,
            max_episode_steps=spec.max_episode_steps,
            # the env's own copy of the length: it ends an episode whose TimeLimit count a rejected reset restarted
            kwargs={"robot": spec.robot, "task": spec.task, "dense_reward": spec.dense_reward,
                    "max_episode_steps": spec.max_episode_steps, **dict(spec.kwargs)},
        )
