"""Headless pure-numpy software renderer for the manipulation environments (``rgb_array`` / ``depth_array``).

No OpenGL, no GPU: triangles are z-buffered by the vectorized span rasterizer in `raster.py`,
lit flat per face (Lambert sun + hemispheric ambient, `shading.py`), optionally with shadow-map
shadows and a procedural checker texture for tables, and translucent meshes (goal markers) are blended
back to front over the opaque image. Mesh builders live in `meshes.py` and are re-exported here.

Conventions:

* World: Z up (gravity -Z), metres.
* Camera frame (OpenGL style): x right, y up, looking down -z. ``depth`` is the distance along the camera's
  viewing axis (``-z_camera``) [m], not the Euclidean distance to the eye.
* Pixels: ``x`` (columns) to the right, ``y`` (rows) down; pixel ``(row r, column c)`` covers
  ``[c, c + 1) x [r, r + 1)`` in continuous pixel coordinates and is sampled at its centre. Square pixels;
  ``fov_y_deg`` is the full vertical field of view, the horizontal one follows from ``width / height``.
* Triangles: counter-clockwise seen from outside (right-hand normal outward). Back faces are culled.

Typical use::

    renderer = Renderer(camera=Camera.orbit(target=(0, 0, 0.05), distance_m=0.8, azimuth_deg=30,
                                            elevation_deg=35, width=480, height=480))
    rgb, depth = renderer.render([RenderMesh(*box_mesh((0.02, 0.02, 0.02)), color=(0.8, 0.2, 0.2))])
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .camera import Camera
from .meshes import box_mesh, cylinder_mesh, plane_mesh, pose_matrix, sphere_mesh, transform_mesh
from .raster import clip_triangles_near, collect_fragments, resolve_nearest
from .shading import CheckerPattern, ShadingParams, ShadowMap, face_lighting, rgb_array, unit_vector

__all__ = [
    "Camera", "RenderMesh", "Renderer", "CheckerPattern", "ShadingParams", "goal_marker",
    "box_mesh", "sphere_mesh", "cylinder_mesh", "plane_mesh", "transform_mesh", "pose_matrix",
]

DEFAULT_BACKGROUND = (0.82, 0.86, 0.92)
DEFAULT_LIGHT_DIRECTION = (-0.5, 0.25, -1.0)  # sun high behind the left shoulder of the default view
_MAX_SUPERSAMPLE = 4


@dataclass(frozen=True, eq=False)
class RenderMesh:
    """One triangle mesh to draw.

    Attributes:
        vertices: (V, 3) float world coordinates [m].
        triangles: (F, 3) int vertex indices, counter-clockwise seen from outside.
        color: (3,) RGB in [0, 1] for the whole mesh, or (F, 3) per face.
        alpha: opacity in (0, 1]; below 1 the mesh is blended over the opaque scene after it is drawn
            (it writes no depth, casts and receives no shadow).
        pattern: optional `CheckerPattern` replacing ``color`` (a table or floor); opaque meshes only.
        cast_shadow: whether it occludes the sun (set False for large floors and tables: the shadow map is
            fitted to the casters, so a huge caster coarsens every shadow).
        receive_shadow: whether shadows are drawn on it.
    """

    vertices: np.ndarray
    triangles: np.ndarray
    color: np.ndarray = (0.7, 0.7, 0.7)
    alpha: float = 1.0
    pattern: CheckerPattern | None = None
    cast_shadow: bool = True
    receive_shadow: bool = True

    def __post_init__(self):
        v = np.asarray(self.vertices, dtype=np.float64)
        t = np.asarray(self.triangles)
        if v.ndim != 2 or v.shape[1] != 3 or not np.all(np.isfinite(v)):
            raise ValueError(f"RenderMesh.vertices must be a finite (V, 3) array [m], got shape {v.shape}")
        if t.ndim != 2 or t.shape[1] != 3 or not (t.size == 0 or np.issubdtype(t.dtype, np.integer)):
            raise ValueError(f"RenderMesh.triangles must be an int (F, 3) array, got {t.dtype} {t.shape}")
        t = t.astype(np.int64)
        if t.size and (t.min() < 0 or t.max() >= len(v)):
            raise ValueError(f"RenderMesh.triangles index out of range [0, {len(v)}): min {t.min()}, max {t.max()}")
        if not (0.0 < self.alpha <= 1.0):
            raise ValueError(f"RenderMesh.alpha must be in (0, 1], got {self.alpha!r}")
        if self.pattern is not None and not isinstance(self.pattern, CheckerPattern):
            raise TypeError(f"RenderMesh.pattern must be a CheckerPattern or None, got {type(self.pattern).__name__}")
        if self.pattern is not None and self.alpha < 1.0:
            raise ValueError("RenderMesh.pattern is supported on opaque meshes only (alpha == 1)")
        object.__setattr__(self, "vertices", v)
        object.__setattr__(self, "triangles", t)
        object.__setattr__(self, "color", rgb_array(self.color, "RenderMesh.color", count=len(t)))


def goal_marker(position, radius_m: float = 0.02, color=(0.15, 0.85, 0.3), alpha: float = 0.5,
                subdivisions: int = 2) -> RenderMesh:
    """Goal-marker style: a translucent sphere at ``position`` (3,) [m] that casts no shadow
    (``alpha=1`` for a solid one)."""
    return RenderMesh(*sphere_mesh(radius_m, position, subdivisions), color=color, alpha=alpha,
                      cast_shadow=False, receive_shadow=False)


_PIXEL_DTYPE = np.dtype("<u4")  # packed 0xAABBGGRR: viewed as bytes it reads R, G, B, A


def _pack_rgb(planes: np.ndarray) -> np.ndarray:
    """(N,) packed pixels from (3, N) RGB planes in [0, 1] (clipped)."""
    c = (np.clip(planes, 0.0, 1.0) * np.float32(255.0) + np.float32(0.5)).astype(_PIXEL_DTYPE)
    return c[0] | (c[1] << 8) | (c[2] << 16) | _PIXEL_DTYPE.type(0xFF000000)


def _unpack_rgb(packed: np.ndarray) -> np.ndarray:
    """(3, N) float32 RGB planes in [0, 1] from (N,) packed pixels."""
    return np.stack([(packed >> shift) & 0xFF for shift in (0, 8, 16)]).astype(np.float32) / np.float32(255.0)


@dataclass(frozen=True)
class _Faces:
    """Meshes flattened to faces (F of them).

    corners (F, 3, 3) world [m]; normal (F, 3) unit outward; albedo (3, F) float32 RGB planes; mesh (F,)
    index into the mesh list; ambient, diffuse (F,) lighting intensities; sunlit (F,) packed colour in full
    sun ``albedo * (ambient + diffuse)``; dominant_axis (F,) argmax of |normal|.
    """

    corners: np.ndarray
    normal: np.ndarray
    albedo: np.ndarray
    mesh: np.ndarray
    ambient: np.ndarray
    diffuse: np.ndarray
    sunlit: np.ndarray
    dominant_axis: np.ndarray

    @classmethod
    def build(cls, meshes, light_direction, shading):
        corners = np.concatenate([m.vertices[m.triangles] for m in meshes]).reshape(-1, 3, 3)
        albedo = np.concatenate([np.broadcast_to(m.color, (len(m.triangles), 3)) for m in meshes]).reshape(-1, 3)
        mesh = np.repeat(np.arange(len(meshes)), [len(m.triangles) for m in meshes])
        normal = np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
        length = np.linalg.norm(normal, axis=1, keepdims=True)
        normal = np.divide(normal, length, out=np.zeros_like(normal), where=length > 0)
        ambient, diffuse = face_lighting(normal, light_direction, shading)
        albedo = albedo.T.astype(np.float32)
        sunlit = _pack_rgb(albedo * (ambient + diffuse).astype(np.float32))
        return cls(corners, normal, albedo, mesh, ambient, diffuse, sunlit, np.argmax(np.abs(normal), axis=1))


def _pixel_world_points(cam: Camera, pixels: np.ndarray, depth_m: np.ndarray):
    """World x, y, z (N,) float32 [m] of pixel centres (flat indices (N,)) at view-axis depths (N,) [m].

    float32 (unlike `Camera.unproject_components`): this runs on every table pixel, and the error (~1e-7
    relative) is far below a pixel's footprint.
    """
    right_per_depth, up_per_depth = cam.pixel_ray_slopes
    d = depth_m.astype(np.float32, copy=False)
    right_m, up_m = right_per_depth[pixels] * d, up_per_depth[pixels] * d
    r = cam.rotation.astype(np.float32)
    eye = cam.eye.astype(np.float32)
    return tuple(eye[k] + right_m * r[0, k] + up_m * r[1, k] - d * r[2, k] for k in range(3))


class Renderer:
    """Renders lists of `RenderMesh` to ``(rgb (H, W, 3) uint8, depth (H, W) float32 [m])``.

    Args:
        width, height: image size [pixels]; default 480 each, or the ``camera``'s size when one is given
            (a conflicting explicit size is an error).
        camera: default `Camera`; if omitted, an orbit view of the origin from 1 m (azimuth 45 deg,
            elevation 30 deg).
        background: (3,) RGB in [0, 1] of empty pixels.
        light_direction: (3,) direction the sunlight travels (world, normalized here); must point down
            (negative z) to light tops.
        shading: `ShadingParams` intensities and shadow-map settings.
        shadows: draw shadow-map shadows of ``cast_shadow`` meshes on ``receive_shadow`` meshes.
        supersample: render at ``supersample`` times the resolution per axis and average (anti-aliasing);
            the depth output is the nearest sample of each block.
    """

    def __init__(self, width: int | None = None, height: int | None = None, camera: Camera | None = None,
                 background=DEFAULT_BACKGROUND, light_direction=DEFAULT_LIGHT_DIRECTION, *,
                 shading: ShadingParams = ShadingParams(), shadows: bool = True, supersample: int = 1):
        if camera is None:
            camera = Camera.orbit(width=480 if width is None else width, height=480 if height is None else height)
        elif not isinstance(camera, Camera):
            raise TypeError(f"camera must be a Camera, got {type(camera).__name__}")
        if (width is not None and width != camera.width) or (height is not None and height != camera.height):
            raise ValueError(f"Renderer size {width}x{height} conflicts with the camera's "
                             f"{camera.width}x{camera.height}; pass one of them (or camera.with_size(...))")
        if not (isinstance(supersample, (int, np.integer)) and 1 <= supersample <= _MAX_SUPERSAMPLE):
            raise ValueError(f"supersample must be an int in [1, {_MAX_SUPERSAMPLE}], got {supersample!r}")
        if not isinstance(shading, ShadingParams):
            raise TypeError(f"shading must be ShadingParams, got {type(shading).__name__}")
        self.camera = camera
        self.background = rgb_array(background, "background")
        self.light_direction = unit_vector(light_direction, "light_direction")
        self.shading = shading
        self.shadows = bool(shadows)
        self.supersample = int(supersample)

    def render(self, meshes, camera: Camera | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Draw ``meshes`` (iterable of `RenderMesh`) seen by ``camera`` (default: the renderer's).

        Returns:
            ``rgb`` (H, W, 3) uint8 and ``depth`` (H, W) float32 [m] along the view axis, ``inf`` where no
            opaque surface lies within [near_m, far_m]; (H, W) is the camera's (height, width).
        """
        camera = self.camera if camera is None else camera
        if not isinstance(camera, Camera):
            raise TypeError(f"camera must be a Camera, got {type(camera).__name__}")
        meshes = list(meshes)
        for i, mesh in enumerate(meshes):
            if not isinstance(mesh, RenderMesh):
                raise TypeError(f"meshes[{i}] must be a RenderMesh, got {type(mesh).__name__}")
        ss = self.supersample
        cam = camera if ss == 1 else camera.with_size(camera.width * ss, camera.height * ss)
        n_pixels = cam.width * cam.height

        image = np.full(n_pixels, _pack_rgb(self.background[:, None])[0], dtype=_PIXEL_DTYPE)
        depth = np.full(n_pixels, np.inf, dtype=np.float32)
        nearness = np.zeros(n_pixels, dtype=np.float32)  # 1 / depth of the opaque surface, 0 where empty
        opaque = [m for m in meshes if m.alpha >= 1.0 and len(m.triangles)]
        if opaque:
            faces = _Faces.build(opaque, self.light_direction, self.shading)
            q, face_id = self._rasterize(cam, faces)
            hit = np.flatnonzero((face_id >= 0) & (q >= np.float32(1.0 / cam.far_m)))
            nearness[hit] = q[hit]
            depth[hit] = 1.0 / q[hit]
            image[hit] = self._shade_opaque(cam, opaque, faces, hit, face_id[hit], depth[hit])
        translucent = [m for m in meshes if m.alpha < 1.0 and len(m.triangles)]
        if translucent:
            self._blend_translucent(cam, translucent, image, nearness)

        rgb = image.view(np.uint8).reshape(cam.height, cam.width, 4)[:, :, :3]
        depth = depth.reshape(cam.height, cam.width)
        if ss > 1:
            blocks = rgb.reshape(camera.height, ss, camera.width, ss, 3).astype(np.float32)
            rgb = (blocks.mean(axis=(1, 3)) + 0.5).astype(np.uint8)
            depth = depth.reshape(camera.height, ss, camera.width, ss).min(axis=(1, 3))
        return np.ascontiguousarray(rgb), depth

    # -- stages -------------------------------------------------------------------------------------------

    @staticmethod
    def _project(cam: Camera, faces: _Faces):
        """Cull back faces, clip at the near plane, project. Returns (screen (T, 3, 2), q (T, 3), face (T,))."""
        front = np.einsum("fi,fi->f", faces.normal, cam.eye - faces.corners[:, 0]) > 0.0
        front_ids = np.flatnonzero(front)
        view = cam.world_to_camera(faces.corners[front_ids])  # (T, 3, 3)
        view, source = clip_triangles_near(view, cam.near_m)
        depth = -view[:, :, 2]
        f = cam.focal_length_px
        screen = np.stack([0.5 * cam.width + f * view[:, :, 0] / depth,
                           0.5 * cam.height - f * view[:, :, 1] / depth], axis=-1)
        return screen, 1.0 / depth, front_ids[source]

    def _rasterize(self, cam: Camera, faces: _Faces):
        screen, q, face_ids = self._project(cam, faces)
        return resolve_nearest(screen, q, face_ids, cam.width, cam.height)

    def _shade_opaque(self, cam, meshes, faces: _Faces, pixels, face_id, depth_m):
        """(N,) packed colours of the N visible opaque pixels (flat indices ``pixels``, depths [m]).

        Most pixels take their face's sunlit colour. Pixels that need their world position (reconstructed
        from depth) are shaded in groups with contiguous per-pixel arrays: one group per patterned mesh,
        then one for all other shadow-receiving faces that the sun reaches.
        """
        colour = np.take(faces.sunlit, face_id)
        casters = [m for m in meshes if m.cast_shadow] if self.shadows else []
        receives = np.array([m.receive_shadow for m in meshes]) & bool(casters)
        patterned = np.array([m.pattern is not None for m in meshes])
        groups = [(k, np.flatnonzero(faces.mesh[face_id] == k)) for k in np.flatnonzero(patterned)]
        plain_receiver_face = (receives & ~patterned)[faces.mesh] & (faces.diffuse > 0.0)
        if plain_receiver_face.any():
            groups.append((None, np.flatnonzero(plain_receiver_face[face_id])))
        shadow_map = None
        for k, sel in groups:
            if sel.size == 0:
                continue
            fid = face_id[sel]
            x, y, z = _pixel_world_points(cam, pixels[sel], depth_m[sel])
            if k is None:
                albedo = np.take(faces.albedo, fid, axis=1)
            else:
                albedo = meshes[k].pattern.albedo_planes(x, y, z, faces.dominant_axis[fid])
            sun = 1.0  # fraction of the sun reaching each pixel
            if k is None or receives[k]:
                if shadow_map is None:
                    corners = np.concatenate([m.vertices[m.triangles] for m in casters]).reshape(-1, 3, 3)
                    shadow_map = ShadowMap(corners, self.light_direction, self.shading)
                sun = shadow_map.visibility_at(x, y, z)
            light = faces.ambient[fid] + faces.diffuse[fid] * sun
            colour[sel] = _pack_rgb(albedo * light.astype(np.float32))
        return colour

    def _blend_translucent(self, cam, meshes, image, opaque_nearness):
        """Blend translucent fragments in front of the opaque surface into the packed ``image`` (P,), far to
        near (standard "over" compositing per layer)."""
        faces = _Faces.build(meshes, self.light_direction, self.shading)
        screen, q, face_ids = self._project(cam, faces)
        frag = collect_fragments(screen, q, face_ids, cam.width, cam.height)
        keep = (frag.nearness > opaque_nearness[frag.pixel_index]) & (frag.nearness >= 1.0 / cam.far_m)
        pix, near, fid = frag.pixel_index[keep], frag.nearness[keep], frag.triangle_id[keep]
        if pix.size == 0:
            return
        order = np.lexsort((near, pix))  # by pixel, then far (small q) to near
        pix, fid = pix[order], fid[order]
        first_of_pixel = np.flatnonzero(np.r_[True, pix[1:] != pix[:-1]])
        layer = np.arange(pix.size) - np.repeat(first_of_pixel, np.diff(np.r_[first_of_pixel, pix.size]))
        colour = np.take(faces.albedo, fid, axis=1) * (faces.ambient[fid] + faces.diffuse[fid]).astype(np.float32)
        alpha = np.array([m.alpha for m in meshes], dtype=np.float32)[faces.mesh[fid]]
        for level in range(int(layer.max()) + 1):  # each pixel appears at most once per layer
            sel = np.flatnonzero(layer == level)
            p, a = pix[sel], alpha[sel]
            image[p] = _pack_rgb(a * colour[:, sel] + (1.0 - a) * _unpack_rgb(image[p]))
