"""SO(3) helpers for kernels, with the branches of their numpy counterparts in `sim.lie`."""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic

from ..jit import inner_kernel

_SMALL_ANGLE = 1e-4  # lie._SMALL_ANGLE: Taylor series of angle / sin(angle) below it
_NEAR_PI = np.pi - 1e-2  # lie._NEAR_PI: the quaternion route near pi


@inner_kernel  # called from kernels only (the tests call it through a jitted shim)
def so3_log(m, out):
    """Rotation vector (|theta| <= pi) of the rotation ``m`` into ``out`` (3,), as `lie.log_so3`."""
    cos_angle = 0.5 * (m[0, 0] + m[1, 1] + m[2, 2] - 1.0)
    cos_angle = min(max(cos_angle, -1.0), 1.0)
    angle = np.arccos(cos_angle)
    vx = 0.5 * (m[2, 1] - m[1, 2])
    vy = 0.5 * (m[0, 2] - m[2, 0])
    vz = 0.5 * (m[1, 0] - m[0, 1])
    if angle > _NEAR_PI:
        _log_near_pi(m, out)
        return
    if angle < _SMALL_ANGLE:
        ratio = 1.0 + angle * angle / 6.0
    else:
        sin_angle = np.sqrt(vx * vx + vy * vy + vz * vz)
        ratio = np.arctan2(sin_angle, cos_angle) / max(sin_angle, 1e-300)
    out[0] = ratio * vx
    out[1] = ratio * vy
    out[2] = ratio * vz


@inner_kernel
def _log_near_pi(m, out):
    """`lie.quat_to_rotvec(lie.matrix_to_quat(m))` (Shepperd's quaternion, then the half angle)."""
    trace = m[0, 0] + m[1, 1] + m[2, 2]
    cand = np.empty(4)
    cand[0] = 1 + 2 * m[0, 0] - trace
    cand[1] = 1 + 2 * m[1, 1] - trace
    cand[2] = 1 + 2 * m[2, 2] - trace
    cand[3] = 1 + trace
    pick = np.argmax(cand)
    big = np.sqrt(max(cand[pick], 1e-300))
    sxy, sxz, syz = m[0, 1] + m[1, 0], m[0, 2] + m[2, 0], m[1, 2] + m[2, 1]
    dx, dy, dz = m[2, 1] - m[1, 2], m[0, 2] - m[2, 0], m[1, 0] - m[0, 1]
    q = np.empty(4)
    if pick == 0:
        q[0], q[1], q[2], q[3] = big, sxy / big, sxz / big, dx / big
    elif pick == 1:
        q[0], q[1], q[2], q[3] = sxy / big, big, syz / big, dy / big
    elif pick == 2:
        q[0], q[1], q[2], q[3] = sxz / big, syz / big, big, dz / big
    else:
        q[0], q[1], q[2], q[3] = dx / big, dy / big, dz / big, big
    for j in range(4):
        q[j] *= 0.5
    if q[3] < 0.0:
        for j in range(4):
            q[j] = -q[j]
    nrm = np.sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3])
    for j in range(4):
        q[j] /= nrm
    sin_half = np.sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2])
    half = np.arctan2(sin_half, q[3])
    scale = 2.0 / max(q[3], 1e-300) if sin_half < 1e-12 else 2.0 * half / sin_half
    for j in range(3):
        out[j] = scale * q[j]


# 3x3 products rounded as numpy's matmul rounds them on these x86-64 hosts: OpenBLAS's kernels accumulate
# c_ij = fma(a_i2, b_2j, fma(a_i1, b_1j, a_i0 b_0j)) (measured), so kernels replacing a numpy product keep its bits
# (sim/kernels/fused.py, step.py).
@intrinsic
def fma(typingctx, x, y, z):
    """x y + z rounded once (LLVM's fma: the FMA instruction, or libm's correctly rounded fma without one)."""
    sig = types.float64(types.float64, types.float64, types.float64)

    def codegen(context, builder, signature, args):
        double = ir.DoubleType()
        fn = builder.module.declare_intrinsic("llvm.fma", [double], ir.FunctionType(double, [double] * 3))
        return builder.call(fn, args)

    return sig, codegen


@inner_kernel
def matmul3(a, b, out):
    """out = a @ b for 3x3 matrices, as numpy's matmul (OpenBLAS) rounds it."""
    for i in range(3):
        for j in range(3):
            out[i, j] = fma(a[i, 2], b[2, j], fma(a[i, 1], b[1, j], a[i, 0] * b[0, j]))


@inner_kernel
def matmul3_bt(a, b, out):
    """out = a @ b^T for 3x3 matrices, as numpy's matmul (OpenBLAS) rounds it."""
    for i in range(3):
        for j in range(3):
            out[i, j] = fma(a[i, 2], b[j, 2], fma(a[i, 1], b[j, 1], a[i, 0] * b[j, 0]))
