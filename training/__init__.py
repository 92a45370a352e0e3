"""superdex_gym.training: stable-baselines3 scripts for the SuperDex environments.

``python -m superdex_gym.training.train --config push ...`` (SAC + HER from ``configs/<name>.toml``) and
``python -m superdex_gym.training.evaluate MODEL.zip ...`` (seeded success rate, mean return, GIF / MP4). The
submodules import stable-baselines3; this package itself imports nothing.
"""
