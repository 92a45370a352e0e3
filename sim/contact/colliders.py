"""Collider signed-distance fields in the collider body's local frame (digest 5.2), batched over query points.

Every collider answers ``evaluate(points (..., 3), want_hessian) -> SdfValues(phi (...), grad (..., 3),
hessian (..., 3, 3) | None)``: the signed distance phi [m] (negative inside), its raw gradient G (unit for the
analytic fields, not necessarily for the grid) and, where it is defined, its Hessian (the Hessian of the
piecewise-smooth field on the piece that contains the point; zero on flat pieces). Frames: the points are in the
collider body's frame; for rigid actors the contact potential uses the frame centred at the centre of mass, so
build the collider in the shape's local frame and call ``translated(-com_local)``.

For the broad phase every collider also gives a bounding primitive (``bound``): a sphere ``(centre, radius)``
containing its zero level set, or for the plane the half-space itself. ``distance_lower_bound`` is 1-Lipschitz
and never exceeds the true distance, so a sample whose bound is above the contact threshold cannot touch.

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
from .sdf_values import SdfBound, SdfValues, as_points, lower_bound_from_bound

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
        y = as_points(points)
        phi = y @ self.normal - self.distance_m
        grad = np.broadcast_to(self.normal, y.shape).copy()
        return SdfValues(phi, grad, np.zeros(y.shape + (3,)) if want_hessian else None)

    def distance_lower_bound(self, points) -> np.ndarray:
        return lower_bound_from_bound(self.bound, as_points(points))


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
        d = as_points(points) - self.center
        dist = np.linalg.norm(d, axis=-1)
        at_centre = dist <= 0.0
        safe = np.where(at_centre, 1.0, dist)
        unit = np.where(at_centre[..., None], np.array([0.0, 1.0, 0.0]), d / safe[..., None])
        hess = None
        if want_hessian:
            # d^2 |d| = (I - n n^T) / |d|
            hess = (np.eye(3) - unit[..., :, None] * unit[..., None, :]) / safe[..., None, None]
            hess = np.where(at_centre[..., None, None], 0.0, hess)
        return SdfValues(dist - self.radius_m, unit, hess)

    def distance_lower_bound(self, points) -> np.ndarray:
        return lower_bound_from_bound(self.bound, as_points(points))


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
        self.bound = SdfBound(is_halfspace=False, vector=self.center, scalar=float(np.linalg.norm(self.half_extents_m)))

    def translated(self, offset) -> "BoxCollider":
        return BoxCollider(self.center + np.asarray(offset, dtype=float), self.half_extents_m, self.rotation)

    def evaluate(self, points, want_hessian: bool = False) -> SdfValues:
        local = (as_points(points) - self.center) @ self.rotation  # box-frame coordinates
        sign = np.where(local < 0.0, -1.0, 1.0)
        q = np.abs(local) - self.half_extents_m
        pos = np.maximum(q, 0.0)
        out_dist = np.linalg.norm(pos, axis=-1)
        outside = out_dist > 0.0
        inside_axis = np.argmax(q, axis=-1)
        phi = out_dist + np.minimum(np.max(q, axis=-1), 0.0)
        safe = np.where(outside, out_dist, 1.0)
        unit_out = pos / safe[..., None]
        unit_in = np.zeros_like(q)
        np.put_along_axis(unit_in, inside_axis[..., None], 1.0, axis=-1)
        grad_local = sign * np.where(outside[..., None], unit_out, unit_in)
        hess = None
        if want_hessian:
            active = (q > 0.0).astype(np.float64)
            proj = np.eye(3) * active[..., None, :] - unit_out[..., :, None] * unit_out[..., None, :]
            proj = proj * active[..., :, None]  # restrict rows and columns to the positive components
            hess_local = sign[..., :, None] * proj * sign[..., None, :] / safe[..., None, None]
            hess_local = np.where(outside[..., None, None], hess_local, 0.0)
            hess = self.rotation @ hess_local @ self.rotation.T
        return SdfValues(phi, grad_local @ self.rotation.T, hess)

    def distance_lower_bound(self, points) -> np.ndarray:
        return lower_bound_from_bound(self.bound, as_points(points))


class MeshCollider:
    """Exact signed distance to a closed triangle mesh (ColliderType.MESH; experimental and O(points x faces)).

    G is the unit vector from the closest surface point (sign-corrected); on the surface itself, the closest
    face's outward normal. Hessian: 0 on face regions, s (I - n n^T)/|d| on vertex regions and
    s (I - n n^T - e e^T)/|d| on edge regions (e the edge direction, s the sign).
    """

    def __init__(self, vertices, triangles):
        self.vertices, self.triangles = check_triangle_mesh(vertices, triangles)
        lo, hi = self.vertices.min(axis=0), self.vertices.max(axis=0)
        self.bound = SdfBound(is_halfspace=False, vector=0.5 * (lo + hi), scalar=float(0.5 * np.linalg.norm(hi - lo)))
        corners = self.vertices[self.triangles]
        normals = np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
        self._face_normals = normals / np.maximum(np.linalg.norm(normals, axis=1, keepdims=True), 1e-300)

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
        grad = np.where(on_surface[:, None], self._face_normals[res.triangle], sgn[:, None] * unit)
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

    def distance_lower_bound(self, points) -> np.ndarray:
        return lower_bound_from_bound(self.bound, as_points(points))


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
