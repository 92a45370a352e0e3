"""The suite as registered: the task ids the main job shows, and each task's scripted policy.

The main job, ``evaluate --scripted`` and the training warm-up get scripted policies through `scripted_policy`
only, so where the policies live is named in one place.
"""

from __future__ import annotations

NAMESPACE = "SuperDex"


def task_ids() -> list[str]:
    """Every registered ``SuperDex/...`` id except the dense-reward variants (same task, same scripted policy), in
    registration order: a task that registers joins the main job."""
    import gymnasium as gym

    from . import envs

    envs.register_envs()
    return [env_id for env_id, spec in gym.registry.items()
            if spec.namespace == NAMESPACE and not env_id.endswith("Dense-v0")]


def scripted_policy(env_id: str):
    """The scripted policy of a registered id: batched observation dict -> (W, 4) actions."""
    from .envs.scripted import scripted_policy_for

    return scripted_policy_for(env_id)
