"""ContactPotential's vectorized evaluation (broad phase, collider kinds batched, component-first kinematics,
stacked assembly) against a straightforward evaluation of the same model on random multi-world states.

The reference below loops over (pair, world), evaluates every sample of the colliding body against the collider
object itself (``collider.evaluate``), applies only the documented per-sample broad phase (the collider's bound
within delta + margin + distance_error_bound, at Y or, with explicit normals, Y0), and assembles with explicit
Jacobians J_A = [1, -skew(r)], J_B = [-1, skew(u)] and the exact-Hessian terms of rigid_assembly's docstring.
It shares only the per-sample kernels (penalty, dissipation, gate, collider fields), which
test_contact_kernels checks on their own.

Tolerance 1e-12 relative to the largest entry of each quantity in its world: both sides are the same float64
formulas in different summation orders (round-off ~1e-16 of the largest term, amplified where the friction
displacement dp = Y - Y0 is much smaller than Y: |Y| / |dp| ~ 1e2 here). The active contact sets must be equal.
"""

import numpy as np

import pytest

from superdex_gym.sim.contact.colliders import (
    BoxCollider,
    MeshCollider,
    PlaneCollider,
    SphereCollider,
    build_grid_sdf,
)
from superdex_gym.sim.contact.friction import alignment_gate, dissipation_energy, dissipation_normal
from superdex_gym.sim.contact.params import ContactEvalConfig, ContactParams
from superdex_gym.sim.contact.penalty import penalty_energy, penalty_scalar
from superdex_gym.sim.contact.potential import (
    DEFAULT_BROAD_PHASE_MARGIN_M,
    BodyCollider,
    ContactPair,
    ContactPotential,
    ContactSamples,
)
from superdex_gym.sim.lie import exp_so3, skew
from superdex_gym.sim.potentials.base import StageContext
from helpers import box_arrays, dense_hessian

RTOL = 1e-12




def box_samples(half, offset=(0.0, 0.0, 0.0)):
    """3 samples per triangle (barycentric 2/3, 1/6, 1/6), weight area/3, face normal; shifted by ``offset``
    (samples relative to a CoM that is not the box centre)."""
    v, t = box_arrays(half)
    c = v[t]
    cross = np.cross(c[:, 1] - c[:, 0], c[:, 2] - c[:, 0])
    area = 0.5 * np.linalg.norm(cross, axis=1)
    bary = np.array([[2 / 3, 1 / 6, 1 / 6], [1 / 6, 2 / 3, 1 / 6], [1 / 6, 1 / 6, 2 / 3]])
    points = np.einsum("qk,fkd->fqd", bary, c).reshape(-1, 3) + np.asarray(offset)
    return points, np.repeat(area / 3, 3), np.repeat(cross / (2 * area)[:, None], 3, axis=0)


def sphere_samples(radius, count, rng):
    n = rng.normal(size=(count, 3))
    n /= np.linalg.norm(n, axis=1, keepdims=True)
    return radius * n, np.full(count, 4 * np.pi * radius**2 / count), n * rng.uniform(0.5, 2.0, size=(count, 1))


def random_rotation(rng):
    q = np.linalg.qr(rng.normal(size=(3, 3)))[0]
    return q * np.linalg.det(q)


def random_params(rng, dissipative: bool):
    return ContactParams(
        penalty_coefficient=float(rng.uniform(1e4, 1e6)),
        penalty_smoothing_half_distance=float(rng.uniform(0.002, 0.01)),
        penalty_threshold_default=float(rng.uniform(-0.002, 0.004)),
        penalty_threshold_extra_padding=float(rng.uniform(0.0, 0.002)),
        friction_with_collider_normal=bool(rng.random() < 0.7),
        max_alignment_normals=float(rng.uniform(-0.3, 0.6)),
        coulomb_friction_coefficient=float(rng.uniform(0.2, 1.0)) if dissipative else 0.0,
        viscous_friction_coefficient=float(rng.uniform(0.0, 0.5)) if dissipative and rng.random() < 0.5 else 0.0,
        normal_viscous_damping_coefficient=float(rng.uniform(0.0, 0.5)) if dissipative and rng.random() < 0.5 else 0.0,
        friction_falloff_vel=float(rng.uniform(0.005, 0.05)),
        distance_error_bound=float(rng.uniform(0.0, 0.002)),
    )


def scene(rng, uniform_samples: bool, generic: bool):
    """Bodies: 0 static oblique plane, 1 static rotated box (moving), 2 static exact mesh box, 3 and 4 dynamic
    boxes (axis-aligned and rotated box colliders), 5 dynamic sphere, 6 dynamic box with a grid SDF, 7 dynamic
    box without a collider (samples only). With ``uniform_samples`` every colliding body has 36 samples; without
    ``generic`` the mesh and grid colliders are replaced by box and sphere colliders (analytic kinds only: the
    potential then computes all distances first and gradients only for the rows in contact)."""
    colliders = [
        BodyCollider(0, PlaneCollider([0.1, 1.0, -0.05], -0.02)),
        BodyCollider(1, BoxCollider([0.02, -0.01, 0.0], [0.3, 0.05, 0.2], rotation=random_rotation(rng))),
        BodyCollider(2, MeshCollider(*box_arrays([0.1, 0.1, 0.1])) if generic else BoxCollider([0, 0, 0], [0.1] * 3)),
        BodyCollider(3, BoxCollider([0.0, 0.0, 0.0], [0.06, 0.05, 0.04])),
        BodyCollider(4, BoxCollider([0.01, 0.0, -0.01], [0.05, 0.07, 0.03], rotation=random_rotation(rng))),
        BodyCollider(5, SphereCollider([0.0, 0.0, 0.0], 0.06)),
        BodyCollider(6, build_grid_sdf(*box_arrays([0.05, 0.05, 0.05]), padding=0.01) if generic
                     else SphereCollider([0.01, 0.0, 0.0], 0.05)),
    ]
    parts = [
        (3, box_samples([0.06, 0.05, 0.04])),
        (4, box_samples([0.05, 0.07, 0.03], offset=[0.01, 0.0, -0.01])),
        (5, box_samples([0.04, 0.04, 0.04]) if uniform_samples else sphere_samples(0.06, 50, rng)),
        (6, box_samples([0.05, 0.05, 0.05])),
        (7, box_samples([0.04, 0.05, 0.06])),
    ]
    samples = ContactSamples(
        points=np.concatenate([p[1][0] for p in parts]),
        weights=np.concatenate([p[1][1] for p in parts]),
        normals=np.concatenate([p[1][2] for p in parts]),
        body=np.concatenate([np.full(len(p[1][1]), p[0]) for p in parts]),
    )
    has_collider = {c.body for c in colliders}
    pairs = [
        ContactPair(a, b, random_params(rng, dissipative=rng.random() < 0.8), add_padding=bool(a == 7))
        for a in (3, 4, 5, 6, 7) for b in range(8) if a != b and b in has_collider
    ]
    is_static = [True, True, True, False, False, False, False, False]
    return dict(num_bodies=8, is_static=is_static, samples=samples, colliders=colliders, pairs=pairs)


def random_state(rng, num_worlds, stage_motion):
    """Bodies clustered around the origin so that many pairs touch; the last world is spread out (no contact)."""
    n = 8
    com = rng.uniform(-0.08, 0.08, size=(num_worlds, n, 3))
    com[:, 0] = 0.0
    com[:, 1] = [0.0, -0.1, 0.0]
    com[:, 2] = [0.05, 0.0, 0.12]
    com[-1, 3:] += np.arange(5)[:, None] * 3.0 + 10.0
    rot = exp_so3(rng.normal(size=(num_worlds, n, 3)))
    rot[:, 0] = np.eye(3)
    com0 = com + rng.normal(size=com.shape) * stage_motion
    rot0 = exp_so3(rng.normal(size=(num_worlds, n, 3)) * stage_motion) @ rot
    com0[:, [0, 2]], rot0[:, [0, 2]] = com[:, [0, 2]], rot[:, [0, 2]]  # body 1 is a moving static body
    return com, rot, com0, rot0


def make_ctx(com0, rot0, dt):
    w, n = com0.shape[:2]
    return StageContext(
        model=None, stage_dt=dt, stage_time=0.0, com_position0=com0, rotation0=rot0,
        linear_velocity0=np.zeros((w, n, 3)), angular_velocity0=np.zeros((w, n, 3)),
        velocity_sym0=np.zeros((w, n, 3, 3)), gravity=np.zeros((w, 3)), external_force=np.zeros((w, n, 6)),
    )


def bound(col, y):
    b = col.bound
    return y @ b.vector - b.scalar if b.is_halfspace else np.linalg.norm(y - b.vector, axis=1) - b.scalar


def reference_evaluate(model, config, ctx, com, rot, want_hessian, margin=DEFAULT_BROAD_PHASE_MARGIN_M):
    """Energy (W,), gradient (W, N, 6), dense Hessian (W, 6N, 6N) and the active (world, a, b, sample) set."""
    n, num_worlds = model["num_bodies"], com.shape[0]
    samples, is_static = model["samples"], np.asarray(model["is_static"])
    collider_of = {c.body: c.collider for c in model["colliders"]}
    exact = want_hessian and config.exact_geometric_hessian
    energy, grad = np.zeros(num_worlds), np.zeros((num_worlds, n, 6))
    dense = np.zeros((num_worlds, 6 * n, 6 * n))
    active = set()
    eye = np.eye(3)
    for pair in model["pairs"]:
        a, b, prm = pair.colliding_body, pair.collider_body, pair.params
        col = collider_of[b]
        delta = prm.get_penalty_threshold_dist(pair.add_padding)
        reach = delta + margin + prm.distance_error_bound
        mine = np.flatnonzero(samples.body == a)
        X = samples.points[mine]
        nrm = samples.normals[mine] / np.linalg.norm(samples.normals[mine], axis=1, keepdims=True)
        dissipative = (prm.coulomb_friction_coefficient > 0 or prm.viscous_friction_coefficient > 0
                       or prm.normal_viscous_damping_coefficient > 0)
        for w in range(num_worlds):
            ra, rb, ca, cb = rot[w, a], rot[w, b], com[w, a], com[w, b]
            ra0, rb0, ca0, cb0 = (ctx.rotation0[w, a], ctx.rotation0[w, b], ctx.com_position0[w, a],
                                  ctx.com_position0[w, b])
            x = ca + X @ ra.T
            Y = (x - cb) @ rb  # R_B^T (x - c_B) per row
            Y0 = (ca0 + X @ ra0.T - cb0) @ rb0
            near = bound(col, Y) <= reach
            if config.explicit_normals:
                near |= bound(col, Y0) <= reach
            q = np.flatnonzero(near)
            if q.size == 0:
                continue
            res = col.evaluate(Y[q], exact)
            phi, G, H = res.phi, res.grad, res.hessian
            na = nrm[q] @ ra.T @ rb
            in_contact = phi < delta
            if config.explicit_normals:
                res0 = col.evaluate(Y0[q], False)
                phi0, G0 = res0.phi, res0.grad
                na0 = nrm[q] @ ra0.T @ rb0
                in_contact |= phi0 < delta
                accept, fade = alignment_gate(G0, na0, prm.max_alignment_normals, config.fade_friction)
            else:
                accept, fade = alignment_gate(G, na, prm.max_alignment_normals, config.fade_friction)
            k = np.flatnonzero(in_contact & accept)
            if k.size == 0:
                continue
            q, phi, G, fade, na = q[k], phi[k], G[k], fade[k], na[k]
            H = H[k] if H is not None else None
            active |= {(w, a, b, int(s)) for s in q}
            weight = samples.weights[mine][q]
            pen = penalty_energy(phi, G, H, prm.penalty_coefficient, prm.penalty_smoothing_half_distance, delta,
                                 want_hessian, include_curvature=exact)
            e, dE, d2E = pen.energy, pen.grad, pen.hessian
            if dissipative:
                dp = Y[q] - Y0[q]
                if config.explicit_normals:
                    load_phi, g_split, na_split = phi0[k], G0[k], na0[k]
                elif config.implicit_normal_force_for_dissipation:
                    load_phi, g_split, na_split = phi, G, na
                else:
                    load_phi, g_split, na_split = phi - np.sum(G * dp, axis=1), G, na
                load = fade * penalty_scalar(load_phi, prm.penalty_coefficient, prm.penalty_smoothing_half_distance,
                                             delta).load
                normal = dissipation_normal(g_split, na_split, prm.friction_with_collider_normal)
                d = dissipation_energy(dp, normal, load, prm.coulomb_friction_coefficient,
                                       prm.viscous_friction_coefficient, prm.normal_viscous_damping_coefficient,
                                       prm.friction_falloff_vel, ctx.stage_dt, config.friction_model, want_hessian,
                                       fitted_hessian=config.fitted_friction_hessian)
                e, dE = e + d.energy, dE + d.grad
                if want_hessian:
                    d2E = d2E + d.hessian
            energy[w] += np.sum(weight * e)
            g = weight[:, None] * (dE @ rb.T)
            r, u = x[q] - ca, x[q] - cb
            ja = np.concatenate([np.broadcast_to(eye, (q.size, 3, 3)), -skew(r)], axis=2)  # (Q, 3, 6)
            jb = np.concatenate([-np.broadcast_to(eye, (q.size, 3, 3)), skew(u)], axis=2)
            grad[w, a] += np.einsum("qki,qk->i", ja, g)
            grad[w, b] += np.einsum("qki,qk->i", jb, g)
            if not want_hessian:
                continue
            h = weight[:, None, None] * (rb @ d2E @ rb.T)
            h_aa = np.einsum("qki,qkl,qlj->ij", ja, h, ja)
            h_bb = np.einsum("qki,qkl,qlj->ij", jb, h, jb)
            h_ab = np.einsum("qki,qkl,qlj->ij", ja, h, jb)
            if exact:
                gr, gu = np.einsum("qi,qj->ij", g, r), np.einsum("qi,qj->ij", g, u)
                sg = skew(g.sum(axis=0))
                h_aa[3:, 3:] += 0.5 * (gr + gr.T) - np.trace(gr) * eye
                h_bb[3:, 3:] += 0.5 * (gu + gu.T) - np.trace(gu) * eye
                h_bb[:3, 3:] += sg
                h_bb[3:, :3] -= sg
                h_ab[:3, 3:] -= sg
                h_ab[3:, 3:] -= np.einsum("qij,qjk->ik", skew(r), skew(g))
            ia, ib = slice(6 * a, 6 * a + 6), slice(6 * b, 6 * b + 6)
            dense[w, ia, ia] += h_aa
            dense[w, ib, ib] += h_bb
            if not (is_static[a] or is_static[b]):
                dense[w, ia, ib] += h_ab
                dense[w, ib, ia] += h_ab.T
    return energy, grad, dense, active




def assert_close_per_world(got, ref, what):
    got, ref = got.reshape(got.shape[0], -1), ref.reshape(ref.shape[0], -1)
    scale = np.maximum(np.abs(ref).max(axis=1, keepdims=True), 1e-300)
    err = np.abs(got - ref) / scale
    assert err.max() <= RTOL, f"{what}: max relative difference {err.max():.3e}"


CONFIGS = {
    "default": ContactEvalConfig(),
    "explicit-exact": ContactEvalConfig(explicit_normals=True, fitted_friction_hessian=False,
                                        exact_geometric_hessian=True),
    "implicit-cinf-nofade": ContactEvalConfig(implicit_normal_force_for_dissipation=True, fade_friction=False,
                                              friction_model="CINF_REGULARIZED"),
    "exact-hessian": ContactEvalConfig(exact_geometric_hessian=True),
}


@pytest.mark.parametrize("generic", [True, False], ids=["with-mesh-and-grid", "analytic-only"])
@pytest.mark.parametrize("uniform_samples", [True, False], ids=["equal-sample-counts", "mixed-sample-counts"])
@pytest.mark.parametrize("config", list(CONFIGS), ids=list(CONFIGS))
def test_vectorized_evaluation_matches_the_straightforward_one(config, uniform_samples, generic):
    rng = np.random.default_rng(7 + 100 * list(CONFIGS).index(config) + 10 * uniform_samples + generic)
    model = scene(rng, uniform_samples, generic)
    pot = ContactPotential(**model, config=CONFIGS[config])
    n = model["num_bodies"]
    touched = 0
    for trial in range(3):
        com, rot, com0, rot0 = random_state(rng, num_worlds=6, stage_motion=10.0 ** rng.uniform(-3, -2))
        ctx = make_ctx(com0, rot0, dt=float(rng.uniform(0.005, 0.02)))
        for want_hessian in (True, False):
            terms = pot.evaluate(ctx, com, rot, want_hessian)
            e, g, h, active = reference_evaluate(model, CONFIGS[config], ctx, com, rot, want_hessian)
            assert_close_per_world(terms.energy[:, None], e[:, None], "energy")
            assert_close_per_world(terms.gradient, g, "gradient")
            if want_hessian:
                assert_close_per_world(dense_hessian(terms), h, "Hessian (diagonal and coupling blocks)")
                # one slot per unordered pair of dynamic bodies, present when some row couples two of them
                # (the dense comparison above covers the blocks either way)
                assert len(terms.couplings) <= 1
                for c in terms.couplings:
                    assert sorted(zip(c.body_a.tolist(), c.body_b.tolist())) == [
                        (a, b) for a in range(3, 8) for b in range(a + 1, 8)]
            else:
                assert terms.hessian_diag is None and terms.couplings == []
        report = pot.contact_report(ctx, com, rot)
        pts = report.points
        got = {(int(w), int(a), int(b), int(s)) for w, a, b, s in
               zip(pts.world, pts.actor_a, pts.actor_b, pts.sample_index)}
        assert got == active
        assert len(got) == pts.world.size
        np.testing.assert_allclose(report.body_force, -g[..., :3], rtol=0, atol=RTOL * np.abs(g).max())
        assert not np.any(pts.world == 5) and np.all(e[-1] == 0.0)  # the spread-out world has no contact
        touched += len({(a, b) for _, a, b, _ in active})
    assert touched >= 15, f"only {touched} (pair, trial) combinations in contact: the test would be weak"
