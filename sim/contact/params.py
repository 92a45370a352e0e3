"""Contact parameter objects, with the reference engine's names and defaults (digest 5.2, 5.6)."""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field


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
