"""Per-sample contact kernels: ramps, friction regularizers, penalty and dissipation densities, collider SDFs,
grid SDF build, collider-type resolution, parameter combination and restitution (digest 5.2, 5.3, 5.6).

Finite differences are central with a step of 1e-6 relative to the kernel's length scale (the ramp or
regularization width, or 1 m for positions); the tolerances below name their reason.
"""

import math

import numpy as np

import pytest

from superdex_gym.sim.contact.colliders import (
    BoxCollider,
    ColliderType,
    GridSdfCollider,
    MeshCollider,
    PlaneCollider,
    SphereCollider,
    build_grid_sdf,
    collider_from_mesh,
    collider_from_plane,
    collider_from_sphere,
    resolve_collider_type,
    rigid_actor_sdf_padding,
)
from superdex_gym.sim.contact.friction import alignment_gate, dissipation_energy, dissipation_normal
from superdex_gym.sim.contact.mesh_distance import is_closed_mesh, signed_distance_to_mesh, winding_number
from superdex_gym.sim.contact.params import (
    ContactEvalConfig,
    ContactPairParamsOverride,
    ContactParams,
    GridSdfParams,
    SdfResolutionMode,
    combine_contact_params,
)
from superdex_gym.sim.contact.penalty import penalty_energy, penalty_scalar
from superdex_gym.sim.contact.ramp import CoulombFrictionModel, friction_smoother, poly_relu, step_c1, step_cinf
from superdex_gym.sim.contact.restitution import (
    calibrate_normal_viscous_damping_coefficient,
    effective_coefficient_of_restitution,
)
from helpers import box_arrays

# Central differences of smooth kernels: truncation (h/L)^2 ~ 1e-12 and round-off eps/(h/L) ~ 1e-10, relative.
FD_RTOL = 1e-6


def central(f, x, h):
    return (f(x + h) - f(x - h)) / (2.0 * h)


# ---------------------------------------------------------------------------------------------------------------
# Ramp and regularizers


EPS = 0.005
DELTA = 0.001
SHIFT = EPS - DELTA


@pytest.mark.parametrize(
    "y_over_t",
    [-1.0 + 1e-3, -0.5, 0.0, 0.3, 1.0 - 1e-3, 1.5, 10.0],
    ids=["just-inside-ramp", "ramp-low", "ramp-mid", "ramp-high", "ramp-top", "linear", "deep"],
)
def test_poly_relu_derivatives_match_finite_differences(y_over_t):
    x = SHIFT + y_over_t * EPS
    h = 1e-6 * EPS
    r = poly_relu(x, EPS, SHIFT)
    fd1 = central(lambda s: poly_relu(s, EPS, SHIFT).value, x, h)
    fd2 = central(lambda s: poly_relu(s, EPS, SHIFT).d1, x, h)
    assert r.d1 == pytest.approx(fd1, rel=FD_RTOL, abs=1e-9)
    assert r.d2 == pytest.approx(fd2, rel=FD_RTOL, abs=1e-9 / EPS)
    if abs(y_over_t) < 1:
        assert r.value > 0 and 0 < r.d1 < 1 and r.d2 > 0


def test_poly_relu_edges_are_c2_and_exact():
    lo, hi = SHIFT - EPS, SHIFT + EPS
    at_lo, at_hi = poly_relu(lo, EPS, SHIFT), poly_relu(hi, EPS, SHIFT)
    assert (at_lo.value, at_lo.d1, at_lo.d2) == (0.0, 0.0, 0.0)  # touching: phi = delta
    assert at_hi.value == pytest.approx(EPS, abs=1e-18)
    assert at_hi.d1 == pytest.approx(1.0, abs=1e-15)
    assert at_hi.d2 == pytest.approx(0.0, abs=1e-12)
    # Continuity across both ends of the blend (values, slopes, curvatures).
    for edge in (lo, hi):
        a, b = poly_relu(edge - 1e-12, EPS, SHIFT), poly_relu(edge + 1e-12, EPS, SHIFT)
        assert a.value == pytest.approx(b.value, abs=1e-11)
        assert a.d1 == pytest.approx(b.d1, abs=1e-9)
        assert a.d2 == pytest.approx(b.d2, abs=1e-6 / EPS)
    far = poly_relu(np.array([-1.0, 1.0]), EPS, SHIFT)
    np.testing.assert_array_equal(far.value, [0.0, 1.0 - SHIFT])
    # t = 0 is the exact ReLU.
    relu = poly_relu(np.array([-0.1, 0.2]), 0.0, 0.0)
    np.testing.assert_array_equal(relu.value, [0.0, 0.2])
    with pytest.raises(ValueError):
        poly_relu(0.0, -1.0, 0.0)


def test_penalty_closed_form_of_the_resting_cube():
    """Digest 5.6: CoM at 0.1992543 m -> penetration 7.457e-4 m, z = -0.003254, h' = 0.0808."""
    phi = -(0.2 - 0.1992543)
    s = penalty_scalar(phi, 1e9, EPS, DELTA)
    z = -phi - (EPS - DELTA)
    assert z == pytest.approx(-0.0032543, abs=1e-7)
    h = poly_relu(-phi, EPS, SHIFT)
    assert h.value == pytest.approx(4.85e-5, rel=2e-3)  # the digest rounds it to 4.87e-5
    assert h.d1 == pytest.approx(0.0808, rel=1e-3)
    force = s.load * 0.16  # lambda_n * bottom-face area
    assert 627.0 <= force <= 629.0


@pytest.mark.parametrize("model", list(CoulombFrictionModel))
@pytest.mark.parametrize(
    "x_over_t", [1e-3, 0.4, 0.999, 1.001, 3.0], ids=["stick0", "stick", "below-t", "above-t", "slip"]
)
def test_friction_smoothers_match_finite_differences(model, x_over_t):
    t = 2e-4
    x = x_over_t * t
    h = 1e-7 * t
    f = friction_smoother(model, x, t)
    assert f.d1 == pytest.approx(central(lambda s: friction_smoother(model, s, t).value, x, h), rel=FD_RTOL)
    assert f.d2 == pytest.approx(central(lambda s: friction_smoother(model, s, t).d1, x, h), rel=FD_RTOL, abs=1e-6 / t)
    assert f.d1_over_x == pytest.approx(f.d1 / x, rel=1e-12)


def test_friction_smoothers_closed_forms():
    t = 0.01
    x = np.array([0.0, 0.5 * t, t, 2 * t])
    c1 = step_c1(x, t)
    np.testing.assert_allclose(c1.value, [0.0, 0.25 * t - t / 24, 2 * t / 3, 2 * t - t / 3], rtol=1e-14)
    np.testing.assert_allclose(c1.d1, [0.0, 0.75, 1.0, 1.0], rtol=1e-14)
    np.testing.assert_allclose(c1.d2, [2 / t, 1 / t, 0.0, 0.0], rtol=1e-14)
    np.testing.assert_allclose(c1.d1_over_x[0], 2 / t)  # robust limit at x = 0
    cinf = step_cinf(x, t)
    assert cinf.value[0] == 0.0
    assert cinf.d2[0] == pytest.approx(2 / t)  # same curvature at 0 as step_c1 (the 1/4 in eps^2/4)
    np.testing.assert_allclose(cinf.value, np.sqrt(x**2 + t**2 / 4) - t / 2, rtol=1e-14)
    assert step_c1(0.0, 0.0).d1_over_x == 0.0  # t = 0: the reference's zero at x = 0
    with pytest.raises(ValueError):
        step_c1(-1e-3, t)
    with pytest.raises(ValueError):
        friction_smoother("NOT_A_MODEL", 0.0, t)
    assert friction_smoother("cinf_regularized", 0.3 * t, t).value == pytest.approx(step_cinf(0.3 * t, t).value)


# ---------------------------------------------------------------------------------------------------------------
# Penalty and dissipation densities (with respect to the collider-frame position / displacement)


def _fd_gradient(energy, y, h):
    out = np.zeros_like(y)
    for k in range(y.shape[-1]):
        e = np.zeros_like(y)
        e[..., k] = h
        out[..., k] = (energy(y + e) - energy(y - e)) / (2 * h)
    return out


def _fd_jacobian(grad, y, h):
    out = np.zeros(y.shape + (y.shape[-1],))
    for k in range(y.shape[-1]):
        e = np.zeros_like(y)
        e[..., k] = h
        out[..., :, k] = (grad(y + e) - grad(y - e)) / (2 * h)
    return out


@pytest.mark.parametrize(
    "depth", [-DELTA + 1e-5, 0.0, 0.002, 0.004 + 1e-5, 0.02], ids=["touching", "surface", "ramp", "ramp-top", "deep"]
)
def test_penalty_energy_matches_finite_differences_on_a_curved_collider(depth):
    sphere = SphereCollider([0.1, -0.2, 0.3], 0.5)
    rng = np.random.default_rng(3)
    direction = rng.normal(size=(4, 3))
    direction /= np.linalg.norm(direction, axis=1, keepdims=True)
    y = sphere.center + (0.5 - depth) * direction

    def terms(q, want_hessian=True):
        sdf = sphere.evaluate(q, True)
        return penalty_energy(sdf.phi, sdf.grad, sdf.hessian, 1e5, EPS, DELTA, want_hessian)

    t = terms(y)
    h = 1e-6 * EPS  # positions vary on the ramp scale
    fd_grad = _fd_gradient(lambda q: terms(q, False).energy, y, h)
    fd_hess = _fd_jacobian(lambda q: terms(q, False).grad, y, h)
    np.testing.assert_allclose(t.grad, fd_grad, rtol=1e-5, atol=1e-9 * (1 + np.abs(t.grad).max()))
    np.testing.assert_allclose(t.hessian, fd_hess, rtol=1e-5, atol=1e-6 * (1 + np.abs(t.hessian).max()))
    assert np.linalg.norm(t.grad) > 0
    np.testing.assert_allclose(t.load, -np.einsum("ri,ri->r", t.grad, sphere.evaluate(y).grad))  # dW/dY = -lambda G


def test_penalty_energy_is_zero_beyond_the_threshold():
    t = penalty_energy(np.array([DELTA, 0.5]), np.array([[0, 1.0, 0], [0, 1.0, 0]]), None, 1e9, EPS, DELTA, True)
    assert np.all(t.energy == 0) and np.all(t.grad == 0) and np.all(t.hessian == 0) and np.all(t.load == 0)


def _dissipation(dp, fitted, model=CoulombFrictionModel.C1_REGULARIZED, want_hessian=True):
    normal = np.array([0.0, 0.6, 0.8])
    return dissipation_energy(dp, np.broadcast_to(normal, dp.shape), np.full(dp.shape[0], 700.0), 0.5, 0.3, 0.2,
                              0.05, 0.01, model, want_hessian, fitted_hessian=fitted)


@pytest.mark.parametrize("model", list(CoulombFrictionModel))
@pytest.mark.parametrize("slip_over_t", [0.3, 4.0], ids=["stick", "slip"])
def test_dissipation_matches_finite_differences(model, slip_over_t):
    t = 0.05 * 0.01  # V_f dt
    rng = np.random.default_rng(7)
    normal = np.array([0.0, 0.6, 0.8])
    tangent = np.cross(normal, rng.normal(size=(5, 3)))
    tangent /= np.linalg.norm(tangent, axis=1, keepdims=True)
    dp = slip_over_t * t * tangent + 3e-4 * rng.normal(size=(5, 1)) * normal
    d = _dissipation(dp, fitted=False, model=model)
    h = 1e-6 * t
    fd_grad = _fd_gradient(lambda q: _dissipation(q, False, model, False).energy, dp, h)
    fd_hess = _fd_jacobian(lambda q: _dissipation(q, False, model, False).grad, dp, h)
    np.testing.assert_allclose(d.grad, fd_grad, rtol=1e-5, atol=1e-8 * np.abs(d.grad).max())
    np.testing.assert_allclose(d.hessian, fd_hess, rtol=1e-5, atol=1e-6 * np.abs(d.hessian).max())
    assert np.linalg.norm(d.grad) > 0
    # Fitted Hessian: mu lam f'/x on the whole tangent plane; same normal part; PSD.
    fitted = _dissipation(dp, fitted=True, model=model)
    proj = np.eye(3) - np.outer(normal, normal)
    f = friction_smoother(model, np.linalg.norm(dp - (dp @ normal)[:, None] * normal, axis=1), t)
    expected = 700.0 * ((0.5 * f.d1_over_x + 0.3 / 0.01)[:, None, None] * proj + 0.2 / 0.01 * np.outer(normal, normal))
    np.testing.assert_allclose(fitted.hessian, expected, rtol=1e-12)
    assert np.all(np.linalg.eigvalsh(fitted.hessian) > -1e-9)


def test_dissipation_at_zero_slip_is_isotropic():
    d = _dissipation(np.zeros((1, 3)), fitted=False)
    assert np.all(d.grad == 0) and d.energy[0] == 0
    t = 0.05 * 0.01
    normal = np.array([0.0, 0.6, 0.8])
    proj = np.eye(3) - np.outer(normal, normal)
    expected = 700.0 * ((0.5 * 2 / t + 30.0) * proj + 20.0 * np.outer(normal, normal))
    np.testing.assert_allclose(d.hessian[0], expected, rtol=1e-12)
    with pytest.raises(ValueError):
        dissipation_energy(np.zeros((1, 3)), np.array([[0, 1.0, 0]]), np.ones(1), 0.5, 0, 0, 0.01, 0.0,
                           "C1_REGULARIZED", False)  # stage_dt = 0


def test_alignment_gate_and_dissipation_normal():
    g = np.array([[0, 1.0, 0]] * 4)
    na = np.array([[0, -1.0, 0], [1.0, 0, 0], [0, 0.5, -math.sqrt(0.75)], [0, 1.0, 0]])
    accept, fade = alignment_gate(g, na, 0.0, True)
    np.testing.assert_array_equal(accept, [True, True, False, False])
    np.testing.assert_allclose(fade[:2], [1.0, 0.0])  # a = (m - s)/(m + 1)
    accept, fade = alignment_gate(g, na, 0.5, True)
    np.testing.assert_array_equal(accept, [True, True, True, False])
    np.testing.assert_allclose(fade[:3], [1.0, 1 / 3, 0.0])
    _, fade = alignment_gate(g, na, -1.0, True)  # m = -1: no fade interval, factor 1
    np.testing.assert_array_equal(fade, 1.0)
    _, fade = alignment_gate(g, na, 0.5, False)
    np.testing.assert_array_equal(fade, 1.0)
    n = dissipation_normal(np.array([[0, 2.0, 0], [0, 0, 0]]), np.array([[0.6, -0.8, 0], [0, 0, -1.0]]), True)
    np.testing.assert_allclose(n, [[0, 1.0, 0], [0, 0, 1.0]])  # zero gradient falls back to -N_A
    n = dissipation_normal(np.array([[0, 2.0, 0]]), np.array([[0.6, -0.8, 0]]), False)
    np.testing.assert_allclose(n, [[-0.6, 0.8, 0]])


# ---------------------------------------------------------------------------------------------------------------
# Collider fields


def _check_field_derivatives(collider, points, rtol=1e-6):
    res = collider.evaluate(points, True)
    h = 1e-7  # metres; all test geometry is O(0.1 - 1 m)
    fd_g = _fd_gradient(lambda q: collider.evaluate(q).phi, points, h)
    fd_h = _fd_jacobian(lambda q: collider.evaluate(q).grad, points, h)
    np.testing.assert_allclose(res.grad, fd_g, rtol=rtol, atol=1e-7)
    np.testing.assert_allclose(res.hessian, fd_h, rtol=rtol, atol=1e-6 * (1 + np.abs(res.hessian).max()))
    np.testing.assert_allclose(res.hessian, np.swapaxes(res.hessian, -1, -2), atol=1e-12)
    assert np.all(np.linalg.norm(res.grad, axis=-1) > 0)
    return res


def test_plane_field():
    plane = PlaneCollider([0, 2.0, 0], -2.0)  # {y = -1}: the digest's n = (0,1,0), d = -1
    assert plane.evaluate(np.zeros(3)).phi == pytest.approx(1.0)
    _check_field_derivatives(plane, np.random.default_rng(0).normal(size=(5, 3)))
    assert plane.translated([0, 0.5, 0]).evaluate(np.zeros(3)).phi == pytest.approx(0.5)
    with pytest.raises(ValueError):
        PlaneCollider([0, 0, 0], 0.0)


def test_sphere_field():
    sphere = SphereCollider([0.1, 0.2, 0.3], 0.25)
    pts = sphere.center + np.random.default_rng(1).normal(size=(8, 3)) * 0.3
    res = _check_field_derivatives(sphere, pts)
    np.testing.assert_allclose(res.phi, np.linalg.norm(pts - sphere.center, axis=1) - 0.25)
    at_centre = sphere.evaluate(sphere.center, True)
    assert at_centre.phi == -0.25 and np.linalg.norm(at_centre.grad) == 1.0
    with pytest.raises(ValueError):
        SphereCollider([0, 0, 0], 0.0)


def test_box_field_regions_and_derivatives():
    box = BoxCollider([0.0, 0.0, 0.0], [0.3, 0.3, 0.3])
    # Corner-region distance sqrt(0.3^2 + 0.3^2) = 0.42426 (digest 5.2 [RUN]).
    assert box.evaluate([0.6, 0.6, 0.0]).phi == pytest.approx(math.sqrt(0.18), rel=1e-12)
    face, edge, corner, inside = [0.5, 0.1, -0.2], [0.5, -0.45, 0.1], [-0.4, 0.5, 0.6], [0.1, -0.25, 0.05]
    res = box.evaluate(np.array([face, edge, corner, inside]), True)
    np.testing.assert_allclose(res.phi, [0.2, math.hypot(0.2, 0.15), np.linalg.norm([0.1, 0.2, 0.3]), -0.05])
    np.testing.assert_allclose(res.grad[0], [1, 0, 0])
    np.testing.assert_allclose(res.grad[3], [0, -1, 0])  # inside: nearest face normal
    assert np.all(res.hessian[[0, 3]] == 0)
    rot = np.linalg.qr(np.random.default_rng(2).normal(size=(3, 3)))[0]
    rot *= np.linalg.det(rot)
    obb = BoxCollider([0.1, -0.1, 0.2], [0.2, 0.3, 0.4], rotation=rot)
    pts = obb.center + np.random.default_rng(3).uniform(-0.7, 0.7, size=(40, 3))
    _check_field_derivatives(obb, pts)
    with pytest.raises(ValueError):
        BoxCollider([0, 0, 0], [0.1, 0.0, 0.1])


def test_mesh_field_matches_the_box_and_its_derivatives():
    v, t = box_arrays([0.2, 0.3, 0.4])
    mesh = MeshCollider(v, t)
    box = BoxCollider([0, 0, 0], [0.2, 0.3, 0.4])
    pts = np.random.default_rng(4).uniform(-0.7, 0.7, size=(200, 3))
    a, b = mesh.evaluate(pts, True), box.evaluate(pts, True)
    np.testing.assert_allclose(a.phi, b.phi, atol=1e-12)
    np.testing.assert_allclose(a.grad, b.grad, atol=1e-9)
    np.testing.assert_allclose(a.hessian, b.hessian, atol=1e-8)
    _check_field_derivatives(mesh, pts[:20])


def test_winding_number_and_signed_distance():
    v, t = box_arrays(0.5)
    a, b, c = (v[t[:, i]] for i in range(3))
    np.testing.assert_allclose(winding_number(np.array([[0, 0, 0], [2.0, 0, 0]]), a, b, c), [1.0, 0.0], atol=1e-12)
    d = signed_distance_to_mesh(np.array([[0.0, 0, 0], [1.0, 0, 0]]), v, t)
    np.testing.assert_allclose(d.signed_distance, [-0.5, 0.5])
    assert is_closed_mesh(t) and not is_closed_mesh(t[:-1])


def test_grid_layout_x_slowest_z_fastest_reproduces_linear_fields():
    dims = (4, 5, 6)
    lo, hi = np.array([-1.0, 0.0, 2.0]), np.array([1.0, 2.0, 3.0])
    axes = [np.linspace(lo[i], hi[i], dims[i]) for i in range(3)]
    gx, gy, gz = np.meshgrid(*axes, indexing="ij")
    coef = np.array([0.3, -0.7, 1.1])
    flat = [coef[0] * x + coef[1] * y + coef[2] * z for x, y, z in zip(gx.ravel(), gy.ravel(), gz.ravel())]
    grid = GridSdfCollider.from_flat(dims, flat, lo, hi)
    pts = lo + np.random.default_rng(5).uniform(0, 1, size=(50, 3)) * (hi - lo)
    res = grid.evaluate(pts, True)
    np.testing.assert_allclose(res.phi, pts @ coef, atol=1e-12)
    np.testing.assert_allclose(res.grad, np.broadcast_to(coef, pts.shape), atol=1e-12)
    with pytest.raises(ValueError):
        GridSdfCollider.from_flat(dims, flat[:-1], lo, hi)


def test_grid_field_derivatives_inside_and_outside_the_grid():
    v, t = box_arrays([0.2, 0.25, 0.3])
    params = GridSdfParams(resolution_mode=SdfResolutionMode.EXPLICIT, resolution_delta=(0.07,) * 3)
    grid = build_grid_sdf(v, t, params, padding=0.05)
    rng = np.random.default_rng(6)
    inside = rng.uniform(-0.33, 0.33, size=(30, 3))
    outside = rng.uniform(-0.6, 0.6, size=(30, 3))
    outside = outside[np.any(np.abs(outside) > grid.bounds_max + 1e-3, axis=1)]
    _check_field_derivatives(grid, inside)
    res = _check_field_derivatives(grid, outside)
    # Outside the grid the value is the boundary value plus the distance to the grid box: an upper bound.
    exact = BoxCollider([0, 0, 0], [0.2, 0.25, 0.3]).evaluate(outside).phi
    assert np.all(res.phi >= exact - 1e-12)
    clamp = np.clip(outside, grid.bounds_min, grid.bounds_max)
    np.testing.assert_allclose(res.phi, grid.evaluate(clamp).phi + np.linalg.norm(outside - clamp, axis=1), atol=1e-12)


def test_grid_reproduces_the_box_away_from_edges():
    v, t = box_arrays(0.2)
    grid = build_grid_sdf(v, t, padding=0.001)
    box = BoxCollider([0, 0, 0], [0.2, 0.2, 0.2])
    # Face-region points near the bottom face, within the face's central part: the SDF is linear there.
    pts = np.random.default_rng(8).uniform(-0.09, 0.09, size=(20, 3))
    pts[:, 1] = -0.2 + np.random.default_rng(9).uniform(-0.001, 0.001, size=20)
    np.testing.assert_allclose(grid.evaluate(pts).phi, box.evaluate(pts).phi, atol=1e-12)


def test_grid_resolution_modes_and_padding_rule():
    v, t = box_arrays(0.2)  # 0.4 m cube, 12 edges of 0.4 m and 6 face diagonals
    pad = 0.001
    size = 0.4 + 2 * pad
    mean_edge = (12 * 0.4 + 6 * 0.4 * math.sqrt(2)) / 18
    cases = {
        SdfResolutionMode.MEAN_EDGE: max(6, math.ceil(size / (0.25 * mean_edge))),
        SdfResolutionMode.LARGEST_AXIS: max(6, math.ceil(size / 0.1)),
        SdfResolutionMode.LARGEST_EDGE: max(6, math.ceil(size / (0.25 * 0.4 * math.sqrt(2)))),
    }
    for mode, cells in cases.items():
        grid = build_grid_sdf(v, t, GridSdfParams(resolution_mode=mode), padding=pad)
        assert grid.values.shape == (cells + 1,) * 3, mode
    explicit = GridSdfParams(resolution_mode=SdfResolutionMode.EXPLICIT, resolution_delta=(0.03, 0.05, 0.1))
    fine = build_grid_sdf(v, t, explicit, padding=pad)
    assert fine.values.shape == (math.ceil(size / 0.03) + 1, math.ceil(size / 0.05) + 1, 7)
    assert np.all(fine.bounds_min < -0.2 - pad) and np.all(fine.bounds_min > -0.2 - pad - 1e-12)
    assert fine.is_mesh_closed
    default = build_grid_sdf(v, t)  # GridSdfParams.boundary_padding_dist = 0.005 when no override
    assert default.bounds_max[0] == pytest.approx(0.205)
    assert rigid_actor_sdf_padding(ContactParams()) == 0.001
    assert rigid_actor_sdf_padding(ContactParams(penalty_threshold_extra_padding=0.002)) == pytest.approx(0.003)
    assert rigid_actor_sdf_padding(ContactParams(penalty_threshold_default=-0.01)) == 0.0


# ---------------------------------------------------------------------------------------------------------------
# Collider types


def test_collider_type_resolution():
    assert resolve_collider_type(ColliderType.AUTO, "sphere", False) is ColliderType.SPHERE
    assert resolve_collider_type(None, "plane", True) is ColliderType.PLANE
    assert resolve_collider_type(ColliderType.AUTO, "tri_mesh", False) is ColliderType.SDF
    assert resolve_collider_type("AUTO", "tet_mesh", True) is ColliderType.SDF
    assert resolve_collider_type(ColliderType.BOX, "tri_mesh", False) is ColliderType.BOX
    assert resolve_collider_type(ColliderType.NONE, "plane", True) is ColliderType.NONE
    for bad in [
        (ColliderType.AUTO, "plane", False),  # planes are static only
        (ColliderType.SDF, "sphere", False),  # no mesh
        (ColliderType.POINT_CLOUD, "tri_mesh", False),
        (ColliderType.SPHERE, "plane", True),
        (ColliderType.PLANE, "tri_mesh", True),
        (ColliderType.AUTO, "polyline", False),
        ("NOT_A_TYPE", "tri_mesh", False),
    ]:
        with pytest.raises(ValueError):
            resolve_collider_type(*bad)


def test_colliders_from_shapes_follow_the_bounding_volume_rules():
    v, t = box_arrays([0.1, 0.2, 0.3])
    v = v + [1.0, 2.0, 3.0]
    sphere = collider_from_mesh(ColliderType.SPHERE, v, t)
    np.testing.assert_allclose(sphere.center, [1, 2, 3])
    assert sphere.radius_m == pytest.approx(0.1)  # the AABB's x half-extent (reference rule)
    box = collider_from_mesh(ColliderType.BOX, v, t)
    np.testing.assert_allclose(box.half_extents_m, [0.1, 0.2, 0.3])
    assert isinstance(collider_from_mesh(ColliderType.SDF, v, t, padding_m=0.001), GridSdfCollider)
    assert isinstance(collider_from_mesh(ColliderType.MESH, v, t), MeshCollider)
    assert collider_from_mesh(ColliderType.NONE, v, t) is None
    assert isinstance(collider_from_sphere(ColliderType.SPHERE, [0, 0, 0], 0.5), SphereCollider)
    assert collider_from_sphere(ColliderType.BOX, [0, 0, 0], 0.5).half_extents_m.tolist() == [0.5] * 3
    assert isinstance(collider_from_plane(ColliderType.PLANE, [0, 1, 0], 0.0), PlaneCollider)
    with pytest.raises(ValueError):
        collider_from_mesh(ColliderType.AUTO, v, t)
    moved = box.translated([-1.0, -2.0, -3.0])
    assert moved.evaluate(np.zeros(3)).phi == pytest.approx(-0.1)


# ---------------------------------------------------------------------------------------------------------------
# Parameters and restitution


def _reference_pair():
    colliding = ContactParams(penalty_coefficient=4, friction_falloff_vel=0.04, viscous_friction_coefficient=4,
                              coulomb_friction_coefficient=9, normal_viscous_damping_coefficient=16,
                              colliding_penalty_length_scale=0.5)
    collider = ContactParams(penalty_coefficient=9, friction_falloff_vel=0.09, viscous_friction_coefficient=9,
                             coulomb_friction_coefficient=4, normal_viscous_damping_coefficient=25,
                             penalty_smoothing_half_distance=0.123, penalty_threshold_default=-0.02,
                             penalty_threshold_extra_padding=0.03, friction_with_collider_normal=False,
                             max_alignment_normals=0.7, distance_error_bound=0.04, obj_scale=3.0)
    return colliding, collider


def test_combine_contact_params_rules():
    colliding, collider = _reference_pair()
    static = combine_contact_params(colliding, collider, collider_is_static=True)
    assert (static.penalty_coefficient, static.friction_falloff_vel) == (4, 0.04)  # colliding's values
    assert (static.viscous_friction_coefficient, static.coulomb_friction_coefficient) == (6.0, 6.0)
    assert static.normal_viscous_damping_coefficient == 20.0
    dynamic = combine_contact_params(colliding, collider, collider_is_static=False)
    assert dynamic.penalty_coefficient == 6.0 and dynamic.friction_falloff_vel == pytest.approx(0.06)
    for p in (static, dynamic):
        for name in ("penalty_smoothing_half_distance", "penalty_threshold_default", "penalty_threshold_extra_padding",
                     "friction_with_collider_normal", "max_alignment_normals", "distance_error_bound", "obj_scale"):
            assert getattr(p, name) == getattr(collider, name), name
        assert p.colliding_penalty_length_scale == 0.5
    patched = combine_contact_params(colliding, collider, True,
                                     ContactPairParamsOverride(penalty_coefficient=12, coulomb_friction_coefficient=0))
    assert patched.penalty_coefficient == 12 and patched.coulomb_friction_coefficient == 0
    assert patched.viscous_friction_coefficient == 6.0  # not overridden: still the geometric mean
    frictionless = combine_contact_params(ContactParams(coulomb_friction_coefficient=0), collider, False)
    assert frictionless.coulomb_friction_coefficient == 0
    with pytest.raises(TypeError):
        combine_contact_params(colliding, collider, True, override={"penalty_coefficient": 1})


def test_contact_eval_config():
    assert ContactEvalConfig().friction_model is CoulombFrictionModel.C1_REGULARIZED
    with pytest.raises(ValueError):
        ContactEvalConfig(explicit_normals=True, implicit_normal_force_for_dissipation=True)


def test_restitution_calibration():
    assert calibrate_normal_viscous_damping_coefficient(0.5, 1.0) == pytest.approx(1.392857, abs=1e-6)
    assert effective_coefficient_of_restitution(1.0, 1.0) == pytest.approx(0.586677, abs=1e-6)
    e = np.array([0.05, 0.3, 0.7, 1.0])
    c = calibrate_normal_viscous_damping_coefficient(e, 2.0)
    np.testing.assert_allclose(effective_coefficient_of_restitution(c, 2.0), e, rtol=1e-12)  # exact inverse
    assert c[-1] == 0.0
    for bad in [(0.0, 1.0), (1.5, 1.0), (0.5, 0.0)]:
        with pytest.raises(ValueError):
            calibrate_normal_viscous_damping_coefficient(*bad)
    with pytest.raises(ValueError):
        effective_coefficient_of_restitution(-1.0, 1.0)
