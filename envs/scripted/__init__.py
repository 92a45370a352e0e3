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


# A robot's own geometry where a policy needs it: the Panda's closed finger boxes at yaw 0 are 2.1 x 5.3 cm, not
# the floating gripper's round 1 cm (envs/robots/panda_arm.py; tests/test_panda_tasks.py checks the numbers).
PANDA_FINGER_HALF_M = (0.0107, 0.0266)
ROBOT_KWARGS = {("panda_arm:PandaArm", "push"): {"finger_half_m": PANDA_FINGER_HALF_M}}


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
