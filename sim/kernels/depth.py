"""Each body's deepest contact sample at a pose, as one kernel (`ContactPotential.penetration_depth`, the numpy
oracle): the contact kernels' broad phase and collider SDFs (sim/kernels/contact_geometry.py; an exact mesh's by
address, sim/kernels/mesh.py), distances only.

The Newton start ``CONSTANT_VELOCITY_AND_TARGETS_OUTSIDE`` asks it once per stage (twice where a body goes deep),
which in numpy cost as much as a third of a grasping step.
"""

from __future__ import annotations

import numpy as np

from ..jit import kernel
from .contact_geometry import _CP_SIZE, _collider_params, _pair_frame, _pair_in_reach, _sample_in_frame, _sdf_of


@kernel
def contact_depth(
        s_points, s_start, s_count, p_colliding, p_collider, p_collider_index, p_eps, p_delta, p_reach,
        p_sphere_center, p_sphere_radius, p_bound_is_half, p_bound_vector, p_bound_scalar, c_kind, c_center,
        c_half_extents, c_rotation, c_radius, c_normal, c_offset, c_grid_values, c_grid_start, c_grid_dims,
        c_grid_min, c_grid_max, c_grid_cell, com, rot, depth_out):
    """depth_out (W, N), zeroed by the caller: the largest (delta - phi) / (2 eps) over each body's active
    samples (a pair's excess counts for both its bodies; inf for a pair without a ramp)."""
    frame = np.empty((4, 3))
    cp = np.empty(_CP_SIZE)
    for w in range(com.shape[0]):
        for p in range(p_colliding.shape[0]):
            a, b, cl = p_colliding[p], p_collider[p], p_collider_index[p]
            kind = c_kind[cl]
            if not _pair_in_reach(com, rot, w, a, b, p, cl, kind, p_sphere_center, p_sphere_radius, p_reach,
                                  p_bound_is_half, p_bound_vector, p_bound_scalar, c_center, c_rotation,
                                  c_half_extents):
                continue
            _pair_frame(com, rot, w, a, b, frame)
            _collider_params(cl, kind, c_normal, c_offset, c_center, c_radius, c_rotation, c_half_extents,
                             c_grid_start, c_grid_dims, c_grid_min, c_grid_max, c_grid_cell, cp)
            delta, ramp = p_delta[p], 2.0 * p_eps[p]
            deepest = 0.0
            s0 = s_start[a]
            for s in range(s0, s0 + s_count[a]):
                kept, y0, y1, y2 = _sample_in_frame(s_points, s, frame, kind, p, p_bound_vector, p_bound_scalar,
                                                    p_reach)
                if not kept:
                    continue
                phi, _, _, _ = _sdf_of(kind, y0, y1, y2, False, cp, c_grid_values)
                excess = delta - phi
                if excess > 0.0:
                    d = excess / ramp if ramp > 0.0 else np.inf
                    if d > deepest:
                        deepest = d
            if deepest > depth_out[w, a]:
                depth_out[w, a] = deepest
            if deepest > depth_out[w, b]:
                depth_out[w, b] = deepest
