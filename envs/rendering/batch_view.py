"""`WorldsView`: pictures of every world of a task's worlds in one call of the compiled rasterizer
(`raster_kernel.render_worlds`), for observations and ``render()``.

Its scene is `scene_view.SceneView`'s (every actor, the table checkered, colours by actor name, the task's goal
markers as translucent spheres); segmentation ids are the actors' positions in the scene plus one (0: nothing),
``segmentation_ids`` names them. Per-world looks (colours, light, camera pose) come from a `Looks`, which
domain randomization fills (``envs/core/pixels.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from superdex_gym.sim.context import worker_threads
from superdex_gym.sim.jit import kernel_array

from ..core.task import Task
from .camera import Camera
from .meshes import sphere_mesh
from .raster_kernel import CASTS_SHADOW, PATTERNED, RECEIVES_SHADOW, STATIC, TILE, render_worlds
from .renderer import DEFAULT_BACKGROUND, DEFAULT_LIGHT_DIRECTION
from .scene_view import DYNAMIC_COLOR, STATIC_COLOR, TABLE_PATTERN, _local_mesh
from .shading import ShadingParams

MARKER_COLOR = (0.15, 0.85, 0.3)  # renderer.goal_marker's
MARKER_ALPHA = 0.5
MARKER_SUBDIVISIONS = 2  # renderer.goal_marker's icosphere: 320 triangles


@dataclass
class Looks:
    """Per-world appearance (W worlds): actor albedo (W, A, 3), checker cell colours (W, 2, 3), marker albedo
    (W, M, 3), light travel direction (W, 3) unit, background (W, 3), camera eye (W, 3) and camera-from-world
    rotation rows (W, 3, 3)."""

    actor_albedo: np.ndarray
    checker: np.ndarray
    marker_albedo: np.ndarray
    light: np.ndarray
    background: np.ndarray
    cam_eye: np.ndarray
    cam_rot: np.ndarray


class WorldsView:
    """Renders worlds of ``worlds`` (a `RobotTaskWorlds`) seen by ``camera``; ``empty_depth`` is the depth of
    pixels with no opaque surface (inf for ``render()``, the camera's far distance for observations).

    The kernel keeps each world's static layer (the table, floor, walls and bins with their colours in full sun)
    and marker layers between calls, redrawn only when the camera, light, colours, static poses or goals change
    (``render_worlds``): with ``cache_per_world`` one slot per world (about 33 bytes per pixel per world, plus 8 per
    marker: 0.17 MB per 64 x 64 Push world), for observations drawn every step; otherwise one slot per thread, reused
    while consecutive worlds share them (``render()``'s large frames)."""

    def __init__(self, worlds, camera: Camera, shading: ShadingParams = ShadingParams(),
                 empty_depth: float = np.inf, cache_per_world: bool = False):
        self.worlds, self.camera, self.shading, self.empty_depth = worlds, camera, shading, float(empty_depth)
        self.actors = list(worlds.bodies)
        colors = {**worlds.task.colors, **worlds.robot.colors}
        tri_local, tri_actor, tri_flags, tri_seg, albedo = [], [], [], [], []
        for k, actor in enumerate(self.actors):
            name, static = actor.get_name(), actor.is_static()
            verts, tris = _local_mesh(actor.get_shape())
            tri_local.append(np.asarray(verts, dtype=np.float64)[np.asarray(tris)])
            tri_actor.append(np.full(len(tris), k, dtype=np.int64))
            # SceneView's styles: the table checkered, static pieces cast no shadow, everything receives shadows
            flags = RECEIVES_SHADOW | (PATTERNED if name == "table" else 0) | (STATIC if static else CASTS_SHADOW)
            tri_flags.append(np.full(len(tris), flags, dtype=np.int64))
            tri_seg.append(np.full(len(tris), k + 1, dtype=np.int32))
            albedo.append(colors.get(name, STATIC_COLOR if static else DYNAMIC_COLOR))
        self.tri_local = kernel_array(np.concatenate(tri_local).reshape(-1, 3, 3))
        self.tri_actor = np.concatenate(tri_actor)
        self.tri_flags = np.concatenate(tri_flags)
        self.tri_seg = np.concatenate(tri_seg)
        self.segmentation_ids = {0: "(nothing)", **{k + 1: a.get_name() for k, a in enumerate(self.actors)}}
        self.base_albedo = np.array(albedo, dtype=np.float64)
        markers = worlds.task.goal_markers(worlds.goal[0])
        self.num_markers = len(markers)
        mk_local, mk_index = [], []
        for m, (_, radius) in enumerate(markers):
            verts, tris = sphere_mesh(radius, (0.0, 0.0, 0.0), MARKER_SUBDIVISIONS)
            mk_local.append(verts[tris])
            mk_index.append(np.full(len(tris), m, dtype=np.int64))
        self.mk_local = kernel_array(np.concatenate(mk_local).reshape(-1, 3, 3) if markers else np.zeros((0, 3, 3)))
        self.mk_index = np.concatenate(mk_index) if markers else np.zeros(0, dtype=np.int64)
        self.mk_radius = np.array([radius for _, radius in markers], dtype=np.float64)
        self.mk_alpha = np.full(self.num_markers, MARKER_ALPHA, dtype=np.float32)
        self.checker_origin = np.asarray(TABLE_PATTERN.origin, dtype=np.float64)
        self.base_checker = np.stack([TABLE_PATTERN.color_a, TABLE_PATTERN.color_b]).astype(np.float64)
        self.shading_values = np.array([shading.sky_ambient, shading.ground_ambient, shading.diffuse,
                                        shading.shadow_bias_texels], dtype=np.float64)
        self.ray_right, self.ray_up = (np.ascontiguousarray(a) for a in camera.pixel_ray_slopes)
        self.cache_per_world = bool(cache_per_world)
        self._cache = {}
        self._make_cache(worlds.num_worlds if self.cache_per_world else max(worker_threads(), 1))

    def _make_cache(self, slots: int) -> None:
        n_pix = self.camera.height * self.camera.width
        m = max(self.num_markers, 1)
        self._cache = {  # render_worlds' kept layers; NaN keys: nothing kept yet
            "st_key": np.full((slots, 24 + 15 * len(self.actors)), np.nan),  # render_worlds' key layouts
            "st_q": np.zeros((slots, n_pix), dtype=np.float32), "st_id": np.zeros((slots, n_pix), dtype=np.int32),
            "st_rgb": np.zeros((slots, n_pix, 3), dtype=np.uint8),
            "st_depth": np.zeros((slots, n_pix), dtype=np.float32),
            "st_seg": np.zeros((slots, n_pix), dtype=np.int32),
            "st_xyz": np.zeros((slots, n_pix, 3), dtype=np.float32),
            "st_tile": np.zeros((slots, -(-self.camera.height // TILE) * -(-self.camera.width // TILE), 4)),
            "mk_key": np.full((slots, 15 + 3 * self.num_markers), np.nan),
            "mk_q": np.zeros((slots, m, n_pix), dtype=np.float32),
            "mk_light": np.zeros((slots, m, n_pix), dtype=np.float32),
            "mk_box": np.zeros((slots, m, 4), dtype=np.int64)}

    def default_looks(self, num_worlds: int) -> Looks:
        """Every world as `SceneView` draws it: the scene's colours, the default light and the camera as given."""
        light = np.asarray(DEFAULT_LIGHT_DIRECTION, dtype=np.float64)
        return Looks(actor_albedo=np.tile(self.base_albedo, (num_worlds, 1, 1)),
                     checker=np.tile(self.base_checker, (num_worlds, 1, 1)),
                     marker_albedo=np.tile(np.asarray(MARKER_COLOR, dtype=np.float64),
                                           (num_worlds, self.num_markers, 1)),
                     light=np.tile(light / np.linalg.norm(light), (num_worlds, 1)),
                     background=np.tile(np.asarray(DEFAULT_BACKGROUND, dtype=np.float64), (num_worlds, 1)),
                     cam_eye=np.tile(self.camera.eye, (num_worlds, 1)),
                     cam_rot=np.tile(self.camera.rotation, (num_worlds, 1, 1)))

    def render(self, looks: Looks, want_rgb: bool = True, worlds=None, want_geometry: bool = True):
        """``(rgb (K, H, W, 3) uint8, depth (K, H, W) float32 [m], segmentation (K, H, W) int32)`` of ``worlds``
        (K indices, default all) in one kernel call; ``looks`` has one row per world of the scene. Without
        ``want_rgb`` the rgb array is left unwritten, without ``want_geometry`` the depth and segmentation ones."""
        # the rotation matrices as the engine keeps them (a quaternion round trip would cost more than the frame)
        pos = self.worlds.scene.get_actor_translations(self.actors)
        rot = self.worlds.scene.get_actor_rotations(self.actors)
        goal = self.worlds.goal
        if worlds is not None:
            worlds = np.arange(self.worlds.num_worlds)[worlds]  # indices, from indices, a slice or a mask
            pos, rot, goal = pos[worlds], rot[worlds], goal[worlds]
            looks = Looks(*(getattr(looks, f)[worlds] for f in Looks.__dataclass_fields__))
        k = pos.shape[0]
        task = self.worlds.task
        if type(task).goal_markers is Task.goal_markers:  # a marker on each goal block: one reshape for all worlds
            centres = np.asarray(goal, dtype=np.float64).reshape(k, self.num_markers, 3)
        else:  # a task that places its markers itself, world by world
            centres = np.array([[p for p, _ in task.goal_markers(g)] for g in goal],
                               dtype=np.float64).reshape(k, self.num_markers, 3)
        cam = self.camera
        rgb = np.empty((k, cam.height, cam.width, 3), dtype=np.uint8)
        depth = np.empty((k, cam.height, cam.width), dtype=np.float32)
        seg = np.empty((k, cam.height, cam.width), dtype=np.int32)
        threads = min(worker_threads(), k)
        if self.cache_per_world:
            slots = np.arange(self.worlds.num_worlds, dtype=np.int64) if worlds is None else \
                np.asarray(worlds, dtype=np.int64).reshape(k)
            if len(np.unique(slots)) != k:
                threads = 1  # a world listed twice: its slot must not be drawn by two threads at once
        else:  # one slot per thread
            if self._cache["st_key"].shape[0] < threads:
                self._make_cache(threads)
            bounds = np.linspace(0, k, max(threads, 1) + 1).astype(int)
            slots = np.repeat(np.arange(len(bounds) - 1, dtype=np.int64), np.diff(bounds))
        per_world = [kernel_array(pos), kernel_array(rot), kernel_array(looks.actor_albedo),
                     kernel_array(centres), kernel_array(looks.marker_albedo), kernel_array(looks.checker),
                     kernel_array(looks.light), kernel_array(looks.background), kernel_array(looks.cam_eye),
                     kernel_array(looks.cam_rot), slots, rgb, depth, seg]
        c = self._cache

        def draw(lo, hi):
            p, r, alb, cen, mka, chk, light, bg, eye, crot, slot, out_rgb, out_depth, out_seg = (
                a[lo:hi] for a in per_world)
            render_worlds(self.tri_local, self.tri_actor, self.tri_flags, self.tri_seg, p, r, alb, self.mk_local,
                          self.mk_index, self.mk_radius, cen, mka, self.mk_alpha, chk, float(TABLE_PATTERN.cell_size_m),
                          self.checker_origin, light, bg, eye, crot, float(cam.focal_length_px), float(cam.near_m),
                          float(cam.far_m), self.ray_right, self.ray_up, self.shading_values,
                          int(self.shading.shadow_map_size), True, bool(want_rgb), bool(want_geometry),
                          self.empty_depth, slot,
                          c["st_key"], c["st_q"], c["st_id"], c["st_rgb"], c["st_depth"], c["st_seg"], c["st_xyz"],
                          c["st_tile"], c["mk_key"], c["mk_q"], c["mk_light"], c["mk_box"], out_rgb, out_depth,
                          out_seg)

        if threads < 2:
            draw(0, k)
        else:  # the opt-in worker threads (sim.initialize): contiguous slices of worlds, the kernel releases the GIL
            bounds = np.linspace(0, k, threads + 1).astype(int)
            list(_pool(threads).map(draw, bounds[:-1], bounds[1:]))
        return rgb, depth, seg


_POOLS = {}


def _pool(threads: int):
    """A thread pool of ``threads`` workers, made once per size."""
    if threads not in _POOLS:
        from concurrent.futures import ThreadPoolExecutor

        _POOLS[threads] = ThreadPoolExecutor(threads, thread_name_prefix="superdex-render")
    return _POOLS[threads]
