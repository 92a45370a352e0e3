"""Kernels of the step's own per-substep work outside the Newton solve (sim/tunnelling.py, sim/step/pipeline.py), each
replacing a run of small numpy calls whose Python overhead cost more than their arithmetic.

Each kernel does exactly the numpy code's arithmetic, in its order (elementwise operations, and sums of three
squares in the order np.linalg.norm adds them), so results are bit-identical to the numpy code it replaces
(tests/test_step_kernels.py compares them). Products of matrices, einsum contractions and transcendental
functions stay in numpy: their rounding depends on which BLAS / SIMD kernel numpy picks for the CPU.
"""

from __future__ import annotations

import numpy as np

from ..jit import inner_kernel, kernel
from .so3 import matmul3_bt


@inner_kernel
def _apply(m, x, y, z):
    """m @ (x, y, z), each row's sum as ((m0 x + m1 y) + m2 z)."""
    return ((m[0, 0] * x + m[0, 1] * y) + m[0, 2] * z, (m[1, 0] * x + m[1, 1] * y) + m[1, 2] * z,
            (m[2, 0] * x + m[2, 1] * y) + m[2, 2] * z)


@inner_kernel
def _apply_transposed(m, x, y, z):
    """m^T @ (x, y, z), each sum as ((m0i x + m1i y) + m2i z)."""
    return ((m[0, 0] * x + m[1, 0] * y) + m[2, 0] * z, (m[0, 1] * x + m[1, 1] * y) + m[2, 1] * z,
            (m[0, 2] * x + m[1, 2] * y) + m[2, 2] * z)


@inner_kernel
def _sample_depth(x0, y0, z0, x1, y1, z1, hx, hy, hz):
    """`sim.tunnelling.sample_depth` of one sample path (box-local start and end, half extents)."""
    p0 = (x0, y0, z0)
    step = (x1 - x0, y1 - y0, z1 - z0)
    half = (hx, hy, hz)
    t_enter, t_exit, axis = -np.inf, np.inf, -1
    for i in range(3):
        if step[i] == 0.0:
            if abs(p0[i]) > half[i]:
                return 0.0
        else:
            ta = (-half[i] - p0[i]) / step[i]
            tb = (half[i] - p0[i]) / step[i]
            near = ta if ta < tb else tb
            far = tb if ta < tb else ta
            if near > t_enter:
                t_enter, axis = near, i
            if far < t_exit:
                t_exit = far
    if not (t_enter <= t_exit and t_exit >= 0.0 and t_enter <= 1.0):
        return 0.0
    if t_enter < 0.0 or axis < 0:  # started inside: the face it is nearest
        axis = 0
        for i in range(1, 3):
            if half[i] - abs(p0[i]) < half[axis] - abs(p0[axis]):
                axis = i
        sign = 1.0 if p0[axis] >= 0.0 else -1.0
    else:
        sign = -1.0 if step[axis] > 0.0 else 1.0
    end = (x1, y1, z1)
    depth = half[axis] - sign * end[axis]
    thinnest = min(hx, min(hy, hz))
    return depth / thinnest if depth > 0.0 else 0.0


@inner_kernel(_nrt=False)
def _paths_miss_box(c0, c1, centre, f, reach, half):
    """True when no sample path of a body can touch the box: every sample's start and end lie within ``reach`` of
    the centre of mass's, so its straight path lies in the box-local bounding box of the two balls; when that is
    apart from the collider's box by more than round-off on some axis, every `_sample_depth` is 0 and the samples
    need not be tested (a NaN never culls: its comparisons are false)."""
    a0, a1, a2 = _apply_transposed(f, c0[0] - centre[0], c0[1] - centre[1], c0[2] - centre[2])
    b0, b1, b2 = _apply_transposed(f, c1[0] - centre[0], c1[1] - centre[1], c1[2] - centre[2])
    for i in range(3):
        a = a0 if i == 0 else (a1 if i == 1 else a2)
        b = b0 if i == 0 else (b1 if i == 1 else b2)
        lo = min(a, b) - reach
        hi = max(a, b) + reach
        slack = 1e-9 * ((abs(lo) + abs(hi)) + half[i])
        if lo - half[i] > slack or -half[i] - hi > slack:
            return True
    return False


@kernel
def tunnelling_worst(com0, rot0, com1, rot1, dynamic, static, rel, reach, points, offsets, centres, half_extents,
                     radius, ratio_out, which_out):
    """The tail of `sim.tunnelling.tunnelling_ratio` for W worlds, D dynamic bodies and S static colliders.

    model: ``dynamic`` / ``static`` (D,) / (S,) rows, ``reach`` (D,) m, ``points`` (Q, 3) every dynamic body's
    surface samples from its centre of mass (body frame; row n's are ``offsets[n]:offsets[n + 1]``),
    ``half_extents`` (S, 3) and ``radius`` (S,) m of the colliders' boxes; data in: ``com0`` / ``com1`` (W, N, 3)
    CoMs and ``rot0`` / ``rot1`` (W, N, 3, 3) rotations at step start / end, ``rel`` (W, D, 3, 3) each dynamic
    body's rotation over the step, ``centres`` (W, S, 3) the colliders' box centres at step start; data out:
    ``ratio_out`` (W,) the largest `_sample_depth` over (body, collider within reach, sample), 0 when none is, NaN
    when a sample's is; ``which_out`` (W,) the collider of the first largest, -1 unless it is > 0. Returns how many
    rotations turned by more than _NEAR_PI (the caller then uses the numpy code)."""
    num_static = centres.shape[1]
    theta = np.empty((1, 3))
    near_pi = 0
    for w in range(com0.shape[0]):
        best = 0.0
        best_k = 0
        first = True
        for d in range(dynamic.shape[0]):
            n = dynamic[d]
            if _log_row(rel[w], d, theta, 0 * d):
                near_pi += 1
            angle = np.sqrt((theta[0, 0] * theta[0, 0] + theta[0, 1] * theta[0, 1]) + theta[0, 2] * theta[0, 2])
            dx = com1[w, n, 0] - com0[w, n, 0]
            dy = com1[w, n, 1] - com0[w, n, 1]
            dz = com1[w, n, 2] - com0[w, n, 2]
            move = np.sqrt((dx * dx + dy * dy) + dz * dz)
            travel = move + reach[d] * angle
            for s in range(num_static):
                gx = com0[w, n, 0] - centres[w, s, 0]
                gy = com0[w, n, 1] - centres[w, s, 1]
                gz = com0[w, n, 2] - centres[w, s, 2]
                gap = np.sqrt((gx * gx + gy * gy) + gz * gz)
                ratio = 0.0
                if gap <= (reach[d] + travel) + radius[s] and not _paths_miss_box(
                        com0[w, n], com1[w, n], centres[w, s], rot0[w, static[s]], reach[d], half_extents[s]):
                    f = rot0[w, static[s]]
                    for q in range(offsets[n], offsets[n + 1]):
                        x, y, z = points[q, 0], points[q, 1], points[q, 2]
                        a0, a1, a2 = _apply(rot0[w, n], x, y, z)
                        b0, b1, b2 = _apply(rot1[w, n], x, y, z)
                        a0, a1, a2 = _apply_transposed(f, (com0[w, n, 0] + a0) - centres[w, s, 0],
                                                       (com0[w, n, 1] + a1) - centres[w, s, 1],
                                                       (com0[w, n, 2] + a2) - centres[w, s, 2])
                        b0, b1, b2 = _apply_transposed(f, (com1[w, n, 0] + b0) - centres[w, s, 0],
                                                       (com1[w, n, 1] + b1) - centres[w, s, 1],
                                                       (com1[w, n, 2] + b2) - centres[w, s, 2])
                        depth = _sample_depth(a0, a1, a2, b0, b1, b2, half_extents[s, 0], half_extents[s, 1],
                                              half_extents[s, 2])
                        if depth > ratio or (np.isnan(depth) and not np.isnan(ratio)):
                            ratio = depth
                # np.max / np.argmax: the first NaN wins and is returned, else the first largest value.
                if first or ratio > best or (np.isnan(ratio) and not np.isnan(best)):
                    best = ratio
                    best_k = d * num_static + s
                first = False
        ratio_out[w] = best
        which_out[w] = best_k % num_static if best > 0 else -1
    return near_pi


@kernel
def tunnelling_step(com0, rot0, com1, rot1, dynamic, static, centre_local, reach, points, offsets, half_extents,
                    radius, ratio_out, which_out):
    """`sim.tunnelling.tunnelling_ratio` for W worlds in one call: the rotations over the step R1 R0^T (D dynamic
    bodies) and the static colliders' box centres c0 + R0 centre (S static rows), each 3-term sum as
    ((p0 + p1) + p2), then `tunnelling_worst`. ``dynamic`` / ``static`` (D,) / (S,) rows, ``centre_local`` (S, 3);
    returns `tunnelling_worst`'s near-pi count."""
    num_worlds = com0.shape[0]
    rel = np.empty((num_worlds, dynamic.shape[0], 3, 3))
    centres = np.empty((num_worlds, static.shape[0], 3))
    for w in range(num_worlds):
        for d in range(dynamic.shape[0]):
            matmul3_bt(rot1[w, dynamic[d]], rot0[w, dynamic[d]], rel[w, d])
        for s in range(static.shape[0]):
            n = static[s]
            for i in range(3):
                centres[w, s, i] = com0[w, n, i] + ((rot0[w, n, i, 0] * centre_local[s, 0]
                                                     + rot0[w, n, i, 1] * centre_local[s, 1])
                                                    + rot0[w, n, i, 2] * centre_local[s, 2])
    return tunnelling_worst(com0, rot0, com1, rot1, dynamic, static, rel, reach, points, offsets, centres,
                            half_extents, radius, ratio_out, which_out)


# --- SO(3) exp / log, batched (sim/lie.py calls these; its numpy code stays there as the oracle) ----------------
# lie._SMALL_ANGLE / lie._NEAR_PI (not imported: sim.lie imports this module)
_SMALL_ANGLE = 1e-4
_NEAR_PI = np.pi - 1e-2


@kernel
def log_so3_batch(rot, out, near_pi):
    """`lie.log_so3_numpy` of (M, 3, 3) rotations into ``out`` (M, 3), except rows with angle > _NEAR_PI: those
    are marked in ``near_pi`` (M,) for the caller's quaternion route. Returns how many rows it marked."""
    count = 0
    for m in range(rot.shape[0]):
        near_pi[m] = _log_row(rot, m, out, m)
        if near_pi[m]:
            count += 1
    return count


@inner_kernel
def _log_row(rot, m, out, k):
    """Row m of `log_so3_batch` into out[k]; True when its angle is > _NEAR_PI (out[k] then needs the quaternion
    route). numpy's order: trace ((r00 + r11) + r22) - 1; |vee|^2 summed (v0^2 + v2^2) + v1^2, as np.einsum's
    two-operand contraction adds three terms; clip, arccos and arctan2 with NaN passed through."""
    cos_angle = 0.5 * (((rot[m, 0, 0] + rot[m, 1, 1]) + rot[m, 2, 2]) - 1.0)
    if cos_angle < -1.0:
        cos_angle = -1.0
    elif cos_angle > 1.0:
        cos_angle = 1.0
    angle = np.arccos(cos_angle)
    vx = 0.5 * (rot[m, 2, 1] - rot[m, 1, 2])
    vy = 0.5 * (rot[m, 0, 2] - rot[m, 2, 0])
    vz = 0.5 * (rot[m, 1, 0] - rot[m, 0, 1])
    if angle < _SMALL_ANGLE:
        ratio = 1.0 + angle * angle / 6.0
    else:
        sin_angle = np.sqrt((vx * vx + vz * vz) + vy * vy)
        # np.maximum(sin_angle, 1e-300) keeps a NaN
        ratio = np.arctan2(sin_angle, cos_angle) / (sin_angle if not sin_angle < 1e-300 else 1e-300)
    out[k, 0] = ratio * vx
    out[k, 1] = ratio * vy
    out[k, 2] = ratio * vz
    return angle > _NEAR_PI


@kernel
def exp_so3_parts(theta, skew_out, coef_a_out, coef_b_out):
    """The parts of `lie.exp_so3_numpy` before its matrix product: skew(theta) (M, 3, 3) and the Rodrigues
    coefficients A = sin(t)/t, B = (1 - cos t)/t^2 (M,), with their series below _SMALL_ANGLE; t^2 summed as
    np.einsum adds three terms, (t0^2 + t2^2) + t1^2."""
    for m in range(theta.shape[0]):
        x = theta[m, 0]
        y = theta[m, 1]
        z = theta[m, 2]
        angle_sq = (x * x + z * z) + y * y
        angle = np.sqrt(angle_sq)
        if angle < _SMALL_ANGLE:
            coef_a_out[m] = (1.0 - angle_sq / 6.0) + (angle_sq * angle_sq) / 120.0
            coef_b_out[m] = (0.5 - angle_sq / 24.0) + (angle_sq * angle_sq) / 720.0
        else:
            coef_a_out[m] = np.sin(angle) / angle
            coef_b_out[m] = (1.0 - np.cos(angle)) / (angle * angle)
        skew_out[m, 0, 0] = 0.0
        skew_out[m, 0, 1] = -z
        skew_out[m, 0, 2] = y
        skew_out[m, 1, 0] = z
        skew_out[m, 1, 1] = 0.0
        skew_out[m, 1, 2] = -x
        skew_out[m, 2, 0] = -y
        skew_out[m, 2, 1] = x
        skew_out[m, 2, 2] = 0.0


@kernel
def exp_so3_finish(skew, skew_sq, coef_a, coef_b, out):
    """out = (1 + A K) + B K^2 per row (M, 3, 3), with K^2 = skew_sq from numpy's matrix product."""
    for m in range(skew.shape[0]):
        for i in range(3):
            for j in range(3):
                eye = 1.0 if i == j else 0.0
                out[m, i, j] = (eye + coef_a[m] * skew[m, i, j]) + coef_b[m] * skew_sq[m, i, j]


# --- the pipeline's per-stage work (sim/step/pipeline.py) -------------------------------------------------------------


@kernel
def torque_weights(rotation, sqrt_inertia, sqrt_mass, a_ref, out):
    """`model.convergence_weights`' torque weights (W, N, 3): tau_i = a_ref sqrt(m) (R sqrt(I) R^T)_ii, weight
    1/tau_i^2 where tau_i > 0, else 1. The diagonal is summed as np.einsum("wnij,njk,wnik->wni") sums its three
    operands: j outer, k inner, ((R_ij S_jk) R_ik) accumulated from 0."""
    for w in range(rotation.shape[0]):
        for n in range(rotation.shape[1]):
            for i in range(3):
                diag = 0.0
                for j in range(3):
                    for k in range(3):
                        diag += rotation[w, n, i, j] * sqrt_inertia[n, j, k] * rotation[w, n, i, k]
                tau = a_ref * sqrt_mass[n] * diag
                out[w, n, i] = 1.0 / (tau * tau) if tau > 0 else 1.0


@kernel
def select_static(is_static, c, r, v, omega, s, c_static, r_static, v_static, omega_static, c_out, r_out, v_out,
                  omega_out, s_out):
    """Kinematics (W, N, ...) whose static rows take their prescribed pose c_static / r_static and implied
    velocity v_static / omega_static with S = 0, the dynamic rows copied from c, r, v, omega, s (the pipeline's
    five np.where over the static mask)."""
    for w in range(c.shape[0]):
        for n in range(c.shape[1]):
            st = is_static[n]
            for i in range(3):
                c_out[w, n, i] = c_static[w, n, i] if st else c[w, n, i]
                v_out[w, n, i] = v_static[w, n, i] if st else v[w, n, i]
                omega_out[w, n, i] = omega_static[w, n, i] if st else omega[w, n, i]
                for j in range(3):
                    r_out[w, n, i, j] = r_static[w, n, i, j] if st else r[w, n, i, j]
                    s_out[w, n, i, j] = 0.0 if st else s[w, n, i, j]

