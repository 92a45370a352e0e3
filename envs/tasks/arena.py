"""Scene pieces tasks share (the table, the walled floor) and the pose checks a requested object start needs."""

from __future__ import annotations

import numpy as np

import superdex_gym.sim as mochi
from superdex_gym.sim.validation import real_array

WALL_HALF_THICKNESS_M = 0.25  # 0.5 m walls hold a cube thrown at V_MAX (docs/envs_notes.md)


def create_table(scene, half_extents, contact=None):
    """A static box table whose top is the plane z = 0 (``contact``: its ContactParams, default the engine's)."""
    hx, hy, hz = half_extents
    return scene.create_rigid_actor(
        name="table", shape=mochi.create_box_mesh_shape([hx, hy, hz]), is_static=True,
        contact=mochi.ContactParams() if contact is None else contact,
        collider_type=mochi.ColliderType.BOX, world_from_local=mochi.TransformRT(translation=[0, 0, -hz]),
    )


def create_walled_floor(scene, floor_depth_m: float, arena_half_m: float, wall_height_m: float) -> list:
    """A floor plane ``floor_depth_m`` below the table top and four walls around it, so nothing leaves
    |x|, |y| < ``arena_half_m`` and positions have real bounds. Returns [floor, walls...]."""
    floor = scene.create_rigid_actor(
        name="floor", shape=mochi.create_plane_shape(normal=[0, 0, 1], distance=-floor_depth_m), is_static=True,
    )
    walls = [
        scene.create_rigid_actor(
            name=f"wall_{k}", shape=mochi.create_box_mesh_shape(list(half)), is_static=True,
            collider_type=mochi.ColliderType.BOX, world_from_local=mochi.TransformRT(translation=centre),
        )
        for k, (half, centre) in enumerate(wall_boxes(floor_depth_m, arena_half_m, wall_height_m))
    ]
    return [floor, *walls]


def wall_boxes(floor_depth_m: float, arena_half_m: float, wall_height_m: float) -> list:
    """(half extents, centre) of the four arena walls of `create_walled_floor`."""
    a, t, h = arena_half_m, WALL_HALF_THICKNESS_M, wall_height_m / 2
    zc = -floor_depth_m + h
    return [((t, a + 2 * t, h), (a + t, 0.0, zc)), ((t, a + 2 * t, h), (-a - t, 0.0, zc)),
            ((a, t, h), (0.0, a + t, zc)), ((a, t, h), (0.0, -a - t, zc))]


def parse_pose(value, name: str) -> tuple[np.ndarray, np.ndarray]:
    """A position (3,) or position + quaternion x, y, z, w (7,) option as (position, unit quaternion)."""
    pose = real_array(value, name).ravel()
    if pose.shape not in ((3,), (7,)) or not np.all(np.isfinite(pose)):
        raise ValueError(f"{name} must be 3 (position) or 7 (position + quaternion x, y, z, w) finite numbers, "
                         f"got {value!r}")
    quat = np.array([0.0, 0.0, 0.0, 1.0])
    if pose.size == 7:
        if np.linalg.norm(pose[3:]) < 1e-12:
            raise ValueError(f"{name} quaternion must be non-zero")
        quat = pose[3:] / np.linalg.norm(pose[3:])
    return pose[:3], quat


def box_extent(half_size: float, quat: np.ndarray) -> np.ndarray:
    """Half size (3,) of the world AABB of a cube of half size ``half_size`` rotated by ``quat``."""
    return half_size * np.abs(mochi.lie.quat_to_matrix(quat)).sum(axis=1)


def check_outside_table(position, extent, table_half_extents, what: str, rest_z: float) -> None:
    """An object (AABB half size ``extent``) at ``position`` must not start inside the table (top at z = 0)."""
    hx, hy, hz = table_half_extents
    tol = 1e-6  # m: an object resting exactly on the top is fine
    inside = (np.abs(position[0]) < hx + extent[0] - tol and np.abs(position[1]) < hy + extent[1] - tol
              and position[2] - extent[2] < -tol and position[2] + extent[2] > -2 * hz + tol)
    if inside:
        raise ValueError(f"{what} inside the table (its lowest point at z = {position[2] - extent[2]:.4f} m, the "
                         f"top is at z = 0; resting: z = {rest_z} m)")


def check_clear_of_boxes(position, extent, centres, halves, what: str) -> None:
    """An object (AABB half size ``extent``) at ``position`` must not overlap axis-aligned boxes (the robot)."""
    tol = 1e-6
    if np.any(np.all(np.abs(centres - position) < halves + extent - tol, axis=1)):
        raise ValueError(what)


def check_clear_of_statics(position, extent, boxes, floor_z: float, top_z: float, what: str) -> None:
    """An object (AABB half size ``extent``) at ``position`` must not start inside a static box (``boxes``: (name,
    centre, half extents)), below the floor plane ``floor_z`` or with its centre above ``top_z`` (from there its
    fall would reach the escape speed)."""
    tol = 1e-6
    if position[2] - extent[2] < floor_z - tol:
        raise ValueError(f"{what} into the floor (its lowest point at z = {position[2] - extent[2]:.4f} m, the floor "
                         f"is at z = {floor_z} m)")
    if position[2] > top_z:
        raise ValueError(f"{what} at z = {position[2]} m, above {top_z:.3f} m: falling from there it would pass the "
                         "escape speed the episode is truncated at")
    for name, centre, half in boxes:
        if np.all(np.abs(np.asarray(centre) - position) < np.asarray(half) + extent - tol):
            raise ValueError(f"{what} inside the {name} (a static box centred at {list(centre)} with half extents "
                             f"{list(half)})")
