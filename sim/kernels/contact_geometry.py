"""The contact kernels' geometry: the broad phase of a (world, pair), a sample in the collider's frame, and the
collider SDFs (plane, sphere, box, trilinear grid, exact triangle mesh in sim/kernels/mesh.py) with their gradients,
as NRT-free helpers on scalars and whole arrays (sim/kernels/contact.py and depth.py call them per pair and per
sample; sim/contact/colliders.py, grid_sdf.py and mesh_distance.py hold the formulas and the numpy oracles).

No array views and no scratch array per pair or sample, and no NRT: each view, or array argument of a helper
compiled with NRT, costs reference-count updates (atomic increments and decrements), which took a third of the
contact kernel's time (docs/engine.md, "Solver paths").

The per-sample and per-pair helpers are inlined into their callers by numba (``inline="always"``): LLVM left them
as calls, each passing its arrays as a dozen machine words, and inlining them (with `contact._poly_relu`,
`_smoother` and `_add_jt_h_j`) took the aligned 5-box stack's Newton from ~35 to ~31 us per world-stage and Push's
from ~15.9 to ~14.3 (replayed, same bits) for ~1 s more CPU of cold compile (the contact kernel's child process).
The Newton's buffer helpers are not: inlined at their many call sites they doubled newton_stage's compile.
"""

from __future__ import annotations

import numpy as np

from ..jit import inner_kernel
from .mesh import MESH, call_mesh_sdf

PLANE, SPHERE, BOX, GRID = 0, 1, 2, 3  # collider kinds, with MESH = 4 (kernels/mesh.py)


@inner_kernel(_nrt=False, inline="always")
def _grid_axis(y, lo, hi, cell, n):
    """Per axis: (clamped - y offset outside the box, cell index, local coordinate in [0, 1])."""
    clamped = min(max(y, lo), hi)
    u = (clamped - lo) / cell
    base = min(max(np.int64(np.floor(u)), 0), n - 2)
    return y - clamped, base, min(max(u - base, 0.0), 1.0)


# A pair's collider parameters, gathered once per pair into a vector (`_collider_params`) so that the per-sample
# SDF is passed two arrays instead of the thirteen collider arrays (each array argument is several machine words).
# PLANE: normal, offset; SPHERE: center, radius; BOX: center, rotation (row-major), half extents; GRID: grid_min,
# grid_max, grid_cell, grid_dims, grid_start (integers, exact as float64); MESH: its start in the float table, its
# triangle count and `mesh.mesh_sdf`'s address (grid_start, grid_dims[:2]: ContactColliderArrays), then scratch for
# mesh_sdf's results (cp[3:7]).
_CP_SIZE = 15


@inner_kernel(_nrt=False)
def _collider_params(cl, kind, c_normal, c_offset, c_center, c_radius, c_rotation, c_half_extents, c_grid_start,
                     c_grid_dims, c_grid_min, c_grid_max, c_grid_cell, cp):
    """cp (_CP_SIZE,): the parameters of collider ``cl`` that `_sdf_of` reads for its kind."""
    if kind == GRID:
        for i in range(3):
            cp[i] = c_grid_min[cl, i]
            cp[3 + i] = c_grid_max[cl, i]
            cp[6 + i] = c_grid_cell[cl, i]
            cp[9 + i] = c_grid_dims[cl, i]
        cp[12] = c_grid_start[cl]
    elif kind == MESH:
        cp[0] = c_grid_start[cl]
        cp[1] = c_grid_dims[cl, 0]
        cp[2] = c_grid_dims[cl, 1]
    elif kind == PLANE:
        for i in range(3):
            cp[i] = c_normal[cl, i]
        cp[3] = c_offset[cl]
    elif kind == SPHERE:
        for i in range(3):
            cp[i] = c_center[cl, i]
        cp[3] = c_radius[cl]
    else:
        for i in range(3):
            cp[i] = c_center[cl, i]
            cp[12 + i] = c_half_extents[cl, i]
            for j in range(3):
                cp[3 + 3 * i + j] = c_rotation[cl, i, j]


@inner_kernel(_nrt=False, inline="always")
def _grid_sdf(y0, y1, y2, v, cp, want_grad):
    """`GridSdfCollider.evaluate` at (y0, y1, y2) (the grid's parameters in cp, `_collider_params`): (phi, dphi/dy)
    as four scalars, the trilinear value (+ the distance to the grid box outside it) and, when asked (else zero),
    the gradient of the interpolant, the outward unit vector on the axes where the point lies outside the box."""
    o0, b0, t0 = _grid_axis(y0, cp[0], cp[3], cp[6], np.int64(cp[9]))
    o1, b1, t1 = _grid_axis(y1, cp[1], cp[4], cp[7], np.int64(cp[10]))
    o2, b2, t2 = _grid_axis(y2, cp[2], cp[5], cp[8], np.int64(cp[11]))
    out_dist = np.sqrt((o0 * o0 + o1 * o1) + o2 * o2)
    ny, nz = np.int64(cp[10]), np.int64(cp[11])
    i0 = np.int64(cp[12]) + (b0 * ny + b1) * nz + b2
    sx = ny * nz  # corner (a, b, c) at i0 + a sx + b nz + c
    c000, c001, c010, c011 = v[i0], v[i0 + 1], v[i0 + nz], v[i0 + nz + 1]
    c100, c101, c110, c111 = v[i0 + sx], v[i0 + sx + 1], v[i0 + sx + nz], v[i0 + sx + nz + 1]
    # Successive lerps in x, y, z (v0 + (v1 - v0) s); a derivative replaces a lerp by a difference / cell.
    cx00, cx01 = c000 + (c100 - c000) * t0, c001 + (c101 - c001) * t0
    cx10, cx11 = c010 + (c110 - c010) * t0, c011 + (c111 - c011) * t0
    cxy0 = cx00 + (cx10 - cx00) * t1
    cxy1 = cx01 + (cx11 - cx01) * t1
    value = cxy0 + (cxy1 - cxy0) * t2
    if not want_grad:
        return value + out_dist, 0.0, 0.0, 0.0
    d00, d01 = (c100 - c000) / cp[6], (c101 - c001) / cp[6]
    d10, d11 = (c110 - c010) / cp[6], (c111 - c011) / cp[6]
    gx0 = d00 + (d10 - d00) * t1
    gx1 = d01 + (d11 - d01) * t1
    dy0 = (cx10 - cx00) / cp[7]
    dy1 = (cx11 - cx01) / cp[7]
    safe = out_dist if out_dist > 0.0 else 1.0
    g0 = o0 / safe if o0 != 0.0 else gx0 + (gx1 - gx0) * t2
    g1 = o1 / safe if o1 != 0.0 else dy0 + (dy1 - dy0) * t2
    g2 = o2 / safe if o2 != 0.0 else (cxy1 - cxy0) / cp[8]
    return value + out_dist, g0, g1, g2


@inner_kernel(_nrt=False, inline="always")
def _sdf_of(kind, y0, y1, y2, want_grad, cp, g_values):
    """(phi, dphi/dy) of a collider at the collider-frame point (y0, y1, y2) as four scalars (the gradient raw,
    not normalized, and zero unless asked); cp its parameters (`_collider_params`), g_values every grid's values and
    every mesh's triangles. A mesh's distance is a loop over its triangles, called by address (kernels/mesh.py)."""
    if kind == GRID:
        return _grid_sdf(y0, y1, y2, g_values, cp, want_grad)
    if kind == MESH:
        address = np.int64(cp[2])
        if address == 0:  # never written (`ContactPotential` writes it): no call to address 0
            return np.nan, 0.0, 0.0, 0.0
        call_mesh_sdf(address, y0, y1, y2, want_grad != 0, g_values, np.int64(cp[0]), np.int64(cp[1]), cp,
                      np.int64(3))
        return cp[3], cp[4], cp[5], cp[6]
    if kind == PLANE:
        n0, n1, n2 = cp[0], cp[1], cp[2]
        phi = (y0 * n0 + y1 * n1) + y2 * n2 - cp[3]
        if want_grad:
            return phi, n0, n1, n2
        return phi, 0.0, 0.0, 0.0
    if kind == SPHERE:
        d0, d1, d2 = y0 - cp[0], y1 - cp[1], y2 - cp[2]
        dist = np.sqrt((d0 * d0 + d1 * d1) + d2 * d2)
        phi = dist - cp[3]
        if not want_grad:
            return phi, 0.0, 0.0, 0.0
        if dist <= 0.0:
            return phi, 0.0, 1.0, 0.0
        return phi, d0 / dist, d1 / dist, d2 / dist
    # BOX: local_j = sum_i d_i R_ij; q = |local| - e; phi = |max(q, 0)| + min(max_j q_j, 0)
    d0, d1, d2 = y0 - cp[0], y1 - cp[1], y2 - cp[2]
    l0 = (d0 * cp[3] + d1 * cp[6]) + d2 * cp[9]
    l1 = (d0 * cp[4] + d1 * cp[7]) + d2 * cp[10]
    l2 = (d0 * cp[5] + d1 * cp[8]) + d2 * cp[11]
    q0, q1, q2 = abs(l0) - cp[12], abs(l1) - cp[13], abs(l2) - cp[14]
    p0, p1, p2 = max(q0, 0.0), max(q1, 0.0), max(q2, 0.0)
    out = np.sqrt((p0 * p0 + p1 * p1) + p2 * p2)
    q_max = max(max(q0, q1), q2)
    phi = out + min(q_max, 0.0)
    if not want_grad:
        return phi, 0.0, 0.0, 0.0
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
    return (phi, (cp[3] * g0 + cp[4] * g1) + cp[5] * g2, (cp[6] * g0 + cp[7] * g1) + cp[8] * g2,
            (cp[9] * g0 + cp[10] * g1) + cp[11] * g2)


@inner_kernel(_nrt=False, inline="always")
def _pair_gap(com, rot, w, a, b, p, cl, kind, p_sphere_center, p_sphere_radius, p_bound_is_half, p_bound_vector,
              p_bound_scalar, c_center, c_rotation, c_half_extents, want_distance):
    """Broad phase of pair p in world w: (gap, distance), the gap between the colliding body's sample sphere,
    centred in B's frame at y, and the collider's bound (the exact SDF for boxes; for a mesh the bounding sphere of
    its AABB, `MeshCollider.bound`, as in numpy's broad phase), and |y| (with want_distance, else 0). The pair is in
    reach when gap <= reach (`_pair_in_reach`). Indexed element by element, without array
    views: every (world, pair) passes here, and a view's reference counting cost ~0.7 us per pair, most of a
    world's contact time when few pairs touch."""
    sc0, sc1, sc2 = p_sphere_center[p, 0], p_sphere_center[p, 1], p_sphere_center[p, 2]
    x0 = com[w, a, 0] + ((rot[w, a, 0, 0] * sc0 + rot[w, a, 0, 2] * sc2) + rot[w, a, 0, 1] * sc1) - com[w, b, 0]
    x1 = com[w, a, 1] + ((rot[w, a, 1, 0] * sc0 + rot[w, a, 1, 2] * sc2) + rot[w, a, 1, 1] * sc1) - com[w, b, 1]
    x2 = com[w, a, 2] + ((rot[w, a, 2, 0] * sc0 + rot[w, a, 2, 2] * sc2) + rot[w, a, 2, 1] * sc1) - com[w, b, 2]
    y0 = (rot[w, b, 0, 0] * x0 + rot[w, b, 1, 0] * x1) + rot[w, b, 2, 0] * x2
    y1 = (rot[w, b, 0, 1] * x0 + rot[w, b, 1, 1] * x1) + rot[w, b, 2, 1] * x2
    y2 = (rot[w, b, 0, 2] * x0 + rot[w, b, 1, 2] * x1) + rot[w, b, 2, 2] * x2
    if kind == BOX:  # _sdf_of's BOX distance
        d0, d1, d2 = y0 - c_center[cl, 0], y1 - c_center[cl, 1], y2 - c_center[cl, 2]
        l0 = (d0 * c_rotation[cl, 0, 0] + d1 * c_rotation[cl, 1, 0]) + d2 * c_rotation[cl, 2, 0]
        l1 = (d0 * c_rotation[cl, 0, 1] + d1 * c_rotation[cl, 1, 1]) + d2 * c_rotation[cl, 2, 1]
        l2 = (d0 * c_rotation[cl, 0, 2] + d1 * c_rotation[cl, 1, 2]) + d2 * c_rotation[cl, 2, 2]
        q0 = abs(l0) - c_half_extents[cl, 0]
        q1 = abs(l1) - c_half_extents[cl, 1]
        q2 = abs(l2) - c_half_extents[cl, 2]
        e0, e1, e2 = max(q0, 0.0), max(q1, 0.0), max(q2, 0.0)
        lb = np.sqrt((e0 * e0 + e1 * e1) + e2 * e2) + min(max(max(q0, q1), q2), 0.0)
    elif p_bound_is_half[p]:
        lb = (y0 * p_bound_vector[p, 0] + y2 * p_bound_vector[p, 2]) + y1 * p_bound_vector[p, 1] \
            - p_bound_scalar[p]
    else:
        d0, d1, d2 = y0 - p_bound_vector[p, 0], y1 - p_bound_vector[p, 1], y2 - p_bound_vector[p, 2]
        lb = np.sqrt((d0 * d0 + d1 * d1) + d2 * d2) - p_bound_scalar[p]
    distance = np.sqrt((y0 * y0 + y1 * y1) + y2 * y2) if want_distance else 0.0
    return lb - p_sphere_radius[p], distance


@inner_kernel(_nrt=False)
def _pair_in_reach(com, rot, w, a, b, p, cl, kind, p_sphere_center, p_sphere_radius, p_reach, p_bound_is_half,
                   p_bound_vector, p_bound_scalar, c_center, c_rotation, c_half_extents):
    """Whether pair p of world w passes the broad phase (`_pair_gap`)."""
    gap, _ = _pair_gap(com, rot, w, a, b, p, cl, kind, p_sphere_center, p_sphere_radius, p_bound_is_half,
                       p_bound_vector, p_bound_scalar, c_center, c_rotation, c_half_extents, False)
    return gap <= p_reach[p]


# The broad phase between the evaluations of one Newton solve (contact_rows, once per world and evaluation): the
# first evaluation of a world's solve tests every pair and records, per pair, how far out of reach it was
# (margin = gap - reach), the bound's Lipschitz constant in y and |y|, and per body its pose. A later evaluation
# skips a pair without testing it when the bodies have not moved enough since to close that margin:
#     |y - y_ref| <= |c_A - c_A'| + ||R_A - R_A'|| |s| + |c_B - c_B'| + ||R_B - R_B'|| |y_ref|
# (y = R_B^T (c_A + R_A s - c_B), s the sphere's centre in A's frame; Frobenius norms), and the gap changes by at
# most L |y - y_ref|. The test demands margin > L move (1 + 1e-9) + slack, slack 1e-8 (1 + the magnitudes involved),
# orders of magnitude above the round-off of the exact test, so a skipped pair is one the exact test would have
# dropped: the same rows, the same bits (tests/test_kernels.py). NaN poses are never skipped. Push-v0 tests ~30 pairs
# per evaluation with ~1.25 in reach: the test was ~12% of its Newton time.
_RP_MARGIN, _RP_LIPSCHITZ, _RP_DISTANCE, _RP_CENTRE, _RP_SLACK, _RP_SIZE = 0, 1, 2, 3, 4, 5  # columns of reach_pair
REACH_OFF, REACH_RECORD, REACH_USE = -1, 0, 1  # reach_state[0]: no skipping / record this evaluation / skip


@inner_kernel(_nrt=False)
def _record_pair(p, cl, kind, gap, distance, com, w, a, b, p_reach, p_sphere_center, p_bound_is_half,
                 p_bound_vector, c_rotation, reach_pair):
    """reach_pair[p] (_RP_SIZE,) from the exact test's gap and |y| at the reference pose."""
    if kind == BOX:  # l = Q^T d: ||Q||_2^2 <= the largest absolute row sum of Q^T Q (Gershgorin)
        largest = 0.0
        for i in range(3):
            row = 0.0
            for j in range(3):
                qtq = (c_rotation[cl, 0, i] * c_rotation[cl, 0, j] + c_rotation[cl, 1, i] * c_rotation[cl, 1, j]) \
                    + c_rotation[cl, 2, i] * c_rotation[cl, 2, j]
                row += abs(qtq)
            largest = max(largest, row)
        lipschitz = np.sqrt(largest)
    elif p_bound_is_half[p]:  # y . v - s
        v0, v1, v2 = p_bound_vector[p, 0], p_bound_vector[p, 1], p_bound_vector[p, 2]
        lipschitz = np.sqrt((v0 * v0 + v1 * v1) + v2 * v2)
    else:  # |y - centre| - s
        lipschitz = 1.0
    s0, s1, s2 = p_sphere_center[p, 0], p_sphere_center[p, 1], p_sphere_center[p, 2]
    centre = np.sqrt((s0 * s0 + s1 * s1) + s2 * s2)
    magnitude = 0.0
    for i in range(3):
        magnitude += abs(com[w, a, i]) + abs(com[w, b, i])
    reach_pair[p, _RP_MARGIN] = gap - p_reach[p]
    reach_pair[p, _RP_LIPSCHITZ] = lipschitz
    reach_pair[p, _RP_DISTANCE] = distance
    reach_pair[p, _RP_CENTRE] = centre
    reach_pair[p, _RP_SLACK] = 1e-8 * ((((1.0 + distance) + centre) + abs(gap)) + magnitude)


@inner_kernel(_nrt=False)
def _record_bodies(com, rot, w, reach_ref):
    """reach_ref (N, 12): every body's pose at the reference evaluation (c, then R row-major)."""
    for n in range(com.shape[1]):
        for i in range(3):
            reach_ref[n, i] = com[w, n, i]
            for j in range(3):
                reach_ref[n, 3 + 3 * i + j] = rot[w, n, i, j]


@inner_kernel(_nrt=False)
def _body_moves(com, rot, w, reach_ref, reach_move):
    """reach_move (N, 2): per body |c - c_ref| and ||R - R_ref||_F."""
    for n in range(com.shape[1]):
        dc = 0.0
        for i in range(3):
            d = com[w, n, i] - reach_ref[n, i]
            dc += d * d
        dr = 0.0
        for i in range(3):
            for j in range(3):
                d = rot[w, n, i, j] - reach_ref[n, 3 + 3 * i + j]
                dr += d * d
        reach_move[n, 0] = np.sqrt(dc)
        reach_move[n, 1] = np.sqrt(dr)


@inner_kernel(_nrt=False, inline="always")
def _out_of_reach_since(p, a, b, reach_pair, reach_move):
    """True when pair p (bodies a, b) is provably still out of reach (the comment above)."""
    move = ((reach_move[a, 0] + reach_move[a, 1] * reach_pair[p, _RP_CENTRE]) + reach_move[b, 0]) \
        + reach_move[b, 1] * reach_pair[p, _RP_DISTANCE]
    bound = reach_pair[p, _RP_LIPSCHITZ] * move * (1.0 + 1e-9) + reach_pair[p, _RP_SLACK]
    return reach_pair[p, _RP_MARGIN] > bound


@inner_kernel(_nrt=False)
def _pair_frame(com, rot, w, a, b, frame, at=0):
    """frame (at + 4, 3): rows at .. at + 2 M = R_B^T R_A, row at + 3 t = R_B^T (c_A - c_B), so that a sample X of
    body A lies at Y = M X + t in B's frame (per pair, the oracle's grouping and rounding)."""
    for i in range(3):
        frame[at + 3, i] = (rot[w, b, 0, i] * (com[w, a, 0] - com[w, b, 0])
                            + rot[w, b, 1, i] * (com[w, a, 1] - com[w, b, 1])) \
            + rot[w, b, 2, i] * (com[w, a, 2] - com[w, b, 2])
        for j in range(3):
            frame[at + i, j] = (rot[w, b, 0, i] * rot[w, a, 0, j] + rot[w, b, 1, i] * rot[w, a, 1, j]) \
                + rot[w, b, 2, i] * rot[w, a, 2, j]


@inner_kernel(_nrt=False, inline="always")
def _sample_in_frame(points, s, frame, kind, p, p_bound_vector, p_bound_scalar, p_reach, at=0):
    """Sample s of the colliding body in the collider's frame, Y = M X + t (`_pair_frame`'s rows from ``at``; the
    oracle's grouping): (kept, y0, y1, y2), kept False when a grid or mesh collider's bounding sphere culls it, as
    the numpy broad phase does for both (its GENERIC colliders)."""
    xs0, xs1, xs2 = points[s, 0], points[s, 1], points[s, 2]
    y0 = ((frame[at, 0] * xs0 + frame[at, 2] * xs2) + frame[at, 1] * xs1) + frame[at + 3, 0]
    y1 = ((frame[at + 1, 0] * xs0 + frame[at + 1, 2] * xs2) + frame[at + 1, 1] * xs1) + frame[at + 3, 1]
    y2 = ((frame[at + 2, 0] * xs0 + frame[at + 2, 2] * xs2) + frame[at + 2, 1] * xs1) + frame[at + 3, 2]
    if kind == GRID or kind == MESH:
        d0, d1, d2 = y0 - p_bound_vector[p, 0], y1 - p_bound_vector[p, 1], y2 - p_bound_vector[p, 2]
        return np.sqrt((d0 * d0 + d1 * d1) + d2 * d2) - p_bound_scalar[p] <= p_reach[p], y0, y1, y2
    return True, y0, y1, y2
