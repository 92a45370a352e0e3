"""Pictures of a gripper task's world: the engine's actors as render meshes, a default camera, a human window."""

from __future__ import annotations

import numpy as np

from .rendering import Camera, CheckerPattern, Renderer, RenderMesh, box_mesh, goal_marker, pose_matrix

TABLE_PATTERN = CheckerPattern(cell_size_m=0.1, color_a=(0.80, 0.66, 0.48), color_b=(0.74, 0.60, 0.42))
CUBE_COLOR = (0.85, 0.2, 0.15)
GRIPPER_COLOR = (0.55, 0.57, 0.62)


def default_camera(width: int, height: int, distance_m=0.9, azimuth_deg=-135.0, elevation_deg=40.0,
                   target=(0.0, 0.0, 0.0), fov_y_deg=45.0) -> Camera:
    return Camera.orbit(target=target, distance_m=distance_m, azimuth_deg=azimuth_deg, elevation_deg=elevation_deg,
                        width=width, height=height, fov_y_deg=fov_y_deg)


class SceneView:
    """Renders world ``world`` of a task's worlds: shaded table, the cube (Push), gripper and the goal marker."""

    def __init__(self, worlds, width: int = 480, height: int = 480, camera: Camera | None = None):
        for name, v in (("width", width), ("height", height)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 16 or v > 4096:
                raise ValueError(f"render {name} must be an integer in [16, 4096], got {v!r}")
        self.worlds = worlds
        self.camera = camera or default_camera(int(width), int(height))
        self.renderer = Renderer(camera=self.camera)
        task, gripper = worlds.task, worlds.gripper
        hx, hy, hz = task.config.table_half_extents
        self._table = box_mesh((hx, hy, hz), pose_matrix(translation=(0.0, 0.0, -hz)))
        self._object = getattr(worlds, "cube", None)  # Push's cube; Reach has no object
        if self._object is not None:
            half = task.config.cube_size_m / 2
            self._cube = box_mesh((half, half, half))
        self._palm = box_mesh(gripper.config.palm_half_extents)
        self._finger = box_mesh(gripper.config.finger_half_extents)

    def meshes(self, world: int) -> list:
        from superdex_gym.sim import lie

        scene, gripper = self.worlds.scene, self.worlds.gripper
        bodies = [(*self._palm, GRIPPER_COLOR), (*self._finger, GRIPPER_COLOR), (*self._finger, GRIPPER_COLOR)]
        actors = list(gripper.actors)
        if self._object is not None:
            bodies.insert(0, (*self._cube, CUBE_COLOR))
            actors.insert(0, self._object)
        pos, quat = scene.get_actor_poses(actors)
        rot = lie.quat_to_matrix(quat[world])
        out = [RenderMesh(*self._table, pattern=TABLE_PATTERN, cast_shadow=False)]
        for k, (verts, tris, color) in enumerate(bodies):
            out.append(RenderMesh(verts @ rot[k].T + pos[world, k], tris, color=color))
        out.append(goal_marker(self.worlds.goal[world], radius_m=self.worlds.task.marker_radius_m))
        return out

    def rgb(self, world: int = 0) -> np.ndarray:
        return self.renderer.render(self.meshes(world))[0]

    def depth(self, world: int = 0) -> np.ndarray:
        return self.renderer.render(self.meshes(world))[1]


class HumanWindow:
    """A window through pygame (optional: ``pip install superdex-gym[human]``)."""

    def __init__(self, width: int, height: int, fps: float):
        try:
            import pygame
        except ImportError as exc:
            raise ImportError(
                "render_mode='human' needs pygame: pip install 'superdex-gym[human]' (or pip install pygame); "
                "use render_mode='rgb_array' for headless rendering"
            ) from exc
        self._pygame = pygame
        pygame.init()
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
