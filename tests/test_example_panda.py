"""examples/panda_sweep.py: the Panda's links push a cube across the table (contact between link actors and a rigid
actor), the drives keep the other joints at their targets and the arm inside its limits."""

import importlib.util
import pathlib

import numpy as np

from superdex_gym.envs.robots import panda_model as pm

EXAMPLE = pathlib.Path(__file__).resolve().parents[1] / "examples" / "panda_sweep.py"


def _example():
    spec = importlib.util.spec_from_file_location("panda_sweep", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_hand_sweeps_the_cube_along_the_table():
    ex = _example()
    start, end = ex.run()
    moved = np.linalg.norm(end[:2] - start[:2])
    assert moved > 0.1  # pushed along the hand's arc (36.7 cm when written)
    assert abs(end[2] - 0.025) < 2e-3  # still resting on the table (half its 5 cm size), not thrown
    # without the arm in its way the cube stays where it was put (it settles by its contact's ~1e-5 m)
    ex.BASE = (-5.0, 0.0, 0.0)
    start, end = ex.run()
    assert np.linalg.norm(end[:2] - start[:2]) < 1e-9 and abs(end[2] - start[2]) < 1e-4


def test_the_arm_ends_at_its_targets_within_its_limits():
    ex = _example()
    scene, arm, _ = ex.build()
    for _ in range(ex.SWEEP_STEPS):
        scene.step(ex.TIME_STEP)
    q = arm.get_articulated_pose(np.zeros(9))
    assert np.all(q >= np.array(pm.LOWER) - 1e-3) and np.all(q <= np.array(pm.UPPER) + 1e-3)
    target = ex.POSE + np.eye(9)[0] * ex.SWEEP_RAD
    # the swing joint is overdamped (still closing in); the others held by 3e4 N m/rad drives
    assert np.abs(q[1:7] - target[1:7]).max() < 0.02
    assert 0.5 * ex.SWEEP_RAD < q[0] - ex.POSE[0] <= ex.SWEEP_RAD + 1e-3
