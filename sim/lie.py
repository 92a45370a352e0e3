"""Batched SO(3) helpers: skew / axial, Rodrigues exp / log, quaternion conversions.

Every function takes arrays with arbitrary leading (batch) axes and acts on the trailing 3 or (3, 3) or 4 axes.
Conventions (seed page, "Solution Reconstruction"; digest 2.4):

* ``skew(a) @ b == cross(a, b)``.
* ``axial(A)`` is the vector of the skew-symmetric part of ``A``: ``axial(skew(a)) == a`` and
  ``axial(A) = 1/2 (A32 - A23, A13 - A31, A21 - A12)``.
* ``exp_so3(theta)`` is Rodrigues' formula; ``log_so3(R)`` returns the rotation vector with ``|theta| <= pi``.
* Quaternions are stored ``(x, y, z, w)`` as in the reference engine.
* Perturbations are left / world-frame: ``R <- exp(skew(dtheta)) R``.
"""

from __future__ import annotations

import numpy as np

from .jit import kernel_array
from .kernels import step as step_kernels

# Below this angle (rad) the Rodrigues coefficients are evaluated by their Taylor series; the series are
# accurate to float64 round-off there (first omitted term ~ theta^4 / 5040 < 1e-20).
_SMALL_ANGLE = 1e-4


def skew(a: np.ndarray) -> np.ndarray:
    """(..., 3) -> (..., 3, 3) with skew(a) @ b = a x b."""
    a = np.asarray(a, dtype=np.float64)
    out = np.zeros(a.shape[:-1] + (3, 3))
    out[..., 0, 1] = -a[..., 2]
    out[..., 0, 2] = a[..., 1]
    out[..., 1, 0] = a[..., 2]
    out[..., 1, 2] = -a[..., 0]
    out[..., 2, 0] = -a[..., 1]
    out[..., 2, 1] = a[..., 0]
    return out


def axial(m: np.ndarray) -> np.ndarray:
    """(..., 3, 3) -> (..., 3): the vector of the skew-symmetric part, axial(skew(a)) = a."""
    return 0.5 * np.stack(
        [m[..., 2, 1] - m[..., 1, 2], m[..., 0, 2] - m[..., 2, 0], m[..., 1, 0] - m[..., 0, 1]], axis=-1
    )


def sym(m: np.ndarray) -> np.ndarray:
    """Symmetric part of (..., 3, 3)."""
    return 0.5 * (m + np.swapaxes(m, -1, -2))


def exp_so3(theta: np.ndarray) -> np.ndarray:
    """Rodrigues: (..., 3) rotation vectors -> (..., 3, 3) rotation matrices.

    Two kernels around numpy's K @ K (sim/kernels/step.py): bit for bit `exp_so3_numpy`, in 3 calls instead of
    ~20 (it runs every substep and every numpy-path Newton iteration)."""
    theta = np.asarray(theta, dtype=np.float64)
    if theta.shape[-1:] != (3,) or not theta.flags.c_contiguous:
        # numpy's own error for a bad shape; and einsum sums |theta|^2 in another order over a strided last axis
        return exp_so3_numpy(theta)
    lead = theta.shape[:-1]
    flat = kernel_array(theta.reshape(-1, 3))
    k = np.empty((flat.shape[0], 3, 3))
    coef_a, coef_b = np.empty(flat.shape[0]), np.empty(flat.shape[0])
    step_kernels.exp_so3_parts(flat, k, coef_a, coef_b)
    out = np.empty_like(k)
    step_kernels.exp_so3_finish(k, k @ k, coef_a, coef_b, out)
    return out.reshape(lead + (3, 3))


def exp_so3_numpy(theta: np.ndarray) -> np.ndarray:
    """`exp_so3` in numpy only (the oracle tests/test_step_kernels.py holds the kernels to)."""
    theta = np.asarray(theta, dtype=np.float64)
    angle_sq = np.einsum("...i,...i->...", theta, theta)
    angle = np.sqrt(angle_sq)
    small = angle < _SMALL_ANGLE
    safe = np.where(small, 1.0, angle)
    # A = sin(t)/t, B = (1 - cos(t))/t^2, written so that both are exact at t -> 0.
    coef_a = np.where(small, 1.0 - angle_sq / 6.0 + angle_sq**2 / 120.0, np.sin(safe) / safe)
    coef_b = np.where(small, 0.5 - angle_sq / 24.0 + angle_sq**2 / 720.0, (1.0 - np.cos(safe)) / (safe * safe))
    k = skew(theta)
    eye = np.broadcast_to(np.eye(3), k.shape)
    return eye + coef_a[..., None, None] * k + coef_b[..., None, None] * (k @ k)


# Beyond this angle (rad) the axial-vector formula theta/(2 sin theta) vee(R - R^T) loses accuracy (sin -> 0 at
# pi); those rotations go through the quaternion, which is well conditioned at every angle.
_NEAR_PI = np.pi - 1e-2


def log_so3(rot: np.ndarray) -> np.ndarray:
    """(..., 3, 3) rotation matrices -> (..., 3) rotation vectors with norm <= pi.

    One kernel (sim/kernels/step.py), bit for bit `log_so3_numpy` where numpy's arctan2 is libm's (within 4 ULP
    on hosts where numpy uses its AVX-512 routines); rotations within 1e-2 of pi take the same quaternion route
    in numpy."""
    rot = np.asarray(rot, dtype=np.float64)
    if rot.shape[-2:] != (3, 3):
        return log_so3_numpy(rot)  # numpy's own indexing error
    lead = rot.shape[:-2]
    flat = kernel_array(rot.reshape(-1, 3, 3))
    out = np.empty((flat.shape[0], 3))
    near_pi = np.empty(flat.shape[0], dtype=np.bool_)
    if step_kernels.log_so3_batch(flat, out, near_pi):
        out[near_pi] = quat_to_rotvec(matrix_to_quat(flat[near_pi]))
    return out.reshape(lead + (3,))


def log_so3_numpy(rot: np.ndarray) -> np.ndarray:
    """`log_so3` in numpy only (the oracle tests/test_step_kernels.py holds the kernel to)."""
    rot = np.asarray(rot, dtype=np.float64)
    cos_angle = np.clip(0.5 * (rot[..., 0, 0] + rot[..., 1, 1] + rot[..., 2, 2] - 1.0), -1.0, 1.0)
    angle = np.arccos(cos_angle)
    vee = axial(rot)  # = sin(angle) * axis
    sin_angle = np.sqrt(np.einsum("...i,...i->...", vee, vee))
    small = angle < _SMALL_ANGLE
    # angle / sin(angle) with its series 1 + angle^2/6 near zero; atan2 keeps the ratio accurate for mid angles.
    angle_mid = np.arctan2(sin_angle, cos_angle)
    ratio = np.where(small, 1.0 + angle * angle / 6.0, angle_mid / np.where(small, 1.0, np.maximum(sin_angle, 1e-300)))
    out = ratio[..., None] * vee
    near_pi = angle > _NEAR_PI
    if np.any(near_pi):
        out[near_pi] = quat_to_rotvec(matrix_to_quat(rot[near_pi]))
    return out


def quat_to_rotvec(q: np.ndarray) -> np.ndarray:
    """(..., 4) unit quaternions (x, y, z, w) -> (..., 3) rotation vectors with norm <= pi."""
    q = np.asarray(q, dtype=np.float64)
    # q and -q are the same rotation; pick w >= 0 so that the angle is <= pi.
    q = np.where(q[..., 3:4] < 0.0, -q, q)
    vec = q[..., :3]
    sin_half = np.sqrt(np.einsum("...i,...i->...", vec, vec))
    half = np.arctan2(sin_half, q[..., 3])
    small = sin_half < 1e-12
    # theta = 2*half * vec / sin_half; for small angles 2*half/sin_half -> 2/w.
    scale = np.where(small, 2.0 / np.maximum(q[..., 3], 1e-300), 2.0 * half / np.where(small, 1.0, sin_half))
    return scale[..., None] * vec


def rotvec_to_quat(theta: np.ndarray) -> np.ndarray:
    """(..., 3) rotation vectors -> (..., 4) unit quaternions (x, y, z, w)."""
    theta = np.asarray(theta, dtype=np.float64)
    angle = np.sqrt(np.einsum("...i,...i->...", theta, theta))
    half = 0.5 * angle
    small = angle < _SMALL_ANGLE
    # sin(half)/angle with its series 1/2 - angle^2/48 near zero.
    s = np.where(small, 0.5 - angle * angle / 48.0, np.sin(half) / np.where(small, 1.0, angle))
    return np.concatenate([s[..., None] * theta, np.cos(half)[..., None]], axis=-1)


def quat_to_matrix(q: np.ndarray) -> np.ndarray:
    """(..., 4) quaternions (x, y, z, w), normalized first -> (..., 3, 3)."""
    q = np.asarray(q, dtype=np.float64)
    q = q / np.linalg.norm(q, axis=-1, keepdims=True)
    x, y, z, w = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    out = np.empty(q.shape[:-1] + (3, 3))
    out[..., 0, 0] = 1 - 2 * (y * y + z * z)
    out[..., 0, 1] = 2 * (x * y - z * w)
    out[..., 0, 2] = 2 * (x * z + y * w)
    out[..., 1, 0] = 2 * (x * y + z * w)
    out[..., 1, 1] = 1 - 2 * (x * x + z * z)
    out[..., 1, 2] = 2 * (y * z - x * w)
    out[..., 2, 0] = 2 * (x * z - y * w)
    out[..., 2, 1] = 2 * (y * z + x * w)
    out[..., 2, 2] = 1 - 2 * (x * x + y * y)
    return out


def matrix_to_quat(rot: np.ndarray) -> np.ndarray:
    """(..., 3, 3) rotation matrices -> (..., 4) unit quaternions (x, y, z, w) with w >= 0.

    Shepperd's method: pick the largest of (w, x, y, z) to divide by, so every branch is well conditioned.
    """
    rot = np.asarray(rot, dtype=np.float64)
    m00, m11, m22 = rot[..., 0, 0], rot[..., 1, 1], rot[..., 2, 2]
    trace = m00 + m11 + m22
    cand = np.stack([1 + 2 * m00 - trace, 1 + 2 * m11 - trace, 1 + 2 * m22 - trace, 1 + trace], axis=-1)
    pick = np.argmax(cand, axis=-1)
    big = np.sqrt(np.maximum(np.take_along_axis(cand, pick[..., None], axis=-1)[..., 0], 1e-300))
    q = np.empty(rot.shape[:-2] + (4,))
    # Off-diagonal combinations: 4 x y = m01 + m10, 4 w x = m21 - m12, etc.
    sxy = rot[..., 0, 1] + rot[..., 1, 0]
    sxz = rot[..., 0, 2] + rot[..., 2, 0]
    syz = rot[..., 1, 2] + rot[..., 2, 1]
    dx = rot[..., 2, 1] - rot[..., 1, 2]
    dy = rot[..., 0, 2] - rot[..., 2, 0]
    dz = rot[..., 1, 0] - rot[..., 0, 1]
    rows = {
        0: (big, sxy / big, sxz / big, dx / big),
        1: (sxy / big, big, syz / big, dy / big),
        2: (sxz / big, syz / big, big, dz / big),
        3: (dx / big, dy / big, dz / big, big),
    }
    for k, vals in rows.items():
        sel = pick == k
        for j in range(4):
            q[..., j] = np.where(sel, vals[j], q[..., j]) if k else vals[j]
    q *= 0.5
    q = np.where(q[..., 3:4] < 0.0, -q, q)
    return q / np.linalg.norm(q, axis=-1, keepdims=True)


def quat_multiply(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamilton product of (..., 4) quaternions (x, y, z, w): rotation a after b."""
    ax, ay, az, aw = np.moveaxis(np.asarray(a, dtype=np.float64), -1, 0)
    bx, by, bz, bw = np.moveaxis(np.asarray(b, dtype=np.float64), -1, 0)
    return np.stack(
        [
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
            aw * bw - ax * bx - ay * by - az * bz,
        ],
        axis=-1,
    )

