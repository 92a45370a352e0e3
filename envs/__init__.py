"""superdex_gym.envs: Gymnasium environments on the superdex_gym.sim engine.

``import superdex_gym`` registers them (``register_envs``): ``SuperDex/Push-v0``, ``SuperDex/PushDense-v0``,
``SuperDex/Reach-v0`` and ``SuperDex/ReachDense-v0``, each with a native batched ``vector_entry_point`` for
``gym.make_vec``.
"""

from __future__ import annotations

# id -> (env entry point, vector entry point, dense reward)
_PUSH = ("superdex_gym.envs.push_env:SuperDexPushEnv", "superdex_gym.envs.push_vector_env:SuperDexPushVectorEnv")
_REACH = ("superdex_gym.envs.reach:SuperDexReachEnv", "superdex_gym.envs.reach:SuperDexReachVectorEnv")
ENVS = {
    "SuperDex/Push-v0": (*_PUSH, False),
    "SuperDex/PushDense-v0": (*_PUSH, True),
    "SuperDex/Reach-v0": (*_REACH, False),
    "SuperDex/ReachDense-v0": (*_REACH, True),
}
ENV_IDS = tuple(ENVS)


def register_envs() -> None:
    """Register the SuperDex environments (idempotent)."""
    import gymnasium as gym

    for env_id, (entry_point, vector_entry_point, dense) in ENVS.items():
        if env_id in gym.registry:
            continue
        gym.register(
            id=env_id,
            entry_point=entry_point,
            vector_entry_point=vector_entry_point,
            max_episode_steps=50,
            kwargs={"dense_reward": dense},
        )
