"""The step's work around the stage Newton solves, as two kernels per stage (sim/step/fused.py calls them).

`stage_begin` does, per world, what sim/step/pipeline.py's `_GroupStep` does before a stage's solve: at stage 0 the
convergence weights, the step start y* (`step_start`) and the static actors' implied velocity (`static_motion`),
then the stage start a~_i
with the static actors at their prescribed pose (`stage_start`) and Newton's start (`initial_guess`: constant
velocity, the pivot drives' targets). `stage_end` does what follows a solve: the velocity recovery, the statuses,
and after the last stage the step end y_{n+1} (`step_end`) and the divergence reset.

Every loop is over one world at a time and reads only that world's rows, so a world's result never depends on the
rest of the batch. The arithmetic is the numpy code's, in its order: elementwise operations as written there; the
3x3 products as OpenBLAS's x86-64 kernels compute numpy's matmul, c_ij = fma(a_i2, b_2j, fma(a_i1, b_1j,
a_i0 b_0j)) (`so3.fma`: one rounding per multiply-add); the 3-term contractions as np.einsum's SIMD loop sums them,
(p0 + p2) + p1; the rotation log as `lie.log_so3`'s kernel. So a fused step gives the per-stage path's bits on
these machines (measured, tests/test_fused_step.py); only a rotation within 1e-2 rad of pi, whose log takes the
quaternion route (numpy there, `so3._log_near_pi` here), can differ by round-off.
"""

from __future__ import annotations

import numpy as np

from ..jit import inner_kernel, kernel
from .so3 import _log_near_pi, matmul3, matmul3_bt
from .step import _log_row, torque_weights

NOT_STARTED, CONVERGED, STOPPED, DIVERGED = 0, 1, 2, 3  # params.ConvergenceStatus values
GUESS_LATEST, GUESS_VELOCITY, GUESS_TARGETS = 0, 1, 2  # params.InitialGuess values (the OUTSIDE one is not here)
_SMALL_ANGLE = 1e-4  # lie._SMALL_ANGLE


@inner_kernel
def _log(m, out):
    """lie.log_so3 of one rotation ``m`` (3, 3) into ``out`` (3,): its kernel's branch (`step._log_row`), or near
    pi the quaternion route (`so3._log_near_pi`)."""
    rot = np.empty((1, 3, 3))
    vec = np.empty((1, 3))
    for a in range(3):
        for b in range(3):
            rot[0, a, b] = m[a, b]
    if _log_row(rot, 0, vec, 0):
        _log_near_pi(m, out)
        return
    for a in range(3):
        out[a] = vec[0, a]


@inner_kernel
def _exp(theta, out):
    """Rodrigues exp(skew(theta)) (3, 3), as lie.exp_so3: |theta|^2 summed (t0^2 + t2^2) + t1^2, the series of
    A = sin(t)/t and B = (1 - cos t)/t^2 below _SMALL_ANGLE, out = (1 + A K) + B K^2."""
    x, y, z = theta[0], theta[1], theta[2]
    angle_sq = (x * x + z * z) + y * y
    angle = np.sqrt(angle_sq)
    if angle < _SMALL_ANGLE:
        ca = (1.0 - angle_sq / 6.0) + (angle_sq * angle_sq) / 120.0
        cb = (0.5 - angle_sq / 24.0) + (angle_sq * angle_sq) / 720.0
    else:
        ca = np.sin(angle) / angle
        cb = (1.0 - np.cos(angle)) / (angle * angle)
    k = np.empty((3, 3))
    k[0, 0], k[0, 1], k[0, 2] = 0.0, -z, y
    k[1, 0], k[1, 1], k[1, 2] = z, 0.0, -x
    k[2, 0], k[2, 1], k[2, 2] = -y, x, 0.0
    k2 = np.empty((3, 3))
    matmul3(k, k, k2)
    for i in range(3):
        for j in range(3):
            eye = 1.0 if i == j else 0.0
            out[i, j] = (eye + ca * k[i, j]) + cb * k2[i, j]


@inner_kernel
def _combine_rotation(base, coeffs, count, others, w, n, out, m, theta, part):
    """integration.combine_rotations for one body: exp(sum_j c_j log(R_j R_b^T)) R_b over the first ``count``
    coefficients (zero ones skipped), or a copy of R_j for a single unit coefficient. ``others`` (S, W, N, 3, 3);
    ``m``, ``theta``, ``part`` scratch."""
    nonzero = 0
    last = 0
    for j in range(count):
        if coeffs[j] != 0.0:
            nonzero += 1
            last = j
    if nonzero == 1 and coeffs[last] == 1.0:
        for a in range(3):
            for b in range(3):
                out[a, b] = others[last, w, n, a, b]
        return
    for a in range(3):
        theta[a] = 0.0
    for j in range(count):
        if coeffs[j] != 0.0:
            matmul3_bt(others[j, w, n], base, m)
            _log(m, part)
            for a in range(3):
                theta[a] = theta[a] + coeffs[j] * part[a]
    _exp(theta, m)
    matmul3(m, base, out)


@inner_kernel(_nrt=False, inline="always")  # allocates nothing: no reference counting of its arguments
def _combine_vector(base, w, b, coeffs, count, others, ow, ob, out):
    """integration.combine_vectors for body b of world w: out[w, b] from base[w, b] (both (W, N, size)) and
    others[:, ow, ob] ((S, W', N', size)). Indexed, not given views: a view per body and call costs reference-count
    updates. The size is read from ``base``, not passed: a literal argument would compile one more
    specialization."""
    size = base.shape[2]
    for a in range(size):
        out[w, b, a] = base[w, b, a]
    for j in range(count):
        coef = coeffs[j]
        if coef != 0.0:
            for a in range(size):
                out[w, b, a] = out[w, b, a] + coef * (others[j, ow, ob, a] - base[w, b, a])


@inner_kernel(_nrt=False)
def _copy_pose(src_c, src_r, w, b, out_c, out_r):
    """out[w, b] = src[w, b] for a pose (c (W, N, 3), R (W, N, 3, 3)): `_static_pose` at tau 0 or 1, without the
    views a call of it takes."""
    for a in range(3):
        out_c[w, b, a] = src_c[w, b, a]
        for e in range(3):
            out_r[w, b, a, e] = src_r[w, b, a, e]


@inner_kernel
def _static_pose(prev_c, prev_r, target_c, target_r, tau, c_out, r_out, m, theta):
    """pipeline.interpolate_static for one static body: the pose at fraction 0 < tau < 1 of the step (at 1 and 0
    the callers copy the pose with `_copy_pose`: a call of this one takes views, which cost reference counting)."""
    for a in range(3):
        c_out[a] = prev_c[a] + tau * (target_c[a] - prev_c[a])
    matmul3_bt(target_r, prev_r, m)
    _log(m, theta)
    for a in range(3):
        theta[a] = tau * theta[a]
    _exp(theta, m)
    matmul3(m, prev_r, r_out)


# stage_begin's and stage_end's inputs come in groups (tuples; a kinematics group is (c, r, v, omega, S), each
# (W, N, ...)):
#   stage   stage_begin: (stage, alpha, num_alpha, a_tilde, dt, stage_dt, tau_start, tau_end, guess_mode), the
#           tableau's step-start and stage coefficients; stage_end: (stage, last, b_tilde, stage_dt, abs_tol)
#   model   stage_begin: (is_static, static_pivot, sqrt_inertia, sqrt_mass, a_ref), the convergence weights'
#           inputs (model.convergence_weights); stage_end: (is_static, force_weight)
#   history (y_n, y_{n-1}, y_{n-2}, prev_c, prev_r): three kinematics groups (unused entries may repeat y_n's) and
#           the static actors' previous poses
#   drive   (guess_rows, guess_actors, guess_arm, targets, world_rows): the pivot drives' guess, rows of the targets
#           (K,), their actors (K,), arms (K, 3), targets (Wt, C, 3) and this batch's rows of the targets' world
#           axis (W,)
#   step    (y*, static_v, static_w, stages): y* (written at stage 0), the static velocities (written at stage 0)
#           and the stages' results (S, W, N, ...), a kinematics group each
# stage_begin writes the stage start (a kinematics group) and Newton's start (guess_c, guess_r); stage_end reads the
# solve's results (run_stage's: out_c, out_r, out_grad, status, iterations, ls_iterations), writes the stage, the
# step's report (step_status, actor_status, counts, residual) and after the last stage y_{n+1} (``end``).


@kernel
def stage_begin(stage_info, model, torque_weight, history, drive, step, start, guess):
    """Per world: at stage 0 the step start (y*); the stage start; Newton's start. Written out in one pass over the
    worlds: split into helpers called per world or per body (their arguments reference-counted each call) or into
    one pass per part, it took twice as long."""
    stage, alpha, num_alpha, a_tilde, dt, stage_dt, tau_start, tau_end, guess_mode = stage_info
    is_static, static_pivot, sqrt_inertia, sqrt_mass, a_ref = model
    (h_c, h_r, h_v, h_w, h_s), (h1_c, h1_r, h1_v, h1_w, h1_s), (h2_c, h2_r, h2_v, h2_w, h2_s), prev_c, prev_r = history
    guess_rows, guess_actors, guess_arm, targets, world_rows = drive
    (star_c, star_r, star_v, star_w, star_s), static_v, static_w, (st_c, st_r, st_v, st_w, st_s) = step
    start_c, start_r, start_v, start_w, start_s = start
    guess_c, guess_r = guess
    num_worlds, n = h_c.shape[0], h_c.shape[1]
    m = np.empty((3, 3))
    m2 = np.empty((3, 3))
    theta = np.empty(3)
    part = np.empty(3)
    arm = np.empty(3)
    hist_r = np.empty((2, 1, 1, 3, 3))  # y_{n-1}, y_{n-2} rotations of one body, for _combine_rotation
    hist_v = np.empty((2, 1, 1, 9))
    coeffs = np.empty(max(a_tilde.shape[0], 2))
    zero = np.int64(0)  # not the literal 0 as an argument: each literal compiles one more specialization
    # The S rates as (..., 9) rows for _combine_vector, taken once (not a view per body).
    h_s9, star_s9, start_s9 = h_s.reshape(num_worlds, n, 9), star_s.reshape(num_worlds, n, 9), \
        start_s.reshape(num_worlds, n, 9)
    st_s9 = st_s.reshape(st_s.shape[0], num_worlds, n, 9)
    if stage == 0:  # residual weights and static velocities from the poses at step start (pipeline _GroupStep.run)
        torque_weights(h_r, sqrt_inertia, sqrt_mass, a_ref, torque_weight)
        _static_velocities(h_c, h_r, prev_c, prev_r, is_static, static_pivot, dt, static_v, static_w, m, theta)
    for w in range(num_worlds):
        if stage == 0:
            # y* = sum_j alpha_j y_{n-j} (pipeline step_start; integration.step_start_vectors / _rotations)
            for j in range(num_alpha - 1):
                coeffs[j] = alpha[j + 1]
            for b in range(n):
                if num_alpha == 1:
                    for a in range(3):
                        star_c[w, b, a] = h_c[w, b, a]
                        star_v[w, b, a] = h_v[w, b, a]
                        star_w[w, b, a] = h_w[w, b, a]
                        for e in range(3):
                            star_r[w, b, a, e] = h_r[w, b, a, e]
                            star_s[w, b, a, e] = h_s[w, b, a, e]
                    continue
                for field in range(4):
                    size = 9 if field == 3 else 3
                    for a in range(size):
                        if field == 0:
                            hist_v[0, 0, 0, a], hist_v[1, 0, 0, a] = h1_c[w, b, a], h2_c[w, b, a]
                        elif field == 1:
                            hist_v[0, 0, 0, a], hist_v[1, 0, 0, a] = h1_v[w, b, a], h2_v[w, b, a]
                        elif field == 2:
                            hist_v[0, 0, 0, a], hist_v[1, 0, 0, a] = h1_w[w, b, a], h2_w[w, b, a]
                        else:
                            hist_v[0, 0, 0, a] = h1_s[w, b, a // 3, a % 3]
                            hist_v[1, 0, 0, a] = h2_s[w, b, a // 3, a % 3]
                    if field == 0:
                        _combine_vector(h_c, w, b, coeffs, num_alpha - 1, hist_v, zero, zero, star_c)
                    elif field == 1:
                        _combine_vector(h_v, w, b, coeffs, num_alpha - 1, hist_v, zero, zero, star_v)
                    elif field == 2:
                        _combine_vector(h_w, w, b, coeffs, num_alpha - 1, hist_v, zero, zero, star_w)
                    else:
                        _combine_vector(h_s9, w, b, coeffs, num_alpha - 1, hist_v, zero, zero, star_s9)
                for a in range(3):
                    for e in range(3):
                        hist_r[0, 0, 0, a, e] = h1_r[w, b, a, e]
                        hist_r[1, 0, 0, a, e] = h2_r[w, b, a, e]
                _combine_rotation(h_r[w, b], coeffs, num_alpha - 1, hist_r, zero, zero, star_r[w, b], m, theta, part)
        # The stage start a~_i (pipeline stage_start): y* plus the earlier stages, statics at their pose.
        for j in range(stage):
            coeffs[j] = a_tilde[stage, j]
        for b in range(n):
            if is_static[b]:
                if tau_start == 1.0:
                    _copy_pose(h_c, h_r, w, b, start_c, start_r)
                elif tau_start == 0.0:
                    _copy_pose(prev_c, prev_r, w, b, start_c, start_r)
                else:
                    _static_pose(prev_c[w, b], prev_r[w, b], h_c[w, b], h_r[w, b], tau_start, start_c[w, b],
                                 start_r[w, b], m, theta)
                for a in range(3):
                    start_v[w, b, a] = static_v[w, b, a]
                    start_w[w, b, a] = static_w[w, b, a]
                    for e in range(3):
                        start_s[w, b, a, e] = 0.0
                continue
            _combine_vector(star_c, w, b, coeffs, stage, st_c, w, b, start_c)
            _combine_vector(star_v, w, b, coeffs, stage, st_v, w, b, start_v)
            _combine_vector(star_w, w, b, coeffs, stage, st_w, w, b, start_w)
            _combine_vector(star_s9, w, b, coeffs, stage, st_s9, w, b, start_s9)
            if stage == 0:
                for a in range(3):
                    for e in range(3):
                        start_r[w, b, a, e] = star_r[w, b, a, e]
            else:
                _combine_rotation(star_r[w, b], coeffs, stage, st_r, w, b, start_r[w, b], m, theta, part)
        # Newton's start (pipeline initial_guess) from the latest solution: y_n, then the previous stage.
        for b in range(n):
            if is_static[b]:
                if tau_end == 1.0:
                    _copy_pose(h_c, h_r, w, b, guess_c, guess_r)
                elif tau_end == 0.0:
                    _copy_pose(prev_c, prev_r, w, b, guess_c, guess_r)
                else:
                    _static_pose(prev_c[w, b], prev_r[w, b], h_c[w, b], h_r[w, b], tau_end, guess_c[w, b],
                                 guess_r[w, b], m, theta)
                continue
            for a in range(3):
                c = h_c[w, b, a] if stage == 0 else st_c[stage - 1, w, b, a]
                if guess_mode != GUESS_LATEST:
                    v = h_v[w, b, a] if stage == 0 else st_v[stage - 1, w, b, a]
                    c = c + stage_dt * v
                guess_c[w, b, a] = c
                for e in range(3):
                    m2[a, e] = h_r[w, b, a, e] if stage == 0 else st_r[stage - 1, w, b, a, e]
            if guess_mode == GUESS_LATEST:
                for a in range(3):
                    for e in range(3):
                        guess_r[w, b, a, e] = m2[a, e]
                continue
            for a in range(3):
                theta[a] = stage_dt * (h_w[w, b, a] if stage == 0 else st_w[stage - 1, w, b, a])
            _exp(theta, m)
            matmul3(m, m2, guess_r[w, b])
        if guess_mode == GUESS_TARGETS:  # ConstraintSystem.refine_guess: c = p_hat - R a for the held bodies
            for k in range(guess_rows.shape[0]):
                b = guess_actors[k]
                for a in range(3):
                    arm[a] = (guess_r[w, b, a, 0] * guess_arm[k, 0] + guess_r[w, b, a, 2] * guess_arm[k, 2]) \
                        + guess_r[w, b, a, 1] * guess_arm[k, 1]
                for a in range(3):
                    guess_c[w, b, a] = targets[world_rows[w], guess_rows[k], a] - arm[a]


@inner_kernel
def _static_velocities(h_c, h_r, prev_c, prev_r, is_static, static_pivot, dt, static_v, static_w, m, theta):
    """Every world's static velocities from consecutive poses, at the pivot p (pipeline static_motion): exactly zero
    in a world whose statics did not move."""
    num_worlds, n = h_c.shape[0], h_c.shape[1]
    for w in range(num_worlds):
        moved = False
        for b in range(n):
            if is_static[b]:
                for a in range(3):
                    if h_c[w, b, a] != prev_c[w, b, a]:
                        moved = True
                    for e in range(3):
                        if h_r[w, b, a, e] != prev_r[w, b, a, e]:
                            moved = True
        for b in range(n):
            for a in range(3):
                static_v[w, b, a] = 0.0
                static_w[w, b, a] = 0.0
            if not (moved and is_static[b]):
                continue
            for a in range(3):
                now = (h_r[w, b, a, 0] * static_pivot[b, 0] + h_r[w, b, a, 2] * static_pivot[b, 2]) \
                    + h_r[w, b, a, 1] * static_pivot[b, 1]
                before = (prev_r[w, b, a, 0] * static_pivot[b, 0] + prev_r[w, b, a, 2] * static_pivot[b, 2]) \
                    + prev_r[w, b, a, 1] * static_pivot[b, 1]
                static_v[w, b, a] = (((h_c[w, b, a] + now) - prev_c[w, b, a]) - before) / dt
            matmul3_bt(h_r[w, b], prev_r[w, b], m)
            _log(m, theta)
            for a in range(3):
                static_w[w, b, a] = theta[a] / dt


@kernel
def stage_end(stage_info, model, torque_weight, start, solve, y_n, step, report, end):
    """Per world: the stage's velocity recovery, the step's statuses and maxima, and after the last stage y_{n+1}
    with the divergence reset (``y_n``: (c, r) of the history's newest entry; the groups as named above)."""
    stage, last, b_tilde, stage_dt, abs_tol = stage_info
    is_static, force_weight = model
    start_c, start_r = start
    out_c, out_r, out_grad, status, iterations, ls_iterations = solve
    h_c, h_r = y_n
    (star_c, star_r, star_v, star_w, star_s), static_v, static_w, (st_c, st_r, st_v, st_w, st_s) = step
    step_status, actor_status, counts, residual = report
    end_c, end_r, end_v, end_w, end_s = end
    num_worlds, n = out_c.shape[0], out_c.shape[1]
    star_s9, end_s9 = star_s.reshape(num_worlds, n, 9), end_s.reshape(num_worlds, n, 9)
    st_s9 = st_s.reshape(st_s.shape[0], num_worlds, n, 9)
    d = np.empty((3, 3))
    f = np.empty((3, 3))
    m = np.empty((3, 3))
    theta = np.empty(3)
    part = np.empty(3)
    inv = 1.0 / stage_dt
    for w in range(num_worlds):
        # Velocity recovery (pipeline recover_velocity): v = (c - c0)/dt_i, F = ((R - R0)/dt_i) R^T,
        # omega = axial(F), S = sym(F).
        for b in range(n):
            for a in range(3):
                st_c[stage, w, b, a] = out_c[w, b, a]
                st_v[stage, w, b, a] = (out_c[w, b, a] - start_c[w, b, a]) / stage_dt
                for e in range(3):
                    st_r[stage, w, b, a, e] = out_r[w, b, a, e]
                    d[a, e] = (out_r[w, b, a, e] - start_r[w, b, a, e]) / stage_dt
            matmul3_bt(d, out_r[w, b], f)
            st_w[stage, w, b, 0] = 0.5 * (f[2, 1] - f[1, 2])
            st_w[stage, w, b, 1] = 0.5 * (f[0, 2] - f[2, 0])
            st_w[stage, w, b, 2] = 0.5 * (f[1, 0] - f[0, 1])
            for a in range(3):
                for e in range(3):
                    st_s[stage, w, b, a, e] = 0.5 * (f[a, e] + f[e, a])
        # Statuses (pipeline _GroupStep.run): the worst over the stages; an actor counts as converged in a stage
        # when its weighted residual is within abs_tol (newton._actor_residuals).
        if status[w] > step_status[w]:
            step_status[w] = status[w]
        total = 0.0
        for b in range(n):
            f2 = (out_grad[w, b, 0] * out_grad[w, b, 0] + out_grad[w, b, 1] * out_grad[w, b, 1]) \
                + out_grad[w, b, 2] * out_grad[w, b, 2]
            t2 = (torque_weight[w, b, 0] * (out_grad[w, b, 3] * out_grad[w, b, 3])
                  + torque_weight[w, b, 1] * (out_grad[w, b, 4] * out_grad[w, b, 4])) \
                + torque_weight[w, b, 2] * (out_grad[w, b, 5] * out_grad[w, b, 5])
            rho = 0.0 if is_static[b] else np.sqrt(force_weight[b] * f2 + t2)
            conv = CONVERGED if rho <= abs_tol else status[w]
            if conv > actor_status[w, b]:
                actor_status[w, b] = conv
            for i in range(6):
                total += out_grad[w, b, i] * out_grad[w, b, i]
        norm = np.sqrt(total)
        if not norm <= residual[0]:  # max, a NaN kept (as np.max)
            if not np.isnan(residual[0]):
                residual[0] = norm
        counts[0] = max(counts[0], iterations[w])
        counts[1] = max(counts[1], ls_iterations[w])
        if not last:
            continue
        # Step end (pipeline step_end): y* plus the stages with b~, statics at their prescribed pose, then the
        # divergence reset (digest 2.6): a diverged world's dynamic actors back at y_n, at rest.
        num_stages = stage + 1
        diverged = step_status[w] == DIVERGED
        for b in range(n):
            if is_static[b]:
                actor_status[w, b] = CONVERGED
                for a in range(3):
                    end_c[w, b, a] = h_c[w, b, a]
                    end_v[w, b, a] = static_v[w, b, a]
                    end_w[w, b, a] = static_w[w, b, a]
                    for e in range(3):
                        end_r[w, b, a, e] = h_r[w, b, a, e]
                        end_s[w, b, a, e] = 0.0
                continue
            if diverged:
                for a in range(3):
                    end_c[w, b, a] = h_c[w, b, a]
                    end_v[w, b, a] = 0.0
                    end_w[w, b, a] = 0.0
                    for e in range(3):
                        end_r[w, b, a, e] = h_r[w, b, a, e]
                        end_s[w, b, a, e] = 0.0
                continue
            _combine_vector(star_c, w, b, b_tilde, num_stages, st_c, w, b, end_c)
            _combine_vector(star_v, w, b, b_tilde, num_stages, st_v, w, b, end_v)
            _combine_vector(star_w, w, b, b_tilde, num_stages, st_w, w, b, end_w)
            _combine_vector(star_s9, w, b, b_tilde, num_stages, st_s9, w, b, end_s9)
            _combine_rotation(star_r[w, b], b_tilde, num_stages, st_r, w, b, end_r[w, b], m, theta, part)


def compile_kernels() -> None:
    """Compile `stage_begin` and `stage_end` for the argument types `step.fused.run_group` passes (C-contiguous
    writable arrays, Python ints, floats and bools), by calling them on no worlds: the work of the child process
    `step.fused` starts on a cold cache, which this process then loads from the cache."""
    f8, i8, b1 = np.float64, np.int64, np.bool_

    def z(ndim, dtype=f8):
        return np.zeros((0,) * ndim, dtype=dtype)

    kin = (z(3), z(4), z(3), z(3), z(4))
    stages = (z(4), z(5), z(4), z(4), z(5))
    step = (kin, z(3), z(3), stages)
    stage_begin((0, z(1), 1, z(2), 0.01, 0.01, 0.0, 1.0, 0), (z(1, b1), z(2), z(3), z(1), 1.0), z(3),
                (kin, kin, kin, z(3), z(4)), (z(1, i8), z(1, i8), z(2), z(3), z(1, i8)), step, kin, (z(3), z(4)))
    stage_end((0, True, z(1), 0.01, 1e-3), (z(1, b1), z(1)), z(3), (z(3), z(4)),
              (z(3), z(4), z(3), z(1, i8), z(1, i8), z(1, i8)), (z(3), z(4)), step,
              (z(1, i8), z(2, i8), z(1, i8), z(1)), kin)
