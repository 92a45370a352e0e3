"""`Scene`: the reference engine's scene API over the compiled model and the batched state.

A scene holds actors (rows of the model), the batched state with W worlds (``set_num_worlds``), gravity and solver
parameters. ``step(dt)`` advances all worlds in one call. Per-world reads and writes go through the actor methods'
``world`` argument or the batched accessors (``get_actor_poses`` / ``set_actor_poses`` / ...), which an environment
uses to reset one world while the others run.
"""

from __future__ import annotations

import copy
import itertools
import math
import time
import warnings
from dataclasses import dataclass

import numpy as np

from . import lie
from .step import pipeline
from .actor import RigidActor
from .actor_queries import ActorQueryRegistry, ConstraintQueryRegistry
from .articulated.params import (
    Articulated3dRotationRangeConstraintParams, Articulated3dRotationTargetConstraintParams, ArticulatedActorParams,
    ArticulatedSingleDofRangeConstraintParams, ArticulatedSingleDofTargetConstraintParams,
)
from .articulated import coupled
from .articulated.actor import ArticulatedActor, ArticulatedLinkActor
from .articulated import constraints as articulated_constraints
from .articulated.system import ArticulationSystem
from .constraints.system import ConstraintSceneMixin
from .contact.system import ContactSceneMixin, ContactSystem
from .geometry_types import SceneHandle
from .model import Kinematics, Model, State, compile_bodies
from .params import (
    DEFAULT_GRAVITY,
    ConvergenceStatus,
    PerformanceStats,
    QueryType,
    RigidActorParams,
    SolverParams,
    SolverStats,
)
from .potentials.base import Potential
from .scene_setup import build_actor_record
from .tunnelling import tunnelling_geometry, tunnelling_kernel_inputs, tunnelling_ratio
from .validation import MIN_TIME_STEP_S
from .state_io import StateStore
from .transforms import as_vector3

_CALLBACK_HANDLES = itertools.count(1)
_SCENE_HANDLES = itertools.count(1)


@dataclass
class _Callback:
    handle: int
    fn: object
    priority: int
    order: int


class Scene(ConstraintSceneMixin, ContactSceneMixin):
    DEFAULT_CALLBACK_PRIORITY = 100  # the reference's; our callbacks default to 0 (docs/api_parity.md)

    def __init__(self, name: str = ""):
        if not isinstance(name, str):
            raise TypeError(f"scene name must be a string, got {name!r}")
        self.name = name
        self._records: list = []  # actor records in model row order
        self._rows_cache: dict = {}  # tuple of actors -> their rows (`_rows`)
        self._row_index: dict = {}  # id(record) -> row, a cache `_row_of` checks and rebuilds
        self._actors: dict = {}  # handle -> RigidActor
        self._gravity = np.array(DEFAULT_GRAVITY, dtype=np.float64)
        self._solver = SolverParams()
        self._model: Model | None = None
        self._state = _empty_state(1)
        self._actor_status = np.zeros((1, 0), dtype=np.int64)
        self._stats = SolverStats()
        self._perf = PerformanceStats()
        self._callbacks = {"pre": [], "post": []}
        self._callback_order = itertools.count()
        self._next_actor_handle = 1  # per scene: a state restores into any scene built alike
        self._store = StateStore(self)
        self._extra_potentials: list = []  # contact / constraint potentials registered by other modules
        self._step_warnings = True  # set_step_warnings
        self._compiled = None  # pipeline.CompiledModel, built when a step first needs it (composition_changed)
        self._queries: set = set()
        self._actor_queries = ActorQueryRegistry(self)
        self._constraint_queries = ConstraintQueryRegistry()
        self._num_query_steps = 0  # steps that computed query results (per-actor queries are valid after one)
        self._force_single_island = False
        self._handle = SceneHandle(next(_SCENE_HANDLES))
        self._sleep_params = None  # experimental.SleepParams once set (sim/experimental.py)
        self._last_report = None
        # (tunnelling_geometry, dynamic mask, the kernel's inputs), built with the compiled model
        self._tunnelling = None
        self._tunnelling_ratio = np.zeros(1)  # (W,) of the last step
        self._contact_system = ContactSystem(self)
        self._extra_potentials.append(self._contact_system)
        self._articulations = None  # ArticulationSystem, registered with the first articulated actor
        self._nested: dict = {}  # handle -> ArticulatedActor or its link actors
        self.alive = True

    # --- identity ----------------------------------------------------------------------------------------------------
    def get_name(self) -> str:
        return self.name

    def get_handle(self) -> SceneHandle:
        return self._handle

    # --- gravity and solver parameters --------------------------------------------------------------------------
    def get_gravity(self) -> np.ndarray:
        return self._gravity.copy()

    def set_gravity(self, gravity) -> None:
        self._gravity = as_vector3(gravity, "gravity")
        self.composition_changed()

    def get_solver_params(self) -> SolverParams:
        return copy.deepcopy(self._solver)

    def set_solver_params(self, params: SolverParams) -> None:
        if not isinstance(params, SolverParams):
            raise TypeError(f"expected SolverParams, got {type(params).__name__}")
        self._solver = copy.deepcopy(params).validate()
        self.composition_changed()

    def get_solver_stats(self) -> SolverStats:
        if self._stats is None:
            report, worst, max_ratio, _ = self._stats_from
            self._stats = SolverStats(
                convergence_status=ConvergenceStatus(worst),
                max_non_linear_iters=report.max_iterations,
                max_line_search_iters=report.max_line_search_iterations,
                residual_norm=report.residual_norm,
                max_tunnelling_ratio=max_ratio,
            )
        return copy.deepcopy(self._stats)

    def get_performance_stats(self) -> PerformanceStats:
        if self._perf is None:
            report, _, _, total = self._stats_from
            self._perf = PerformanceStats(
                total_step_time=total,
                assembly_time=report.assembly_time,
                linear_solve_time=report.solve_time,
                line_search_time=report.line_search_time,
                num_stages=report.num_stages,
            )
        return copy.deepcopy(self._perf)

    def get_last_time_step(self) -> float:
        return self._state.last_dt

    def get_total_simulation_time(self) -> float:
        return self._state.time

    # --- worlds ---------------------------------------------------------------------------------------------------
    @property
    def num_worlds(self) -> int:
        return self._state.num_worlds

    def get_num_worlds(self) -> int:
        return self._state.num_worlds

    def set_num_worlds(self, num_worlds: int) -> None:
        """Replicate world 0 into ``num_worlds`` worlds sharing this scene's model."""
        if isinstance(num_worlds, bool) or not isinstance(num_worlds, (int, np.integer)) or num_worlds < 1:
            raise ValueError(f"num_worlds must be an integer >= 1, got {num_worlds!r}")
        self._state = _replicate_world(self._state, 0, int(num_worlds))
        self._actor_status = np.repeat(self._actor_status[:1], num_worlds, axis=0)
        for pot in self._extra_potentials:
            pot.on_num_worlds_changed(int(num_worlds))
        self.composition_changed()

    def _check_world(self, world) -> int:
        if isinstance(world, bool) or not isinstance(world, (int, np.integer)):
            raise TypeError(f"world must be an integer, got {world!r}")
        if not 0 <= world < self.num_worlds:
            raise IndexError(f"world {world} out of range for a scene with {self.num_worlds} worlds")
        return int(world)

    def _worlds(self, world) -> np.ndarray:
        """None -> every world; an int or a sequence of ints -> those worlds (validated)."""
        if world is None:
            return np.arange(self.num_worlds)
        arr = np.atleast_1d(np.asarray(world))
        if arr.ndim != 1 or not np.issubdtype(arr.dtype, np.integer):
            raise TypeError(f"world must be an integer or a sequence of integers, got {world!r}")
        if np.any((arr < 0) | (arr >= self.num_worlds)):
            raise IndexError(f"world index out of range for a scene with {self.num_worlds} worlds: {arr.tolist()}")
        return arr.astype(np.int64)

    # --- actors ---------------------------------------------------------------------------------------------------
    def create_rigid_actor(self, params: RigidActorParams | None = None, **kwargs) -> RigidActor:
        """Create a rigid actor from a ``RigidActorParams`` or the same fields as keyword arguments."""
        if params is not None and kwargs:
            raise TypeError("pass either a RigidActorParams or keyword arguments, not both")
        if params is None:
            known = RigidActorParams.__dataclass_fields__
            unknown = sorted(set(kwargs) - set(known))
            if unknown:
                raise TypeError(f"create_rigid_actor got unknown arguments {unknown}; valid: {sorted(known)}")
            params = RigidActorParams(**kwargs)
        elif not isinstance(params, RigidActorParams):
            raise TypeError(f"expected RigidActorParams, got {type(params).__name__}")
        record, pose = build_actor_record(params, self._next_actor_handle)  # validates before the scene changes
        self._records.append(record)
        self._state = _append_actor(self._state, *pose)
        self._actor_status = np.concatenate(
            [self._actor_status, np.full((self.num_worlds, 1), ConvergenceStatus.NOT_STARTED.value)], axis=1
        )
        actor = RigidActor(self, record)
        self._actors[record.handle] = actor
        self._next_actor_handle += 1  # only once the actor exists: a rejected one changes nothing
        self._mark_dirty()
        return actor

    def create_articulated_actor(self, params=None, **kwargs):
        """Create an articulated actor from an ``ArticulatedActorParams`` or its fields as keyword arguments. The
        whole of it is validated first: on any error the scene is unchanged. Its links become actors of the scene
        named ``<actor>/<link>`` (``get_nested_link_actors``)."""
        if params is not None and kwargs:
            raise TypeError("pass either an ArticulatedActorParams or keyword arguments, not both")
        if params is None:
            unknown = sorted(set(kwargs) - set(ArticulatedActorParams.__dataclass_fields__))
            if unknown:
                raise TypeError(f"create_articulated_actor got unknown arguments {unknown}")
            params = ArticulatedActorParams(**kwargs)
        system = self._articulations or ArticulationSystem(self)
        actor, records, rows = system.create(params, self._next_actor_handle)  # validates before the scene changes
        if self._articulations is None:
            self._articulations = system
            self._extra_potentials.append(system)
        links = []
        for i, (record, row) in enumerate(zip(records, rows)):
            self._records.append(record)
            self._state = _append_actor(self._state, *row)
            links.append(ArticulatedLinkActor(self, record, actor, i))
            self._actors[record.handle] = links[-1]
        self._actor_status = np.concatenate(
            [self._actor_status, np.full((self.num_worlds, len(links)), ConvergenceStatus.NOT_STARTED.value)], axis=1)
        system.add(actor, links)
        self._nested[actor.get_handle()] = actor
        self._next_actor_handle += 1 + len(links)
        self._mark_dirty()
        for child, parent in enumerate(actor.model.parent):
            if parent >= 0:  # adjacent links do not collide by default (enable_actor_contact_symmetric re-enables)
                self.enable_actor_contact_symmetric(links[child], links[parent], False)
        return actor

    def create_articulated_single_dof_target_constraint(self, params=None, **kwargs):
        """A drive on one DoF of an articulated actor: k/2 (q - target)^2 with damping and optional saturation (the
        reference's params or their fields as keyword arguments). Returns its `ArticulatedConstraint`."""
        return articulated_constraints.create(self, _params_of(ArticulatedSingleDofTargetConstraintParams, params,
                                                               kwargs))

    def create_articulated_single_dof_range_constraint(self, params=None, **kwargs):
        """A soft range [min_value, max_value] on one DoF of an articulated actor."""
        return articulated_constraints.create(self, _params_of(ArticulatedSingleDofRangeConstraintParams, params,
                                                               kwargs))

    def create_articulated3d_rotation_target_constraint(self, params=None, **kwargs):
        """A rotation target on a SPHERICAL / FREE joint: k/2 |log(R_j R_t^T)|^2 with damping and saturation."""
        return articulated_constraints.create(self, _params_of(Articulated3dRotationTargetConstraintParams, params,
                                                               kwargs))

    def create_articulated3d_rotation_range_constraint(self, params=None, **kwargs):
        """A soft range [min_values, max_values] (rad) on a SPHERICAL / FREE joint's rotation vector."""
        return articulated_constraints.create(self, _params_of(Articulated3dRotationRangeConstraintParams, params,
                                                               kwargs))

    def get_constraints(self) -> list:
        """Every live constraint: the rigid ones in creation order, then the articulated ones in creation order."""
        extra = [] if self._articulations is None else list(self._articulations.constraints.values())
        return super().get_constraints() + extra

    def get_num_constraints(self) -> int:
        """Rigid and articulated constraints."""
        extra = 0 if self._articulations is None else len(self._articulations.constraints)
        return super().get_num_constraints() + extra

    def destroy_constraint(self, constraint_or_handle) -> None:
        """As the rigid constraints' (sim/constraints/system.py); an `ArticulatedConstraint` is given as the object."""
        if isinstance(constraint_or_handle, articulated_constraints.ArticulatedConstraint):
            if self._articulations is None:  # its actor went with the scene's last articulation, or another scene's
                constraint_or_handle._live()
                raise ValueError(f"{constraint_or_handle!r} belongs to another scene")
            self._articulations.destroy_constraint(constraint_or_handle)
            return
        super().destroy_constraint(constraint_or_handle)

    def get_actor(self, actor):
        """The actor with handle ``actor`` (an actor is accepted too)."""
        if isinstance(actor, ArticulatedActor):
            if actor.get_scene() is not self:
                raise ValueError(f"actor {actor.get_name()!r} belongs to another scene, not {self.name!r}")
            actor = actor.get_handle()
        if not isinstance(actor, RigidActor) and actor in self._nested:
            return self._nested[actor]
        if isinstance(actor, RigidActor):
            if actor._scene is not self:  # handles count per scene: another scene's actor may share a handle
                raise ValueError(f"actor {actor.get_name()!r} belongs to another scene, not {self.name!r}")
            handle = actor.get_handle()
        else:
            handle = actor
        try:
            return self._actors[handle]
        except KeyError:
            raise KeyError(f"no actor with handle {handle!r} in scene {self.name!r}") from None

    def get_actors(self) -> list:
        """Rigid and link actors in model row order, then the articulated actors in creation order."""
        return [self._actors[r.handle] for r in self._records] + list(self._nested.values())

    def find_actor(self, name: str):
        for r in self._records:
            if r.name == name:
                return self._actors[r.handle]
        return next((a for a in self._nested.values() if a.get_name() == name), None)

    def for_each_actor(self, callback) -> None:
        for actor in self.get_actors():
            callback(actor)

    def get_num_actors(self) -> int:
        """Rigid actors, articulated actors and their links (each link is an actor, as in the engine)."""
        return len(self._records) + len(self._nested)

    def get_articulated_actors(self) -> list:
        return [] if self._articulations is None else list(self._articulations.actors)

    def destroy_actor(self, actor) -> None:
        """Destroy ``actor`` (an actor or its handle); an articulated actor goes with its links."""
        actor = self.get_actor(actor)
        if isinstance(actor, ArticulatedActor):
            self._destroy_articulated(actor)
            return
        if isinstance(actor, ArticulatedLinkActor):
            raise ValueError(f"link actor {actor.get_name()!r} belongs to an articulated actor: destroy the "
                             f"articulated actor (handle {actor.get_articulated_actor()}) instead")
        self._destroy_row(actor)

    def _destroy_row(self, actor) -> None:
        row = self._row_of(actor._record)
        for hook in list(self._destroy_hooks()):
            hook(actor, row)
        actor._record.alive = False
        self._actor_queries.on_actor_destroyed(actor.get_handle())
        del self._records[row]
        del self._actors[actor.get_handle()]
        self._state = _delete_actor(self._state, row)
        self._actor_status = np.delete(self._actor_status, row, axis=1)
        self._mark_dirty()

    def _destroy_articulated(self, actor) -> None:
        for link in list(actor._link_actors):
            self._destroy_row(link)
        del self._nested[actor.get_handle()]
        self._articulations.remove(actor)
        if not self._articulations.actors:  # the scene's rigid solver path and its bits come back
            self._extra_potentials.remove(self._articulations)
            self._articulations = None
        self._mark_dirty()

    # --- queries ----------------------------------------------------------------------------------------------------
    def register_query(self, query_type: QueryType) -> None:
        """Enable a query before stepping (its results are filled by the following steps)."""
        if not isinstance(query_type, QueryType):
            raise TypeError(f"expected a QueryType, got {query_type!r}")
        self._queries.add(query_type)

    def unregister_query(self, query_type: QueryType) -> None:
        self._queries.discard(query_type)

    def has_registered_queries(self) -> bool:
        """True when any query is registered on the scene or on an actor (the step's query work is skipped else)."""
        return bool(self._queries) or self._actor_queries.has_entries() or self._constraint_queries.has_entries()

    def is_query_registered(self, query_type: QueryType) -> bool:
        """True when steps compute this query's results: registered on the scene or on any of its actors."""
        return (query_type in self._queries or self._actor_queries.is_active(query_type)
                or self._constraint_queries.is_active(query_type))

    def _require_query(self, query_type: QueryType, what: str) -> None:
        if not self.is_query_registered(query_type):
            raise RuntimeError(
                f"{what} needs scene.register_query(QueryType.{query_type.name}) before stepping"
            )

    # --- extension protocol: potentials and their hooks (sim/potentials/base.py, `Potential`) ------------------
    def add_potential(self, potential: Potential) -> None:
        """Add a physical effect: a `Potential` subclass (sim/potentials/base.py) implementing ``evaluate``; it is
        summed into every stage's Newton solve and its hooks are called around steps and scene changes."""
        if not isinstance(potential, Potential):
            raise TypeError(
                f"potential must subclass superdex_gym.sim.potentials.base.Potential, got {type(potential).__name__}")
        self._extra_potentials.append(potential)
        self.composition_changed()

    def remove_potential(self, potential) -> None:
        self._extra_potentials.remove(potential)
        self.composition_changed()

    def _destroy_hooks(self):
        return [p.on_actor_destroyed for p in self._extra_potentials]

    def _row_of(self, record) -> int:
        # A dict from record identity to row, checked against the list (so a stale entry is never trusted) and
        # rebuilt when it misses: the batched getters look up every actor's row on every call.
        row = self._row_index.get(id(record))
        if row is None or row >= len(self._records) or self._records[row] is not record:
            self._row_index = {id(r): i for i, r in enumerate(self._records)}
            row = self._row_index.get(id(record))
            if row is None:
                raise RuntimeError(f"actor {record.name!r} is not in scene {self.name!r}")
        return row

    def _mark_dirty(self) -> None:
        self._model = None
        self._rows_cache = {}  # actors added or removed move rows
        self.composition_changed()

    def composition_changed(self) -> None:
        """Something a step's compiled model holds changed (actors or their mass properties, contact layers, pairs
        or overrides, constraints added or removed, potentials, solver settings, gravity, world count): the next
        step builds a new one (sim/step/compiled_model.py). Every such change calls this; nothing else invalidates
        it."""
        self._compiled = None
        self._tunnelling = None
        self._contact_system.drop()

    def _compiled_model(self):
        """The current compiled model, built if a change dropped it (or the module switches changed: tests and
        debugging flip them, sim/step/pipeline.py)."""
        cm = self._compiled
        if cm is None or cm.num_worlds != self._state.num_worlds or cm.switches != pipeline.switches():
            cm = self._compiled = pipeline.compile_model(self.get_model(), self._solver, self._gravity,
                                                         self._extra_potentials, self._state.num_worlds)
        return cm

    def compiled_model(self) -> Model | None:
        """The compiled model if it is current, else None (nothing is compiled here: `get_model` does that)."""
        return self._model

    def get_model(self) -> Model:
        """The compiled model (rebuilt after actors or their mass properties change)."""
        if self._model is None:
            self._model = Model(bodies=compile_bodies(self._records))
        return self._model

    # --- what engine systems read (contact, constraints, state store): no system touches private attributes ---
    # Together with _worlds / _check_world (world arguments) and _require_query, this is their whole view.
    def actor_records(self) -> tuple:
        """The actor records in model row order (read them; edits go through the actors)."""
        return tuple(self._records)

    def actor_rows(self, actors) -> np.ndarray:
        """The model rows of ``actors`` (int64, read only): the index of each actor in a potential's (W, N, ...)
        arrays. Rows move when an actor is destroyed: read them per stage or in ``on_actor_destroyed``."""
        return self._rows(list(actors))

    def actor_at_row(self, row: int) -> RigidActor:
        """The actor of model row ``row``."""
        return self._actors[self._records[row].handle]

    def current_kinematics(self) -> Kinematics:
        """Every world's current poses and velocities, (W, N, ...) arrays (read them; writes go through setters)."""
        return self._state.current

    def contact_evaluation_params(self):
        """The solver's ``experimental_eval`` switches that shape the contact potential (read them)."""
        return self._solver.experimental_eval

    def potentials(self) -> tuple:
        """The potentials added to this scene (contact first), in the order their hooks run."""
        return tuple(self._extra_potentials)

    # --- state writes used by the actors ----------------------------------------------------------------------
    def _set_pose(self, row: int, rotation: np.ndarray, com_position: np.ndarray, world) -> None:
        worlds = self._worlds(world)
        cur = self._state.current
        cur.com_position[worlds, row] = com_position
        cur.rotation[worlds, row] = rotation
        if not self._records[row].is_static:
            self._state.num_history[worlds] = 1

    def _set_velocity(self, row: int, lin: np.ndarray, ang: np.ndarray, world) -> None:
        worlds = self._worlds(world)
        record = self._records[row]
        if record.is_static:
            if np.any(lin != 0) or np.any(ang != 0):
                raise ValueError(
                    f"static actor {record.name!r}: velocity is implied by consecutive root transforms; "
                    "only set_velocity([0, 0, 0], [0, 0, 0]) is allowed"
                )
            st = self._state
            st.static_previous_com[worlds, row] = st.current.com_position[worlds, row]
            st.static_previous_rotation[worlds, row] = st.current.rotation[worlds, row]
        cur = self._state.current
        cur.linear_velocity[worlds, row] = lin
        cur.angular_velocity[worlds, row] = ang
        cur.velocity_sym[worlds, row] = 0.0
        self._state.sym_dirty[worlds, row] = not record.is_static
        self._state.num_history[worlds] = 1

    def _add_offset_force(self, row: int, force: np.ndarray, offset: np.ndarray, world) -> None:
        worlds = self._worlds(world)
        st = self._state
        # Reuse a slot with the same offset, else add a slot (column K) for every actor.
        matches = np.nonzero(np.all(st.offset_local[row] == offset, axis=-1))[0]
        if matches.size:
            k = int(matches[0])
        else:
            free = np.nonzero(np.all(st.offset_force[:, row] == 0.0, axis=(0, 2)))[0]
            if free.size:
                k = int(free[0])
                st.offset_local[row, k] = offset
            else:
                k = st.offset_local.shape[1]
                st.offset_local = np.concatenate([st.offset_local, np.zeros((st.offset_local.shape[0], 1, 3))], axis=1)
                st.offset_force = np.concatenate([st.offset_force, np.zeros(st.offset_force.shape[:2] + (1, 3))], axis=2)
                st.offset_local[row, k] = offset
        st.offset_force[worlds, row, k] += force

    def _set_mass_properties(self, record, mass: float, com_local: np.ndarray, second_moment: np.ndarray) -> None:
        row = self._row_of(record)
        # Keep the root transform: the CoM moves with the new local CoM.
        cur = self._state.current
        root_t = cur.com_position[:, row] - np.einsum("wij,j->wi", cur.rotation[:, row], record.com_local)
        record.mass = float(mass)
        record.com_local = np.array(com_local, dtype=np.float64)
        record.second_moment = np.array(second_moment, dtype=np.float64)
        cur.com_position[:, row] = root_t + np.einsum("wij,j->wi", cur.rotation[:, row], record.com_local)
        self._state.num_history[:] = 1
        self._mark_dirty()

    # --- batched accessors (all worlds at once) -----------------------------------------------------------------
    def _rows(self, actors) -> np.ndarray:
        """Model rows of ``actors``; for a list or tuple kept until the actors change (envs read the same few
        actors several times per step). Read-only: callers index with it."""
        key = tuple(actors) if type(actors) in (list, tuple) else None
        rows = self._rows_cache.get(key) if key is not None else None
        if rows is None:
            rows = np.array([self.get_actor(a)._row() for a in actors], dtype=np.int64)
            rows.flags.writeable = False
            if key is not None:
                self._rows_cache[key] = rows
        return rows

    def get_actor_poses(self, actors) -> tuple[np.ndarray, np.ndarray]:
        """Root transforms of ``actors`` in every world: translations (W, K, 3), quaternions (W, K, 4) (x, y, z, w)."""
        rows = self._rows(actors)
        com_local = self.get_model().bodies.com_local.take(rows, axis=0)
        cur = self._state.current
        rot = cur.rotation.take(rows, axis=1)
        trans = cur.com_position.take(rows, axis=1)
        if np.logical_or.reduce(com_local, axis=None):  # a CoM off its root: c - R com_local
            trans = trans - np.einsum("wkij,kj->wki", rot, com_local)
        return trans, lie.matrix_to_quat(rot)

    def get_actor_translations(self, actors) -> np.ndarray:
        """Root-transform translations (W, K, 3) of ``actors`` (no quaternion conversion)."""
        rows = self._rows(actors)
        cur = self._state.current
        # take: the same copies as integer indexing (C-ordered), without its Python-level indexing cost
        com = cur.com_position.take(rows, axis=1)
        com_local = self.get_model().bodies.com_local.take(rows, axis=0)  # the records' com_local, in model rows
        if not np.logical_or.reduce(com_local, axis=None):  # every CoM at its root: c - R 0 = c, without the product
            return com
        return com - np.einsum("wkij,kj->wki", cur.rotation.take(rows, axis=1), com_local)

    def _distinct_rows(self, actors) -> np.ndarray:
        """`_rows` of actors that are to be written: one value each, so an actor listed twice is an error rather
        than the last of its values winning."""
        rows = self._rows(actors)
        if len(set(rows.tolist())) != len(rows):
            names = [self._records[r].name for r in rows]
            raise ValueError(f"actors must be distinct (each gets one value), got {names}")
        if self._nested:  # link rows follow their articulation: set its pose or joint velocities instead
            links = [self._records[r].name for r in rows if isinstance(self._actors[self._records[r].handle],
                                                                        ArticulatedLinkActor)]
            if links:
                raise ValueError(f"link actors {links} have no DoFs of their own: set their articulated actor's "
                                 f"pose or joint velocities instead")
        return rows

    def get_actor_rows(self, actors) -> np.ndarray:
        """The model rows (K,) of ``actors``: their index along the body axis of `current_kinematics`' arrays, valid
        while `get_model` returns the same model (adding or removing actors moves rows)."""
        return self._rows(actors).copy()

    def get_actor_rotations(self, actors) -> np.ndarray:
        return self._state.current.rotation.take(self._rows(actors), axis=1)  # a copy

    def set_actor_poses(self, actors, translations, quaternions, worlds=None) -> None:
        """Set root transforms: translations (len(worlds), K, 3), quaternions (len(worlds), K, 4)."""
        rows = self._distinct_rows(actors)
        w = self._worlds(worlds)
        trans = _check_array(translations, (len(w), len(rows), 3), "translations")
        quat = _check_array(quaternions, (len(w), len(rows), 4), "quaternions")
        norms = np.linalg.norm(quat, axis=-1)
        if np.any(norms < 1e-12):
            raise ValueError("quaternions must be non-zero")
        rot = lie.quat_to_matrix(quat)
        com_local = np.array([self._records[r].com_local for r in rows]).reshape(len(rows), 3)
        cur = self._state.current
        at = np.ix_(w, rows)
        cur.rotation[at] = rot
        cur.com_position[at] = trans + np.einsum("wkij,kj->wki", rot, com_local)
        if any(not self._records[r].is_static for r in rows):
            self._state.num_history[w] = 1

    def get_actor_velocities(self, actors) -> tuple[np.ndarray, np.ndarray]:
        rows = self._rows(actors)
        cur = self._state.current
        return cur.linear_velocity.take(rows, axis=1), cur.angular_velocity.take(rows, axis=1)  # copies

    def set_actor_velocities(self, actors, linear, angular, worlds=None) -> None:
        rows = self._distinct_rows(actors)
        w = self._worlds(worlds)
        lin = _check_array(linear, (len(w), len(rows), 3), "linear")
        ang = _check_array(angular, (len(w), len(rows), 3), "angular")
        static = np.array([self._records[r].is_static for r in rows], dtype=bool)
        if np.any(static) and (np.any(lin[:, static] != 0) or np.any(ang[:, static] != 0)):
            raise ValueError("static actors only accept zero velocity")
        st = self._state
        st.current.linear_velocity[np.ix_(w, rows)] = lin
        st.current.angular_velocity[np.ix_(w, rows)] = ang
        st.current.velocity_sym[np.ix_(w, rows)] = 0.0
        st.sym_dirty[np.ix_(w, rows)] = ~static[None, :]
        srows = rows[static]
        if srows.size:
            st.static_previous_com[np.ix_(w, srows)] = st.current.com_position[np.ix_(w, srows)]
            st.static_previous_rotation[np.ix_(w, srows)] = st.current.rotation[np.ix_(w, srows)]
        st.num_history[w] = 1

    def get_world_status(self) -> np.ndarray:
        """(W,) ConvergenceStatus values of the last step, per world."""
        return self._state.status.copy()

    # --- stepping ------------------------------------------------------------------------------------------------
    def solver_path(self) -> str:
        """Which path this scene's steps take now: "compiled (fused step)" (the compiled Newton with the step's
        other work in kernels too, sim/step/fused.py), "compiled (per-stage step: <reason>)" (the compiled Newton
        per stage, sim/kernels/newton.py) or "numpy: <reason>" (docs/engine.md, "Solver paths"). Decided from the
        scene's composition and solver settings only."""
        if self._nested:
            return coupled.PATH_NAME
        path, detail = pipeline.solver_path(self._extra_potentials, self._solver.non_linear_solver)
        return pipeline.step_path_name(path, detail, self._solver)

    def step(self, time_step_sec: float) -> None:
        """Advance every world by ``time_step_sec`` seconds. ``step(0)`` runs the callbacks only."""
        if not self.alive:
            raise RuntimeError(f"scene {self.name!r} was destroyed (destroy_scene); create a new one")
        if isinstance(time_step_sec, (bool, str, bytes)):
            raise TypeError(f"time_step_sec must be a number, got {time_step_sec!r}")
        try:
            dt = float(time_step_sec)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"time_step_sec must be a number, got {time_step_sec!r}") from exc
        if not math.isfinite(dt) or dt < 0.0:
            raise ValueError(f"time_step_sec must be finite and >= 0, got {time_step_sec!r}; the scene was not stepped")
        if 0.0 < dt < MIN_TIME_STEP_S:
            raise ValueError(f"time_step_sec must be 0 or at least {MIN_TIME_STEP_S:g} s, got {time_step_sec!r}: the "
                             "inertia Hessian m/dt^2 of a shorter step swamps float64 precision; the scene was not "
                             "stepped")
        self._run_callbacks("pre", dt)
        if dt > 0.0 and self._records:
            start = time.perf_counter()
            for pot in self._extra_potentials:  # nothing can change the scene during the step's solves
                pot.before_step(self)
            # The step never writes into the current poses' arrays (it builds the next history entry), so the
            # step-start poses for the tunnelling ratio are these arrays themselves, not copies.
            start_com = self._state.current.com_position
            start_rot = self._state.current.rotation
            try:
                if self._nested:  # a scene holding articulations steps in generalized coordinates
                    report = coupled.step(self.get_model(), self._state, dt, self._solver, self._gravity,
                                          self._extra_potentials)
                else:
                    report = pipeline.step(self._compiled_model(), self._state, dt)
            finally:
                for pot in self._extra_potentials:
                    pot.after_solves(self)
            self._actor_status = report.actor_status
            ratio, max_ratio = self._step_tunnelling_ratio(start_com, start_rot, dt)
            worst = int(np.maximum.reduce(report.status, axis=None, initial=1))
            # as MuJoCo warns on instability: the world did not advance
            if worst == ConvergenceStatus.DIVERGED.value and self._step_warnings:
                diverged = np.flatnonzero(report.status == ConvergenceStatus.DIVERGED.value)
                warnings.warn(f"the Newton solve diverged in world(s) {diverged[:8].tolist()}: their dynamic actors "
                              "were put back at the step start, at rest (get_world_status(); docs/reliability.md)",
                              RuntimeWarning, stacklevel=2)
            # The stats objects are built when asked for (get_solver_stats): most steps are never asked.
            self._stats = self._perf = None
            self._stats_from = (report, worst, max_ratio, time.perf_counter() - start)
            self._last_report = report
            self._num_query_steps += 1
            for pot in self._extra_potentials:
                pot.after_step(self, report)
        elif dt > 0.0:
            self._state.time += dt
            self._state.last_dt = dt
        self._run_callbacks("post", dt)

    def _step_tunnelling_ratio(self, start_com, start_rot, dt) -> tuple[np.ndarray, float]:
        """The step's tunnelling ratio per world (sim/tunnelling.py), stored, and its largest value (0 for no world,
        NaN when a ratio is NaN); a warning when it reaches 1."""
        if self._tunnelling is None:
            geometry = tunnelling_geometry(self._records)
            dynamic = ~self.get_model().bodies.is_static
            self._tunnelling = (geometry, dynamic, tunnelling_kernel_inputs(geometry, dynamic))
        geometry, dynamic, inputs = self._tunnelling
        cur = self._state.current
        ratio, which = tunnelling_ratio(start_com, start_rot, cur.com_position, cur.rotation, geometry, dynamic,
                                        inputs)
        self._tunnelling_ratio = ratio
        max_ratio = float(np.maximum.reduce(ratio, axis=None, initial=0.0))
        if self._step_warnings and (max_ratio >= 1.0 or (max_ratio != max_ratio and np.any(ratio >= 1.0))):
            w = int(np.argmax(ratio))
            half = geometry["half"][which[w]]
            warnings.warn(f"a step of {dt:g} s carried a body's surface sample past the middle of the static collider "
                          f"{geometry['names'][which[w]]!r} (world {w}; its thinnest half thickness {half:.3g} m): it "
                          f"may pass through (tunnelling ratio {ratio[w]:.3g}; scene.get_tunnelling_ratio(), "
                          "docs/reliability.md)", RuntimeWarning, stacklevel=2)
        return ratio, max_ratio

    def get_tunnelling_ratio(self) -> np.ndarray:
        """(W,) per world, the last step's largest depth a dynamic body's surface sample ended at past the face of a
        static collider it entered through, over the collider's half thickness along that face's normal
        (sim/tunnelling.py); >= 1: past the middle, a body may pass through a collider."""
        ratio = self._tunnelling_ratio
        return ratio.copy() if ratio.shape == (self.num_worlds,) else np.zeros(self.num_worlds)

    # --- callbacks ----------------------------------------------------------------------------------------------
    def register_pre_step_callback(self, callback, priority: int = 0) -> int:
        """``callback(scene, time_step_sec)`` before each step; lower priority runs first."""
        return self._register_callback("pre", callback, priority)

    def register_post_step_callback(self, callback, priority: int = 0) -> int:
        return self._register_callback("post", callback, priority)

    def _register_callback(self, kind: str, callback, priority: int) -> int:
        if not callable(callback):
            raise TypeError("callback must be callable")
        cb = _Callback(next(_CALLBACK_HANDLES), callback, int(priority), next(self._callback_order))
        self._callbacks[kind].append(cb)
        self._callbacks[kind].sort(key=lambda c: (c.priority, c.order))
        return cb.handle

    def cancel_callback(self, handle: int) -> None:
        for kind in self._callbacks:
            before = len(self._callbacks[kind])
            self._callbacks[kind] = [c for c in self._callbacks[kind] if c.handle != handle]
            if len(self._callbacks[kind]) != before:
                return
        raise KeyError(f"no callback with handle {handle!r}")

    def _run_callbacks(self, kind: str, dt: float) -> None:
        for cb in list(self._callbacks[kind]):
            cb.fn(self, dt)

    # --- state capture ------------------------------------------------------------------------------------------
    def capture_state(self) -> int:
        return self._store.capture()

    def restore_state(self, handle: int, release_immediately: bool = False, worlds=None) -> None:
        """Restore a captured state bit-exactly. With ``worlds``, only those worlds are restored, from the
        snapshot's matching worlds or, for a one-world snapshot, from its single world."""
        self._store.restore(handle, release_immediately, worlds)

    def snapshot(self):
        """An opaque in-memory copy of the whole batched state (no handle to release)."""
        return self._store.snapshot()

    def step_snapshot(self):
        """A `snapshot` valid until the next `step` has run and no longer: restoring it undoes that step (an env
        undoes a substep that tunnelled). Cheaper than `snapshot` (a step replaces the arrays it changes, so this
        one shares them); any other change to the scene in between may show through it."""
        return self._store.step_snapshot()

    def restore_snapshot(self, snapshot, worlds=None, source_worlds=None) -> None:
        """Restore a `snapshot` bit-exactly: every world (ValueError for a snapshot of another world count, as
        `check_snapshot`), or ``worlds`` from the snapshot's ``source_worlds`` (default: the same worlds, or world 0
        of a one-world snapshot). `restore_state` of a captured handle takes the capture's world count instead."""
        self._store.restore_snapshot(snapshot, worlds, source_worlds)

    def check_snapshot(self, snapshot) -> None:
        """ValueError unless ``snapshot`` (from `snapshot`) restores into every world of this scene."""
        self._store.check(snapshot)

    def release_state(self, handle: int) -> None:
        self._store.release(handle)

    def release_all_states(self) -> None:
        """Release every captured state; their handles become invalid."""
        for handle in list(self._store._snapshots):
            self._store.release(handle)

    def capture_state_to_bytes(self) -> bytes:
        return self._store.to_bytes()

    def restore_state_from_bytes(self, data: bytes) -> None:
        self._store.from_bytes(data)

    def capture_state_to_file(self, file_path) -> None:
        with open(file_path, "wb") as f:
            f.write(self.capture_state_to_bytes())

    def restore_state_from_file(self, file_path) -> None:
        with open(file_path, "rb") as f:
            self.restore_state_from_bytes(f.read())

    def is_equal_state(self, state_a: int, state_b: int) -> bool:
        return self._store.equal(state_a, state_b)

    def set_step_warnings(self, enabled: bool) -> None:
        """Whether `step` warns (RuntimeWarning) when a world diverged or a body may have tunnelled (default True).
        The statuses and ratios are there either way (`get_world_status`, `get_tunnelling_ratio`): the envs report
        them per world in ``info`` and turn the warnings off, which is cheaper than filtering them every substep."""
        if not isinstance(enabled, (bool, np.bool_)):
            raise TypeError(f"enabled must be a bool, got {enabled!r}")
        self._step_warnings = bool(enabled)

    def get_step_warnings(self) -> bool:
        return self._step_warnings

    def set_force_single_island(self, force_single_island: bool) -> None:
        """Accepted for API compatibility: every world is solved as one system here."""
        if not isinstance(force_single_island, (bool, np.bool_)):
            raise TypeError(f"force_single_island must be a bool, got {force_single_island!r}")
        self._force_single_island = bool(force_single_island)

    def get_force_single_island(self) -> bool:
        return self._force_single_island


# --- state array helpers -----------------------------------------------------------------------------------------


def _params_of(cls, params, kwargs):
    """``params``, or a ``cls`` built from keyword arguments (not both)."""
    if params is not None and kwargs:
        raise TypeError(f"pass either a {cls.__name__} or keyword arguments, not both")
    if params is None:
        unknown = sorted(set(kwargs) - set(cls.__dataclass_fields__))
        if unknown:
            raise TypeError(f"unknown arguments {unknown}; valid: {sorted(cls.__dataclass_fields__)}")
        params = cls(**kwargs)
    return params


def _check_array(value, shape, name) -> np.ndarray:
    arr = np.asarray(value, dtype=np.float64)
    if arr.shape != shape:
        raise ValueError(f"{name} must have shape {shape}, got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite")
    return arr


def _empty_state(num_worlds: int) -> State:
    kin = Kinematics.at_rest(num_worlds, 0)
    return State(
        history=[kin],
        num_history=np.ones(num_worlds, dtype=np.int64),
        sym_dirty=np.zeros((num_worlds, 0), dtype=bool),
        static_previous_com=np.zeros((num_worlds, 0, 3)),
        static_previous_rotation=np.zeros((num_worlds, 0, 3, 3)),
        external_force=np.zeros((num_worlds, 0, 6)),
        offset_force=np.zeros((num_worlds, 0, 0, 3)),
        offset_local=np.zeros((0, 0, 3)),
        status=np.zeros(num_worlds, dtype=np.int64),
    )


def _append_actor(state: State, com, rot, lin, ang, spin_set: bool) -> State:
    """A new actor row in every world; the history restarts (the new row has no past)."""
    w = state.num_worlds
    cur = state.current

    def add(arr, value):
        return np.concatenate([arr, np.broadcast_to(value, (w, 1) + np.shape(value)).copy()], axis=1)

    new = Kinematics(
        com_position=add(cur.com_position, com),
        rotation=add(cur.rotation, rot),
        linear_velocity=add(cur.linear_velocity, lin),
        angular_velocity=add(cur.angular_velocity, ang),
        velocity_sym=add(cur.velocity_sym, np.zeros((3, 3))),
    )
    k = state.offset_local.shape[1]
    return State(
        history=[new],
        num_history=np.ones(w, dtype=np.int64),
        sym_dirty=add(state.sym_dirty, spin_set),
        static_previous_com=add(state.static_previous_com, com),
        static_previous_rotation=add(state.static_previous_rotation, rot),
        external_force=add(state.external_force, np.zeros(6)),
        offset_force=add(state.offset_force, np.zeros((k, 3))),
        offset_local=np.concatenate([state.offset_local, np.zeros((1, k, 3))], axis=0),
        status=state.status,
        time=state.time,
        last_dt=state.last_dt,
    )


def _delete_actor(state: State, row: int) -> State:
    cur = state.current
    new = Kinematics(
        com_position=np.delete(cur.com_position, row, axis=1),
        rotation=np.delete(cur.rotation, row, axis=1),
        linear_velocity=np.delete(cur.linear_velocity, row, axis=1),
        angular_velocity=np.delete(cur.angular_velocity, row, axis=1),
        velocity_sym=np.delete(cur.velocity_sym, row, axis=1),
    )
    return State(
        history=[new],
        num_history=np.ones(state.num_worlds, dtype=np.int64),
        sym_dirty=np.delete(state.sym_dirty, row, axis=1),
        static_previous_com=np.delete(state.static_previous_com, row, axis=1),
        static_previous_rotation=np.delete(state.static_previous_rotation, row, axis=1),
        external_force=np.delete(state.external_force, row, axis=1),
        offset_force=np.delete(state.offset_force, row, axis=1),
        offset_local=np.delete(state.offset_local, row, axis=0),
        status=state.status,
        time=state.time,
        last_dt=state.last_dt,
    )


def _replicate_world(state: State, world: int, num_worlds: int) -> State:
    def rep(arr):
        return np.repeat(arr[world : world + 1], num_worlds, axis=0)

    hist = [Kinematics(**{k: rep(v) for k, v in vars(h).items()}) for h in state.history]
    return State(
        history=hist,
        num_history=rep(state.num_history),
        sym_dirty=rep(state.sym_dirty),
        static_previous_com=rep(state.static_previous_com),
        static_previous_rotation=rep(state.static_previous_rotation),
        external_force=rep(state.external_force),
        offset_force=rep(state.offset_force),
        offset_local=state.offset_local.copy(),
        status=rep(state.status),
        time=state.time,
        last_dt=state.last_dt,
    )
