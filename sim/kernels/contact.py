"""The contact potential as one kernel: broad phase and collider SDFs (kernels/contact_geometry.py), alignment gate,
penalty, dissipation and rigid assembly, looping worlds x pairs x samples (sim/contact/potential.py,
penalty.py, friction.py and rigid_assembly.py hold the formulas and the numpy oracle, `ContactPotential._rows`).

Scope: the analytic colliders, trilinear grid SDFs and exact triangle meshes, every dissipation load mode (LOAD_*,
explicit normals included) and the Gauss-Newton Hessian (``exact_geometric_hessian=False``); the potential decides
at construction which path a configuration takes (`ContactPotential.uses_kernel`). Per row (a sample of the
colliding body A against the collider of body B, collider frame Y = R_B^T (c_A + R_A X - c_B)):

    E = w [ k/2 h(-phi)^2 + lam_d (mu f(|dp_t|) + c_t/(2 dt) |dp_t|^2 + c_n/(2 dt) dp_n^2) ],  dp = Y - Y0

with dE/dY, d^2E/dY^2 rotated to the world (g = R_B dE/dY, H = R_B d2E R_B^T) and chained to both bodies with
J_A = [1, -skew(r)], J_B = -[1, -skew(u)] (r = x - c_A, u = x - c_B).
"""

from __future__ import annotations

from collections import namedtuple


import numpy as np

from ..jit import inner_kernel, kernel
from .contact_geometry import (  # noqa: F401  (the collider kinds: potential.py reads them here)
    _CP_SIZE, _RP_SIZE, BOX, GRID, MESH, PLANE, REACH_OFF, REACH_RECORD, REACH_USE, SPHERE, _body_moves,
    _collider_params, _out_of_reach_since, _pair_frame, _pair_gap, _pair_in_reach, _record_bodies, _record_pair,
    _sample_in_frame,
    _sdf_of)
from .pow_cube import pow_cube

C1_REGULARIZED, CINF_REGULARIZED = 0, 1
# The dissipation's normal load and geometry (ContactEvalConfig): the load at the reconstructed stage-start distance
# d0 = phi - G . dp with the current normals (the reference's default), at the current distance
# (implicit_normal_force_for_dissipation), or explicit_normals: stage-start distance, normals, alignment and
# friction plane, and a sample counts as a contact when it is within delta now or at the stage start.
LOAD_RECONSTRUCTED, LOAD_IMPLICIT, LOAD_EXPLICIT = 0, 1, 2


def load_mode(config) -> int:
    """The kernels' LOAD_* code of a ContactEvalConfig."""
    if config.explicit_normals:
        return LOAD_EXPLICIT
    return LOAD_IMPLICIT if config.implicit_normal_force_for_dissipation else LOAD_RECONSTRUCTED
_ZERO_GRADIENT_NORM = 1e-9  # friction._ZERO_GRADIENT_NORM
_CINF_MIN_EPS = np.finfo(np.float64).eps  # ramp._CINF_MIN_EPS

# Frozen model arrays of one ContactPotential, three typed structures (row-major, C-contiguous). Python names them
# with these namedtuples; the kernels take them as plain tuples (``tuple(samples)``): numba types a namedtuple
# argument at every call more slowly, and the kernels unpack each group into locals once per world, so their loops
# read plain arrays.
ContactSampleArrays = namedtuple("ContactSampleArrays", "points normals weights start count")
ContactPairArrays = namedtuple(
    "ContactPairArrays",
    "colliding collider collider_index k eps delta mu c_t c_n falloff_vel max_alignment use_collider_normal "
    "dissipative reach sphere_center sphere_radius bound_is_half bound_vector bound_scalar slot flip")
# Grid SDFs: every grid's values flattened (C order, z fastest) into grid_values from grid_start; per collider
# grid_dims (C, 3), grid_min / grid_max / grid_cell (C, 3) [m]. Exact meshes (kind MESH) share the float table:
# after the grids' values, every mesh's triangles (kernels/mesh.py `pack_mesh`, MESH_ROW floats each) from its
# grid_start, its triangle count in grid_dims[:, 0]. Shared rather than new fields: each field is one more array in
# the compiled Newton's by-address signature of contact_rows (kernels/newton.py _CONTACT_MODEL).
ContactColliderArrays = namedtuple(
    "ContactColliderArrays",
    "kind center half_extents rotation radius normal offset grid_values grid_start grid_dims grid_min grid_max "
    "grid_cell")


@inner_kernel(_nrt=False, inline="always")
def _poly_relu(x, t, shift):
    """(h, h', h'') of ramp.poly_relu."""
    y = x - shift
    if t <= 0.0 or abs(y) >= t:
        if y > 0.0:
            return y, 1.0, 0.0
        return 0.0, 0.0, 0.0
    s = y / t
    s3 = pow_cube(s)  # libm's pow(s, 3.0) bit for bit, as numpy's s**3 (kernels/pow_cube.py)
    value = 3.0 * t / 16.0 + (0.5 + 0.375 * s - s3 / 16.0) * y
    d1 = 0.5 + 0.75 * s - 0.25 * s3
    d2 = 0.75 * (1.0 - s * s) / t
    return max(0.0, value), min(max(d1, 0.0), 1.0), max(0.0, d2)


@inner_kernel(_nrt=False, inline="always")
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


# Explicit normals' stage-start work, called rather than inlined like the current pose's: inlined copies of
# `_sdf_of`, `_pair_gap` and `_sample_in_frame` in `_world_rows` made the contact kernels' cold compile 8 -> 13 s.
@inner_kernel(_nrt=False)
def _sdf_with_gradient(kind, y0, y1, y2, cp, g_values):
    """`_sdf_of` with the gradient (every kind's phi is the same with or without it)."""
    return _sdf_of(kind, y0, y1, y2, True, cp, g_values)


@inner_kernel(_nrt=False)
def _stage_start_sample(points, s, frame, kind, p, p_bound_vector, p_bound_scalar, p_reach):
    """`_sample_in_frame` in the stage-start frame (rows 4-7 of ``frame``)."""
    return _sample_in_frame(points, s, frame, kind, p, p_bound_vector, p_bound_scalar, p_reach, 4)


# Columns of a stored row (contact_terms' ``rows``): the row's world force g, its levers r = x - c_A and
# u = x - c_B, and its world Hessian H (3 x 3, row-major).
_ROW_G, _ROW_R, _ROW_U, _ROW_H, _ROW_SIZE = 0, 3, 6, 9, 18


@inner_kernel(_nrt=False, inline="always")
def _add_jt_h_j(rows, q, lever_a, lever_b, scale, out, i0, i1, hj):
    """out[i0, i1] += scale * J(a)^T H J(b), J(v) = [1, -skew(v)] (3 x 6), for the stored row ``q``: H its Hessian,
    a and b its levers at columns ``lever_a``, ``lever_b`` (_ROW_R or _ROW_U); ``hj`` (3, 6) scratch.

    Written on J's structure: the full 3-term sums of the 3 x 6 products without the terms of J's zero entries
    and the multiplications by its unit entries, so each entry rounds as the full products do (a dropped term is
    an exact zero; only the sign of an exact-zero entry could differ, and the sums into the zero-started outputs
    make it +0)."""
    a0, a1, a2 = rows[q, lever_a], rows[q, lever_a + 1], rows[q, lever_a + 2]
    b0, b1, b2 = rows[q, lever_b], rows[q, lever_b + 1], rows[q, lever_b + 2]
    for i in range(3):  # H J(b): H, then H times the columns of -skew(b): (0, -b2, b1), (b2, 0, -b0), (-b1, b0, 0)
        h0, h1, h2 = rows[q, _ROW_H + 3 * i], rows[q, _ROW_H + 3 * i + 1], rows[q, _ROW_H + 3 * i + 2]
        hj[i, 0], hj[i, 1], hj[i, 2] = h0, h1, h2
        hj[i, 3] = h1 * -b2 + h2 * b1
        hj[i, 4] = h0 * b2 + h2 * -b0
        hj[i, 5] = h0 * -b1 + h1 * b0
    for k in range(6):  # J(a)^T (H J(b)): the rows of 1, then of -skew(a)^T
        x0, x1, x2 = hj[0, k], hj[1, k], hj[2, k]
        out[i0, i1, 0, k] += scale * x0
        out[i0, i1, 1, k] += scale * x1
        out[i0, i1, 2, k] += scale * x2
        out[i0, i1, 3, k] += scale * (-a2 * x1 + a1 * x2)
        out[i0, i1, 4, k] += scale * (a2 * x0 + -a0 * x2)
        out[i0, i1, 5, k] += scale * (-a1 * x0 + a0 * x1)


# Columns of a stored row's integers (``row_body``): its A body, its B body, its pair.
_ROW_A, _ROW_B, _ROW_PAIR = 0, 1, 2


@inner_kernel(_nrt=False)
def _world_rows(w, samples, pairs, colliders, config, com, rot, com0, rot0, stage_dt, want_hessian, row_body, rows,
                scratch, reach):
    """World w's active rows, in row order (pair, sample): their bodies and pair into row_body (R, 3), their force,
    levers and (with want_hessian) world Hessian into rows (R, _ROW_SIZE); returns (their count, the world's
    contact energy). ``samples``, ``pairs``, ``colliders``: the potential's frozen arrays (ContactSampleArrays,
    ContactPairArrays, ContactColliderArrays as plain tuples); ``config``: (friction model, fade_friction, load
    mode, fitted Hessian). ``scratch``: d2e, rd (3, 3), frame (8, 3), cp (_CP_SIZE,). The broad phase records or
    uses a reference as reach_state[0] says (contact_geometry.REACH_*; ``reach``: reach_state (1,), reach_ref
    (N, 12), reach_pair (P, _RP_SIZE), reach_move (N, 2)): REACH_RECORD tests every pair and records them, then
    sets REACH_USE."""
    s_points, s_normals, s_weights, s_start, s_count = samples
    (p_colliding, p_collider, p_collider_index, p_k, p_eps, p_delta, p_mu, p_c_t, p_c_n, p_falloff_vel,
     p_max_alignment, p_use_collider_normal, p_dissipative, p_reach, p_sphere_center, p_sphere_radius,
     p_bound_is_half, p_bound_vector, p_bound_scalar, p_slot, p_flip) = pairs
    (c_kind, c_center, c_half_extents, c_rotation, c_radius, c_normal, c_offset, c_grid_values, c_grid_start,
     c_grid_dims, c_grid_min, c_grid_max, c_grid_cell) = colliders
    friction_model, fade_friction, load_mode, fitted_hessian = config
    d2e, rd, frame, cp = scratch
    reach_state, reach_ref, reach_pair, reach_move = reach
    e_world = 0.0
    num_rows = 0
    explicit = load_mode == LOAD_EXPLICIT
    # With explicit normals a pair is also in reach through its stage-start poses, which the skipping between
    # evaluations does not track: every pair is tested each time.
    state = REACH_OFF if explicit else reach_state[0]
    rg = rot0 if explicit else rot  # the rotations of the alignment gate
    if state == REACH_USE:
        _body_moves(com, rot, w, reach_ref, reach_move)
    for p in range(p_colliding.shape[0]):
        a, b, cl = p_colliding[p], p_collider[p], p_collider_index[p]
        if state == REACH_USE and _out_of_reach_since(p, a, b, reach_pair, reach_move):
            continue
        kind = c_kind[cl]
        gap, distance = _pair_gap(com, rot, w, a, b, p, cl, kind, p_sphere_center, p_sphere_radius, p_bound_is_half,
                                  p_bound_vector, p_bound_scalar, c_center, c_rotation, c_half_extents,
                                  state == REACH_RECORD)
        if state == REACH_RECORD:
            _record_pair(p, cl, kind, gap, distance, com, w, a, b, p_reach, p_sphere_center, p_bound_is_half,
                         p_bound_vector, c_rotation, reach_pair)
        in_reach = gap <= p_reach[p]
        if explicit and not in_reach:
            in_reach = _pair_in_reach(com0, rot0, w, a, b, p, cl, kind, p_sphere_center, p_sphere_radius, p_reach,
                                      p_bound_is_half, p_bound_vector, p_bound_scalar, c_center, c_rotation,
                                      c_half_extents)
        if not in_reach:
            continue
        _pair_frame(com, rot, w, a, b, frame)
        if explicit:  # the stage-start frame in rows 4-7
            _pair_frame(com0, rot0, w, a, b, frame, 4)
        _collider_params(cl, kind, c_normal, c_offset, c_center, c_radius, c_rotation, c_half_extents,
                         c_grid_start, c_grid_dims, c_grid_min, c_grid_max, c_grid_cell, cp)
        # The pair's parameters as scalars.
        delta, k, eps = p_delta[p], p_k[p], p_eps[p]
        m_align, dissipative, use_collider_normal = p_max_alignment[p], p_dissipative[p], p_use_collider_normal[p]
        mu, c_t, c_n = p_mu[p], p_c_t[p] / stage_dt, p_c_n[p] / stage_dt
        width = p_falloff_vel[p] * stage_dt
        s0 = s_start[a]
        for s in range(s0, s0 + s_count[a]):
            kept, y0, y1, y2 = _sample_in_frame(s_points, s, frame, kind, p, p_bound_vector, p_bound_scalar,
                                                p_reach)
            z0, z1, z2 = 0.0, 0.0, 0.0  # with explicit normals, the sample at the stage start (Y0 = M0 X + t0)
            if explicit:
                kept0, z0, z1, z2 = _stage_start_sample(s_points, s, frame, kind, p, p_bound_vector, p_bound_scalar,
                                                        p_reach)
                kept = kept or kept0
            if not kept:
                continue
            xs0, xs1, xs2 = s_points[s, 0], s_points[s, 1], s_points[s, 2]
            # The analytic colliders' gradient only for the samples within delta (a fraction of them), evaluated
            # again with it; a grid's in the first evaluation (measured: evaluating it twice cost more).
            phi, gr0, gr1, gr2 = _sdf_of(kind, y0, y1, y2, kind == GRID, cp, c_grid_values)
            in_contact = phi < delta
            # The dissipation's distance and normal (gs) and the gate's colliding normal (na): the stage start's
            # with explicit normals, else the current ones.
            phi_s, gs0, gs1, gs2 = phi, gr0, gr1, gr2
            if explicit:  # with its gradient at once (every kind's phi is the same with or without it)
                phi_s, gs0, gs1, gs2 = _sdf_with_gradient(kind, z0, z1, z2, cp, c_grid_values)
                in_contact = in_contact or phi_s < delta
            if not in_contact:
                continue
            if kind != GRID:
                phi, gr0, gr1, gr2 = _sdf_of(kind, y0, y1, y2, True, cp, c_grid_values)
                if not explicit:
                    phi_s, gs0, gs1, gs2 = phi, gr0, gr1, gr2
            # Alignment gate with the colliding normal N_A = R_B^T R_A n_A (stage-start rotations rg when explicit).
            ns0, ns1, ns2 = s_normals[s, 0], s_normals[s, 1], s_normals[s, 2]
            wn0 = (rg[w, a, 0, 0] * ns0 + rg[w, a, 0, 2] * ns2) + rg[w, a, 0, 1] * ns1
            wn1 = (rg[w, a, 1, 0] * ns0 + rg[w, a, 1, 2] * ns2) + rg[w, a, 1, 1] * ns1
            wn2 = (rg[w, a, 2, 0] * ns0 + rg[w, a, 2, 2] * ns2) + rg[w, a, 2, 1] * ns1
            na0 = (rg[w, b, 0, 0] * wn0 + rg[w, b, 1, 0] * wn1) + rg[w, b, 2, 0] * wn2
            na1 = (rg[w, b, 0, 1] * wn0 + rg[w, b, 1, 1] * wn1) + rg[w, b, 2, 1] * wn2
            na2 = (rg[w, b, 0, 2] * wn0 + rg[w, b, 1, 2] * wn1) + rg[w, b, 2, 2] * wn2
            cos_a = (gs0 * na0 + gs2 * na2) + gs1 * na1
            if not (cos_a <= m_align):
                continue
            fade = (m_align - cos_a) / (m_align + 1.0) if (fade_friction and m_align > -1.0) else 1.0
            # Penalty: h = poly_relu(-phi, eps, eps - delta), w = k/2 h^2, dw/dphi = -k h h'.
            hv, h1, h2 = _poly_relu(-phi, eps, eps - delta)
            load_pen = k * hv * h1
            e_row = 0.5 * k * hv * hv
            d2_phi = k * (h1 * h1 + hv * h2)
            de0, de1, de2 = -load_pen * gr0, -load_pen * gr1, -load_pen * gr2
            if want_hessian:
                for i in range(3):
                    gi = gr0 if i == 0 else (gr1 if i == 1 else gr2)
                    d2e[i, 0] = d2_phi * (gi * gr0)
                    d2e[i, 1] = d2_phi * (gi * gr1)
                    d2e[i, 2] = d2_phi * (gi * gr2)
            if dissipative:
                e_fric, df0, df1, df2 = _dissipation(
                    (w, a, b), (xs0, xs1, xs2, y0, y1, y2, z0, z1, z2),
                    (phi, gr0, gr1, gr2, phi_s, gs0, gs1, gs2, na0, na1, na2),
                    (fade, eps, delta, k, mu, c_t, c_n, width),
                    (explicit, load_mode, use_collider_normal, friction_model, fitted_hessian, want_hessian), com0,
                    rot0, d2e)
                e_row += e_fric
                de0 += df0
                de1 += df1
                de2 += df2
            # The row: world force g = w R_B dE, levers r = x - c_A, u = x - c_B, world Hessian H = w R_B d2E R_B^T.
            wt = s_weights[s]
            e_world += wt * e_row
            row_body[num_rows, 0], row_body[num_rows, 1], row_body[num_rows, 2] = a, b, p
            for i in range(3):
                x = com[w, a, i] + ((rot[w, a, i, 0] * xs0 + rot[w, a, i, 2] * xs2) + rot[w, a, i, 1] * xs1)
                rows[num_rows, _ROW_G + i] = wt * ((rot[w, b, i, 0] * de0 + rot[w, b, i, 2] * de2)
                                                   + rot[w, b, i, 1] * de1)
                rows[num_rows, _ROW_R + i] = x - com[w, a, i]
                rows[num_rows, _ROW_U + i] = x - com[w, b, i]
            if want_hessian:
                for i in range(3):
                    for j in range(3):
                        rd[i, j] = (rot[w, b, i, 0] * d2e[0, j] + rot[w, b, i, 1] * d2e[1, j]) \
                            + rot[w, b, i, 2] * d2e[2, j]
                for i in range(3):
                    for j in range(3):
                        rows[num_rows, _ROW_H + 3 * i + j] = wt * ((rd[i, 0] * rot[w, b, j, 0]
                                                                    + rd[i, 1] * rot[w, b, j, 1])
                                                                   + rd[i, 2] * rot[w, b, j, 2])
            num_rows += 1
    if state == REACH_RECORD:
        _record_bodies(com, rot, w, reach_ref)
        reach_state[0] = REACH_USE
    return num_rows, e_world


@inner_kernel(_nrt=False)
def _dissipation(bodies, sample, geometry, pair, modes, com0, rot0, d2e):
    """One row's friction and damping (the dissipation potential of contact/friction.py): its energy and its
    gradient's terms in the collider's frame (each added to the penalty's by the caller, so the sums round as when
    written inline), its Hessian added into d2e: the same operations as written inline in `_world_rows`, called
    (numba's inline="always" measured slower). ``bodies`` (w, a, b); ``sample``: its CoM-frame point X,
    its point in the collider's frame Y and (explicit normals) at the stage start Y0; ``geometry``: phi and its
    gradient G now, at the stage start (phi_s, G_s) and the colliding normal N_A; ``pair``: its scalars;
    ``modes``: (explicit, load mode, use_collider_normal, friction model, fitted Hessian, want_hessian)."""
    w, a, b = bodies
    xs0, xs1, xs2, y0, y1, y2, z0, z1, z2 = sample
    phi, gr0, gr1, gr2, phi_s, gs0, gs1, gs2, na0, na1, na2 = geometry
    fade, eps, delta, k, mu, c_t, c_n, width = pair
    explicit, load_mode, use_collider_normal, friction_model, fitted_hessian, want_hessian = modes
    if explicit:  # dp = Y - Y0 with Y0 = M0 X + t0, the stage-start frame's point
        dp0, dp1, dp2 = y0 - z0, y1 - z1, y2 - z2
    else:  # stage-start pullback Y0 = R_B0^T (c_A0 + R_A0 X - c_B0); dp = Y - Y0
        q0 = com0[w, a, 0] + ((rot0[w, a, 0, 0] * xs0 + rot0[w, a, 0, 2] * xs2)
                              + rot0[w, a, 0, 1] * xs1) - com0[w, b, 0]
        q1 = com0[w, a, 1] + ((rot0[w, a, 1, 0] * xs0 + rot0[w, a, 1, 2] * xs2)
                              + rot0[w, a, 1, 1] * xs1) - com0[w, b, 1]
        q2 = com0[w, a, 2] + ((rot0[w, a, 2, 0] * xs0 + rot0[w, a, 2, 2] * xs2)
                              + rot0[w, a, 2, 1] * xs1) - com0[w, b, 2]
        dp0 = y0 - ((rot0[w, b, 0, 0] * q0 + rot0[w, b, 1, 0] * q1) + rot0[w, b, 2, 0] * q2)
        dp1 = y1 - ((rot0[w, b, 0, 1] * q0 + rot0[w, b, 1, 1] * q1) + rot0[w, b, 2, 1] * q2)
        dp2 = y2 - ((rot0[w, b, 0, 2] * q0 + rot0[w, b, 1, 2] * q1) + rot0[w, b, 2, 2] * q2)
    if load_mode == LOAD_RECONSTRUCTED:  # reconstructed stage-start distance d0 = phi - G . dp
        load_phi = phi - ((gr0 * dp0 + gr2 * dp2) + gr1 * dp1)
    else:  # the current distance (implicit), or the stage start's (explicit)
        load_phi = phi_s
    lv, l1, _ = _poly_relu(-load_phi, eps, eps - delta)
    lam = fade * (k * lv * l1)
    # Friction normal: G/|G| (or -N_A where |G| vanishes, or when the pair uses -N_A).
    if use_collider_normal:
        gn = np.sqrt((gs0 * gs0 + gs1 * gs1) + gs2 * gs2)
        if gn < _ZERO_GRADIENT_NORM:
            n0, n1, n2 = -na0, -na1, -na2
        else:
            n0, n1, n2 = gs0 / gn, gs1 / gn, gs2 / gn
    else:
        n0, n1, n2 = -na0, -na1, -na2
    dp_n = (dp0 * n0 + dp2 * n2) + dp1 * n1
    t0, t1, t2 = dp0 - dp_n * n0, dp1 - dp_n * n1, dp2 - dp_n * n2
    slip = np.sqrt((t0 * t0 + t1 * t1) + t2 * t2)
    f, _, f2, f1x = _smoother(friction_model, slip, width)
    e_add = lam * (mu * f + 0.5 * c_t * slip * slip + 0.5 * c_n * dp_n * dp_n)
    tangent = mu * f1x + c_t
    dd0 = lam * (tangent * t0 + (c_n * dp_n) * n0)
    dd1 = lam * (tangent * t1 + (c_n * dp_n) * n1)
    dd2 = lam * (tangent * t2 + (c_n * dp_n) * n2)
    if want_hessian:
        exact_c = 0.0
        if not fitted_hessian and slip > 0.0:
            exact_c = lam * mu * (f2 - f1x) / (slip * slip)
        for i in range(3):
            ni = n0 if i == 0 else (n1 if i == 1 else n2)
            ti = t0 if i == 0 else (t1 if i == 1 else t2)
            for j in range(3):
                nj = n0 if j == 0 else (n1 if j == 1 else n2)
                tj = t0 if j == 0 else (t1 if j == 1 else t2)
                nn = ni * nj
                eye = 1.0 if i == j else 0.0
                d2e[i, j] += lam * (tangent * (eye - nn) + c_n * nn) + exact_c * (ti * tj)
    return e_add, dd0, dd1, dd2


@inner_kernel(_nrt=False)
def _scatter_gradient(w, row_body, rows, num_rows, grad_out):
    """grad_out[w] += the rows' terms: first to every row's A body (+g, lever r), then to its B body (-g, lever u),
    in row order, the order of assemble_rigid_contact's bincount, so that sums of several rows on one body round as
    in the numpy oracle."""
    for side in range(2):
        lever = _ROW_R if side == 0 else _ROW_U
        sign = 1.0 if side == 0 else -1.0
        for q in range(num_rows):
            body = row_body[q, side]
            r0, r1, r2 = rows[q, lever], rows[q, lever + 1], rows[q, lever + 2]
            g0, g1, g2 = sign * rows[q, _ROW_G], sign * rows[q, _ROW_G + 1], sign * rows[q, _ROW_G + 2]
            grad_out[w, body, 0] += g0
            grad_out[w, body, 1] += g1
            grad_out[w, body, 2] += g2
            grad_out[w, body, 3] += r1 * g2 - r2 * g1
            grad_out[w, body, 4] += r2 * g0 - r0 * g2
            grad_out[w, body, 5] += r0 * g1 - r1 * g0


@inner_kernel(_nrt=False)
def _scatter_hessian(w, row_body, rows, num_rows, p_slot, p_flip, hess_out, coupling_out, blk, hj):
    """hess_out[w] += J^T H J of the rows (A bodies, then B bodies, in row order) and coupling_out[w] += the
    coupling block J_A^T H J_B of every row whose pair has a slot (transposed for a flipped pair); returns True
    when some row coupled two dynamic bodies. ``blk`` (1, 1, 6, 6) and ``hj`` (3, 6) are scratch."""
    coupled = False
    for q in range(num_rows):
        p = row_body[q, _ROW_PAIR]
        slot = p_slot[p]
        if slot >= 0:
            coupled = True
            for i in range(6):
                for j in range(6):
                    blk[0, 0, i, j] = 0.0
            _add_jt_h_j(rows, q, _ROW_R, _ROW_U, -1.0, blk, 0, 0, hj)  # H_AB = J_A^T H J_B, J_B = -J(u)
            if p_flip[p]:
                for i in range(6):
                    for j in range(6):
                        coupling_out[w, slot, i, j] += blk[0, 0, j, i]
            else:
                for i in range(6):
                    for j in range(6):
                        coupling_out[w, slot, i, j] += blk[0, 0, i, j]
    for side in range(2):
        lever = _ROW_R if side == 0 else _ROW_U
        for q in range(num_rows):
            _add_jt_h_j(rows, q, lever, lever, 1.0, hess_out, w, row_body[q, side], hj)
    return coupled


@inner_kernel
def contact_max_rows(p_colliding, s_count):
    """The most rows one world can have: every sample of every pair's colliding body."""
    max_rows = 0
    for p in range(p_colliding.shape[0]):
        max_rows += s_count[p_colliding[p]]
    return max_rows


@kernel
def contact_terms(samples, pairs, colliders, config, com, rot, com0, rot0, stage_dt, want_hessian, energy_out,
                  grad_out, hess_out, coupling_out):
    """Add every world's contact terms into energy_out (W,), grad_out (W, N, 6), hess_out (W, N, 6, 6) and the
    coupling blocks coupling_out (W, S, 6, 6) of the pairs' slots; returns True when some row coupled two
    dynamic bodies (the caller then passes the blocks to the solver). Per world: its rows (`_world_rows`, which
    names the groups), then their gradient and Hessian scattered to the bodies.

    Its loops read the arguments element by element into scalars, with no array views and no scratch array per
    pair or sample, and its helpers are compiled without NRT: each view, or array argument of a helper with NRT,
    costs reference-count updates (an atomic increment and decrement each), which took a third of its time."""
    coupled = False
    blk = np.empty((1, 1, 6, 6))
    hj = np.empty((3, 6))
    scratch = (np.empty((3, 3)), np.empty((3, 3)), np.empty((8, 3)), np.empty(_CP_SIZE))
    p_colliding, p_slot, p_flip = pairs[0], pairs[19], pairs[20]
    max_rows = contact_max_rows(p_colliding, samples[4])
    row_body = np.empty((max_rows, 3), np.int64)
    rows = np.empty((max_rows, _ROW_SIZE))
    no_reach = np.empty((0, _RP_SIZE))
    reach = (np.full(1, REACH_OFF, np.int64), no_reach, no_reach, no_reach)
    for w in range(com.shape[0]):
        num_rows, e_world = _world_rows(w, samples, pairs, colliders, config, com, rot, com0, rot0, stage_dt,
                                        want_hessian, row_body, rows, scratch, reach)
        _scatter_gradient(w, row_body, rows, num_rows, grad_out)
        if want_hessian and _scatter_hessian(w, row_body, rows, num_rows, p_slot, p_flip, hess_out, coupling_out,
                                             blk, hj):
            coupled = True
        energy_out[w] += e_world
    return coupled


# The two below are called by address from newton_stage (their C wrappers), never from Python, with their scratch
# passed in, so that they allocate nothing and are compiled without NRT: with it, every call increfs and decrefs
# each of its ~55 array arguments (measured: a fifth of a Push world's Newton time went to those).
@kernel(no_cpython_wrapper=True, _nrt=False)
def contact_rows(samples, pairs, colliders, config, com, rot, com0, rot0, stage_dt, want_hessian, energy_out, grad_out,
                 row_out, scratch, reach):
    """`contact_terms` of one world (leading axis 1) without the Hessian assembly: adds the energy and gradient into
    energy_out (1,) and grad_out (1, N, 6) and leaves the world's rows in ``row_out`` (row_body (R, 3), rows
    (R, _ROW_SIZE), R = `contact_max_rows`, and their count num_rows (1,)), with their world Hessians when
    want_hessian, for `contact_hessian_from_rows`. The compiled Newton assembles the Hessian only where it takes a
    step, not at the iterate it stops on nor at a rejected line-search trial. ``scratch`` and ``reach``: as
    `_world_rows` names them (reach_state (1,) int, set to contact_geometry.REACH_RECORD at a solve's first
    evaluation; the other reach arrays are work kept between the calls)."""
    row_body, rows, num_rows = row_out
    count, e_world = _world_rows(0, samples, pairs, colliders, config, com, rot, com0, rot0, stage_dt, want_hessian,
                                 row_body, rows, scratch, reach)
    _scatter_gradient(0, row_body, rows, count, grad_out)
    energy_out[0] += e_world
    num_rows[0] = count


@kernel(no_cpython_wrapper=True, _nrt=False)
def contact_hessian_from_rows(row_body, rows, num_rows, p_slot, p_flip, hess_out, coupling_out, blk, hj):
    """The Hessian part of `contact_terms` from the rows `contact_rows` left (computed with want_hessian): adds into
    hess_out (1, N, 6, 6) and coupling_out (1, S, 6, 6); returns True when some row coupled two dynamic bodies.
    ``blk`` (1, 1, 6, 6) and ``hj`` (3, 6) are scratch."""
    return _scatter_hessian(0, row_body, rows, num_rows[0], p_slot, p_flip, hess_out, coupling_out, blk, hj)
