"""Constraint parameter objects, with the reference engine's Python names and defaults (digest 8).

Field names are the snake_case of the reference's C++ fields (``mochi_physics/include/.../mochi_physics_types.h``:
``localPosA`` -> ``local_pos_a``, ``refFrameRotVec`` -> ``ref_frame_rot_vec``, ...). Every type inherits
``stiffness = 1e6``, ``damping = 0`` and ``saturation = -1`` (negative disables it; 0 is an error), as in the
reference's ``ConstraintParams``. Units: stiffness N/m (N m/rad for the rotational types), damping N s/m
(N m s/rad), saturation m (rad).

``actor`` / ``actor_a`` / ``actor_b`` hold whatever the caller uses to name an actor (an actor object or a
handle); the scene resolves them to model indices before handing the params to a constraint set
(`sim.constraints.base.RigidConstraintSet.add`), which requires plain ints.

Validation: constructing a params object checks every field that is set (finite numbers, non-negative stiffness
and damping, non-zero saturation, ``min <= max``); `validate` with ``require_complete=True`` (called when a
constraint is created) also rejects unset required fields (no actor, no free axis), as the reference does in its
``InitConstraint_*`` functions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

from ..transforms import TransformRT, as_vector3

TWO_PI = 2.0 * math.pi
DEFAULT_STIFFNESS = 1e6
DEFAULT_DAMPING = 0.0
DEFAULT_SATURATION = -1.0


# A finite (3,) float64 array, or an error naming the field (the transforms module's validator).
finite_vector3 = as_vector3


def finite_range(value, name: str) -> np.ndarray:
    """A finite (2,) array (min, max) with min <= max."""
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be 2 numbers (min, max), got {value!r}") from exc
    if arr.shape != (2,):
        raise ValueError(f"{name} must have shape (2,) (min, max), got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite, got {arr.tolist()}")
    if arr[0] > arr[1]:
        raise ValueError(f"{name} must satisfy min <= max, got {arr.tolist()}")
    return arr


def check_stiffness(value) -> float:
    value = float(value)
    if not (math.isfinite(value) and value >= 0.0):
        raise ValueError(f"Constraint stiffness must be non-negative and finite, got {value}")
    return value


def check_damping(value) -> float:
    value = float(value)
    if not (math.isfinite(value) and value >= 0.0):
        raise ValueError(f"Constraint damping must be non-negative and finite, got {value}")
    return value


def check_saturation(value) -> float:
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"Constraint saturation must be finite, got {value}")
    if value == 0.0:
        raise ValueError(
            "Constraint saturation must not be zero. Use any negative value to disable saturation "
            "or a positive value to enable it."
        )
    return value


def _check_actor(value, name: str, require_complete: bool) -> None:
    if value is None and require_complete:
        raise ValueError(f"{name} must be set")


@dataclass(kw_only=True)
class ConstraintParams:
    """Shared compliance parameters of every constraint type."""

    stiffness: float = DEFAULT_STIFFNESS  # N/m or N m/rad, k >= 0
    damping: float = DEFAULT_DAMPING  # N s/m or N m s/rad, d >= 0
    saturation: float = DEFAULT_SATURATION  # m or rad; < 0 off, > 0 caps the elastic force at k * saturation

    def __post_init__(self) -> None:
        self.validate(require_complete=False)

    def validate(self, require_complete: bool = True) -> "ConstraintParams":
        check_stiffness(self.stiffness)
        check_damping(self.damping)
        check_saturation(self.saturation)
        return self


@dataclass(kw_only=True)
class RigidPivotPositionConstraintParams(ConstraintParams):
    """World anchor: g = T(r) - p_hat (digest 8)."""

    actor: Any = None
    local_position: Any = (0.0, 0.0, 0.0)  # m, pivot r in the actor's local (root transform) frame
    target_position: Any = (0.0, 0.0, 0.0)  # m, world

    def validate(self, require_complete: bool = True):
        super().validate(require_complete)
        _check_actor(self.actor, "actor", require_complete)
        finite_vector3(self.local_position, "local_position")
        finite_vector3(self.target_position, "target_position")
        return self


@dataclass(kw_only=True)
class RigidPivotToRigidTargetConstraintParams(ConstraintParams):
    """g = T(r) - T_hat(r): the pivot follows the point a target rigid motion carries (digest 8)."""

    actor: Any = None
    local_position: Any = (0.0, 0.0, 0.0)  # m, actor local frame
    target_transform: TransformRT = field(default_factory=TransformRT)  # world-from-local target

    def validate(self, require_complete: bool = True):
        super().validate(require_complete)
        _check_actor(self.actor, "actor", require_complete)
        finite_vector3(self.local_position, "local_position")
        if not isinstance(self.target_transform, TransformRT):
            raise TypeError(f"target_transform must be a TransformRT, got {type(self.target_transform).__name__}")
        return self


@dataclass(kw_only=True)
class RigidPivotRotationConstraintParams(ConstraintParams):
    """g = Log(R R_l R_hat^-1) (digest 8). Both rotations are rotation vectors (rad)."""

    actor: Any = None
    local_rotation: Any = (0.0, 0.0, 0.0)  # pivot frame R_l in the actor's local frame
    target_rotation: Any = (0.0, 0.0, 0.0)  # world target R_hat

    def validate(self, require_complete: bool = True):
        super().validate(require_complete)
        _check_actor(self.actor, "actor", require_complete)
        finite_vector3(self.local_rotation, "local_rotation")
        finite_vector3(self.target_rotation, "target_rotation")
        return self


@dataclass(kw_only=True)
class _TwoActorParams(ConstraintParams):
    actor_a: Any = None
    actor_b: Any = None

    def validate(self, require_complete: bool = True):
        super().validate(require_complete)
        _check_actor(self.actor_a, "actor_a", require_complete)
        _check_actor(self.actor_b, "actor_b", require_complete)
        if self.actor_a is not None and self.actor_b is not None and self.actor_a is self.actor_b:
            raise ValueError("Constrained objects cannot be the same (actor_a is actor_b)")
        return self


@dataclass(kw_only=True)
class RigidSphericalJointConstraintParams(_TwoActorParams):
    """Ball joint: g = T_A(r_A) - T_B(r_B) (digest 8)."""

    local_pos_a: Any = (0.0, 0.0, 0.0)  # m, actor A local frame
    local_pos_b: Any = (0.0, 0.0, 0.0)  # m, actor B local frame

    def validate(self, require_complete: bool = True):
        super().validate(require_complete)
        finite_vector3(self.local_pos_a, "local_pos_a")
        finite_vector3(self.local_pos_b, "local_pos_b")
        return self


@dataclass(kw_only=True)
class RigidPrismaticJointConstraintParams(_TwoActorParams):
    """Slider: transverse offset pinned, optional travel limits along ``free_axis`` (digest 8).

    ``free_axis`` is given in world coordinates at creation and frozen in actor A's frame then; ``min`` / ``max``
    (m, optional) bound the travel relative to the offset at creation.
    """

    free_axis: Any = None  # world direction, non-zero; required
    min: Optional[float] = None  # m
    max: Optional[float] = None  # m

    def validate(self, require_complete: bool = True):
        super().validate(require_complete)
        if self.free_axis is None:
            if require_complete:
                raise ValueError("Free axis must be non-zero and finite (free_axis is not set)")
        else:
            axis = finite_vector3(self.free_axis, "free_axis")
            if np.linalg.norm(axis) < 1e-12:
                raise ValueError(f"Free axis must be non-zero and finite, got {axis.tolist()}")
        for name in ("min", "max"):
            value = getattr(self, name)
            if value is not None and not math.isfinite(float(value)):
                raise ValueError(f"{name} must be finite or None, got {value}")
        if self.min is not None and self.max is not None and float(self.max) < float(self.min):
            raise ValueError(f"Wrong limits for prismatic joint: min {self.min} > max {self.max}")
        return self


@dataclass(kw_only=True)
class JointRotationRangeConstraintParams(_TwoActorParams):
    """Per-component one-sided bounds on Log(R_0^-1 R_A^-1 R_B R_0 R_ref^-1) (digest 8).

    ``ref_frame_rot_vec`` is the joint frame in world coordinates at creation (rotation vector); with
    ``range_around_rest`` the bounds are relative to the relative rotation observed at creation.
    """

    ref_frame_rot_vec: Any = (0.0, 0.0, 0.0)
    angle_range_x: Any = (-TWO_PI, TWO_PI)  # rad, (min, max)
    angle_range_y: Any = (-TWO_PI, TWO_PI)
    angle_range_z: Any = (-TWO_PI, TWO_PI)
    range_around_rest: bool = True

    def validate(self, require_complete: bool = True):
        super().validate(require_complete)
        finite_vector3(self.ref_frame_rot_vec, "ref_frame_rot_vec")
        for name in ("angle_range_x", "angle_range_y", "angle_range_z"):
            finite_range(getattr(self, name), name)
        return self


@dataclass(kw_only=True)
class JointRotationTrackingConstraintParams(_TwoActorParams):
    """Drives Log((R_A R_hat R_0)^-1 R_B R_0) to zero; R_hat starts as the creation-time R_A^-1 R_B (digest 8)."""

    ref_frame_rot_vec: Any = (0.0, 0.0, 0.0)

    def validate(self, require_complete: bool = True):
        super().validate(require_complete)
        finite_vector3(self.ref_frame_rot_vec, "ref_frame_rot_vec")
        return self
