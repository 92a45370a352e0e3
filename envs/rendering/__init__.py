"""Headless pure-numpy software renderer (``rgb_array`` / ``depth_array``) and the view of a task's worlds.

``renderer.py`` (meshes to pictures; conventions in its docstring), ``camera.py``, ``raster.py``, ``shading.py``,
``meshes.py`` (mesh builders), ``scene_view.py`` (every actor of a scene plus the task's goal markers).
"""

from .renderer import (Camera, CheckerPattern, Renderer, RenderMesh, ShadingParams, box_mesh, cylinder_mesh,
                       goal_marker, plane_mesh, pose_matrix, sphere_mesh, transform_mesh)

__all__ = [
    "Camera", "RenderMesh", "Renderer", "CheckerPattern", "ShadingParams", "goal_marker",
    "box_mesh", "sphere_mesh", "cylinder_mesh", "plane_mesh", "transform_mesh", "pose_matrix",
]
