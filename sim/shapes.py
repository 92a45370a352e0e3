"""Shapes: implicit planes and spheres, triangle and tetrahedral meshes (digest section 6, seed "Shapes").

A `Shape` is immutable geometry in its own local frame [m]; actors place it with ``world_from_local``. Kinds:

* ``"plane"``: the half-space ``{x : normal . x <= distance}`` bounded by the plane ``normal . x = distance``
  (``normal`` unit, pointing out of the solid). Static collider only.
* ``"sphere"``: implicit ball ``|x - center| <= radius``. Static collider only (no surface mesh, digest 2.2).
* ``"tri_mesh"``: closed, consistently CCW-outward triangle surface ``vertices (V, 3)``, ``triangles (F, 3)``.
* ``"tet_mesh"``: tetrahedra ``tetrahedra (T, 4)`` over ``tet_vertices (N, 3)``; ``vertices``/``triangles`` are
  the extracted boundary (faces used by exactly one tet, outward CCW), re-indexed over the boundary vertices
  only, in their original order.

Creation functions carry the reference's Python names and keywords (`create_plane_shape`, ...). Meshes are
validated at creation (clear `ValueError` naming the problem): shape/length, NaN/inf, index range, zero-area
triangles, open edges, non-manifold edges, inconsistent winding, zero and negative (inverted) volume.
File loading and baking a scale and transform into a shape (`bake_shape`) live in `mesh_io.py`.
"""

from __future__ import annotations

import itertools

import numpy as np

from .transforms import Quaternion, as_quaternion, as_vector3
from .validation import MAX_LENGTH_M, MIN_LENGTH_M

__all__ = [
    "Shape",
    "SHAPE_KINDS",
    "create_plane_shape",
    "create_sphere_shape",
    "create_tri_mesh_shape",
    "create_tet_mesh_shape",
    "create_box_mesh_shape",
    "create_icosphere_shape",
    "box_mesh",
    "icosphere_mesh",
    "get_shape_aabb",
    "release_shape",
    "validate_surface_mesh",
]

SHAPE_KINDS = ("plane", "sphere", "tri_mesh", "tet_mesh")

# A triangle whose twice-area |e1 x e2| is below this fraction of its longest squared edge is a sliver with
# no well-defined normal (height / edge < 1e-12, i.e. collinear up to float64 round-off).
_DEGENERATE_TRIANGLE_RTOL = 1e-12
# Signed volume below this fraction of (bounding-box diagonal)^3 counts as zero (a flat closed surface).
_ZERO_VOLUME_RTOL = 1e-12
_MAX_ICOSPHERE_SUBDIVISIONS = 7  # 163842 vertices; beyond that the pure-numpy engine is not the right tool

_HANDLES = itertools.count(1)


def _frozen(arr, dtype) -> np.ndarray:
    out = np.array(arr, dtype=dtype, copy=True)
    out.setflags(write=False)
    return out


def _frozen_sdf(sdf: dict) -> dict:
    """Copy of a grid-SDF dict with every array read-only (nested bounds dicts included)."""
    out = {}
    for key, value in sdf.items():
        if isinstance(value, dict):
            out[key] = {k: _frozen(v, np.float64) for k, v in value.items()}
        elif value is None:
            out[key] = None
        else:
            out[key] = _frozen(value, np.int64 if key == "dims" else np.float64)
    return out


class Shape:
    """Immutable shape geometry. Build it with the ``create_*`` functions or `mesh_io.load_shape_from_file`.

    Attributes (``None`` where they do not apply to ``kind``):
        kind: one of `SHAPE_KINDS`.
        handle: int, unique per process.
        normal: (3,) unit plane normal (out of the solid); distance: plane offset [m], plane ``normal . x = d``.
        center: (3,) sphere centre [m]; radius: sphere radius [m].
        vertices: (V, 3) surface vertices [m]; triangles: (F, 3) int64, CCW seen from outside.
        tet_vertices: (N, 3) all tet-mesh nodes [m]; tetrahedra: (T, 4) int64 into tet_vertices, positive
            orientation ``det[x1 - x0, x2 - x0, x3 - x0] > 0``.
        sdf: baked grid SDF read from a model file (see `mesh_io`), or None.
    """

    __slots__ = ("kind", "handle", "normal", "distance", "center", "radius", "vertices", "triangles",
                 "tet_vertices", "tetrahedra", "sdf")

    def __init__(self, kind, *, normal=None, distance=None, center=None, radius=None, vertices=None,
                 triangles=None, tet_vertices=None, tetrahedra=None, sdf=None):
        # Trusts its inputs: the create_* functions validate before calling this.
        if kind not in SHAPE_KINDS:
            raise ValueError(f"kind must be one of {SHAPE_KINDS}, got {kind!r}")
        values = {
            "kind": kind,
            "handle": next(_HANDLES),
            "normal": None if normal is None else _frozen(normal, np.float64),
            "distance": None if distance is None else float(distance),
            "center": None if center is None else _frozen(center, np.float64),
            "radius": None if radius is None else float(radius),
            "vertices": None if vertices is None else _frozen(vertices, np.float64),
            "triangles": None if triangles is None else _frozen(triangles, np.int64),
            "tet_vertices": None if tet_vertices is None else _frozen(tet_vertices, np.float64),
            "tetrahedra": None if tetrahedra is None else _frozen(tetrahedra, np.int64),
            "sdf": None if sdf is None else _frozen_sdf(sdf),
        }
        for name, value in values.items():
            object.__setattr__(self, name, value)

    def __setattr__(self, name, value):
        raise AttributeError(f"Shape is immutable; cannot set {name!r} (bake or create a new shape instead)")

    # Immutable, so copies may share it (deepcopy of params / models holding a shape keeps the same handle).
    def __copy__(self) -> "Shape":
        return self

    def __deepcopy__(self, memo) -> "Shape":
        return self

    def __getstate__(self) -> dict:
        return {name: getattr(self, name) for name in self.__slots__}

    def __setstate__(self, state: dict) -> None:  # unpickling keeps the handle of the pickled shape
        for name, value in state.items():
            if isinstance(value, np.ndarray):
                value.setflags(write=False)  # pickle does not keep the read-only flag
            elif name == "sdf" and value is not None:
                value = _frozen_sdf(value)
            object.__setattr__(self, name, value)

    def with_sdf(self, sdf) -> "Shape":
        """A copy of this shape (new handle) carrying the grid-SDF dict ``sdf`` (layout: `mesh_io`)."""
        return Shape(self.kind, normal=self.normal, distance=self.distance, center=self.center,
                     radius=self.radius, vertices=self.vertices, triangles=self.triangles,
                     tet_vertices=self.tet_vertices, tetrahedra=self.tetrahedra, sdf=sdf)

    @property
    def has_surface_mesh(self) -> bool:
        """True for triangle and tetrahedral meshes (what a dynamic rigid actor needs, digest 2.2)."""
        return self.kind in ("tri_mesh", "tet_mesh")

    def aabb(self) -> tuple[np.ndarray, np.ndarray]:
        """Local-frame bounds ``(min (3,), max (3,))`` [m].

        A plane is the half-space below it: unbounded (+-inf) except, when the normal is exactly a signed
        coordinate axis, along that axis (e.g. normal +y, d = 0 gives max y = 0, min y = -inf).
        """
        if self.kind == "sphere":
            return self.center - self.radius, self.center + self.radius
        if self.kind == "plane":
            lo, hi = np.full(3, -np.inf), np.full(3, np.inf)
            axis = np.flatnonzero(np.abs(self.normal) == 1.0)
            if axis.size == 1:
                k = axis[0]
                if self.normal[k] > 0:
                    hi[k] = self.distance
                else:
                    lo[k] = -self.distance
            return lo, hi
        return self.vertices.min(axis=0), self.vertices.max(axis=0)

    def __repr__(self) -> str:
        if self.kind == "plane":
            detail = f"normal={self.normal.tolist()}, distance={self.distance}"
        elif self.kind == "sphere":
            detail = f"center={self.center.tolist()}, radius={self.radius}"
        else:
            detail = f"vertices={len(self.vertices)}, triangles={len(self.triangles)}"
            if self.tetrahedra is not None:
                detail += f", tetrahedra={len(self.tetrahedra)}"
        return f"Shape(kind={self.kind!r}, handle={self.handle}, {detail})"


# ----------------------------------------------------------------------------------------------- validation


def _as_coordinates(coordinates, name="coordinates") -> np.ndarray:
    """Flat ``[x0, y0, z0, ...]`` or (V, 3) -> (V, 3) float64, finite, non-empty."""
    try:
        arr = np.asarray(coordinates, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be numbers, flat [x0, y0, z0, ...] or shape (V, 3): {exc}") from exc
    if arr.ndim == 1:
        if arr.size % 3:
            raise ValueError(f"flat {name} has length {arr.size}, which is not a multiple of 3 (x, y, z)")
        arr = arr.reshape(-1, 3)
    elif arr.ndim != 2 or arr.shape[1] != 3:
        raise ValueError(f"{name} must be flat or have shape (V, 3), got shape {arr.shape}")
    if arr.shape[0] == 0:
        raise ValueError(f"{name} is empty")
    bad = np.flatnonzero(~np.all(np.isfinite(arr), axis=1))
    if bad.size:
        raise ValueError(f"{name} contain NaN or infinite values ({bad.size} vertices, first: vertex {bad[0]})")
    if np.max(np.abs(arr)) > MAX_LENGTH_M:
        raise ValueError(f"{name} must lie within {MAX_LENGTH_M:g} m of the origin, got |x| up to "
                         f"{np.max(np.abs(arr)):.3g} m: area and volume integrals lose float64 precision beyond")
    return arr


def _as_connectivity(connectivity, nodes_per_element: int, num_nodes: int, name="connectivity") -> np.ndarray:
    """Flat or (E, k) integer indices -> (E, k) int64 with every index in [0, num_nodes)."""
    try:
        arr = np.asarray(connectivity)
    except ValueError as exc:  # ragged nested lists
        raise ValueError(f"{name} must be flat or a rectangular (E, {nodes_per_element}) array: {exc}") from exc
    if arr.dtype == bool or not (np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)):
        raise TypeError(f"{name} must hold integer vertex indices, got dtype {arr.dtype}")
    if np.issubdtype(arr.dtype, np.floating):
        if not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr)):
            raise TypeError(f"{name} must hold integer vertex indices, got non-integral values")
    arr = arr.astype(np.int64)
    if arr.ndim == 1:
        if arr.size % nodes_per_element:
            raise ValueError(
                f"flat {name} has length {arr.size}, which is not a multiple of {nodes_per_element} "
                f"(indices per element)"
            )
        arr = arr.reshape(-1, nodes_per_element)
    elif arr.ndim != 2 or arr.shape[1] != nodes_per_element:
        raise ValueError(f"{name} must be flat or have shape (E, {nodes_per_element}), got shape {arr.shape}")
    if arr.shape[0] == 0:
        raise ValueError(f"{name} is empty")
    if arr.min() < 0 or arr.max() >= num_nodes:
        bad = np.flatnonzero(np.any((arr < 0) | (arr >= num_nodes), axis=1))[0]
        raise ValueError(
            f"{name} has indices out of range [0, {num_nodes - 1}] (first bad element {bad}: {arr[bad].tolist()})"
        )
    return arr


def _signed_volume(vertices: np.ndarray, triangles: np.ndarray) -> float:
    """Divergence-theorem volume [m^3] of a closed surface, about the vertex mean (for round-off)."""
    corners = vertices[triangles] - vertices.mean(axis=0)
    return float(np.einsum("fi,fi->", corners[:, 0], np.cross(corners[:, 1], corners[:, 2])) / 6.0)


def validate_surface_mesh(vertices, triangles, *, require_closed: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Check a triangle surface; returns ``(vertices (V, 3) float64, triangles (F, 3) int64)``.

    Always: shapes, finite coordinates, index range, no zero-area triangles. With ``require_closed``: every
    edge shared by exactly two faces in opposite directions (watertight, consistently wound), and a positive
    enclosed volume (CCW seen from outside). Raises ValueError naming the first problem found.
    """
    v = _as_coordinates(vertices, "vertices")
    t = _as_connectivity(triangles, 3, v.shape[0], "triangles")

    repeated = np.flatnonzero((t[:, 0] == t[:, 1]) | (t[:, 1] == t[:, 2]) | (t[:, 2] == t[:, 0]))
    if repeated.size:
        raise ValueError(f"degenerate triangle {repeated[0]} repeats a vertex: {t[repeated[0]].tolist()}")
    corners = v[t]
    edges = corners[:, [1, 2, 0]] - corners  # (F, 3, 3): edge k goes corner k -> corner k+1
    twice_area = np.linalg.norm(np.cross(edges[:, 0], -edges[:, 2]), axis=1)
    longest_sq = np.max(np.einsum("fkd,fkd->fk", edges, edges), axis=1)
    sliver = np.flatnonzero(twice_area <= _DEGENERATE_TRIANGLE_RTOL * longest_sq)
    if sliver.size:
        raise ValueError(
            f"{sliver.size} degenerate (zero-area) triangle(s), first: face {sliver[0]} {t[sliver[0]].tolist()}"
        )
    if not require_closed:
        return v, t

    directed = t[:, [0, 1, 1, 2, 2, 0]].reshape(-1, 2)  # (3F, 2)
    lo, hi = directed.min(axis=1), directed.max(axis=1)
    num_v = v.shape[0]

    def edge_of(key) -> list:
        return [int(key // num_v), int(key % num_v)]

    undirected_keys, counts = np.unique(lo * num_v + hi, return_counts=True)
    if np.any(counts == 1):
        raise ValueError(
            f"mesh is open (not watertight): edge {edge_of(undirected_keys[counts == 1][0])} belongs to only "
            f"one face ({int(np.sum(counts == 1))} such edges)"
        )
    if np.any(counts > 2):
        raise ValueError(
            f"mesh is non-manifold: edge {edge_of(undirected_keys[counts > 2][0])} is shared by more than two "
            f"faces ({int(np.sum(counts > 2))} such edges)"
        )
    directed_keys, directed_counts = np.unique(directed[:, 0] * num_v + directed[:, 1], return_counts=True)
    if np.any(directed_counts > 1):
        raise ValueError(
            f"inconsistent winding: edge {edge_of(directed_keys[directed_counts > 1][0])} is traversed in the "
            "same direction by both of its faces (neighbouring faces must run oppositely along a shared edge)"
        )

    volume = _signed_volume(v, t)
    diagonal = float(np.linalg.norm(v.max(axis=0) - v.min(axis=0)))
    if abs(volume) <= _ZERO_VOLUME_RTOL * diagonal**3:
        raise ValueError(f"mesh encloses zero volume ({volume:.3e} m^3): it is flat or degenerate")
    if volume < 0:
        raise ValueError(
            f"mesh is inverted (signed volume {volume:.6g} m^3 < 0): triangles must be CCW seen from outside; "
            "flip the winding"
        )
    return v, t


def _tet_mesh_boundary(tet_vertices: np.ndarray, tets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Boundary of a positively oriented tet mesh: (boundary vertices (V, 3), triangles (F, 3) over them)."""
    corners = tet_vertices[tets]
    six_volume = np.einsum("ti,ti->t", corners[:, 1] - corners[:, 0],
                           np.cross(corners[:, 2] - corners[:, 0], corners[:, 3] - corners[:, 0]))
    edge_scale = np.max(np.linalg.norm(corners[:, 1:] - corners[:, :1], axis=2), axis=1)
    flat = np.flatnonzero(np.abs(six_volume) <= _ZERO_VOLUME_RTOL * edge_scale**3)
    if flat.size:
        raise ValueError(f"{flat.size} degenerate (zero-volume) tetrahedra, first: tet {flat[0]}")
    inverted = np.flatnonzero(six_volume < 0)
    if inverted.size:
        raise ValueError(
            f"{inverted.size} inverted tetrahedra (negative orientation), first: tet {inverted[0]} "
            f"{tets[inverted[0]].tolist()}; expected det[x1-x0, x2-x0, x3-x0] > 0"
        )
    # Faces of a positive tet (0, 1, 2, 3), each CCW seen from outside that tet.
    faces = tets[:, [[1, 2, 3], [0, 3, 2], [0, 1, 3], [0, 2, 1]]].reshape(-1, 3)
    keys, inverse, counts = np.unique(np.sort(faces, axis=1), axis=0, return_inverse=True, return_counts=True)
    inverse = inverse.reshape(-1)
    if np.any(counts > 2):
        raise ValueError(f"non-manifold tet mesh: face {keys[counts > 2][0].tolist()} is shared by more than two tets")
    # An interior face must be seen with opposite orientations by its two tets, else the tets overlap.
    a, b, c = faces[:, 0], faces[:, 1], faces[:, 2]
    parity = 1 - 2 * (((a > b).astype(int) + (a > c) + (b > c)) % 2)  # +1 even permutation of sorted
    parity_sum = np.zeros(keys.shape[0], dtype=np.int64)
    np.add.at(parity_sum, inverse, parity)
    if np.any((counts == 2) & (parity_sum != 0)):
        raise ValueError("overlapping tetrahedra: an interior face lies on the same side of both its tets")
    boundary = faces[counts[inverse] == 1]
    used, compact = np.unique(boundary, return_inverse=True)
    return tet_vertices[used], compact.reshape(-1, 3)


# ------------------------------------------------------------------------------------------------- creation


def create_plane_shape(normal=(0.0, 1.0, 0.0), distance=0.0) -> Shape:
    """Implicit plane ``normal . x = distance`` [m]; the solid is below it. ``normal`` is normalized."""
    n = as_vector3(normal, "normal")
    length = float(np.linalg.norm(n))
    if length < 1e-12:
        raise ValueError(f"plane normal must be non-zero, got {n.tolist()}")
    d = float(distance)
    if not np.isfinite(d):
        raise ValueError(f"plane distance must be finite, got {distance!r}")
    return Shape("plane", normal=n / length, distance=d)


def create_sphere_shape(center=(0.0, 0.0, 0.0), radius=1.0) -> Shape:
    """Implicit sphere: ``center`` (3,) [m], ``radius`` > 0 [m]."""
    c = as_vector3(center, "center")
    r = float(radius)
    if not (np.isfinite(r) and r > 0.0):
        raise ValueError(f"sphere radius must be positive and finite, got {radius!r}")
    return Shape("sphere", center=c, radius=r)


def create_tri_mesh_shape(coordinates, connectivity, *, require_closed: bool = True) -> Shape:
    """Triangle mesh from flat ``[x0, y0, z0, ...]`` / ``[i0, j0, k0, ...]`` lists or (V, 3) / (F, 3) arrays.

    Triangles must be CCW seen from outside. ``require_closed=False`` skips the watertight / winding / volume
    checks (for open static collider surfaces); rigid mass properties need a closed surface.
    """
    vertices = _as_coordinates(coordinates)  # parsed first so errors name the caller's arguments
    triangles = _as_connectivity(connectivity, 3, vertices.shape[0])
    vertices, triangles = validate_surface_mesh(vertices, triangles, require_closed=require_closed)
    return Shape("tri_mesh", vertices=vertices, triangles=triangles)


def create_tet_mesh_shape(coordinates, connectivity) -> Shape:
    """Tetrahedral mesh (flat lists or (N, 3) / (T, 4)); tets must be positively oriented.

    The surface (``vertices``, ``triangles``) is the set of faces used by exactly one tet, oriented outward.
    """
    tet_vertices = _as_coordinates(coordinates)
    tets = _as_connectivity(connectivity, 4, tet_vertices.shape[0])
    vertices, triangles = _tet_mesh_boundary(tet_vertices, tets)
    vertices, triangles = validate_surface_mesh(vertices, triangles)
    return Shape("tet_mesh", vertices=vertices, triangles=triangles, tet_vertices=tet_vertices, tetrahedra=tets)


def box_mesh(half_extents, center=(0.0, 0.0, 0.0), rotation=None) -> tuple[np.ndarray, np.ndarray]:
    """Box arrays ``(vertices (8, 3) [m], triangles (12, 3))``, outward CCW; see `create_box_mesh_shape`."""
    h = as_vector3(half_extents, "half_extents")
    if np.any(h <= 0.0):
        raise ValueError(f"box half_extents must all be positive, got {h.tolist()}")
    if np.any(h < MIN_LENGTH_M):
        raise ValueError(f"box half_extents must be at least {MIN_LENGTH_M:g} m, got {h.tolist()}: the inertia "
                         "integrals (size^5) vanish below, and the contact cannot resolve such a body")
    if np.any(h > MAX_LENGTH_M):
        raise ValueError(f"box half_extents must be at most {MAX_LENGTH_M:g} m, got {h.tolist()}: area and volume "
                         "integrals lose float64 precision beyond")
    bits = (np.arange(8)[:, None] >> np.arange(3)[None, :]) & 1  # vertex i has bit k set <=> +h on axis k
    vertices = (2.0 * bits - 1.0) * h
    quads = []
    for axis in range(3):
        b, c = [k for k in range(3) if k != axis]
        for side in (0, 1):
            corners = [(0, 0), (1, 0), (1, 1), (0, 1)]
            quads.append([(side << axis) | (i << b) | (j << c) for i, j in corners])
    quads = np.array(quads)
    triangles = np.concatenate([quads[:, [0, 1, 2]], quads[:, [0, 2, 3]]])
    # Orient each face outward: flip where the normal points toward the box centre.
    p = vertices[triangles]
    normal = np.cross(p[:, 1] - p[:, 0], p[:, 2] - p[:, 0])
    inward = np.einsum("fi,fi->f", normal, p.mean(axis=1)) < 0
    triangles[inward] = triangles[inward][:, [0, 2, 1]]
    rot = Quaternion() if rotation is None else as_quaternion(rotation, "rotation")
    return vertices @ rot.to_matrix().T + as_vector3(center, "center"), triangles


def create_box_mesh_shape(half_extents, center=(0.0, 0.0, 0.0), rotation=None) -> Shape:
    """Box as a closed 8-vertex / 12-triangle tri mesh: ``half_extents`` (3,) [m] > 0, ``center`` (3,) [m],
    optional ``rotation`` (Quaternion or (x, y, z, w)) of the box axes."""
    vertices, triangles = box_mesh(half_extents, center, rotation)
    return Shape("tri_mesh", vertices=vertices, triangles=triangles)


def icosphere_mesh(subdivisions: int) -> tuple[np.ndarray, np.ndarray]:
    """Unit icosphere arrays ``(vertices (V, 3), triangles (F, 3))`` for ``n = subdivisions``.

    10 * 4^n + 2 vertices on the unit sphere, 20 * 4^n outward CCW triangles; each level splits every
    triangle into four at its (re-projected) edge midpoints. Deterministic vertex order.
    """
    phi = (1.0 + np.sqrt(5.0)) / 2.0
    vertices = np.array([[-1, phi, 0], [1, phi, 0], [-1, -phi, 0], [1, -phi, 0],
                         [0, -1, phi], [0, 1, phi], [0, -1, -phi], [0, 1, -phi],
                         [phi, 0, -1], [phi, 0, 1], [-phi, 0, -1], [-phi, 0, 1]], dtype=np.float64)
    vertices /= np.linalg.norm(vertices, axis=1, keepdims=True)
    faces = np.array([[0, 11, 5], [0, 5, 1], [0, 1, 7], [0, 7, 10], [0, 10, 11], [1, 5, 9], [5, 11, 4],
                      [11, 10, 2], [10, 7, 6], [7, 1, 8], [3, 9, 4], [3, 4, 2], [3, 2, 6], [3, 6, 8],
                      [3, 8, 9], [4, 9, 5], [2, 4, 11], [6, 2, 10], [8, 6, 7], [9, 8, 1]], dtype=np.int64)
    for _ in range(subdivisions):
        edges = np.sort(faces[:, [0, 1, 1, 2, 2, 0]].reshape(-1, 2), axis=1)
        unique_edges, edge_of = np.unique(edges, axis=0, return_inverse=True)
        midpoints = vertices[unique_edges].sum(axis=1)
        midpoints /= np.linalg.norm(midpoints, axis=1, keepdims=True)
        m = vertices.shape[0] + edge_of.reshape(-1, 3)  # midpoint of edges (01), (12), (20) per face
        a, b, c = faces.T
        faces = np.concatenate([np.stack([a, m[:, 0], m[:, 2]], 1), np.stack([b, m[:, 1], m[:, 0]], 1),
                                np.stack([c, m[:, 2], m[:, 1]], 1), m])
        vertices = np.concatenate([vertices, midpoints])
    return vertices, faces


def create_icosphere_shape(radius=1.0, subdivisions=3, center=(0.0, 0.0, 0.0)) -> Shape:
    """Icosphere tri mesh inscribed in the sphere (``radius`` [m], vertices on it), ``subdivisions`` in [0, 7].

    Subdivision n has 10 * 4^n + 2 vertices and 20 * 4^n triangles (n = 3: 642 / 1280).
    """
    r = float(radius)
    if not (np.isfinite(r) and r > 0.0):
        raise ValueError(f"icosphere radius must be positive and finite, got {radius!r}")
    if isinstance(subdivisions, bool) or not isinstance(subdivisions, (int, np.integer)):
        raise TypeError(f"subdivisions must be an int, got {subdivisions!r}")
    if not 0 <= subdivisions <= _MAX_ICOSPHERE_SUBDIVISIONS:
        raise ValueError(f"subdivisions must be in [0, {_MAX_ICOSPHERE_SUBDIVISIONS}], got {subdivisions}")
    vertices, triangles = icosphere_mesh(int(subdivisions))
    return Shape("tri_mesh", vertices=r * vertices + as_vector3(center, "center"), triangles=triangles)


def _check_shape(shape) -> Shape:
    if not isinstance(shape, Shape):
        raise TypeError(f"expected a Shape, got {type(shape).__name__}")
    return shape


def get_shape_aabb(shape) -> dict:
    """``{"min": [x, y, z], "max": [x, y, z]}`` local-frame bounds [m] (see `Shape.aabb`)."""
    lo, hi = _check_shape(shape).aabb()
    return {"min": lo.tolist(), "max": hi.tolist()}


def release_shape(shape) -> None:
    """No-op kept for API parity: shapes are garbage-collected Python objects."""
    _check_shape(shape)
