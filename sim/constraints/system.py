"""Constraints in the scene API (digest 8, ``physics/docs/concepts/constraints.mdx``): the scene factories, the
user's `Constraint` handle and the `ConstraintSystem` potential that holds every constraint of a scene.

One `ConstraintSystem` per scene, added with ``scene.add_potential`` when the first constraint is created. It holds
one `RigidConstraintSet` per constraint type (created when that type is first used); the sets store every
constraint of their type for all worlds, so a step evaluates each type in one vectorized call. A constraint is
named by a handle (a process-wide increasing int); within a set, rows are in creation order, so each set's
handles are sorted and a handle's row is a binary search.

Actor rules (checked before the scene changes; a rejected constraint leaves the scene as it was):

* an actor is given as the `RigidActor` or its handle (int); it must be alive and belong to this scene;
* one-actor types (pivots) need a **dynamic** actor: a static actor's pose is prescribed, so pinning it to a
  target would do nothing;
* two-actor types (joints) need **at least one dynamic** actor; the other may be static (a static anchor, a rail,
  a drive base). Two static actors are rejected, and so is the same actor twice.

Constraints are destroyed with their actors (the reference auto-destroys them); their handles become invalid and
every operation on them raises ``RuntimeError``.

Forces (``Constraint.get_force``, needs ``QueryType.CONSTRAINT_FORCE`` registered before stepping) are the
generalized force ``-r = -J^T lam`` each constrained actor receives, evaluated once per step at the end pose of
the step's last stage, for every world. The layout is the reference's: for each constrained actor in order, its
values on ``get_dof_indices_for_actor(i)`` (DoFs 0-2 world force [N], 3-5 world torque about its CoM [N m]),
concatenated. E.g. a pivot gives 6 values, a spherical joint 12 (A then B), a prismatic joint 9 (6 of A, 3
translational of B), a rotational joint 6 (3 torques of A, 3 of B).

Capture / restore save the per-world constraint state (targets, stage-start targets and the creation-time frames
measured per world), matched by constraint handle; stiffness, damping and saturation are parameters, not state,
and are not restored.
"""

from __future__ import annotations

import dataclasses
import itertools
from typing import Optional

import numpy as np

from .. import lie
from ..actor import RigidActor
from ..actor_queries import as_query_type
from ..geometry_types import QueryHandle
from . import (
    CONSTRAINT_SET_FOR_PARAMS, JointRotationRangeConstraintParams, JointRotationTrackingConstraintParams,
    RigidPivotPositionConstraintParams, RigidPivotRotationConstraintParams, RigidPivotToRigidTargetConstraintParams,
    RigidPrismaticJointConstraintParams, RigidSphericalJointConstraintParams,
)
from ..params import QueryType
from ..potentials.base import Potential, PotentialTerms
from ..transforms import Quaternion, TransformRT

# The per-world arrays of a RigidConstraintSet (leading world axis), replicated / captured / restored here.
_PER_WORLD_STORES = ("_world_data", "_targets", "_old_targets")


class ConstraintSystem(Potential):
    """Every constraint of one scene, as one potential with the scene's extension hooks."""

    def __init__(self, scene):
        self._scene = scene
        self._next_handle = itertools.count(1)  # per scene, as actor handles
        self._sets: dict = {}  # constraint type -> RigidConstraintSet, in order of first use
        self._handles: dict = {}  # constraint type -> (C,) int64 handles, ascending = set row order
        self._type_of: dict = {}  # live handle -> constraint type
        self._objects: dict = {}  # live handle -> Constraint
        self._com_local_source = None  # the model array the sets' com_local was copied from
        self._forces: Optional[dict] = None  # type -> (handles (C,), forces (W, C, A, 6)) of the last step

    # --- bookkeeping ----------------------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._type_of)

    def sets(self) -> list:
        """(constraint type, its RigidConstraintSet) in order of first use."""
        return list(self._sets.items())

    def handles(self) -> list:
        """Live handles in creation order."""
        return sorted(self._type_of)

    def sync_com_local(self, com_local: np.ndarray) -> None:
        """Keep every set's com_local equal to the model's (actors created later grow N; inertia edits move CoMs).
        The scene rebuilds its model (a new array) after any such change, so identity is the test."""
        if com_local is self._com_local_source:
            return
        for cs in self._sets.values():
            cs.set_com_local(com_local)
        self._com_local_source = com_local

    def locate(self, handle: int):
        """(set, row) of a live constraint, else RuntimeError."""
        kind = self._type_of.get(handle)
        if kind is None:
            raise RuntimeError(f"constraint {handle} was destroyed (or its actor was)")
        handles = self._handles[kind]
        return self._sets[kind], int(np.searchsorted(handles, handle))

    def add(self, params, rows: tuple) -> "Constraint":
        """Add a constraint from validated params whose actor fields are replaced by model rows."""
        set_type = CONSTRAINT_SET_FOR_PARAMS[type(params)]
        kind = set_type.constraint_type
        model = self._scene.get_model()
        self.sync_com_local(model.bodies.com_local)
        created = kind not in self._sets
        if created:
            self._sets[kind] = set_type(model.bodies.com_local, self._scene.num_worlds)
            self._handles[kind] = np.zeros(0, dtype=np.int64)
        names = ("actor",) if len(rows) == 1 else ("actor_a", "actor_b")
        resolved = dataclasses.replace(params, **dict(zip(names, rows)))
        cur = self._scene.current_kinematics()
        try:
            self._sets[kind].add(resolved, cur.com_position, cur.rotation)
        except Exception:
            if created:  # leave no trace of a failed first constraint of a type
                del self._sets[kind], self._handles[kind]
            raise
        handle = next(self._next_handle)
        self._handles[kind] = np.append(self._handles[kind], handle)
        self._type_of[handle] = kind
        self._objects[handle] = Constraint(self, handle, kind)
        self._scene.composition_changed()
        return self._objects[handle]

    def remove(self, handle: int) -> None:
        cs, row = self.locate(handle)
        kind = self._type_of[handle]
        cs.remove([row])
        self._handles[kind] = np.delete(self._handles[kind], row)
        self._forget(handle)
        self._scene.composition_changed()

    def _forget(self, handle: int) -> None:
        self._scene._constraint_queries.forget(("rigid", handle))
        del self._type_of[handle]
        del self._objects[handle]

    # --- the potential ------------------------------------------------------------------------------------------
    def evaluate(self, ctx, com_position, rotation, want_hessian: bool) -> PotentialTerms:
        """The sum of every constraint type's energy, gradient and Hessian blocks (sim/constraints/base.py)."""
        self.sync_com_local(ctx.model.bodies.com_local)
        num_worlds, num_bodies = com_position.shape[:2]
        terms = PotentialTerms.zeros(num_worlds, num_bodies, want_hessian)
        for cs in self._sets.values():
            if not len(cs):
                continue
            cs.evaluate(ctx, com_position, rotation, want_hessian, out=terms)
        return terms

    def refine_guess(self, ctx, guess_c: np.ndarray, guess_r: np.ndarray) -> np.ndarray:
        """``InitialGuess.CONSTANT_VELOCITY_AND_TARGETS``: bodies held by a stiff pivot-position drive start on its
        target (`RigidPivotPositionConstraints.guess_on_targets`). Only the Newton start changes."""
        cs = self._sets.get("RigidPivotPosition")
        if cs is None or not len(cs):
            return guess_c
        self.sync_com_local(ctx.model.bodies.com_local)
        return cs.guess_on_targets(ctx, guess_c, guess_r)

    # --- scene hooks --------------------------------------------------------------------------------------------
    def on_actor_destroyed(self, actor, row: int) -> None:
        """Drop the constraints on the destroyed model row and renumber the rows above it."""
        model = self._scene.get_model()  # still holds the destroyed actor
        self.sync_com_local(model.bodies.com_local)
        actor_map = np.arange(model.bodies.num, dtype=np.int64)
        actor_map[row] = -1
        actor_map[row + 1 :] -= 1
        com_local = np.delete(model.bodies.com_local, row, axis=0)
        for kind, cs in self._sets.items():
            mapping = cs.remap_actors(actor_map, com_local)
            for handle in self._handles[kind][mapping < 0]:
                self._forget(int(handle))
            self._handles[kind] = self._handles[kind][mapping >= 0]
        self._com_local_source = None  # the next model is a new array; resync then

    def after_step(self, scene, report) -> None:
        # Forces first: they need the stage-start (old) targets the step used.
        if scene.has_registered_queries() and scene.is_query_registered(QueryType.CONSTRAINT_FORCE):
            self._forces = {}
            for kind, cs in self._sets.items():
                if not len(cs):
                    continue
                out = np.zeros((cs.num_worlds, len(cs), cs.num_constrained_actors, 6))
                for worlds, ctx, com_position, rotation in report.last_stages:
                    self.sync_com_local(ctx.model.bodies.com_local)
                    out[worlds] = cs.force(ctx, com_position, rotation)
                self._forces[kind] = (self._handles[kind].copy(), out)
        else:
            self._forces = None
        for cs in self._sets.values():
            cs.advance_old_targets()

    def on_num_worlds_changed(self, num_worlds: int) -> None:
        """Replicate world 0 of every per-world array, as the scene does with its state."""
        for cs in self._sets.values():
            for store in _stores(cs):
                for k in store:
                    store[k] = np.repeat(store[k][:1], num_worlds, axis=0)
            cs.num_worlds = int(num_worlds)
        self._forces = None

    def capture(self, shared: bool = False) -> dict:
        """The per-world arrays (targets, old targets) and handles, copied; ``shared``: the arrays themselves, for
        `StateStore.step_snapshot` (a step replaces them, never writes into them)."""
        copy = dict if shared else _copy
        return {
            "kind": "ConstraintSystem",
            "num_worlds": self._scene.num_worlds,
            "sets": {
                kind: {"handles": self._handles[kind] if shared else self._handles[kind].copy(),
                       "stores": [copy(s) for s in _stores(cs)]}
                for kind, cs in self._sets.items()
            },
        }

    def restore(self, data: dict, worlds=None, source_worlds=None) -> None:
        """Restore the captured per-world arrays of the constraints that existed at capture (matched by handle).

        ``worlds`` None: everything, at the snapshot's world count (the scene's state is replaced wholesale);
        constraints created after the capture keep their values (world 0 replicated if the count changes).
        Else worlds ``worlds`` get the snapshot's worlds ``source_worlds``."""
        if not (isinstance(data, dict) and data.get("kind") == "ConstraintSystem"):
            raise ValueError("not a ConstraintSystem snapshot")
        snap_worlds = int(data["num_worlds"])
        for kind, cs in self._sets.items():
            snap = data["sets"].get(kind)
            if worlds is None and cs.num_worlds != snap_worlds:
                for store in _stores(cs):
                    for k in store:
                        store[k] = np.repeat(store[k][:1], snap_worlds, axis=0)
                cs.num_worlds = snap_worlds
            if snap is None:
                continue
            if np.array_equal(self._handles[kind], snap["handles"]):  # the usual case (an env's reset): same set
                rows = snap_rows = slice(None)
            else:
                common, rows, snap_rows = np.intersect1d(self._handles[kind], snap["handles"], return_indices=True)
                if not common.size:
                    continue
            for store, saved in zip(_stores(cs), snap["stores"]):
                for k in store:
                    if worlds is None:
                        store[k][:, rows] = saved[k][:, snap_rows]
                    elif isinstance(rows, slice):
                        store[k][worlds] = saved[k][source_worlds]
                    else:
                        store[k][np.ix_(worlds, rows)] = saved[k][np.ix_(source_worlds, snap_rows)]
        if worlds is None:
            self._forces = None

    def last_force(self, handle: int, world: int) -> Optional[np.ndarray]:
        """(A, 6) force of the last step on each constrained actor, or None if there is none for this handle."""
        if self._forces is None:
            return None
        entry = self._forces.get(self._type_of[handle])
        if entry is None:
            return None
        handles, forces = entry
        row = int(np.searchsorted(handles, handle))
        if row == handles.size or handles[row] != handle:
            return None  # created after the last step
        return forces[world, row]


def _stores(cs) -> list:
    # The sets keep these per-world dicts private; the system owns the world axis, so it edits them here.
    return [getattr(cs, name) for name in _PER_WORLD_STORES]


def _copy(store: dict) -> dict:
    return {k: v.copy() for k, v in store.items()}


# ---------------------------------------------------------------------------------------------------------------


class Constraint:
    """The user's handle to one constraint (reference names). Getters read world ``world`` (default 0); target
    setters write every world unless ``world`` (an int or a sequence of ints) is given, and take one value or one
    value per selected world."""

    def __init__(self, system: ConstraintSystem, handle: int, constraint_type: str):
        self._system = system
        self._handle = handle
        self.constraint_type = constraint_type  # the reference's type name, e.g. "RigidSphericalJoint"

    # --- identity ---------------------------------------------------------------------------------------------
    def get_handle(self) -> int:
        return self._handle

    def get_type(self) -> str:
        return self.constraint_type

    def is_valid(self) -> bool:
        return self._handle in self._system._type_of

    def __repr__(self) -> str:
        state = "" if self.is_valid() else ", destroyed"
        return f"Constraint({self.constraint_type}, handle={self._handle}{state})"

    def __eq__(self, other) -> bool:
        return isinstance(other, Constraint) and other._handle == self._handle

    def __hash__(self) -> int:
        return hash(self._handle)

    def _locate(self):
        return self._system.locate(self._handle)

    def _require_type(self, what: str, *types: str):
        cs, row = self._locate()
        if self.constraint_type not in types:
            raise TypeError(f"{what} applies to {' / '.join(types)} constraints, not {self.constraint_type}")
        return cs, row

    @property
    def _scene(self):
        return self._system._scene

    # --- compliance parameters ----------------------------------------------------------------------------------
    def set_stiffness(self, stiffness: float) -> None:
        """N/m (N m/rad for rotational types), >= 0."""
        cs, row = self._locate()
        cs.set_stiffness(row, stiffness)
        self._scene.composition_changed()  # a compiled model holds the compliance parameters

    def set_damping(self, damping: float) -> None:
        """N s/m (N m s/rad), >= 0."""
        cs, row = self._locate()
        cs.set_damping(row, damping)
        self._scene.composition_changed()  # a compiled model holds the compliance parameters

    def set_saturation(self, saturation: float) -> None:
        """m (rad): > 0 caps the elastic force at stiffness * saturation; < 0 disables it; 0 is an error."""
        cs, row = self._locate()
        cs.set_saturation(row, saturation)
        self._scene.composition_changed()  # a compiled model holds the compliance parameters

    def get_stiffness(self) -> float:
        cs, row = self._locate()
        return float(cs.stiffness[row])

    def get_damping(self) -> float:
        cs, row = self._locate()
        return float(cs.damping[row])

    def get_saturation(self) -> float:
        cs, row = self._locate()
        return float(cs.saturation[row])

    # --- targets --------------------------------------------------------------------------------------------------
    def set_target_position(self, position, world=None) -> None:
        """RigidPivotPosition: world target point [m], (3,) or (len(worlds), 3)."""
        cs, row = self._require_type("set_target_position", "RigidPivotPosition")
        cs.set_target_position(row, position, self._scene._worlds(world))

    def get_target_position(self, world: int = 0) -> np.ndarray:
        cs, row = self._require_type("get_target_position", "RigidPivotPosition")
        return cs.target_position(row)[self._scene._check_world(world)]

    def set_target_rotation(self, rotation, world=None) -> None:
        """RigidPivotRotation: world target rotation; JointRotationTracking: B's rotation relative to A, in A's
        local frame. A `Quaternion`, a rotation vector [rad] (3,), a rotation matrix (3, 3), or one of those per
        selected world (a list of Quaternions, (K, 3) or (K, 3, 3))."""
        cs, row = self._require_type("set_target_rotation", "RigidPivotRotation", "JointRotationTracking")
        worlds = self._scene._worlds(world)
        cs.set_target_rotation(row, _rotation_matrices(rotation, "rotation"), worlds)

    def get_target_rotation(self, world: int = 0) -> Quaternion:
        cs, row = self._require_type("get_target_rotation", "RigidPivotRotation", "JointRotationTracking")
        return Quaternion.from_matrix(cs._targets["rotation"][self._scene._check_world(world), row])

    def set_target_transform(self, transform, world=None) -> None:
        """RigidPivotToRigidTarget: world-from-local target pose, a `TransformRT` or one per selected world."""
        cs, row = self._require_type("set_target_transform", "RigidPivotToRigidTarget")
        try:
            items = [transform] if isinstance(transform, TransformRT) else list(transform)
        except TypeError:
            items = []
        if not items or not all(isinstance(t, TransformRT) for t in items):
            raise TypeError(f"transform must be a TransformRT or a sequence of them, got {transform!r}")
        rotations = np.array([t.rotation_matrix for t in items])
        translations = np.array([t.translation_array for t in items])
        if isinstance(transform, TransformRT):
            rotations, translations = rotations[0], translations[0]
        cs.set_target_transform(row, rotations, translations, self._scene._worlds(world))

    def get_target_transform(self, world: int = 0) -> TransformRT:
        cs, row = self._require_type("get_target_transform", "RigidPivotToRigidTarget")
        w = self._scene._check_world(world)
        return TransformRT.from_matrix(cs._targets["rotation"][w, row], cs._targets["translation"][w, row])

    def update_old_target(self, world=None) -> None:
        """Make the current target the stage-start target too: a teleported target then causes no damping force."""
        cs, row = self._locate()
        cs.update_old_target(row, self._scene._worlds(world))

    # --- queries --------------------------------------------------------------------------------------------------
    def get_deviation(self, world: int = 0) -> np.ndarray:
        """(3,) constraint value g at the current poses and targets (m or rad; for range types the violation)."""
        cs, row = self._locate()
        w = self._scene._check_world(world)
        self._system.sync_com_local(self._scene.get_model().bodies.com_local)
        cur = self._scene.current_kinematics()
        return cs.deviation(cur.com_position[w : w + 1], cur.rotation[w : w + 1], worlds=[w])[0, row].copy()

    def get_force(self, world: int = 0) -> np.ndarray:
        """Force of the last step on the constrained DoFs of each actor, concatenated (module docstring).

        Needs QueryType.CONSTRAINT_FORCE registered (``scene.register_query`` or this constraint's
        ``register_query``) before stepping; zeros until a step has run
        with the query registered since this constraint was created."""
        cs, row = self._locate()
        self._scene._require_query(QueryType.CONSTRAINT_FORCE, "Constraint.get_force")
        w = self._scene._check_world(world)
        force = self._system.last_force(self._handle, w)
        if force is None:
            force = np.zeros((cs.num_constrained_actors, 6))
        return np.concatenate([force[i, list(dofs)] for i, dofs in enumerate(cs.actor_dofs)])

    # --- queries (the reference's CONSTRAINT_FORCE, reference-counted QueryHandles) ------------------------------
    def is_query_supported(self, type) -> bool:  # noqa: A002 (the reference's argument name)
        return as_query_type(type) is QueryType.CONSTRAINT_FORCE

    def register_query(self, type) -> QueryHandle:  # noqa: A002
        """CONSTRAINT_FORCE: the following steps compute the constraints' forces (`get_force`); another type
        raises `Error` and registers nothing."""
        self._locate()
        return self._scene._constraint_queries.register(("rigid", self._handle), type, repr(self))

    def cancel_query(self, handle) -> None:
        """Cancel one registration; an invalid or already-cancelled handle has no effect."""
        self._scene._constraint_queries.cancel(("rigid", self._handle), handle)

    def get_num_actors(self) -> int:
        cs, _ = self._locate()
        return cs.num_constrained_actors

    def _slot(self, cs, index: int) -> int:
        if isinstance(index, bool) or not isinstance(index, (int, np.integer)):
            raise TypeError(f"actor index must be an integer, got {index!r}")
        if not 0 <= index < cs.num_constrained_actors:
            raise IndexError(f"actor index {index} out of range for a {cs.num_constrained_actors}-actor constraint")
        return int(index)

    def get_actor(self, index: int) -> RigidActor:
        """The ``index``-th constrained actor (0 = ``actor`` / ``actor_a``, 1 = ``actor_b``)."""
        cs, row = self._locate()
        model_row = int(cs.actors[row, self._slot(cs, index)])
        return self._scene.actor_at_row(model_row)

    def get_dof_indices_for_actor(self, index: int) -> np.ndarray:
        """The DoFs of actor ``index`` that the constraint acts on (0-2 translation, 3-5 rotation)."""
        cs, _ = self._locate()
        return np.array(cs.actor_dofs[self._slot(cs, index)], dtype=np.int64)

    def get_limit_min_values(self) -> np.ndarray:
        """RigidPrismaticJoint: (1,) travel lower bound [m] (-inf if unset); JointRotationRange: (3,) [rad]."""
        return self._limits("get_limit_min_values", 0)

    def get_limit_max_values(self) -> np.ndarray:
        return self._limits("get_limit_max_values", 1)

    def _limits(self, what: str, side: int) -> np.ndarray:
        cs, row = self._require_type(what, "RigidPrismaticJoint", "JointRotationRange")
        if self.constraint_type == "RigidPrismaticJoint":
            return np.array([cs.limits(row)[side]])
        return cs.limit_min_values(row) if side == 0 else cs.limit_max_values(row)


def _rotation_matrices(value, name: str) -> np.ndarray:
    """A Quaternion / rotation vector / matrix, or a sequence of them -> (3, 3) or (K, 3, 3)."""
    if isinstance(value, Quaternion):
        return value.to_matrix()
    if isinstance(value, (list, tuple)) and value and all(isinstance(q, Quaternion) for q in value):
        return np.array([q.to_matrix() for q in value])
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be a Quaternion, a rotation vector or a rotation matrix, got {value!r}") from exc
    if arr.ndim in (1, 2) and arr.shape[-1] == 3 and arr.shape != (3, 3):
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{name} must be finite, got {arr.tolist()}")
        return lie.exp_so3(arr)
    if arr.shape[-2:] == (3, 3) and arr.ndim in (2, 3):
        return arr
    raise ValueError(
        f"{name} must be a Quaternion, a rotation vector (3,) or (K, 3), or a matrix (3, 3) or (K, 3, 3); "
        f"got shape {arr.shape}"
    )


# ---------------------------------------------------------------------------------------------------------------


class ConstraintSceneMixin:
    """The scene's constraint factories and lookups. Each factory takes a params object or its fields as keyword
    arguments; actors are `RigidActor` objects or handles (see the module docstring for the rules)."""

    _constraint_system: Optional[ConstraintSystem] = None  # created with the first constraint

    def create_rigid_pivot_position_constraint(self, params=None, **kwargs) -> Constraint:
        """World anchor: the local point ``local_position`` of ``actor`` is pulled to ``target_position``."""
        return self._create_typed(RigidPivotPositionConstraintParams, params, kwargs)

    def create_rigid_pivot_to_rigid_target_constraint(self, params=None, **kwargs) -> Constraint:
        """The local point follows where the target pose ``target_transform`` carries it."""
        return self._create_typed(RigidPivotToRigidTargetConstraintParams, params, kwargs)

    def create_rigid_pivot_rotation_constraint(self, params=None, **kwargs) -> Constraint:
        return self._create_typed(RigidPivotRotationConstraintParams, params, kwargs)

    def set_target_positions(self, constraints, positions, world=None) -> None:
        """`Constraint.set_target_position` of several RigidPivotPosition constraints of this scene in one call
        (a robot driving its bodies sets them every substep): ``positions`` (C, 3), or (len(worlds), C, 3) one per
        selected world [m]. Everything is checked before any target changes."""
        constraints = tuple(constraints)
        system = self._constraint_system
        # Their rows, kept while the set's handle array is the same object (adding or removing a constraint of
        # the type replaces it), so a robot's per-substep call does not look each constraint up again. Kept per
        # the constraint objects' identities (equal handles in another scene compare equal), with the objects.
        cache = self.__dict__.setdefault("_pivot_rows_cache", {})
        handles = system._handles.get("RigidPivotPosition") if system is not None else None
        key = tuple(map(id, constraints))
        hit = cache.get(key)
        if hit is None or hit[0] is not handles or hit[1] is not system:
            if not all(isinstance(c, Constraint) for c in constraints):
                raise TypeError("constraints must be Constraint objects")
            if any(c._system is not system for c in constraints):
                raise ValueError("every constraint must belong to this scene")
            located = [c._require_type("set_target_positions", "RigidPivotPosition") for c in constraints]
            if len(cache) >= 64:
                cache.clear()
            # one set per type in a scene: every RigidPivotPosition lives in located[k][0]
            hit = cache[key] = (handles, system, located[0][0] if located else None,
                                np.array([row for _, row in located], dtype=np.int64), constraints)
        _, _, cs, rows, _ = hit
        num_worlds = self.num_worlds
        worlds = slice(None) if world is None else self._worlds(world)  # None: every world, without an index
        count = num_worlds if world is None else worlds.size
        arr = np.asarray(positions, dtype=np.float64)
        num = len(constraints)
        if arr.shape == (num, 3):
            arr = np.broadcast_to(arr, (count, num, 3))
        if arr.shape != (count, num, 3):
            raise ValueError(f"positions must have shape ({num}, 3) or ({count}, {num}, 3), got {arr.shape}")
        if not np.logical_and.reduce(np.isfinite(arr), axis=None):
            raise ValueError("positions must be finite")
        if cs is not None:
            if world is None:
                cs._targets["position"][:, rows] = arr
            else:
                cs._targets["position"][worlds[:, None], rows[None, :]] = arr

    def create_rigid_spherical_joint_constraint(self, params=None, **kwargs) -> Constraint:
        return self._create_typed(RigidSphericalJointConstraintParams, params, kwargs)

    def create_rigid_prismatic_joint_constraint(self, params=None, **kwargs) -> Constraint:
        return self._create_typed(RigidPrismaticJointConstraintParams, params, kwargs)

    def create_joint_rotation_range_constraint(self, params=None, **kwargs) -> Constraint:
        return self._create_typed(JointRotationRangeConstraintParams, params, kwargs)

    def create_joint_rotation_tracking_constraint(self, params=None, **kwargs) -> Constraint:
        return self._create_typed(JointRotationTrackingConstraintParams, params, kwargs)

    def create_constraint(self, params) -> Constraint:
        """Any constraint type, chosen by the params object's type."""
        if type(params) not in CONSTRAINT_SET_FOR_PARAMS:
            valid = sorted(t.__name__ for t in CONSTRAINT_SET_FOR_PARAMS)
            raise TypeError(f"expected one of {valid}, got {type(params).__name__}")
        params.validate(require_complete=True)
        set_type = CONSTRAINT_SET_FOR_PARAMS[type(params)]
        names = ("actor",) if set_type.num_constrained_actors == 1 else ("actor_a", "actor_b")
        actors = [self._constraint_actor(getattr(params, n), n) for n in names]
        kind = set_type.constraint_type
        if len(actors) == 1 and actors[0].is_static():
            raise ValueError(f"{kind} constraints need a dynamic actor; {actors[0]!r} is static")
        if len(actors) == 2:
            if actors[0] == actors[1]:
                raise ValueError(f"{kind}: actor_a and actor_b are the same actor {actors[0]!r}")
            if actors[0].is_static() and actors[1].is_static():
                raise ValueError(f"{kind} constraints need at least one dynamic actor; both are static")
        system = self._constraint_system
        if system is None:
            system = ConstraintSystem(self)
        constraint = system.add(params, tuple(a._row() for a in actors))
        if self._constraint_system is None:
            self._constraint_system = system
            self.add_potential(system)
        return constraint

    def _create_typed(self, params_type, params, kwargs) -> Constraint:
        if params is not None and kwargs:
            raise TypeError("pass either a params object or keyword arguments, not both")
        if params is None:
            known = {f.name for f in dataclasses.fields(params_type)}
            unknown = sorted(set(kwargs) - known)
            if unknown:
                raise TypeError(f"{params_type.__name__} has no fields {unknown}; valid: {sorted(known)}")
            params = params_type(**kwargs)
        elif type(params) is not params_type:
            raise TypeError(f"expected {params_type.__name__}, got {type(params).__name__}")
        return self.create_constraint(params)

    def _constraint_actor(self, value, name: str) -> RigidActor:
        if isinstance(value, RigidActor):
            if value._scene is not self:
                raise ValueError(f"{name} {value!r} belongs to another scene")
            if not value.is_valid():
                raise ValueError(f"{name} {value!r} was destroyed")
            return value
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise TypeError(f"{name} must be a RigidActor or an actor handle (int), got {value!r}")
        actor = self._actors.get(int(value))
        if actor is None:
            raise ValueError(f"{name}: no actor with handle {int(value)} in scene {self.name!r}")
        return actor

    def get_constraint(self, handle) -> Constraint:
        """The constraint with this handle; KeyError if there is none (never created here, or destroyed)."""
        if isinstance(handle, Constraint):
            if handle._system is not self._constraint_system:  # handles count per scene
                raise ValueError(f"{handle!r} belongs to another scene")
            handle = handle.get_handle()
        system = self._constraint_system
        if system is None or handle not in system._objects:
            raise KeyError(f"no constraint with handle {handle!r} in scene {self.name!r}")
        return system._objects[handle]

    def get_constraints(self) -> list:
        """Every live constraint, in creation order."""
        system = self._constraint_system
        return [] if system is None else [system._objects[h] for h in system.handles()]

    def for_each_constraint(self, fn) -> None:
        for constraint in self.get_constraints():
            fn(constraint)

    def get_num_constraints(self) -> int:
        return 0 if self._constraint_system is None else len(self._constraint_system)

    def destroy_constraint(self, constraint_or_handle) -> None:
        """Destroy a constraint given as the `Constraint` (RuntimeError if already destroyed, ValueError if it
        belongs to another scene) or its handle (KeyError if unknown)."""
        if isinstance(constraint_or_handle, Constraint):
            if constraint_or_handle._system is not self._constraint_system:
                raise ValueError(f"{constraint_or_handle!r} belongs to another scene")
            constraint_or_handle._locate()  # RuntimeError when destroyed
            handle = constraint_or_handle.get_handle()
        else:
            handle = self.get_constraint(constraint_or_handle).get_handle()
        self._constraint_system.remove(handle)
