"""Solver, integration and actor parameter objects with the reference engine's names and defaults.

Defaults are those of the released reference engine (digest sections 2.1, 4 and 5.6). Every object has a
``validate()`` that raises a ``ValueError`` naming the offending field; the scene calls it at the boundary.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from .contact.params import ContactParams, GridSdfParams
from .contact.ramp import CoulombFrictionModel

DEFAULT_DENSITY = 1000.0  # kg/m^3
DEFAULT_GRAVITY = (0.0, -9.8, 0.0)  # m/s^2, Y up
DEFAULT_REL_STEP_TOL = 10.0 * float(np.finfo(np.float64).eps)  # 2.22e-15: the fp64 reference build's default
# (the fp32 build uses 10 * float32 epsilon = 1.19e-6; tests/reference_data/README.md)
AUTO_LINEAR_SOLVER_MAX_ITER = -1
REFERENCE_MAX_ITER = 4  # the reference engine's default NonLinearSolverParams.max_iter


class IntegrationMethod(enum.Enum):
    BACKWARD_EULER = 0
    DEFAULT = 0  # an alias of BACKWARD_EULER (reference enum)
    BDF2 = 1
    BDF3 = 2
    DIRK22 = 3
    DIRK23 = 4
    DIRK33 = 5
    SYMPLECTIC_DIRK12 = 6
    SYMPLECTIC_DIRK22 = 7
    COUNT = 8  # the number of methods (reference enum), not a method: SolverParams.validate rejects it


class NonLinearSolverType(enum.Enum):
    NEWTON = 0
    BFGS = 1
    SR1 = 2


class ConvergenceMode(enum.Enum):
    PER_ACTOR_WEIGHTED = 0
    GLOBAL = 1


class PsdProjMode(enum.Enum):
    ALWAYS = 0
    NEVER = 1
    IF_FAIL_RETRY = 2
    IF_FAIL_ALWAYS = 3


class InitialGuess(enum.Enum):
    """Where each stage's Newton iteration starts (not a reference setting; see NonLinearSolverParams)."""

    LATEST_SOLUTION = 0  # the previous step's (or stage's) pose: the reference's behaviour (reference_data)
    CONSTANT_VELOCITY = 1  # that pose advanced by its velocity over the stage: c + h v, exp(h omega) R
    # CONSTANT_VELOCITY, then every dynamic actor held by exactly one stiff, undamped RigidPivotPosition
    # constraint (k h^2 > 100 m: the target, not the inertia, decides where it ends) starts with that pivot on
    # its target: c = p_hat - R a (a mocap-driven body ends within micrometres of its target in free motion)
    CONSTANT_VELOCITY_AND_TARGETS = 2
    # CONSTANT_VELOCITY_AND_TARGETS, but a body whose start would penetrate a contact 4 penalty ramps deeper than
    # its latest pose does starts with its latest rotation (potentials.base.guess_outside)
    CONSTANT_VELOCITY_AND_TARGETS_OUTSIDE = 3


class LineSearchType(enum.Enum):
    NONE = 0
    SIMPLE = 1
    ARMIJO = 2
    WOLFE_WEAK = 3
    WOLFE_STRONG = 4
    RESIDUAL_NORM = 5
    ARMIJO_OR_RESIDUAL_NORM = 6


class LinearToleranceStrategy(enum.Enum):
    CONSTANT = 0
    EISENSTAT_WALKER1 = 1
    EISENSTAT_WALKER2 = 2


class Verbosity(enum.Enum):
    SILENT = 0
    ERROR = 1
    WARNING = 2
    INFO = 3
    VERBOSE = 4


class ConvergenceStatus(enum.Enum):
    """Outcome of a Newton solve (per world, and per actor for ``get_convergence_status``)."""

    NOT_STARTED = 0
    CONVERGED = 1
    STOPPED = 2  # iteration limit or step tolerance reached: the step goes on
    DIVERGED = 3  # explosion control fired: pose reverted, velocity zeroed


class QueryType(enum.Enum):
    """Queries must be registered (``scene.register_query`` or ``actor.register_query``) before stepping (digest 1).

    Every member and value of the released engine's enum; rigid actors here support TOTAL_CONTACT_FORCE,
    CONTACT_POINTS and SDF_DISTANCES, constraints CONSTRAINT_FORCE (``actor.is_query_supported``)."""

    NODE_POSITIONS = 0
    ELEMENTS_DEFORMATION_GRADIENT = 1
    SURFACE_NODE_POSITIONS = 2
    SURFACE_NODE_NORMALS = 3
    VISUAL_NODE_POSITIONS = 4
    VISUAL_NODE_NORMALS = 5
    CONTACT_SKIN_NODE_POSITIONS = 6
    CONTACT_SKIN_NODE_NORMALS = 7
    CONTACT_POINTS = 8
    ELASTIC_ENERGY = 9
    NODE_CONTACT_FORCES = 10
    CONSTRAINT_FORCE = 11
    ARTICULATED_CONTROLLER_FORCE = 12
    SDF_DISTANCES = 13
    TOTAL_CONTACT_FORCE = 14
    COUNT = 15


class LinearSolverType(enum.Enum):
    AUTO = 0
    LDLT = 1
    LU = 2
    CG = 3
    GMRES = 4
    MINRES = 5


class PreconditionerType(enum.Enum):
    NONE = 0
    JACOBI = 1
    PER_ACTOR = 2


class LinearSolverNormType(enum.Enum):
    RESIDUAL_L2 = 0
    PRECONDITIONED_RESIDUAL_L2 = 1


def _finite(owner: str, name: str, value, positive=False, nonnegative=False):
    try:
        v = float(value)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{owner}.{name} must be a number, got {value!r}") from exc
    if not math.isfinite(v):
        raise ValueError(f"{owner}.{name} must be finite, got {v}")
    if positive and v <= 0:
        raise ValueError(f"{owner}.{name} must be > 0, got {v}")
    if nonnegative and v < 0:
        raise ValueError(f"{owner}.{name} must be >= 0, got {v}")
    return v


def _enum(owner: str, name: str, value, enum_cls):
    if not isinstance(value, enum_cls):
        raise TypeError(f"{owner}.{name} must be a {enum_cls.__name__}, got {value!r}")


@dataclass
class SaturationHessianParams:
    constraint_saturation: bool = True
    contact_friction: bool = True
    joint_friction: bool = False


@dataclass
class ExperimentalEvalParams:
    explicit_normals: bool = False
    implicit_normal_force_for_dissipation: bool = False
    fade_friction: bool = True
    friction_model: CoulombFrictionModel = CoulombFrictionModel.C1_REGULARIZED
    fitted_saturation_hessian: SaturationHessianParams = field(default_factory=SaturationHessianParams)
    consistency_res_norm: bool = False
    consistency_res_norm_step: float = 1e-4

    def validate(self) -> "ExperimentalEvalParams":
        if self.explicit_normals and self.implicit_normal_force_for_dissipation:
            raise ValueError(
                "ExperimentalEvalParams: explicit_normals=True with implicit_normal_force_for_dissipation=True "
                "is not supported (as in the reference)"
            )
        _enum("ExperimentalEvalParams", "friction_model", self.friction_model, CoulombFrictionModel)
        return self


@dataclass
class NonLinearSolverParams:
    """Newton solver settings (digest section 4); defaults are the reference's."""

    solver_type: NonLinearSolverType = NonLinearSolverType.NEWTON
    d_residual_assembly_period: int = 1
    # The reference's default is 4 (REFERENCE_MAX_ITER). With 4, friction is ~20% too strong and a sliding cube
    # tips over at dt 0.01 because sticking-to-sliding transitions need 5-8 iterations; 16 reaches Coulomb's law
    # within 1% (README "Beyond the reference"). Iterations stop as soon as the tolerances hold, so converged
    # steps cost the same. ``NonLinearSolverParams.reference()`` gives the reference's defaults exactly.
    max_iter: int = 16
    max_elapsed_time_seconds: float = 0.0
    convergence_mode: ConvergenceMode = ConvergenceMode.PER_ACTOR_WEIGHTED
    abs_tol: float = 1e-3
    rel_tol: float = 1e-6
    rel_step_tol: float = DEFAULT_REL_STEP_TOL
    stop_if_no_improvement: bool = False
    psd_proj_mode: PsdProjMode = PsdProjMode.ALWAYS
    explosion_control: bool = True
    abs_div_tol: float = 1e9
    rel_div_tol: float = 1e4
    line_search_type: LineSearchType = LineSearchType.RESIDUAL_NORM
    line_search_max_iter: int = 4
    line_search_alpha: float = 0.5
    line_search_wolfe1: float = 1e-4
    line_search_wolfe2: float = 0.9
    line_search_max_rel_increase: float = 0.0
    linear_tolerance_strategy: LinearToleranceStrategy = LinearToleranceStrategy.EISENSTAT_WALKER2
    verbosity: Verbosity = Verbosity.WARNING
    # Not a reference field. LATEST_SOLUTION reproduces the reference's iterates. CONSTANT_VELOCITY starts where
    # a body moving steadily ends the stage: a body pushed at steady speed then starts with the contact depth of
    # the last step instead of the whole step's overlap, which the penalty's cubic blend region (force ~ depth^3
    # for depths < 2 eps) otherwise works off by a factor ~0.3 per iteration (README "Solver notes").
    initial_guess: InitialGuess = InitialGuess.LATEST_SOLUTION
    # Not a reference field. A world that reaches max_iter (or the time limit) unconverged keeps the iterate with
    # the lowest stage energy it visited instead of the last one (issue 16; the envs turn it on); off = the
    # reference.
    best_iterate_on_stop: bool = False

    @classmethod
    def reference(cls, **overrides) -> "NonLinearSolverParams":
        """The released reference engine's defaults (max_iter 4), for faithful comparisons."""
        return cls(**{"max_iter": REFERENCE_MAX_ITER, **overrides})

    def validate(self) -> "NonLinearSolverParams":
        o = "NonLinearSolverParams"
        _enum(o, "solver_type", self.solver_type, NonLinearSolverType)
        if self.solver_type is not NonLinearSolverType.NEWTON:
            raise ValueError(f"{o}.solver_type {self.solver_type.name} is not implemented; only NEWTON is")
        for name in ("max_iter", "line_search_max_iter", "d_residual_assembly_period"):
            v = getattr(self, name)
            if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 1:
                raise ValueError(f"{o}.{name} must be an integer >= 1, got {v!r}")
        _finite(o, "abs_tol", self.abs_tol, nonnegative=True)
        _finite(o, "rel_tol", self.rel_tol, nonnegative=True)
        _finite(o, "rel_step_tol", self.rel_step_tol, nonnegative=True)
        _finite(o, "max_elapsed_time_seconds", self.max_elapsed_time_seconds, nonnegative=True)
        _finite(o, "abs_div_tol", self.abs_div_tol, positive=True)
        _finite(o, "rel_div_tol", self.rel_div_tol, positive=True)
        alpha = _finite(o, "line_search_alpha", self.line_search_alpha)
        if not 0.0 < alpha < 1.0:
            raise ValueError(f"{o}.line_search_alpha must be in (0, 1), got {alpha}")
        w1 = _finite(o, "line_search_wolfe1", self.line_search_wolfe1)
        if not 0.0 < w1 < 1.0:
            raise ValueError(f"{o}.line_search_wolfe1 must be in (0, 1), got {w1}")
        _finite(o, "line_search_wolfe2", self.line_search_wolfe2)
        _finite(o, "line_search_max_rel_increase", self.line_search_max_rel_increase, nonnegative=True)
        _enum(o, "convergence_mode", self.convergence_mode, ConvergenceMode)
        _enum(o, "psd_proj_mode", self.psd_proj_mode, PsdProjMode)
        _enum(o, "initial_guess", self.initial_guess, InitialGuess)
        if not isinstance(self.best_iterate_on_stop, (bool, np.bool_)):
            raise TypeError(f"{o}.best_iterate_on_stop must be a bool, got {self.best_iterate_on_stop!r}")
        _enum(o, "line_search_type", self.line_search_type, LineSearchType)
        if self.line_search_type in (LineSearchType.WOLFE_WEAK, LineSearchType.WOLFE_STRONG):
            raise ValueError(f"{o}.line_search_type {self.line_search_type.name} is not implemented")
        return self


@dataclass
class LinearSolverParams:
    """Linear solver settings. Dense batched Cholesky/LDLT is used for the small per-world systems here;
    the fields are kept for API compatibility and validated."""

    solver_type: LinearSolverType = LinearSolverType.AUTO
    preconditioner_type: PreconditionerType = PreconditionerType.PER_ACTOR
    abs_tol: float = 1e-9
    rel_tol: float = 1e-5
    max_iter: int = AUTO_LINEAR_SOLVER_MAX_ITER
    norm_type: LinearSolverNormType = LinearSolverNormType.PRECONDITIONED_RESIDUAL_L2
    restart_size: int = 1000
    rel_div_tol: float = 1e10
    abort_if_not_spd: bool = False

    def validate(self) -> "LinearSolverParams":
        o = "LinearSolverParams"
        _enum(o, "solver_type", self.solver_type, LinearSolverType)
        _finite(o, "abs_tol", self.abs_tol, nonnegative=True)
        _finite(o, "rel_tol", self.rel_tol, nonnegative=True)
        _finite(o, "rel_div_tol", self.rel_div_tol, positive=True)
        if self.max_iter != AUTO_LINEAR_SOLVER_MAX_ITER and self.max_iter < 1:
            raise ValueError(f"{o}.max_iter must be -1 (auto) or >= 1, got {self.max_iter}")
        return self


@dataclass
class SolverParams:
    non_linear_solver: NonLinearSolverParams = field(default_factory=NonLinearSolverParams)

    @classmethod
    def reference(cls) -> "SolverParams":
        """The released reference engine's solver defaults (see NonLinearSolverParams.reference)."""
        return cls(non_linear_solver=NonLinearSolverParams.reference())

    linear_solver: LinearSolverParams = field(default_factory=LinearSolverParams)
    integration_method: IntegrationMethod = IntegrationMethod.BACKWARD_EULER
    experimental_eval: ExperimentalEvalParams = field(default_factory=ExperimentalEvalParams)

    def validate(self) -> "SolverParams":
        if not isinstance(self.integration_method, IntegrationMethod):
            raise TypeError(f"SolverParams.integration_method must be an IntegrationMethod, got {self.integration_method!r}")
        if self.integration_method is IntegrationMethod.COUNT:
            raise ValueError("SolverParams.integration_method COUNT is the number of methods, not a method")
        self.non_linear_solver.validate()
        self.linear_solver.validate()
        self.experimental_eval.validate()
        return self


@dataclass
class SolverStats:
    """What ``scene.get_solver_stats()`` returns: the worst over all worlds and stages of the last step."""

    convergence_status: ConvergenceStatus = ConvergenceStatus.NOT_STARTED
    max_non_linear_iters: int = 0
    max_line_search_iters: int = 0
    residual_norm: float = 0.0
    # Not a reference field: the largest surface travel of a dynamic body in the step over the half thickness of
    # a static collider within its reach, over all worlds (sim/tunnelling.py); >= 1: it may have passed through.
    max_tunnelling_ratio: float = 0.0


@dataclass
class PerformanceStats:
    """Wall-clock seconds of the last step, split by pipeline stage."""

    total_step_time: float = 0.0
    assembly_time: float = 0.0
    linear_solve_time: float = 0.0
    line_search_time: float = 0.0
    num_stages: int = 0


@dataclass
class RigidActorParams:
    """Creation fields of a rigid actor: every field of the seed page's table, same names and defaults."""

    name: str = ""
    layer: str = ""
    shape: object = None
    world_from_local: object = None  # TransformRT; None -> identity
    collider_type: object = None  # ColliderType; None -> AUTO
    is_static: bool = False
    contact: ContactParams = field(default_factory=ContactParams)
    sdf: GridSdfParams = field(default_factory=GridSdfParams)
    has_gravity: bool = True
    density: Optional[float] = None  # kg/m^3
    mass: Optional[float] = None  # kg
    center_of_mass: Optional[tuple] = None  # local frame, m
    moment_of_inertia: Optional[tuple] = None  # Real6 (ixx, ixy, ixz, iyy, iyz, izz), about CoM, local axes
    boundary_element_type: object = None  # ActorBoundaryElementType; None -> DEFAULT (P1Q3)
    boundary_subsampling: object = None  # Optional[BoundarySubsamplingParams]
    linear_velocity: Optional[tuple] = None  # m/s, world
    angular_velocity: Optional[tuple] = None  # rad/s, world
