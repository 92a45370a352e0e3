"""Forward kinematics, link Jacobians and Lie increments of articulations (sim/articulated/kinematics.py).

Checked against the released engine's link transforms, CoMs, Jacobians and add_articulated_delta_to_pose
(reference_data/articulated_api.json, recorded by tools/reference_runs/articulated_api.py), and against central
finite differences of the forward kinematics.
"""

import json
from pathlib import Path

import numpy as np
import pytest

import superdex_gym.sim as mochi
from superdex_gym.sim import articulated as art
from superdex_gym.sim import lie
from superdex_gym.sim.articulated import kinematics as kin

LAYOUT = json.loads((Path(__file__).parent / "reference_data" / "articulated_api.json").read_text())["layout"]
JT = art.ArticulatedJointType
SHAPE = mochi.create_box_mesh_shape([0.05, 0.2, 0.05])
# Round-off of composing 5 transforms in float64 (the reference's numbers differ from ours at this level).
ROUND_OFF = 1e-14


def mixed_model(world_from_root=None, com=None):
    types = [(JT.FREE, [0, 0, 1]), (JT.SPHERICAL, [0, 0, 1]), (JT.PRISMATIC, [1, 0, 0]), (JT.REVOLUTE, [0, 0, 1]),
             (JT.HARD, [0, 0, 1])]
    offsets = [[0, 0, 0], [0.1, -0.3, 0.05], [0, -0.3, 0], [0, -0.3, 0], [0, -0.3, 0]]
    p = art.ArticulatedActorParams(name="a", world_from_root=world_from_root or mochi.TransformRT(translation=[0, 2, 0]))
    p.joints = [art.ArticulatedJointParams(type=t, axis=ax, parent_link_from_joint=mochi.TransformRT(translation=o))
                for (t, ax), o in zip(types, offsets)]
    p.links = [art.ArticulatedLinkParams(parent_link=i - 1, shape=SHAPE, density=1000.0, center_of_mass=com,
                                         moment_of_inertia=None if com is None else (0.05, 0, 0, 0.006, 0, 0.05),
                                         parent_joint_from_link=mochi.TransformRT(translation=[0, -0.2, 0]))
               for i in range(5)]
    return art.build_model(p)


def test_forward_kinematics_and_jacobians_match_the_reference():
    m = mixed_model()
    q = np.array([LAYOUT["pose"]])
    rot, origin, com, jac = kin.link_jacobians(m, q)
    for i, t in enumerate(LAYOUT["link_transforms"]):
        ref_q = np.array(t["rotation"]) * np.sign(t["rotation"][3])
        assert np.abs(origin[0, i] - t["translation"]).max() < ROUND_OFF
        assert np.abs(lie.matrix_to_quat(rot[0, i]) - ref_q).max() < ROUND_OFF
        assert np.abs(com[0, i] - LAYOUT["link_com"][i]).max() < ROUND_OFF
        assert np.abs(jac[0, i] - np.array(LAYOUT["jacobians_6_by_ndofs"][i])).max() < ROUND_OFF


def test_lie_increment_matches_the_reference():
    m = mixed_model()
    q = np.array([LAYOUT["pose"]])
    out = kin.add_delta(m, q, np.array([LAYOUT["add_delta"]["delta"]]))
    assert np.abs(out[0] - LAYOUT["add_delta"]["result"]).max() < ROUND_OFF
    back = kin.pose_delta(m, q, out)
    assert np.abs(back[0] - LAYOUT["add_delta"]["delta"]).max() < 1e-13


@pytest.mark.parametrize("rotated_root", [False, True])
def test_jacobian_columns_are_central_differences_of_fk(rotated_root):
    root = mochi.TransformRT(mochi.Quaternion.from_matrix(lie.exp_so3(np.array([0.3, -0.7, 0.2]))), [0.2, 1.0, -0.4])
    m = mixed_model(root if rotated_root else None, com=(0.01, -0.03, 0.02))
    rng = np.random.default_rng(4)
    q = rng.uniform(-1.0, 1.0, (2, m.num_dofs))
    rot, _, com, jac = kin.link_jacobians(m, q)
    eps = 1e-6
    for d in range(m.num_dofs):
        e = np.zeros_like(q)
        e[:, d] = eps
        rp, _, cp = kin.forward_kinematics(m, kin.add_delta(m, q, e))
        rm, _, cm = kin.forward_kinematics(m, kin.add_delta(m, q, -e))
        dc = (cp - cm) / (2 * eps)
        dtheta = (lie.log_so3(rp @ np.swapaxes(rot, -1, -2)) - lie.log_so3(rm @ np.swapaxes(rot, -1, -2))) / (2 * eps)
        # central differences: O(eps^2) truncation plus round-off/eps ~ 1e-10
        assert np.abs(dc - jac[..., :3, d]).max() < 1e-8, d
        assert np.abs(dtheta - jac[..., 3:, d]).max() < 1e-8, d


def test_hard_joint_welds_and_has_no_columns():
    m = mixed_model()
    q = np.random.default_rng(1).uniform(-1, 1, (1, m.num_dofs))
    rot, _, _, jac = kin.link_jacobians(m, q)
    assert m.dof_info[4].get_size() == 0
    assert np.array_equal(rot[0, 4], rot[0, 3])  # identity rest rotation, no DoF
    assert np.array_equal(jac[0, 4, 3:], jac[0, 3, 3:])


def test_worlds_together_equal_each_alone_bit_for_bit():
    m = mixed_model()
    q = np.random.default_rng(2).uniform(-1, 1, (3, m.num_dofs))
    together = kin.link_jacobians(m, q)
    for w in range(3):
        alone = kin.link_jacobians(m, q[w:w + 1])
        for a, b in zip(together, alone):
            assert np.array_equal(a[w:w + 1], b)


def test_rotvec_increment_jacobian_is_the_derivative_of_the_lie_increment():
    rng = np.random.default_rng(8)
    theta = np.concatenate([rng.uniform(-2.5, 2.5, (4, 3)), rng.uniform(-1e-5, 1e-5, (2, 3))])
    jinv = kin.rotvec_increment_jacobian(theta)
    eps = 1e-6
    for a in range(3):
        d = eps * np.eye(3)[a]
        plus = lie.log_so3(lie.exp_so3(np.broadcast_to(d, theta.shape)) @ lie.exp_so3(theta))
        minus = lie.log_so3(lie.exp_so3(np.broadcast_to(-d, theta.shape)) @ lie.exp_so3(theta))
        # exact above the switch (kinematics._FIRST_ORDER_ANGLE, 0.0186 rad); below it the engine's first-order form, off by |theta|^2/12 relative (< 1e-9 here)
        assert np.abs((plus - minus) / (2 * eps) - jinv[:, :, a]).max() < 1e-8


def test_kernels_match_the_numpy_kinematics():
    """The kinematics kernels (sim/kernels/articulated.py) against their numpy versions on every joint type, a
    rotated root and joint frames, a branch, user CoMs, and rotation vectors below the series switch (1e-4 rad) and
    at zero: agreement to a few ulps of the largest entry (different product orders only)."""
    types = [(JT.FREE, [0, 0, 1]), (JT.SPHERICAL, [0, 0, 1]), (JT.PRISMATIC, [1, 0, 0]), (JT.REVOLUTE, [0, 1, 1]),
             (JT.HARD, [0, 0, 1]), (JT.REVOLUTE, [1, 0, 0])]
    tilt = mochi.Quaternion(0.05, 0.1, 0.0, float(np.sqrt(1 - 0.0125)))
    p = art.ArticulatedActorParams(name="k", world_from_root=mochi.TransformRT(
        mochi.Quaternion(0.1, -0.2, 0.3, 0.9273618495495703), [0.3, 2, 0]))
    p.joints = [art.ArticulatedJointParams(type=t, axis=ax, parent_link_from_joint=mochi.TransformRT(
        tilt, [0.1, -0.3 if i else 0.0, 0.02])) for i, (t, ax) in enumerate(types)]
    p.links = [art.ArticulatedLinkParams(parent_link=i - 1 if i != 5 else 2, shape=SHAPE, mass=2.0,
                                         center_of_mass=[0.01, 0.02, -0.01],
                                         moment_of_inertia=[0.02, 0.0, 0.0, 0.01, 0.0, 0.02],
                                         parent_joint_from_link=mochi.TransformRT(translation=[0, -0.2, 0]))
               for i in range(6)]
    model = art.build_model(p)
    q = np.random.default_rng(0).normal(size=(5, model.num_dofs))
    q[0, 3:6], q[1, 6:9] = 1e-6, 0.0
    for ours, numpy_ in zip(kin.link_jacobians(model, q), kin.link_jacobians_numpy(model, q)):
        np.testing.assert_allclose(ours, numpy_, rtol=0, atol=8 * np.finfo(float).eps * np.abs(numpy_).max())
    # each joint's own motion: the kernel's exp is lie.exp_so3's arithmetic in its order, so the same bits
    for ours, numpy_ in zip(kin.joint_transforms(model, q), kin.joint_transforms_numpy(model, q)):
        assert np.array_equal(ours, numpy_)
