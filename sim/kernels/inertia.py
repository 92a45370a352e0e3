"""Inertia and gravity kernels (sim/potentials/inertia.py and external.py hold the formulas and the numpy
oracles). Each loops worlds (outer) x bodies and writes energy (W,), gradient (W, N, 6) and, when asked, the
Hessian diagonal blocks (W, N, 6, 6) into zeroed output arrays."""

from __future__ import annotations

import numpy as np

from ..jit import inner_kernel, kernel


@kernel
def translational_inertia(mass, is_static, stage_dt, com, com0, vel0, want_hessian, energy_out, grad_out, hess_out):
    """Phi = k/2 |c - (c0 + dt v0)|^2 per dynamic body, k = m / dt^2."""
    dt2 = stage_dt * stage_dt
    for w in range(com.shape[0]):
        e = 0.0
        for n in range(com.shape[1]):
            k = 0.0 if is_static[n] else mass[n] / dt2
            for i in range(3):
                d = com[w, n, i] - (com0[w, n, i] + stage_dt * vel0[w, n, i])
                grad_out[w, n, i] = k * d
                e += k * d * d
            if want_hessian:
                for i in range(3):
                    hess_out[w, n, i, i] = k
        energy_out[w] = 0.5 * e


@inner_kernel(_nrt=False)  # allocates nothing: no reference counting of its arguments
def symmetric_eigen_3x3(h, vals_out, vecs_out, a):
    """Eigenvalues and orthonormal eigenvectors (columns) of the symmetric 3x3 ``h`` by cyclic Jacobi rotations
    (Numerical Recipes' rotation formulas): backward stable like LAPACK's, without a LAPACK call and its
    workspace allocation per block (which made numba's eigh cost more than the numpy batch at 64 worlds).
    ``a`` is 3x3 scratch."""
    for i in range(3):
        for j in range(3):
            a[i, j] = h[i, j]  # element by element: `a[:] = h` compiles numba's broadcasting and its error texts (~3 s)
            vecs_out[i, j] = 1.0 if i == j else 0.0
    for _ in range(32):  # quadratic convergence: 3-5 sweeps in practice
        off = a[0, 1] * a[0, 1] + a[0, 2] * a[0, 2] + a[1, 2] * a[1, 2]
        if off <= 1e-36 * (a[0, 0] * a[0, 0] + a[1, 1] * a[1, 1] + a[2, 2] * a[2, 2]) or off == 0.0:
            break
        for p, q in ((0, 1), (0, 2), (1, 2)):
            apq = a[p, q]
            if apq == 0.0:
                continue
            theta = (a[q, q] - a[p, p]) / (2.0 * apq)
            t = 1.0 / (abs(theta) + np.sqrt(theta * theta + 1.0))
            if theta < 0.0:
                t = -t
            c = 1.0 / np.sqrt(t * t + 1.0)
            s = t * c
            for k in range(3):  # A <- A J (columns p, q)
                akp, akq = a[k, p], a[k, q]
                a[k, p] = c * akp - s * akq
                a[k, q] = s * akp + c * akq
            for k in range(3):  # A <- J^T A (rows p, q)
                apk, aqk = a[p, k], a[q, k]
                a[p, k] = c * apk - s * aqk
                a[q, k] = s * apk + c * aqk
            for k in range(3):  # V <- V J
                vkp, vkq = vecs_out[k, p], vecs_out[k, q]
                vecs_out[k, p] = c * vkp - s * vkq
                vecs_out[k, q] = s * vkp + c * vkq
    for i in range(3):
        vals_out[i] = a[i, i]


@inner_kernel(_nrt=False)  # allocates nothing: no reference counting of its arguments
def project_psd_3x3_inplace(h, vals, vecs, scratch):
    """Clamp negative eigenvalues of the symmetric 3x3 block ``h`` to zero (Sylvester test first: positive
    definite blocks are left as they are, as in the numpy oracle `potentials.inertia.project_psd_3x3`).
    ``vals`` (3,), ``vecs`` and ``scratch`` (3, 3) are work arrays."""
    m1 = h[0, 0]
    m2 = h[0, 0] * h[1, 1] - h[0, 1] * h[1, 0]
    m3 = (h[0, 0] * (h[1, 1] * h[2, 2] - h[1, 2] * h[2, 1]) - h[0, 1] * (h[1, 0] * h[2, 2] - h[1, 2] * h[2, 0])
          + h[0, 2] * (h[1, 0] * h[2, 1] - h[1, 1] * h[2, 0]))
    if m1 > 0 and m2 > 0 and m3 > 0:
        return
    symmetric_eigen_3x3(h, vals, vecs, scratch)
    for i in range(3):
        for j in range(3):
            s = 0.0
            for k in range(3):
                s += vecs[i, k] * max(vals[k], 0.0) * vecs[j, k]
            h[i, j] = s


@inner_kernel(_nrt=False)  # allocates nothing: no reference counting of its arguments
def store_rotation_hessian(m, diagonal, psd_project, h, vals, vecs, scratch, block_out):
    """block_out[3:, 3:] = -sym(m) + diagonal 1, PSD-projected when asked: the rotation-rotation block of the
    potentials linear in R (the left-perturbation identity d^2/dt^2 tr(exp(skew t) M) = sym(M) - tr(M) 1).
    ``h``, ``vecs``, ``scratch`` (3, 3) and ``vals`` (3,) are work arrays."""
    for i in range(3):
        for j in range(3):
            h[i, j] = -0.5 * (m[i, j] + m[j, i])
        h[i, i] += diagonal
    if psd_project:
        project_psd_3x3_inplace(h, vals, vecs, scratch)
    for i in range(3):
        for j in range(3):
            block_out[3 + i, 3 + j] = h[i, j]


@kernel
def rotational_inertia(second_moment, active, stage_dt, rot, rot0, omega0, sym0, want_hessian, psd_project,
                       energy_out, grad_out, hess_out):
    """Phi = 1/2 tr(W) + 1/2 tr(R~ W R~^T) - tr(R W R~^T), W = J / dt^2, R~ = R0 + dt (skew(omega0) + S0) R0;
    grad = 2 axial(A), Hessian sym(-A) - tr(-A) 1 with A = R W R~^T (left perturbation, lie.h identities).
    The numpy Newton's entry point: `rotational_inertia_into` with its work arrays allocated here."""
    rotational_inertia_into(second_moment, active, stage_dt, rot, rot0, omega0, sym0, want_hessian, psd_project,
                            energy_out, grad_out, hess_out, np.empty((9, 3, 3)))


# Called by address from newton_stage (its C wrapper) with its work arrays passed in, so that it allocates nothing
# and runs without NRT: the nine work arrays it allocated per call, once per world and evaluation, cost ~5% of a
# Push world's Newton time (malloc, free and their reference counting).
@kernel(no_cpython_wrapper=True, _nrt=False)
def rotational_inertia_into(second_moment, active, stage_dt, rot, rot0, omega0, sym0, want_hessian, psd_project,
                            energy_out, grad_out, hess_out, work):
    """`rotational_inertia` with its work arrays ``work`` (9, 3, 3)."""
    dt2 = stage_dt * stage_dt
    wm, m, pred, rw, a, h, eig_vecs, scratch = work[0], work[1], work[2], work[3], work[4], work[5], work[6], work[7]
    eig_vals = work[8, 0]
    for w in range(rot.shape[0]):
        e = 0.0
        for n in range(rot.shape[1]):
            if not active[n]:
                continue
            for i in range(3):
                for j in range(3):
                    wm[i, j] = second_moment[n, i, j] / dt2
                    m[i, j] = sym0[w, n, i, j]
            om0, om1, om2 = omega0[w, n, 0], omega0[w, n, 1], omega0[w, n, 2]
            m[0, 1] -= om2
            m[0, 2] += om1
            m[1, 0] += om2
            m[1, 2] -= om0
            m[2, 0] -= om1
            m[2, 1] += om0
            for i in range(3):
                for j in range(3):
                    s = 0.0
                    for k in range(3):
                        s += m[i, k] * rot0[w, n, k, j]
                    pred[i, j] = rot0[w, n, i, j] + stage_dt * s
            for i in range(3):
                for j in range(3):
                    s = 0.0
                    for k in range(3):
                        s += rot[w, n, i, k] * wm[k, j]
                    rw[i, j] = s
            for i in range(3):
                for j in range(3):
                    s = 0.0
                    for k in range(3):
                        s += rw[i, k] * pred[j, k]
                    a[i, j] = s
            tr_a = a[0, 0] + a[1, 1] + a[2, 2]
            quad = 0.0
            for i in range(3):
                for j in range(3):
                    for k in range(3):
                        quad += pred[i, j] * wm[j, k] * pred[i, k]
            e += 0.5 * (wm[0, 0] + wm[1, 1] + wm[2, 2]) + 0.5 * quad - tr_a
            grad_out[w, n, 3] = a[2, 1] - a[1, 2]
            grad_out[w, n, 4] = a[0, 2] - a[2, 0]
            grad_out[w, n, 5] = a[1, 0] - a[0, 1]
            if want_hessian:
                store_rotation_hessian(a, tr_a, psd_project, h, eig_vals, eig_vecs, scratch, hess_out[w, n])
        energy_out[w] = e


@kernel
def gravity(mass, is_static, has_gravity, gravity_wv, com, energy_out, grad_out):
    """U = -m g . c on dynamic bodies with gravity; gravity_wv (W, 3)."""
    for w in range(com.shape[0]):
        e = 0.0
        for n in range(com.shape[1]):
            m = mass[n] if (has_gravity[n] and not is_static[n]) else 0.0
            for i in range(3):
                f = m * gravity_wv[w, i]
                grad_out[w, n, i] = -f
                e += f * com[w, n, i]
        energy_out[w] = -e
