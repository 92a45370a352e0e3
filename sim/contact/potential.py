"""The contact potential of rigid bodies: surface samples of colliding bodies against collider SDFs (digest 5).

Construction is from explicit arrays (no scene or model needed):

* ``ContactSamples``: every colliding body's surface quadrature samples, in the body frame **relative to the
  centre of mass**: points (Q, 3) [m], weights (Q,) [m^2], outward unit normals (Q, 3), body index (Q,).
* ``BodyCollider``: a body index and its collider (``colliders.py``), in the same CoM-centred body frame.
* ``ContactPair``: an ordered (colliding body A, collider body B) pair with its combined ``ContactParams``
  (``combine_contact_params``) and whether A's collider is NONE / POINT_CLOUD (then delta gets the extra padding).
  Both directions of a mesh-mesh contact are two pairs; their terms are summed.
* ``is_static`` (N,): static bodies are rows like any other. Their stage-start pose is
  ``ctx.com_position0 / rotation0`` and their stage-end pose the iterate (prescribed), so a moving static collider
  drags what rests on it through friction.

``evaluate`` reads ``ctx.stage_dt``, ``ctx.com_position0`` and ``ctx.rotation0`` only (never ``ctx.model``).

Kinematics of a sample X of A against B (c, R the CoM and world-from-body rotation): x = c_A + R_A X (world),
Y = R_B^T (x - c_B) (collider frame), and at stage start Y0 = R_B0^T (x0 - c_B0). The per-sample energy E(Y)
(``penalty.py`` + ``friction.py``, with dp = Y - Y0) is differentiated in the collider frame, rotated to the world
and chained to both bodies' DoFs in ``rigid_assembly.py`` (balanced forces, Gauss-Newton or exact Hessians).

Evaluation modes (``ContactEvalConfig``): by default the dissipation load is taken at the reconstructed
stage-start distance d0 = phi - G . dp and, with the friction normal, held fixed: the gradient is then the
reference's residual, *not* the exact gradient of the returned energy (it is wherever G is locally constant and
fading is off, e.g. a plane). ``explicit_normals=True`` makes the whole contact an exact incremental potential.
The alignment gate uses the current (default) or stage-start (explicit) G and N_A; rejected samples contribute
nothing. A sample is a contact when phi < delta (or, with explicit normals, phi0 < delta).

Broad phase: each colliding body's samples are bounded by a sphere (body frame), each collider by a sphere or
its half-space; a (pair, world) is skipped when the lower bound of the distance exceeds delta + margin, and the
surviving samples are culled again individually with the same bound, before any SDF evaluation. The SDF loop
runs over the distinct colliders that still have candidate samples (not over pairs, samples or worlds).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..potentials.base import PotentialTerms, StageContext
from .friction import alignment_gate, dissipation_energy, dissipation_normal
from .params import ContactEvalConfig, ContactParams
from .penalty import penalty_energy, penalty_scalar
from .rigid_assembly import ContactRows, CouplingSlots, assemble_rigid_contact
from .sdf_values import SdfBound

__all__ = ["ContactSamples", "BodyCollider", "ContactPair", "ContactPoints", "ContactReport", "ContactPotential"]

DEFAULT_BROAD_PHASE_MARGIN_M = 0.005  # slack on conservative bounds; covers grid interpolation error


@dataclass(frozen=True)
class ContactSamples:
    points: np.ndarray  # (Q, 3) m, body frame relative to the CoM
    weights: np.ndarray  # (Q,) m^2, quadrature weights
    normals: np.ndarray  # (Q, 3) outward unit normals, body frame
    body: np.ndarray  # (Q,) int, body index


@dataclass(frozen=True)
class BodyCollider:
    body: int
    collider: object  # PlaneCollider / SphereCollider / BoxCollider / GridSdfCollider / MeshCollider, CoM frame


@dataclass(frozen=True)
class ContactPair:
    colliding_body: int  # A, supplies samples
    collider_body: int  # B, supplies the SDF
    params: ContactParams  # combined pair parameters (combine_contact_params)
    add_padding: bool = False  # A's collider type is NONE or POINT_CLOUD: delta += extra padding


@dataclass(frozen=True)
class ContactPoints:
    """Active contact samples (fields of the reference ContactPoint), one row per (world, pair, sample)."""

    world: np.ndarray  # (K,) int
    actor_a: np.ndarray  # (K,) colliding body
    actor_b: np.ndarray  # (K,) collider body
    distance: np.ndarray  # (K,) m, phi (negative = penetration)
    force: np.ndarray  # (K, 3) N, world force on actor_a at pos_a (penalty + dissipation, weight included)
    normal: np.ndarray  # (K, 3) world unit normal of the collider field, G/|G| rotated by R_B
    pos_a: np.ndarray  # (K, 3) m, world position of the sample on actor_a
    pos_b: np.ndarray  # (K, 3) m, approximate closest point on actor_b: pos_a - distance * normal
    sample_index: np.ndarray  # (K,) index of the sample among actor_a's samples (input order)
    int_weight: np.ndarray  # (K,) m^2, quadrature weight


@dataclass(frozen=True)
class ContactReport:
    body_force: np.ndarray  # (W, N, 3) N, total contact force on each body, world frame
    body_torque: np.ndarray  # (W, N, 3) N m, total contact torque about each body's CoM, world frame
    points: ContactPoints


def _check_index(name: str, values: np.ndarray, num_bodies: int) -> np.ndarray:
    v = np.asarray(values)
    if not np.issubdtype(v.dtype, np.integer):
        raise TypeError(f"{name} must be integer body indices, got dtype {v.dtype}")
    if v.size and (v.min() < 0 or v.max() >= num_bodies):
        raise ValueError(f"{name} must be in [0, {num_bodies - 1}]")
    return v.astype(np.int64)


def _ragged_arange(counts: np.ndarray) -> np.ndarray:
    """concatenate([arange(n) for n in counts]) without a Python loop."""
    total = int(counts.sum())
    starts = np.repeat(np.cumsum(counts) - counts, counts)
    return np.arange(total, dtype=np.int64) - starts


def _lower_bound(is_half: np.ndarray, vec: np.ndarray, scalar: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Row-wise 1-Lipschitz distance lower bound of heterogeneous bounding primitives (see SdfBound)."""
    plane = np.einsum("...i,...i->...", y, vec) - scalar
    sphere = np.linalg.norm(y - vec, axis=-1) - scalar
    return np.where(is_half, plane, sphere)


def _btrans(m: np.ndarray) -> np.ndarray:
    return np.swapaxes(m, -1, -2)


class ContactPotential:
    """Penalty + dissipation contact of rigid bodies, for the Newton solver (``Potential`` interface)."""

    def __init__(
        self,
        *,
        num_bodies: int,
        is_static,
        samples: ContactSamples,
        colliders,
        pairs,
        config: ContactEvalConfig | None = None,
        broad_phase_margin_m: float = DEFAULT_BROAD_PHASE_MARGIN_M,
    ):
        n = int(num_bodies)
        if n < 1:
            raise ValueError("num_bodies must be >= 1")
        self.num_bodies = n
        self.is_static = np.asarray(is_static, dtype=bool).reshape(-1)
        if self.is_static.shape != (n,):
            raise ValueError(f"is_static must have shape ({n},), got {np.shape(is_static)}")
        self.config = config or ContactEvalConfig()
        if not isinstance(self.config, ContactEvalConfig):
            raise TypeError("config must be a ContactEvalConfig")
        if not (broad_phase_margin_m >= 0 and np.isfinite(broad_phase_margin_m)):
            raise ValueError("broad_phase_margin_m must be finite and >= 0")
        self._init_samples(samples)
        self._init_colliders(colliders)
        self._init_pairs(pairs, float(broad_phase_margin_m))

    # -- construction ------------------------------------------------------------------------------------------

    def _init_samples(self, samples: ContactSamples) -> None:
        pts = np.asarray(samples.points, dtype=np.float64)
        q = pts.shape[0] if pts.ndim == 2 else -1
        if pts.ndim != 2 or pts.shape[1] != 3:
            raise ValueError(f"samples.points must have shape (Q, 3), got {pts.shape}")
        wts = np.asarray(samples.weights, dtype=np.float64)
        nrm = np.asarray(samples.normals, dtype=np.float64)
        body = _check_index("samples.body", samples.body, self.num_bodies)
        if wts.shape != (q,) or nrm.shape != (q, 3) or body.shape != (q,):
            raise ValueError(
                f"samples: weights {wts.shape}, normals {nrm.shape}, body {body.shape} must match points ({q}, 3)"
            )
        if not (np.all(np.isfinite(pts)) and np.all(np.isfinite(wts)) and np.all(np.isfinite(nrm))):
            raise ValueError("samples contain NaN or infinite values")
        if np.any(wts < 0):
            raise ValueError("samples.weights must be >= 0")
        nlen = np.linalg.norm(nrm, axis=1)
        if np.any(nlen <= 0):
            raise ValueError("samples.normals must be non-zero")
        order = np.argsort(body, kind="stable")
        self._pts, self._wts = pts[order], wts[order]
        self._nrm = (nrm / nlen[:, None])[order]
        self._body = body[order]
        self._count = np.bincount(body, minlength=self.num_bodies).astype(np.int64)
        self._start = np.cumsum(self._count) - self._count
        self._local_index = np.arange(q, dtype=np.int64) - self._start[self._body]
        # Bounding sphere of each body's samples (AABB centre, max distance), body frame.
        self._sphere_c = np.zeros((self.num_bodies, 3))
        self._sphere_r = np.zeros(self.num_bodies)
        if q:
            lo = np.full((self.num_bodies, 3), np.inf)
            hi = np.full((self.num_bodies, 3), -np.inf)
            np.minimum.at(lo, self._body, self._pts)
            np.maximum.at(hi, self._body, self._pts)
            has = self._count > 0
            self._sphere_c[has] = 0.5 * (lo[has] + hi[has])
            dist = np.linalg.norm(self._pts - self._sphere_c[self._body], axis=1)
            np.maximum.at(self._sphere_r, self._body, dist)

    def _init_colliders(self, colliders) -> None:
        self._colliders = []
        self._collider_of_body = np.full(self.num_bodies, -1, dtype=np.int64)
        for item in colliders:
            if not isinstance(item, BodyCollider):
                raise TypeError(f"colliders must be BodyCollider items, got {item!r}")
            body = int(item.body)
            if not 0 <= body < self.num_bodies:
                raise ValueError(f"collider body {body} out of range")
            if self._collider_of_body[body] >= 0:
                raise ValueError(f"body {body} has more than one collider")
            bound = getattr(item.collider, "bound", None)
            if not isinstance(bound, SdfBound) or not callable(getattr(item.collider, "evaluate", None)):
                raise TypeError(f"collider of body {body} must provide evaluate() and a SdfBound 'bound'")
            self._collider_of_body[body] = len(self._colliders)
            self._colliders.append(item.collider)
        c = len(self._colliders)
        self._c_half = np.array([col.bound.is_halfspace for col in self._colliders], dtype=bool).reshape(c)
        self._c_vec = np.array([col.bound.vector for col in self._colliders], dtype=np.float64).reshape(c, 3)
        self._c_scalar = np.array([col.bound.scalar for col in self._colliders], dtype=np.float64).reshape(c)

    def _init_pairs(self, pairs, margin: float) -> None:
        pairs = list(pairs)
        p = len(pairs)
        for item in pairs:
            if not isinstance(item, ContactPair) or not isinstance(item.params, ContactParams):
                raise TypeError(f"pairs must be ContactPair items with ContactParams, got {item!r}")
        n = self.num_bodies
        pa = _check_index("pair colliding_body", np.array([x.colliding_body for x in pairs], dtype=np.int64), n)
        pb = _check_index("pair collider_body", np.array([x.collider_body for x in pairs], dtype=np.int64), n)
        if np.any(pa == pb):
            raise ValueError("a contact pair needs two different bodies (rigid self-contact is not supported)")
        if len({(int(a), int(b)) for a, b in zip(pa, pb)}) != p:
            raise ValueError("duplicate ordered contact pair")
        no_samples = pa[self._count[pa] == 0]
        if no_samples.size:
            raise ValueError(f"colliding body {int(no_samples[0])} has no surface samples")
        no_collider = pb[self._collider_of_body[pb] < 0]
        if no_collider.size:
            raise ValueError(f"collider body {int(no_collider[0])} has no collider")
        params = [x.params.validate() for x in pairs]
        self._pa, self._pb, self._pc = pa, pb, self._collider_of_body[pb]

        def arr(getter):
            return np.array([getter(x) for x in params], dtype=np.float64).reshape(p)

        self._k = arr(lambda x: x.penalty_coefficient)
        self._eps = arr(lambda x: x.penalty_smoothing_half_distance)
        self._delta = np.array([x.params.get_penalty_threshold_dist(bool(x.add_padding)) for x in pairs]).reshape(p)
        self._mu = arr(lambda x: x.coulomb_friction_coefficient)
        self._ct = arr(lambda x: x.viscous_friction_coefficient)
        self._cn = arr(lambda x: x.normal_viscous_damping_coefficient)
        self._vf = arr(lambda x: x.friction_falloff_vel)
        self._m = arr(lambda x: x.max_alignment_normals)
        self._fwcn = np.array([x.friction_with_collider_normal for x in params], dtype=bool).reshape(p)
        self._dissipative = (self._mu > 0) | (self._ct > 0) | (self._cn > 0)
        self._reach = self._delta + margin + arr(lambda x: x.distance_error_bound)
        # One coupling slot per unordered pair of dynamic bodies (both directions accumulate into it).
        slots: dict = {}
        self._slot = np.full(p, -1, dtype=np.int64)
        self._slot_flip = np.zeros(p, dtype=bool)
        for i, (a, b) in enumerate(zip(pa.tolist(), pb.tolist())):
            if self.is_static[a] or self.is_static[b]:
                continue
            key = (min(a, b), max(a, b))
            self._slot[i] = slots.setdefault(key, len(slots))
            self._slot_flip[i] = a != key[0]
        keys = sorted(slots, key=slots.get)
        self._coupling_slots = CouplingSlots(
            body_a=np.array([k[0] for k in keys], dtype=np.int64).reshape(-1),
            body_b=np.array([k[1] for k in keys], dtype=np.int64).reshape(-1),
            slot_of_pair=self._slot,
            flip_of_pair=self._slot_flip,
        )

    # -- public API --------------------------------------------------------------------------------------------

    def evaluate(
        self, ctx: StageContext, com_position: np.ndarray, rotation: np.ndarray, want_hessian: bool
    ) -> PotentialTerms:
        rows = self._rows(ctx, com_position, rotation, want_hessian)
        num_worlds = np.shape(com_position)[0]
        return assemble_rigid_contact(rows, num_worlds, self.num_bodies, self._coupling_slots, want_hessian)

    def contact_report(self, ctx: StageContext, com_position: np.ndarray, rotation: np.ndarray) -> ContactReport:
        """Per-body contact wrench and the active contact points at the iterate (no Hessian work)."""
        rows = self._rows(ctx, com_position, rotation, want_hessian=False)
        terms = assemble_rigid_contact(rows, np.shape(com_position)[0], self.num_bodies, self._coupling_slots, False)
        points = ContactPoints(
            world=rows.world,
            actor_a=rows.body_a,
            actor_b=rows.body_b,
            distance=rows.phi,
            force=-rows.g,
            normal=rows.normal_world,
            pos_a=rows.x,
            pos_b=rows.x - rows.phi[:, None] * rows.normal_world,
            sample_index=self._local_index[rows.sample],
            int_weight=rows.weight,
        )
        return ContactReport(-terms.gradient[..., :3], -terms.gradient[..., 3:], points)

    # -- evaluation --------------------------------------------------------------------------------------------

    def _check_state(self, ctx, com, rot):
        com = np.asarray(com, dtype=np.float64)
        rot = np.asarray(rot, dtype=np.float64)
        if com.ndim != 3 or com.shape[1:] != (self.num_bodies, 3):
            raise ValueError(f"com_position must have shape (W, {self.num_bodies}, 3), got {com.shape}")
        w = com.shape[0]
        if rot.shape != (w, self.num_bodies, 3, 3):
            raise ValueError(f"rotation must have shape ({w}, {self.num_bodies}, 3, 3), got {rot.shape}")
        com0 = np.asarray(ctx.com_position0, dtype=np.float64)
        rot0 = np.asarray(ctx.rotation0, dtype=np.float64)
        if com0.shape != com.shape or rot0.shape != rot.shape:
            raise ValueError("ctx.com_position0 / rotation0 must have the shapes of the iterate")
        if not ctx.stage_dt > 0:
            raise ValueError(f"ctx.stage_dt must be > 0, got {ctx.stage_dt}")
        return com, rot, com0, rot0

    def _candidates(self, com, rot, com0, rot0):
        """Broad phase: (world, pair) candidates, expanded to (world, pair, sample) rows and culled per sample.

        Returns the surviving rows' world, pair and sample indices and their collider-frame positions Y, Y0.
        """
        pa, pb, pc = self._pa, self._pb, self._pc
        half, vec, scal = self._c_half[pc], self._c_vec[pc], self._c_scalar[pc]

        def pair_bound(c, r):
            centre = c[:, pa] + np.einsum("wpij,pj->wpi", r[:, pa], self._sphere_c[pa])
            y = np.einsum("wpji,wpj->wpi", r[:, pb], centre - c[:, pb])
            return _lower_bound(half, vec, scal, y) - self._sphere_r[pa] <= self._reach

        active = pair_bound(com, rot)
        if self.config.explicit_normals:  # stage-start contacts are retained for dissipation
            active |= pair_bound(com0, rot0)
        w_idx, p_idx = np.nonzero(active)
        counts = self._count[pa[p_idx]]
        group = np.repeat(np.arange(w_idx.shape[0]), counts)
        row_s = self._start[pa[p_idx]][group] + _ragged_arange(counts)
        X = self._pts[row_s]

        def collider_frame(c, r):
            # Y = R_B^T (c_A + R_A X - c_B) = M X + t per (world, pair) group, gathered per row.
            rb = r[w_idx, pb[p_idx]]
            m = _btrans(rb) @ r[w_idx, pa[p_idx]]
            t = np.einsum("kji,kj->ki", rb, c[w_idx, pa[p_idx]] - c[w_idx, pb[p_idx]])
            return np.einsum("rij,rj->ri", m[group], X) + t[group]

        ci = pc[p_idx][group]
        reach = self._reach[p_idx][group]
        Y = collider_frame(com, rot)
        keep = _lower_bound(self._c_half[ci], self._c_vec[ci], self._c_scalar[ci], Y) <= reach
        if self.config.explicit_normals:
            Y0 = collider_frame(com0, rot0)
            keep |= _lower_bound(self._c_half[ci], self._c_vec[ci], self._c_scalar[ci], Y0) <= reach
            sel = np.flatnonzero(keep)
            return w_idx[group[sel]], p_idx[group[sel]], row_s[sel], Y[sel], Y0[sel]
        sel = np.flatnonzero(keep)
        w, p, s = w_idx[group[sel]], p_idx[group[sel]], row_s[sel]
        a, b = pa[p], pb[p]
        x0 = com0[w, a] + np.einsum("rij,rj->ri", rot0[w, a], self._pts[s])
        Y0 = np.einsum("rji,rj->ri", rot0[w, b], x0 - com0[w, b])
        return w, p, s, Y[sel], Y0

    def _sdf(self, collider_index, points, want_hessian):
        """phi, G, H of each row's collider; one vectorized call per distinct collider present."""
        r = points.shape[0]
        phi, grad = np.empty(r), np.empty((r, 3))
        hess = np.zeros((r, 3, 3)) if want_hessian else None
        for c in np.unique(collider_index):
            sel = np.flatnonzero(collider_index == c)
            res = self._colliders[c].evaluate(points[sel], want_hessian)
            phi[sel], grad[sel] = res.phi, res.grad
            if want_hessian:
                hess[sel] = res.hessian
        return phi, grad, hess

    def _rows(self, ctx, com_position, rotation, want_hessian) -> ContactRows:
        com, rot, com0, rot0 = self._check_state(ctx, com_position, rotation)
        cfg = self.config
        exact = bool(want_hessian and cfg.exact_geometric_hessian)
        w, p, s, Y, Y0 = self._candidates(com, rot, com0, rot0)
        a, b = self._pa[p], self._pb[p]
        ci = self._pc[p]
        phi, G, H = self._sdf(ci, Y, exact)
        # Colliding normal in collider coordinates, N_A = R_B^T R_A n_A (current or stage start).
        n_body = self._nrm[s]
        na = np.einsum("rji,rj->ri", rot[w, b], np.einsum("rij,rj->ri", rot[w, a], n_body))
        delta = self._delta[p]
        in_contact = phi < delta
        if cfg.explicit_normals:
            phi0, G0, _ = self._sdf(ci, Y0, False)
            na0 = np.einsum("rji,rj->ri", rot0[w, b], np.einsum("rij,rj->ri", rot0[w, a], n_body))
            in_contact |= phi0 < delta
            accept, fade = alignment_gate(G0, na0, self._m[p], cfg.fade_friction)
        else:
            accept, fade = alignment_gate(G, na, self._m[p], cfg.fade_friction)
        keep = np.flatnonzero(in_contact & accept)
        w, p, s, Y, Y0, a, b = (v[keep] for v in (w, p, s, Y, Y0, a, b))
        phi, G, na, fade = phi[keep], G[keep], na[keep], fade[keep]
        H = H[keep] if H is not None else None
        if cfg.explicit_normals:
            phi0, G0, na0 = phi0[keep], G0[keep], na0[keep]
        weight = self._wts[s]

        pen = penalty_energy(phi, G, H, self._k[p], self._eps[p], self._delta[p], want_hessian, include_curvature=exact)
        energy = pen.energy
        dE = pen.grad
        d2E = pen.hessian

        dis = np.flatnonzero(self._dissipative[p])
        if dis.size:
            pd = p[dis]
            dp = Y[dis] - Y0[dis]
            if cfg.explicit_normals:
                load_phi, g_split, na_split = phi0[dis], G0[dis], na0[dis]
            elif cfg.implicit_normal_force_for_dissipation:
                load_phi, g_split, na_split = phi[dis], G[dis], na[dis]
            else:  # reconstructed stage-start distance d0 = phi - G . dp, current geometry
                load_phi = phi[dis] - np.einsum("ri,ri->r", G[dis], dp)
                g_split, na_split = G[dis], na[dis]
            load = fade[dis] * penalty_scalar(load_phi, self._k[pd], self._eps[pd], self._delta[pd]).load
            normal = dissipation_normal(g_split, na_split, self._fwcn[pd])
            diss = dissipation_energy(
                dp, normal, load, self._mu[pd], self._ct[pd], self._cn[pd], self._vf[pd], float(ctx.stage_dt),
                cfg.friction_model, want_hessian, fitted_hessian=cfg.fitted_friction_hessian,
            )
            energy = energy.copy()
            energy[dis] += diss.energy
            dE = dE.copy()
            dE[dis] += diss.grad
            if want_hessian:
                d2E = d2E.copy()
                d2E[dis] += diss.hessian

        rb = rot[w, b]
        x = com[w, a] + np.einsum("rij,rj->ri", rot[w, a], self._pts[s])
        g = weight[:, None] * np.einsum("rij,rj->ri", rb, dE)
        h = None
        if want_hessian:
            h = weight[:, None, None] * (rb @ d2E @ _btrans(rb))
        gnorm = np.linalg.norm(G, axis=1)
        n_world = np.einsum("rij,rj->ri", rb, G / np.where(gnorm > 0, gnorm, 1.0)[:, None])
        return ContactRows(
            world=w, pair=p, body_a=a, body_b=b, sample=s, weight=weight, x=x, r=x - com[w, a], u=x - com[w, b],
            phi=phi, normal_world=n_world, energy=weight * energy, g=g, h=h, exact_hessian=exact,
        )
