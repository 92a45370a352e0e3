"""The scene side of contact (digest 5): builds the contact potential from the actors, filters, overrides, queries.

`ContactSystem` is a potential registered in every scene. It rebuilds its `ContactPotential` (sim/contact/) when
actors, their contact parameters, layers, filters, overrides or the solver's evaluation switches change; per
actor it caches the surface samples (relative to the CoM) and the collider (grid SDFs are costly to build).

Pairs (digest 5.1, 5.4): an ordered pair (A colliding, B collider) exists when A is a dynamic actor with a surface
mesh, B has a collider (type not NONE), not both are static, and both the layer gate and the actor gate allow it.
A mesh-mesh contact is therefore evaluated in both directions and summed. Parameters are combined per pair
(`combine_contact_params`), with a per-unordered-pair override winning.

`ContactSceneMixin` adds the reference's scene methods (filters, overrides); `RigidActor` gets the queries
(`get_contact_force_world`, `get_contact_torque_world`, `get_contact_points_world`,
`get_points_distance_to_surface`) through the scene's `_contact`.
"""

from __future__ import annotations

import copy
import enum
from dataclasses import dataclass

import numpy as np

from .. import lie
from .colliders import ColliderType, collider_from_mesh, collider_from_plane, collider_from_sphere
from .grid_sdf import GridSdfCollider, rigid_actor_sdf_padding
from .params import ContactEvalConfig, ContactPairParamsOverride, combine_contact_params
from .potential import BodyCollider, ContactPair, ContactPotential, ContactSamples
from ..params import QueryType
from ..potentials.base import Potential, PotentialTerms
from ..quadrature import boundary_samples


class IncludeNestedActors(enum.Enum):
    NO = 0
    YES = 1


@dataclass(frozen=True)
class ContactPoint:
    """One active contact sample (the reference's ``ContactPoint`` fields), world frame."""

    actor_a: int  # handle of the colliding actor (supplies the sample)
    actor_b: int  # handle of the collider actor
    distance: float  # m, signed distance of the sample to B (negative = penetration)
    element_index: int  # boundary face of A holding the sample
    force: np.ndarray  # (3,) N, force on A at pos_a (penalty + dissipation)
    int_weight: float  # m^2, quadrature weight
    normal: np.ndarray  # (3,) unit normal of B's distance field
    parametric_coords: np.ndarray  # (3,) barycentric coordinates of the sample in its face
    point_velocity_a: np.ndarray  # (3,) m/s
    point_velocity_b: np.ndarray  # (3,) m/s
    pos_a: np.ndarray  # (3,) m
    pos_b: np.ndarray  # (3,) m, pos_a - distance * normal
    sample_index: int


class ContactSystem(Potential):
    """The scene's contact: a `Potential` whose hooks keep the built `ContactPotential` current and fill queries."""

    def __init__(self, scene):
        self._scene = scene
        self._potential = None  # the built ContactPotential, until `drop`
        self._layer_disabled: set = set()  # (layer_colliding, layer_collider)
        self._actor_disabled: set = set()  # (handle_colliding, handle_collider)
        self._overrides: dict = {}  # frozenset{handle_a, handle_b} -> ContactPairParamsOverride
        self._forces = None  # (W, N, 3)
        self._torques = None
        self._points = None  # per world list of ContactPoint
        self.last_contact_points = None  # (actor handles, num worlds, [(worlds, ContactPoints)]) of the last step

    # --- invalidation -------------------------------------------------------------------------------------------
    def invalidate(self) -> None:
        self._scene.composition_changed()

    def edited(self) -> None:
        """An actor's layer, the disabled layer or actor pairs or the pair overrides changed: the next step rebuilds
        the potential. Every edit of them goes through here (the actors and the scene's contact methods)."""
        self._scene.composition_changed()

    def drop(self) -> None:
        """The scene's composition or settings changed (`Scene.composition_changed`, the one caller): the built
        potential is stale (the actors, their contact parameters and CoMs, the layers, disabled pairs, overrides
        and the solver's evaluation switches all change through the scene), so the next `potential` builds anew."""
        self._potential = None

    def before_step(self, scene) -> None:
        self.potential()

    def potential(self):
        if self._potential is None:
            self._potential = self._build()
        return self._potential

    # --- building -----------------------------------------------------------------------------------------------
    def _build(self):
        records = self._scene.actor_records()
        n = len(records)
        if n == 0:
            return None
        samples = [_samples_of(r) for r in records]
        colliders = [_collider_of(r) for r in records]
        pts, wts, nrm, body = [], [], [], []
        for i, (r, s) in enumerate(zip(records, samples)):
            if s is None or r.is_static:
                continue
            pts.append(s.points - r.com_local)
            wts.append(s.weights)
            nrm.append(s.normals)
            body.append(np.full(len(s.weights), i, dtype=np.int64))
        pairs = []
        for a, ra in enumerate(records):
            if ra.is_static or samples[a] is None:
                continue
            for b, rb in enumerate(records):
                if a == b or colliders[b] is None:
                    continue
                if (ra.layer, rb.layer) in self._layer_disabled or (ra.handle, rb.handle) in self._actor_disabled:
                    continue
                override = self._overrides.get(frozenset((ra.handle, rb.handle)))
                params = combine_contact_params(ra.contact, rb.contact, rb.is_static, override)
                add_padding = ra.collider_type in (ColliderType.NONE, ColliderType.POINT_CLOUD)
                pairs.append(ContactPair(a, b, params, add_padding))
        if not pairs:
            return None
        config = ContactEvalConfig.from_experimental(self._scene.contact_evaluation_params())
        return ContactPotential(
            num_bodies=n,
            is_static=[r.is_static for r in records],
            samples=ContactSamples(
                points=np.concatenate(pts) if pts else np.zeros((0, 3)),
                weights=np.concatenate(wts) if wts else np.zeros(0),
                normals=np.concatenate(nrm) if nrm else np.zeros((0, 3)),
                body=np.concatenate(body) if body else np.zeros(0, dtype=np.int64),
            ),
            colliders=[BodyCollider(i, c) for i, c in enumerate(colliders) if c is not None],
            pairs=pairs,
            config=config,
        )

    # --- Potential interface and hooks (sim/potentials/base.py) -----------------------------------------------
    def evaluate(self, ctx, com_position, rotation, want_hessian):
        pot = self.potential()
        if pot is None:
            return PotentialTerms.zeros(com_position.shape[0], com_position.shape[1], want_hessian)
        return pot.evaluate(ctx, com_position, rotation, want_hessian)

    def penetration_depth(self, com_position, rotation):
        pot = self.potential()
        return None if pot is None else pot.penetration_depth(com_position, rotation)

    def after_step(self, scene, report) -> None:
        if not scene.has_registered_queries():
            return
        want_force = scene.is_query_registered(QueryType.TOTAL_CONTACT_FORCE)
        want_points = scene.is_query_registered(QueryType.CONTACT_POINTS)
        if not (want_force or want_points or scene.is_query_registered(QueryType.SDF_DISTANCES)):
            return
        records = scene.actor_records()
        w, n = scene.num_worlds, len(records)
        forces, torques = np.zeros((w, n, 3)), np.zeros((w, n, 3))
        points = [[] for _ in range(w)]
        stage_points = []  # (worlds, ContactPoints) per world group: the per-actor queries read them (actor_queries)
        pot = self.potential()
        if pot is not None:
            for worlds, ctx, com, rot in report.last_stages:
                rep = pot.contact_report(ctx, com, rot)
                stage_points.append((np.asarray(worlds), rep.points))
                forces[worlds] = rep.body_force
                torques[worlds] = rep.body_torque
                if want_points:
                    self._collect_points(scene, rep.points, worlds, ctx, com, rot, points)
        self._forces, self._torques, self._points = forces, torques, points
        self.last_contact_points = (tuple(r.handle for r in records), w, stage_points)

    def _collect_points(self, scene, pts, worlds, ctx, com, rot, out) -> None:
        records = scene.actor_records()
        face_lookup = {}
        for k in range(len(pts.world)):
            wl = int(pts.world[k])
            a, b = int(pts.actor_a[k]), int(pts.actor_b[k])
            if a not in face_lookup:
                face_lookup[a] = _samples_of(records[a])
            s = face_lookup[a]
            idx = int(pts.sample_index[k])
            x = pts.pos_a[k]
            vel = []
            for body in (a, b):
                # point velocity from the stage finite difference of the rigid motion
                c, r = com[wl, body], rot[wl, body]
                c0, r0 = ctx.com_position0[wl, body], ctx.rotation0[wl, body]
                arm = r.T @ (x - c)
                x0 = c0 + r0 @ arm
                vel.append((x - x0) / ctx.stage_dt)
            out[int(worlds[wl])].append(ContactPoint(
                actor_a=records[a].handle, actor_b=records[b].handle, distance=float(pts.distance[k]),
                element_index=int(s.face_index[idx]), force=pts.force[k].copy(), int_weight=float(pts.int_weight[k]),
                normal=pts.normal[k].copy(), parametric_coords=s.barycentric[idx].copy(),
                point_velocity_a=vel[0], point_velocity_b=vel[1], pos_a=x.copy(), pos_b=pts.pos_b[k].copy(),
                sample_index=idx,
            ))

    def on_actor_destroyed(self, actor, row) -> None:
        h = actor.get_handle()
        self._actor_disabled = {p for p in self._actor_disabled if h not in p}
        self._overrides = {k: v for k, v in self._overrides.items() if h not in k}
        self._forces = self._torques = self._points = None
        self.edited()
        self.invalidate()

    def on_num_worlds_changed(self, num_worlds) -> None:
        self._forces = self._torques = self._points = None

    # --- queries ------------------------------------------------------------------------------------------------
    def contact_force(self, row: int, world: int):
        self._scene._require_query(QueryType.TOTAL_CONTACT_FORCE, "get_contact_force_world")
        if self._forces is None:
            return np.zeros(3), np.zeros(3)
        return self._forces[world, row].copy(), self._torques[world, row].copy()

    def contact_points(self, handle: int, world: int) -> list:
        self._scene._require_query(QueryType.CONTACT_POINTS, "get_contact_points_world")
        if self._points is None:
            return []
        return [p for p in self._points[world] if handle in (p.actor_a, p.actor_b)]

    def distance_to_surface(self, record, row: int, points_world: np.ndarray, world: int) -> np.ndarray:
        collider = _collider_of(record)
        if collider is None:
            raise ValueError(f"actor {record.name!r} has no collider (collider type NONE)")
        cur = self._scene.current_kinematics()
        c, r = cur.com_position[world, row], cur.rotation[world, row]
        local = (points_world - c) @ r  # R^T (x - c) for each row
        return collider.evaluate(local).phi


_MESH_COLLIDER_CACHE: dict = {}
_MESH_COLLIDER_CACHE_SIZE = 64


def _samples_of(record):
    """Surface samples of an actor with a mesh (local frame, cached on the record); None without a mesh."""
    cached = getattr(record, "_contact_samples", None)
    key = (record.boundary_element_type, record.boundary_subsampling)
    if cached is not None and cached[0] == key:
        return cached[1]
    if not record.shape.has_surface_mesh:
        samples = None
    else:
        samples = boundary_samples(record.shape.vertices, record.shape.triangles, record.boundary_element_type,
                                   record.boundary_subsampling)
    record._contact_samples = (key, samples)
    return samples


def _collider_of(record):
    """The actor's collider in its CoM-centred body frame (cached on the record); None for ColliderType.NONE."""
    key = (record.collider_type, record.com_local.tobytes(), repr(record.sdf),
           record.contact.get_penalty_threshold_dist(False))
    cached = getattr(record, "_contact_collider", None)
    if cached is not None and cached[0] == key:
        return cached[1]
    shape, ctype = record.shape, record.collider_type
    if ctype is ColliderType.NONE:
        collider = None
    elif shape.kind == "plane":
        collider = collider_from_plane(ctype, shape.normal, shape.distance)
    elif shape.kind == "sphere":
        collider = collider_from_sphere(ctype, shape.center, shape.radius)
    elif ctype is ColliderType.SDF and shape.sdf is not None and shape.sdf.get("scale") is None \
            and shape.sdf.get("rotation") is None and shape.sdf.get("translation") is None:
        sdf = shape.sdf  # baked into the shape file: use it as it is
        collider = GridSdfCollider(sdf["values"], sdf["bounds"]["min"], sdf["bounds"]["max"],
                                   (sdf["negative_value_bounds"]["min"], sdf["negative_value_bounds"]["max"]))
    else:
        padding = rigid_actor_sdf_padding(record.contact)
        # Shapes are immutable, so a mesh collider is shared by every actor and scene using the same shape,
        # collider type, grid parameters and padding (grid SDF builds dominate scene set-up otherwise).
        mesh_key = (shape.handle, ctype, repr(record.sdf), padding)
        collider = _MESH_COLLIDER_CACHE.get(mesh_key)
        if collider is None:
            collider = collider_from_mesh(ctype, shape.vertices, shape.triangles, record.sdf, padding)
            if len(_MESH_COLLIDER_CACHE) >= _MESH_COLLIDER_CACHE_SIZE:
                _MESH_COLLIDER_CACHE.pop(next(iter(_MESH_COLLIDER_CACHE)))
            _MESH_COLLIDER_CACHE[mesh_key] = collider
    if collider is not None and np.any(record.com_local != 0.0):
        collider = collider.translated(-record.com_local)
    record._contact_collider = (key, collider)
    return collider


class ContactSceneMixin:
    """The reference's contact filtering and per-pair override methods on `Scene`."""

    @property
    def _contact(self) -> ContactSystem:
        return self._contact_system

    def _handle_of(self, actor_or_handle) -> int:
        return self.get_actor(actor_or_handle).get_handle()

    # --- layers -------------------------------------------------------------------------------------------------
    def enable_layer_contact_asymmetric(self, layer_a: str, layer_b: str, enable: bool = True) -> None:
        """Contact of actors on ``layer_a`` (colliding) against actors on ``layer_b`` (collider)."""
        for name, layer in (("layer_a", layer_a), ("layer_b", layer_b)):
            if not isinstance(layer, str):
                raise TypeError(f"{name} must be a string, got {layer!r}")
        pair = (layer_a, layer_b)
        if enable:
            self._contact._layer_disabled.discard(pair)
        else:
            self._contact._layer_disabled.add(pair)
        self._contact.edited()

    def enable_layer_contact_symmetric(self, layer_a: str, layer_b: str, enable: bool = True) -> None:
        self.enable_layer_contact_asymmetric(layer_a, layer_b, enable)
        self.enable_layer_contact_asymmetric(layer_b, layer_a, enable)

    def is_layer_contact_enabled(self, layer_a: str, layer_b: str) -> bool:
        return (layer_a, layer_b) not in self._contact._layer_disabled

    def enumerate_contact_layer_names(self) -> list:
        names = {r.layer for r in self._records}
        for a, b in self._contact._layer_disabled:
            names.update((a, b))
        return sorted(names)

    def get_num_contact_layers(self) -> int:
        return len(self.enumerate_contact_layer_names())

    # --- actor pairs --------------------------------------------------------------------------------------------
    def enable_actor_contact_asymmetric(self, actor_a, actor_b, enable: bool = True,
                                        include_nested_actors: IncludeNestedActors = IncludeNestedActors.NO) -> None:
        """Contact of ``actor_a`` (colliding) against ``actor_b`` (collider). Rigid actors have no nested actors,
        so ``include_nested_actors`` changes nothing here. A layer-disabled pair stays disabled."""
        if not isinstance(include_nested_actors, IncludeNestedActors):
            raise TypeError("include_nested_actors must be an IncludeNestedActors")
        pair = (self._handle_of(actor_a), self._handle_of(actor_b))
        if enable:
            self._contact._actor_disabled.discard(pair)
        else:
            self._contact._actor_disabled.add(pair)
        self._contact.edited()

    def enable_actor_contact_symmetric(self, actor_a, actor_b, enable: bool = True,
                                       include_nested_actors: IncludeNestedActors = IncludeNestedActors.NO) -> None:
        self.enable_actor_contact_asymmetric(actor_a, actor_b, enable, include_nested_actors)
        self.enable_actor_contact_asymmetric(actor_b, actor_a, enable, include_nested_actors)

    def is_actor_contact_enabled(self, actor_a, actor_b) -> bool:
        """Both gates: the actors' layers and the actor pair (A colliding against B)."""
        a, b = self.get_actor(actor_a), self.get_actor(actor_b)
        return (self.is_layer_contact_enabled(a.get_layer(), b.get_layer())
                and (a.get_handle(), b.get_handle()) not in self._contact._actor_disabled)

    # --- per-pair overrides -----------------------------------------------------------------------------------
    def set_contact_pair_params_override(self, actor_a, actor_b, override: ContactPairParamsOverride) -> None:
        if not isinstance(override, ContactPairParamsOverride):
            raise TypeError(f"override must be a ContactPairParamsOverride, got {type(override).__name__}")
        override = copy.deepcopy(override)
        for name, value in vars(override).items():
            if value is not None and (not np.isfinite(float(value)) or float(value) < 0):
                raise ValueError(f"ContactPairParamsOverride.{name} must be finite and >= 0, got {value}")
        key = frozenset((self._handle_of(actor_a), self._handle_of(actor_b)))
        if len(key) != 2:
            raise ValueError("a contact pair override needs two different actors")
        self._contact._overrides[key] = override
        self._contact.edited()

    def clear_contact_pair_params_override(self, actor_a, actor_b) -> None:
        self._contact._overrides.pop(frozenset((self._handle_of(actor_a), self._handle_of(actor_b))), None)
        self._contact.edited()

    def has_contact_pair_params_override(self, actor_a, actor_b) -> bool:
        return frozenset((self._handle_of(actor_a), self._handle_of(actor_b))) in self._contact._overrides

    def get_contact_pair_params_override(self, actor_a, actor_b):
        key = frozenset((self._handle_of(actor_a), self._handle_of(actor_b)))
        if key not in self._contact._overrides:
            raise KeyError("no contact pair override for these actors")
        return copy.deepcopy(self._contact._overrides[key])
