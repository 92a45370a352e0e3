"""An articulation's stage terms in joint coordinates over W worlds, in one kernel call: the links' inertia and
gravity pulled back through their Jacobians, and the 1-DoF joint terms (rotor inertia, viscous and dry friction,
soft limits, single-DoF drives). sim/articulated/energy.py holds the numpy oracle of each
(tests/test_articulated_compiled_terms.py compares them); sim/articulated/compiled_terms.py packs the arrays.

Groups: ``links`` (mass, has_gravity, second_moment, and per link the DoF columns that move it, ascending, and
their count), ``joints`` (the 1-DoF table: dof, rotor inertia, viscous,
mu0, falloff, Coulomb ratio, Stribeck velocity), ``limits`` (lower, upper, stiffness, damping per DoF, a flag per
DoF for the ones the kernel owns), ``drives`` (dof, stiffness, damping, saturation; per world target and old
target), ``stage`` (dt, q0, link CoM and rotation predictors, joint velocities, gravity), ``kin`` (rot, com, jac
at q) and ``out`` (energy, gradient, Hessian, all overwritten).
"""

from __future__ import annotations

import math

import numpy as np

from ..jit import inner_kernel, kernel
from .inertia import project_psd_3x3_inplace


@inner_kernel(_nrt=False)
def _ramp(x, falloff, ratio, stribeck):
    """The dry-friction ramp's phi(x) and phi'(x)/x (finite at 0), x = |v| >= 0 (energy.dry_friction_ramp)."""
    if x < falloff:
        return x * x / falloff * (1.0 - x / (3.0 * falloff)), 2.0 / falloff - x / falloff ** 2
    u = x - falloff
    if stribeck > 0.0:
        phi = 2.0 * falloff / 3.0 + ratio * u + (1.0 - ratio) * stribeck * math.sqrt(math.pi) / 2.0 * math.erf(
            u / stribeck)
        return phi, (ratio + (1.0 - ratio) * math.exp(-(u / stribeck) ** 2)) / x
    return 2.0 * falloff / 3.0 + ratio * u, ratio / x


@inner_kernel(_nrt=False)
def _elastic(stiffness, saturation, norm2):
    """(energy, kappa) of k/2 |g|^2, or k gbar rho(|g|) with saturation gbar > 0 (energy.elastic, step_c1)."""
    if not saturation > 0.0:
        return 0.5 * stiffness * norm2, stiffness
    x = math.sqrt(norm2)
    cap = stiffness * saturation
    if x >= saturation:
        return cap * (x - saturation / 3.0), cap * (1.0 / x if x > 0.0 else 0.0)
    r = x / saturation
    return cap * x * r * (1.0 - r / 3.0), cap * (2.0 - r) / saturation


@inner_kernel(_nrt=False)
def _limit_gap(x, lower, upper):
    if x > upper:
        return x - upper, 1.0
    if x < lower:
        return lower - x, -1.0
    return 0.0, 0.0


@inner_kernel(_nrt=False)
def _link_terms(w, links, stage, kin, psd, grad6, h, vals, vecs, scratch, energy_out, grad_out, hess_out):
    """World w's link inertia and gravity in (dc, dtheta) per link, pulled back: J^T g and J^T H J."""
    mass, has_gravity, second_moment, cols, num_cols = links
    dt, q0, pred_com, pred_rot, _, gravity = stage
    rot, com, jac = kin
    num_links = jac.shape[1]
    inv_dt2 = 1.0 / (dt * dt)
    e = 0.0
    for l in range(num_links):
        k = mass[l] * inv_dt2
        weight = mass[l] * has_gravity[l]
        for a in range(3):
            diff = com[w, l, a] - pred_com[w, l, a]
            e += 0.5 * k * diff * diff - weight * gravity[w, a] * com[w, l, a]
            grad6[a] = k * diff - weight * gravity[w, a]
        # Rotation: 1/2 tr((R - P) W (R - P)^T) = const - tr(A), A = R W P^T, W = J / dt^2 (energy.link_terms)
        for i in range(3):
            for j in range(3):
                s = 0.0
                for m in range(3):
                    for n in range(3):
                        s += rot[w, l, i, m] * second_moment[l, m, n] * inv_dt2 * pred_rot[w, l, j, n]
                scratch[i, j] = s  # A
        trace_w = (second_moment[l, 0, 0] + second_moment[l, 1, 1] + second_moment[l, 2, 2]) * inv_dt2
        pwp = 0.0
        for i in range(3):
            for j in range(3):
                for m in range(3):
                    pwp += pred_rot[w, l, i, j] * second_moment[l, j, m] * inv_dt2 * pred_rot[w, l, i, m]
        trace_a = scratch[0, 0] + scratch[1, 1] + scratch[2, 2]
        e += 0.5 * trace_w + 0.5 * pwp - trace_a
        grad6[3] = scratch[2, 1] - scratch[1, 2]  # 2 axial(A)
        grad6[4] = scratch[0, 2] - scratch[2, 0]
        grad6[5] = scratch[1, 0] - scratch[0, 1]
        for i in range(3):  # the rotation block sym(-A) + tr(A) 1; the translation block is k 1
            for j in range(3):
                h[i, j] = -0.5 * (scratch[i, j] + scratch[j, i])
            h[i, i] += trace_a
        if psd:
            project_psd_3x3_inplace(h, vals, vecs, scratch)
        # only the DoFs of the joints from the root to link l move it: the other Jacobian columns are zero
        for x in range(num_cols[l]):
            d = cols[l, x]
            s = 0.0
            for r in range(6):
                s += jac[w, l, r, d] * grad6[r]
            grad_out[w, d] += s
        for x in range(num_cols[l]):  # J^T H J, H block-diagonal (translation k 1, rotation h); cols ascend
            d = cols[l, x]
            for y in range(x, num_cols[l]):
                f = cols[l, y]
                s = 0.0
                for a in range(3):
                    s += jac[w, l, a, d] * k * jac[w, l, a, f]
                for i in range(3):
                    t = 0.0
                    for j in range(3):
                        t += h[i, j] * jac[w, l, 3 + j, f]
                    s += jac[w, l, 3 + i, d] * t
                hess_out[w, d, f] += s
    energy_out[w] += e


@kernel
def joint_space_terms(links, joints, limits, drives, stage, kin, q, psd, energy_out, grad_out, hess_out):
    """energy (W,), gradient (W, D) and Newton matrix (W, D, D) of the kernel's terms at poses q (W, D) whose
    kinematics are ``kin`` (module docstring); every output overwritten."""
    j_dof, rotor, viscous, mu0, falloff, ratio, stribeck = joints
    lower, upper, limit_k, limit_d, owned = limits
    d_dof, d_k, d_d, d_sat, target, target_old = drives
    dt, q0, _, _, jv0, _ = stage
    num_worlds, num_dofs = grad_out.shape
    grad6 = np.empty(6)
    h = np.empty((3, 3))
    vecs = np.empty((3, 3))
    scratch = np.empty((3, 3))
    vals = np.empty(3)
    for w in range(num_worlds):
        energy_out[w] = 0.0
        for d in range(num_dofs):
            grad_out[w, d] = 0.0
            for f in range(num_dofs):
                hess_out[w, d, f] = 0.0
        _link_terms(w, links, stage, kin, psd, grad6, h, vals, vecs, scratch, energy_out, grad_out,
                    hess_out)
        for d in range(num_dofs):  # the upper triangle was summed: mirror it
            for f in range(d + 1, num_dofs):
                hess_out[w, f, d] = hess_out[w, d, f]
        e = 0.0
        for i in range(j_dof.shape[0]):
            d = j_dof[i]
            dq = q[w, d] - q0[w, d]
            if rotor[i] != 0.0:
                dv = dq / dt - jv0[w, d]
                e += 0.5 * rotor[i] * dv * dv
                grad_out[w, d] += rotor[i] * dv / dt
                hess_out[w, d, d] += rotor[i] / (dt * dt)
            if viscous[i] != 0.0:
                e += 0.5 * viscous[i] / dt * dq * dq
                grad_out[w, d] += viscous[i] / dt * dq
                hess_out[w, d, d] += viscous[i] / dt
            if mu0[i] != 0.0:
                v = dq / dt
                phi, d1_over_x = _ramp(abs(v), falloff[i], ratio[i], stribeck[i])
                e += mu0[i] * dt * phi
                grad_out[w, d] += mu0[i] * d1_over_x * v
                hess_out[w, d, d] += mu0[i] * d1_over_x / dt
        for d in range(num_dofs):
            if not owned[d]:
                continue
            gap, slope = _limit_gap(q[w, d], lower[d], upper[d])
            gap0, _ = _limit_gap(q0[w, d], lower[d], upper[d])
            c = limit_d[d] / dt
            dgap = gap - gap0
            e += 0.5 * limit_k[d] * gap * gap + 0.5 * c * dgap * dgap
            grad_out[w, d] += (limit_k[d] * gap + c * dgap) * slope
            hess_out[w, d, d] += (limit_k[d] + c) * slope * slope
        for i in range(d_dof.shape[0]):
            d = d_dof[i]
            g = q[w, d] - target[w, i]
            dg = g - (q0[w, d] - target_old[w, i])
            c = d_d[i] / dt
            el, kappa = _elastic(d_k[i], d_sat[i], g * g)
            e += el + 0.5 * c * dg * dg
            grad_out[w, d] += kappa * g + c * dg
            hess_out[w, d, d] += kappa + c
        energy_out[w] += e


@inner_kernel(_nrt=False)
def _row_map(n, row_kind, row_col, row_link, link_ndof, w, link_jac, local):
    """Row n's map from its 6 (dc, dtheta) entries to generalized DoFs into ``local`` (6, Dmax): the identity for a
    dynamic rigid row, the link Jacobian for a link row; returns (first column, width), width 0 for other rows."""
    kind = row_kind[n]
    if kind == 1:
        for r in range(6):
            for c in range(6):
                local[r, c] = 1.0 if r == c else 0.0
        return row_col[n], 6
    if kind == 2:
        l = row_link[n]
        width = link_ndof[l]
        for r in range(6):
            for c in range(width):
                local[r, c] = link_jac[w, l, r, c]
        return row_col[n], width
    return 0, 0


@inner_kernel(_nrt=False)
def _add_block(w, ja, ca, na, block, jb, cb, nb, both, tmp, hess_out):
    """hess_out[w] += Ja^T B Jb at (ca, cb), and its transpose at (cb, ca) when ``both`` (a coupling)."""
    for r in range(6):
        for j in range(nb):
            s = 0.0
            for k in range(6):
                s += block[r, k] * jb[k, j]
            tmp[r, j] = s
    for i in range(na):
        for j in range(nb):
            s = 0.0
            for r in range(6):
                s += ja[r, i] * tmp[r, j]
            hess_out[w, ca + i, cb + j] += s
            if both:
                hess_out[w, cb + j, ca + i] += s


@inner_kernel(_nrt=False)
def _is_zero(g, h):
    for r in range(6):
        if g[r] != 0.0:
            return False
        for c in range(6):
            if h[r, c] != 0.0:
                return False
    return True


@kernel
def pull_back(rows, link_jac, grad, hess_diag, coupling, grad_out, hess_out):
    """The row potentials' per-row gradient (W, N, 6), diagonal blocks (W, N, 6, 6) and coupling blocks pulled back
    to the generalized DoFs: grad_out (W, n) = sum J^T g, hess_out (W, n, n) = sum J^T H J plus J_a^T B J_b and its
    transpose per coupling (both overwritten). ``rows``: (kind (N,) 0 none / 1 dynamic rigid / 2 link, first
    column (N,), link index (N,), DoFs per link (NL,)); ``link_jac`` (W, NL, 6, Dmax); ``coupling``: (row a (P,),
    row b (P,), blocks (W, P, 6, 6))."""
    row_kind, row_col, row_link, link_ndof = rows
    body_a, body_b, blocks = coupling
    num_worlds, size = grad_out.shape
    width_max = max(6, link_jac.shape[3])
    ja = np.empty((6, width_max))
    jb = np.empty((6, width_max))
    tmp = np.empty((6, width_max))
    for w in range(num_worlds):
        for d in range(size):
            grad_out[w, d] = 0.0
            for f in range(size):
                hess_out[w, d, f] = 0.0
        for n in range(row_kind.shape[0]):
            if row_kind[n] == 0 or _is_zero(grad[w, n], hess_diag[w, n]):
                continue  # most link rows touch nothing: their blocks are exactly zero
            ca, na = _row_map(n, row_kind, row_col, row_link, link_ndof, w, link_jac, ja)
            for i in range(na):
                s = 0.0
                for r in range(6):
                    s += ja[r, i] * grad[w, n, r]
                grad_out[w, ca + i] += s
            _add_block(w, ja, ca, na, hess_diag[w, n], ja, ca, na, False, tmp, hess_out)
        for p in range(body_a.shape[0]):
            ca, na = _row_map(body_a[p], row_kind, row_col, row_link, link_ndof, w, link_jac, ja)
            cb, nb = _row_map(body_b[p], row_kind, row_col, row_link, link_ndof, w, link_jac, jb)
            if na == 0 or nb == 0:
                continue
            _add_block(w, ja, ca, na, blocks[w, p], jb, cb, nb, True, tmp, hess_out)
