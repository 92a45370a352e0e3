"""Grid SDF collider (ColliderType.SDF): trilinear interpolation of signed distances sampled at voxel corners.

Layout (digest 6.1, our documented choice for the reference's ambiguous comment): ``values`` has shape
(nx, ny, nz), sample (i, j, k) sits at ``bounds_min + (i, j, k) * cell``, ``cell = (bounds_max - bounds_min) /
(dims - 1)``, so sample (0, 0, 0) is at ``bounds_min`` and (n-1) at ``bounds_max``; flattened in C order the
offset is ``(i * ny + j) * nz + k`` (x slowest, z fastest).

Outside the grid box the field returns the upper bound ``phi_grid(clamp(y)) + |y - clamp(y)|`` (the distance
is 1-Lipschitz, so the true distance is at most the boundary value plus the distance to the box; the reference
also returns an upper bound there). Its gradient is the exact gradient of that expression: the trilinear
gradient in the unclamped axes and the unit outward vector in the clamped ones.

Inside a cell the interpolant is linear along each axis, so its Hessian has a zero diagonal and the mixed terms
d^2 phi / dy_a dy_b of the bilinear corner differences; the field is only C^0 across cell faces.

Build (``build_grid_sdf``, reference ``GridSdf::Initialize``): reference length by ``resolution_mode`` (AABB
dims or mesh edge lengths, or EXPLICIT metres), max voxel = ``resolution_delta * reference`` per axis, bounds =
mesh AABB + padding (+ a relative float64 epsilon so that the mesh is strictly inside), cells per axis =
``ceil(size / max_voxel)`` clamped below by ``min_grid_resolution``, samples = cells + 1, values = exact signed
distance to the mesh (``mesh_distance.py``). For rigid actors the padding is the contact threshold
(``rigid_actor_sdf_padding``), not ``boundary_padding_dist`` (digest 5.2).
"""

from __future__ import annotations

import math

import numpy as np

from .mesh_distance import check_triangle_mesh, is_closed_mesh, mesh_edges, signed_distance_to_mesh
from .params import ContactParams, GridSdfParams, SdfResolutionMode
from .sdf_values import SdfBound, SdfValues, as_points, lower_bound_from_bound

__all__ = ["GridSdfCollider", "build_grid_sdf", "rigid_actor_sdf_padding", "grid_sdf_resolution"]

_MAX_GRID_SAMPLES = 50_000_000


class GridSdfCollider:
    """Trilinear grid SDF. ``values`` (nx, ny, nz) [m]; ``negative_value_bounds`` = (min, max) of the surface
    (the mesh AABB), used for the broad-phase sphere; defaults to the grid box."""

    def __init__(self, values, bounds_min, bounds_max, negative_value_bounds=None, is_mesh_closed: bool = True):
        vals = np.asarray(values, dtype=np.float64)
        if vals.ndim != 3 or min(vals.shape) < 2:
            raise ValueError(f"GridSdfCollider: values must have shape (nx, ny, nz), every n >= 2; got {vals.shape}")
        if not np.all(np.isfinite(vals)):
            raise ValueError("GridSdfCollider: values must be finite")
        lo = np.asarray(bounds_min, dtype=np.float64).reshape(3)
        hi = np.asarray(bounds_max, dtype=np.float64).reshape(3)
        if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi)) and np.all(hi > lo)):
            raise ValueError(f"GridSdfCollider: need finite bounds with max > min, got {lo}, {hi}")
        self.values = vals
        self.bounds_min, self.bounds_max = lo, hi
        self.dims = np.array(vals.shape, dtype=np.int64)
        self.cell_m = (hi - lo) / (self.dims - 1)
        if negative_value_bounds is None:
            neg_lo, neg_hi = lo, hi
        else:
            neg_lo = np.asarray(negative_value_bounds[0], dtype=np.float64).reshape(3)
            neg_hi = np.asarray(negative_value_bounds[1], dtype=np.float64).reshape(3)
        self.negative_value_bounds = (neg_lo, neg_hi)
        self.is_mesh_closed = bool(is_mesh_closed)
        self.bound = SdfBound(
            is_halfspace=False, vector=0.5 * (neg_lo + neg_hi), scalar=float(0.5 * np.linalg.norm(neg_hi - neg_lo))
        )

    @staticmethod
    def from_flat(dims, values, bounds_min, bounds_max, negative_value_bounds=None) -> "GridSdfCollider":
        """From the ``.mochi.json`` layout: ``dims`` (nx, ny, nz) and flat ``values`` (x slowest, z fastest)."""
        dims = tuple(int(d) for d in dims)
        flat = np.asarray(values, dtype=np.float64).ravel()
        if len(dims) != 3 or flat.size != dims[0] * dims[1] * dims[2]:
            raise ValueError(f"GridSdfCollider.from_flat: {flat.size} values do not fill dims {dims}")
        return GridSdfCollider(flat.reshape(dims), bounds_min, bounds_max, negative_value_bounds)

    def translated(self, offset) -> "GridSdfCollider":
        off = np.asarray(offset, dtype=np.float64).reshape(3)
        neg = tuple(b + off for b in self.negative_value_bounds)
        return GridSdfCollider(self.values, self.bounds_min + off, self.bounds_max + off, neg, self.is_mesh_closed)

    def distance_lower_bound(self, points) -> np.ndarray:
        return lower_bound_from_bound(self.bound, as_points(points))

    def evaluate(self, points, want_hessian: bool = False) -> SdfValues:
        y = as_points(points)
        shape = y.shape[:-1]
        y = y.reshape(-1, 3)
        clamped = np.clip(y, self.bounds_min, self.bounds_max)
        out_vec = y - clamped
        out_dist = np.linalg.norm(out_vec, axis=1)
        is_clamped = out_vec != 0.0  # (R, 3) axes in which the point is outside the box
        u = (clamped - self.bounds_min) / self.cell_m
        base = np.clip(np.floor(u).astype(np.int64), 0, self.dims - 2)
        tx, ty, tz = np.clip(u - base, 0.0, 1.0).T  # local coordinates in the cell, component-major
        hx, hy, hz = self.cell_m
        c = self._corner_values(base)  # (2, 2, 2, R): corner (a, b, c) of the cell

        def lerp(v, s):  # along the leading axis of a (2, ...) stack
            return v[0] + (v[1] - v[0]) * s

        # Successive linear interpolations in x, y, z; a derivative replaces a lerp by a difference / cell.
        cx = lerp(c, tx)  # (2, 2, R) over (b, c)
        dcx = (c[1] - c[0]) / hx
        cxy = lerp(cx, ty)  # (2, R) over c
        value = lerp(cxy, tz)
        grad = np.stack([lerp(lerp(dcx, ty), tz), lerp((cx[1] - cx[0]) / hy, tz), (cxy[1] - cxy[0]) / hz], axis=1)
        safe_out = np.where(out_dist > 0.0, out_dist, 1.0)
        out_unit = out_vec / safe_out[:, None]
        phi = value + out_dist
        grad = np.where(is_clamped, out_unit, grad)
        hess = None
        if want_hessian:
            hxy = lerp((dcx[1] - dcx[0]) / hy, tz)
            dcx_y = lerp(dcx, ty)
            hxz = (dcx_y[1] - dcx_y[0]) / hz
            dcy = (cx[1] - cx[0]) / hy
            hyz = (dcy[1] - dcy[0]) / hz
            zero = np.zeros_like(hxy)
            h_grid = np.stack([zero, hxy, hxz, hxy, zero, hyz, hxz, hyz, zero], axis=1).reshape(-1, 3, 3)
            free = (~is_clamped).astype(np.float64)
            h_grid = h_grid * free[:, :, None] * free[:, None, :]
            clamp_f = is_clamped.astype(np.float64)
            h_out = np.eye(3) * clamp_f[:, None, :] - out_unit[:, :, None] * out_unit[:, None, :]
            h_out = h_out / safe_out[:, None, None]
            h_out = np.where((out_dist > 0.0)[:, None, None], h_out * clamp_f[:, :, None], 0.0)
            hess = (h_grid + h_out).reshape(shape + (3, 3))
        return SdfValues(phi.reshape(shape), grad.reshape(shape + (3,)), hess)

    def _corner_values(self, base: np.ndarray) -> np.ndarray:
        """(2, 2, 2, R) values at the 8 corners of each point's cell (C-order flat layout, z fastest)."""
        ny, nz = int(self.dims[1]), int(self.dims[2])
        offsets = np.array([(a * ny + b) * nz + c for a in (0, 1) for b in (0, 1) for c in (0, 1)], dtype=np.int64)
        index0 = (base[:, 0] * ny + base[:, 1]) * nz + base[:, 2]
        return self.values.ravel()[offsets[:, None] + index0[None, :]].reshape(2, 2, 2, -1)


def rigid_actor_sdf_padding(contact: ContactParams) -> float:
    """Grid padding for rigid actors: the contact threshold delta (+ extra padding), never negative (digest 5.2)."""
    return max(0.0, contact.get_penalty_threshold_dist(True))


def grid_sdf_resolution(vertices: np.ndarray, triangles: np.ndarray, params: GridSdfParams) -> np.ndarray:
    """Max voxel size (3,) [m] from the resolution mode (reference ComputeAxis/EdgeBasedResolution)."""
    delta = np.asarray(params.resolution_delta, dtype=np.float64)
    mode = params.resolution_mode
    if mode is SdfResolutionMode.EXPLICIT:
        return delta
    if mode in (SdfResolutionMode.LARGEST_AXIS, SdfResolutionMode.SMALLEST_AXIS, SdfResolutionMode.MEAN_AXIS):
        size = vertices.max(axis=0) - vertices.min(axis=0)
        reduce = {SdfResolutionMode.LARGEST_AXIS: np.max, SdfResolutionMode.SMALLEST_AXIS: np.min}.get(mode, np.mean)
        reference = float(reduce(size))
        what = "mesh AABB side length"
    elif mode in (SdfResolutionMode.LARGEST_EDGE, SdfResolutionMode.SMALLEST_EDGE, SdfResolutionMode.MEAN_EDGE):
        edges = mesh_edges(triangles)
        lengths = np.linalg.norm(vertices[edges[:, 0]] - vertices[edges[:, 1]], axis=1)
        reduce = {SdfResolutionMode.LARGEST_EDGE: np.max, SdfResolutionMode.SMALLEST_EDGE: np.min}.get(mode, np.mean)
        reference = float(reduce(lengths))
        what = "mesh edge length"
    else:
        raise ValueError(f"unknown SdfResolutionMode {mode!r}")
    if not (reference > 0 and math.isfinite(reference)):
        raise ValueError(f"the reference {what} must be finite and > 0 to size the SDF grid, got {reference}")
    return delta * reference


def build_grid_sdf(vertices, triangles, params: GridSdfParams | None = None, padding=None) -> GridSdfCollider:
    """Grid SDF of a closed, outward-oriented triangle mesh (see the module docstring for the rules).

    ``padding`` [m] overrides ``params.boundary_padding_dist`` (rigid actors: `rigid_actor_sdf_padding`).
    """
    params = (params or GridSdfParams()).validate()
    v, t = check_triangle_mesh(vertices, triangles)
    pad = params.boundary_padding_dist if padding is None else float(padding)
    if not (pad >= 0 and math.isfinite(pad)):
        raise ValueError(f"grid SDF padding must be finite and >= 0, got {padding}")
    max_voxel = grid_sdf_resolution(v, t, params)
    mesh_lo, mesh_hi = v.min(axis=0), v.max(axis=0)
    lo, hi = mesh_lo - pad, mesh_hi + pad
    eps = (hi - lo) * np.finfo(np.float64).eps
    lo, hi = lo - eps, hi + eps
    cells = np.ceil((hi - lo) / max_voxel).astype(np.int64)
    cells = np.maximum(cells, np.maximum(1, np.asarray(params.min_grid_resolution, dtype=np.int64)))
    dims = cells + 1
    if int(np.prod(dims)) > _MAX_GRID_SAMPLES:
        raise ValueError(f"SDF grid of {tuple(dims)} samples is too large; coarsen GridSdfParams.resolution_delta")
    axes = [np.linspace(lo[a], hi[a], int(dims[a])) for a in range(3)]
    grid_points = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, 3)  # x slowest, z fastest
    values = signed_distance_to_mesh(grid_points, v, t).signed_distance.reshape(tuple(dims))
    return GridSdfCollider(values, lo, hi, (mesh_lo, mesh_hi), is_mesh_closed=is_closed_mesh(t))
