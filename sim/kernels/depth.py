"""Each body's deepest contact sample at a pose, as one kernel (`ContactPotential.penetration_depth`, the numpy
oracle): the contact kernel's broad phase and collider SDFs (sim/kernels/contact.py), distances only.

The Newton start ``CONSTANT_VELOCITY_AND_TARGETS_OUTSIDE`` asks it once per stage (twice where a body goes deep),
which in numpy cost as much as a third of a grasping step.
"""

from __future__ import annotations

import numpy as np

from ..jit import kernel
from .contact import _pair_in_reach, _sample_in_frame, _sdf_of


@kernel
def contact_depth(
        s_points, s_start, s_count, p_colliding, p_collider, p_collider_index, p_eps, p_delta, p_reach,
        p_sphere_center, p_sphere_radius, p_bound_is_half, p_bound_vector, p_bound_scalar, c_kind, c_center,
        c_half_extents, c_rotation, c_radius, c_normal, c_offset, c_grid_values, c_grid_start, c_grid_dims,
        c_grid_min, c_grid_max, c_grid_cell, com, rot, depth_out):
    """depth_out (W, N), zeroed by the caller: the largest (delta - phi) / (2 eps) over each body's active
    samples (a pair's excess counts for both its bodies; inf for a pair without a ramp)."""
    y = np.empty(3)
    x = np.empty(3)
    grad = np.empty(3)
    m_ab = np.empty((3, 3))
    t_ab = np.empty(3)
    for w in range(com.shape[0]):
        for p in range(p_colliding.shape[0]):
            a, b, cl = p_colliding[p], p_collider[p], p_collider_index[p]
            kind = c_kind[cl]
            if not _pair_in_reach(com, rot, w, a, b, p, cl, kind, p_sphere_center, p_sphere_radius, p_reach,
                                  p_bound_is_half, p_bound_vector, p_bound_scalar, c_center, c_rotation,
                                  c_half_extents, x, y):
                continue
            reach = p_reach[p]
            ra, rb = rot[w, a], rot[w, b]
            for i in range(3):
                t_ab[i] = (rb[0, i] * (com[w, a, 0] - com[w, b, 0]) + rb[1, i] * (com[w, a, 1] - com[w, b, 1])) \
                    + rb[2, i] * (com[w, a, 2] - com[w, b, 2])
                for j in range(3):
                    m_ab[i, j] = (rb[0, i] * ra[0, j] + rb[1, i] * ra[1, j]) + rb[2, i] * ra[2, j]
            delta, ramp = p_delta[p], 2.0 * p_eps[p]
            bv, b_scalar = p_bound_vector[p], p_bound_scalar[p]
            # The collider's parameters as views taken once per pair: a view per sample costs ~0.7 us each.
            col_n, c_off, c_c, c_r = c_normal[cl], c_offset[cl], c_center[cl], c_radius[cl]
            c_rot, c_e, g_start, g_dims = c_rotation[cl], c_half_extents[cl], c_grid_start[cl], c_grid_dims[cl]
            g_min, g_max, g_cell = c_grid_min[cl], c_grid_max[cl], c_grid_cell[cl]
            deepest = 0.0
            s0 = s_start[a]
            for s in range(s0, s0 + s_count[a]):
                if not _sample_in_frame(s_points, s, m_ab, t_ab, kind, bv, b_scalar, reach, y):
                    continue
                phi = _sdf_of(kind, y, grad, False, col_n, c_off, c_c, c_r, c_rot, c_e, c_grid_values, g_start,
                              g_dims, g_min, g_max, g_cell)
                excess = delta - phi
                if excess > 0.0:
                    d = excess / ramp if ramp > 0.0 else np.inf
                    if d > deepest:
                        deepest = d
            if deepest > depth_out[w, a]:
                depth_out[w, a] = deepest
            if deepest > depth_out[w, b]:
                depth_out[w, b] = deepest
