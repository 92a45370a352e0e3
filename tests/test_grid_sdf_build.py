"""Narrow-band grid SDF builder (`build_grid_sdf`) against the brute-force exact builder (`_build_grid_sdf_exact`).

Contract (grid_sdf module docstring): same grid; values equal to the exact ones (to round-off, 1e-12 m) where the
true distance is within the band B = padding + cell diagonal + max cell side; beyond it an upper bound at most
one cell diagonal too large; signs equal to the winding-number rule at every corner (corners within 1e-9 m of
the surface hold |phi| <= 1e-9, so their sign is immaterial and their value is covered by the band check).
"""

import time

import numpy as np
import pytest

from superdex_gym.sim import create_icosphere_shape
from superdex_gym.sim.contact.grid_sdf import _build_grid_sdf_exact, build_grid_sdf, grid_sdf_band_width
from superdex_gym.sim.contact.mesh_distance import (
    closest_points_on_triangles,
    signed_distance_to_mesh,
    squared_distance_to_triangle_pairs,
    triangle_pair_table,
)
from superdex_gym.sim.contact.params import GridSdfParams, SdfResolutionMode

ROUND_OFF = 1e-12  # m; observed differences are ~1e-16 for O(1) coordinates
ON_SURFACE = 1e-9  # m


def icosphere(radius=0.2, subdivisions=2):
    shape = create_icosphere_shape(radius, subdivisions)
    return np.asarray(shape.vertices), np.asarray(shape.triangles)


def box_mesh(half):
    """12-triangle box, CCW seen from outside."""
    half = np.broadcast_to(np.asarray(half, dtype=float), (3,))
    v = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], dtype=float) * half
    quads = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    t = np.array([tri for a, b, c, d in quads for tri in ((a, b, c), (a, c, d))])
    normal = np.cross(v[t[:, 1]] - v[t[:, 0]], v[t[:, 2]] - v[t[:, 0]])
    flip = np.einsum("ij,ij->i", normal, v[t].mean(axis=1)) < 0
    t[flip] = t[flip][:, ::-1]
    return v, t


def voxel_mesh(occupied, size):
    """Closed outward surface (shared vertices, two triangles per exposed voxel face) of a voxel set."""
    occ = np.pad(np.asarray(occupied, dtype=bool), 1)
    index = {}
    triangles = []
    for axis in range(3):
        u, w = [d for d in range(3) if d != axis]
        right_handed = np.linalg.det(np.eye(3)[[u, w, axis]]) > 0
        for sign in (1, -1):
            for cell in np.argwhere(occ & ~np.roll(occ, -sign, axis=axis)):
                base = cell.copy()
                base[axis] += sign > 0
                quad = []
                for du, dw in ((0, 0), (1, 0), (1, 1), (0, 1)):
                    corner = base.copy()
                    corner[u] += du
                    corner[w] += dw
                    quad.append(index.setdefault(tuple(corner), len(index)))
                if (sign > 0) != right_handed:
                    quad = quad[::-1]
                triangles += [(quad[0], quad[1], quad[2]), (quad[0], quad[2], quad[3])]
    v = np.array(sorted(index, key=index.get), dtype=float) * size
    return v - v.mean(axis=0), np.array(triangles)


def l_shape():
    occ = np.zeros((4, 4, 2), dtype=bool)
    occ[:, :1] = True
    occ[:1, :] = True
    return voxel_mesh(occ, 0.05)


def torus(major=0.2, minor=0.07, n_major=16, n_minor=8):
    """Closed, outward torus about z (non-convex, genus 1)."""
    u = 2 * np.pi * np.arange(n_major) / n_major
    w = 2 * np.pi * np.arange(n_minor) / n_minor
    uu, ww = np.meshgrid(u, w, indexing="ij")
    ring = major + minor * np.cos(ww)
    v = np.stack([ring * np.cos(uu), ring * np.sin(uu), minor * np.sin(ww)], axis=-1).reshape(-1, 3)
    i, j = np.meshgrid(np.arange(n_major), np.arange(n_minor), indexing="ij")
    a = i * n_minor + j
    b = (i + 1) % n_major * n_minor + j
    c = (i + 1) % n_major * n_minor + (j + 1) % n_minor
    d = i * n_minor + (j + 1) % n_minor
    t = np.concatenate([np.stack([a, b, c], -1).reshape(-1, 3), np.stack([a, c, d], -1).reshape(-1, 3)])
    return v, t[:, ::-1] if signed_volume(v, t) < 0 else t


def rotation(axis, angle):
    k = np.asarray(axis, dtype=float) / np.linalg.norm(axis)
    skew = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    return np.eye(3) + np.sin(angle) * skew + (1 - np.cos(angle)) * skew @ skew


def signed_volume(v, t):
    return float(np.einsum("ij,ij->i", v[t[:, 0]], np.cross(v[t[:, 1]], v[t[:, 2]])).sum() / 6)


_EXACT_CACHE = {}


def exact_grid(v, t, params=None, padding=0.001):
    """`_build_grid_sdf_exact`, memoized (the icosphere's takes seconds and serves two tests)."""
    key = (v.tobytes(), t.tobytes(), repr(params), padding)
    if key not in _EXACT_CACHE:
        _EXACT_CACHE[key] = _build_grid_sdf_exact(v, t, params, padding)
    return _EXACT_CACHE[key]


def assert_matches_exact(v, t, params=None, padding=0.001):
    fast = build_grid_sdf(v, t, params, padding)
    exact = exact_grid(v, t, params, padding)
    assert fast.values.shape == exact.values.shape
    np.testing.assert_array_equal(fast.bounds_min, exact.bounds_min)
    np.testing.assert_array_equal(fast.bounds_max, exact.bounds_max)
    assert fast.is_mesh_closed == exact.is_mesh_closed
    axes = [np.linspace(fast.bounds_min[d], fast.bounds_max[d], fast.values.shape[d]) for d in range(3)]
    band = grid_sdf_band_width(0.005 if padding is None else padding, axes)
    diagonal = float(np.linalg.norm(fast.cell_m))
    phi, ref = fast.values, exact.values
    near = np.abs(ref) <= band
    assert near.any()
    np.testing.assert_allclose(phi[near], ref[near], rtol=0, atol=ROUND_OFF)
    decided = np.abs(ref) > ON_SURFACE
    np.testing.assert_array_equal(np.sign(phi[decided]), np.sign(ref[decided]))
    excess = np.abs(phi[~near]) - np.abs(ref[~near])  # far field: an upper bound within one cell diagonal
    if excess.size:
        assert excess.min() >= -ROUND_OFF
        assert excess.max() <= diagonal + ROUND_OFF
    return fast, exact


EXPLICIT_2CM = GridSdfParams(resolution_mode=SdfResolutionMode.EXPLICIT, resolution_delta=(0.02,) * 3)
ROTATION = rotation([1.0, 2.0, 3.0], 0.7)
BOX = box_mesh([0.2, 0.3, 0.4])


@pytest.mark.parametrize(
    "name, mesh, params",
    [
        ("icosphere", icosphere(), None),  # default resolution: 28^3 grid
        ("box", BOX, EXPLICIT_2CM),
        ("box default grid", BOX, None),
        ("rotated box", (BOX[0] @ ROTATION.T + [0.3, -1.0, 2.0], BOX[1]), EXPLICIT_2CM),
        ("L-shape", l_shape(), None),
        ("rotated L-shape", (l_shape()[0] @ ROTATION.T, l_shape()[1]), None),
        ("torus", torus(), GridSdfParams(resolution_mode=SdfResolutionMode.EXPLICIT, resolution_delta=(0.015,) * 3)),
    ],
)
def test_narrow_band_build_matches_the_brute_force(name, mesh, params):
    v, t = mesh
    assert signed_volume(v, t) > 0
    assert_matches_exact(v, t, params)


def test_padding_and_anisotropic_cells():
    v, t = box_mesh([0.2, 0.3, 0.4])
    for padding in (0.0, 0.1, None):
        assert_matches_exact(v, t, padding=padding)
    aniso = GridSdfParams(resolution_mode=SdfResolutionMode.EXPLICIT, resolution_delta=(0.03, 0.05, 0.1))
    assert_matches_exact(*l_shape(), aniso)


def test_meshes_outside_the_fast_sign_path_keep_the_winding_number_rule():
    v, t = box_mesh([0.2, 0.3, 0.4])
    coarse = GridSdfParams(resolution_mode=SdfResolutionMode.EXPLICIT, resolution_delta=(0.05,) * 3)
    fast, _ = assert_matches_exact(v, t[:-1], coarse)  # open: winding number everywhere
    assert not fast.is_mesh_closed
    fast, _ = assert_matches_exact(v, t[:, ::-1], coarse)  # inverted: winding number -1 inside, so "outside"
    assert np.all(fast.values >= 0)
    vs, ts = icosphere(0.2, 1)
    sphere = GridSdfParams(resolution_mode=SdfResolutionMode.EXPLICIT, resolution_delta=(0.03,) * 3)
    both = np.concatenate([vs, 0.5 * vs])
    assert_matches_exact(both, np.concatenate([ts, ts + len(vs)]), sphere)  # nested: winding number 2 inside
    assert_matches_exact(both, np.concatenate([ts, ts[:, ::-1] + len(vs)]), sphere)  # hollow shell
    # Two cubes sharing one corner: closed and consistently oriented, with a non-manifold vertex.
    vc, tc = box_mesh(0.1)
    t2 = np.concatenate([tc, tc + 8])
    t2[t2 == 8] = 7  # corner (0.1, 0.1, 0.1) of the first cube is corner (-0.1, -0.1, -0.1) + 0.2 of the second
    assert_matches_exact(np.concatenate([vc, vc + 0.2]), t2, coarse)


def test_trilinear_field_is_exact_near_the_surface():
    """Query points within padding + max cell side of the surface interpolate exact corner values only."""
    v, t = icosphere()
    fast, exact = assert_matches_exact(v, t)
    rng = np.random.default_rng(3)
    directions = rng.normal(size=(400, 3))
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    reach = 0.001 + float(fast.cell_m.max())
    points = directions * (0.2 + rng.uniform(-1, 1, size=(400, 1)) * reach)
    points = points[np.abs(signed_distance_to_mesh(points, v, t).signed_distance) <= reach]
    assert len(points) > 200
    a, b = fast.evaluate(points, want_hessian=True), exact.evaluate(points, want_hessian=True)
    np.testing.assert_allclose(a.phi, b.phi, rtol=0, atol=ROUND_OFF)
    np.testing.assert_allclose(a.grad, b.grad, rtol=0, atol=ROUND_OFF / float(fast.cell_m.min()))


def test_pair_distance_kernel_matches_the_voronoi_walk():
    rng = np.random.default_rng(7)
    a, b, c = (rng.normal(size=(60, 3)) for _ in range(3))
    points = 2 * rng.normal(size=(80, 3))
    points[:20] = (a[:20] + b[:20] + c[:20]) / 3 + 1e-7 * rng.normal(size=(20, 3))  # nearly on the face
    q, region = closest_points_on_triangles(points, a, b, c)
    ref = np.linalg.norm(q - points[:, None], axis=-1)
    p_idx, t_idx = (x.ravel() for x in np.meshgrid(np.arange(80), np.arange(60), indexing="ij"))
    d2, reg, offset = squared_distance_to_triangle_pairs(*points[p_idx].T, triangle_pair_table(a, b, c), t_idx,
                                                         features=True)
    np.testing.assert_allclose(np.sqrt(d2), ref.ravel(), rtol=0, atol=1e-14)
    np.testing.assert_array_equal(reg, region.ravel())
    # Closest points: the walk's face barycentrics lose ~1e-14 for points 1e-7 off the face.
    np.testing.assert_allclose(offset, (q - points[:, None]).reshape(-1, 3), rtol=0, atol=1e-12)
    # Degenerate triangles (a repeated corner, collinear corners) give the distance to their segments.
    seg_a, seg_b = np.zeros(3), np.array([1.0, 0.0, 0.0])
    table = triangle_pair_table(np.array([seg_a, seg_a]), np.array([seg_b, seg_a]), np.array([seg_b / 2, seg_b]))
    p = np.array([[0.5, 1.0, 0.0], [2.0, 0.0, 0.0]])
    d2 = squared_distance_to_triangle_pairs(p[:, 0], p[:, 1], p[:, 2], table, np.array([0, 1]))
    np.testing.assert_allclose(d2, [1.0, 1.0], rtol=0, atol=1e-15)


def test_build_times_of_the_icospheres():
    """The engine's default grid for radius-0.2 icospheres (brute force: ~6 s for 320 faces, ~150 s for 1280)."""
    cpu = {}
    for subdivisions in (2, 3):
        v, t = icosphere(0.2, subdivisions)
        wall, start = time.perf_counter(), time.process_time()
        grid = build_grid_sdf(v, t, padding=0.001)
        cpu[len(t)], wall = time.process_time() - start, time.perf_counter() - wall
        print(f"\ngrid SDF build, icosphere {len(t)} faces, grid {grid.values.shape}: "
              f"{cpu[len(t)]:.3f} s CPU, {wall:.3f} s wall")
    assert cpu[1280] < 5.0  # target < 1 s on one core; loose for slow or shared machines
