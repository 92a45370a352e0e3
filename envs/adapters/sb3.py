"""An SB3 ``VecEnv`` over a SuperDex task's native batch (``env_id``'s vector entry point, Push by default): SB3's
auto-reset convention (reset in the same step, the final observation in ``infos[i]["terminal_observation"]``,
``TimeLimit.truncated`` on time-outs), ``env_method("compute_reward", ...)`` for ``HerReplayBuffer``. Import
requires stable-baselines3.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium.envs.registration import load_env_creator
from stable_baselines3.common.vec_env.base_vec_env import VecEnv

from ..core.vector_env import RobotTaskVectorEnv


class SuperDexSB3VecEnv(VecEnv):
    """``kwargs``: the vector env's (``max_episode_steps``, physics, ...), over the registration's kwargs (a dense
    id's ``dense_reward=True``)."""

    def __init__(self, num_envs: int = 1, seed: int | None = None, env_id: str = "SuperDex/Push-v0", **kwargs):
        spec = gym.spec(env_id)
        if spec.vector_entry_point is None:
            raise ValueError(f"{env_id} has no native vector env (vector_entry_point)")
        self.venv = load_env_creator(spec.vector_entry_point)(num_envs=num_envs, **{**spec.kwargs, **kwargs})
        if not isinstance(self.venv, RobotTaskVectorEnv):
            raise TypeError(f"{env_id}'s vector env is not a SuperDex robot + task ({type(self.venv).__name__})")
        super().__init__(num_envs, self.venv.single_observation_space, self.venv.single_action_space)
        self._seed = seed
        self._actions = None
        self.render_mode = self.venv.render_mode

    def reset(self):
        obs, _ = self.venv.reset(seed=self._seed)
        self._seed = None  # the next resets continue each world's generator
        self.reset_infos = [{} for _ in range(self.num_envs)]
        return obs

    def step_async(self, actions) -> None:
        self._actions = np.asarray(actions)

    def step_wait(self):
        v = self.venv
        obs, rewards, terminated, truncated, infos = v.step(self._actions)
        done = terminated | truncated
        out_infos = []
        for i in range(self.num_envs):
            info = {k: v[i].item() for k, v in infos.items() if not k.startswith("_")}
            if done[i]:
                info["terminal_observation"] = {k: val[i].copy() for k, val in obs.items()}
                info["TimeLimit.truncated"] = bool(truncated[i] and not terminated[i])
            out_infos.append(info)
        if np.any(done):
            # SB3 resets in the same step: start the new episodes now and hand out their first observations.
            v.reset_worlds(np.nonzero(done)[0])
            obs = v.observations()
        return obs, rewards, done, out_infos

    def close(self) -> None:
        pass

    def seed(self, seed=None):
        self._seed = seed
        return [None if seed is None else seed + i for i in range(self.num_envs)]

    def get_attr(self, attr_name, indices=None):
        return [getattr(self.venv, attr_name) for _ in self._indices(indices)]

    def set_attr(self, attr_name, value, indices=None) -> None:
        setattr(self.venv, attr_name, value)

    def env_method(self, method_name, *method_args, indices=None, **method_kwargs):
        method = getattr(self.venv, method_name)
        return [method(*method_args, **method_kwargs) for _ in self._indices(indices)]

    def env_is_wrapped(self, wrapper_class, indices=None):
        return [False for _ in self._indices(indices)]

    def get_images(self):
        return list(self.venv.render() or [])

    def _indices(self, indices):
        if indices is None:
            return range(self.num_envs)
        if isinstance(indices, int):
            return [indices]
        return indices
