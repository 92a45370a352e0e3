"""Tests of the pure-numpy software renderer (`superdex_gym.envs.rendering`).

Oracles: the camera's own projection matrices (a point projected by `Camera.project_points` must land on the
pixel the rasterizer fills), closed-form ray-plane depths, and the documented flat lighting formula.
"""

import time

import numpy as np
import pytest

from superdex_gym.envs.rendering import (
    Camera,
    CheckerPattern,
    Renderer,
    RenderMesh,
    ShadingParams,
    box_mesh,
    cylinder_mesh,
    goal_marker,
    plane_mesh,
    pose_matrix,
    sphere_mesh,
    transform_mesh,
)
from superdex_gym.envs.rendering.raster import clip_triangles_near, resolve_nearest
from superdex_gym.envs.rendering.shading import face_lighting

BACKGROUND = (0.12, 0.2, 0.32)  # no channel lands on a .5 rounding tie
RED = (0.9, 0.1, 0.1)
BLUE = (0.1, 0.2, 0.9)


def to_uint8(rgb_float):
    return np.floor(np.clip(np.asarray(rgb_float, dtype=np.float64), 0.0, 1.0) * 255.0 + 0.5).astype(int)


def expected_sunlit(albedo, normal, light_direction, shading=ShadingParams()):
    """Display colour (3,) float of a face with unit ``normal`` in full sun (module-docstring formula)."""
    light = np.asarray(light_direction, float) / np.linalg.norm(light_direction)
    ambient, diffuse = face_lighting(np.asarray(normal, float)[None, :], light, shading)
    return np.asarray(albedo) * (ambient[0] + diffuse[0])


def facing_quad(distance_m, half_size_m, color, **mesh_kwargs):
    """Square in the plane x = distance_m, facing +x (toward a camera on the +x axis beyond it)."""
    rotate_z_to_x = np.array([[0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [-1.0, 0.0, 0.0]])  # maps +z to +x
    vertices, triangles = plane_mesh(half_size_m, half_size_m, pose_matrix(rotate_z_to_x, (distance_m, 0, 0)))
    return RenderMesh(vertices, triangles, color=color, **mesh_kwargs)


def camera_on_x_axis(distance_m=2.0, width=64, height=64, **kwargs):
    return Camera(eye=(distance_m, 0.0, 0.0), target=(0.0, 0.0, 0.0), width=width, height=height, **kwargs)


# -- image format -------------------------------------------------------------------------------------------


def test_empty_scene_shape_dtype_and_background():
    camera = camera_on_x_axis(width=40, height=30)
    rgb, depth = Renderer(camera=camera, background=BACKGROUND).render([])
    assert rgb.shape == (30, 40, 3) and rgb.dtype == np.uint8
    assert depth.shape == (30, 40) and depth.dtype == np.float32
    assert np.all(rgb == to_uint8(BACKGROUND))
    assert np.all(np.isinf(depth))


def test_renderer_size_defaults_and_conflicts():
    assert Renderer().render([])[0].shape == (480, 480, 3)
    assert Renderer(width=32, height=16).render([])[0].shape == (16, 32, 3)
    camera = camera_on_x_axis(width=20, height=10)
    assert Renderer(camera=camera).render([])[0].shape == (10, 20, 3)
    with pytest.raises(ValueError, match="conflicts"):
        Renderer(width=30, camera=camera)
    # A per-call camera sets the output size.
    assert Renderer(camera=camera).render([], camera=camera.with_size(8, 6))[1].shape == (6, 8)


# -- geometry lands where the camera maths says -------------------------------------------------------------


def test_box_in_front_of_camera_centre_colour_and_corners():
    light = (-1.0, -0.2, -0.5)  # lights the +x face (the one facing the camera)
    camera = camera_on_x_axis(2.0)
    box = RenderMesh(*box_mesh((0.2, 0.2, 0.2)), color=RED)
    rgb, depth = Renderer(camera=camera, background=BACKGROUND, light_direction=light).render([box])
    # Shadows are on: the box's own lit face must not shadow itself (depth bias works).
    np.testing.assert_allclose(rgb[32, 32], to_uint8(expected_sunlit(RED, (1, 0, 0), light)), atol=1)
    for corner in (rgb[0, 0], rgb[0, -1], rgb[-1, 0], rgb[-1, -1]):
        np.testing.assert_array_equal(corner, to_uint8(BACKGROUND))

    # The front face's silhouette is the projection of its corners: inside 1 px in is box, outside is not.
    front = np.array([[0.2, y, z] for y in (-0.2, 0.2) for z in (-0.2, 0.2)])
    xy, _ = camera.project_points(front)
    (x_lo, y_lo), (x_hi, y_hi) = xy.min(axis=0), xy.max(axis=0)
    cols, rows = np.arange(64) + 0.5, np.arange(64) + 0.5
    inside = ((rows[:, None] > y_lo + 1) & (rows[:, None] < y_hi - 1)
              & (cols[None, :] > x_lo + 1) & (cols[None, :] < x_hi - 1))
    outside = ((rows[:, None] < y_lo - 1) | (rows[:, None] > y_hi + 1)
               | (cols[None, :] < x_lo - 1) | (cols[None, :] > x_hi + 1))
    assert inside.sum() > 150 and outside.sum() > 3000
    assert np.all(np.isclose(depth[inside], 1.8, rtol=1e-6))
    assert np.all(np.isinf(depth[outside]))


def test_projected_points_land_on_drawn_pixels_non_square():
    """fov / aspect conventions: fov is vertical, pixels square, y down, pixel (r, c) covers [c, c+1) x [r, r+1)."""
    camera = Camera(eye=(1.5, -1.0, 0.8), target=(0.0, 0.1, 0.1), fov_y_deg=50.0, width=160, height=90)
    rng = np.random.default_rng(0)
    points = rng.uniform(-0.3, 0.3, size=(12, 3))
    xy, depth = camera.project_points(points)
    assert np.all(depth > 0)
    for point, (x, y), depth_m in zip(points, xy, depth):
        if not (3 <= x < 157 and 3 <= y < 87):
            continue
        # A tiny sphere (radius 1.5 px at this depth) around the point must cover the point's pixel.
        radius_m = 1.5 * depth_m / camera.focal_length_px
        marker = RenderMesh(*sphere_mesh(radius_m, point, subdivisions=2), color=RED)
        _, d = Renderer(camera=camera, shadows=False).render([marker])
        row, col = int(np.floor(y)), int(np.floor(x))
        assert np.isfinite(d[row, col]), (point, x, y)
        covered = np.argwhere(np.isfinite(d))
        assert np.all(np.abs(covered - [row, col]).max(axis=1) <= 2)  # and nothing far from it


def test_camera_matrices_agree():
    camera = Camera(eye=(0.3, -1.2, 0.9), target=(0.0, 0.0, 0.1), fov_y_deg=60.0, width=200, height=100)
    points = np.array([[0.0, 0.0, 0.1], [0.2, -0.1, 0.3], [-0.3, 0.2, 0.0]])
    xy, depth = camera.project_points(points)
    # Target at the image centre; intrinsics K reproduce P @ V.
    np.testing.assert_allclose(xy[0], [100.0, 50.0], atol=1e-9)
    cam_points = camera.world_to_camera(points)
    pinhole = np.stack([cam_points[:, 0], -cam_points[:, 1], -cam_points[:, 2]], axis=1)  # (x, -y, depth)
    homogeneous = pinhole @ camera.intrinsic_matrix().T
    np.testing.assert_allclose(homogeneous[:, :2] / homogeneous[:, 2:], xy, atol=1e-9)
    np.testing.assert_allclose(depth, -cam_points[:, 2], atol=1e-12)
    np.testing.assert_allclose(camera.unproject_pixels(xy, depth), points, atol=1e-12)
    # Vertical fov: a point on the upper fov boundary projects to the top edge (y = 0).
    half = np.deg2rad(30.0)
    top_cam = np.array([0.0, np.tan(half), -1.0])
    top_world = top_cam @ camera.rotation + camera.eye
    np.testing.assert_allclose(camera.project_points(top_world)[0][0], [100.0, 0.0], atol=1e-9)
    # World up (+z) appears up in the image (smaller row) for an upright camera.
    assert camera.project_points([0.0, 0.0, 0.4])[0][0, 1] < 50.0
    # OpenGL depth mapping: near -> -1, far -> +1 in NDC.
    proj = camera.projection_matrix()
    for d, ndc_z in ((camera.near_m, -1.0), (camera.far_m, 1.0)):
        clip = proj @ np.array([0.0, 0.0, -d, 1.0])
        np.testing.assert_allclose(clip[2] / clip[3], ndc_z, atol=1e-12)


def test_orbit_places_eye_on_sphere():
    camera = Camera.orbit(target=(0.1, 0.2, 0.3), distance_m=2.0, azimuth_deg=90.0, elevation_deg=30.0)
    np.testing.assert_allclose(camera.eye, [0.1, 0.2 + 2.0 * np.cos(np.pi / 6), 0.3 + 1.0], atol=1e-12)
    assert camera.project_points(camera.target)[1][0] == pytest.approx(2.0)


# -- depth -----------------------------------------------------------------------------------------------------


def test_depth_of_facing_quad_is_analytic_within_one_quantum():
    camera = camera_on_x_axis(2.0)
    quad = facing_quad(0.5, 0.4, BLUE)  # 1.5 m in front of the eye
    _, depth = Renderer(camera=camera).render([quad])
    # Depth is 1 / (float32 nearness): one float32 ulp of nearness is one ulp of depth.
    assert abs(float(depth[32, 32]) - 1.5) <= np.spacing(np.float32(1.5))


def test_depth_is_perspective_correct_on_tilted_floor_and_near_clipped():
    """A floor reaching behind the camera crosses the near plane: it must be clipped, not dropped, and the
    depth at every pixel below the horizon must match the ray-plane intersection."""
    camera = Camera(eye=(0.0, -1.0, 0.6), target=(0.0, 1.0, 0.0), width=96, height=64, near_m=0.05, far_m=100.0)
    floor = RenderMesh(*plane_mesh(20.0, 20.0), color=(0.5, 0.5, 0.5))
    _, depth = Renderer(camera=camera, shadows=False).render([floor])
    f = camera.focal_length_px
    cols, rows = np.meshgrid(np.arange(96) + 0.5, np.arange(64) + 0.5)
    ray_cam = np.stack([(cols - 48) / f, (32 - rows) / f, -np.ones_like(cols)], axis=-1)  # unit forward part
    ray_world = ray_cam @ camera.rotation
    t = -camera.eye[2] / ray_world[..., 2]  # depth along the axis, since the ray's forward component is 1
    hits = (ray_world[..., 2] < 0) & (t < 20.0 / np.abs(ray_world[..., 1]).clip(1e-9) - 1.0)
    assert hits.sum() > 2000
    np.testing.assert_allclose(depth[hits], t[hits], rtol=2e-6)  # float32 nearness interpolation
    assert np.all(np.isinf(depth[ray_world[..., 2] > 0.01]))  # sky


def test_far_plane_empties_pixels():
    camera = camera_on_x_axis(2.0, far_m=1.0)
    rgb, depth = Renderer(camera=camera, background=BACKGROUND).render([facing_quad(0.5, 0.4, RED)])
    assert np.all(np.isinf(depth)) and np.all(rgb == to_uint8(BACKGROUND))


def test_near_clipping_cuts_crossing_triangles_exactly():
    near = 0.1
    # Camera coordinates (looking down -z): depths 1.0, 0.0 and -1.0 / 1.0, 1.0, -1.0 / all behind / all in front.
    one_in_front = [[0.0, 0.0, -1.0], [1.0, 0.0, 0.0], [0.0, 1.0, 1.0]]
    two_in_front = [[0.0, 0.0, -1.0], [1.0, 0.0, -1.0], [0.0, 1.0, 1.0]]
    behind = [[0.0, 0.0, 1.0], [1.0, 0.0, 1.0], [0.0, 1.0, 1.0]]
    in_front = [[0.0, 0.0, -2.0], [1.0, 0.0, -2.0], [0.0, 1.0, -2.0]]
    clipped, source = clip_triangles_near(np.array([one_in_front, two_in_front, behind, in_front]), near)
    assert sorted(source.tolist()) == [0, 1, 1, 3]
    assert np.all(-clipped[:, :, 2] >= near - 1e-15)
    # The pieces of triangle 1 span its part in front of the plane: area of the clipped trapezoid.
    pieces = clipped[source == 1]
    area = 0.5 * np.linalg.norm(np.cross(pieces[:, 1] - pieces[:, 0], pieces[:, 2] - pieces[:, 0]), axis=1).sum()
    t = (1.0 - near) / 2.0  # fraction of the edges to the behind corner that stays in front
    full = 0.5 * np.linalg.norm(np.cross([1.0, 0.0, 0.0], [0.0, 1.0, 2.0]))
    assert area == pytest.approx(full * (1.0 - (1.0 - t) ** 2), rel=1e-12)


def test_chunked_rasterization_matches_single_pass():
    camera = camera_on_x_axis(2.0, width=80, height=60)
    rng = np.random.default_rng(3)
    screen = rng.uniform(-10, 90, size=(300, 3, 2))
    nearness = rng.uniform(0.5, 2.0, size=(300, 3))
    ids = np.arange(300)
    q_one, id_one = resolve_nearest(screen, nearness, ids, camera.width, camera.height)
    q_chunked, id_chunked = resolve_nearest(screen, nearness, ids, camera.width, camera.height,
                                            max_fragments_per_chunk=1)  # one row span per chunk
    np.testing.assert_array_equal(q_one, q_chunked)
    np.testing.assert_array_equal(id_one, id_chunked)
    assert (id_one >= 0).mean() > 0.9


# -- visibility ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("order", [1, -1])
def test_nearer_box_hides_farther_box(order):
    camera = camera_on_x_axis(3.0)
    near_box = RenderMesh(*box_mesh((0.1, 0.1, 0.1), pose_matrix(translation=(1.0, 0.0, 0.0))), color=RED)
    far_box = RenderMesh(*box_mesh((0.4, 0.4, 0.4)), color=BLUE)
    rgb, depth = Renderer(camera=camera, shadows=False).render([near_box, far_box][::order])
    assert rgb[32, 32, 0] > 100 and rgb[32, 32, 2] < 100  # red in front
    assert depth[32, 32] == pytest.approx(1.9, rel=1e-6)
    assert rgb[32, 24, 2] > rgb[32, 24, 0]  # blue around it (8 px left of centre)
    assert depth[32, 24] == pytest.approx(2.6, rel=1e-6)


def test_back_faces_are_culled():
    camera = camera_on_x_axis(2.0)
    quad = facing_quad(0.0, 0.5, RED)
    flipped = RenderMesh(quad.vertices, quad.triangles[:, ::-1], color=RED)
    _, depth_front = Renderer(camera=camera).render([quad])
    _, depth_back = Renderer(camera=camera).render([flipped])
    assert np.isfinite(depth_front).sum() > 500
    assert np.all(np.isinf(depth_back))


def test_closed_meshes_have_no_cracks():
    """Shared edges are rasterized bit-identically: a sphere's silhouette interior is fully covered."""
    camera = camera_on_x_axis(2.0, width=120, height=120)
    sphere = RenderMesh(*sphere_mesh(0.5, subdivisions=3), color=RED)
    _, depth = Renderer(camera=camera, shadows=False).render([sphere])
    xy, _ = camera.project_points([0.0, 0.0, 0.0])
    radius_px = camera.focal_length_px * np.tan(np.arcsin(0.5 / 2.0)) * 0.95  # inscribed polyhedron margin
    rows, cols = np.mgrid[0:120, 0:120] + 0.5
    inside = np.hypot(cols - xy[0, 0], rows - xy[0, 1]) < radius_px
    assert np.all(np.isfinite(depth[inside]))


# -- translucency ------------------------------------------------------------------------------------------


def test_translucent_quad_blends_over_background_without_writing_depth():
    light = (-1.0, 0.0, -1.0)
    camera = camera_on_x_axis(2.0)
    glass = facing_quad(0.5, 0.3, RED, alpha=0.4)
    rgb, depth = Renderer(camera=camera, background=BACKGROUND, light_direction=light).render([glass])
    lit = expected_sunlit(RED, (1, 0, 0), light)
    np.testing.assert_allclose(rgb[32, 32], to_uint8(0.4 * lit + 0.6 * np.array(BACKGROUND)), atol=1)
    assert np.all(np.isinf(depth))


def test_translucent_layers_composite_back_to_front_in_any_order():
    light = (-1.0, 0.0, -1.0)
    camera = camera_on_x_axis(3.0)
    front = facing_quad(1.0, 0.3, RED, alpha=0.5)
    back = facing_quad(0.0, 0.5, BLUE, alpha=0.5)
    renderer = Renderer(camera=camera, background=BACKGROUND, light_direction=light)
    rgb_a, _ = renderer.render([front, back])
    rgb_b, _ = renderer.render([back, front])
    np.testing.assert_array_equal(rgb_a, rgb_b)
    over_back = 0.5 * expected_sunlit(BLUE, (1, 0, 0), light) + 0.5 * np.array(BACKGROUND)
    expected = 0.5 * expected_sunlit(RED, (1, 0, 0), light) + 0.5 * over_back
    np.testing.assert_allclose(rgb_a[32, 32], to_uint8(expected), atol=1)  # 8-bit rounding per layer


def test_translucent_marker_behind_opaque_box_is_hidden():
    camera = camera_on_x_axis(3.0)
    box = RenderMesh(*box_mesh((0.3, 0.3, 0.3), pose_matrix(translation=(0.5, 0, 0))), color=BLUE)
    marker = goal_marker((-0.5, 0.0, 0.0), radius_m=0.1)
    rgb_with, _ = Renderer(camera=camera).render([box, marker])
    rgb_without, _ = Renderer(camera=camera).render([box])
    np.testing.assert_array_equal(rgb_with, rgb_without)


# -- appearance --------------------------------------------------------------------------------------------


def test_checker_pattern_cells():
    light = (0.0, 0.0, -1.0)
    camera = Camera(eye=(0.0, 0.0, 2.0), target=(0.0, 0.0, 0.0), up=(0.0, 1.0, 0.0), width=96, height=96)
    pattern = CheckerPattern(cell_size_m=0.25, color_a=(0.8, 0.7, 0.5), color_b=(0.3, 0.3, 0.3))
    table = RenderMesh(*plane_mesh(1.0, 1.0), pattern=pattern)
    rgb, _ = Renderer(camera=camera, light_direction=light).render([table])
    probes = {(0.125, 0.125): pattern.color_a, (0.375, 0.125): pattern.color_b,
              (-0.125, 0.125): pattern.color_b, (-0.125, -0.125): pattern.color_a}
    for (x, y), color in probes.items():
        (px, py), = camera.project_points([x, y, 0.0])[0]
        expected = to_uint8(expected_sunlit(color, (0, 0, 1), light))
        np.testing.assert_allclose(rgb[int(py), int(px)], expected, atol=1)


def test_shadow_darkens_plane_under_cube():
    light = (1.0, 0.0, -1.0)  # shadow of a cube at height 0.5 falls 0.5 m toward +x
    camera = Camera(eye=(0.0, 0.0, 3.0), target=(0.0, 0.0, 0.0), up=(0.0, 1.0, 0.0), width=96, height=96)
    floor = RenderMesh(*plane_mesh(1.5, 1.5), color=(0.8, 0.8, 0.8), cast_shadow=False)
    cube = RenderMesh(*box_mesh((0.1, 0.1, 0.1), pose_matrix(translation=(0.0, 0.0, 0.5))), color=RED)
    (shadow_px, shadow_py), (lit_px, lit_py) = camera.project_points([[0.5, 0.0, 0.0], [-0.5, 0.0, 0.0]])[0]
    shading = ShadingParams()
    rgb, _ = Renderer(camera=camera, light_direction=light).render([floor, cube])
    ambient_only = to_uint8(np.array([0.8, 0.8, 0.8]) * shading.sky_ambient)
    np.testing.assert_allclose(rgb[int(shadow_py), int(shadow_px)], ambient_only, atol=1)
    sunlit = to_uint8(expected_sunlit((0.8, 0.8, 0.8), (0, 0, 1), light))
    np.testing.assert_allclose(rgb[int(lit_py), int(lit_px)], sunlit, atol=1)
    rgb_off, _ = Renderer(camera=camera, light_direction=light, shadows=False).render([floor, cube])
    np.testing.assert_allclose(rgb_off[int(shadow_py), int(shadow_px)], sunlit, atol=1)


def test_supersampling_keeps_size_and_antialiases_edges():
    camera = camera_on_x_axis(2.0)
    box = RenderMesh(*box_mesh((0.2, 0.2, 0.2), pose_matrix(rotation=_rotation_x(0.3))), color=(1.0, 1.0, 1.0))
    rgb1, depth1 = Renderer(camera=camera, background=(0, 0, 0), shadows=False).render([box])
    rgb2, depth2 = Renderer(camera=camera, background=(0, 0, 0), shadows=False, supersample=2).render([box])
    assert rgb2.shape == rgb1.shape and depth2.shape == depth1.shape
    assert len(np.unique(rgb2[..., 0])) > len(np.unique(rgb1[..., 0]))  # intermediate edge shades


# -- mesh builders -----------------------------------------------------------------------------------------


def _rotation_x(angle):
    c, s = np.cos(angle), np.sin(angle)
    return np.array([[1, 0, 0], [0, c, -s], [0, s, c]])


def _signed_volume(vertices, triangles):
    p = vertices[triangles]
    return np.einsum("fi,fi->f", p[:, 0], np.cross(p[:, 1], p[:, 2])).sum() / 6.0


@pytest.mark.parametrize("builder, volume", [
    (lambda: box_mesh((0.1, 0.2, 0.3), pose_matrix(_rotation_x(0.7), (1, 2, 3))), 8 * 0.1 * 0.2 * 0.3),
    (lambda: sphere_mesh(0.5, (1, 0, 0), subdivisions=3), 4 / 3 * np.pi * 0.5 ** 3),
    (lambda: cylinder_mesh(0.2, 0.4, pose_matrix(_rotation_x(1.0), (0, 1, 0)), segments=64),
     np.pi * 0.2 ** 2 * 0.8),
])
def test_builders_make_closed_outward_meshes(builder, volume):
    vertices, triangles = builder()
    directed = triangles[:, [0, 1, 1, 2, 2, 0]].reshape(-1, 2)
    assert len(np.unique(directed, axis=0)) == len(directed)  # consistent winding
    undirected, counts = np.unique(np.sort(directed, axis=1), axis=0, return_counts=True)
    assert np.all(counts == 2)  # closed
    # Outward: positive volume close to the solid's (polyhedral approximation within 3 %).
    assert _signed_volume(vertices, triangles) == pytest.approx(volume, rel=0.03)


def test_transform_mesh_and_counts():
    vertices, triangles = sphere_mesh(1.0, subdivisions=2)
    assert vertices.shape == (162, 3) and triangles.shape == (320, 3)
    moved = transform_mesh(vertices, _rotation_x(0.5), (1.0, 2.0, 3.0))
    np.testing.assert_allclose(moved, vertices @ _rotation_x(0.5).T + [1, 2, 3])
    assert cylinder_mesh(0.1, 0.1, segments=10)[1].shape == (40, 3)


def test_invalid_inputs_raise_clear_errors():
    with pytest.raises(ValueError, match="parallel"):
        Camera(eye=(0, 0, 2), target=(0, 0, 0))
    with pytest.raises(ValueError, match="coincide"):
        Camera(eye=(1, 1, 1), target=(1, 1, 1))
    with pytest.raises(ValueError, match="near_m"):
        Camera(eye=(1, 0, 0), target=(0, 0, 0), near_m=1.0, far_m=0.5)
    vertices, triangles = box_mesh((0.1, 0.1, 0.1))
    with pytest.raises(ValueError, match="out of range"):
        RenderMesh(vertices, triangles + 1)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        RenderMesh(vertices, triangles, color=(255, 0, 0))
    with pytest.raises(ValueError, match="shape"):
        RenderMesh(vertices, triangles, color=np.ones((3, 3)) * 0.5)  # neither (3,) nor (F, 3)
    with pytest.raises(ValueError, match="alpha"):
        RenderMesh(vertices, triangles, alpha=0.0)
    with pytest.raises(TypeError, match="RenderMesh"):
        Renderer().render([(vertices, triangles)])
    per_face = RenderMesh(vertices, triangles, color=np.full((12, 3), 0.5))  # (F, 3) is accepted
    assert per_face.color.shape == (12, 3)


# -- a manipulation scene ----------------------------------------------------------------------------------


def gripper_meshes(center, opening_m=0.06):
    """A floating two-finger gripper: wrist cylinder, palm bar, two finger pads."""
    center = np.asarray(center, dtype=float)
    wrist = cylinder_mesh(0.012, 0.04, pose_matrix(translation=center + [0, 0, 0.107]), segments=20)
    palm = box_mesh((0.045, 0.012, 0.012), pose_matrix(translation=center + [0, 0, 0.055]))
    fingers = [box_mesh((0.006, 0.01, 0.03), pose_matrix(translation=center + [s * opening_m / 2, 0, 0.015]))
               for s in (-1, 1)]
    return ([RenderMesh(*wrist, color=(0.25, 0.26, 0.30)), RenderMesh(*palm, color=(0.35, 0.37, 0.42))]
            + [RenderMesh(*finger, color=(0.55, 0.57, 0.62)) for finger in fingers])


def table_cube_gripper_goal_scene():
    table = RenderMesh(*box_mesh((0.4, 0.4, 0.02), pose_matrix(translation=(0, 0, -0.02))), cast_shadow=False,
                       pattern=CheckerPattern(cell_size_m=0.05, line_color=(0.55, 0.45, 0.35), line_width_m=0.002))
    cube = RenderMesh(*box_mesh((0.02, 0.02, 0.02), pose_matrix(translation=(0.0, 0.0, 0.02))), color=RED)
    goal = goal_marker((0.12, 0.08, 0.06), radius_m=0.02)
    return [table, cube, *gripper_meshes((0.0, 0.0, 0.03)), goal]


SCENE_CAMERA = Camera.orbit(target=(0.02, 0.02, 0.04), distance_m=0.5, azimuth_deg=35.0, elevation_deg=30.0)


def test_sample_scene_png():
    """Writes /tmp/render_sample.png (look at it) and checks the scene's parts are where they belong."""
    pil_image = pytest.importorskip("PIL.Image")
    scene = table_cube_gripper_goal_scene()
    renderer = Renderer(camera=SCENE_CAMERA, supersample=2)
    rgb, depth = renderer.render(scene)
    pil_image.fromarray(rgb).save("/tmp/render_sample.png")

    def pixel_of(point):
        (x, y), = SCENE_CAMERA.project_points(point)[0]
        return int(y), int(x)

    cube_face = rgb[pixel_of([0.0, 0.02, 0.01])]  # the cube's +y face, beside the fingers
    assert cube_face[0] > 1.5 * cube_face[1]  # red
    goal = rgb[pixel_of([0.12, 0.08, 0.06])]
    assert goal[1] > goal[0] and goal[1] > goal[2]  # green tint over the table
    assert np.all(rgb[0, 0] == to_uint8(renderer.background))  # sky above the table
    assert np.isfinite(depth[pixel_of([0.3, -0.3, 0.0])])  # table
    table_region = rgb[300:, :, :].reshape(-1, 3)
    assert len(np.unique(table_region // 16, axis=0)) >= 2  # checker cells


def test_two_thousand_triangle_frame_renders():
    scene = table_cube_gripper_goal_scene()
    for i in range(4):
        angle = np.pi / 2 * i
        center = (0.2 * np.cos(angle), 0.2 * np.sin(angle), 0.04)
        scene.append(RenderMesh(*sphere_mesh(0.04, center, subdivisions=2), color=BLUE))
    for i in range(6):
        angle = np.pi / 3 * (i + 0.5)
        pose = pose_matrix(translation=(0.3 * np.cos(angle), 0.3 * np.sin(angle), 0.03))
        scene.append(RenderMesh(*cylinder_mesh(0.015, 0.03, pose, segments=24), color=(0.9, 0.7, 0.1)))
    n_triangles = sum(len(m.triangles) for m in scene)
    assert 2000 <= n_triangles <= 2500
    camera = Camera.orbit(target=(0.02, 0.02, 0.04), distance_m=0.55, azimuth_deg=35.0, elevation_deg=30.0)
    for shadows in (True, False):
        renderer = Renderer(camera=camera, shadows=shadows)
        rgb, depth = renderer.render(scene)  # warm-up (caches the camera's pixel rays)
        times = []
        for _ in range(5):
            start = time.perf_counter()
            rgb, depth = renderer.render(scene)
            times.append(time.perf_counter() - start)
        print(f"480x480, {n_triangles} triangles, shadows={shadows}: "
              f"min {min(times) * 1e3:.1f} ms, median {np.median(times) * 1e3:.1f} ms")
    assert np.isfinite(depth).mean() > 0.5 and len(np.unique(rgb.reshape(-1, 3), axis=0)) > 50
