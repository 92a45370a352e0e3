"""superdex_gym.envs: Gymnasium environments on the superdex_gym.sim engine.

``import superdex_gym`` registers them (``register_envs``): ``SuperDex/Push-v0`` and ``SuperDex/PushDense-v0``,
each with a native batched ``vector_entry_point`` for ``gym.make_vec``.
"""

from __future__ import annotations

ENV_IDS = ("SuperDex/Push-v0", "SuperDex/PushDense-v0")


def register_envs() -> None:
    """Register the SuperDex environments (idempotent)."""
    import gymnasium as gym

    for env_id, dense in zip(ENV_IDS, (False, True)):
        if env_id in gym.registry:
            continue
        gym.register(
            id=env_id,
            entry_point="superdex_gym.envs.push_env:SuperDexPushEnv",
            vector_entry_point="superdex_gym.envs.push_vector_env:make_push_vector_env",
            max_episode_steps=50,
            kwargs={"dense_reward": dense},
        )
