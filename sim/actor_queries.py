"""Per-actor queries of the reference API (``actor.register_query(QueryType...)``) over the scene's query machinery.

A scene computes a query's results for every actor when the query is registered on the scene
(``scene.register_query``) or on any of its actors; `ActorQueryRegistry` holds the actors' registrations (one
`QueryHandle` each, cancelled one by one, as the reference's reference-counted queries). Per-actor getters, as in
the released engine, raise `Error` when the actor has no registration of the query, or when no step has run
since it was registered; scene-level registrations keep their behaviour (zeros before the first step).

The results come from the contact system's last-step contact report (`ContactSystem.last_contact_points`: the
active samples with their forces, one row per world, pair and sample), so the force from one actor, the batch
sum over actor/collider pairs and the SDF distances are sums and selections of the rows the total contact force
already came from; nothing is re-evaluated.
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np

from .geometry_types import Error, QueryHandle, SdfDistances
from .params import QueryType

_QUERY_HANDLES = itertools.count(1)


class ResultsPendingError(Error):
    """A query registered after the last step: its results come with the next step."""

# What ``register_query`` accepts on a rigid actor here. The released engine also supports SURFACE_NODE_POSITIONS,
# SURFACE_NODE_NORMALS and NODE_CONTACT_FORCES on rigid mesh actors (not implemented: docs/api_parity.md).
_CONTACT_SAMPLE_QUERIES = (QueryType.TOTAL_CONTACT_FORCE, QueryType.CONTACT_POINTS)
# None of these can be computed immediately in the released engine (register_query_and_compute warns, registers).
_NOT_IMMEDIATE = (QueryType.TOTAL_CONTACT_FORCE, QueryType.CONTACT_POINTS, QueryType.SDF_DISTANCES)


def as_query_type(value, name: str = "type") -> QueryType:
    """A QueryType, or its integer value (the reference accepts ``QueryType | int``)."""
    if isinstance(value, QueryType):
        return value
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        try:
            return QueryType(int(value))
        except ValueError:
            pass
    raise TypeError(f"{name} must be a QueryType (or its integer value), got {value!r}")


def unsupported_reason(record, query_type: QueryType) -> str | None:
    """Why a rigid actor cannot take ``query_type`` (the released engine's rules), or None if it can."""
    if query_type is QueryType.SDF_DISTANCES:
        return None
    if query_type in _CONTACT_SAMPLE_QUERIES:
        if record.is_static or not record.shape.has_surface_mesh:
            return "contact queries are only supported for actors with contact sample points (dynamic mesh actors)"
        return None
    if query_type is QueryType.COUNT:
        return "QueryType.COUNT is not a query"
    return f"QueryType.{query_type.name} is not supported for rigid actors here (docs/api_parity.md)"


class ActorQueryRegistry:
    """The scene's per-actor query registrations: QueryHandle value -> (actor handle, type, step count then)."""

    def __init__(self, scene):
        self._scene = scene
        self._entries: dict = {}

    def register(self, actor, query_type, compute_now: bool) -> QueryHandle:
        qt = as_query_type(query_type)
        record = actor._record
        actor._row()
        reason = unsupported_reason(record, qt)
        if reason is not None:
            raise Error(f"register_query({qt.name}) on actor {record.name!r}: {reason}")
        if compute_now and qt in _NOT_IMMEDIATE:
            warnings.warn(f"QueryType.{qt.name} does not support immediate computation; its results are available "
                          "after the next simulation step (as in the released engine)", stacklevel=3)
        handle = QueryHandle(next(_QUERY_HANDLES))
        self._entries[handle.value] = (record.handle, qt, self._scene._num_query_steps)
        return handle

    def cancel(self, actor, handle) -> None:
        """Cancel ``handle`` (registered on ``actor``); an invalid or already-cancelled handle has no effect."""
        if not isinstance(handle, QueryHandle):
            raise TypeError(f"handle must be a QueryHandle, got {type(handle).__name__}")
        entry = self._entries.get(handle.value)
        if entry is not None and entry[0] == actor._record.handle:
            del self._entries[handle.value]

    def has_entries(self) -> bool:
        return bool(self._entries)

    def is_active(self, query_type: QueryType) -> bool:
        return bool(self._entries) and any(qt is query_type for _, qt, _ in self._entries.values())

    def on_actor_destroyed(self, actor_handle: int) -> None:
        self._entries = {k: v for k, v in self._entries.items() if v[0] != actor_handle}

    def require(self, actor, query_type: QueryType, what: str) -> None:
        """Raise `Error` unless ``actor`` (or the scene) has ``query_type`` registered with results computed."""
        scene = self._scene
        if query_type in scene._queries:
            return
        steps = [n for h, qt, n in self._entries.values() if h == actor._record.handle and qt is query_type]
        if not steps:
            raise Error(f"{what} needs actor.register_query(QueryType.{query_type.name}) (or the scene's) before "
                        f"stepping; actor {actor.get_name()!r} has none")
        if min(steps) >= scene._num_query_steps:
            raise ResultsPendingError(f"{what}: QueryType.{query_type.name} was registered on actor {actor.get_name()!r} after the "
                        "last step; its results are available after the next simulation step")


class ConstraintQueryRegistry:
    """The scene's per-constraint query registrations (``constraint.register_query``): QueryHandle value ->
    (owner, type), owner ``("rigid", handle)`` or ``("articulated", handle)`` (the two count apart). Like a
    scene-level registration, a live one makes every step compute every constraint's force."""

    def __init__(self):
        self._entries: dict = {}

    def register(self, owner: tuple, query_type, what: str) -> QueryHandle:
        qt = as_query_type(query_type)
        if qt is not QueryType.CONSTRAINT_FORCE:
            raise Error(f"register_query({qt.name}) on {what}: constraints support QueryType.CONSTRAINT_FORCE only")
        handle = QueryHandle(next(_QUERY_HANDLES))
        self._entries[handle.value] = (owner, qt)
        return handle

    def cancel(self, owner: tuple, handle) -> None:
        """Cancel ``handle`` (registered on ``owner``); an invalid or already-cancelled handle has no effect."""
        if not isinstance(handle, QueryHandle):
            raise TypeError(f"handle must be a QueryHandle, got {type(handle).__name__}")
        entry = self._entries.get(handle.value)
        if entry is not None and entry[0] == owner:
            del self._entries[handle.value]

    def forget(self, owner: tuple) -> None:
        """The constraint ``owner`` was destroyed: its registrations go with it."""
        self._entries = {k: v for k, v in self._entries.items() if v[0] != owner}

    def is_active(self, query_type: QueryType) -> bool:
        return any(qt is query_type for _, qt in self._entries.values())

    def has_entries(self) -> bool:
        return bool(self._entries)


# --- results from the last step's contact rows ----------------------------------------------------------------------


def _stage_rows(scene, world: int):
    """The last step's active contact rows of world ``world``: (actor handles by body index, [ContactPoints row
    mask, ContactPoints] per world group)."""
    data = scene._contact.last_contact_points
    if data is None or data[1] != scene.num_worlds:
        return (), []
    handles, _, stages = data
    return handles, [(worlds[pts.world] == world, pts) for worlds, pts in stages]


def pair_force_matrix(scene, world: int) -> tuple[tuple, np.ndarray]:
    """(handles, F) with F[i, j] (3,) the contact force [N] on body i from body j in the last step (world frame).

    A row's force acts on its colliding actor a at the sample and, reversed, on the collider b, so summing F over
    j gives each body's total contact force."""
    handles, stages = _stage_rows(scene, world)
    n = len(handles)
    directed = np.zeros((n, n, 3))  # [a, b]: the forces of rows with colliding actor a and collider b, on a
    for mask, pts in stages:
        np.add.at(directed, (pts.actor_a[mask], pts.actor_b[mask]), pts.force[mask])
    # D - D^T: Newton's third law holds exactly (F[j, i] == -F[i, j] in floating point too)
    return handles, directed - directed.transpose(1, 0, 2)


def force_from_actor(scene, actor, other, world: int) -> np.ndarray:
    handles, forces = pair_force_matrix(scene, world)
    index = {h: i for i, h in enumerate(handles)}
    i, j = index.get(actor._record.handle), index.get(other._record.handle)
    if i is None or j is None:
        return np.zeros(3)
    return forces[i, j].copy()


def sdf_distances(scene, actor, world: int) -> SdfDistances:
    handles, stages = _stage_rows(scene, world)
    if actor._record.handle not in handles:
        return SdfDistances()
    body = handles.index(actor._record.handle)
    parts = [(pts, mask & (pts.actor_a == body)) for mask, pts in stages]
    return SdfDistances(
        sample_indices=np.concatenate([p.sample_index[m] for p, m in parts] or [np.zeros(0, dtype=np.int64)]),
        world_positions=np.concatenate([p.pos_a[m] for p, m in parts] or [np.zeros((0, 3))]),
        distances=np.concatenate([p.distance[m] for p, m in parts] or [np.zeros(0)]),
        distance_grads=np.concatenate([p.normal[m] for p, m in parts] or [np.zeros((0, 3))]),
    )


def contact_force_batch(scene, actors, colliders, world: int) -> float:
    """Sum over actors a and colliders b (a != b) of |force on a from b| [N] (the released engine's
    ``experimental.get_contact_force_world_batch``: a stacked cube pair counts both directions)."""
    handles, forces = pair_force_matrix(scene, world)
    index = {h: i for i, h in enumerate(handles)}
    rows = np.array([index.get(a._record.handle, -1) for a in actors], dtype=np.int64)
    cols = np.array([index.get(b._record.handle, -1) for b in colliders], dtype=np.int64)
    rows, cols = rows[rows >= 0], cols[cols >= 0]
    if rows.size == 0 or cols.size == 0:
        return 0.0
    norms = np.linalg.norm(forces[np.ix_(rows, cols)], axis=-1)
    norms[rows[:, None] == cols[None, :]] = 0.0
    return float(norms.sum())
