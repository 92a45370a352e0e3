"""Exact signed distance to a closed triangle mesh, vectorized with numpy (used by the grid SDF build and MESH).

* Closest point on a triangle: the Voronoi-region walk of Ericson, "Real-Time Collision Detection" (2005),
  section 5.1.5, evaluated for all (point, triangle) pairs at once with ``np.select`` in the same region order
  (vertex A, vertex B, edge AB, vertex C, edge AC, edge BC, face).
* Sign: the generalized winding number (Jacobson et al., "Robust inside-outside segmentation using generalized
  winding numbers", SIGGRAPH 2013): the sum of the triangles' signed solid angles over 4 pi, by the formula of
  Van Oosterom & Strackee (1983). It is 1 inside a closed, outward-oriented (CCW) mesh and 0 outside; a point
  is inside when it exceeds 1/2, which also degrades gracefully on slightly open meshes.

Work is chunked over query points so that a chunk holds at most ``_PAIRS_PER_CHUNK`` (point, triangle) pairs.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = [
    "REGION_FACE",
    "REGION_VERTEX",
    "REGION_EDGE",
    "MeshDistance",
    "check_triangle_mesh",
    "closest_points_on_triangles",
    "triangle_pair_table",
    "squared_distance_to_triangle_pairs",
    "winding_number",
    "signed_distance_to_mesh",
    "mesh_edges",
    "is_closed_mesh",
]

_PAIRS_PER_CHUNK = 1 << 21

# Feature of the closest point (returned per query so that MESH can give the Hessian of the distance).
REGION_FACE = 0
REGION_VERTEX = 1
REGION_EDGE = 2


class MeshDistance(NamedTuple):
    signed_distance: np.ndarray  # (M,) m, negative inside
    closest_point: np.ndarray  # (M, 3)
    triangle: np.ndarray  # (M,) int, the triangle holding the closest point
    region: np.ndarray  # (M,) REGION_FACE / REGION_VERTEX / REGION_EDGE
    edge_direction: np.ndarray  # (M, 3) unit direction of the closest edge (zeros unless region is an edge)


def check_triangle_mesh(vertices, triangles) -> tuple[np.ndarray, np.ndarray]:
    """Validated float64 (V, 3) vertices and int64 (F, 3) triangles."""
    v = np.asarray(vertices, dtype=np.float64)
    t = np.asarray(triangles)
    if v.ndim != 2 or v.shape[1] != 3 or v.shape[0] < 3:
        raise ValueError(f"vertices must have shape (V >= 3, 3), got {v.shape}")
    if not np.all(np.isfinite(v)):
        raise ValueError("vertices contain NaN or infinite coordinates")
    if t.ndim != 2 or t.shape[1] != 3 or t.shape[0] == 0:
        raise ValueError(f"triangles must have shape (F >= 1, 3), got {t.shape}")
    if not np.issubdtype(t.dtype, np.integer):
        raise TypeError(f"triangles must hold integer vertex indices, got dtype {t.dtype}")
    t = t.astype(np.int64)
    if t.min() < 0 or t.max() >= v.shape[0]:
        raise ValueError(f"triangle indices must be in [0, {v.shape[0] - 1}]")
    return v, t


def mesh_edges(triangles: np.ndarray) -> np.ndarray:
    """(E, 2) unique undirected edges, each as (min, max) vertex index."""
    t = np.asarray(triangles, dtype=np.int64)
    e = np.concatenate([t[:, [0, 1]], t[:, [1, 2]], t[:, [2, 0]]], axis=0)
    return np.unique(np.sort(e, axis=1), axis=0)


def is_closed_mesh(triangles: np.ndarray) -> bool:
    """True when every undirected edge is shared by exactly two triangles."""
    t = np.asarray(triangles, dtype=np.int64)
    e = np.sort(np.concatenate([t[:, [0, 1]], t[:, [1, 2]], t[:, [2, 0]]], axis=0), axis=1)
    _, counts = np.unique(e, axis=0, return_counts=True)
    return bool(np.all(counts == 2))


def _dot(a, b):
    return np.einsum("...i,...i->...", a, b)


def closest_points_on_triangles(points: np.ndarray, a: np.ndarray, b: np.ndarray, c: np.ndarray):
    """Closest points of (M, 3) query points on (T, 3)-cornered triangles: ((M, T, 3) points, (M, T) region id).

    Region ids: 0 face, 1/2/3 vertex A/B/C, 4/5/6 edge AB/AC/BC.
    """
    p = points[:, None, :]
    ab, ac = b - a, c - a
    ap, bp, cp = p - a, p - b, p - c
    d1, d2 = _dot(ab, ap), _dot(ac, ap)
    d3, d4 = _dot(ab, bp), _dot(ac, bp)
    d5, d6 = _dot(ab, cp), _dot(ac, cp)
    vc = d1 * d4 - d3 * d2
    vb = d5 * d2 - d1 * d6
    va = d3 * d6 - d5 * d4
    in_a = (d1 <= 0) & (d2 <= 0)
    in_b = (d3 >= 0) & (d4 <= d3)
    in_ab = (vc <= 0) & (d1 >= 0) & (d3 <= 0)
    in_c = (d6 >= 0) & (d5 <= d6)
    in_ac = (vb <= 0) & (d2 >= 0) & (d6 <= 0)
    in_bc = (va <= 0) & ((d4 - d3) >= 0) & ((d5 - d6) >= 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        s_ab = d1 / (d1 - d3)
        s_ac = d2 / (d2 - d6)
        s_bc = (d4 - d3) / ((d4 - d3) + (d5 - d6))
        inv = 1.0 / (va + vb + vc)
    v_face, w_face = vb * inv, vc * inv
    conditions = [in_a, in_b, in_ab, in_c, in_ac, in_bc]
    region = np.select(conditions, [1, 2, 4, 3, 5, 6], default=0)
    # Barycentric weights of B and C for each region (A's weight is 1 - v - w).
    v = np.select(conditions, [0.0, 1.0, s_ab, 0.0, 0.0, 1.0 - s_bc], default=v_face)
    w = np.select(conditions, [0.0, 0.0, 0.0, 1.0, s_ac, s_bc], default=w_face)
    closest = a + v[..., None] * ab + w[..., None] * ac
    return closest, region


def winding_number(points: np.ndarray, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Generalized winding number (M,) of (M, 3) points with respect to the triangles (T, 3) x 3 corners."""
    pa = a - points[:, None, :]
    pb = b - points[:, None, :]
    pc = c - points[:, None, :]
    la, lb, lc = (np.linalg.norm(q, axis=-1) for q in (pa, pb, pc))
    numerator = _dot(pa, np.cross(pb, pc))
    denominator = la * lb * lc + _dot(pa, pb) * lc + _dot(pb, pc) * la + _dot(pc, pa) * lb
    return np.sum(2.0 * np.arctan2(numerator, denominator), axis=1) / (4.0 * np.pi)


def signed_distance_to_mesh(points, vertices, triangles) -> MeshDistance:
    """Exact signed distance of (M, 3) points to the mesh; negative inside (winding number > 1/2)."""
    pts = np.asarray(points, dtype=np.float64)
    if pts.ndim != 2 or pts.shape[1] != 3:
        raise ValueError(f"points must have shape (M, 3), got {pts.shape}")
    v, t = check_triangle_mesh(vertices, triangles)
    a, b, c = v[t[:, 0]], v[t[:, 1]], v[t[:, 2]]
    m = pts.shape[0]
    dist = np.empty(m)
    closest = np.empty((m, 3))
    tri = np.empty(m, dtype=np.int64)
    region = np.empty(m, dtype=np.int64)
    chunk = max(1, _PAIRS_PER_CHUNK // t.shape[0])
    for lo in range(0, m, chunk):  # chunking bounds memory; each chunk is fully vectorized
        hi = min(m, lo + chunk)
        q, reg = closest_points_on_triangles(pts[lo:hi], a, b, c)
        d2 = np.sum((q - pts[lo:hi, None, :]) ** 2, axis=-1)
        best = np.argmin(d2, axis=1)
        rows = np.arange(hi - lo)
        dist[lo:hi] = np.sqrt(d2[rows, best])
        closest[lo:hi] = q[rows, best]
        tri[lo:hi] = best
        region[lo:hi] = reg[rows, best]
        inside = winding_number(pts[lo:hi], a, b, c) > 0.5
        dist[lo:hi] = np.where(inside, -dist[lo:hi], dist[lo:hi])
    # Edge direction of the closest edge (for the Hessian of the distance to a line).
    corners = np.stack([a, b, c], axis=1)[tri]  # (M, 3, 3)
    edge_ends = np.array([[0, 0], [0, 0], [0, 0], [0, 0], [0, 1], [0, 2], [1, 2]])[region]
    edge = corners[np.arange(m), edge_ends[:, 1]] - corners[np.arange(m), edge_ends[:, 0]]
    edge_len = np.linalg.norm(edge, axis=1)
    is_edge = region >= 4
    edge_dir = np.where(is_edge[:, None], edge / np.where(edge_len > 0, edge_len, 1.0)[:, None], 0.0)
    kind = np.where(region == 0, REGION_FACE, np.where(is_edge, REGION_EDGE, REGION_VERTEX))
    return MeshDistance(dist, closest, tri, kind, edge_dir)



def triangle_pair_table(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """(T, 24) per-triangle data for `squared_distance_to_triangle_pairs`, from the (T, 3) corners: A, AB, AC,
    the in-plane inward edge normals N x AB, N x BC, N x CA (NaN for a zero-area triangle, so that no point
    projects inside it), the unit normal (3 columns each), then 1 / |AB|^2, 1 / |AC|^2, 1 / |BC|^2 (0 for a
    zero-length edge). One row per triangle, so that a pair gathers one contiguous row."""
    ab, ac = b - a, c - a
    bc = ac - ab
    normal = np.cross(ab, ac)
    area2 = np.linalg.norm(normal, axis=1)
    flat = ~(area2 > 0)
    edge_normals = [np.cross(normal, e) for e in (ab, bc, -ac)]
    for m in edge_normals:
        m[flat] = np.nan
    unit = normal / np.where(flat, 1.0, area2)[:, None]

    def inverse(e):
        e2 = _dot(e, e)
        return np.where(e2 > 0, 1.0 / np.where(e2 > 0, e2, 1.0), 0.0)

    rows = [a, ab, ac, *edge_normals, unit]
    return np.ascontiguousarray(np.concatenate(rows + [np.stack([inverse(ab), inverse(ac), inverse(bc)], axis=1)],
                                               axis=1))


_PAIR_CHUNK = 1 << 13  # pairs per pass: keeps the temporaries in cache


def squared_distance_to_triangle_pairs(px, py, pz, table: np.ndarray, triangle: np.ndarray, features: bool = False):
    """Squared distance (P,) from point i (coordinates ``px, py, pz``, each (P,)) to triangle ``triangle[i]`` of
    ``table`` (`triangle_pair_table`): one pair per entry.

    The distance is the plane distance when the point projects inside the triangle (three in-plane edge tests)
    and otherwise the smallest distance to the three edge segments; every term is formed from the point's
    offsets to the corners, so it agrees with `closest_points_on_triangles` up to round-off (~1e-16 times
    the triangle and offset sizes). With ``features``, also returns the region id (P,) int8 (0 face, 1/2/3
    vertex A/B/C, 4/5/6 edge AB/AC/BC, as `closest_points_on_triangles`) and the (P, 3) vectors closest
    point - point.
    """
    px, py, pz = (np.asarray(x, dtype=np.float64).ravel() for x in (px, py, pz))
    triangle = np.asarray(triangle, dtype=np.intp).ravel()
    n = px.size
    out = np.empty(n)
    region = np.empty(n, dtype=np.int8) if features else None
    offset = np.empty((n, 3)) if features else None
    for lo in range(0, n, _PAIR_CHUNK):
        hi = min(n, lo + _PAIR_CHUNK)
        tri = triangle[lo:hi]
        (ax, ay, az, abx, aby, abz, acx, acy, acz, m1x, m1y, m1z, m2x, m2y, m2z, m3x, m3y, m3z, nx, ny, nz,
         iab, iac, ibc) = table.take(tri, axis=0).T  # one row gather, then strided column views
        apx, apy, apz = px[lo:hi] - ax, py[lo:hi] - ay, pz[lo:hi] - az
        bpx, bpy, bpz = apx - abx, apy - aby, apz - abz
        cpx, cpy, cpz = apx - acx, apy - acy, apz - acz
        bcx, bcy, bcz = acx - abx, acy - aby, acz - abz
        inside = (apx * m1x + apy * m1y + apz * m1z) >= 0
        inside &= (bpx * m2x + bpy * m2y + bpz * m2z) >= 0
        inside &= (cpx * m3x + cpy * m3y + cpz * m3z) >= 0
        plane = apx * nx + apy * ny + apz * nz
        s_ab = np.minimum(np.maximum((apx * abx + apy * aby + apz * abz) * iab, 0.0), 1.0)
        s_ac = np.minimum(np.maximum((apx * acx + apy * acy + apz * acz) * iac, 0.0), 1.0)
        s_bc = np.minimum(np.maximum((bpx * bcx + bpy * bcy + bpz * bcz) * ibc, 0.0), 1.0)
        e_ab = [apx - s_ab * abx, apy - s_ab * aby, apz - s_ab * abz]  # point - closest point of the edge
        e_ac = [apx - s_ac * acx, apy - s_ac * acy, apz - s_ac * acz]
        e_bc = [bpx - s_bc * bcx, bpy - s_bc * bcy, bpz - s_bc * bcz]
        q_ab = e_ab[0] * e_ab[0] + e_ab[1] * e_ab[1] + e_ab[2] * e_ab[2]
        q_ac = e_ac[0] * e_ac[0] + e_ac[1] * e_ac[1] + e_ac[2] * e_ac[2]
        q_bc = e_bc[0] * e_bc[0] + e_bc[1] * e_bc[1] + e_bc[2] * e_bc[2]
        edge = np.minimum(np.minimum(q_ab, q_ac), q_bc)
        out[lo:hi] = np.where(inside, plane * plane, edge)
        if features:
            # Closest edge (first of AB, AC, BC on ties) and whether its parameter is clamped to a corner.
            which = np.where(q_ab <= np.minimum(q_ac, q_bc), 0, np.where(q_ac <= q_bc, 1, 2))
            s = np.choose(which, [s_ab, s_ac, s_bc])
            ends = np.array([[1, 2], [1, 3], [2, 3]])[which]  # vertex ids at s = 0 and s = 1
            rid = np.where(s <= 0.0, ends[:, 0], np.where(s >= 1.0, ends[:, 1], 4 + which))
            region[lo:hi] = np.where(inside, 0, rid)
            e = np.stack([np.choose(which, [e_ab[d], e_ac[d], e_bc[d]]) for d in range(3)], axis=1)
            face = -plane[:, None] * np.stack([nx, ny, nz], axis=1)
            offset[lo:hi] = np.where(inside[:, None], face, -e)
    return (out, region, offset) if features else out
