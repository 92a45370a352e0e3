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

Broad phase: each colliding body's samples are bounded by a sphere (body frame). A (pair, world) is skipped when
a lower bound of the distance from that sphere to the collider exceeds delta + margin (+ distance_error_bound):
the exact SDF at the sphere centre minus its radius for a box (SDFs are 1-Lipschitz), the collider's bounding
sphere or half-space (``SdfBound``) otherwise. Samples of the surviving pairs are then tested individually:
for the analytic colliders (plane, sphere, box; exact types) by their exact distance -- all distances of those
rows first, gradients and Hessians only for the rows in contact -- and for any other collider (grid SDF, exact
mesh, user fields) by its ``SdfBound`` before one ``evaluate()`` of the rows left. Nothing the documented
per-sample bound would keep is dropped, so the contact set is the same as testing every sample.

Vectorization: over (world, pair) groups and their sample rows, never over worlds, pairs or samples in Python.
The analytic colliders of one type are evaluated in one batched kernel call (``colliders.*_sdf_components``,
one parameter column per row); other colliders in one ``evaluate()`` per distinct collider present. Row data are
component-first ((3, R) vectors, (3, 3, R) matrices) with the small products written out per component.
Collider parameters are read from the collider objects at construction (colliders are immutable in practice).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..jit import kernel_array
from ..kernels import contact as contact_kernels
from ..kernels.depth import contact_depth
from ..kernels.mesh import mesh_sdf_address, pack_mesh
from ..potentials.base import Coupling, Potential, PotentialTerms, StageContext
from .params import ContactEvalConfig, ContactParams
from .colliders import BoxCollider, MeshCollider, PlaneCollider, SphereCollider, box_sdf_components
from .colliders import plane_sdf_components, sphere_sdf_components
from .grid_sdf import GridSdfCollider
from .friction import alignment_gate_from_cosine, dissipation_energy_components, dissipation_normal_components
from .penalty import PenaltyScalar, penalty_energy_components, penalty_scalar
from .ramp import CoulombFrictionModel
from .rigid_assembly import ContactRows, CouplingSlots, assemble_rigid_contact
from .sdf_values import SdfBound

__all__ = ["ContactSamples", "BodyCollider", "ContactPair", "ContactPoints", "ContactReport", "ContactPotential"]

DEFAULT_BROAD_PHASE_MARGIN_M = 0.005  # slack on conservative bounds; covers grid interpolation error
_NO_BLOCKS = np.zeros((0, 0, 6, 6))  # the kernel's Hessian / coupling output when none is asked for (never written)


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


# Component-first small linear algebra: vectors (3, ...), matrices (3, 3, ...) with m[i, j] the entry (i, j).
# Written out per component (einsum / matmul over 3-vectors is slow); the summation orders are those of the
# einsum calls they replaced (same rounding on this numpy build; nothing relies on it).


def _matvec(m: np.ndarray, v: np.ndarray) -> np.ndarray:
    """m v."""
    return (m[:, 0] * v[0] + m[:, 2] * v[2]) + m[:, 1] * v[1]


def _tmatvec(m: np.ndarray, v: np.ndarray) -> np.ndarray:
    """m^T v."""
    return (m[0] * v[0] + m[1] * v[1]) + m[2] * v[2]


def _tmatmat(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a^T b."""
    return (a[0][:, None] * b[0][None] + a[1][:, None] * b[1][None]) + a[2][:, None] * b[2][None]


def _congruence(m: np.ndarray, h: np.ndarray) -> np.ndarray:
    """m h m^T."""
    mh = (m[:, 0, None] * h[0][None] + m[:, 1, None] * h[1][None]) + m[:, 2, None] * h[2][None]
    return (mh[:, 0, None] * m[:, 0][None] + mh[:, 1, None] * m[:, 1][None]) + mh[:, 2, None] * m[:, 2][None]


def _dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a[0] * b[0] + a[2] * b[2]) + a[1] * b[1]


def _norm(a: np.ndarray) -> np.ndarray:
    return np.sqrt((a[0] * a[0] + a[1] * a[1]) + a[2] * a[2])


def _bound_distance(is_half: np.ndarray, vec: np.ndarray, scalar: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Distance lower bound of heterogeneous bounding primitives (SdfBound), component-first: y (3, ...) and
    vec (3, ...) broadcast."""
    plane = _dot(y, vec) - scalar
    sphere = _norm(y - vec) - scalar
    return np.where(is_half, plane, sphere)


# Collider kinds evaluated by the batched analytic kernels; anything else (grid SDF, exact mesh, user fields) is
# GENERIC: its own evaluate() and its SdfBound for the per-sample broad phase.
_PLANE, _SPHERE, _BOX, _GENERIC = contact_kernels.PLANE, contact_kernels.SPHERE, contact_kernels.BOX, 3
_FRICTION_MODEL_CODE = {CoulombFrictionModel.C1_REGULARIZED: contact_kernels.C1_REGULARIZED,
                        CoulombFrictionModel.CINF_REGULARIZED: contact_kernels.CINF_REGULARIZED}


def _collider_kind(collider) -> int:
    kind = type(collider)  # exact types: a subclass may override evaluate()
    if kind is PlaneCollider:
        return _PLANE
    if kind is SphereCollider:
        return _SPHERE
    if kind is BoxCollider:
        return _BOX
    return _GENERIC


def _kernel_kind(collider) -> int:
    """The contact kernel's code for a collider (exact types: a subclass may override evaluate()), -1 for those it
    does not evaluate (user fields)."""
    kind = _collider_kind(collider)
    if kind != _GENERIC:
        return kind
    return {GridSdfCollider: contact_kernels.GRID, MeshCollider: contact_kernels.MESH}.get(type(collider), -1)


class ContactPotential(Potential):
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
        self._pts_t = np.ascontiguousarray(self._pts.T)  # (3, Q), component-first
        self._nrm_t = np.ascontiguousarray(self._nrm.T)
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
        self._c_is_half = np.array([col.bound.is_halfspace for col in self._colliders], dtype=bool).reshape(c)
        self._c_vec = np.array([col.bound.vector for col in self._colliders], dtype=np.float64).reshape(c, 3)
        self._c_scalar = np.array([col.bound.scalar for col in self._colliders], dtype=np.float64).reshape(c)
        self._c_vec_t = np.ascontiguousarray(self._c_vec.T)
        # Batched analytic kernels: one parameter column per collider (unused entries stay zero), taken from the
        # colliders here; the collider objects are immutable in practice (`translated` builds a new one).
        self._c_kind = np.array([_collider_kind(col) for col in self._colliders], dtype=np.int64).reshape(c)
        self._c_center = np.zeros((3, c))  # sphere / box centre
        self._c_box_half = np.ones((3, c))  # box half extents
        self._c_rot = np.tile(np.eye(3)[:, :, None], (1, 1, c))  # box rotation (body from box)
        self._c_radius = np.zeros(c)  # sphere radius
        self._c_normal = np.zeros((3, c))  # plane normal
        self._c_offset = np.zeros(c)  # plane offset d
        for i, col in enumerate(self._colliders):
            kind = self._c_kind[i]
            if kind == _PLANE:
                self._c_normal[:, i], self._c_offset[i] = col.normal, col.distance_m
            elif kind == _SPHERE:
                self._c_center[:, i], self._c_radius[i] = col.center, col.radius_m
            elif kind == _BOX:
                self._c_center[:, i], self._c_box_half[:, i], self._c_rot[:, :, i] = (
                    col.center, col.half_extents_m, col.rotation)
        self._any_rotated_box = bool(np.any((self._c_kind == _BOX)
                                            & ~np.all(self._c_rot == np.eye(3)[:, :, None], axis=(0, 1))))

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
        # Broad phase per pair: the colliding body's sample sphere (centre in the body frame, radius) and the
        # collider's kind; box colliders are bounded by their exact SDF at the sphere centre (1-Lipschitz).
        self._p_kind = self._c_kind[self._pc]
        self._p_sphere_c = np.ascontiguousarray(self._sphere_c[pa].T)  # (3, P)
        self._p_sphere_r = self._sphere_r[pa]
        self._p_is_half = self._c_is_half[self._pc]
        self._p_vec = np.ascontiguousarray(self._c_vec[self._pc].T)
        self._p_scalar = self._c_scalar[self._pc]
        self._box_pairs = np.flatnonzero(self._p_kind == _BOX)
        # When every colliding body has the same number of samples Q, the rows of a (world, pair) group are one
        # (3, Q) block of its body's samples: Y is then computed block-wise, without per-row copies of M and t.
        q_of_pair = np.unique(self._count[pa])
        self._block_q = int(q_of_pair[0]) if q_of_pair.size == 1 else 0
        if self._block_q:
            blocks = np.zeros((3, n, self._block_q))
            for body in np.unique(pa):
                blocks[:, body] = self._pts_t[:, self._start[body]:self._start[body] + self._block_q]
            self._pts_block = blocks
        self._all_dissipative = bool(np.all(self._dissipative))
        self._all_fwcn = bool(np.all(self._fwcn))
        keys = sorted(slots, key=slots.get)
        self.coupling_slots = CouplingSlots(
            body_a=np.array([k[0] for k in keys], dtype=np.int64).reshape(-1),
            body_b=np.array([k[1] for k in keys], dtype=np.int64).reshape(-1),
            slot_of_pair=self._slot,
            flip_of_pair=self._slot_flip,
        )
        self._init_kernel_arrays()

    def _init_kernel_arrays(self) -> None:
        """The frozen arrays of the contact kernel (sim/kernels/contact.py) and whether this potential's
        configuration is in its scope: analytic, grid-SDF and exact mesh colliders, every dissipation load mode
        (explicit normals included), Gauss-Newton Hessian. Other configurations (user fields, the exact geometric
        Hessian of the FD tests) evaluate with numpy (`evaluate_numpy`), decided here once. The grids' values and the
        meshes' triangles share one float table (`ContactColliderArrays`: each collider's start in grid_start, a
        mesh's triangle count in grid_dims[:, 0])."""
        cfg = self.config
        kernel_kind = np.array([_kernel_kind(c) for c in self._colliders], dtype=np.int64).reshape(-1)
        self.uses_kernel = bool(not cfg.exact_geometric_hessian and np.all(kernel_kind >= 0))
        if not self.uses_kernel:
            return
        grids = [c if kernel_kind[i] == contact_kernels.GRID else None for i, c in enumerate(self._colliders)]
        tables, grid_start, offset = [np.zeros(0)], np.zeros(len(self._colliders), dtype=np.int64), 0
        for code in (contact_kernels.GRID, contact_kernels.MESH):  # the grids' values, then the meshes' triangles
            for i in np.flatnonzero(kernel_kind == code):
                col = self._colliders[i]
                table = col.values.ravel() if code == contact_kernels.GRID else pack_mesh(
                    col.vertices, col.triangles, col.face_normals)
                grid_start[i], offset = offset, offset + table.size
                tables.append(table)

        def per_grid(attr, default):
            return np.array([default if g is None else getattr(g, attr) for g in grids], dtype=np.float64).reshape(-1, 3)
        grid_dims = per_grid("dims", (2, 2, 2)).astype(np.int64)
        for i in np.flatnonzero(kernel_kind == contact_kernels.MESH):  # triangle count, then the kernel's address
            grid_dims[i] = (self._colliders[i].triangles.shape[0], mesh_sdf_address(), 0)
        ka = kernel_array
        self._kernel_samples = contact_kernels.ContactSampleArrays(
            points=ka(self._pts), normals=ka(self._nrm), weights=ka(self._wts), start=ka(self._start, np.int64),
            count=ka(self._count, np.int64))
        self._kernel_pairs = contact_kernels.ContactPairArrays(
            colliding=ka(self._pa, np.int64), collider=ka(self._pb, np.int64), collider_index=ka(self._pc, np.int64),
            k=ka(self._k), eps=ka(self._eps), delta=ka(self._delta), mu=ka(self._mu), c_t=ka(self._ct),
            c_n=ka(self._cn), falloff_vel=ka(self._vf), max_alignment=ka(self._m),
            use_collider_normal=ka(self._fwcn, np.bool_), dissipative=ka(self._dissipative, np.bool_),
            reach=ka(self._reach), sphere_center=ka(self._p_sphere_c.T), sphere_radius=ka(self._p_sphere_r),
            bound_is_half=ka(self._p_is_half, np.bool_), bound_vector=ka(self._p_vec.T),
            bound_scalar=ka(self._p_scalar), slot=ka(self._slot, np.int64), flip=ka(self._slot_flip, np.bool_))
        self._kernel_colliders = contact_kernels.ContactColliderArrays(
            kind=kernel_kind, center=ka(self._c_center.T), half_extents=ka(self._c_box_half.T),
            rotation=ka(np.moveaxis(self._c_rot, 2, 0)), radius=ka(self._c_radius), normal=ka(self._c_normal.T),
            offset=ka(self._c_offset),
            grid_values=ka(np.concatenate(tables)), grid_start=grid_start, grid_dims=grid_dims,
            grid_min=per_grid("bounds_min", (0.0, 0.0, 0.0)), grid_max=per_grid("bounds_max", (1.0, 1.0, 1.0)),
            grid_cell=per_grid("cell_m", (1.0, 1.0, 1.0)))

    def __setstate__(self, state):
        """Unpickled (another process): the mesh kernel's address is this process's (`mesh.mesh_sdf_address`)."""
        self.__dict__.update(state)
        colliders = self.__dict__.get("_kernel_colliders")
        if colliders is not None:
            for i in np.flatnonzero(colliders.kind == contact_kernels.MESH):
                colliders.grid_dims[i, 1] = mesh_sdf_address()

    def kernel_groups(self) -> tuple:
        """(samples, pairs, colliders): the contact kernels' frozen array groups (`kernels.contact`)."""
        return self._kernel_samples, self._kernel_pairs, self._kernel_colliders

    # -- public API --------------------------------------------------------------------------------------------

    def evaluate(
        self, ctx: StageContext, com_position: np.ndarray, rotation: np.ndarray, want_hessian: bool
    ) -> PotentialTerms:
        if not self.uses_kernel:
            return self.evaluate_numpy(ctx, com_position, rotation, want_hessian)
        com, rot, com0, rot0 = self.check_state(ctx, com_position, rotation)
        num_worlds = com.shape[0]
        terms = PotentialTerms.zeros(num_worlds, self.num_bodies, want_hessian)
        slots = self.coupling_slots
        num_slots = slots.body_a.shape[0]
        block = np.zeros((num_worlds, num_slots, 6, 6)) if want_hessian and num_slots else _NO_BLOCKS
        cfg = self.config
        coupled = contact_kernels.contact_terms(
            tuple(self._kernel_samples), tuple(self._kernel_pairs), tuple(self._kernel_colliders),
            (_FRICTION_MODEL_CODE[cfg.friction_model], bool(cfg.fade_friction), contact_kernels.load_mode(cfg),
             bool(cfg.fitted_friction_hessian)), kernel_array(com), kernel_array(rot), kernel_array(com0),
            kernel_array(rot0), float(ctx.stage_dt), bool(want_hessian), terms.energy, terms.gradient,
            terms.hessian_diag if want_hessian else _NO_BLOCKS, block)
        if coupled:  # without coupled rows the Newton system stays block-diagonal (as in assemble_rigid_contact)
            terms.couplings.append(Coupling(slots.body_a.copy(), slots.body_b.copy(), block))
        return terms

    def evaluate_numpy(
        self, ctx: StageContext, com_position: np.ndarray, rotation: np.ndarray, want_hessian: bool
    ) -> PotentialTerms:
        """The numpy evaluation: the kernel's oracle, and the path of the configurations outside its scope
        (`uses_kernel`)."""
        rows = self._rows(ctx, com_position, rotation, want_hessian)
        num_worlds = np.shape(com_position)[0]
        return assemble_rigid_contact(rows, num_worlds, self.num_bodies, self.coupling_slots, want_hessian)

    def contact_report(self, ctx: StageContext, com_position: np.ndarray, rotation: np.ndarray) -> ContactReport:
        """Per-body contact wrench and the active contact points at the iterate (no Hessian work)."""
        rows = self._rows(ctx, com_position, rotation, want_hessian=False)
        terms = assemble_rigid_contact(rows, np.shape(com_position)[0], self.num_bodies, self.coupling_slots, False)
        x, normal = rows.x.T, rows.normal_world.T
        points = ContactPoints(
            world=rows.world,
            actor_a=rows.body_a,
            actor_b=rows.body_b,
            distance=rows.phi,
            force=-rows.g.T,
            normal=normal,
            pos_a=x,
            pos_b=x - rows.phi[:, None] * normal,
            sample_index=self._local_index[rows.sample],
            int_weight=rows.weight,
        )
        return ContactReport(-terms.gradient[..., :3], -terms.gradient[..., 3:], points)

    def penetration_depth(self, com_position: np.ndarray, rotation: np.ndarray) -> np.ndarray:
        """(W, N): each body's deepest contact sample at the pose, in ramp widths (delta - phi) / (2 eps) (> 1:
        past the penalty's blend region), 0 where none is in contact; no alignment gate, distances only."""
        com = np.asarray(com_position, dtype=np.float64)
        rot = np.asarray(rotation, dtype=np.float64)
        num_worlds, n = com.shape[0], self.num_bodies
        if self.uses_kernel:
            depth = np.zeros((num_worlds, n))
            contact_depth(*self.depth_kernel_inputs(), kernel_array(com), kernel_array(rot), depth)
            return depth
        return self.penetration_depth_numpy(com, rot)

    def depth_kernel_inputs(self) -> tuple:
        """`kernels.depth.contact_depth`'s arguments before the poses (the samples', pairs' and colliders' kernel
        arrays), kept: they are frozen (a scene change builds a new potential). Only with ``uses_kernel``."""
        inputs = self.__dict__.get("_depth_inputs")
        if inputs is None:
            samples, pairs = self._kernel_samples, self._kernel_pairs
            inputs = self._depth_inputs = (
                samples.points, samples.start, samples.count, pairs.colliding, pairs.collider, pairs.collider_index,
                pairs.eps, pairs.delta, pairs.reach, pairs.sphere_center, pairs.sphere_radius, pairs.bound_is_half,
                pairs.bound_vector, pairs.bound_scalar, *self._kernel_colliders)
        return inputs

    def penetration_depth_numpy(self, com: np.ndarray, rot: np.ndarray) -> np.ndarray:
        """`penetration_depth` in numpy: the kernel's oracle, and the path outside its scope."""
        num_worlds, n = com.shape[0], self.num_bodies
        depth = np.zeros(num_worlds * n)
        state = self._flat_state(com, rot)
        (gw, gp, _, _), present, group, _, Y, _ = self._candidates(state, state, num_worlds)
        if group.size:
            p = gp[group]
            generic = present[-1] == _GENERIC  # GENERIC colliders evaluate phi with their gradient
            phi = self._sdf(present, self._pc[p], Y, False, want_grad=bool(generic))[0]
            excess = self._delta[p] - phi
            rows = np.flatnonzero(excess > 0.0)
            p, excess = p[rows], excess[rows]
            ramp = 2.0 * self._eps[p]
            d = np.where(ramp > 0.0, excess / np.where(ramp > 0.0, ramp, 1.0), np.inf)
            w = gw[group[rows]]
            np.maximum.at(depth, w * n + self._pa[p], d)
            np.maximum.at(depth, w * n + self._pb[p], d)
        return depth.reshape(num_worlds, n)

    # -- evaluation --------------------------------------------------------------------------------------------

    def check_state(self, ctx, com, rot):
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

    # The state is handled component-first and flat over (world, body): c (3, W N), r (3, 3, W N) with column
    # w N + i for body i of world w. Row data are gathered with np.take (much faster than fancy indexing here).

    @staticmethod
    def _flat_state(com, rot):
        num = com.shape[0] * com.shape[1]
        c = np.ascontiguousarray(com.reshape(num, 3).T)
        return c, np.ascontiguousarray(rot.reshape(num, 9).T).reshape(3, 3, num)

    def _pair_frames(self, c, r, num_worlds):
        """Both bodies' CoM and rotation for every (world, pair): (3, W, P) and (3, 3, W, P)."""
        base = np.arange(num_worlds)[:, None] * self.num_bodies
        fa, fb = base + self._pa, base + self._pb
        return c.take(fa, axis=1), c.take(fb, axis=1), r.take(fa, axis=2), r.take(fb, axis=2)

    def _pair_active(self, ca, cb, ra, rb):
        """(W, P): the lower bound of the distance from the pair's samples to its collider is within reach."""
        # Sample-sphere centre of A in B's frame: y = R_B^T (c_A + R_A s_A - c_B), (3, W, P).
        y = _tmatvec(rb, ca + _matvec(ra, self._p_sphere_c[:, None, :]) - cb)
        lb = _bound_distance(self._p_is_half, self._p_vec[:, None, :], self._p_scalar, y)
        box = self._box_pairs
        if box.size:  # the exact box SDF at the centre (1-Lipschitz) is a much tighter bound than its sphere
            ci = self._pc[box]
            rot = self._c_rot[:, :, None, ci] if self._any_rotated_box else None
            lb[:, box] = box_sdf_components(y.take(box, axis=2), self._c_center[:, None, ci],
                                            self._c_box_half[:, None, ci], rot, want_grad=False)[0]
        return lb - self._p_sphere_r <= self._reach

    def _candidates(self, state, state0, num_worlds):
        """Broad phase: (world, pair) candidates expanded to (world, pair, sample) rows, in (world, pair, sample)
        order. Samples of GENERIC colliders are culled individually by the collider's bound; for the analytic
        colliders the exact distance computed next is the per-sample test.

        Returns the (world, pair) groups' world, pair and frames (c_A, c_B, R_A, R_B; stage start too with
        explicit normals), and per row its group, sample index and collider-frame position Y (3, R) (and Y0).
        """
        explicit = self.config.explicit_normals
        frames = self._pair_frames(*state, num_worlds)
        active = self._pair_active(*frames)
        frames0 = None
        if explicit:  # stage-start contacts are retained for dissipation
            frames0 = self._pair_frames(*state0, num_worlds)
            active |= self._pair_active(*frames0)
        num_pairs = self._pa.shape[0]
        k_idx = np.flatnonzero(active)
        w_idx = k_idx // num_pairs
        p_idx = k_idx - w_idx * num_pairs
        a = self._pa[p_idx]
        counts = self._count[a]
        num_groups = k_idx.shape[0]
        group = np.repeat(np.arange(num_groups), counts)
        q = self._block_q
        if q:
            row_s = (self._start[a][:, None] + np.arange(q)).reshape(-1)
            X = self._pts_block.take(a, axis=1)  # (3, K, Q)
        else:
            row_s = np.repeat(self._start[a] - (np.cumsum(counts) - counts), counts) + np.arange(group.shape[0])
            X = self._pts_t.take(row_s, axis=1)

        def group_frames(fr):
            ca, cb, ra, rb = (v.reshape(v.shape[:-2] + (-1,)).take(k_idx, axis=-1) for v in fr)
            # Y = R_B^T (c_A + R_A X - c_B) = M X + t per group.
            m = _tmatmat(rb, ra)
            t = _tmatvec(rb, ca - cb)
            if q:
                y = (_matvec(m[..., None], X) + t[..., None]).reshape(3, -1)
            else:
                y = _matvec(np.repeat(m, counts, axis=2), X) + np.repeat(t, counts, axis=1)
            return (ca, cb, ra, rb), y

        g_frames, Y = group_frames(frames)
        g_frames0 = Y0 = None
        if explicit:
            g_frames0, Y0 = group_frames(frames0)
        kind = self._p_kind[p_idx]
        present = np.flatnonzero(np.bincount(kind, minlength=_GENERIC + 1))
        if present.size and present[-1] == _GENERIC:
            rows = np.flatnonzero(np.repeat(kind == _GENERIC, counts))
            pr = p_idx[group[rows]]
            ci = self._pc[pr]
            half, vec, scal = self._c_is_half[ci], self._c_vec_t.take(ci, axis=1), self._c_scalar[ci]
            reach = self._reach[pr]
            near = _bound_distance(half, vec, scal, Y.take(rows, axis=1)) <= reach
            if explicit:
                near |= _bound_distance(half, vec, scal, Y0.take(rows, axis=1)) <= reach
            keep = np.ones(group.shape[0], dtype=bool)
            keep[rows[~near]] = False
            sel = np.flatnonzero(keep)
            group, row_s, Y = group[sel], row_s[sel], Y.take(sel, axis=1)
            Y0 = None if Y0 is None else Y0.take(sel, axis=1)
        return (w_idx, p_idx, g_frames, g_frames0), present, group, row_s, Y, Y0

    def _sdf(self, present, collider_index, points, want_hessian, want_grad=True):
        """phi (R,), G (3, R), H (3, 3, R) of each row's collider at points (3, R): one batched kernel call per
        collider kind present (``present``), one evaluate() per GENERIC collider present. ``want_grad=False``
        (analytic kinds only) returns phi alone."""
        if present.size == 1:
            return self._sdf_kind(int(present[0]), collider_index, points, want_hessian, want_grad)
        r = points.shape[1]
        phi = np.empty(r)
        grad = np.empty((3, r)) if want_grad else None
        hess = np.zeros((3, 3, r)) if want_hessian else None
        kind = self._c_kind[collider_index]
        for k in present:
            sel = np.flatnonzero(kind == k)
            p, g, h = self._sdf_kind(int(k), collider_index[sel], points.take(sel, axis=1), want_hessian,
                                     want_grad)
            phi[sel] = p
            if want_grad:
                grad[:, sel] = g
            if want_hessian:
                hess[:, :, sel] = h
        return phi, grad, hess

    def _sdf_kind(self, kind, ci, y, want_hessian, want_grad=True):
        if kind == _BOX:
            rot = self._c_rot.take(ci, axis=2) if self._any_rotated_box else None
            return box_sdf_components(y, self._c_center.take(ci, axis=1), self._c_box_half.take(ci, axis=1),
                                      rot, want_hessian and want_grad, want_grad)
        if kind == _PLANE:
            return plane_sdf_components(y, self._c_normal.take(ci, axis=1), self._c_offset[ci], want_hessian)
        if kind == _SPHERE:
            return sphere_sdf_components(y, self._c_center.take(ci, axis=1), self._c_radius[ci], want_hessian)
        r = y.shape[1]
        phi, grad = np.empty(r), np.empty((3, r))
        hess = np.zeros((3, 3, r)) if want_hessian else None
        for c in np.unique(ci):
            sel = np.flatnonzero(ci == c)
            res = self._colliders[c].evaluate(y.take(sel, axis=1).T, want_hessian)
            phi[sel], grad[:, sel] = res.phi, np.asarray(res.grad).T
            if want_hessian:
                hess[:, :, sel] = np.moveaxis(np.asarray(res.hessian), 0, -1)
        return phi, grad, hess

    def _rows(self, ctx, com_position, rotation, want_hessian) -> ContactRows:
        com, rot, com0, rot0 = self.check_state(ctx, com_position, rotation)
        cfg = self.config
        explicit = cfg.explicit_normals
        exact = bool(want_hessian and cfg.exact_geometric_hessian)
        num_worlds, n = com.shape[0], self.num_bodies
        state, state0 = self._flat_state(com, rot), self._flat_state(com0, rot0)
        (gw, gp, gf, gf0), present, group, s, Y, Y0 = self._candidates(state, state0, num_worlds)
        counts = np.bincount(group, minlength=gp.shape[0])
        ci = np.repeat(self._pc[gp], counts)
        # Analytic colliders only: distances of every row first, gradients of the rows in contact afterwards.
        # A GENERIC collider is evaluated once, on every row that survived its per-sample bound.
        two_stage = present.size > 0 and present[-1] != _GENERIC
        phi, G, H = self._sdf(present, ci, Y, exact and not two_stage, want_grad=not two_stage)
        delta = np.repeat(self._delta[gp], counts)
        in_contact = phi < delta
        phi0 = G0 = None
        if explicit:
            phi0, G0, _ = self._sdf(present, ci, Y0, False, want_grad=not two_stage)
            in_contact |= phi0 < delta
        if two_stage:
            rows = np.flatnonzero(in_contact)
            ci, group, s, Y, phi = ci[rows], group[rows], s[rows], Y.take(rows, axis=1), phi[rows]
            G, H = self._sdf(present, ci, Y, exact)[1:]
            if explicit:
                Y0, phi0 = Y0.take(rows, axis=1), phi0[rows]
                G0 = self._sdf(present, ci, Y0, False)[1]

        # Narrow phase on the rows in contact: alignment gate with N_A = R_B^T R_A n_A (current or stage start).
        def compress(sel, group, s, Y, phi, G, H, extra):
            take = lambda v: None if v is None else v.take(sel, axis=-1)  # noqa: E731
            return group[sel], s[sel], take(Y), phi[sel], take(G), take(H), [take(v) for v in extra]

        extra0 = [Y0, phi0, G0] if explicit else []
        if not two_stage:
            sel = np.flatnonzero(in_contact)
            group, s, Y, phi, G, H, extra0 = compress(sel, group, s, Y, phi, G, H, extra0)
        n_body = self._nrm_t.take(s, axis=1)
        p = gp[group]
        frames = gf0 if explicit else gf
        na_gate = _tmatvec(frames[3].take(group, axis=2), _matvec(frames[2].take(group, axis=2), n_body))
        accept, fade = alignment_gate_from_cosine(_dot(extra0[2] if explicit else G, na_gate), self._m[p],
                                                  cfg.fade_friction, check=False)
        if not accept.all():
            keep = np.flatnonzero(accept)
            group, s, Y, phi, G, H, extra0 = compress(keep, group, s, Y, phi, G, H, extra0)
            p, fade, na_gate = p[keep], fade[keep], na_gate.take(keep, axis=1)
        if explicit:
            Y0, phi0, G0 = extra0
        w = gw[group]
        a, b = self._pa[p], self._pb[p]
        weight = self._wts[s]
        X = self._pts_t.take(s, axis=1)
        ca, cb, ra, rb = (v.take(group, axis=-1) for v in gf)
        if not explicit:  # stage-start pullback Y0 = R_B0^T (c_A0 + R_A0 X - c_B0) of the rows kept
            c0, r0 = state0
            fa, fb = w * n + a, w * n + b
            x0 = c0.take(fa, axis=1) + _matvec(r0.take(fa, axis=2), X)
            Y0 = _tmatvec(r0.take(fb, axis=2), x0 - c0.take(fb, axis=1))

        k, eps, delta = self._k[p], self._eps[p], self._delta[p]
        num_rows = phi.shape[0]
        dis = slice(None) if self._all_dissipative else np.flatnonzero(self._dissipative[p])
        dissipate = bool(num_rows) and (self._all_dissipative or dis.size > 0)
        if dissipate:
            pd = p[dis]
            dp = Y[:, dis] - Y0[:, dis]
            if explicit:
                load_phi, g_split, na_split = phi0[dis], G0[:, dis], na_gate[:, dis]
            elif cfg.implicit_normal_force_for_dissipation:
                load_phi, g_split, na_split = phi[dis], G[:, dis], na_gate[:, dis]
            else:  # reconstructed stage-start distance d0 = phi - G . dp, current geometry
                g_split, na_split = G[:, dis], na_gate[:, dis]
                load_phi = phi[dis] - _dot(g_split, dp)
            # One penalty kernel call for the penalty at phi and the dissipation load at load_phi.
            cat = np.concatenate
            both = penalty_scalar(cat([phi, load_phi]), cat([k, k[dis]]), cat([eps, eps[dis]]),
                                  cat([delta, delta[dis]]), check=False)
            scalar = PenaltyScalar(*(v[:num_rows] for v in both))
            load = fade[dis] * both.load[num_rows:]
        else:
            scalar = penalty_scalar(phi, k, eps, delta, check=False)
        pen = penalty_energy_components(phi, G, H, k, eps, delta, want_hessian, include_curvature=exact,
                                        scalar=scalar)
        energy, dE, d2E = pen.energy, pen.grad, pen.hessian

        if dissipate:
            normal = dissipation_normal_components(g_split, na_split, True if self._all_fwcn else self._fwcn[pd])
            diss = dissipation_energy_components(
                dp, normal, load, self._mu[pd], self._ct[pd], self._cn[pd], self._vf[pd], float(ctx.stage_dt),
                cfg.friction_model, want_hessian, fitted_hessian=cfg.fitted_friction_hessian, check=False,
            )
            if self._all_dissipative:
                energy = energy + diss.energy
                dE = dE + diss.grad
                if want_hessian:
                    d2E = d2E + diss.hessian
            else:
                energy = energy.copy()
                energy[dis] += diss.energy
                dE = dE.copy()
                dE[:, dis] += diss.grad
                if want_hessian:
                    d2E = d2E.copy()
                    d2E[:, :, dis] += diss.hessian

        x = ca + _matvec(ra, X)
        g = weight * _matvec(rb, dE)
        h = weight * _congruence(rb, d2E) if want_hessian else None
        gnorm = _norm(G)
        n_world = _matvec(rb, G / np.where(gnorm > 0, gnorm, 1.0))
        return ContactRows(
            world=w, pair=p, body_a=a, body_b=b, sample=s, weight=weight, x=x, r=x - ca, u=x - cb, phi=phi,
            normal_world=n_world, energy=weight * energy, g=g, h=h, exact_hessian=exact,
        )
