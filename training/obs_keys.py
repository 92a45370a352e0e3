"""Observation keys for a policy trained on camera images (``train.policy_keys``): an SB3 ``VecEnvWrapper`` that
keeps some keys of the env's ``Dict`` observation (the images and proprioception, say, not the object state that
``achieved_goal`` carries), and the keys ``VecNormalize`` may normalize (not the images: SB3's CNN scales uint8
images itself)."""

from __future__ import annotations

from gymnasium import spaces
from stable_baselines3.common.preprocessing import get_flattened_obs_dim, is_image_space
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from stable_baselines3.common.vec_env import VecEnvWrapper


class KeepObservationKeys(VecEnvWrapper):
    """``venv`` with only ``keys`` of its ``Dict`` observations (also in ``terminal_observation``)."""

    def __init__(self, venv, keys):
        space = venv.observation_space
        missing = [k for k in keys if not isinstance(space, spaces.Dict) or k not in space.spaces]
        if missing:
            have = sorted(space.spaces) if isinstance(space, spaces.Dict) else type(space).__name__
            raise ValueError(f"train.policy_keys {missing} are not observation keys of the env ({have}); set [env] "
                             "obs_mode to one that has them")
        self.keys = list(keys)
        super().__init__(venv, observation_space=spaces.Dict({k: space[k] for k in self.keys}))

    def _keep(self, obs: dict) -> dict:
        return {k: obs[k] for k in self.keys}

    def reset(self):
        return self._keep(self.venv.reset())

    def step_wait(self):
        obs, rewards, dones, infos = self.venv.step_wait()
        for info in infos:
            if "terminal_observation" in info:
                info["terminal_observation"] = self._keep(info["terminal_observation"])
        return self._keep(obs), rewards, dones, infos


def vector_keys(space):
    """The keys of a ``Dict`` space that ``VecNormalize`` should normalize (all but images); None for other spaces
    (``VecNormalize``'s default)."""
    if not isinstance(space, spaces.Dict):
        return None
    return [k for k, sub in space.spaces.items() if not is_image_space(sub, check_channels=False)]


class SmallCNNExtractor(BaseFeaturesExtractor):
    """SB3's ``CombinedExtractor`` with a smaller CNN per image (16 8x8 stride-4 and 32 4x4 stride-2 filters, then
    ``cnn_output_dim`` units: a third of NatureCNN's multiply-adds at 64 x 64, which is what one CPU thread can
    afford per PPO epoch) and the vector keys flattened beside it."""

    def __init__(self, observation_space: spaces.Dict, cnn_output_dim: int = 128):
        import torch as th
        from torch import nn

        sizes, extractors, total = {}, {}, 0
        for key, sub in observation_space.spaces.items():
            if is_image_space(sub, check_channels=False):
                channels = sub.shape[0]  # SB3 transposes images to channels first before the policy
                if min(sub.shape[1:]) < 20:
                    raise ValueError(f"SmallCNNExtractor needs images of at least 20 x 20 pixels (its two "
                                     f"convolutions), got {key!r} of {sub.shape[1]} x {sub.shape[2]}")
                cnn = nn.Sequential(nn.Conv2d(channels, 16, 8, stride=4), nn.ReLU(), nn.Conv2d(16, 32, 4, stride=2),
                                    nn.ReLU(), nn.Flatten())
                with th.no_grad():
                    flat = cnn(th.zeros(1, *sub.shape)).shape[1]
                extractors[key] = nn.Sequential(cnn, nn.Linear(flat, cnn_output_dim), nn.ReLU())
                sizes[key] = cnn_output_dim
            else:
                extractors[key] = nn.Flatten()
                sizes[key] = get_flattened_obs_dim(sub)
            total += sizes[key]
        super().__init__(observation_space, features_dim=total)
        self.extractors = nn.ModuleDict(extractors)

    def forward(self, observations):
        import torch as th

        return th.cat([self.extractors[k](observations[k]) for k in self.extractors], dim=1)


EXTRACTORS = {"SmallCNNExtractor": SmallCNNExtractor}


def named_extractor(policy_kwargs: dict) -> dict:
    """``policy_kwargs`` with a ``features_extractor_class`` given by name in a config (``"SmallCNNExtractor"``)
    replaced by the class."""
    name = policy_kwargs.get("features_extractor_class")
    if not isinstance(name, str):
        return dict(policy_kwargs)
    if name not in EXTRACTORS:
        raise ValueError(f"model.policy_kwargs.features_extractor_class must be one of {sorted(EXTRACTORS)}, "
                         f"got {name!r}")
    return {**policy_kwargs, "features_extractor_class": EXTRACTORS[name]}
