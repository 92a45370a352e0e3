"""ContactPotential: finite-difference checks of energy / gradient / Hessian for every collider type and both
directions, the digest's resting-cube closed form, balance, the broad phase, drag by moving static colliders,
queries and input validation.

FD conventions: central differences with h = 1e-6 (positions are O(0.1 - 1) m, so 1e-6 relative; angles in rad).
Rotations are perturbed on the Lie algebra, R <- exp(skew(h e_k)) R. The analytic rotational Hessian is the
symmetric second derivative of theta -> E(exp(skew(theta)) R); the FD of the gradient along the same left
perturbation differs from it by the Baker-Campbell-Hausdorff term 1/2 tau . (e_k x e_j) (tau = rotational
gradient of the same body), which `fd_check` removes before comparing.
Tolerance 1e-5 relative to the largest entry: truncation (h / eps)^2 ~ 4e-8 on the ramp scale eps = 5 mm and
(h / (V_f dt))^2 ~ 1e-8 on the friction scale used here, round-off ~ 1e-16 E / h, with margin.
"""

from types import SimpleNamespace

import numpy as np

import pytest

from superdex_gym.sim.contact.colliders import (
    BoxCollider,
    MeshCollider,
    PlaneCollider,
    SphereCollider,
    build_grid_sdf,
)
from superdex_gym.sim.contact.params import ContactEvalConfig, ContactParams, combine_contact_params
from superdex_gym.sim.contact.potential import BodyCollider, ContactPair, ContactPotential, ContactSamples
from superdex_gym.sim.lie import exp_so3, skew
from superdex_gym.sim.potentials.base import StageContext
from helpers import box_arrays, dense_hessian

FD_STEP = 1e-6
FD_RTOL = 1e-5

EXACT = ContactEvalConfig(explicit_normals=True, fitted_friction_hessian=False, exact_geometric_hessian=True)
# Penalty-only pairs are exact potentials in every mode; friction in stick (dp < V_f dt) and slip regimes.
FRICTION = ContactParams(penalty_coefficient=1e5, coulomb_friction_coefficient=0.5, viscous_friction_coefficient=0.3,
                         normal_viscous_damping_coefficient=0.2)
STICKY = ContactParams(penalty_coefficient=1e5, coulomb_friction_coefficient=0.8, friction_falloff_vel=2.0)
FRICTIONLESS = ContactParams(penalty_coefficient=1e5, coulomb_friction_coefficient=0.0)


# ---------------------------------------------------------------------------------------------------------------
# Fixtures built by hand: a 2-triangles-per-face box and its P1Q3 samples.




def p1q3_samples(v, t):
    """3 samples per triangle at barycentric (2/3, 1/6, 1/6) permutations, weight area/3, face normal."""
    c = v[t]
    cross = np.cross(c[:, 1] - c[:, 0], c[:, 2] - c[:, 0])
    area = 0.5 * np.linalg.norm(cross, axis=1)
    bary = np.array([[2 / 3, 1 / 6, 1 / 6], [1 / 6, 2 / 3, 1 / 6], [1 / 6, 1 / 6, 2 / 3]])
    points = np.einsum("qk,fkd->fqd", bary, c).reshape(-1, 3)
    return points, np.repeat(area / 3, 3), np.repeat(cross / (2 * area)[:, None], 3, axis=0)


def cube_samples(half, body):
    pts, w, n = p1q3_samples(*box_arrays(half))
    return pts, w, n, np.full(w.shape[0], body)


def stack_samples(*parts):
    return ContactSamples(*(np.concatenate([p[i] for p in parts]) for i in range(4)))


def make_ctx(com0, rot0, dt=0.01):
    w, n = com0.shape[:2]
    return StageContext(
        model=SimpleNamespace(),  # ContactPotential never reads the model
        stage_dt=dt, stage_time=0.0, com_position0=com0, rotation0=rot0,
        linear_velocity0=np.zeros((w, n, 3)), angular_velocity0=np.zeros((w, n, 3)),
        velocity_sym0=np.zeros((w, n, 3, 3)), gravity=np.zeros((w, 3)), external_force=np.zeros((w, n, 6)),
    )


def perturb(com, rot, body, dof, h):
    com, rot = com.copy(), rot.copy()
    if dof < 3:
        com[:, body, dof] += h
    else:
        e = np.zeros(3)
        e[dof - 3] = h
        rot[:, body] = exp_so3(e) @ rot[:, body]
    return com, rot




def fd_check(pot, ctx, com, rot, bodies, check_hessian=True):
    """Compare gradient with FD of energy and Hessian with FD of gradient over the DoFs of ``bodies``."""
    terms = pot.evaluate(ctx, com, rot, True)
    n = com.shape[1]
    w = com.shape[0]
    grad = terms.gradient.reshape(w, -1)
    hess = dense_hessian(terms)
    fd_grad, fd_hess = np.zeros_like(grad), np.zeros_like(hess)
    for i in bodies:
        for k in range(6):
            plus = pot.evaluate(ctx, *perturb(com, rot, i, k, FD_STEP), False)
            minus = pot.evaluate(ctx, *perturb(com, rot, i, k, -FD_STEP), False)
            fd_grad[:, 6 * i + k] = (plus.energy - minus.energy) / (2 * FD_STEP)
            fd_hess[:, :, 6 * i + k] = (plus.gradient - minus.gradient).reshape(w, -1) / (2 * FD_STEP)
    for i in bodies:  # remove the BCH term of left perturbations (see module docstring)
        fd_hess[:, 6 * i + 3:6 * i + 6, 6 * i + 3:6 * i + 6] -= 0.5 * -skew(terms.gradient[:, i, 3:])
    idx = np.concatenate([np.arange(6 * i, 6 * i + 6) for i in bodies])
    g, fg = grad[:, idx], fd_grad[:, idx]
    assert np.linalg.norm(g) > 0, "zero gradient: nothing was tested"
    assert np.all(terms.energy > 0), "every world must be in contact"
    np.testing.assert_allclose(g, fg, rtol=0, atol=FD_RTOL * np.abs(g).max())
    if check_hessian:
        h, fh = hess[:, idx][:, :, idx], fd_hess[:, idx][:, :, idx]
        assert np.linalg.norm(h) > 0
        np.testing.assert_allclose(h, fh, rtol=0, atol=FD_RTOL * np.abs(h).max())
    return terms


def two_body_setup(collider, params, static_collider, rng, config=EXACT, gap=-0.003, stage_motion=1e-3, worlds=2):
    """Body 0: a 0.4 m cube (samples) with its bottom ``gap`` below y = 0; body 1: the collider ``(field, com_y)``
    whose surface passes through y = 0 near the origin at the identity pose. Random small rotations and
    horizontal offsets, random stage-start poses ``stage_motion`` away."""
    field, collider_com_y = collider
    samples = ContactSamples(*cube_samples(0.2, 0))
    pot = ContactPotential(num_bodies=2, is_static=[False, static_collider], samples=samples,
                           colliders=[BodyCollider(1, field)], pairs=[ContactPair(0, 1, params)], config=config)
    com = np.zeros((worlds, 2, 3))
    rot = np.tile(np.eye(3), (worlds, 2, 1, 1))
    com[:, 0] = [0.0, 0.2 + gap, 0.0]
    com[:, 1] = rng.normal(size=(worlds, 3)) * [0.05, 0.0, 0.05] + [0.0, collider_com_y, 0.0]
    rot[:, 0] = exp_so3(rng.normal(size=(worlds, 3)) * 0.01)
    rot[:, 1] = exp_so3(rng.normal(size=(worlds, 3)) * 0.01)
    com0 = com + rng.normal(size=com.shape) * stage_motion
    rot0 = exp_so3(rng.normal(size=(worlds, 2, 3)) * stage_motion) @ rot
    return pot, make_ctx(com0, rot0), com, rot


def ground_colliders():
    """Collider fields centred at their body's CoM, with the CoM height that puts their top at y = 0."""
    slab = [1.0, 0.3, 1.0]
    return {
        "plane": (PlaneCollider([0, 1, 0], 0.0), 0.0),
        "sphere": (SphereCollider([0.0, 0.0, 0.0], 10.0), -10.0),
        "box": (BoxCollider([0.0, 0.0, 0.0], slab), -0.3),
        "sdf": (build_grid_sdf(*box_arrays(slab), padding=0.01), -0.3),
        "mesh": (MeshCollider(*box_arrays(slab)), -0.3),
    }


# ---------------------------------------------------------------------------------------------------------------
# Finite differences


@pytest.mark.parametrize("params", [FRICTION, STICKY, FRICTIONLESS], ids=["slip", "stick", "frictionless"])
@pytest.mark.parametrize("gap", [0.0009, -0.003, -0.02], ids=["just-inside-ramp", "ramp", "deep"])
def test_plane_fd_static_collider(params, gap):
    pot, ctx, com, rot = two_body_setup(ground_colliders()["plane"], params, True, np.random.default_rng(10), gap=gap)
    fd_check(pot, ctx, com, rot, bodies=[0])


@pytest.mark.parametrize("name", ["sphere", "box", "sdf", "mesh"])
@pytest.mark.parametrize("params", [FRICTION, STICKY], ids=["slip", "stick"])
def test_collider_fd_both_bodies_dynamic(name, params):
    collider = ground_colliders()[name]
    pot, ctx, com, rot = two_body_setup(collider, params, False, np.random.default_rng(11))
    terms = fd_check(pot, ctx, com, rot, bodies=[0, 1])
    assert len(terms.couplings) == 1 and np.linalg.norm(terms.couplings[0].block) > 0


@pytest.mark.parametrize("name", ["sphere", "box", "sdf", "mesh"])
def test_collider_fd_static_collider_moving(name):
    """Static collider: its rows are not DoFs, but the prescribed motion enters through dp."""
    pot, ctx, com, rot = two_body_setup(ground_colliders()[name], FRICTION, True, np.random.default_rng(12))
    terms = fd_check(pot, ctx, com, rot, bodies=[0])
    assert terms.couplings == []


def test_mesh_vs_mesh_sdf_both_directions():
    """Two cubes, each with samples and a grid SDF; pairs in both directions are summed."""
    v, t = box_arrays(0.2)
    sdf = build_grid_sdf(v, t, padding=0.01)
    params = combine_contact_params(FRICTION, FRICTION, collider_is_static=False)
    samples = stack_samples(cube_samples(0.2, 0), cube_samples(0.2, 1))
    rng = np.random.default_rng(13)
    for config in (EXACT, ContactEvalConfig(exact_geometric_hessian=True)):
        pair_params = params if config is EXACT else FRICTIONLESS  # the default mode is exact without dissipation
        pot = ContactPotential(num_bodies=2, is_static=[False, False], samples=samples,
                               colliders=[BodyCollider(0, sdf), BodyCollider(1, sdf)],
                               pairs=[ContactPair(0, 1, pair_params), ContactPair(1, 0, pair_params)], config=config)
        com = np.zeros((2, 2, 3))
        rot = np.tile(np.eye(3), (2, 2, 1, 1))
        com[:, 1] = [0.03, 0.398, -0.02]  # body 1 sits on body 0 with ~2 mm overlap
        rot[:, 0] = exp_so3(rng.normal(size=(2, 3)) * 0.01)
        rot[:, 1] = exp_so3(rng.normal(size=(2, 3)) * 0.01)
        com0 = com + rng.normal(size=com.shape) * 1e-3
        rot0 = exp_so3(rng.normal(size=(2, 2, 3)) * 1e-3) @ rot
        ctx = make_ctx(com0, rot0)
        terms = fd_check(pot, ctx, com, rot, bodies=[0, 1])
        one_way = ContactPotential(num_bodies=2, is_static=[False, False], samples=samples,
                                   colliders=[BodyCollider(0, sdf), BodyCollider(1, sdf)],
                                   pairs=[ContactPair(0, 1, pair_params)], config=config).evaluate(ctx, com, rot, False)
        assert 0 < one_way.energy[0] < terms.energy[0]  # both passes contribute


@pytest.mark.parametrize("name", ["plane", "sphere", "box", "sdf"])
def test_default_mode_penalty_is_an_exact_potential(name):
    collider = ground_colliders()[name]
    config = ContactEvalConfig(exact_geometric_hessian=True)
    static = name == "plane"
    pot, ctx, com, rot = two_body_setup(collider, FRICTIONLESS, static, np.random.default_rng(14), config=config)
    fd_check(pot, ctx, com, rot, bodies=[0] if name == "plane" else [0, 1])


def test_default_mode_dissipation_on_a_plane_is_exact_without_fading():
    """On a plane d0 = phi - G . dp is the true stage-start distance and N is constant: the held-fixed load and
    normal are then exact, so the default residual is the gradient (fading would add rotation dependence)."""
    config = ContactEvalConfig(fade_friction=False, fitted_friction_hessian=False, exact_geometric_hessian=True)
    for params in (FRICTION, STICKY):
        rng = np.random.default_rng(15)
        pot, ctx, com, rot = two_body_setup(ground_colliders()["plane"], params, True, rng, config=config)
        fd_check(pot, ctx, com, rot, bodies=[0])


def test_default_hessian_is_the_gauss_newton_psd_approximation():
    pot, ctx, com, rot = two_body_setup(ground_colliders()["box"], FRICTION, False, np.random.default_rng(16),
                                        config=ContactEvalConfig())
    h = dense_hessian(pot.evaluate(ctx, com, rot, True))
    np.testing.assert_allclose(h, np.swapaxes(h, 1, 2), atol=1e-9 * np.abs(h).max())
    assert np.linalg.eigvalsh(h).min() > -1e-9 * np.abs(h).max()


# ---------------------------------------------------------------------------------------------------------------
# Closed forms, balance, queries


def resting_cube():
    cube = ContactParams()
    params = combine_contact_params(cube, ContactParams(), collider_is_static=True)
    pot = ContactPotential(num_bodies=2, is_static=[False, True], samples=ContactSamples(*cube_samples(0.2, 0)),
                           colliders=[BodyCollider(1, PlaneCollider([0, 1, 0], 0.0))],
                           pairs=[ContactPair(0, 1, params)])
    com = np.zeros((1, 2, 3))
    com[0, 0, 1] = 0.1992543
    rot = np.tile(np.eye(3), (1, 2, 1, 1))
    return pot, make_ctx(com.copy(), rot.copy(), dt=1 / 60), com, rot


def test_resting_cube_closed_form():
    """Digest 5.6: 0.4 m cube (64 kg) on a plane, CoM at 0.1992543 m -> k h h' A ~ 627-629 N ~ m g = 627.2 N."""
    pot, ctx, com, rot = resting_cube()
    report = pot.contact_report(ctx, com, rot)
    force = report.body_force[0, 0]
    assert 627.0 <= force[1] <= 629.0
    assert force[1] == pytest.approx(64 * 9.8, rel=1e-3)
    np.testing.assert_allclose(force[[0, 2]], 0.0, atol=1e-9)
    np.testing.assert_allclose(report.body_torque[0, 0], 0.0, atol=1e-9)
    pts = report.points
    assert pts.world.shape == (6,)  # the bottom face's 2 triangles x 3 samples
    np.testing.assert_allclose(pts.distance, -7.457e-4, atol=1e-10)
    np.testing.assert_allclose(pts.int_weight, 0.16 / 6)
    np.testing.assert_allclose(pts.normal, np.broadcast_to([0, 1.0, 0], (6, 3)))
    np.testing.assert_allclose(pts.pos_b[:, 1], 0.0, atol=1e-15)
    np.testing.assert_allclose(pts.force.sum(axis=0), force)
    assert set(pts.actor_a.tolist()) == {0} and set(pts.actor_b.tolist()) == {1}
    bottom = np.flatnonzero(cube_samples(0.2, 0)[0][:, 1] < -0.19)
    assert sorted(pts.sample_index.tolist()) == bottom.tolist()
    # The gradient is minus the contact wrench.
    terms = pot.evaluate(ctx, com, rot, False)
    np.testing.assert_allclose(terms.gradient[0, 0, :3], -force)


def test_forces_and_torques_are_balanced():
    pot, ctx, com, rot = two_body_setup(ground_colliders()["box"], FRICTION, False, np.random.default_rng(17))
    report = pot.contact_report(ctx, com, rot)
    f, tau = report.body_force, report.body_torque
    assert np.linalg.norm(f[:, 0]) > 0
    np.testing.assert_allclose(f[:, 0] + f[:, 1], 0.0, atol=1e-9 * np.abs(f).max())
    # Equal and opposite forces at the same point: zero total moment about the world origin.
    moment = np.cross(com, f) + tau
    np.testing.assert_allclose(moment.sum(axis=1), 0.0, atol=1e-9 * np.abs(moment).max())


def test_worlds_are_independent():
    pot, ctx, com, rot = two_body_setup(ground_colliders()["sdf"], FRICTION, False, np.random.default_rng(18), worlds=3)
    batched = pot.evaluate(ctx, com, rot, True)
    for w in range(3):
        ctx_w = make_ctx(ctx.com_position0[w:w + 1], ctx.rotation0[w:w + 1])
        one = pot.evaluate(ctx_w, com[w:w + 1], rot[w:w + 1], True)
        np.testing.assert_allclose(batched.energy[w], one.energy[0], rtol=1e-13)
        np.testing.assert_allclose(batched.gradient[w], one.gradient[0], rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(batched.hessian_diag[w], one.hessian_diag[0], rtol=1e-12, atol=1e-9)
        np.testing.assert_allclose(batched.couplings[0].block[w], one.couplings[0].block[0], rtol=1e-12, atol=1e-9)


def test_moving_static_collider_drags_the_body():
    """The static box moved +x during the stage (prescribed iterate); the body at rest is dragged along +x."""
    pot, ctx, com, rot = two_body_setup(ground_colliders()["box"], ContactParams(penalty_coefficient=1e5), True,
                                        np.random.default_rng(19), config=ContactEvalConfig(), stage_motion=0.0)
    rot[:] = np.eye(3)
    ctx = make_ctx(com.copy(), rot.copy())
    com_moved = com.copy()
    com_moved[:, 1, 0] += 0.01
    force = pot.contact_report(ctx, com_moved, rot).body_force[:, 0]
    normal = pot.contact_report(ctx, com, rot).body_force[:, 0]
    assert np.all(normal[:, 0] == pytest.approx(0.0, abs=1e-9))
    np.testing.assert_allclose(force[:, 0], 0.5 * normal[:, 1], rtol=1e-9)  # saturated Coulomb: mu * normal load


def test_alignment_gate_rejects_aligned_samples():
    pot, ctx, com, rot = resting_cube()
    pts, w, n, body = cube_samples(0.2, 0)
    flipped = ContactPotential(num_bodies=2, is_static=[False, True], samples=ContactSamples(pts, w, -n, body),
                               colliders=[BodyCollider(1, PlaneCollider([0, 1, 0], 0.0))],
                               pairs=[ContactPair(0, 1, ContactParams())])
    assert pot.evaluate(ctx, com, rot, False).energy[0] > 0
    assert flipped.evaluate(ctx, com, rot, False).energy[0] == 0.0


class CountingCollider:
    """Delegates to a collider and counts the points it is asked to evaluate."""

    def __init__(self, inner):
        self.inner, self.bound, self.calls = inner, inner.bound, []

    def evaluate(self, points, want_hessian=False):
        self.calls.append(len(points))
        return self.inner.evaluate(points, want_hessian)


def test_broad_phase_skips_separated_pairs():
    """20 cubes 1 m apart on a plane: 400 ordered pairs, but no cube-cube narrow phase and only the bottom
    samples against the ground."""
    n_cubes = 20
    v, t = box_arrays(0.2)
    sdf = CountingCollider(build_grid_sdf(v, t, padding=0.001))
    ground = CountingCollider(PlaneCollider([0, 1, 0], 0.0))
    samples = stack_samples(*(cube_samples(0.2, i) for i in range(n_cubes)))
    params = ContactParams()
    pairs = [ContactPair(i, j, params) for i in range(n_cubes) for j in range(n_cubes + 1) if i != j]
    colliders = [BodyCollider(i, sdf) for i in range(n_cubes)] + [BodyCollider(n_cubes, ground)]
    pot = ContactPotential(num_bodies=n_cubes + 1, is_static=[False] * n_cubes + [True], samples=samples,
                           colliders=colliders, pairs=pairs)
    worlds = 4
    com = np.zeros((worlds, n_cubes + 1, 3))
    com[:, :n_cubes, 0] = np.arange(n_cubes) * 1.0
    com[:, :n_cubes, 1] = 0.1992543
    rot = np.tile(np.eye(3), (worlds, n_cubes + 1, 1, 1))
    terms = pot.evaluate(make_ctx(com.copy(), rot.copy()), com, rot, True)
    assert sdf.calls == []
    assert sum(ground.calls) == worlds * n_cubes * 6
    np.testing.assert_allclose(terms.gradient[:, :n_cubes, 1], -627.61, rtol=1e-4)
    assert terms.couplings == []  # no row couples two cubes: the Newton system stays block-diagonal
    # Two cubes touching: only those pairs' samples near the contact reach the SDF.
    com[:, 1, 0] = 0.399
    pot.evaluate(make_ctx(com.copy(), rot.copy()), com, rot, False)
    assert 0 < sum(sdf.calls) <= worlds * 2 * 36


def test_far_apart_bodies_have_zero_terms():
    pot, ctx, com, rot = two_body_setup(ground_colliders()["box"], FRICTION, False, np.random.default_rng(20),
                                        config=ContactEvalConfig())
    com[:, 0, 1] += 5.0
    terms = pot.evaluate(ctx, com, rot, True)
    assert np.all(terms.energy == 0) and np.all(terms.gradient == 0) and np.all(terms.hessian_diag == 0)
    assert pot.contact_report(ctx, com, rot).points.world.size == 0
    # With explicit normals the stage-start contacts are retained: lifting the body drags friction along.
    pot, ctx, com, rot = two_body_setup(ground_colliders()["box"], FRICTION, False, np.random.default_rng(20))
    com[:, 0, 1] += 5.0
    assert np.all(pot.evaluate(ctx, com, rot, False).energy > 0)


# ---------------------------------------------------------------------------------------------------------------
# Validation


def test_input_validation():
    samples = ContactSamples(*cube_samples(0.2, 0))
    plane = [BodyCollider(1, PlaneCollider([0, 1, 0], 0.0))]
    pair = [ContactPair(0, 1, ContactParams())]
    kwargs = dict(num_bodies=2, is_static=[False, True], samples=samples, colliders=plane, pairs=pair)
    ContactPotential(**kwargs)
    with pytest.raises(ValueError, match="is_static"):
        ContactPotential(**{**kwargs, "is_static": [False]})
    with pytest.raises(ValueError, match="no surface samples"):
        both = plane + [BodyCollider(0, plane[0].collider)]
        ContactPotential(**{**kwargs, "pairs": [ContactPair(1, 0, ContactParams())], "colliders": both})
    with pytest.raises(ValueError, match="no collider"):
        ContactPotential(**{**kwargs, "colliders": []})
    with pytest.raises(ValueError, match="more than one collider"):
        ContactPotential(**{**kwargs, "colliders": plane + plane})
    with pytest.raises(ValueError, match="duplicate"):
        ContactPotential(**{**kwargs, "pairs": pair + pair})
    with pytest.raises(ValueError, match="different bodies"):
        self_pair = [ContactPair(0, 0, ContactParams())]
        ContactPotential(**{**kwargs, "pairs": self_pair, "colliders": [BodyCollider(0, plane[0].collider)]})
    with pytest.raises(ValueError, match="must match"):
        short = ContactSamples(samples.points, samples.weights[:-1], samples.normals, samples.body)
        ContactPotential(**{**kwargs, "samples": short})
    with pytest.raises(TypeError):
        ContactPotential(**{**kwargs, "colliders": [BodyCollider(1, object())]})
    pot, ctx, com, rot = resting_cube()
    with pytest.raises(ValueError, match="com_position"):
        pot.evaluate(ctx, com[:, :1], rot, False)
    with pytest.raises(ValueError, match="stage_dt"):
        pot.evaluate(make_ctx(com, rot, dt=0.0), com, rot, False)


def test_penetration_depth_in_ramp_widths_and_the_guess_that_keeps_out_of_objects():
    """penetration_depth = (delta - phi) / (2 eps) of the deepest sample (0 out of contact), on both bodies;
    guess_outside drops the predicted rotation only of a body whose guess goes GUESS_DEPTH_MARGIN ramps deeper."""
    from superdex_gym.sim.potentials.base import GUESS_DEPTH_MARGIN, guess_outside

    grasp = ContactParams(penalty_smoothing_half_distance=2.5e-4, penalty_threshold_default=1e-4)  # 0.5 mm ramp
    params = combine_contact_params(grasp, grasp, collider_is_static=True)
    pot = ContactPotential(num_bodies=2, is_static=[False, True], samples=ContactSamples(*cube_samples(0.2, 0)),
                           colliders=[BodyCollider(1, PlaneCollider([0, 1, 0], 0.0))], pairs=[ContactPair(0, 1, params)])
    _, _, com, rot = resting_cube()
    ramp, delta = 2 * params.penalty_smoothing_half_distance, params.get_penalty_threshold_dist(False)
    com = np.repeat(com, 3, axis=0)
    rot = np.repeat(rot, 3, axis=0)
    com[1, 0, 1] = 0.19  # 1 cm deep
    com[2, 0, 1] = 0.3  # 10 cm above
    depth = pot.penetration_depth(com, rot)
    np.testing.assert_allclose(depth[:, 0], [(delta + 7.457e-4) / ramp, (delta + 0.01) / ramp, 0.0], rtol=1e-9)
    np.testing.assert_array_equal(depth[:, 1], depth[:, 0])  # the plane's body is in the same contact
    # Predicted rotations tilting the resting cube by 3 deg (its deepest sample ~7 mm deeper) and 0.1 deg.
    tilt = np.radians([3.0, 0.1, 3.0])
    guess_r = rot.copy()
    com[1:, 0, 1] = com[0, 0, 1]
    guess_r[:, 0] = exp_so3(np.column_stack([np.zeros(3), np.zeros(3), tilt])) @ rot[:, 0]
    deeper = pot.penetration_depth(com, guess_r)[:, 0] - pot.penetration_depth(com, rot)[:, 0]
    assert deeper[0] > GUESS_DEPTH_MARGIN > deeper[1]
    latest = SimpleNamespace(com_position=com, rotation=rot)
    predicted_c = com.copy()
    predicted_c[2, 0] += 1e-3  # world 2: a drive target placed the cube, not its prediction
    out = guess_outside([pot], latest, predicted_c, com, guess_r)
    np.testing.assert_array_equal(out[0, 0], rot[0, 0])
    np.testing.assert_array_equal(out[1:], guess_r[1:])
