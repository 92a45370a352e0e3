"""Forward kinematics and link Jacobians of one articulation over W worlds (sim/articulated/kinematics.py holds
the numpy versions these are tested against, tests/test_articulated_kinematics.py).

Joint kinds are the ArticulatedJointType values: 0 FREE, 1 PRISMATIC, 2 REVOLUTE, 3 SPHERICAL, 4 HARD.
"""

from __future__ import annotations

import numpy as np

from ..jit import kernel
from .fused import _exp
from .so3 import matmul3


@kernel
def frames(parent, kind, axis, parent_rot, parent_trans, joint_to_link, root_rot, root_trans, com_local, offset, q,
           rot, origin, com, frame_rot, joint_origin):
    """Link rotations, origins and CoMs (W, L, ...), and each joint's world frame and moved origin, for poses q
    (W, D); links in their parent-first order."""
    jr = np.empty((3, 3))
    jt = np.empty(3)
    theta = np.empty(3)
    for w in range(q.shape[0]):
        for i in range(parent.shape[0]):
            o = offset[i]
            jt[:] = 0.0
            if kind[i] == 2:
                theta[0], theta[1], theta[2] = q[w, o] * axis[i, 0], q[w, o] * axis[i, 1], q[w, o] * axis[i, 2]
                _exp(theta, jr)
            elif kind[i] == 3:
                _exp(q[w, o:o + 3], jr)
            elif kind[i] == 0:
                _exp(q[w, o + 3:o + 6], jr)
                jt[0], jt[1], jt[2] = q[w, o], q[w, o + 1], q[w, o + 2]
            else:
                jr[:] = 0.0
                jr[0, 0] = jr[1, 1] = jr[2, 2] = 1.0
                if kind[i] == 1:
                    jt[0], jt[1], jt[2] = q[w, o] * axis[i, 0], q[w, o] * axis[i, 1], q[w, o] * axis[i, 2]
            p = parent[i]
            prot = root_rot if p < 0 else rot[w, p]
            pori = root_trans if p < 0 else origin[w, p]
            matmul3(prot, parent_rot[i], frame_rot[w, i])
            matmul3(frame_rot[w, i], jr, rot[w, i])
            for a in range(3):
                base = pori[a] + prot[a, 0] * parent_trans[i, 0] + prot[a, 1] * parent_trans[i, 1] \
                    + prot[a, 2] * parent_trans[i, 2]
                f = frame_rot[w, i]
                joint_origin[w, i, a] = base + f[a, 0] * jt[0] + f[a, 1] * jt[1] + f[a, 2] * jt[2]
            for a in range(3):
                r = rot[w, i]
                origin[w, i, a] = joint_origin[w, i, a] + r[a, 0] * joint_to_link[i, 0] + r[a, 1] * joint_to_link[i, 1] \
                    + r[a, 2] * joint_to_link[i, 2]
                com[w, i, a] = origin[w, i, a] + r[a, 0] * com_local[i, 0] + r[a, 1] * com_local[i, 1] \
                    + r[a, 2] * com_local[i, 2]


@kernel
def jacobians(kind, axis, offset, subtree, frame_rot, joint_origin, com, jac):
    """World link Jacobians jac (W, L, 6, D), zeroed first: column d of link l is (dc, dtheta) per unit DoF d, for
    the links of each joint's subtree (``subtree`` (L, L): joint k moves link l)."""
    jac[:] = 0.0
    v = np.empty(3)
    for w in range(com.shape[0]):
        for k in range(kind.shape[0]):
            if kind[k] == 4:
                continue
            f = frame_rot[w, k]
            for l in range(com.shape[1]):
                if not subtree[k, l]:
                    continue
                arm0 = com[w, l, 0] - joint_origin[w, k, 0]
                arm1 = com[w, l, 1] - joint_origin[w, k, 1]
                arm2 = com[w, l, 2] - joint_origin[w, k, 2]
                col = offset[k]
                num_lin = 3 if kind[k] == 0 else (1 if kind[k] == 1 else 0)
                num_rot = 0 if kind[k] == 1 else (1 if kind[k] == 2 else 3)
                for c in range(num_lin + num_rot):
                    for a in range(3):  # the axis: the joint's axis (1-DoF joints) or a column of its frame
                        if kind[k] == 1 or kind[k] == 2:
                            v[a] = f[a, 0] * axis[k, 0] + f[a, 1] * axis[k, 1] + f[a, 2] * axis[k, 2]
                        else:
                            v[a] = f[a, c % 3]
                    if c < num_lin:
                        jac[w, l, 0, col + c] = v[0]
                        jac[w, l, 1, col + c] = v[1]
                        jac[w, l, 2, col + c] = v[2]
                    else:
                        jac[w, l, 0, col + c] = v[1] * arm2 - v[2] * arm1
                        jac[w, l, 1, col + c] = v[2] * arm0 - v[0] * arm2
                        jac[w, l, 2, col + c] = v[0] * arm1 - v[1] * arm0
                        jac[w, l, 3, col + c] = v[0]
                        jac[w, l, 4, col + c] = v[1]
                        jac[w, l, 5, col + c] = v[2]


@kernel
def joint_motion(kind, axis, offset, q, rot, trans):
    """Each joint's own motion (W, L, 3, 3) and (W, L, 3) for poses q (W, D): kinematics.joint_transforms."""
    theta = np.empty(3)
    for w in range(q.shape[0]):
        for i in range(kind.shape[0]):
            o = offset[i]
            for a in range(3):
                trans[w, i, a] = 0.0
                for b in range(3):
                    rot[w, i, a, b] = 1.0 if a == b else 0.0
            if kind[i] == 2:
                theta[0], theta[1], theta[2] = q[w, o] * axis[i, 0], q[w, o] * axis[i, 1], q[w, o] * axis[i, 2]
                _exp(theta, rot[w, i])
            elif kind[i] == 1:
                trans[w, i, 0], trans[w, i, 1], trans[w, i, 2] = (q[w, o] * axis[i, 0], q[w, o] * axis[i, 1],
                                                                  q[w, o] * axis[i, 2])
            elif kind[i] == 3:
                _exp(q[w, o:o + 3], rot[w, i])
            elif kind[i] == 0:
                trans[w, i, 0], trans[w, i, 1], trans[w, i, 2] = q[w, o], q[w, o + 1], q[w, o + 2]
                _exp(q[w, o + 3:o + 6], rot[w, i])
