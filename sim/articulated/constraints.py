"""Articulated constraints in the scene API: the reference's four factories and the `ArticulatedConstraint` handle
they return (the reference returns its `Constraint`; the methods that apply to these types have its names).

A constraint lives in its articulated actor's oracle (sim/articulated/oracle.py, `ConstraintRecord`): parameters
are shared by every world, targets are per world and captured / restored with the actor's state. Stiffness,
damping and saturation are parameters (not restored), as for the rigid constraints. Destroying the actor destroys
its constraints. Handles count per scene, apart from the rigid constraints' handles: ``scene.destroy_constraint``
takes the handle object.
"""

from __future__ import annotations

import numpy as np

from .. import lie
from ..actor_queries import as_query_type
from ..constraints.params import check_saturation
from ..geometry_types import QueryHandle
from ..params import QueryType
from ..transforms import Quaternion
from ..validation import bounded_real, real_array
from .actor import ArticulatedActor
from .oracle import ConstraintRecord, checked_rotation
from .params import (
    Articulated3dRotationRangeConstraintParams,
    Articulated3dRotationTargetConstraintParams,
    ArticulatedSingleDofRangeConstraintParams,
    ArticulatedSingleDofTargetConstraintParams,
)

# params type -> (the handle's type name, the kind of ConstraintRecord)
KINDS = {
    ArticulatedSingleDofTargetConstraintParams: ("ArticulatedSingleDofTarget", "single_dof_target"),
    ArticulatedSingleDofRangeConstraintParams: ("ArticulatedSingleDofRange", "single_dof_range"),
    Articulated3dRotationTargetConstraintParams: ("Articulated3dRotationTarget", "rotation_target"),
    Articulated3dRotationRangeConstraintParams: ("Articulated3dRotationRange", "rotation_range"),
}


def rotation_matrix(value, name: str) -> np.ndarray:
    """A `Quaternion` (None: identity), a rotation vector (3,) or a rotation matrix (3, 3) -> checked (3, 3)."""
    if value is None:
        return np.eye(3)
    if isinstance(value, Quaternion):
        return value.to_matrix()
    arr = real_array(value, name)
    if arr.shape == (3,):
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{name} must be finite, got {arr.tolist()}")
        return lie.exp_so3(arr)
    return checked_rotation(arr, name)


def create(scene, params) -> "ArticulatedConstraint":
    """Check ``params`` whole against its actor, then add the constraint (the scene is unchanged on error)."""
    if type(params) not in KINDS:
        raise TypeError(f"expected one of {[c.__name__ for c in KINDS]}, got {type(params).__name__}")
    type_name, kind = KINDS[type(params)]
    actor = scene.get_actor(params.actor)
    if not isinstance(actor, ArticulatedActor):
        raise ValueError(f"actor must be an articulated actor (or its handle), got {actor!r}")
    o = actor._oracle
    compliance = (params.stiffness, params.damping, params.saturation)
    if kind == "single_dof_target":
        record = o.add_single_dof_target(params.joint_index, params.dof_index, params.target_value, *compliance)
    elif kind == "single_dof_range":
        record = o.add_single_dof_range(params.joint_index, params.dof_index, params.min_value, params.max_value,
                                        *compliance)
    elif kind == "rotation_target":
        o._rotation_joint(params.joint_index, "3D rotation target")  # the joint is named first, as the reference
        record = o.add_rotation_target(params.joint_index, rotation_matrix(params.target, "target"), *compliance)
    else:
        record = o.add_rotation_range(params.joint_index, params.min_values, params.max_values, *compliance)
    return scene._articulations.add_constraint(actor, record, type_name)


class ArticulatedConstraint:
    """The user's handle to one articulated constraint. Getters read world ``world`` (default 0); target setters
    write every world unless ``world`` (an int or a sequence of ints) is given."""

    def __init__(self, actor: ArticulatedActor, record: ConstraintRecord, handle: int, type_name: str):
        self._actor = actor
        self._record = record
        self._handle = handle
        self.constraint_type = type_name

    # --- identity ---------------------------------------------------------------------------------------------
    def get_handle(self) -> int:
        return self._handle

    def get_type(self) -> str:
        return self.constraint_type

    def is_valid(self) -> bool:
        return self._actor.alive and any(r is self._record for r in self._actor._oracle.constraints)

    def __repr__(self) -> str:
        return f"ArticulatedConstraint({self.constraint_type}, handle={self._handle}" + (
            ")" if self.is_valid() else ", destroyed)")

    def _live(self) -> ConstraintRecord:
        if not self.is_valid():
            raise RuntimeError(f"{self!r}: the constraint (or its articulated actor) was destroyed")
        return self._record

    def _require(self, what: str, kind: str) -> ConstraintRecord:
        record = self._live()
        if record.kind != kind:
            raise TypeError(f"{what} does not apply to {self.constraint_type} constraints")
        return record

    # --- compliance parameters (shared by every world) --------------------------------------------------------
    def set_stiffness(self, stiffness: float) -> None:
        self._live().stiffness = bounded_real(stiffness, "stiffness", 0.0, np.inf)

    def set_damping(self, damping: float) -> None:
        self._live().damping = bounded_real(damping, "damping", 0.0, np.inf)

    def set_saturation(self, saturation: float) -> None:
        """> 0 caps the elastic force (torque) at stiffness * saturation; < 0 disables it; 0 is an error."""
        self._live().saturation = check_saturation(bounded_real(saturation, "saturation", -np.inf, np.inf))

    def get_stiffness(self) -> float:
        return float(self._live().stiffness)

    def get_damping(self) -> float:
        return float(self._live().damping)

    def get_saturation(self) -> float:
        return float(self._live().saturation)

    # --- targets ------------------------------------------------------------------------------------------------
    def _worlds(self, world):
        return self._actor.get_scene()._worlds(world)

    def set_target_dof(self, target, world=None) -> None:
        """ArticulatedSingleDofTarget: the DoF's target (m or rad), one value or one per selected world."""
        record = self._require("set_target_dof", "single_dof_target")
        worlds = self._worlds(world)
        values = real_array(target, "target").reshape(-1)
        if values.size not in (1, len(worlds)) or not np.all(np.isfinite(values)):
            raise ValueError(f"target must be one finite value or one per selected world ({len(worlds)}), got "
                             f"{values.tolist()}")
        self._actor._oracle.constraint_target[worlds, record.slot] = values

    def get_target_dof(self, world: int = 0) -> float:
        record = self._require("get_target_dof", "single_dof_target")
        return float(self._actor._oracle.constraint_target[self._actor._world(world), record.slot])

    def set_target_rotation(self, rotation, world=None) -> None:
        """Articulated3dRotationTarget: the joint's target rotation in its parent frame (a Quaternion, a rotation
        vector or a matrix; or a list of them, one per selected world)."""
        record = self._require("set_target_rotation", "rotation_target")
        worlds = self._worlds(world)
        if isinstance(rotation, (list, tuple)) and rotation and all(isinstance(r, Quaternion) for r in rotation):
            items = list(rotation)
        elif isinstance(rotation, Quaternion):
            items = [rotation]
        else:  # a (3,) vector or (3, 3) matrix is one rotation; (K, 3) / (K, 3, 3) one per world
            arr = real_array(rotation, "rotation")
            items = [arr] if arr.shape in ((3,), (3, 3)) else list(arr)
        if len(items) not in (1, len(worlds)):
            raise ValueError(f"rotation must be one rotation or one per selected world ({len(worlds)}), got "
                             f"{len(items)}")
        mats = np.array([rotation_matrix(r, "rotation") for r in items]).reshape(len(items), 9)
        self._actor._oracle.constraint_target[worlds, record.slot:record.slot + 9] = mats

    def get_target_rotation(self, world: int = 0) -> Quaternion:
        record = self._require("get_target_rotation", "rotation_target")
        row = self._actor._oracle.constraint_target[self._actor._world(world), record.slot:record.slot + 9]
        return Quaternion.from_matrix(row.reshape(3, 3))

    def update_old_target(self, world=None) -> None:
        """Make the current target the previous step's too: a teleported target then causes no damping force."""
        record = self._live()
        worlds = self._worlds(world)
        if record.width:
            o = self._actor._oracle
            cols = slice(record.slot, record.slot + record.width)
            o.constraint_target_old[worlds, cols] = o.constraint_target[worlds, cols]

    # --- queries ------------------------------------------------------------------------------------------------
    def get_num_actors(self) -> int:
        self._live()
        return 1

    def get_actor(self, actor_index: int = 0) -> ArticulatedActor:
        self._live()
        if actor_index != 0:
            raise IndexError(f"actor_index {actor_index!r} out of range for a 1-actor constraint")
        return self._actor

    def get_dof_indices_for_actor(self, actor_index: int = 0) -> np.ndarray:
        """The articulated actor's DoFs the constraint acts on."""
        record = self._live()
        self.get_actor(actor_index)
        width = 3 if record.kind.startswith("rotation") else 1
        return np.arange(record.dof, record.dof + width, dtype=np.int64)

    def get_limit_min_values(self) -> np.ndarray:
        """Range types: the lower bound(s) (m or rad)."""
        return self._limits("get_limit_min_values").lower.copy()

    def get_limit_max_values(self) -> np.ndarray:
        return self._limits("get_limit_max_values").upper.copy()

    def _limits(self, what: str) -> ConstraintRecord:
        record = self._live()
        if record.lower is None:
            raise TypeError(f"{what} applies to range constraints, not {self.constraint_type}")
        return record

    def is_query_supported(self, type) -> bool:  # noqa: A002 (the reference's argument name)
        return as_query_type(type) is QueryType.CONSTRAINT_FORCE

    def register_query(self, type) -> QueryHandle:  # noqa: A002
        """CONSTRAINT_FORCE: the following steps compute the constraints' forces (`get_force`); another type
        raises `Error` and registers nothing."""
        self._live()
        return self._actor.get_scene()._constraint_queries.register(("articulated", self._handle), type, repr(self))

    def cancel_query(self, handle) -> None:
        """Cancel one registration; an invalid or already-cancelled handle has no effect."""
        self._actor.get_scene()._constraint_queries.cancel(("articulated", self._handle), handle)

    def get_force(self, world: int = 0) -> np.ndarray:
        """The constraint's generalized force on its DoFs (N or N m; (1,) single-DoF, (3,) rotation kinds) at the
        end of the last step: minus the gradient of its energy there, as the released engine reports it. Needs
        QueryType.CONSTRAINT_FORCE registered (on the scene or a constraint) before that step; zeros until a step
        has run with it."""
        record = self._live()
        scene = self._actor.get_scene()
        scene._require_query(QueryType.CONSTRAINT_FORCE, "ArticulatedConstraint.get_force")
        force = self._actor._oracle.constraint_force[self._actor._world(world)]
        return force[record.force_slot:record.force_slot + record.num_dofs].copy()

    def get_deviation(self, world: int = 0) -> np.ndarray:
        """The constraint value g at the current pose and target: (1,) for single-DoF types, (3,) for 3D ones
        (the rotation log(R_j R_t^T), or the range violation per component)."""
        record = self._live()
        o = self._actor._oracle
        w = self._actor._world(world)
        width = 3 if record.kind.startswith("rotation") else 1
        x = o.q[w, record.dof:record.dof + width]
        if record.kind == "single_dof_target":
            return x - o.constraint_target[w, record.slot]
        if record.kind == "rotation_target":
            target = o.constraint_target[w, record.slot:record.slot + 9].reshape(3, 3)
            return lie.log_so3(lie.exp_so3(x) @ target.T)
        return np.maximum(x - record.upper, 0.0) + np.maximum(record.lower - x, 0.0)
