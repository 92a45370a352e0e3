"""Compliant constraints (digest 8, ``physics/docs/concepts/constraints.mdx``): params and potentials.

One `RigidConstraintSet` subclass per constraint type holds every constraint of that type for all worlds and is a
`Potential`; the scene's ``create_*_constraint`` factories add to them. See `base` for the energy and its
derivatives, and each type's module for its constraint value g.
"""

from .base import ConstraintKinematics, ConstraintLocalTerms, RigidConstraintSet
from .joint_rotation import JointRotationRangeConstraints, JointRotationTrackingConstraints
from .joints import RigidPrismaticJointConstraints, RigidSphericalJointConstraints
from .params import (
    ConstraintParams,
    JointRotationRangeConstraintParams,
    JointRotationTrackingConstraintParams,
    RigidPivotPositionConstraintParams,
    RigidPivotRotationConstraintParams,
    RigidPivotToRigidTargetConstraintParams,
    RigidPrismaticJointConstraintParams,
    RigidSphericalJointConstraintParams,
)
from .pivots import RigidPivotPositionConstraints, RigidPivotRotationConstraints, RigidPivotToRigidTargetConstraints

# Params type -> constraint-set class, for the scene's factories.
CONSTRAINT_SET_FOR_PARAMS = {
    cls.params_type: cls
    for cls in (
        RigidPivotPositionConstraints,
        RigidPivotToRigidTargetConstraints,
        RigidPivotRotationConstraints,
        RigidSphericalJointConstraints,
        RigidPrismaticJointConstraints,
        JointRotationRangeConstraints,
        JointRotationTrackingConstraints,
    )
}

__all__ = [
    "CONSTRAINT_SET_FOR_PARAMS",
    "ConstraintKinematics",
    "ConstraintLocalTerms",
    "ConstraintParams",
    "JointRotationRangeConstraintParams",
    "JointRotationRangeConstraints",
    "JointRotationTrackingConstraintParams",
    "JointRotationTrackingConstraints",
    "RigidConstraintSet",
    "RigidPivotPositionConstraintParams",
    "RigidPivotPositionConstraints",
    "RigidPivotRotationConstraintParams",
    "RigidPivotRotationConstraints",
    "RigidPivotToRigidTargetConstraintParams",
    "RigidPivotToRigidTargetConstraints",
    "RigidPrismaticJointConstraintParams",
    "RigidPrismaticJointConstraints",
    "RigidSphericalJointConstraintParams",
    "RigidSphericalJointConstraints",
]
