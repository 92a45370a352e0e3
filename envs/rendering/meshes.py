"""Triangle-mesh builders for the renderer: boxes, spheres, cylinders, and rigid transforms.

Every builder returns ``(vertices (V, 3) float64 world [m], triangles (F, 3) int64)`` with counter-clockwise
winding seen from outside (right-hand normal points outward), which is what back-face culling in
`rendering.Renderer` expects. Pass the pair straight to `rendering.RenderMesh(vertices, triangles, ...)`.
"""

from __future__ import annotations

import numpy as np

from ...sim.shapes import box_mesh as _unit_box_mesh
from ...sim.shapes import icosphere_mesh

__all__ = ["pose_matrix", "transform_mesh", "box_mesh", "sphere_mesh", "cylinder_mesh", "plane_mesh"]

_MAX_SPHERE_SUBDIVISIONS = 5  # 20480 triangles; far beyond what a marker needs


def _vector3(value, name: str) -> np.ndarray:
    out = np.asarray(value, dtype=np.float64)
    if out.shape != (3,) or not np.all(np.isfinite(out)):
        raise ValueError(f"{name} must be 3 finite numbers, got {value!r}")
    return out


def _positive(value, name: str) -> float:
    out = float(value)
    if not (np.isfinite(out) and out > 0.0):
        raise ValueError(f"{name} must be a positive finite number [m], got {value!r}")
    return out


def pose_matrix(rotation=None, translation=(0.0, 0.0, 0.0)) -> np.ndarray:
    """Homogeneous (4, 4) world-from-local transform from a (3, 3) rotation (default identity) and a (3,)
    translation [m]."""
    pose = np.eye(4)
    if rotation is not None:
        rot = np.asarray(rotation, dtype=np.float64)
        if rot.shape != (3, 3):
            raise ValueError(f"rotation must be a (3, 3) matrix, got shape {rot.shape}")
        pose[:3, :3] = rot
    pose[:3, 3] = _vector3(translation, "translation")
    return pose


def transform_mesh(vertices, rotation, translation) -> np.ndarray:
    """World vertices ``rotation @ v + translation`` for local vertices (V, 3) [m], rotation (3, 3) and
    translation (3,) [m]. Returns a new (V, 3) float64 array."""
    v = np.asarray(vertices, dtype=np.float64)
    rot = np.asarray(rotation, dtype=np.float64)
    if v.ndim != 2 or v.shape[1] != 3:
        raise ValueError(f"vertices must have shape (V, 3), got {v.shape}")
    if rot.shape != (3, 3):
        raise ValueError(f"rotation must be a (3, 3) matrix, got shape {rot.shape}")
    return v @ rot.T + _vector3(translation, "translation")


def _apply_pose(vertices: np.ndarray, pose_matrix4) -> np.ndarray:
    if pose_matrix4 is None:
        return vertices
    pose = np.asarray(pose_matrix4, dtype=np.float64)
    if pose.shape != (4, 4):
        raise ValueError(f"pose_matrix4 must be a (4, 4) homogeneous matrix, got shape {pose.shape}")
    return transform_mesh(vertices, pose[:3, :3], pose[:3, 3])


def box_mesh(half_extents, pose_matrix4=None) -> tuple[np.ndarray, np.ndarray]:
    """Box with ``half_extents`` (3,) [m] along its local axes, placed by the (4, 4) world-from-local
    ``pose_matrix4`` (default identity: centred at the origin). 8 vertices, 12 triangles."""
    half = _vector3(half_extents, "half_extents")
    if np.any(half <= 0.0):
        raise ValueError(f"half_extents must all be positive [m], got {half.tolist()}")
    vertices, triangles = _unit_box_mesh(half)
    return _apply_pose(vertices, pose_matrix4), triangles.astype(np.int64)


def sphere_mesh(radius, center=(0.0, 0.0, 0.0), subdivisions: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """Icosphere of ``radius`` [m] around ``center`` (3,) [m]; ``subdivisions`` n in [0, 5] gives
    10 * 4^n + 2 vertices and 20 * 4^n triangles (n = 2: 162 / 320)."""
    r = _positive(radius, "radius")
    if not (isinstance(subdivisions, (int, np.integer)) and 0 <= subdivisions <= _MAX_SPHERE_SUBDIVISIONS):
        raise ValueError(f"subdivisions must be an int in [0, {_MAX_SPHERE_SUBDIVISIONS}], got {subdivisions!r}")
    vertices, triangles = icosphere_mesh(int(subdivisions))
    return vertices * r + _vector3(center, "center"), triangles.astype(np.int64)


def cylinder_mesh(radius, half_height, pose_matrix4=None, segments: int = 24) -> tuple[np.ndarray, np.ndarray]:
    """Closed cylinder of ``radius`` [m] along its local z axis from ``-half_height`` to ``+half_height`` [m],
    placed by ``pose_matrix4`` (4, 4) (default identity). ``segments`` >= 3 sides: 2 * segments + 2 vertices,
    4 * segments triangles (sides, top cap, bottom cap)."""
    r, h = _positive(radius, "radius"), _positive(half_height, "half_height")
    if not (isinstance(segments, (int, np.integer)) and segments >= 3):
        raise ValueError(f"segments must be an int >= 3, got {segments!r}")
    n = int(segments)
    angle = 2.0 * np.pi * np.arange(n) / n
    ring = np.stack([r * np.cos(angle), r * np.sin(angle), np.zeros(n)], axis=1)
    vertices = np.concatenate([ring - [0.0, 0.0, h], ring + [0.0, 0.0, h], [[0.0, 0.0, -h], [0.0, 0.0, h]]])
    i = np.arange(n)
    nxt = (i + 1) % n
    bottom, top = i, n + i  # ring vertex indices
    bottom_next, top_next = nxt, n + nxt
    bottom_centre, top_centre = np.full(n, 2 * n), np.full(n, 2 * n + 1)
    triangles = np.concatenate([
        np.stack([bottom, bottom_next, top_next], axis=1),  # side, lower-right half
        np.stack([bottom, top_next, top], axis=1),  # side, upper-left half
        np.stack([top_centre, top, top_next], axis=1),  # top cap, normal +z
        np.stack([bottom_centre, bottom_next, bottom], axis=1),  # bottom cap, normal -z
    ]).astype(np.int64)
    return _apply_pose(vertices, pose_matrix4), triangles


def plane_mesh(half_size_x, half_size_y, pose_matrix4=None) -> tuple[np.ndarray, np.ndarray]:
    """Flat rectangle ``[-half_size_x, half_size_x] x [-half_size_y, half_size_y]`` [m] in the local z = 0
    plane, front face (normal) +z, placed by ``pose_matrix4`` (4, 4). 4 vertices, 2 triangles. Seen from
    below (-z) it is culled as a back face; use a thin `box_mesh` for a table that is seen from both sides."""
    hx, hy = _positive(half_size_x, "half_size_x"), _positive(half_size_y, "half_size_y")
    vertices = np.array([[-hx, -hy, 0.0], [hx, -hy, 0.0], [hx, hy, 0.0], [-hx, hy, 0.0]])
    triangles = np.array([[0, 1, 2], [0, 2, 3]], dtype=np.int64)
    return _apply_pose(vertices, pose_matrix4), triangles
