"""Shading for the software renderer: lighting parameters, flat per-face lighting, the procedural checker
pattern for tables and floors, and an orthographic shadow map.

Lighting model (per face, flat): ``colour = albedo * (ambient(n) + diffuse * max(0, -n . l) * visibility)``
with ``l`` the unit direction the light *travels* (a sun), ``n`` the outward unit face normal, and a
hemispheric ambient ``ambient(n) = ground + (sky - ground) * (1 + n_z) / 2`` (sky above, ground below: Z-up
world). ``visibility`` in [0, 1] comes from the shadow map (1 when shadows are off). Colours are display
RGB in [0, 1] (no gamma handling); results above 1 clip.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .raster import resolve_nearest

__all__ = ["ShadingParams", "CheckerPattern", "face_lighting", "ShadowMap", "unit_vector", "rgb_array"]


def unit_vector(value, name: str) -> np.ndarray:
    """(3,) float64 unit vector from a non-zero finite 3-vector; ValueError naming ``name`` otherwise."""
    v = np.asarray(value, dtype=np.float64)
    if v.shape != (3,) or not np.all(np.isfinite(v)):
        raise ValueError(f"{name} must be 3 finite numbers, got {value!r}")
    norm = np.linalg.norm(v)
    if norm < 1e-12:
        raise ValueError(f"{name} must be non-zero, got {value!r}")
    return v / norm


def rgb_array(value, name: str, count: int | None = None) -> np.ndarray:
    """Colour(s) in [0, 1]: (3,) or, when ``count`` is given, (3,) or (count, 3). Returns float64."""
    c = np.asarray(value, dtype=np.float64)
    allowed = [(3,)] + ([(count, 3)] if count is not None else [])
    if c.shape not in allowed:
        raise ValueError(f"{name} must have shape {' or '.join(map(str, allowed))}, got {c.shape}")
    if not np.all((c >= 0.0) & (c <= 1.0)):
        raise ValueError(f"{name} values must lie in [0, 1] (display RGB), got min {c.min()}, max {c.max()}")
    return c


@dataclass(frozen=True)
class ShadingParams:
    """Light intensities (fractions of albedo) and shadow-map settings.

    Attributes:
        sky_ambient: ambient intensity for faces whose normal points straight up (+z).
        ground_ambient: ambient intensity for faces whose normal points straight down (-z).
        diffuse: Lambert intensity of the sun at normal incidence.
        shadow_map_size: shadow map resolution [texels per side]; the map is fitted to the shadow casters.
        shadow_bias_texels: depth bias against self-shadowing ("acne"), in shadow-map texels.
    """

    sky_ambient: float = 0.42
    ground_ambient: float = 0.22
    diffuse: float = 0.6
    shadow_map_size: int = 256
    shadow_bias_texels: float = 2.0

    def __post_init__(self):
        for name in ("sky_ambient", "ground_ambient", "diffuse", "shadow_bias_texels"):
            value = getattr(self, name)
            if not (np.isfinite(value) and value >= 0.0):
                raise ValueError(f"ShadingParams.{name} must be a finite number >= 0, got {value!r}")
        if not (isinstance(self.shadow_map_size, (int, np.integer)) and 16 <= self.shadow_map_size <= 4096):
            raise ValueError(f"ShadingParams.shadow_map_size must be an int in [16, 4096], got "
                             f"{self.shadow_map_size!r}")


def face_lighting(normals: np.ndarray, light_direction: np.ndarray, params: ShadingParams):
    """Per-face ``(ambient (F,), diffuse (F,))`` intensities for unit outward normals (F, 3) and the unit
    light travel direction (3,); see the module docstring."""
    ambient = params.ground_ambient + (params.sky_ambient - params.ground_ambient) * 0.5 * (1.0 + normals[:, 2])
    diffuse = params.diffuse * np.maximum(0.0, -(normals @ light_direction))
    return ambient, diffuse


@dataclass(frozen=True, eq=False)
class CheckerPattern:
    """Procedural checkerboard (optionally with grid lines) evaluated at each pixel's world position.

    The two world axes used on a face are the ones perpendicular to its dominant normal axis (x-y on a
    table top, y-z or x-z on its sides), so a face lying exactly on a cell boundary shows no noise.

    Attributes:
        cell_size_m: side of one checker cell [m] > 0.
        color_a, color_b: (3,) RGB in [0, 1] of cells with even / odd ``floor(u / s) + floor(v / s)``.
        line_color: (3,) RGB of grid lines, or None for no lines.
        line_width_m: full width of grid lines [m] (used only with ``line_color``).
        origin: (3,) world point [m] where four cells meet.
    """

    cell_size_m: float = 0.1
    color_a: tuple = (0.80, 0.68, 0.52)
    color_b: tuple = (0.72, 0.60, 0.45)
    line_color: tuple | None = None
    line_width_m: float = 0.004
    origin: tuple = field(default=(0.0, 0.0, 0.0))

    def __post_init__(self):
        if not (np.isfinite(self.cell_size_m) and self.cell_size_m > 0.0):
            raise ValueError(f"CheckerPattern.cell_size_m must be a positive number [m], got {self.cell_size_m!r}")
        if not (np.isfinite(self.line_width_m) and 0.0 <= self.line_width_m < self.cell_size_m):
            raise ValueError(f"CheckerPattern.line_width_m must be in [0, cell_size_m), got {self.line_width_m!r}")
        object.__setattr__(self, "color_a", rgb_array(self.color_a, "CheckerPattern.color_a"))
        object.__setattr__(self, "color_b", rgb_array(self.color_b, "CheckerPattern.color_b"))
        if self.line_color is not None:
            object.__setattr__(self, "line_color", rgb_array(self.line_color, "CheckerPattern.line_color"))
        origin = np.asarray(self.origin, dtype=np.float64)
        if origin.shape != (3,):
            raise ValueError(f"CheckerPattern.origin must be a 3-vector [m], got {self.origin!r}")
        object.__setattr__(self, "origin", origin)

    def albedo(self, points: np.ndarray, normals: np.ndarray) -> np.ndarray:
        """(N, 3) float32 albedo at world points (N, 3) [m] on faces with unit normals (N, 3)."""
        points = np.asarray(points, dtype=np.float64)
        dominant = np.argmax(np.abs(np.asarray(normals)), axis=1)
        return self.albedo_planes(points[:, 0], points[:, 1], points[:, 2], dominant).T

    def albedo_planes(self, x, y, z, dominant_axis) -> np.ndarray:
        """(3, N) float32 albedo (channel planes) from world coordinates x, y, z (N,) [m] and the faces'
        dominant normal axis (N,) in {0, 1, 2}, which selects the texture axes (y, z), (x, z) or (x, y)."""
        # 1-D component arrays throughout: this runs on every table pixel.
        inv_cell = np.float32(1.0 / self.cell_size_m)
        u = (np.where(dominant_axis == 0, y - self.origin[1], x - self.origin[0]) * inv_cell).astype(np.float32)
        v = (np.where(dominant_axis == 2, y - self.origin[1], z - self.origin[2]) * inv_cell).astype(np.float32)
        cell_u, cell_v = np.floor(u), np.floor(v)
        odd = (cell_u + cell_v).astype(np.int32) & 1
        palette = np.stack([self.color_a, self.color_b] + ([self.line_color] if self.line_color is not None
                                                           else [])).astype(np.float32).T  # (3, K)
        if self.line_color is not None and self.line_width_m > 0.0:
            u -= cell_u
            v -= cell_v
            to_line_cells = np.minimum(np.minimum(u, 1.0 - u), np.minimum(v, 1.0 - v))
            odd[to_line_cells < np.float32(0.5 * self.line_width_m * inv_cell)] = 2
        return np.take(palette, odd, axis=1)


class ShadowMap:
    """Orthographic depth map along the light direction, fitted to the shadow casters' extent.

    The map's frame is ``(e1, e2, l)`` with ``l`` the light travel direction; a world point ``p`` has map
    coordinates ``(p . e1, p . e2)`` [m] and light depth ``p . l`` [m] (larger is farther from the light).
    Each texel stores the smallest light depth of any caster face turned toward the light (faces turned
    away are hidden behind those of a closed mesh, so they are skipped). A border of empty texels surrounds
    the casters, so lookups clamped to the map edge read "no occluder".
    """

    _MARGIN_TEXELS = 2

    def __init__(self, caster_corners: np.ndarray, light_direction: np.ndarray, params: ShadingParams):
        """``caster_corners`` (C, 3, 3) world triangle corners [m]; ``light_direction`` (3,) unit."""
        l_dir = light_direction
        helper = np.array([1.0, 0.0, 0.0]) if abs(l_dir[2]) > 0.9 else np.array([0.0, 0.0, 1.0])
        e1 = np.cross(helper, l_dir)
        e1 /= np.linalg.norm(e1)
        frame = np.stack([e1, np.cross(l_dir, e1), l_dir])  # rows: e1, e2, l
        normals = np.cross(caster_corners[:, 1] - caster_corners[:, 0], caster_corners[:, 2] - caster_corners[:, 0])
        toward_light = caster_corners[normals @ l_dir < 0.0]
        local = np.einsum("cki,ji->ckj", toward_light, frame)  # (C', 3, 3): (a, b, light depth) [m]
        size = int(params.shadow_map_size)
        margin = self._MARGIN_TEXELS
        if len(local):
            lo, hi = local.reshape(-1, 3).min(axis=0), local.reshape(-1, 3).max(axis=0)
        else:
            lo = hi = np.zeros(3)
        texel_m = max(float(np.max(hi[:2] - lo[:2])), 1e-6) / (size - 2 * margin)
        origin = lo[:2] - margin * texel_m
        # Nearness for the rasterizer must be positive and larger when nearer the light.
        depth_offset = float(hi[2]) + 1.0
        q, _ = resolve_nearest((local[:, :, :2] - origin) / texel_m, depth_offset - local[:, :, 2],
                               np.arange(len(local)), size, size)
        self.size = size
        self.texel_m = texel_m
        self.occluder_depth = np.where(q > 0.0, depth_offset - q, np.inf).astype(np.float32)  # (size * size,)
        # World -> (texel-centre column, texel-centre row, biased light depth) as affine maps, float32.
        bias_m = params.shadow_bias_texels * texel_m + 1e-5
        self._linear = (frame / np.array([[texel_m], [texel_m], [1.0]])).astype(np.float32)  # (3, 3)
        self._offset = np.array([-origin[0] / texel_m - 0.5, -origin[1] / texel_m - 0.5, -bias_m], np.float32)

    def visibility(self, points: np.ndarray) -> np.ndarray:
        """(N,) fraction in [0, 1] of the sun that reaches world points (N, 3) [m]."""
        points = np.asarray(points, dtype=np.float32)
        return self.visibility_at(points[:, 0], points[:, 1], points[:, 2])

    def visibility_at(self, x, y, z) -> np.ndarray:
        """(N,) float32 sun visibility in [0, 1] at world coordinates x, y, z (N,) [m]; 2x2 bilinear
        percentage-closer filtering softens shadow edges over one texel."""
        m, o = self._linear, self._offset
        tx = x * m[0, 0] + y * m[0, 1] + z * m[0, 2] + o[0]  # texel-centre coordinates
        ty = x * m[1, 0] + y * m[1, 1] + z * m[1, 2] + o[1]
        light_depth = x * m[2, 0] + y * m[2, 1] + z * m[2, 2] + o[2]
        # Clamp into the map: beyond its edge the border texels are empty, i.e. lit.
        np.clip(tx, 0.0, self.size - 1.001, out=tx)
        np.clip(ty, 0.0, self.size - 1.001, out=ty)
        col, row = tx.astype(np.int32), ty.astype(np.int32)
        fx, fy = tx - col, ty - row
        base = row * self.size + col
        occluder = self.occluder_depth
        lit_00 = light_depth <= occluder[base]
        lit_10 = light_depth <= occluder[base + 1]
        base += self.size
        lit_01 = light_depth <= occluder[base]
        lit_11 = light_depth <= occluder[base + 1]
        lower = lit_00 + fx * (lit_10.astype(np.float32) - lit_00)
        upper = lit_01 + fx * (lit_11.astype(np.float32) - lit_01)
        return lower + fy * (upper - lower)
