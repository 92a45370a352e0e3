"""Mass properties from the boundary quadrature: closed forms (boxes, the reference cube, icospheres vs the
analytic sphere), parameter rules, inertia notation helpers and error cases."""

import warnings

import numpy as np
import pytest

from superdex_gym.sim.assets_path import ASSETS_PATH
from superdex_gym.sim.mass_properties import (
    DEFAULT_DENSITY,
    MassProperties,
    compute_mass_properties,
    compute_shape_mass_properties,
    inertia_from_real6,
    inertia_from_second_moment,
    real6_from_inertia,
    second_moment_from_inertia,
)
from superdex_gym.sim.mesh_io import load_shape_from_file
from superdex_gym.sim.quadrature import ActorBoundaryElementType
from superdex_gym.sim.shapes import box_mesh, create_plane_shape, icosphere_mesh
from superdex_gym.sim.transforms import Quaternion

EXACT_SECOND_MOMENT_RULES = [ActorBoundaryElementType.P1Q3, ActorBoundaryElementType.P1Q6,
                             ActorBoundaryElementType.P1Q7, ActorBoundaryElementType.P1Q12,
                             ActorBoundaryElementType.P1Q16]


def box_inertia_diag(mass, half_extents):
    a, b, c = 2.0 * np.asarray(half_extents)  # full edge lengths
    return mass / 12.0 * np.array([b * b + c * c, a * a + c * c, a * a + b * b])


def test_reference_cube_matches_the_released_engine():
    """Digest 2.2 [RUN]: 0.4 m cube, 8 verts / 12 tris, density 1000 -> mass 64.0, I diag 1.70667, CoM 0."""
    vertices, triangles = box_mesh([0.2, 0.2, 0.2])
    assert vertices.shape == (8, 3) and triangles.shape == (12, 3)
    props = compute_mass_properties(vertices, triangles, density=1000.0)
    assert isinstance(props, MassProperties)
    assert props.mass == pytest.approx(64.0, rel=1e-14)
    assert props.volume == pytest.approx(0.064, rel=1e-14)
    np.testing.assert_allclose(props.moment_of_inertia, np.diag([1.7066666666666668] * 3), rtol=0, atol=1e-14)
    np.testing.assert_allclose(props.center_of_mass, 0.0, atol=1e-15)
    np.testing.assert_allclose(props.moment_of_inertia_real6, [1.7066666666666668, 0, 0, 1.7066666666666668, 0,
                                                               1.7066666666666668], atol=1e-14)


@pytest.mark.parametrize("element_type", EXACT_SECOND_MOMENT_RULES, ids=lambda e: e.name)
def test_offset_box_is_exact(element_type):
    half = np.array([0.1, 0.25, 0.4])
    center = np.array([3.0, -1.5, 7.0])
    vertices, triangles = box_mesh(half, center=center)
    props = compute_mass_properties(vertices, triangles, element_type, density=750.0)
    mass = 750.0 * 8 * half.prod()
    assert props.mass == pytest.approx(mass, rel=1e-13)
    assert props.density == 750.0
    np.testing.assert_allclose(props.center_of_mass, center, rtol=0, atol=1e-13)
    np.testing.assert_allclose(np.diag(props.moment_of_inertia), box_inertia_diag(mass, half), rtol=1e-12)
    off_diagonal = props.moment_of_inertia - np.diag(np.diag(props.moment_of_inertia))
    np.testing.assert_allclose(off_diagonal, 0.0, atol=1e-13 * props.moment_of_inertia.max())


@pytest.mark.parametrize("element_type", EXACT_SECOND_MOMENT_RULES, ids=lambda e: e.name)
def test_rotated_box_is_exact(element_type):
    half = np.array([0.3, 0.1, 0.2])
    rotation = Quaternion.from_axis_angle([1.0, 2.0, -0.5], 0.9)
    vertices, triangles = box_mesh(half, center=[0.5, 0.2, -0.1], rotation=rotation)
    props = compute_mass_properties(vertices, triangles, element_type)
    mass = DEFAULT_DENSITY * 8 * half.prod()
    rot = rotation.to_matrix()
    expected = rot @ np.diag(box_inertia_diag(mass, half)) @ rot.T
    assert props.mass == pytest.approx(mass, rel=1e-13)
    np.testing.assert_allclose(props.moment_of_inertia, expected, rtol=0, atol=1e-12 * expected.max())
    # In the box's own axes the tensor is diagonal with the closed-form entries.
    body = rot.T @ props.moment_of_inertia @ rot
    np.testing.assert_allclose(body, np.diag(box_inertia_diag(mass, half)), rtol=0, atol=1e-12 * expected.max())


def test_p1q1_is_exact_for_volume_and_com_but_not_second_moment():
    half = np.array([0.1, 0.25, 0.4])
    vertices, triangles = box_mesh(half, center=[1.0, 2.0, 3.0])
    coarse = compute_mass_properties(vertices, triangles, ActorBoundaryElementType.P1Q1)
    exact = compute_mass_properties(vertices, triangles, ActorBoundaryElementType.P1Q3)
    assert coarse.volume == pytest.approx(exact.volume, rel=1e-14)
    np.testing.assert_allclose(coarse.center_of_mass, exact.center_of_mass, rtol=0, atol=1e-13)
    assert np.max(np.abs(coarse.second_moment - exact.second_moment)) > 1e-3 * np.max(exact.second_moment)


@pytest.mark.parametrize("subdivisions", [2, 3, 4])
def test_icosphere_vs_analytic_sphere(subdivisions):
    radius = 0.3
    unit_vertices, triangles = icosphere_mesh(subdivisions)
    props = compute_mass_properties(radius * unit_vertices, triangles, density=1000.0)
    sphere_volume = 4.0 / 3.0 * np.pi * radius**3
    # The inscribed polyhedron's own volume deficit sets the tolerances: rel_v = 1 - V_poly / V_sphere.
    poly = radius * unit_vertices[triangles]
    poly_volume = np.einsum("fi,fi->", poly[:, 0], np.cross(poly[:, 1], poly[:, 2])) / 6.0
    rel_v = 1.0 - poly_volume / sphere_volume
    assert 0 < rel_v < 0.05
    assert props.volume == pytest.approx(poly_volume, rel=1e-13)
    assert abs(props.mass / (1000.0 * sphere_volume) - 1.0) <= rel_v + 1e-13
    # Inertia ~ integral of r^5 vs volume ~ r^3 over directions: to first order its relative deficit is
    # 5/3 rel_v; allow 2 rel_v.
    analytic = 0.4 * 1000.0 * sphere_volume * radius**2
    np.testing.assert_allclose(np.diag(props.moment_of_inertia), analytic, rtol=2.0 * rel_v)
    assert np.all(np.diag(props.moment_of_inertia) < analytic)  # inscribed: strictly less
    # Icosahedral symmetry makes the second moment isotropic.
    off_diagonal = props.moment_of_inertia - np.diag(np.diag(props.moment_of_inertia))
    np.testing.assert_allclose(off_diagonal, 0.0, atol=1e-12 * analytic)


def test_asset_sphere_mass_within_its_polyhedral_volume_error():
    shape = load_shape_from_file(ASSETS_PATH / "sphere/icosphere_3subdiv.1.mochi.json", bake_scale=[0.2] * 3)
    props = compute_shape_mass_properties(shape, density=1000.0)
    corners = shape.tet_vertices[shape.tetrahedra]
    tet_volume = np.sum(np.einsum("ti,ti->t", corners[:, 1] - corners[:, 0],
                                  np.cross(corners[:, 2] - corners[:, 0], corners[:, 3] - corners[:, 0]))) / 6.0
    analytic_mass = 4.0 / 3.0 * np.pi * 0.2**3 * 1000.0
    rel_v = 1.0 - tet_volume / (analytic_mass / 1000.0)
    assert props.volume == pytest.approx(tet_volume, rel=1e-13)  # surface quadrature == tet volume sum
    assert abs(props.mass / analytic_mass - 1.0) <= rel_v + 1e-13
    assert rel_v < 0.01


def test_mass_only_scales_density_and_inertia():
    vertices, triangles = box_mesh([0.2, 0.3, 0.1], center=[0.1, 0.0, -0.3])
    reference = compute_mass_properties(vertices, triangles, density=1000.0)
    props = compute_mass_properties(vertices, triangles, mass=5.0)
    assert props.mass == 5.0
    assert props.density == pytest.approx(5.0 / reference.volume, rel=1e-14)
    np.testing.assert_allclose(props.moment_of_inertia, reference.moment_of_inertia * 5.0 / reference.mass,
                               rtol=1e-13, atol=1e-16)
    np.testing.assert_allclose(props.center_of_mass, reference.center_of_mass, atol=1e-15)


def test_default_density_when_neither_is_given():
    vertices, triangles = box_mesh([0.5, 0.5, 0.5])
    props = compute_mass_properties(vertices, triangles)
    assert props.density == DEFAULT_DENSITY == 1000.0
    assert props.mass == pytest.approx(1000.0, rel=1e-14)


def test_user_center_of_mass_alone_warns_and_uses_parallel_axis():
    half = np.array([0.2, 0.1, 0.3])
    vertices, triangles = box_mesh(half)
    centered = compute_mass_properties(vertices, triangles)
    offset = np.array([0.05, -0.02, 0.01])
    with pytest.warns(UserWarning, match="uniform density"):
        props = compute_mass_properties(vertices, triangles, center_of_mass=offset)
    np.testing.assert_array_equal(props.center_of_mass, offset)
    # Uniform-density inertia about the given point: I_c + m (|d|^2 1 - d d^T).
    expected = centered.moment_of_inertia + centered.mass * (offset @ offset * np.eye(3) - np.outer(offset, offset))
    np.testing.assert_allclose(props.moment_of_inertia, expected, rtol=0, atol=1e-13)


def test_user_inertia_alone_warns_and_com_is_computed():
    vertices, triangles = box_mesh([0.2, 0.1, 0.3], center=[1.0, 2.0, 3.0])
    real6 = [0.5, -0.01, 0.0, 0.6, 0.02, 0.7]
    with pytest.warns(UserWarning, match="uniform density"):
        props = compute_mass_properties(vertices, triangles, moment_of_inertia=real6)
    np.testing.assert_allclose(props.center_of_mass, [1.0, 2.0, 3.0], atol=1e-13)
    np.testing.assert_array_equal(props.moment_of_inertia_real6, real6)
    np.testing.assert_allclose(props.second_moment, second_moment_from_inertia(inertia_from_real6(real6)))


def test_both_com_and_inertia_are_used_without_warning():
    vertices, triangles = box_mesh([0.2, 0.1, 0.3])
    inertia = np.diag([0.1, 0.2, 0.25])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        props = compute_mass_properties(vertices, triangles, mass=2.0, center_of_mass=[0.0, 0.01, 0.0],
                                        moment_of_inertia=inertia)
    np.testing.assert_array_equal(props.moment_of_inertia, inertia)
    assert not props.moment_of_inertia.flags.writeable


def test_triangle_inequality_violation_is_accepted_with_a_warning():
    vertices, triangles = box_mesh([0.2, 0.1, 0.3])
    with pytest.warns(UserWarning, match="triangle inequality"):
        props = compute_mass_properties(vertices, triangles, center_of_mass=[0, 0, 0],
                                        moment_of_inertia=np.diag([1.0, 1.0, 3.0]))
    np.testing.assert_array_equal(np.diag(props.moment_of_inertia), [1.0, 1.0, 3.0])


@pytest.mark.parametrize("inertia, message", [
    (np.diag([1.0, np.nan, 1.0]), "finite"),
    (np.array([[1.0, 0.1, 0], [0.0, 1, 0], [0, 0, 1]]), "symmetric"),
    (np.diag([1.0, 1.0, -0.5]), "positive semi-definite"),
    (np.ones(5), r"Real6 \(6,\) or a \(3, 3\)"),
])
def test_bad_user_inertia(inertia, message):
    vertices, triangles = box_mesh([0.2, 0.1, 0.3])
    with pytest.raises(ValueError, match=message):
        compute_mass_properties(vertices, triangles, center_of_mass=[0, 0, 0], moment_of_inertia=inertia)


def test_density_and_mass_together_is_an_error():
    vertices, triangles = box_mesh([0.2, 0.1, 0.3])
    with pytest.raises(ValueError, match="set density or mass, not both"):
        compute_mass_properties(vertices, triangles, density=1000.0, mass=2.0)


@pytest.mark.parametrize("kwargs, error, message", [
    ({"density": 0.0}, ValueError, "density must be positive"),
    ({"density": -5.0}, ValueError, "density must be positive"),
    ({"mass": float("inf")}, ValueError, "mass must be positive"),
    ({"mass": True}, TypeError, "mass must be a number"),
    ({"center_of_mass": [0, 0]}, ValueError, r"center_of_mass must have shape \(3,\)"),
    ({"center_of_mass": [0, np.inf, 0], "moment_of_inertia": np.eye(3)}, ValueError, "center_of_mass must be finite"),
])
def test_bad_parameters(kwargs, error, message):
    vertices, triangles = box_mesh([0.2, 0.1, 0.3])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(error, match=message):
            compute_mass_properties(vertices, triangles, **kwargs)


def test_inverted_open_and_flat_surfaces_are_errors():
    vertices, triangles = box_mesh([0.2, 0.1, 0.3])
    with pytest.raises(ValueError, match="inverted"):
        compute_mass_properties(vertices, triangles[:, [0, 2, 1]])
    with pytest.raises(ValueError, match="open"):
        compute_mass_properties(vertices, triangles[1:])
    flat = np.array([[0.0, 0, 0], [1, 0, 0], [0, 1, 0]])
    with pytest.raises(ValueError, match="zero volume"):
        compute_mass_properties(flat, np.array([[0, 1, 2], [0, 2, 1]]))


def test_implicit_shapes_have_no_mass_properties():
    with pytest.raises(ValueError, match="no surface mesh"):
        compute_shape_mass_properties(create_plane_shape())
    with pytest.raises(TypeError, match="Shape"):
        compute_shape_mass_properties("box")


def test_real6_is_the_upper_triangle_in_negative_tensor_notation():
    rotation = Quaternion.from_axis_angle([0.0, 0.0, 1.0], np.pi / 6)
    vertices, triangles = box_mesh([0.4, 0.1, 0.2], rotation=rotation)
    props = compute_mass_properties(vertices, triangles)
    real6 = props.moment_of_inertia_real6
    j = props.second_moment
    # ixy = -integral x y dm = -J_xy, and the diagonal is I_xx = J_yy + J_zz.
    assert real6[1] == pytest.approx(-j[0, 1], rel=1e-14) and abs(real6[1]) > 1e-3
    assert real6[0] == pytest.approx(j[1, 1] + j[2, 2], rel=1e-14)
    np.testing.assert_allclose(inertia_from_real6(real6), props.moment_of_inertia, rtol=0, atol=1e-16)


def test_inertia_helpers_round_trip_and_batch():
    rng = np.random.default_rng(0)
    a = rng.normal(size=(4, 2, 3, 3))
    j = a @ np.swapaxes(a, -1, -2)  # batch of PSD second moments
    i = inertia_from_second_moment(j)
    np.testing.assert_allclose(second_moment_from_inertia(i), j, rtol=0, atol=1e-13)
    r6 = real6_from_inertia(i)
    assert r6.shape == (4, 2, 6)
    np.testing.assert_allclose(inertia_from_real6(r6), i, rtol=0, atol=1e-15)
    with pytest.raises(ValueError, match=r"\(\.\.\., 6\)"):
        inertia_from_real6(np.zeros(5))
    with pytest.raises(ValueError, match=r"\(\.\.\., 3, 3\)"):
        real6_from_inertia(np.zeros((3, 2)))


def test_far_from_origin_keeps_precision():
    half = np.array([0.05, 0.02, 0.03])
    near = compute_mass_properties(*box_mesh(half))
    vertices, triangles = box_mesh(half, center=[1000.0, -2000.0, 500.0])
    far = compute_mass_properties(vertices, triangles)
    np.testing.assert_allclose(far.center_of_mass, [1000.0, -2000.0, 500.0], rtol=1e-14)
    # Vertices carry ~1000 m * eps = 2e-13 m of round-off against 0.02 m features: ~1e-11 relative.
    np.testing.assert_allclose(far.moment_of_inertia, near.moment_of_inertia, rtol=0,
                               atol=1e-10 * near.moment_of_inertia.max())
