"""Pictures of a task's world: every actor of the scene as a render mesh, each goal marker the task declares, a
default camera and a human window."""

from __future__ import annotations

import numpy as np

from superdex_gym.sim import lie

from .renderer import Camera, CheckerPattern, Renderer, RenderMesh, goal_marker
from .meshes import plane_mesh

TABLE_PATTERN = CheckerPattern(cell_size_m=0.1, color_a=(0.80, 0.66, 0.48), color_b=(0.74, 0.60, 0.42))
STATIC_COLOR = (0.62, 0.64, 0.66)  # floors and walls nobody named a colour for
DYNAMIC_COLOR = (0.3, 0.45, 0.8)
PLANE_HALF_SIZE_M = 2.0  # an infinite plane is drawn as a square this large around the origin


def default_camera(width: int, height: int, distance_m=0.9, azimuth_deg=-135.0, elevation_deg=40.0,
                   target=(0.0, 0.0, 0.0), fov_y_deg=45.0) -> Camera:
    return Camera.orbit(target=target, distance_m=distance_m, azimuth_deg=azimuth_deg, elevation_deg=elevation_deg,
                        width=width, height=height, fov_y_deg=fov_y_deg)


def _local_mesh(shape) -> tuple[np.ndarray, np.ndarray]:
    """A shape's surface in its actor's frame; a plane (``normal . x = d``) as a large square."""
    if shape.kind == "plane":
        n = np.asarray(shape.normal)
        verts, tris = plane_mesh(PLANE_HALF_SIZE_M, PLANE_HALF_SIZE_M)  # in z = 0, facing +z
        u = np.cross(n, [1.0, 0.0, 0.0] if abs(n[0]) < 0.9 else [0.0, 1.0, 0.0])
        u /= np.linalg.norm(u)
        rot = np.stack([u, np.cross(n, u), n], axis=1)  # local z -> n
        return verts @ rot.T + shape.distance * n, tris
    if shape.vertices is None:
        raise ValueError(f"no render mesh for a {shape.kind!r} shape")
    return shape.vertices, shape.triangles


class SceneView:
    """Renders world ``world`` of a task's worlds: every actor of its scene (the table checkered, colours from the
    task's and robot's ``colors`` by actor name) and the task's goal markers."""

    def __init__(self, worlds, width: int = 480, height: int = 480, camera: Camera | None = None):
        for name, v in (("width", width), ("height", height)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 16 or v > 4096:
                raise ValueError(f"render {name} must be an integer in [16, 4096], got {v!r}")
        self.worlds = worlds
        self.camera = camera or default_camera(int(width), int(height))
        self.renderer = Renderer(camera=self.camera)
        self._actors = list(worlds.bodies)
        self._local = [_local_mesh(a.get_shape()) for a in self._actors]
        colors = {**worlds.task.colors, **worlds.robot.colors}
        self._style = []
        for actor in self._actors:
            name, static = actor.get_name(), actor.is_static()
            if name == "table":
                style = {"pattern": TABLE_PATTERN}
            else:
                style = {"color": colors.get(name, STATIC_COLOR if static else DYNAMIC_COLOR)}
            # large static pieces cast no shadow: the shadow map is fitted to the casters, and they would coarsen it
            self._style.append({**style, "cast_shadow": not static})

    def meshes(self, world: int) -> list:
        pos, quat = self.worlds.scene.get_actor_poses(self._actors)
        rot = lie.quat_to_matrix(quat[world])
        out = [RenderMesh(verts @ rot[k].T + pos[world, k], tris, **style)
               for k, ((verts, tris), style) in enumerate(zip(self._local, self._style))]
        out += [goal_marker(p, radius_m=r) for p, r in self.worlds.task.goal_markers(self.worlds.goal[world])]
        return out

    def rgb(self, world: int = 0) -> np.ndarray:
        return self.renderer.render(self.meshes(world))[0]

    def depth(self, world: int = 0) -> np.ndarray:
        return self.renderer.render(self.meshes(world))[1]


HUMAN_MODE_HINT = ("render_mode='human' needs pygame: pip install 'superdex-gym[human]' (or pip install pygame); "
                   "use render_mode='rgb_array' for headless rendering")


def human_mode_available() -> bool:
    """Whether pygame can be imported, without importing it: envs declare ``human`` only where it can run, so the
    Gymnasium checker (which makes every declared mode) passes out of the box."""
    import importlib.util

    try:
        return importlib.util.find_spec("pygame") is not None
    except (ImportError, ValueError):  # ValueError: pygame blocked in sys.modules (set to None)
        return False


def _use_offscreen_driver_without_display() -> None:
    """On a Linux machine with no display, SDL's dummy driver lets the window run (nothing is shown) instead of
    failing; the user is told once."""
    import os
    import sys

    if (sys.platform.startswith("linux") and "SDL_VIDEODRIVER" not in os.environ
            and not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY")):
        os.environ["SDL_VIDEODRIVER"] = "dummy"
        import warnings

        warnings.warn("render_mode='human': no DISPLAY, so the pygame window is offscreen (SDL_VIDEODRIVER=dummy); "
                      "use render_mode='rgb_array' to get the frames", stacklevel=3)


class HumanWindow:
    """A window through pygame (optional: ``pip install superdex-gym[human]``)."""

    def __init__(self, width: int, height: int, fps: float):
        _use_offscreen_driver_without_display()
        try:
            import pygame
        except ImportError as exc:
            raise ImportError(HUMAN_MODE_HINT) from exc
        self._pygame = pygame
        pygame.display.init()  # the display only: pygame.init() also opens audio (ALSA errors without a sound card)
        self._screen = pygame.display.set_mode((width, height))
        pygame.display.set_caption("SuperDex Gym")
        self._clock = pygame.time.Clock()
        self._fps = fps

    def show(self, rgb: np.ndarray) -> None:
        pg = self._pygame
        pg.event.pump()
        surface = pg.surfarray.make_surface(np.swapaxes(rgb, 0, 1))
        self._screen.blit(surface, (0, 0))
        pg.display.flip()
        self._clock.tick(self._fps)

    def close(self) -> None:
        self._pygame.display.quit()
