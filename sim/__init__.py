"""superdex_gym.sim: a float64 re-implementation of the rigid actors of SuperDex Physics in Python, its hot loops
numba kernels compiled at first use (numpy and scipy for the rest).

Bind it where a reference script imports the engine (``import superdex_gym.sim as mochi``) and the reference's
rigid-actor API works under the same names: ``create_scene``, ``create_plane_shape``, ``load_shape_from_file``,
``scene.create_rigid_actor(...)``, ``scene.step(dt)``, ... Scenes can hold many worlds (``set_num_worlds``) that
advance in one call.
"""

from . import experimental, lie, utils
from .actor import RigidActor
from .articulated import (
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
from .articulated.actor import ArticulatedActor, ArticulatedLinkActor
from .articulated.constraints import ArticulatedConstraint
from .assets_path import ASSETS_PATH
from .contact.colliders import ColliderType
from .contact.params import (
    GRID_SDF_DEFAULT_BOUNDARY_PADDING,
    ContactPairParamsOverride,
    ContactParams,
    GridSdfParams,
    SdfResolutionMode,
)
from .contact.system import ContactPoint, IncludeNestedActors
from .constraints.system import Constraint
from .constraints.params import (
    ConstraintParams,
    JointRotationRangeConstraintParams,
    JointRotationTrackingConstraintParams,
    RigidPivotPositionConstraintParams,
    RigidPivotRotationConstraintParams,
    RigidPivotToRigidTargetConstraintParams,
    RigidPrismaticJointConstraintParams,
    RigidSphericalJointConstraintParams,
)
from .geometry_types import (
    Aabb,
    ActorType,
    Box,
    Error,
    FileFormat,
    GridSdfData,
    MeshData,
    MeshDataView,
    Obb,
    Plane,
    QueryHandle,
    Real3,
    Real6,
    SceneHandle,
    SdfDistances,
    Sphere,
)
from .context import create_scene, destroy_scene, initialize, is_initialized, shutdown
from .mass_properties import MassProperties, compute_mass_properties, compute_shape_mass_properties
from .mesh_io import bake_shape, load_shape_from_file, save_shape_to_file
from .params import (
    AUTO_LINEAR_SOLVER_MAX_ITER,
    DEFAULT_DENSITY,
    DEFAULT_GRAVITY,
    DEFAULT_REL_STEP_TOL,
    REFERENCE_MAX_ITER,
    ConvergenceMode,
    ConvergenceStatus,
    CoulombFrictionModel,
    ExperimentalEvalParams,
    InitialGuess,
    IntegrationMethod,
    LinearSolverNormType,
    LinearSolverParams,
    LinearSolverType,
    LinearToleranceStrategy,
    LineSearchType,
    NonLinearSolverParams,
    NonLinearSolverType,
    PerformanceStats,
    PreconditionerType,
    PsdProjMode,
    QueryType,
    RigidActorParams,
    SaturationHessianParams,
    SolverParams,
    SolverStats,
    Verbosity,
)
from .quadrature import ActorBoundaryElementType, BoundarySubsamplingParams, SubsamplingStrategy
from .scene import Scene
from .shapes import (
    Shape,
    create_box_mesh_shape,
    create_icosphere_shape,
    create_plane_shape,
    create_sphere_shape,
    create_tet_mesh_shape,
    create_tri_mesh_shape,
    get_shape_aabb,
    release_shape,
)
from .transforms import Quaternion, TransformRT

Actor = RigidActor

# The reference's enum names where ours were named differently first (same members).
BoundarySubsamplingStrategy = SubsamplingStrategy
GridSdfResolutionMode = SdfResolutionMode
LinearSolverConvergenceNorm = LinearSolverNormType
NonLinearSolverConvergenceMode = ConvergenceMode
PsdProjectionMode = PsdProjMode
VerbosityLevel = Verbosity
