"""Observation keys for a policy trained on camera images (``train.policy_keys``): an SB3 ``VecEnvWrapper`` that
keeps some keys of the env's ``Dict`` observation (the images and proprioception, say, not the object state that
``achieved_goal`` carries), and the keys ``VecNormalize`` may normalize (not the images: SB3's CNN scales uint8
images itself)."""

from __future__ import annotations

import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.preprocessing import get_flattened_obs_dim, is_image_space
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from stable_baselines3.common.vec_env import VecEnvWrapper
from torch import nn


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


class SpatialSoftmaxExtractor(BaseFeaturesExtractor):
    """A keypoint encoder per image (Levine et al. 2016's spatial softmax, robomimic's default visual encoder):
    two small convolutions (`KeypointEncoder`), then for each of ``num_keypoints`` feature maps the softmax-weighted
    mean pixel position (x, y in [-1, 1]) and the vector keys flattened beside them. A push or a grasp needs where
    an object is, which a keypoint gives as a number the policy's MLP reads directly; a flattened conv map has to
    learn that position from thousands of units."""

    def __init__(self, observation_space: spaces.Dict, num_keypoints: int = 16, temperature: float = 0.03):
        if not isinstance(num_keypoints, int) or isinstance(num_keypoints, bool) or num_keypoints < 1:
            raise ValueError(f"num_keypoints must be a positive int, got {num_keypoints!r}")
        if not (isinstance(temperature, (int, float)) and np.isfinite(temperature) and temperature > 0):
            raise ValueError(f"temperature must be a positive finite number, got {temperature!r}")
        extractors, total = {}, 0
        for key, sub in observation_space.spaces.items():
            if is_image_space(sub, check_channels=False):
                channels, height, width = sub.shape  # channels first, as SB3 hands images to the policy
                if min(height, width) < 8:  # at least 2 x 2 patches
                    raise ValueError(f"SpatialSoftmaxExtractor needs images of at least 8 x 8 pixels, got {key!r} "
                                     f"of {height} x {width}")
                extractors[key] = KeypointEncoder(channels, num_keypoints, float(temperature))
                total += 2 * num_keypoints
            else:
                extractors[key] = nn.Flatten()
                total += get_flattened_obs_dim(sub)
        super().__init__(observation_space, features_dim=total)
        self.extractors = nn.ModuleDict(extractors)

    def forward(self, observations):
        return th.cat([self.extractors[k](observations[k]) for k in self.extractors], dim=1)


class KeypointEncoder(nn.Module):
    """A 4 x 4 stride-4 convolution (32 filters, one per 4 x 4 patch), a 1 x 1 convolution to ``num_keypoints``
    maps and a spatial softmax with a learned temperature; the output is each map's expected x, then each map's
    expected y, in [-1, 1] across the image. The patch convolution keeps the encoder at SmallCNNExtractor's cost
    on one CPU thread (a 3 x 3 convolution at half resolution measured 8x slower per batch). ``temperature``: the
    softmax's starting temperature; the initial maps are ~0.1 in size, so at 1 every keypoint starts near the image
    centre and learns slowly (docs/pixels.md: supervised on the cube's position, 0.03 reached 2 cm in half the
    steps 1 needed for 5 cm)."""

    def __init__(self, channels: int, num_keypoints: int, temperature: float = 0.03):
        super().__init__()
        self.convs = nn.Sequential(nn.Conv2d(channels, 32, 4, stride=4), nn.ReLU(),
                                   nn.Conv2d(32, num_keypoints, 1))
        self.log_temperature = nn.Parameter(th.tensor(float(np.log(temperature))))

    def forward(self, image):
        maps = self.convs(image)
        n, k, h, w = maps.shape
        weights = th.softmax(maps.reshape(n, k, h * w) / self.log_temperature.exp(), dim=-1).reshape(n, k, h, w)
        xs = th.linspace(-1.0, 1.0, w, dtype=maps.dtype, device=maps.device)
        ys = th.linspace(-1.0, 1.0, h, dtype=maps.dtype, device=maps.device)
        return th.cat([(weights.sum(dim=2) * xs).sum(dim=-1), (weights.sum(dim=3) * ys).sum(dim=-1)], dim=1)


EXTRACTORS = {"SmallCNNExtractor": SmallCNNExtractor, "SpatialSoftmaxExtractor": SpatialSoftmaxExtractor}


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
