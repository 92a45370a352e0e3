import numpy as np
import pytest

import superdex_gym.sim as mochi


def pytest_sessionstart(session):
    """Compile the kernels once in the controlling process: under pytest-xdist this runs before the workers start
    (xdist starts them in its own trylast hook), so from a cold cache they load the kernels instead of each
    compiling the same ones at the same time."""
    if not hasattr(session.config, "workerinput"):
        from superdex_gym.sim.warmup import compile_kernels

        compile_kernels()


def pytest_collection_modifyitems(config, items):
    """The tests marked ``long`` first (stable order otherwise): under pytest-xdist (``-n 2``) the longest then runs
    beside the rest instead of after it (measured when the Push learning test was in the suite, at -n 2: 6.5 min
    with it last, 5.5 min with it first; it is marked ``slow`` now and runs apart)."""
    items.sort(key=lambda item: item.get_closest_marker("long") is None)


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


def make_box_scene(half_extents=(0.1, 0.2, 0.3), density=1000.0, **actor_kwargs):
    """A scene with one free box (no contact exists in the engine core)."""
    scene = mochi.create_scene("test")
    shape = mochi.create_box_mesh_shape(list(half_extents))
    actor = scene.create_rigid_actor(name="box", shape=shape, density=density, **actor_kwargs)
    return scene, actor
