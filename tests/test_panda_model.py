"""The Panda's data (envs/robots/panda_model.py) against independent sources: its forward kinematics (Menagerie's
body tree through the engine's articulated FK) equals Franka's published modified Denavit-Hartenberg chain (Craig's
convention, Franka Control Interface documentation) to round-off; the actor builds, with the published DoF count,
limits and masses; where pybullet_data is installed (the ``bench`` extra) the stored collision boxes are the fit
tools/fit_panda_collision.py makes."""

import importlib.util
import pathlib

import numpy as np
import pytest

from superdex_gym.envs.robots import panda_model as pm
from superdex_gym.sim.articulated.kinematics import forward_kinematics
from superdex_gym.sim.articulated.model import build_model

# Franka's modified DH rows (a_{i-1} [m], d_i [m], alpha_{i-1} [rad]), then the flange d = 0.107 m
DH = ((0.0, 0.333, 0.0), (0.0, 0.0, -np.pi / 2), (0.0, 0.316, np.pi / 2), (0.0825, 0.0, np.pi / 2),
      (-0.0825, 0.384, -np.pi / 2), (0.0, 0.0, np.pi / 2), (0.088, 0.0, np.pi / 2))


def _rot_x(a):
    c, s = np.cos(a), np.sin(a)
    return np.array([[1, 0, 0, 0], [0, c, -s, 0], [0, s, c, 0], [0, 0, 0, 1.0]])


def _rot_z(a):
    c, s = np.cos(a), np.sin(a)
    return np.array([[c, -s, 0, 0], [s, c, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1.0]])


def _trans(x=0.0, z=0.0):
    t = np.eye(4)
    t[0, 3], t[2, 3] = x, z
    return t


def _dh_hand(q):
    """The hand frame of Franka's DH chain: the flange, turned -45 degrees about z."""
    t = np.eye(4)
    for (a, d, alpha), theta in zip(DH, q):
        t = t @ _rot_x(alpha) @ _trans(x=a) @ _rot_z(theta) @ _trans(z=d)
    return t @ _trans(z=0.107) @ _rot_z(-np.pi / 4)


def test_forward_kinematics_equals_the_published_dh_chain():
    model = build_model(pm.panda_actor_params())
    rng = np.random.default_rng(0)
    lo, hi = np.array(pm.LOWER), np.array(pm.UPPER)
    q = np.vstack([pm.HOME, np.zeros(9), rng.uniform(lo, hi, size=(30, 9))])
    rot, origin, _ = forward_kinematics(model, q)
    hand = pm.KINEMATICS.index(next(k for k in pm.KINEMATICS if k[0] == "hand"))
    for w in range(q.shape[0]):
        ref = _dh_hand(q[w, :7])
        # 9 products of O(1) transforms: round-off ~1e-16 each
        np.testing.assert_allclose(rot[w, hand], ref[:3, :3], rtol=0, atol=1e-12)
        np.testing.assert_allclose(origin[w, hand], ref[:3, 3], rtol=0, atol=1e-12)
    # at the zero pose the flange is 0.088 m forward and 0.926 m up (0.333 + 0.316 + 0.384 - 0.107)
    np.testing.assert_allclose(origin[1, hand], [0.088, 0.0, 0.926], atol=1e-12)


def test_the_actor_has_the_published_dofs_limits_and_masses():
    model = build_model(pm.panda_actor_params())
    assert model.num_dofs == 9 and len(pm.LOWER) == len(pm.UPPER) == len(pm.MAX_VELOCITY) == 9
    np.testing.assert_allclose(model.dof_lower, pm.LOWER)
    np.testing.assert_allclose(model.dof_upper, pm.UPPER)
    assert np.all(np.array(pm.LOWER) <= pm.HOME) and np.all(np.array(pm.HOME) <= pm.UPPER)
    assert 17.0 < model.mass.sum() < 18.5  # Franka's datasheet: the arm weighs about 18 kg
    assert not model.has_gravity.any()  # gravity compensated by default
    assert build_model(pm.panda_actor_params(gravity_compensated=False)).has_gravity.all()


@pytest.mark.skipif(importlib.util.find_spec("pybullet_data") is None,
                    reason="pybullet_data (the bench extra) holds the collision meshes the boxes are fitted to")
def test_the_stored_collision_boxes_are_the_fit():
    import runpy
    fit = runpy.run_path(str(pathlib.Path(__file__).resolve().parents[1] / "tools" / "fit_panda_collision.py"))["fit"]
    for link, (centre, quat, half) in pm.COLLISION_BOXES.items():
        c, q, h, ratio = fit(link)
        np.testing.assert_allclose(centre, c, atol=1e-5)  # stored to 5 decimals
        np.testing.assert_allclose(half, h, atol=1e-5)
        assert abs(np.dot(q, quat)) == pytest.approx(1.0, abs=1e-4)  # the same rotation (q or -q)
        assert 1.0 < ratio < 2.0
