"""Native batched vector env for Push: ``gym.make_vec("SuperDex/Push-v0", num_envs=64)`` steps all 64 worlds in
one engine scene (one engine call per physics substep); its contract is `GripperGoalVectorEnv`'s (goal_env.py).
"""

from __future__ import annotations

from .batched import GripperPushWorlds
from .goal_env import GripperGoalVectorEnv
from .push_env import make_config


class SuperDexPushVectorEnv(GripperGoalVectorEnv):
    worlds_class = GripperPushWorlds
    make_config = staticmethod(make_config)

