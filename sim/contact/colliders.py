"""Collider signed-distance fields in the collider body's local frame (digest 5.2), batched over query points.

Every collider answers ``evaluate(points (..., 3), want_hessian) -> SdfValues(phi (...), grad (..., 3),
hessian (..., 3, 3) | None)``: the signed distance phi [m] (negative inside), its raw gradient G (unit for the
analytic fields, not necessarily for the grid) and, where it is defined, its Hessian (the Hessian of the
piecewise-smooth field on the piece that contains the point; zero on flat pieces). Frames: the points are in the
collider body's frame; for rigid actors the contact potential uses the frame centred at the centre of mass, so
build the collider in the shape's local frame and call ``translated(-com_local)``.

For the broad phase every collider also gives a bounding primitive (``bound``): a sphere ``(centre, radius)``
containing its zero level set, or for the plane the half-space itself; the contact potential's broad phase
bounds distances with it (sim/contact/potential.py).

Collider types (``ColliderType``) resolve per shape kind as the reference does (``resolve_collider_type``):
implicit sphere -> SPHERE, implicit plane -> PLANE (static actors only), triangle / tet mesh -> SDF.
SPHERE and BOX on a mesh come from its bounding volume, the local AABB: BOX is that AABB; SPHERE is centred at
the AABB centre with radius = the AABB's **x half-extent**, the reference's rule for OBB/AABB bounding volumes
(digest 5.2 and 12: not the smallest half-extent, not the bounding sphere).
"""

from __future__ import annotations

import enum
import math

import numpy as np

from .grid_sdf import GridSdfCollider, build_grid_sdf, rigid_actor_sdf_padding
from .mesh_distance import REGION_EDGE, REGION_VERTEX, check_triangle_mesh, signed_distance_to_mesh
from .params import GridSdfParams
from .sdf_values import SdfBound, SdfValues, as_points

__all__ = [
    "ColliderType",
    "ShapeKind",
    "SdfValues",
    "SdfBound",
    "PlaneCollider",
    "SphereCollider",
    "BoxCollider",
    "GridSdfCollider",
    "MeshCollider",
    "build_grid_sdf",
    "rigid_actor_sdf_padding",
    "resolve_collider_type",
    "collider_from_mesh",
    "collider_from_sphere",
    "collider_from_plane",
    "plane_sdf_components",
    "sphere_sdf_components",
    "box_sdf_components",
]


class ColliderType(enum.Enum):
    """How an actor supplies its distance field (reference ``ColliderType``)."""

    AUTO = 0
    NONE = 1
    SPHERE = 2
    BOX = 3
    PLANE = 4
    MESH = 5  # exact triangle-mesh distance (experimental, slow)
    SDF = 6  # trilinear grid SDF
    POINT_CLOUD = 7  # shells / rods only; not supported for rigid actors
    COUNT = 8  # the number of types (reference enum), not a collider: rejected at actor creation


class ShapeKind(enum.Enum):
    """The geometry kinds a rigid actor's shape can have (digest 6)."""

    PLANE = "plane"
    SPHERE = "sphere"
    TRI_MESH = "tri_mesh"
    TET_MESH = "tet_mesh"
    POLYLINE = "polyline"


def _as_enum(value, enum_cls, what: str):
    if isinstance(value, enum_cls):
        return value
    name = value.name if isinstance(value, enum.Enum) else value
    if isinstance(name, str):
        key = name.upper()
        if key in enum_cls.__members__:
            return enum_cls[key]
        for member in enum_cls:
            if member.value == name.lower():
                return member
    raise ValueError(f"unknown {what} {value!r}; expected one of {list(enum_cls.__members__)}")


def resolve_collider_type(requested, shape_kind, is_static: bool) -> ColliderType:
    """The concrete collider type of a rigid actor, with the reference's rules and clear errors.

    AUTO: sphere -> SPHERE, plane -> PLANE, tri/tet mesh -> SDF. PLANE needs a static actor with a plane shape;
    a plane shape supports only PLANE or NONE; an implicit sphere has no mesh, so no SDF / MESH; POINT_CLOUD
    is for shells and rods.
    """
    requested = _as_enum(ColliderType.AUTO if requested is None else requested, ColliderType, "collider type")
    kind = _as_enum(shape_kind, ShapeKind, "shape kind")
    if kind is ShapeKind.POLYLINE:
        raise ValueError("polyline shapes are rod geometry: they cannot be rigid-actor colliders")
    resolved = requested
    if requested is ColliderType.AUTO:
        implicit = {ShapeKind.PLANE: ColliderType.PLANE, ShapeKind.SPHERE: ColliderType.SPHERE}
        resolved = implicit.get(kind, ColliderType.SDF)
    if resolved is ColliderType.POINT_CLOUD:
        raise ValueError("ColliderType.POINT_CLOUD is not supported for rigid actors (shells and rods only)")
    if kind is ShapeKind.PLANE and resolved not in (ColliderType.PLANE, ColliderType.NONE):
        raise ValueError(f"a plane shape supports only ColliderType.PLANE or NONE, got {resolved.name}")
    if resolved is ColliderType.PLANE:
        if kind is not ShapeKind.PLANE:
            raise ValueError("ColliderType.PLANE requires an implicit plane shape")
        if not is_static:
            raise ValueError("ColliderType.PLANE is only supported for static actors")
    if kind is ShapeKind.SPHERE and resolved in (ColliderType.SDF, ColliderType.MESH):
        raise ValueError(f"an implicit sphere has no mesh: ColliderType.{resolved.name} is not available")
    return resolved


# ---------------------------------------------------------------------------------------------------------------
# Analytic fields as batched kernels
#
# The kernels work component-first: points are (3, ...) arrays (x, y, z along the first axis) and every field
# parameter broadcasts against the trailing shape, so one call evaluates any number of colliders of one type
# (one row of parameters per point) -- the contact potential evaluates all its boxes at once this way. The
# collider classes below call the same kernels with their own parameters, so both give identical values.
# Dot products and matrix-vector products are written out component by component (no einsum / matmul on
# 3-vectors, which is slow for small trailing axes).


def _expand(param, ndim: int) -> np.ndarray:
    """A per-collider parameter of shape (3,) or (3, 3) reshaped to broadcast against (3, *S) with len(S) = ndim."""
    p = np.asarray(param, dtype=np.float64)
    return p.reshape(p.shape + (1,) * ndim)


def _component_first(points) -> np.ndarray:
    return np.moveaxis(as_points(points), -1, 0)


def _last_axis(x: np.ndarray) -> np.ndarray:
    """(3, ...) -> (..., 3)."""
    return np.ascontiguousarray(np.moveaxis(x, 0, -1))


def _last_axes(h: np.ndarray | None) -> np.ndarray | None:
    """(3, 3, ...) -> (..., 3, 3)."""
    return None if h is None else np.ascontiguousarray(np.moveaxis(h, (0, 1), (-2, -1)))


def plane_sdf_components(y, normal, distance_m, want_hessian: bool = False):
    """phi = n . y - d for points y (3, ...); unit normals n (3, ...) and offsets d broadcast per point.

    Returns (phi (...), grad (3, ...), hessian (3, 3, ...) or None).
    """
    phi = (y[0] * normal[0] + y[1] * normal[1]) + y[2] * normal[2] - distance_m
    grad = np.empty(y.shape)
    grad[...] = normal
    hess = np.zeros((3,) + y.shape) if want_hessian else None
    return phi, grad, hess


def sphere_sdf_components(y, center, radius_m, want_hessian: bool = False):
    """phi = |y - c| - r for points y (3, ...); centres (3, ...) and radii broadcast per point (see SphereCollider)."""
    d = y - center
    dist = np.sqrt((d[0] * d[0] + d[1] * d[1]) + d[2] * d[2])
    at_centre = dist <= 0.0
    safe = np.where(at_centre, 1.0, dist)
    unit = d / safe
    if np.any(at_centre):
        unit = np.where(at_centre, np.array([0.0, 1.0, 0.0]).reshape((3,) + (1,) * dist.ndim), unit)
    hess = None
    if want_hessian:
        # d^2 |d| = (I - n n^T) / |d|
        eye = np.eye(3).reshape((3, 3) + (1,) * dist.ndim)
        hess = (eye - unit[:, None] * unit[None, :]) / safe
        hess = np.where(at_centre, 0.0, hess)
    return dist - radius_m, unit, hess


def box_sdf_components(y, center, half_extents_m, rotation=None, want_hessian: bool = False, want_grad: bool = True):
    """Exact box SDF (see BoxCollider) for points y (3, ...) in the body frame; centres (3, ...), half extents
    (3, ...) and body-from-box rotations (3, 3, ...) (None: axis-aligned) broadcast per point.

    Returns (phi (...), grad (3, ...), hessian (3, 3, ...) or None); ``want_grad=False`` returns phi alone
    (grad and hessian None), for bounds.
    """
    d = y - center
    if rotation is None:
        local = d
    else:  # local_j = sum_i d_i R_ij (box-frame coordinates)
        local = (d[0] * rotation[0] + d[1] * rotation[1]) + d[2] * rotation[2]
    q = np.abs(local) - half_extents_m
    pos = np.maximum(q, 0.0)
    out_dist = np.sqrt((pos[0] * pos[0] + pos[1] * pos[1]) + pos[2] * pos[2])
    q_max = np.maximum(np.maximum(q[0], q[1]), q[2])
    phi = out_dist + np.minimum(q_max, 0.0)
    if not want_grad:
        return phi, None, None
    sign = np.where(local < 0.0, -1.0, 1.0)
    outside = out_dist > 0.0
    safe = np.where(outside, out_dist, 1.0)
    unit_out = pos / safe
    # Inside: the normal of the nearest face, the first axis on a tie (argmax).
    ax0 = q[0] >= q_max
    ax1 = ~ax0 & (q[1] >= q_max)
    unit_in = np.empty(q.shape)
    unit_in[0] = ax0
    unit_in[1] = ax1
    unit_in[2] = ~(ax0 | ax1)
    grad_local = sign * np.where(outside, unit_out, unit_in)
    if rotation is None:
        grad = grad_local
    else:  # grad_i = sum_j R_ij grad_local_j
        grad = (rotation[:, 0] * grad_local[0] + rotation[:, 1] * grad_local[1]) + rotation[:, 2] * grad_local[2]
    hess = None
    if want_hessian:
        active = (q > 0.0).astype(np.float64)
        eye = np.eye(3).reshape((3, 3) + (1,) * phi.ndim)
        proj = eye * active[None, :] - unit_out[:, None] * unit_out[None, :]
        proj = proj * active[:, None]  # restrict rows and columns to the positive components
        hess_local = sign[:, None] * proj * sign[None, :] / safe
        hess_local = np.where(outside, hess_local, 0.0)
        if rotation is None:
            hess = hess_local
        else:  # R H R^T
            rh = sum(rotation[:, k, None] * hess_local[k][None] for k in range(3))
            hess = sum(rh[:, k, None] * rotation[None, :, k] for k in range(3))
    return phi, grad, hess


# ---------------------------------------------------------------------------------------------------------------
# Analytic fields


class PlaneCollider:
    """Half-space below the plane {n . x = d}: phi(x) = n . x - d (n normalized here)."""

    def __init__(self, normal, distance_m: float):
        n = np.asarray(normal, dtype=np.float64).reshape(3)
        norm = float(np.linalg.norm(n))
        if not (norm > 0 and math.isfinite(norm)):
            raise ValueError(f"PlaneCollider: the normal must be a finite non-zero vector, got {normal}")
        if not math.isfinite(float(distance_m)):
            raise ValueError("PlaneCollider: distance_m must be finite")
        self.normal = n / norm
        self.distance_m = float(distance_m) / norm  # keeps the same plane when n was not unit
        self.bound = SdfBound(is_halfspace=True, vector=self.normal, scalar=self.distance_m)

    def translated(self, offset) -> "PlaneCollider":
        return PlaneCollider(self.normal, self.distance_m + float(self.normal @ np.asarray(offset, dtype=float)))

    def evaluate(self, points, want_hessian: bool = False) -> SdfValues:
        y = _component_first(points)
        phi, grad, _ = plane_sdf_components(y, _expand(self.normal, y.ndim - 1), self.distance_m)
        return SdfValues(phi, _last_axis(grad), np.zeros(y.shape[1:] + (3, 3)) if want_hessian else None)


class SphereCollider:
    """phi(x) = |x - c| - r. At the centre itself the gradient is taken as +y and the Hessian as 0."""

    def __init__(self, center, radius_m: float):
        self.center = np.asarray(center, dtype=np.float64).reshape(3)
        if not np.all(np.isfinite(self.center)):
            raise ValueError("SphereCollider: center must be finite")
        if not (float(radius_m) > 0 and math.isfinite(float(radius_m))):
            raise ValueError(f"SphereCollider: radius_m must be finite and > 0, got {radius_m}")
        self.radius_m = float(radius_m)
        self.bound = SdfBound(is_halfspace=False, vector=self.center, scalar=self.radius_m)

    def translated(self, offset) -> "SphereCollider":
        return SphereCollider(self.center + np.asarray(offset, dtype=float), self.radius_m)

    def evaluate(self, points, want_hessian: bool = False) -> SdfValues:
        y = _component_first(points)
        phi, grad, hess = sphere_sdf_components(y, _expand(self.center, y.ndim - 1), self.radius_m, want_hessian)
        return SdfValues(phi, _last_axis(grad), _last_axes(hess))


class BoxCollider:
    """Exact box SDF; centre and half extents in the body frame, optional rotation (body-from-box) for an OBB.

    With q = |x_box| - e: phi = |max(q, 0)| + min(max_i q_i, 0). Outside, G is the unit vector from the nearest
    box point (face normal, edge or corner direction); inside, the normal of the nearest face (first axis on a
    tie). The Hessian is (D (I - n n^T) D) / |max(q, 0)| over the positive components (zero on face regions and
    inside).
    """

    def __init__(self, center, half_extents_m, rotation=None):
        self.center = np.asarray(center, dtype=np.float64).reshape(3)
        self.half_extents_m = np.asarray(half_extents_m, dtype=np.float64).reshape(3)
        if not np.all(np.isfinite(self.center)):
            raise ValueError("BoxCollider: center must be finite")
        if not (np.all(self.half_extents_m > 0) and np.all(np.isfinite(self.half_extents_m))):
            raise ValueError(f"BoxCollider: half_extents_m must be finite and > 0, got {half_extents_m}")
        rot = np.eye(3) if rotation is None else np.asarray(rotation, dtype=np.float64).reshape(3, 3)
        if not np.allclose(rot.T @ rot, np.eye(3), atol=1e-9) or np.linalg.det(rot) <= 0:
            raise ValueError("BoxCollider: rotation must be a proper rotation matrix")
        self.rotation = rot
        self.axis_aligned = bool(np.array_equal(rot, np.eye(3)))  # the kernel then skips the rotation
        self.bound = SdfBound(is_halfspace=False, vector=self.center, scalar=float(np.linalg.norm(self.half_extents_m)))

    def translated(self, offset) -> "BoxCollider":
        return BoxCollider(self.center + np.asarray(offset, dtype=float), self.half_extents_m, self.rotation)

    def evaluate(self, points, want_hessian: bool = False) -> SdfValues:
        y = _component_first(points)
        k = y.ndim - 1
        rot = None if self.axis_aligned else _expand(self.rotation, k)
        phi, grad, hess = box_sdf_components(y, _expand(self.center, k), _expand(self.half_extents_m, k), rot,
                                             want_hessian)
        return SdfValues(phi, _last_axis(grad), _last_axes(hess))


class MeshCollider:
    """Exact signed distance to a closed triangle mesh (ColliderType.MESH; experimental and O(points x faces)).

    G is the unit vector from the closest surface point (sign-corrected); on the surface itself, the closest
    face's outward normal (``face_normals`` (F, 3)). Hessian: 0 on face regions, s (I - n n^T)/|d| on vertex
    regions and s (I - n n^T - e e^T)/|d| on edge regions (e the edge direction, s the sign).

    The contact kernels evaluate it too (kind MESH, sim/kernels/mesh.py: the same closest points and distances,
    the winding number summed in another order) for the default evaluation modes; ``exact_geometric_hessian``,
    which needs this Hessian, stays on numpy.
    """

    def __init__(self, vertices, triangles):
        self.vertices, self.triangles = check_triangle_mesh(vertices, triangles)
        lo, hi = self.vertices.min(axis=0), self.vertices.max(axis=0)
        self.bound = SdfBound(is_halfspace=False, vector=0.5 * (lo + hi), scalar=float(0.5 * np.linalg.norm(hi - lo)))
        corners = self.vertices[self.triangles]
        normals = np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
        self.face_normals = normals / np.maximum(np.linalg.norm(normals, axis=1, keepdims=True), 1e-300)

    def translated(self, offset) -> "MeshCollider":
        return MeshCollider(self.vertices + np.asarray(offset, dtype=float), self.triangles)

    def evaluate(self, points, want_hessian: bool = False) -> SdfValues:
        y = as_points(points)
        flat = y.reshape(-1, 3)
        res = signed_distance_to_mesh(flat, self.vertices, self.triangles)
        dist = np.abs(res.signed_distance)
        sgn = np.where(res.signed_distance < 0.0, -1.0, 1.0)
        on_surface = dist <= 1e-12
        safe = np.where(on_surface, 1.0, dist)
        unit = (flat - res.closest_point) / safe[:, None]
        grad = np.where(on_surface[:, None], self.face_normals[res.triangle], sgn[:, None] * unit)
        hess = None
        if want_hessian:
            eye = np.broadcast_to(np.eye(3), (flat.shape[0], 3, 3))
            proj = eye - unit[:, :, None] * unit[:, None, :]
            edge = res.edge_direction
            proj_edge = proj - edge[:, :, None] * edge[:, None, :]
            hess = np.where((res.region == REGION_VERTEX)[:, None, None], proj, 0.0)
            hess = np.where((res.region == REGION_EDGE)[:, None, None], proj_edge, hess)
            hess = np.where(on_surface[:, None, None], 0.0, sgn[:, None, None] * hess / safe[:, None, None])
            hess = hess.reshape(y.shape + (3,))
        return SdfValues(res.signed_distance.reshape(y.shape[:-1]), grad.reshape(y.shape), hess)


# ---------------------------------------------------------------------------------------------------------------
# Building colliders from shapes


def collider_from_mesh(
    collider_type, vertices, triangles, grid_params: GridSdfParams | None = None, padding_m: float | None = None
):
    """The collider of a (tri / surface of a tet) mesh shape, in the mesh's local frame; None for NONE.

    ``collider_type`` must already be resolved (`resolve_collider_type`). For SDF, ``padding_m`` overrides the
    grid padding: for rigid actors pass `rigid_actor_sdf_padding(contact_params)` (digest 5.2).
    """
    ctype = _as_enum(collider_type, ColliderType, "collider type")
    v, t = check_triangle_mesh(vertices, triangles)
    lo, hi = v.min(axis=0), v.max(axis=0)
    centre, half = 0.5 * (lo + hi), 0.5 * (hi - lo)
    if ctype is ColliderType.NONE:
        return None
    if ctype is ColliderType.SDF:
        return build_grid_sdf(v, t, grid_params or GridSdfParams(), padding_m)
    if ctype is ColliderType.MESH:
        return MeshCollider(v, t)
    if ctype is ColliderType.BOX:
        return BoxCollider(centre, np.maximum(half, 1e-12))
    if ctype is ColliderType.SPHERE:
        if not half[0] > 0:
            raise ValueError("ColliderType.SPHERE on a mesh uses the AABB x half-extent as radius, which is 0 here")
        return SphereCollider(centre, float(half[0]))
    raise ValueError(f"ColliderType.{ctype.name} cannot be built from a mesh (resolve AUTO first)")


def collider_from_sphere(collider_type, center, radius_m: float):
    """The collider of an implicit sphere shape: SPHERE is itself, BOX its AABB; None for NONE."""
    ctype = _as_enum(collider_type, ColliderType, "collider type")
    if ctype is ColliderType.NONE:
        return None
    if ctype is ColliderType.SPHERE:
        return SphereCollider(center, radius_m)
    if ctype is ColliderType.BOX:
        return BoxCollider(center, np.full(3, float(radius_m)))
    raise ValueError(f"ColliderType.{ctype.name} cannot be built from an implicit sphere")


def collider_from_plane(collider_type, normal, distance_m: float):
    """The collider of an implicit plane shape {n . x = d}: PLANE, or None for NONE."""
    ctype = _as_enum(collider_type, ColliderType, "collider type")
    if ctype is ColliderType.NONE:
        return None
    if ctype is ColliderType.PLANE:
        return PlaneCollider(normal, distance_m)
    raise ValueError(f"ColliderType.{ctype.name} cannot be built from a plane")
