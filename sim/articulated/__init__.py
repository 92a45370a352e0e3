"""Articulated actors in generalized coordinates: the reference's parameters, the frozen model, kinematics and the
numpy oracle of their stage energy (the compiled path lands on the kernel layer)."""

from .model import ArticulationModel, build_model, get_articulated_shape_info
from .params import (
    Articulated3dRotationRangeConstraintParams,
    Articulated3dRotationTargetConstraintParams,
    ArticulatedActorParams,
    ArticulatedCycleJointParams,
    ArticulatedDofInfo,
    ArticulatedJointFrictionParams,
    ArticulatedJointParams,
    ArticulatedJointType,
    ArticulatedLinkParams,
    ArticulatedShapeInfo,
    ArticulatedSingleDofRangeConstraintParams,
    ArticulatedSingleDofTargetConstraintParams,
    PoseControllerParams,
    PoseTrackingParams,
)
