"""Generalized coordinates, forward kinematics and link Jacobians of one articulation, batched over worlds (W).

Conventions (measured on superdex-physics 1.0.1, tests/reference_data/articulated_api.json):

* DoF order per joint: translations then rotations (FREE = [t(3), rotation vector(3)]); joints in link order.
* The pose holds one value per DoF: angles and travels as such, SPHERICAL and FREE rotations as rotation vectors.
* Increments are Lie increments: a rotation DoF block moves R_joint <- exp(skew(d)) R_joint, d in the joint's
  parent frame (the parent link's frame times parent_link_from_joint); translations add.
* Link Jacobians are world-frame and map a DoF increment to the link's (dc, dtheta): CoM displacement and left
  rotation increment R <- exp(skew(dtheta)) R, the engine's rigid convention (sim/solver/numpy_newton.py, sim/lie.py).

Links are visited in their parent-first order; each visit is whole-array over the world axis.
"""

from __future__ import annotations

import numpy as np

from .. import lie
from ..jit import kernel_array
from ..kernels import articulated as kernels
from .params import ArticulatedJointType as JT


# Below this rotation angle (rad) the increment Jacobian is taken to first order, as the engine does (its dropped
# term is |theta|^2/12 relative, < 3e-5 here); float32 eps^(1/4) = 0.01858 lies in the bracket the reference runs
# pin the engine's switch to, (0.01847, 0.01960) (tests/test_articulated_constraints.py, "saturated").
_FIRST_ORDER_ANGLE = float(np.finfo(np.float32).eps) ** 0.25


def joint_transforms(model, q: np.ndarray):
    """(W, L, 3, 3) rotations and (W, L, 3) translations of each joint's motion (child side in joint frame)."""
    _, kind, axis, _, _, _, _, _, _, offset, _ = _kernel_arrays(model)
    q = kernel_array(q)
    rot = np.empty((q.shape[0], model.num_links, 3, 3))
    trans = np.empty((q.shape[0], model.num_links, 3))
    kernels.joint_motion(kind, axis, offset, q, rot, trans)
    return rot, trans


def joint_transforms_numpy(model, q: np.ndarray):
    """`joint_transforms` in numpy only (the kernel's oracle, tests/test_articulated_kinematics.py)."""
    q = np.asarray(q, dtype=np.float64)
    num_worlds = q.shape[0]
    rot = np.broadcast_to(np.eye(3), (num_worlds, model.num_links, 3, 3)).copy()
    trans = np.zeros((num_worlds, model.num_links, 3))
    for i, (jtype, info) in enumerate(zip(model.joint_type, model.dof_info)):
        o = info.offset
        if jtype == JT.REVOLUTE:
            rot[:, i] = lie.exp_so3(q[:, o, None] * model.axis[i])
        elif jtype == JT.PRISMATIC:
            trans[:, i] = q[:, o, None] * model.axis[i]
        elif jtype == JT.SPHERICAL:
            rot[:, i] = lie.exp_so3(np.ascontiguousarray(q[:, o:o + 3]))
        elif jtype == JT.FREE:
            trans[:, i] = q[:, o:o + 3]
            rot[:, i] = lie.exp_so3(np.ascontiguousarray(q[:, o + 3:o + 6]))
    return rot, trans


def forward_kinematics(model, q: np.ndarray):
    """Link frames and CoMs for poses q (W, D): rotation (W, L, 3, 3), link origin (W, L, 3), CoM (W, L, 3)."""
    frames = _frames(model, q)
    return frames[0], frames[1], frames[2]


def _kernel_arrays(model):
    """The model's arrays as the kinematics kernels read them (built once per model)."""
    cached = model.__dict__.get("_kinematics_arrays")
    if cached is None:
        subtree = np.array([_subtree(model, k) for k in range(model.num_links)]) > 0.5
        cached = (kernel_array(model.parent, np.int64), kernel_array(np.array([t.value for t in model.joint_type]),
                                                                     np.int64),
                  kernel_array(model.axis), kernel_array(model.parent_rotation), kernel_array(model.parent_translation),
                  kernel_array(model.joint_to_link), kernel_array(model.root_rotation),
                  kernel_array(model.root_translation), kernel_array(model.com_local),
                  kernel_array(np.array([d.offset for d in model.dof_info]), np.int64),
                  kernel_array(subtree, np.bool_))
        model.__dict__["_kinematics_arrays"] = cached  # frozen dataclass: the cache lives in its __dict__
    return cached


def _frames(model, q):
    """FK plus each joint's world axes frame R_J (W, L, 3, 3) and its moved origin (W, L, 3) (one kernel)."""
    parent, kind, axis, prot, ptrans, j2l, root_rot, root_trans, com_local, offset, _ = _kernel_arrays(model)
    q = kernel_array(q)
    num_worlds = q.shape[0]
    rot = np.empty((num_worlds, model.num_links, 3, 3))
    origin = np.empty((num_worlds, model.num_links, 3))
    com, frame_rot, joint_origin = np.empty_like(origin), np.empty_like(rot), np.empty_like(origin)
    kernels.frames(parent, kind, axis, prot, ptrans, j2l, root_rot, root_trans, com_local, offset, q, rot, origin,
                   com, frame_rot, joint_origin)
    return rot, origin, com, frame_rot, joint_origin


def link_jacobians(model, q: np.ndarray):
    """FK and the world-frame link Jacobians (W, L, 6, D): rows (dc, dtheta) of each link's CoM and rotation."""
    rot, origin, com, frame_rot, joint_origin = _frames(model, q)
    _, kind, axis, _, _, _, _, _, _, offset, subtree = _kernel_arrays(model)
    jac = np.empty((rot.shape[0], model.num_links, 6, model.num_dofs))
    kernels.jacobians(kind, axis, offset, subtree, frame_rot, joint_origin, com, jac)
    return rot, origin, com, jac


def _frames_numpy(model, q):
    """`_frames` in numpy only (the kernel's oracle, tests/test_articulated_kinematics.py)."""
    jrot, jtrans = joint_transforms_numpy(model, q)
    num_worlds = jrot.shape[0]
    rot = np.empty((num_worlds, model.num_links, 3, 3))
    origin = np.empty((num_worlds, model.num_links, 3))
    frame_rot = np.empty_like(rot)
    joint_origin = np.empty_like(origin)
    for i in range(model.num_links):
        p = model.parent[i]
        prot = np.broadcast_to(model.root_rotation, (num_worlds, 3, 3)) if p < 0 else rot[:, p]
        pori = np.broadcast_to(model.root_translation, (num_worlds, 3)) if p < 0 else origin[:, p]
        frame_rot[:, i] = prot @ model.parent_rotation[i]
        base = pori + prot @ model.parent_translation[i]
        joint_origin[:, i] = base + np.einsum("wij,wj->wi", frame_rot[:, i], jtrans[:, i])
        rot[:, i] = frame_rot[:, i] @ jrot[:, i]
        origin[:, i] = joint_origin[:, i] + np.einsum("wij,j->wi", rot[:, i], model.joint_to_link[i])
    com = origin + np.einsum("wlij,lj->wli", rot, model.com_local)
    return rot, origin, com, frame_rot, joint_origin


def link_jacobians_numpy(model, q: np.ndarray):
    """`link_jacobians` in numpy only (the kernel's oracle, tests/test_articulated_kinematics.py)."""
    rot, origin, com, frame_rot, joint_origin = _frames_numpy(model, q)
    num_worlds = rot.shape[0]
    jac = np.zeros((num_worlds, model.num_links, 6, model.num_dofs))
    for k, (jtype, info) in enumerate(zip(model.joint_type, model.dof_info)):
        if info.get_size() == 0:
            continue
        moved = _subtree(model, k)[None, :, None]  # (1, L, 1) mask: the joint moves only its subtree
        if jtype == JT.REVOLUTE:
            lin_axes, rot_axes = [], [frame_rot[:, k] @ model.axis[k]]
        elif jtype == JT.PRISMATIC:
            lin_axes, rot_axes = [frame_rot[:, k] @ model.axis[k]], []
        elif jtype == JT.SPHERICAL:
            lin_axes, rot_axes = [], [frame_rot[:, k, :, a] for a in range(3)]
        else:  # FREE
            lin_axes = [frame_rot[:, k, :, a] for a in range(3)]
            rot_axes = [frame_rot[:, k, :, a] for a in range(3)]
        arm = com - joint_origin[:, k][:, None, :]
        col = info.offset
        for v in lin_axes:
            jac[:, :, :3, col] = moved * v[:, None, :]
            col += 1
        for w in rot_axes:
            jac[:, :, :3, col] = moved * _cross(w[:, None, :], arm)
            jac[:, :, 3:, col] = moved * w[:, None, :]
            col += 1
    return rot, origin, com, jac


def _cross(a, b):
    """a x b over the last axis (numpy's cross spends most of its time moving axes for these small arrays)."""
    return np.stack([a[..., 1] * b[..., 2] - a[..., 2] * b[..., 1], a[..., 2] * b[..., 0] - a[..., 0] * b[..., 2],
                     a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]], axis=-1)


def _subtree(model, k: int) -> np.ndarray:
    """1.0 on link k and its descendants, else 0.0 (parents precede children, so one forward pass finds them)."""
    inside = np.zeros(model.num_links, dtype=bool)
    inside[k] = True
    for i in range(k + 1, model.num_links):
        inside[i] = model.parent[i] >= 0 and inside[model.parent[i]]
    return inside.astype(np.float64)


def rotation_dof_blocks(model):
    """Offsets of the 3-DoF rotation-vector blocks (SPHERICAL and FREE rotations) in the DoF vector."""
    out = []
    for jtype, info in zip(model.joint_type, model.dof_info):
        if jtype in (JT.SPHERICAL, JT.FREE):
            out.append(info.get_rot_offset())
    return out


def add_delta(model, q: np.ndarray, delta: np.ndarray) -> np.ndarray:
    """q (+) delta: additive on scalar DoFs, R <- exp(skew(d)) R on rotation-vector blocks (W, D)."""
    out = np.asarray(q, dtype=np.float64) + delta
    for o in rotation_dof_blocks(model):
        r = lie.exp_so3(np.ascontiguousarray(delta[:, o:o + 3])) @ lie.exp_so3(np.ascontiguousarray(q[:, o:o + 3]))
        out[:, o:o + 3] = lie.log_so3(r)
    return out


def pose_delta(model, q_base: np.ndarray, q_target: np.ndarray) -> np.ndarray:
    """The delta with add_delta(q_base, delta) == q_target: differences, and log(R_t R_b^T) on rotation blocks."""
    out = np.asarray(q_target, dtype=np.float64) - q_base
    for o in rotation_dof_blocks(model):
        rt = lie.exp_so3(np.ascontiguousarray(q_target[:, o:o + 3]))
        rb = lie.exp_so3(np.ascontiguousarray(q_base[:, o:o + 3]))
        out[:, o:o + 3] = lie.log_so3(rt @ np.swapaxes(rb, -1, -2))
    return out


def rotvec_increment_jacobian(theta: np.ndarray) -> np.ndarray:
    """d log(exp(skew(d)) exp(skew(theta))) / dd at d = 0 (the inverse left Jacobian of SO(3)), (..., 3, 3):
    how a rotation-vector block moves under a Lie increment of its DoFs.

    Below |theta| = _FIRST_ORDER_ANGLE it is the first-order 1 - skew(theta)/2, as the released engine's (its
    pose-controller and saturated-constraint runs agree to 1e-12 only so)."""
    theta = np.asarray(theta, dtype=np.float64)
    angle_sq = np.einsum("...i,...i->...", theta, theta)
    angle = np.sqrt(angle_sq)
    small = angle < _FIRST_ORDER_ANGLE
    safe = np.where(small, 1.0, angle)
    coef = np.where(small, 0.0, 1.0 / (safe * safe) - (1.0 + np.cos(safe)) / (2.0 * safe * np.sin(safe)))
    k = lie.skew(theta)
    return np.eye(3) - 0.5 * k + coef[..., None, None] * (k @ k)
