"""Two-actor joint kernels: values and Jacobians of RigidSphericalJoint, RigidPrismaticJoint, JointRotationRange and
JointRotationTracking, and the compliant-energy assembly shared by every two-actor type (formulas in
sim/constraints/base.py, joints.py and joint_rotation.py; their numpy `local_terms` is the oracle).

Layout, as the pivot kernels (sim/kernels/constraints.py): worlds are the outer loop; ``actors`` (C, 2) the model
indices of actor A and B; ``world_rows`` (W,) maps the evaluated worlds to the rows of the per-world arrays (joint
frames, targets); outputs ``g_out`` (W, C, 3) and ``jac_out`` (W, C, 2, 3, 6) with ``jac_out[w, c, a]`` = dg/dq_a
(q = (c, theta), left rotation increments). None allocates (the rotation ones take their scratch,
`rotation_scratch`), so the compiled Newton can call them world by world; all but the rotation ones are compiled
without NRT (the rotation ones call so3_log, whose near-pi branch allocates a 4-vector).
"""

from __future__ import annotations

import numpy as np

from ..jit import inner_kernel, kernel
from .constraints import arm, compliance_multiplier, log_inverse_jacobian
from .so3 import fma, matmul3, so3_log


@kernel(_nrt=False)
def spherical_joint_values(com, rot, actors, arm_local_a, arm_local_b, with_jacobian, g_out, jac_out):
    """g = c_A + a_A - c_B - a_B, a_X = R_X r_X (r = local_pos - com_local, (C, 3)); J_A = [1, -skew(a_A)],
    J_B = [-1, skew(a_B)]."""
    for w in range(com.shape[0]):
        for c in range(actors.shape[0]):
            na, nb = actors[c, 0], actors[c, 1]
            a0, a1, a2 = arm(rot, w, na, arm_local_a, c)
            b0, b1, b2 = arm(rot, w, nb, arm_local_b, c)
            # numpy's left-to-right order: ((c_A + a_A) - c_B) - a_B
            g_out[w, c, 0] = com[w, na, 0] + a0 - com[w, nb, 0] - b0
            g_out[w, c, 1] = com[w, na, 1] + a1 - com[w, nb, 1] - b1
            g_out[w, c, 2] = com[w, na, 2] + a2 - com[w, nb, 2] - b2
            if with_jacobian:
                for i in range(3):
                    for j in range(6):
                        jac_out[w, c, 0, i, j] = 0.0
                        jac_out[w, c, 1, i, j] = 0.0
                    jac_out[w, c, 0, i, i] = 1.0
                    jac_out[w, c, 1, i, i] = -1.0
                # -skew(a) = [[0, a2, -a1], [-a2, 0, a0], [a1, -a0, 0]]; skew(b) its opposite
                jac_out[w, c, 0, 0, 4] = a2
                jac_out[w, c, 0, 0, 5] = -a1
                jac_out[w, c, 0, 1, 3] = -a2
                jac_out[w, c, 0, 1, 5] = a0
                jac_out[w, c, 0, 2, 3] = a1
                jac_out[w, c, 0, 2, 4] = -a0
                jac_out[w, c, 1, 0, 4] = -b2
                jac_out[w, c, 1, 0, 5] = b1
                jac_out[w, c, 1, 1, 3] = b2
                jac_out[w, c, 1, 1, 5] = -b0
                jac_out[w, c, 1, 2, 3] = -b1
                jac_out[w, c, 1, 2, 4] = b0


@inner_kernel
def _frame_times_rt_row(q, tw, c, i, rot, w, n):
    """Row i of P = Q R^T (Q = q[tw, c]) as numpy's matmul (OpenBLAS) rounds it: a 3-tuple."""
    return (fma(q[tw, c, i, 2], rot[w, n, 0, 2], fma(q[tw, c, i, 1], rot[w, n, 0, 1], q[tw, c, i, 0] * rot[w, n, 0, 0])),
            fma(q[tw, c, i, 2], rot[w, n, 1, 2], fma(q[tw, c, i, 1], rot[w, n, 1, 1], q[tw, c, i, 0] * rot[w, n, 1, 0])),
            fma(q[tw, c, i, 2], rot[w, n, 2, 2], fma(q[tw, c, i, 1], rot[w, n, 2, 1], q[tw, c, i, 0] * rot[w, n, 2, 0])))


@kernel(_nrt=False)
def prismatic_joint_values(com, rot, actors, world_rows, frame, reference_offset, lower, upper, with_jacobian,
                           g_out, jac_out):
    """s = P u - s_ref with u = c_B - c_A, P = Q R_A^T (``frame`` Q and ``reference_offset`` s_ref per world row);
    g = (s_1, s_2, travel beyond [lower, upper] (C,)); J_A = [-P, P skew(u)], J_B = [P, 0], row 3 zero inside."""
    for w in range(com.shape[0]):
        tw = world_rows[w]
        for c in range(actors.shape[0]):
            na, nb = actors[c, 0], actors[c, 1]
            u0 = com[w, nb, 0] - com[w, na, 0]
            u1 = com[w, nb, 1] - com[w, na, 1]
            u2 = com[w, nb, 2] - com[w, na, 2]
            p00, p01, p02 = _frame_times_rt_row(frame, tw, c, 0, rot, w, na)
            p10, p11, p12 = _frame_times_rt_row(frame, tw, c, 1, rot, w, na)
            p20, p21, p22 = _frame_times_rt_row(frame, tw, c, 2, rot, w, na)
            s0 = p00 * u0 + p01 * u1 + p02 * u2 - reference_offset[tw, c, 0]
            s1 = p10 * u0 + p11 * u1 + p12 * u2 - reference_offset[tw, c, 1]
            s2 = p20 * u0 + p21 * u1 + p22 * u2 - reference_offset[tw, c, 2]
            above = s2 > upper[c]
            below = s2 < lower[c]
            g_out[w, c, 0] = s0
            g_out[w, c, 1] = s1
            g_out[w, c, 2] = s2 - upper[c] if above else (s2 - lower[c] if below else 0.0)
            if with_jacobian:
                rows = 3 if (above or below) else 2
                for i in range(3):
                    if i == 0:
                        pi0, pi1, pi2 = p00, p01, p02
                    elif i == 1:
                        pi0, pi1, pi2 = p10, p11, p12
                    else:
                        pi0, pi1, pi2 = p20, p21, p22
                    if i >= rows:  # the travel row inside the limits
                        pi0, pi1, pi2 = 0.0, 0.0, 0.0
                    jac_out[w, c, 0, i, 0] = -pi0
                    jac_out[w, c, 0, i, 1] = -pi1
                    jac_out[w, c, 0, i, 2] = -pi2
                    # P skew(u), skew(u) = [[0, -u2, u1], [u2, 0, -u0], [-u1, u0, 0]], rounded as matmul's fma chain
                    jac_out[w, c, 0, i, 3] = fma(pi2, -u1, fma(pi1, u2, pi0 * 0.0))
                    jac_out[w, c, 0, i, 4] = fma(pi2, u0, fma(pi1, 0.0, pi0 * -u2))
                    jac_out[w, c, 0, i, 5] = fma(pi2, 0.0, fma(pi1, -u0, pi0 * u1))
                    jac_out[w, c, 1, i, 0] = pi0
                    jac_out[w, c, 1, i, 1] = pi1
                    jac_out[w, c, 1, i, 2] = pi2
                    jac_out[w, c, 1, i, 3] = 0.0
                    jac_out[w, c, 1, i, 4] = 0.0
                    jac_out[w, c, 1, i, 5] = 0.0


@inner_kernel
def _relative_rotation_jacobian(phi, p, sign, w, c, jinv, d_b, jac_out):
    """jac_out[w, c] rotation columns: -/+ sign_i (Jl^{-1}(phi) P)_i for A / B; translation columns zero."""
    log_inverse_jacobian(phi, jinv)
    matmul3(jinv, p, d_b)
    for i in range(3):
        for j in range(3):
            jac_out[w, c, 0, i, j] = 0.0
            jac_out[w, c, 1, i, j] = 0.0
            v = sign[i] * d_b[i, j]
            jac_out[w, c, 0, i, 3 + j] = -v
            jac_out[w, c, 1, i, 3 + j] = v


def rotation_scratch():
    """The scratch of the rotation kernels: five 3x3 matrices and two 3-vectors (allocate once, reuse per call)."""
    return np.empty((5, 3, 3)), np.empty((2, 3))


@kernel
def rotation_tracking_values(rot, actors, world_rows, frame, target, with_jacobian, g_out, jac_out, mats, vecs):
    """JointRotationTracking: g = Log(M), M = P R_B R_0, P = (R_A R_hat R_0)^T (``frame`` R_0, ``target`` R_hat
    per world row); J_B = [0, Jl^{-1}(g) P] = -J_A. ``mats``, ``vecs``: `rotation_scratch`."""
    t1, t2, p, m, jinv = mats[0], mats[1], mats[2], mats[3], mats[4]
    phi, ones = vecs[0], vecs[1]
    for i in range(3):
        ones[i] = 1.0
    for w in range(rot.shape[0]):
        tw = world_rows[w]
        for c in range(actors.shape[0]):
            na, nb = actors[c, 0], actors[c, 1]
            matmul3(rot[w, na], target[tw, c], t1)
            matmul3(t1, frame[tw, c], t2)
            for i in range(3):
                for j in range(3):
                    p[i, j] = t2[j, i]
            matmul3(p, rot[w, nb], t1)
            matmul3(t1, frame[tw, c], m)
            so3_log(m, phi)
            for i in range(3):
                g_out[w, c, i] = phi[i]
            if with_jacobian:
                _relative_rotation_jacobian(phi, p, ones, w, c, jinv, t1, jac_out)


@kernel
def rotation_range_values(rot, actors, world_rows, frame, reference, lower, upper, with_jacobian, g_out, jac_out,
                          mats, vecs):
    """JointRotationRange: r = Log(M), M = P R_B R_0 R_ref^T, P = (R_A R_0)^T (``frame`` R_0, ``reference`` R_ref
    per world row); g_j = r_j - upper_j above, lower_j - r_j below, else 0 (bounds (C, 3));
    J_B = [0, sigma Jl^{-1}(r) P] = -J_A with sigma_j = +1 / -1 / 0. ``mats``, ``vecs``: `rotation_scratch`."""
    t1, t2, p, m, jinv = mats[0], mats[1], mats[2], mats[3], mats[4]
    phi, sign = vecs[0], vecs[1]
    for w in range(rot.shape[0]):
        tw = world_rows[w]
        for c in range(actors.shape[0]):
            na, nb = actors[c, 0], actors[c, 1]
            matmul3(rot[w, na], frame[tw, c], t1)
            for i in range(3):
                for j in range(3):
                    p[i, j] = t1[j, i]
            matmul3(p, rot[w, nb], t1)
            matmul3(t1, frame[tw, c], t2)
            for i in range(3):  # t2 @ R_ref^T
                for j in range(3):
                    m[i, j] = fma(t2[i, 2], reference[tw, c, j, 2],
                                  fma(t2[i, 1], reference[tw, c, j, 1], t2[i, 0] * reference[tw, c, j, 0]))
            so3_log(m, phi)
            for i in range(3):
                if phi[i] > upper[c, i]:
                    g_out[w, c, i] = phi[i] - upper[c, i]
                    sign[i] = 1.0
                elif phi[i] < lower[c, i]:
                    g_out[w, c, i] = lower[c, i] - phi[i]
                    sign[i] = -1.0
                else:
                    g_out[w, c, i] = 0.0
                    sign[i] = 0.0
            if with_jacobian:
                _relative_rotation_jacobian(phi, p, sign, w, c, jinv, t1, jac_out)


@kernel(_nrt=False)
def two_actor_compliance(g, g_old, jac, actors, stiffness, damping_over_dt, saturation, damped, want_hessian,
                         energy_out, grad_out, hess_out, coupling_out):
    """Add Phi = U(g) + d/(2 dt) |g - g_old|^2 of every two-actor constraint into energy_out (W,), grad_out
    (W, N, 6) (J_a^T lam on actor a) and the Gauss-Newton blocks (kappa + d/dt) J_a^T J_b: a = b into hess_out
    (W, N, 6, 6), A-B into coupling_out (W, C, 6, 6) (overwritten: the block of the pair actors[c]).

    Accumulation order as `evaluate_numpy`: the energies constraint by constraint, then the gradient and diagonal
    blocks of every constraint's actor A, then of every actor B."""
    for w in range(g.shape[0]):
        e = 0.0
        for c in range(actors.shape[0]):
            energy, _, _, _, _ = compliance_multiplier(g, g_old, w, c, stiffness[c], damping_over_dt[c], saturation[c], damped)
            e += energy
        energy_out[w] += e
        for a in range(2):
            for c in range(actors.shape[0]):
                d = damping_over_dt[c]
                _, kappa, lam0, lam1, lam2 = compliance_multiplier(g, g_old, w, c, stiffness[c], d, saturation[c], damped)
                n = actors[c, a]
                for j in range(6):
                    grad_out[w, n, j] += jac[w, c, a, 0, j] * lam0 + jac[w, c, a, 1, j] * lam1 \
                        + jac[w, c, a, 2, j] * lam2
                if want_hessian:
                    s = kappa + d
                    for i in range(6):
                        for j in range(6):
                            hess_out[w, n, i, j] += s * (jac[w, c, a, 0, i] * jac[w, c, a, 0, j]
                                                         + jac[w, c, a, 1, i] * jac[w, c, a, 1, j]
                                                         + jac[w, c, a, 2, i] * jac[w, c, a, 2, j])
                    if a == 0:
                        for i in range(6):
                            for j in range(6):
                                coupling_out[w, c, i, j] = s * (jac[w, c, 0, 0, i] * jac[w, c, 1, 0, j]
                                                                + jac[w, c, 0, 1, i] * jac[w, c, 1, 1, j]
                                                                + jac[w, c, 0, 2, i] * jac[w, c, 1, 2, j])


# The compiled Newton's entry point (sim/kernels/newton.py calls it by address, once per joint set and evaluation;
# it is compiled only when a stage has joints, with the kernels above linked into it). The joint sets come packed
# (sim/solver/compiled_newton.py `_joint_pack`) so that newton_stage takes three arrays for all of them:
#   ints (int64): [S, Cj, then per set (kind, C, damped, world rows of its frozen arrays W', geometry offset in
#     floats, index of its first joint among all Cj, actors offset in ints, stiffness offset in floats), then the
#     actors (C, 2) of every set];
#   floats: per set its geometry (the kind's arrays, each C-order) and stiffness, damping / dt, saturation (C each);
#   g_old: one world's stage-start values (3 Cj,) (read only for damped sets);
#   work (75 Cj + 51,): the A-B blocks of every joint (36 Cj, in set order: newton_stage copies them into their
#     coupling slots at once), then the values (3 Cj), the Jacobians (36 Cj) and the rotation kernels' scratch.
JOINT_SET_HEADER = 8
_SPHERICAL, _PRISMATIC, _RANGE = 2, 3, 4  # kernels.newton.SET_* (JointRotationTracking: 5)


def joint_work_size(num_joints: int) -> int:
    return 75 * num_joints + 51


@kernel
def joint_set_terms(s, com, rot, world_rows, with_hessian, floats, ints, g_old, work, energy_out, grad_out,
                    hess_out):
    """Add joint set ``s``'s terms at one world's poses (com (1, N, 3), rot (1, N, 3, 3)) into energy_out (1,),
    grad_out (1, N, 6) and hess_out (1, N, 6, 6), its A-B blocks into ``work`` (layout above); as
    `RigidConstraintSet._evaluate_kernel`: the type's values kernel, then `two_actor_compliance`."""
    total = ints[1]
    h = 2 + JOINT_SET_HEADER * s
    kind, count, damped, rows_w = ints[h], ints[h + 1], ints[h + 2] != 0, ints[h + 3]
    geo, first, act, stiff = ints[h + 4], ints[h + 5], ints[h + 6], ints[h + 7]
    actors = ints[act:act + 2 * count].reshape((count, 2))
    block = work[36 * first:36 * (first + count)].reshape((1, count, 6, 6))
    at = 36 * total
    g = work[at + 3 * first:at + 3 * (first + count)].reshape((1, count, 3))
    at += 3 * total
    jac = work[at + 36 * first:at + 36 * (first + count)].reshape((1, count, 2, 3, 6))
    at += 36 * total
    mats = work[at:at + 45].reshape((5, 3, 3))
    vecs = work[at + 45:at + 51].reshape((2, 3))
    gold = g_old[3 * first:3 * (first + count)].reshape((1, count, 3))
    stiffness = floats[stiff:stiff + count]
    damp = floats[stiff + count:stiff + 2 * count]
    saturation = floats[stiff + 2 * count:stiff + 3 * count]
    frames = rows_w * count * 9
    if kind == _SPHERICAL:
        arm_a = floats[geo:geo + 3 * count].reshape((count, 3))
        arm_b = floats[geo + 3 * count:geo + 6 * count].reshape((count, 3))
        spherical_joint_values(com, rot, actors, arm_a, arm_b, with_hessian, g, jac)
    elif kind == _PRISMATIC:
        frame = floats[geo:geo + frames].reshape((rows_w, count, 3, 3))
        offset = floats[geo + frames:geo + frames + 3 * rows_w * count].reshape((rows_w, count, 3))
        at = geo + frames + 3 * rows_w * count
        prismatic_joint_values(com, rot, actors, world_rows, frame, offset, floats[at:at + count],
                               floats[at + count:at + 2 * count], with_hessian, g, jac)
    elif kind == _RANGE:
        frame = floats[geo:geo + frames].reshape((rows_w, count, 3, 3))
        reference = floats[geo + frames:geo + 2 * frames].reshape((rows_w, count, 3, 3))
        at = geo + 2 * frames
        lower = floats[at:at + 3 * count].reshape((count, 3))
        upper = floats[at + 3 * count:at + 6 * count].reshape((count, 3))
        rotation_range_values(rot, actors, world_rows, frame, reference, lower, upper, with_hessian, g, jac, mats,
                              vecs)
    else:
        frame = floats[geo:geo + frames].reshape((rows_w, count, 3, 3))
        target = floats[geo + frames:geo + 2 * frames].reshape((rows_w, count, 3, 3))
        rotation_tracking_values(rot, actors, world_rows, frame, target, with_hessian, g, jac, mats, vecs)
    two_actor_compliance(g, gold if damped else g, jac, actors, stiffness, damp, saturation, damped, with_hessian,
                         energy_out, grad_out, hess_out, block)
