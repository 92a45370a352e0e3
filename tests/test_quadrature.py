"""Boundary quadrature: rule exactness on random 3D triangles, sample layout, subsampling, errors."""

import numpy as np
import pytest
from scipy.special import roots_legendre

from superdex_gym.sim.quadrature import (
    ActorBoundaryElementType,
    BoundarySamples,
    BoundarySubsamplingParams,
    SubsamplingStrategy,
    boundary_samples,
    select_subsampled_faces,
    triangle_rule,
)
from superdex_gym.sim.shapes import box_mesh, icosphere_mesh

RULES = [ActorBoundaryElementType.P1Q1, ActorBoundaryElementType.P1Q3, ActorBoundaryElementType.P1Q6,
         ActorBoundaryElementType.P1Q7, ActorBoundaryElementType.P1Q12, ActorBoundaryElementType.P1Q16]
EXPECTED_DEGREE = {1: 1, 3: 2, 6: 4, 7: 5, 12: 6, 16: 8}


def exact_monomial_integral(corners: np.ndarray, powers) -> float:
    """Reference integral of x^a y^b z^c over the triangle `corners` (3, 3), independent of the rules tested.

    Collapsed (Duffy) map of the unit square onto the triangle, lambda_1 = u, lambda_2 = (1 - u) v, with
    Jacobian 2A (1 - u): a degree-p polynomial becomes degree <= p + 1 in u and p in v, so the 12 x 12
    Gauss-Legendre product rule (exact to degree 23 per variable) is exact for every p <= 22 used here.
    """
    nodes, weights = roots_legendre(12)
    u, v = np.meshgrid(0.5 * (nodes + 1.0), 0.5 * (nodes + 1.0), indexing="ij")
    w = np.outer(weights, weights) * 0.25 * (1.0 - u)
    lam1, lam2 = u, (1.0 - u) * v
    points = np.einsum("uv,d->uvd", lam1, corners[0]) + np.einsum("uv,d->uvd", lam2, corners[1]) \
        + np.einsum("uv,d->uvd", 1.0 - lam1 - lam2, corners[2])
    area = 0.5 * np.linalg.norm(np.cross(corners[1] - corners[0], corners[2] - corners[0]))
    return float(2.0 * area * np.sum(w * np.prod(points ** np.array(powers), axis=-1)))


def test_reference_integrator_matches_closed_forms():
    unit = np.array([[0.0, 0, 0], [1, 0, 0], [0, 1, 0]])
    assert exact_monomial_integral(unit, (0, 0, 0)) == pytest.approx(0.5, rel=1e-15)
    assert exact_monomial_integral(unit, (2, 0, 0)) == pytest.approx(1 / 12, rel=1e-14)
    assert exact_monomial_integral(unit, (1, 1, 0)) == pytest.approx(1 / 24, rel=1e-14)
    assert exact_monomial_integral(unit, (8, 0, 0)) == pytest.approx(1 / 90, rel=1e-14)  # 1/((p+1)(p+2))


def monomials(degree):
    return [(a, b, d - a - b) for d in range(degree + 1) for a in range(d + 1) for b in range(d + 1 - a)]


def random_triangles(count, seed):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(count, 3, 3)) + rng.uniform(-2, 2, size=(count, 1, 3))


@pytest.mark.parametrize("element_type", RULES, ids=lambda e: e.name)
def test_rule_tables(element_type):
    rule = triangle_rule(element_type)
    assert rule.barycentric.shape == (element_type.num_points, 3)
    assert rule.degree == EXPECTED_DEGREE[element_type.num_points] == element_type.degree
    np.testing.assert_allclose(rule.weights.sum(), 1.0, rtol=0, atol=1e-15)
    np.testing.assert_allclose(rule.barycentric.sum(axis=1), 1.0, rtol=0, atol=1e-15)
    assert np.all(rule.barycentric > 0) and np.all(rule.weights > 0)  # interior points, positive weights
    assert not rule.weights.flags.writeable


@pytest.mark.parametrize("element_type", RULES, ids=lambda e: e.name)
def test_rule_integrates_monomials_exactly_on_random_triangles(element_type):
    corners = random_triangles(4, seed=element_type.num_points)
    triangles = np.arange(12).reshape(4, 3)
    samples = boundary_samples(corners.reshape(-1, 3), triangles, element_type)
    for powers in monomials(element_type.degree):
        values = np.prod(samples.points ** np.array(powers), axis=1) * samples.weights
        quadrature = np.bincount(samples.face_index, weights=values, minlength=4)
        exact = np.array([exact_monomial_integral(c, powers) for c in corners])
        scale = np.array([exact_monomial_integral(c, (2 * powers[0], 2 * powers[1], 2 * powers[2])) for c in corners])
        # 1e-13 relative to the L2 size of the integrand: float64 round-off (and the 15-digit published
        # weights, good to ~1e-15) summed over at most 16 points.
        np.testing.assert_allclose(quadrature, exact, rtol=0, atol=1e-13 * np.sqrt(np.max(scale)) + 1e-15)


@pytest.mark.parametrize("element_type", RULES, ids=lambda e: e.name)
def test_rule_is_not_exact_one_degree_higher(element_type):
    """The degree is tight: some monomial of degree p + 1 is missed (so the exactness test can fail)."""
    corners = random_triangles(1, seed=7)[0]
    samples = boundary_samples(corners, np.array([[0, 1, 2]]), element_type)
    errors = []
    for powers in monomials(element_type.degree + 1):
        if sum(powers) == element_type.degree + 1:
            quad = np.sum(np.prod(samples.points ** np.array(powers), axis=1) * samples.weights)
            errors.append(abs(quad - exact_monomial_integral(corners, powers)))
    assert max(errors) > 1e-8


def test_default_is_an_alias_of_p1q3_and_names_are_accepted():
    assert ActorBoundaryElementType.DEFAULT is ActorBoundaryElementType.P1Q3
    assert list(ActorBoundaryElementType) == RULES  # DEFAULT is an alias, not a seventh member
    assert triangle_rule("p1q6") is triangle_rule(ActorBoundaryElementType.P1Q6)
    np.testing.assert_allclose(np.sort(triangle_rule("P1Q3").barycentric, axis=1),
                               [[1 / 6, 1 / 6, 2 / 3]] * 3, rtol=0, atol=2e-16)


@pytest.mark.parametrize("element_type", RULES, ids=lambda e: e.name)
def test_samples_layout_on_a_closed_mesh(element_type):
    vertices, triangles = box_mesh([0.3, 0.5, 0.7], center=[1.0, -2.0, 0.5])
    samples = boundary_samples(vertices, triangles, element_type)
    n = element_type.num_points
    assert isinstance(samples, BoundarySamples) and samples.num_samples == 12 * n
    assert samples.points.shape == samples.normals.shape == samples.barycentric.shape == (12 * n, 3)
    assert samples.face_index.dtype == np.int64
    np.testing.assert_array_equal(samples.face_index, np.repeat(np.arange(12), n))
    area = 8 * (0.3 * 0.5 + 0.5 * 0.7 + 0.3 * 0.7)
    np.testing.assert_allclose(samples.weights.sum(), area, rtol=1e-14)
    np.testing.assert_allclose(np.linalg.norm(samples.normals, axis=1), 1.0, rtol=1e-15)
    outward = np.einsum("qi,qi->q", samples.normals, samples.points - [1.0, -2.0, 0.5])
    assert np.all(outward > 0)
    rebuilt = np.einsum("qk,qkd->qd", samples.barycentric, vertices[triangles[samples.face_index]])
    np.testing.assert_allclose(rebuilt, samples.points, rtol=0, atol=1e-15)


def test_uniform_subsampling_takes_evenly_spaced_faces_and_preserves_area():
    vertices, triangles = icosphere_mesh(2)  # 320 faces
    full = boundary_samples(vertices, triangles, "P1Q1")
    params = BoundarySubsamplingParams(subsampling_density=0.3)
    sub = boundary_samples(vertices, triangles, "P1Q1", subsampling=params)
    kept = int(np.ceil(320 * 0.3))
    np.testing.assert_array_equal(sub.face_index, (np.arange(kept) * 320) // kept)
    np.testing.assert_allclose(sub.weights.sum(), full.weights.sum(), rtol=1e-14)
    # Every kept weight carries the same factor total_area / kept_area.
    ratio = sub.weights / full.weights[sub.face_index]
    np.testing.assert_allclose(ratio, full.weights.sum() / full.weights[sub.face_index].sum(), rtol=1e-14)


def test_density_one_means_no_subsampling_and_zero_keeps_nothing():
    vertices, triangles = box_mesh([1, 1, 1])
    full = boundary_samples(vertices, triangles)
    same = boundary_samples(vertices, triangles, subsampling=BoundarySubsamplingParams(1.0))
    np.testing.assert_array_equal(full.weights, same.weights)
    empty = boundary_samples(vertices, triangles, subsampling=BoundarySubsamplingParams(0.0))
    assert empty.num_samples == 0 and empty.points.shape == (0, 3)


def test_area_proportional_is_deterministic_and_prefers_large_faces():
    areas = np.concatenate([np.full(50, 1000.0), np.full(50, 1.0)])
    params = BoundarySubsamplingParams(0.5, SubsamplingStrategy.AREA_PROPORTIONAL)
    first, second = select_subsampled_faces(areas, params), select_subsampled_faces(areas, params)
    np.testing.assert_array_equal(first, second)
    assert first.size == 50 and np.unique(first).size == 50 and np.all(np.diff(first) > 0)
    assert np.sum(first < 50) >= 45  # the big faces are 1000x more likely per draw
    vertices, triangles = icosphere_mesh(1)
    sub = boundary_samples(vertices, triangles, subsampling=params)
    np.testing.assert_allclose(sub.weights.sum(), boundary_samples(vertices, triangles).weights.sum(), rtol=1e-14)


@pytest.mark.parametrize("density", [-0.1, 1.5, float("nan")])
def test_subsampling_density_out_of_range(density):
    with pytest.raises(ValueError, match="subsampling_density"):
        BoundarySubsamplingParams(density)


def test_subsampling_params_type_errors():
    with pytest.raises(TypeError, match="subsampling_density"):
        BoundarySubsamplingParams("0.5")
    with pytest.raises(TypeError, match="strategy"):
        BoundarySubsamplingParams(0.5, "AREA_PROPORTIONAL")
    vertices, triangles = box_mesh([1, 1, 1])
    with pytest.raises(TypeError, match="subsampling"):
        boundary_samples(vertices, triangles, subsampling=0.5)


def test_bad_inputs_are_named():
    vertices, triangles = box_mesh([1, 1, 1])
    with pytest.raises(TypeError, match="element_type"):
        boundary_samples(vertices, triangles, "P1Q5")
    with pytest.raises(ValueError, match=r"vertices must have shape \(V, 3\)"):
        boundary_samples(vertices[:, :2], triangles)
    with pytest.raises(ValueError, match="NaN or infinite"):
        boundary_samples(np.where(np.arange(8)[:, None] == 3, np.nan, vertices), triangles)
    with pytest.raises(ValueError, match=r"triangle indices must be in \[0, 7\]"):
        boundary_samples(vertices, triangles + 1)
    with pytest.raises(TypeError, match="integer vertex indices"):
        boundary_samples(vertices, triangles.astype(float))
    with pytest.raises(ValueError, match="zero area"):
        boundary_samples(np.array([[0, 0, 0], [1, 0, 0], [2, 0, 0.0]]), np.array([[0, 1, 2]]))
