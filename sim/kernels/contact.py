"""The contact potential as one kernel: broad phase, analytic collider SDFs (plane, sphere, box), alignment gate,
penalty, dissipation and rigid assembly, looping worlds x pairs x samples (sim/contact/potential.py,
penalty.py, friction.py and rigid_assembly.py hold the formulas and the numpy oracle, `ContactPotential._rows`).

Scope: the analytic colliders and trilinear grid SDFs, current-geometry dissipation (``explicit_normals=False``) and the Gauss-Newton
Hessian (``exact_geometric_hessian=False``), i.e. the reference's defaults; the potential decides at
construction which path a configuration takes (`ContactPotential.uses_kernel`). Per row (a sample of the
colliding body A against the collider of body B, collider frame Y = R_B^T (c_A + R_A X - c_B)):

    E = w [ k/2 h(-phi)^2 + lam_d (mu f(|dp_t|) + c_t/(2 dt) |dp_t|^2 + c_n/(2 dt) dp_n^2) ],  dp = Y - Y0

with dE/dY, d^2E/dY^2 rotated to the world (g = R_B dE/dY, H = R_B d2E R_B^T) and chained to both bodies with
J_A = [1, -skew(r)], J_B = -[1, -skew(u)] (r = x - c_A, u = x - c_B).
"""

from __future__ import annotations

from collections import namedtuple

import math

import numpy as np

from ..jit import inner_kernel, kernel

PLANE, SPHERE, BOX, GRID = 0, 1, 2, 3
C1_REGULARIZED, CINF_REGULARIZED = 0, 1
_ZERO_GRADIENT_NORM = 1e-9  # friction._ZERO_GRADIENT_NORM
_CINF_MIN_EPS = np.finfo(np.float64).eps  # ramp._CINF_MIN_EPS

# Frozen model arrays of one ContactPotential, three typed structures (row-major, C-contiguous). Python holds
# them as these namedtuples and passes their arrays spread (``contact_terms(*samples, *pairs, *colliders, ...)``):
# a namedtuple argument is typed by the dispatcher in Python one array at a time (0.2-0.5 ms per structure and
# call measured on this loaded host), and inside the kernel its member reads kept reference-count updates in the
# loops (~0.7 us per pair); plain array arguments cost neither.
ContactSampleArrays = namedtuple("ContactSampleArrays", "points normals weights start count")
ContactPairArrays = namedtuple(
    "ContactPairArrays",
    "colliding collider collider_index k eps delta mu c_t c_n falloff_vel max_alignment use_collider_normal "
    "dissipative reach sphere_center sphere_radius bound_is_half bound_vector bound_scalar slot flip")
# Grid SDFs: every grid's values flattened (C order, z fastest) into grid_values from grid_start; per collider
# grid_dims (C, 3), grid_min / grid_max / grid_cell (C, 3) [m].
ContactColliderArrays = namedtuple(
    "ContactColliderArrays",
    "kind center half_extents rotation radius normal offset grid_values grid_start grid_dims grid_min grid_max "
    "grid_cell")


@inner_kernel
def _grid_axis(y, lo, hi, cell, n):
    """Per axis: (clamped - y offset outside the box, cell index, local coordinate in [0, 1])."""
    clamped = min(max(y, lo), hi)
    u = (clamped - lo) / cell
    base = min(max(np.int64(np.floor(u)), 0), n - 2)
    return y - clamped, base, min(max(u - base, 0.0), 1.0)


@inner_kernel
def _grid_sdf(y, grad, v, start, dims, lo, hi, cell):
    """`GridSdfCollider.evaluate`: trilinear value (+ the distance to the grid box outside it) and the gradient
    of the interpolant, the outward unit vector on the axes where the point lies outside the box (scalars only:
    per-call arrays cost more than the arithmetic here)."""
    o0, b0, t0 = _grid_axis(y[0], lo[0], hi[0], cell[0], dims[0])
    o1, b1, t1 = _grid_axis(y[1], lo[1], hi[1], cell[1], dims[1])
    o2, b2, t2 = _grid_axis(y[2], lo[2], hi[2], cell[2], dims[2])
    out_dist = np.sqrt((o0 * o0 + o1 * o1) + o2 * o2)
    ny, nz = dims[1], dims[2]
    i0 = start + (b0 * ny + b1) * nz + b2
    sx = ny * nz  # corner (a, b, c) at i0 + a sx + b nz + c
    c000, c001, c010, c011 = v[i0], v[i0 + 1], v[i0 + nz], v[i0 + nz + 1]
    c100, c101, c110, c111 = v[i0 + sx], v[i0 + sx + 1], v[i0 + sx + nz], v[i0 + sx + nz + 1]
    # Successive lerps in x, y, z (v0 + (v1 - v0) s); a derivative replaces a lerp by a difference / cell.
    cx00, cx01 = c000 + (c100 - c000) * t0, c001 + (c101 - c001) * t0
    cx10, cx11 = c010 + (c110 - c010) * t0, c011 + (c111 - c011) * t0
    d00, d01 = (c100 - c000) / cell[0], (c101 - c001) / cell[0]
    d10, d11 = (c110 - c010) / cell[0], (c111 - c011) / cell[0]
    cxy0 = cx00 + (cx10 - cx00) * t1
    cxy1 = cx01 + (cx11 - cx01) * t1
    value = cxy0 + (cxy1 - cxy0) * t2
    gx0 = d00 + (d10 - d00) * t1
    gx1 = d01 + (d11 - d01) * t1
    dy0 = (cx10 - cx00) / cell[1]
    dy1 = (cx11 - cx01) / cell[1]
    grad[0] = gx0 + (gx1 - gx0) * t2
    grad[1] = dy0 + (dy1 - dy0) * t2
    grad[2] = (cxy1 - cxy0) / cell[2]
    safe = out_dist if out_dist > 0.0 else 1.0
    if o0 != 0.0:
        grad[0] = o0 / safe
    if o1 != 0.0:
        grad[1] = o1 / safe
    if o2 != 0.0:
        grad[2] = o2 / safe
    return value + out_dist


@inner_kernel
def _sdf_of(kind, y, grad, want_grad, n, offset, c, radius, rot, e, g_values, g_start, g_dims, g_min, g_max, g_cell):
    """phi of one collider at the collider-frame point y (3,), its raw gradient into ``grad`` when asked; the
    parameters of every kind are passed, the kind picks what it reads."""
    if kind == GRID:
        return _grid_sdf(y, grad, g_values, g_start, g_dims, g_min, g_max, g_cell)
    if kind == PLANE:
        phi = (y[0] * n[0] + y[1] * n[1]) + y[2] * n[2] - offset
        if want_grad:
            grad[0], grad[1], grad[2] = n[0], n[1], n[2]
        return phi
    if kind == SPHERE:
        d0, d1, d2 = y[0] - c[0], y[1] - c[1], y[2] - c[2]
        dist = np.sqrt((d0 * d0 + d1 * d1) + d2 * d2)
        if want_grad:
            if dist <= 0.0:
                grad[0], grad[1], grad[2] = 0.0, 1.0, 0.0
            else:
                grad[0], grad[1], grad[2] = d0 / dist, d1 / dist, d2 / dist
        return dist - radius
    # BOX: local_j = sum_i d_i R_ij; q = |local| - e; phi = |max(q, 0)| + min(max_j q_j, 0)
    d0, d1, d2 = y[0] - c[0], y[1] - c[1], y[2] - c[2]
    l0 = (d0 * rot[0, 0] + d1 * rot[1, 0]) + d2 * rot[2, 0]
    l1 = (d0 * rot[0, 1] + d1 * rot[1, 1]) + d2 * rot[2, 1]
    l2 = (d0 * rot[0, 2] + d1 * rot[1, 2]) + d2 * rot[2, 2]
    q0, q1, q2 = abs(l0) - e[0], abs(l1) - e[1], abs(l2) - e[2]
    p0, p1, p2 = max(q0, 0.0), max(q1, 0.0), max(q2, 0.0)
    out = np.sqrt((p0 * p0 + p1 * p1) + p2 * p2)
    q_max = max(max(q0, q1), q2)
    phi = out + min(q_max, 0.0)
    if want_grad:
        if out > 0.0:
            g0, g1, g2 = p0 / out, p1 / out, p2 / out
        elif q0 >= q_max:  # inside: the nearest face, the first axis on a tie
            g0, g1, g2 = 1.0, 0.0, 0.0
        elif q1 >= q_max:
            g0, g1, g2 = 0.0, 1.0, 0.0
        else:
            g0, g1, g2 = 0.0, 0.0, 1.0
        g0 = -g0 if l0 < 0.0 else g0
        g1 = -g1 if l1 < 0.0 else g1
        g2 = -g2 if l2 < 0.0 else g2
        for i in range(3):
            grad[i] = (rot[i, 0] * g0 + rot[i, 1] * g1) + rot[i, 2] * g2
    return phi


@inner_kernel
def _poly_relu(x, t, shift):
    """(h, h', h'') of ramp.poly_relu."""
    y = x - shift
    if t <= 0.0 or abs(y) >= t:
        if y > 0.0:
            return y, 1.0, 0.0
        return 0.0, 0.0, 0.0
    s = y / t
    s3 = math.pow(s, 3.0)  # libm pow, as numpy's s**3
    value = 3.0 * t / 16.0 + (0.5 + 0.375 * s - s3 / 16.0) * y
    d1 = 0.5 + 0.75 * s - 0.25 * s3
    d2 = 0.75 * (1.0 - s * s) / t
    return max(0.0, value), min(max(d1, 0.0), 1.0), max(0.0, d2)


@inner_kernel
def _smoother(model, x, t):
    """(f, f', f'', f'/x) of ramp.step_c1 / ramp.step_cinf."""
    if model == C1_REGULARIZED:
        if x >= t:
            d1_over_x = 1.0 / x if x > 0.0 else 0.0
            return x - t / 3.0, 1.0, 0.0, d1_over_x
        r = x / t
        d1_over_x = (2.0 - r) / t
        return x * r * (1.0 - r / 3.0), x * d1_over_x, 2.0 * (1.0 - r) / t, d1_over_x
    eps = max(t, _CINF_MIN_EPS)
    quarter = 0.25 * eps * eps
    s = np.sqrt(x * x + quarter)
    inv_s = 1.0 / s
    return s - 0.5 * eps, x * inv_s, quarter * inv_s * inv_s * inv_s, inv_s


@inner_kernel
def _add_jt_h_j(h, lever_a, lever_b, scale, out, work):
    """out += scale * J(lever_a)^T h J(lever_b), J(v) = [1, -skew(v)] (3 x 6); ``work`` (3, 3, 6) scratch."""
    ja, jb, hj = work[0], work[1], work[2]
    for j, v in ((ja, lever_a), (jb, lever_b)):
        for i in range(3):
            for k in range(3):
                j[i, k] = 1.0 if i == k else 0.0
        j[0, 3], j[0, 4], j[0, 5] = 0.0, v[2], -v[1]
        j[1, 3], j[1, 4], j[1, 5] = -v[2], 0.0, v[0]
        j[2, 3], j[2, 4], j[2, 5] = v[1], -v[0], 0.0
    for i in range(3):
        for k in range(6):
            hj[i, k] = h[i, 0] * jb[0, k] + h[i, 1] * jb[1, k] + h[i, 2] * jb[2, k]
    for m in range(6):
        for k in range(6):
            out[m, k] += scale * (ja[0, m] * hj[0, k] + ja[1, m] * hj[1, k] + ja[2, m] * hj[2, k])


@inner_kernel
def _pair_in_reach(com, rot, w, a, b, p, cl, kind, p_sphere_center, p_sphere_radius, p_reach, p_bound_is_half,
                   p_bound_vector, p_bound_scalar, c_center, c_rotation, c_half_extents, x, y):
    """Broad phase of pair p in world w: the colliding body's sample sphere, centred in B's frame, against the
    collider's bound (the exact SDF for boxes). Indexed element by element, without array views: every (world,
    pair) passes here, and a view's reference counting cost ~0.7 us per pair, most of a world's contact time when
    few pairs touch. ``x``, ``y`` (3,): scratch."""
    for i in range(3):
        x[i] = com[w, a, i] + ((rot[w, a, i, 0] * p_sphere_center[p, 0] + rot[w, a, i, 2]
                                * p_sphere_center[p, 2]) + rot[w, a, i, 1] * p_sphere_center[p, 1]) - com[w, b, i]
    for i in range(3):
        y[i] = (rot[w, b, 0, i] * x[0] + rot[w, b, 1, i] * x[1]) + rot[w, b, 2, i] * x[2]
    if kind == BOX:  # _sdf_of's BOX distance
        d0, d1, d2 = y[0] - c_center[cl, 0], y[1] - c_center[cl, 1], y[2] - c_center[cl, 2]
        l0 = (d0 * c_rotation[cl, 0, 0] + d1 * c_rotation[cl, 1, 0]) + d2 * c_rotation[cl, 2, 0]
        l1 = (d0 * c_rotation[cl, 0, 1] + d1 * c_rotation[cl, 1, 1]) + d2 * c_rotation[cl, 2, 1]
        l2 = (d0 * c_rotation[cl, 0, 2] + d1 * c_rotation[cl, 1, 2]) + d2 * c_rotation[cl, 2, 2]
        q0 = abs(l0) - c_half_extents[cl, 0]
        q1 = abs(l1) - c_half_extents[cl, 1]
        q2 = abs(l2) - c_half_extents[cl, 2]
        e0, e1, e2 = max(q0, 0.0), max(q1, 0.0), max(q2, 0.0)
        lb = np.sqrt((e0 * e0 + e1 * e1) + e2 * e2) + min(max(max(q0, q1), q2), 0.0)
    elif p_bound_is_half[p]:
        lb = (y[0] * p_bound_vector[p, 0] + y[2] * p_bound_vector[p, 2]) + y[1] * p_bound_vector[p, 1] \
            - p_bound_scalar[p]
    else:
        d0, d1, d2 = y[0] - p_bound_vector[p, 0], y[1] - p_bound_vector[p, 1], y[2] - p_bound_vector[p, 2]
        lb = np.sqrt((d0 * d0 + d1 * d1) + d2 * d2) - p_bound_scalar[p]
    return lb - p_sphere_radius[p] <= p_reach[p]


@inner_kernel
def _sample_in_frame(points, s, m_ab, t_ab, kind, bv, b_scalar, reach, y):
    """Sample s of the colliding body in the collider's frame, y = M X + t (the oracle's grouping); False when a
    grid collider's bounding sphere culls it, as the numpy broad phase does."""
    xs0, xs1, xs2 = points[s, 0], points[s, 1], points[s, 2]
    for i in range(3):
        y[i] = ((m_ab[i, 0] * xs0 + m_ab[i, 2] * xs2) + m_ab[i, 1] * xs1) + t_ab[i]
    if kind == GRID:
        d0, d1, d2 = y[0] - bv[0], y[1] - bv[1], y[2] - bv[2]
        return np.sqrt((d0 * d0 + d1 * d1) + d2 * d2) - b_scalar <= reach
    return True


@kernel
def contact_terms(
        s_points, s_normals, s_weights, s_start, s_count, p_colliding, p_collider, p_collider_index, p_k, p_eps,
        p_delta, p_mu, p_c_t, p_c_n, p_falloff_vel, p_max_alignment, p_use_collider_normal, p_dissipative, p_reach,
        p_sphere_center, p_sphere_radius, p_bound_is_half, p_bound_vector, p_bound_scalar, p_slot, p_flip, c_kind,
        c_center, c_half_extents, c_rotation, c_radius, c_normal, c_offset, c_grid_values, c_grid_start, c_grid_dims,
        c_grid_min, c_grid_max, c_grid_cell, com, rot, com0, rot0, stage_dt, friction_model, fade_friction,
        implicit_normal_force, fitted_hessian, want_hessian, energy_out, grad_out, hess_out, coupling_out):
    """Add every world's contact terms into energy_out (W,), grad_out (W, N, 6), hess_out (W, N, 6, 6) and the
    coupling blocks coupling_out (W, S, 6, 6) of the pairs' slots; returns True when some row coupled two
    dynamic bodies (the caller then passes the blocks to the solver)."""
    coupled = False
    y = np.empty(3)
    y0 = np.empty(3)
    grad = np.empty(3)
    na = np.empty(3)
    x = np.empty(3)
    r = np.empty(3)
    u = np.empty(3)
    de = np.empty(3)
    d2e = np.empty((3, 3))
    g = np.empty(3)
    h = np.empty((3, 3))
    rd = np.empty((3, 3))
    dummy = np.empty(3)
    blk = np.empty((6, 6))
    m_ab = np.empty((3, 3))
    work = np.empty((3, 3, 6))
    t_ab = np.empty(3)
    # One world's active rows, scattered after its loop: first to every row's A body, then to its B body, in
    # row order (world, pair, sample), the order of assemble_rigid_contact's bincount, so that sums of several
    # rows on one body round as in the numpy oracle.
    max_rows = 0
    for p in range(p_colliding.shape[0]):
        max_rows += s_count[p_colliding[p]]
    row_a = np.empty(max_rows, np.int64)
    row_b = np.empty(max_rows, np.int64)
    row_g = np.empty((max_rows, 3))
    row_r = np.empty((max_rows, 3))
    row_u = np.empty((max_rows, 3))
    row_h = np.empty((max_rows, 3, 3))
    for w in range(com.shape[0]):
        e_world = 0.0
        num_rows = 0
        for p in range(p_colliding.shape[0]):
            a, b, cl = p_colliding[p], p_collider[p], p_collider_index[p]
            kind = c_kind[cl]
            if not _pair_in_reach(com, rot, w, a, b, p, cl, kind, p_sphere_center, p_sphere_radius, p_reach,
                                  p_bound_is_half, p_bound_vector, p_bound_scalar, c_center, c_rotation,
                                  c_half_extents, x, y):
                continue
            ca, cb, ra, rb = com[w, a], com[w, b], rot[w, a], rot[w, b]
            delta = p_delta[p]
            k, eps = p_k[p], p_eps[p]
            ca0, cb0, ra0, rb0 = com0[w, a], com0[w, b], rot0[w, a], rot0[w, b]
            # Y = M X + t with M = R_B^T R_A, t = R_B^T (c_A - c_B), per pair (the oracle's grouping and rounding).
            for i in range(3):
                t_ab[i] = (rb[0, i] * (ca[0] - cb[0]) + rb[1, i] * (ca[1] - cb[1])) + rb[2, i] * (ca[2] - cb[2])
                for j in range(3):
                    m_ab[i, j] = (rb[0, i] * ra[0, j] + rb[1, i] * ra[1, j]) + rb[2, i] * ra[2, j]
            col_n, c_off, c_c, c_r = c_normal[cl], c_offset[cl], c_center[cl], c_radius[cl]
            c_rot, c_e, g_start, g_dims = c_rotation[cl], c_half_extents[cl], c_grid_start[cl], c_grid_dims[cl]
            g_min, g_max, g_cell, g_values = c_grid_min[cl], c_grid_max[cl], c_grid_cell[cl], c_grid_values
            bv, b_scalar, reach = p_bound_vector[p], p_bound_scalar[p], p_reach[p]
            points, normals, weights = s_points, s_normals, s_weights
            # The pair's parameters as locals: reading a structure's member in the sample loop is not free.
            m_align, dissipative, use_collider_normal = p_max_alignment[p], p_dissipative[p], p_use_collider_normal[p]
            mu, c_t, c_n = p_mu[p], p_c_t[p] / stage_dt, p_c_n[p] / stage_dt
            width, slot, flip = p_falloff_vel[p] * stage_dt, p_slot[p], p_flip[p]
            s0 = s_start[a]
            for s in range(s0, s0 + s_count[a]):
                if not _sample_in_frame(points, s, m_ab, t_ab, kind, bv, b_scalar, reach, y):
                    continue
                xs0, xs1, xs2 = points[s, 0], points[s, 1], points[s, 2]
                phi = _sdf_of(kind, y, grad, True, col_n, c_off, c_c, c_r, c_rot, c_e, g_values, g_start, g_dims,
                              g_min, g_max, g_cell)
                if not (phi < delta):
                    continue
                # Alignment gate with the colliding normal N_A = R_B^T R_A n_A.
                ns0, ns1, ns2 = normals[s, 0], normals[s, 1], normals[s, 2]
                for i in range(3):
                    dummy[i] = (ra[i, 0] * ns0 + ra[i, 2] * ns2) + ra[i, 1] * ns1
                for i in range(3):
                    na[i] = (rb[0, i] * dummy[0] + rb[1, i] * dummy[1]) + rb[2, i] * dummy[2]
                cos_a = (grad[0] * na[0] + grad[2] * na[2]) + grad[1] * na[1]
                if not (cos_a <= m_align):
                    continue
                fade = (m_align - cos_a) / (m_align + 1.0) if (fade_friction and m_align > -1.0) else 1.0
                # Penalty: h = poly_relu(-phi, eps, eps - delta), w = k/2 h^2, dw/dphi = -k h h'.
                hv, h1, h2 = _poly_relu(-phi, eps, eps - delta)
                load_pen = k * hv * h1
                e_row = 0.5 * k * hv * hv
                d2_phi = k * (h1 * h1 + hv * h2)
                for i in range(3):
                    de[i] = -load_pen * grad[i]
                    for j in range(3):
                        d2e[i, j] = d2_phi * (grad[i] * grad[j]) if want_hessian else 0.0
                if dissipative:
                    # Stage-start pullback Y0 = R_B0^T (c_A0 + R_A0 X - c_B0); dp = Y - Y0.
                    for i in range(3):
                        dummy[i] = ca0[i] + ((ra0[i, 0] * xs0 + ra0[i, 2] * xs2) + ra0[i, 1] * xs1) - cb0[i]
                    for i in range(3):
                        y0[i] = (rb0[0, i] * dummy[0] + rb0[1, i] * dummy[1]) + rb0[2, i] * dummy[2]
                    dp0, dp1, dp2 = y[0] - y0[0], y[1] - y0[1], y[2] - y0[2]
                    if implicit_normal_force:
                        load_phi = phi
                    else:  # reconstructed stage-start distance d0 = phi - G . dp
                        load_phi = phi - ((grad[0] * dp0 + grad[2] * dp2) + grad[1] * dp1)
                    lv, l1, _ = _poly_relu(-load_phi, eps, eps - delta)
                    lam = fade * (k * lv * l1)
                    # Friction normal: G/|G| (or -N_A where |G| vanishes, or when the pair uses -N_A).
                    if use_collider_normal:
                        gn = np.sqrt((grad[0] * grad[0] + grad[1] * grad[1]) + grad[2] * grad[2])
                        if gn < _ZERO_GRADIENT_NORM:
                            n0, n1, n2 = -na[0], -na[1], -na[2]
                        else:
                            n0, n1, n2 = grad[0] / gn, grad[1] / gn, grad[2] / gn
                    else:
                        n0, n1, n2 = -na[0], -na[1], -na[2]
                    dp_n = (dp0 * n0 + dp2 * n2) + dp1 * n1
                    t0, t1, t2 = dp0 - dp_n * n0, dp1 - dp_n * n1, dp2 - dp_n * n2
                    slip = np.sqrt((t0 * t0 + t1 * t1) + t2 * t2)
                    f, _, f2, f1x = _smoother(friction_model, slip, width)
                    e_row += lam * (mu * f + 0.5 * c_t * slip * slip + 0.5 * c_n * dp_n * dp_n)
                    tangent = mu * f1x + c_t
                    de[0] += lam * (tangent * t0 + (c_n * dp_n) * n0)
                    de[1] += lam * (tangent * t1 + (c_n * dp_n) * n1)
                    de[2] += lam * (tangent * t2 + (c_n * dp_n) * n2)
                    if want_hessian:
                        nv = (n0, n1, n2)
                        tv = (t0, t1, t2)
                        exact_c = 0.0
                        if not fitted_hessian and slip > 0.0:
                            exact_c = lam * mu * (f2 - f1x) / (slip * slip)
                        for i in range(3):
                            for j in range(3):
                                nn = nv[i] * nv[j]
                                eye = 1.0 if i == j else 0.0
                                d2e[i, j] += lam * (tangent * (eye - nn) + c_n * nn) + exact_c * (tv[i] * tv[j])
                for i in range(3):
                    x[i] = ca[i] + ((ra[i, 0] * xs0 + ra[i, 2] * xs2) + ra[i, 1] * xs1)
                    r[i] = x[i] - ca[i]
                    u[i] = x[i] - cb[i]
                wt = weights[s]
                e_world += wt * e_row
                # World gradient g = w R_B dE and Hessian H = w R_B d2E R_B^T.
                for i in range(3):
                    g[i] = wt * ((rb[i, 0] * de[0] + rb[i, 2] * de[2]) + rb[i, 1] * de[1])
                row_a[num_rows], row_b[num_rows] = a, b
                for i in range(3):
                    row_g[num_rows, i] = g[i]
                    row_r[num_rows, i] = r[i]
                    row_u[num_rows, i] = u[i]
                if want_hessian:
                    for i in range(3):
                        for j in range(3):
                            rd[i, j] = (rb[i, 0] * d2e[0, j] + rb[i, 1] * d2e[1, j]) + rb[i, 2] * d2e[2, j]
                    for i in range(3):
                        for j in range(3):
                            h[i, j] = wt * ((rd[i, 0] * rb[j, 0] + rd[i, 1] * rb[j, 1]) + rd[i, 2] * rb[j, 2])
                    for i in range(3):
                        for j in range(3):
                            row_h[num_rows, i, j] = h[i, j]
                    if slot >= 0:
                        coupled = True
                        for i in range(6):  # element by element: slice assignment compiles a broadcasting path
                            for j in range(6):
                                blk[i, j] = 0.0
                        _add_jt_h_j(h, r, u, -1.0, blk, work)  # H_AB = J_A^T H J_B, J_B = -J(u)
                        target = coupling_out[w, slot]
                        if flip:
                            for i in range(6):
                                for j in range(6):
                                    target[i, j] += blk[j, i]
                        else:
                            for i in range(6):
                                for j in range(6):
                                    target[i, j] += blk[i, j]
                num_rows += 1
        for side in range(2):  # A bodies (lever r, force -g), then B bodies (lever u, force +g)
            for q in range(num_rows):
                body = row_a[q] if side == 0 else row_b[q]
                sign = 1.0 if side == 0 else -1.0
                for i in range(3):  # element by element, no views (see the broad phase)
                    r[i] = row_r[q, i] if side == 0 else row_u[q, i]
                    g[i] = sign * row_g[q, i]
                    grad_out[w, body, i] += g[i]
                grad_out[w, body, 3] += r[1] * g[2] - r[2] * g[1]
                grad_out[w, body, 4] += r[2] * g[0] - r[0] * g[2]
                grad_out[w, body, 5] += r[0] * g[1] - r[1] * g[0]
                if want_hessian:
                    for i in range(3):
                        for j in range(3):
                            h[i, j] = row_h[q, i, j]
                    _add_jt_h_j(h, r, r, 1.0, hess_out[w, body], work)
        energy_out[w] += e_world
    return coupled

