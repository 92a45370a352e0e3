import numpy as np
import pytest

import superdex_gym.sim as mochi


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


def make_box_scene(half_extents=(0.1, 0.2, 0.3), density=1000.0, **actor_kwargs):
    """A scene with one free box (no contact exists in the engine core)."""
    scene = mochi.create_scene("test")
    shape = mochi.create_box_mesh_shape(list(half_extents))
    actor = scene.create_rigid_actor(name="box", shape=shape, density=density, **actor_kwargs)
    return scene, actor
