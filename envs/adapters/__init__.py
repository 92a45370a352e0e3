"""Adapters of the native vector env to other libraries (sb3.py: a Stable-Baselines3 VecEnv)."""
