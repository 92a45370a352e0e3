"""SuperDex Gym: robot-manipulation environments on a pure-Python re-implementation of SuperDex Physics.

Importing the package registers the environments (``SuperDex/Push-v0``, ...) when Gymnasium is installed; the
engine (``superdex_gym.sim``) works without it. ``python -m superdex_gym`` runs the main job (`superdex_gym.tour`).
"""

__version__ = "0.1.0"

try:
    import gymnasium as _gymnasium  # noqa: F401
except ImportError:  # the engine alone needs no Gymnasium
    pass
else:
    from .envs import register_envs

    register_envs()
