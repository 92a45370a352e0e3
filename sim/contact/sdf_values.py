"""Small shared types of the collider fields: the (phi, G, H) triple and the broad-phase bounding primitive."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["SdfValues", "SdfBound", "as_points"]


class SdfValues(NamedTuple):
    phi: np.ndarray  # (...,) m, signed distance, negative inside
    grad: np.ndarray  # (..., 3) raw gradient G of phi
    hessian: np.ndarray | None  # (..., 3, 3) Hessian of phi where defined, None when not requested


class SdfBound(NamedTuple):
    """A sphere (centre ``vector``, radius ``scalar``) containing the zero level set, or a half-space
    {n . x <= d} (``is_halfspace``, n = ``vector``, d = ``scalar``) equal to the collider itself."""

    is_halfspace: bool
    vector: np.ndarray  # (3,)
    scalar: float


def as_points(points) -> np.ndarray:
    y = np.asarray(points, dtype=np.float64)
    if y.ndim < 1 or y.shape[-1] != 3:
        raise ValueError(f"query points must have shape (..., 3), got {y.shape}")
    return y

