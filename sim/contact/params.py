"""Contact parameter objects, with the reference engine's names and defaults (digest 5.2, 5.6)."""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, fields

from .ramp import CoulombFrictionModel, coerce_friction_model


def _check_finite(name: str, value: float) -> float:
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    return value


@dataclass
class ContactParams:
    """Per-actor contact and friction parameters (digest 5.6). Units in the field comments."""

    penalty_coefficient: float = 1e9  # Pa/m, k
    penalty_smoothing_half_distance: float = 0.005  # m, epsilon
    penalty_threshold_default: float = 0.001  # m, delta (negative allowed)
    penalty_threshold_extra_padding: float = 0.0  # m, added to delta for NONE / POINT_CLOUD colliding actors
    friction_with_collider_normal: bool = True
    max_alignment_normals: float = 0.0  # in [-1, 1]
    viscous_friction_coefficient: float = 0.0  # s/m, c_t
    coulomb_friction_coefficient: float = 0.5  # mu
    friction_falloff_vel: float = 0.01  # m/s, V_f
    normal_viscous_damping_coefficient: float = 0.0  # s/m, c_n
    distance_error_bound: float = 0.0  # m
    colliding_penalty_length_scale: float = 1.0  # m
    obj_scale: float = 1.0

    def validate(self) -> "ContactParams":
        for name in (
            "penalty_coefficient", "penalty_smoothing_half_distance", "penalty_threshold_default",
            "penalty_threshold_extra_padding", "max_alignment_normals", "viscous_friction_coefficient",
            "coulomb_friction_coefficient", "friction_falloff_vel", "normal_viscous_damping_coefficient",
            "distance_error_bound", "colliding_penalty_length_scale", "obj_scale",
        ):
            _check_finite(f"ContactParams.{name}", getattr(self, name))
        for name in ("penalty_coefficient", "viscous_friction_coefficient", "coulomb_friction_coefficient",
                     "normal_viscous_damping_coefficient", "penalty_threshold_extra_padding", "distance_error_bound"):
            if getattr(self, name) < 0:
                raise ValueError(f"ContactParams.{name} must be >= 0, got {getattr(self, name)}")
        for name in ("penalty_smoothing_half_distance", "friction_falloff_vel", "colliding_penalty_length_scale"):
            if getattr(self, name) <= 0:
                raise ValueError(f"ContactParams.{name} must be > 0, got {getattr(self, name)}")
        if not -1.0 <= self.max_alignment_normals <= 1.0:
            raise ValueError(f"ContactParams.max_alignment_normals must be in [-1, 1], got {self.max_alignment_normals}")
        return self

    def get_penalty_threshold_dist(self, add_padding: bool) -> float:
        """delta, plus the extra padding when ``add_padding``."""
        return self.penalty_threshold_default + (self.penalty_threshold_extra_padding if add_padding else 0.0)


class SdfResolutionMode(enum.Enum):
    LARGEST_AXIS = 0
    SMALLEST_AXIS = 1
    MEAN_AXIS = 2
    LARGEST_EDGE = 3
    SMALLEST_EDGE = 4
    MEAN_EDGE = 5
    EXPLICIT = 6


GRID_SDF_DEFAULT_BOUNDARY_PADDING = 0.005


@dataclass
class GridSdfParams:
    """Grid SDF resolution and padding (digest 2.1, 5.2)."""

    resolution_mode: SdfResolutionMode = SdfResolutionMode.MEAN_EDGE
    resolution_delta: tuple = (0.25, 0.25, 0.25)
    min_grid_resolution: tuple = (6, 6, 6)
    boundary_padding_dist: float = GRID_SDF_DEFAULT_BOUNDARY_PADDING

    def validate(self) -> "GridSdfParams":
        if len(self.resolution_delta) != 3 or any(not (float(d) > 0 and math.isfinite(float(d))) for d in self.resolution_delta):
            raise ValueError(f"GridSdfParams.resolution_delta must be 3 positive finite numbers, got {self.resolution_delta}")
        if len(self.min_grid_resolution) != 3 or any(int(n) < 2 for n in self.min_grid_resolution):
            raise ValueError(f"GridSdfParams.min_grid_resolution must be 3 integers >= 2, got {self.min_grid_resolution}")
        _check_finite("GridSdfParams.boundary_padding_dist", self.boundary_padding_dist)
        if self.boundary_padding_dist < 0:
            raise ValueError("GridSdfParams.boundary_padding_dist must be >= 0")
        return self


# ------------------------------------------------------------------------------------------------------------------
# Pair parameters (digest 5.6, "Parameter combination"; physics/docs/concepts/contact.md, "Contact Parameter
# Combination").


@dataclass
class ContactPairParamsOverride:
    """Per ordered pair overrides (reference ``ContactPairParamsOverride``): a field left ``None`` keeps the combined
    value. Only the five combined coefficients can be overridden, as in the reference."""

    penalty_coefficient: float | None = None  # Pa/m
    friction_falloff_vel: float | None = None  # m/s
    viscous_friction_coefficient: float | None = None  # s/m
    coulomb_friction_coefficient: float | None = None  # -
    normal_viscous_damping_coefficient: float | None = None  # s/m


def combine_contact_params(
    colliding: ContactParams,
    collider: ContactParams,
    collider_is_static: bool,
    override: ContactPairParamsOverride | None = None,
) -> ContactParams:
    """The parameters of the ordered pair (colliding actor A supplies samples, collider B supplies the SDF).

    Rules (digest 5.6): every field comes from the collider, except

    * mu, c_t, c_n: geometric mean sqrt(a * b) (so 0 on either side disables the term);
    * k and V_f: geometric mean when the collider is dynamic, the colliding actor's value when it is static;
    * ``colliding_penalty_length_scale``: always the colliding actor's (contact.md table; it only matters for
      lower-dimensional colliding manifolds, never for rigid surfaces);
    * a field set in ``override`` replaces the combined value.

    epsilon, delta, the extra padding, ``friction_with_collider_normal``, ``max_alignment_normals``,
    ``distance_error_bound`` and ``obj_scale`` therefore come from the collider.
    """
    if not isinstance(colliding, ContactParams) or not isinstance(collider, ContactParams):
        raise TypeError("combine_contact_params expects two ContactParams")
    if override is not None and not isinstance(override, ContactPairParamsOverride):
        raise TypeError(f"override must be a ContactPairParamsOverride or None, got {override!r}")
    colliding.validate()
    collider.validate()

    def geometric_mean(name: str) -> float:
        return math.sqrt(getattr(colliding, name) * getattr(collider, name))

    combined = ContactParams(**{f.name: getattr(collider, f.name) for f in fields(ContactParams)})
    for name in ("coulomb_friction_coefficient", "viscous_friction_coefficient", "normal_viscous_damping_coefficient"):
        setattr(combined, name, geometric_mean(name))
    for name in ("penalty_coefficient", "friction_falloff_vel"):
        setattr(combined, name, getattr(colliding, name) if collider_is_static else geometric_mean(name))
    combined.colliding_penalty_length_scale = colliding.colliding_penalty_length_scale
    if override is not None:
        for f in fields(ContactPairParamsOverride):
            value = getattr(override, f.name)
            if value is not None:
                setattr(combined, f.name, _check_finite(f"ContactPairParamsOverride.{f.name}", value))
    return combined.validate()


# ------------------------------------------------------------------------------------------------------------------
# Evaluation switches (the contact subset of the reference's ExperimentalEvalParams, digest 5.6).


@dataclass(frozen=True)
class ContactEvalConfig:
    """How the contact terms are evaluated; defaults are the reference's.

    * ``explicit_normals``: dissipation uses stage-start normals, alignment, friction plane and the true
      stage-start load (an exact incremental potential). Default False: current geometry, and the load at the
      reconstructed stage-start distance d0 = phi - G . dp, held fixed (the residual is then not the exact
      gradient of the returned energy, digest 5.3).
    * ``implicit_normal_force_for_dissipation``: load from the current distance (not with explicit normals).
    * ``fade_friction``: the alignment fade factor a = (m - s)/(m + 1) on the dissipation load.
    * ``friction_model``: `CoulombFrictionModel` of ``ramp.py`` (an enum member of the same name is accepted).
    * ``fitted_friction_hessian``: Coulomb Hessian mu lam f'(x)/x on the whole tangent plane (reference default,
      ``SaturationHessianParams.contact_friction``); False gives the exact Hessian of the Coulomb term.
    * ``exact_geometric_hessian``: add the SDF curvature term and the second-order rotation terms, so that the
      Hessian is the exact derivative of the gradient (for finite-difference tests). Default False: the
      reference's Gauss-Newton blocks J^T (d^2 E / dY^2 without SDF curvature) J.
    """

    explicit_normals: bool = False
    implicit_normal_force_for_dissipation: bool = False
    fade_friction: bool = True
    friction_model: object = None  # None -> CoulombFrictionModel.C1_REGULARIZED
    fitted_friction_hessian: bool = True
    exact_geometric_hessian: bool = False

    def __post_init__(self):
        model = CoulombFrictionModel.C1_REGULARIZED if self.friction_model is None else self.friction_model
        object.__setattr__(self, "friction_model", coerce_friction_model(model))
        if self.explicit_normals and self.implicit_normal_force_for_dissipation:
            raise ValueError(
                "ContactEvalConfig: explicit_normals=True with implicit_normal_force_for_dissipation=True is not "
                "supported (as in the reference)"
            )

    @staticmethod
    def from_experimental(eval_params, exact_geometric_hessian: bool = False) -> "ContactEvalConfig":
        """From an ``ExperimentalEvalParams``-like object (fields read by name)."""
        return ContactEvalConfig(
            explicit_normals=bool(eval_params.explicit_normals),
            implicit_normal_force_for_dissipation=bool(eval_params.implicit_normal_force_for_dissipation),
            fade_friction=bool(eval_params.fade_friction),
            friction_model=eval_params.friction_model,
            fitted_friction_hessian=bool(eval_params.fitted_saturation_hessian.contact_friction),
            exact_geometric_hessian=exact_geometric_hessian,
        )
