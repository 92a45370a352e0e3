"""Pinhole look-at camera for the software renderer (`rendering.py`): view and projection matrices,
intrinsics, point projection and depth unprojection.

Conventions: world Z up [m]; camera frame x right, y up, looking down -z (OpenGL); depth is the distance
along the viewing axis; pixel (row r, column c) covers [c, c + 1) x [r, r + 1) in continuous pixel
coordinates (x right, y down) and is sampled at its centre; square pixels, vertical field of view.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass

import numpy as np

from .shading import unit_vector

__all__ = ["Camera"]


@dataclass(frozen=True, eq=False)
class Camera:
    """Pinhole look-at camera.

    Attributes:
        eye: (3,) camera position, world [m].
        target: (3,) point the camera looks at, world [m]; must differ from ``eye``.
        up: (3,) world direction that appears upward in the image (default +Z); not parallel to the view.
        fov_y_deg: full vertical field of view [deg] in (0, 180).
        width, height: image size [pixels].
        near_m, far_m: clip distances along the view axis [m], 0 < near_m < far_m.

    Matrices (column vectors, homogeneous):

    * ``view_matrix()`` ``V`` maps world to camera coordinates: rows of its rotation are the camera axes
      ``right = normalize(forward x up)``, ``true_up = right x forward``, ``back = -forward``; translation
      ``-R @ eye``.
    * ``projection_matrix()`` ``P`` is the OpenGL perspective matrix, with ``f = 1 / tan(fov_y / 2)`` and
      ``aspect = width / height``::

          [[f / aspect, 0, 0,                            0                           ],
           [0,          f, 0,                            0                           ],
           [0,          0, (far + near) / (near - far),  2 far near / (near - far)   ],
           [0,          0, -1,                           0                           ]]

      so ``clip = P @ V @ [p, 1]``, ``w = depth``, normalized device coordinates ``ndc = clip[:3] / w`` in
      [-1, 1] (z: near -> -1, far -> +1), and pixel coordinates ``x = (ndc_x + 1) / 2 * width``,
      ``y = (1 - ndc_y) / 2 * height``.
    * ``intrinsic_matrix()`` ``K`` is the equivalent pinhole matrix ``[[fy, 0, cx], [0, fy, cy], [0, 0, 1]]``
      with ``fy = height / (2 tan(fov_y / 2))``, ``(cx, cy) = (width / 2, height / 2)``, acting on
      ``(x_cam, -y_cam, depth)``.
    """

    eye: np.ndarray
    target: np.ndarray
    up: np.ndarray = dataclasses.field(default_factory=lambda: np.array([0.0, 0.0, 1.0]))
    fov_y_deg: float = 45.0
    width: int = 480
    height: int = 480
    near_m: float = 0.01
    far_m: float = 10.0

    def __post_init__(self):
        for name in ("eye", "target", "up"):
            value = np.asarray(getattr(self, name), dtype=np.float64)
            if value.shape != (3,) or not np.all(np.isfinite(value)):
                raise ValueError(f"Camera.{name} must be 3 finite numbers [m], got {getattr(self, name)!r}")
            value.setflags(write=False)
            object.__setattr__(self, name, value)
        for name in ("width", "height"):
            value = getattr(self, name)
            if not (isinstance(value, (int, np.integer)) and value > 0):
                raise ValueError(f"Camera.{name} must be a positive int [pixels], got {value!r}")
        if not (0.0 < self.fov_y_deg < 180.0):
            raise ValueError(f"Camera.fov_y_deg must be in (0, 180) degrees, got {self.fov_y_deg!r}")
        if not (0.0 < self.near_m < self.far_m < np.inf):
            raise ValueError(f"Camera needs 0 < near_m < far_m < inf [m], got near_m={self.near_m!r}, "
                             f"far_m={self.far_m!r}")
        view = self.target - self.eye
        if np.linalg.norm(view) < 1e-9:
            raise ValueError(f"Camera.eye and Camera.target coincide at {self.eye.tolist()}")
        if np.linalg.norm(np.cross(view / np.linalg.norm(view), unit_vector(self.up, "Camera.up"))) < 1e-6:
            raise ValueError(f"Camera.up {self.up.tolist()} is parallel to the viewing direction "
                             f"{view.tolist()}; choose another up vector")

    @classmethod
    def orbit(cls, target=(0.0, 0.0, 0.0), distance_m: float = 1.0, azimuth_deg: float = 45.0,
              elevation_deg: float = 30.0, **camera_kwargs) -> "Camera":
        """Camera on a sphere of radius ``distance_m`` [m] around ``target`` (3,) [m], looking at it.

        ``azimuth_deg`` is measured in the world x-y plane from +X toward +Y, ``elevation_deg`` above that
        plane (Z up): ``eye = target + d (cos el cos az, cos el sin az, sin el)``. ``camera_kwargs`` are the
        other `Camera` fields (``up``, ``fov_y_deg``, ``width``, ``height``, ``near_m``, ``far_m``).
        """
        if not (np.isfinite(distance_m) and distance_m > 0.0):
            raise ValueError(f"orbit distance_m must be a positive number [m], got {distance_m!r}")
        az, el = np.deg2rad(azimuth_deg), np.deg2rad(elevation_deg)
        target = np.asarray(target, dtype=np.float64)
        offset = distance_m * np.array([np.cos(el) * np.cos(az), np.cos(el) * np.sin(az), np.sin(el)])
        return cls(eye=target + offset, target=target, **camera_kwargs)

    def with_size(self, width: int, height: int) -> "Camera":
        """The same camera with another image size (same vertical field of view)."""
        return dataclasses.replace(self, width=width, height=height)

    @functools.cached_property
    def rotation(self) -> np.ndarray:
        """(3, 3) camera-from-world rotation; rows are the camera's right, up and back axes in world."""
        forward = (self.target - self.eye) / np.linalg.norm(self.target - self.eye)
        right = np.cross(forward, self.up)
        right /= np.linalg.norm(right)
        rotation = np.stack([right, np.cross(right, forward), -forward])
        rotation.setflags(write=False)
        return rotation

    @functools.cached_property
    def pixel_ray_slopes(self) -> tuple[np.ndarray, np.ndarray]:
        """Per-pixel ``(right_per_depth, up_per_depth)``, two (height * width,) float32 arrays over flat pixel
        indices: a pixel centre at view depth ``d`` lies at ``d * right_per_depth`` along the camera's right
        axis and ``d * up_per_depth`` along its up axis. Cached (the camera is immutable)."""
        f = self.focal_length_px
        cols = (np.arange(self.width) + 0.5 - 0.5 * self.width) / f
        rows = (0.5 * self.height - np.arange(self.height) - 0.5) / f
        right = np.broadcast_to(cols[None, :], (self.height, self.width)).astype(np.float32).ravel()
        up = np.broadcast_to(rows[:, None], (self.height, self.width)).astype(np.float32).ravel()
        right.setflags(write=False)
        up.setflags(write=False)
        return right, up

    def view_matrix(self) -> np.ndarray:
        """(4, 4) camera-from-world transform (see class docstring)."""
        view = np.eye(4)
        view[:3, :3] = self.rotation
        view[:3, 3] = -self.rotation @ self.eye
        return view

    @property
    def focal_length_px(self) -> float:
        """Focal length [pixels] (square pixels): ``height / (2 tan(fov_y / 2))``."""
        return 0.5 * self.height / np.tan(0.5 * np.deg2rad(self.fov_y_deg))

    def projection_matrix(self) -> np.ndarray:
        """(4, 4) OpenGL perspective projection (see class docstring)."""
        f = 1.0 / np.tan(0.5 * np.deg2rad(self.fov_y_deg))
        n, fa = self.near_m, self.far_m
        return np.array([[f * self.height / self.width, 0.0, 0.0, 0.0],
                         [0.0, f, 0.0, 0.0],
                         [0.0, 0.0, (fa + n) / (n - fa), 2.0 * fa * n / (n - fa)],
                         [0.0, 0.0, -1.0, 0.0]])

    def intrinsic_matrix(self) -> np.ndarray:
        """(3, 3) pinhole intrinsics ``K`` [pixels] (see class docstring)."""
        fy = self.focal_length_px
        return np.array([[fy, 0.0, 0.5 * self.width], [0.0, fy, 0.5 * self.height], [0.0, 0.0, 1.0]])

    def project_points(self, points) -> tuple[np.ndarray, np.ndarray]:
        """Project world points (N, 3) [m] with ``P @ V``.

        Returns ``(pixel_xy (N, 2) continuous pixel coordinates, depth_m (N,) along the view axis)``;
        the pixel containing a point is ``(row, col) = floor(y), floor(x)``. Points behind the camera get
        non-positive depth and meaningless pixel coordinates.
        """
        p = np.asarray(points, dtype=np.float64).reshape(-1, 3)
        homogeneous = np.concatenate([p, np.ones((len(p), 1))], axis=1)
        clip = np.einsum("ij,nj->ni", self.projection_matrix() @ self.view_matrix(), homogeneous)
        depth = clip[:, 3]
        with np.errstate(divide="ignore", invalid="ignore"):
            ndc = clip[:, :2] / depth[:, None]
        pixel_xy = np.stack([(ndc[:, 0] + 1.0) * 0.5 * self.width, (1.0 - ndc[:, 1]) * 0.5 * self.height], axis=1)
        return pixel_xy, depth

    def unproject_pixels(self, pixel_xy, depth_m) -> np.ndarray:
        """World points (N, 3) [m] at continuous pixel coordinates (N, 2) and view-axis depths (N,) [m]
        (inverse of `project_points`); e.g. a depth image to a point cloud."""
        xy = np.asarray(pixel_xy, dtype=np.float64).reshape(-1, 2)
        return np.stack(self.unproject_components(xy[:, 0], xy[:, 1], depth_m), axis=1)

    def unproject_components(self, x, y, depth_m) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """`unproject_pixels` on component arrays: pixel x, y (N,) and depth (N,) [m] to world x, y, z (N,)."""
        d = np.asarray(depth_m, dtype=np.float64).reshape(-1)
        f = self.focal_length_px
        right_m = (np.asarray(x, dtype=np.float64) - 0.5 * self.width) * (d / f)
        up_m = (0.5 * self.height - np.asarray(y, dtype=np.float64)) * (d / f)
        # world = eye + right_m * right + up_m * up + d * forward, component by component: for N ~ 1e5 an
        # (N, 3) @ (3, 3) matmul measured ~10x slower than these 1-D lines.
        r = self.rotation
        return tuple(self.eye[k] + right_m * r[0, k] + up_m * r[1, k] - d * r[2, k] for k in range(3))

    def world_to_camera(self, points) -> np.ndarray:
        """Camera coordinates (..., 3) [m] of world points (..., 3) [m] (x right, y up, looking down -z)."""
        return np.einsum("...i,ji->...j", np.asarray(points, dtype=np.float64) - self.eye, self.rotation)
