"""Scripted policies, one per task, keyed by the task's module in ``envs/tasks`` (dense ids share their task's).

They prove the tasks and the physics, give evaluation a baseline and warm training up. A policy maps an
observation dict (single or batched over a leading world axis) to actions.
"""

from __future__ import annotations

import functools

from .pick_and_place import scripted_pick_and_place_action
from .push import scripted_push_action
from .reach import scripted_reach_action
from .stack import scripted_stack_action
from .throw import scripted_throw_action

POLICIES = {"push": scripted_push_action, "reach": scripted_reach_action,
            "pick_and_place": scripted_pick_and_place_action,
            "stack": scripted_stack_action, "throw": scripted_throw_action}


# A robot's own geometry where a policy needs it (tests/test_panda_tasks.py checks the numbers against the robot).
# Pushing: the Panda's closed finger boxes at yaw 0 are 2.1 x 5.3 cm, not the floating gripper's round 1 cm.
# Grasping: the gap between the fingers' inner faces is the two fingers' travel (their boxes meet at zero travel,
# overlapping by 1.3 mm, which a 10 N squeeze's 0.8 mm per side into a cube nearly takes up), not the travel less the
# gripper's 6 mm finger half-thickness: with that the policy read "holding" 1.2 cm before the fingers touched.
# Speeds: a 1.2 cm-per-step push tipped the cube over the fingers' edge and sent it tumbling past the goal (99/100
# at 1.0 cm); a full-speed carry along the jaw slid the cube out of the 500 N/m fingers (100/100 at half speed).
PANDA_FINGER_HALF_M = (0.0107, 0.0266)
PANDA_KWARGS = {"push": {"finger_half_m": PANDA_FINGER_HALF_M, "push_step_m": 0.010},
                "pick_and_place": {"finger_half_m": 0.0, "carry_action_max": 0.5},
                "stack": {"finger_half_m": 0.0, "carry_action_max": 0.3}}
ROBOT_KWARGS = {("panda_arm:PandaArm", task): kwargs for task, kwargs in PANDA_KWARGS.items()}


def scripted_policy_for(env_id: str):
    """The scripted policy of a registered SuperDex id."""
    from .. import ENVS

    if env_id not in ENVS:
        raise ValueError(f"{env_id!r} is not a registered SuperDex id; there are: {sorted(ENVS)}")
    task = ENVS[env_id].task.partition(":")[0]
    if task not in POLICIES:
        raise ValueError(f"no scripted policy for {env_id!r} (task {task!r}); there are: {sorted(POLICIES)}")
    kwargs = ROBOT_KWARGS.get((ENVS[env_id].robot, task))
    return functools.partial(POLICIES[task], **kwargs) if kwargs else POLICIES[task]
