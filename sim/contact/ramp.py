"""Scalar activation kernels of the contact model: the penalty ramp and the friction regularizers (digest 5.3).

Every function here is a per-sample scalar kernel: it takes arrays of any (matching, broadcastable) shape and
returns the value and its first and second derivatives with respect to ``x``, elementwise. Geometry (the signed
distance, its gradient, the tangent projection) lives in ``penalty.py`` / ``friction.py``, which apply the chain
rule to these kernels (DESIGN section 5, item 3: "keep scalar ramps apart from geometric derivatives").

* ``poly_relu(x, t, shift)``: the C^2 smoothed ReLU of the penalty, ``PolyReLU`` in the reference
  (``mochi_core/utils/activations.h``; ``physics/docs/concepts/contact.md``, "Frictionless Normal Penalty").
  With ``y = x - shift``: 0 for ``y <= -t``; ``3t/16 + (1/2 + 3y/(8t) - y^3/(16 t^3)) y`` for ``|y| < t``;
  ``y`` for ``y >= t``. The contact code calls it as ``poly_relu(-phi, eps, eps - delta)``, i.e. the digest's
  ``z = -phi - (eps - delta)``.
* ``step_c1(x, t)``: ``IPCstepC1`` (Li et al. 2020, "Incremental Potential Contact"), the default Coulomb
  regularizer: ``x^2/t - x^3/(3 t^2)`` for ``x < t`` and ``x - t/3`` beyond; its derivative is the C^1
  interpolant ``2x/t - x^2/t^2`` of the unit step.
* ``step_cinf(x, eps)``: the C-infinity option ``sqrt(x^2 + eps^2/4) - eps/2`` (``CinfRegularized``); the 1/4
  makes its curvature at 0 (2/eps) equal to that of ``step_c1`` with ``t = eps``.

The friction kernels also return ``f'(x)/x`` evaluated robustly (no division by a vanishing ``x``): it is the
tangent-plane eigenvalue of the friction Hessian.
"""

from __future__ import annotations

import enum
from typing import NamedTuple

import numpy as np

__all__ = [
    "CoulombFrictionModel",
    "RampValues",
    "SmootherValues",
    "poly_relu",
    "step_c1",
    "step_cinf",
    "friction_smoother",
    "coerce_friction_model",
]

# Smallest regularization width used by step_cinf (the reference clamps eps to machine epsilon so that
# eps = 0 does not divide by zero).
_CINF_MIN_EPS = np.finfo(np.float64).eps


class CoulombFrictionModel(enum.Enum):
    """Regularization of the Coulomb term (reference ``CoulombFrictionModel``)."""

    C1_REGULARIZED = 0  # IPCstepC1, compact transition over [0, V_f dt]
    CINF_REGULARIZED = 1  # sqrt(x^2 + eps^2/4) - eps/2, no compact support


class RampValues(NamedTuple):
    value: np.ndarray  # h
    d1: np.ndarray  # h'
    d2: np.ndarray  # h''


class SmootherValues(NamedTuple):
    value: np.ndarray  # f(x)
    d1: np.ndarray  # f'(x)
    d2: np.ndarray  # f''(x)
    d1_over_x: np.ndarray  # f'(x) / x, finite at x = 0


def coerce_friction_model(model) -> CoulombFrictionModel:
    """Accept a `CoulombFrictionModel`, any enum member with the same name (e.g. ``sim.params``'s), or its name."""
    if isinstance(model, CoulombFrictionModel):
        return model
    name = model.name if isinstance(model, enum.Enum) else model
    if isinstance(name, str) and name.upper() in CoulombFrictionModel.__members__:
        return CoulombFrictionModel[name.upper()]
    expected = list(CoulombFrictionModel.__members__)
    raise ValueError(f"unknown Coulomb friction model {model!r}; expected one of {expected}")


def poly_relu(x, t, shift, check: bool = True) -> RampValues:
    """C^2 smoothed ReLU centred at ``shift`` with half-width ``t >= 0`` (``t == 0`` gives the exact ReLU).

    Returns ``(h, h', h'')`` with respect to ``x``. ``h'`` is clamped to [0, 1] and ``h, h''`` to >= 0 as in the
    reference, which only removes round-off at the ends of the blend. ``check=False`` skips the validation of
    ``t`` (for callers whose parameters were validated once, e.g. the contact potential's pair table).
    """
    x = np.asarray(x, dtype=np.float64)
    t = np.asarray(t, dtype=np.float64)
    shift = np.asarray(shift, dtype=np.float64)
    if check and (np.any(t < 0) or not np.all(np.isfinite(t))):
        raise ValueError("poly_relu: the half-width t must be finite and >= 0")
    y = x - shift
    outside = (t <= 0) | (np.abs(y) >= t)
    safe_t = np.where(t > 0, t, 1.0)
    s = y / safe_t  # in (-1, 1) on the blend
    s3 = s**3
    blend = 3.0 * safe_t / 16.0 + (0.5 + 0.375 * s - s3 / 16.0) * y
    blend_d1 = 0.5 + 0.75 * s - 0.25 * s3
    blend_d2 = 0.75 * (1.0 - s * s) / safe_t
    positive = y > 0
    value = np.maximum(0.0, np.where(outside, np.where(positive, y, 0.0), blend))
    d1 = np.minimum(np.maximum(np.where(outside, positive.astype(np.float64), blend_d1), 0.0), 1.0)
    d2 = np.maximum(0.0, np.where(outside, 0.0, blend_d2))
    return RampValues(value, d1, d2)


def _check_nonnegative(name: str, x: np.ndarray, t: np.ndarray) -> None:
    if np.any(x < 0) or not np.all(np.isfinite(x)):
        raise ValueError(f"{name}: x must be finite and >= 0 (it is a norm)")
    if np.any(t < 0) or not np.all(np.isfinite(t)):
        raise ValueError(f"{name}: the regularization width must be finite and >= 0")


def step_c1(x, t, check: bool = True) -> SmootherValues:
    """IPCstepC1: ``f = x^2/t - x^3/(3t^2)`` (x < t), ``x - t/3`` (x >= t); x >= 0, t >= 0.

    ``f' = 2x/t - x^2/t^2`` then 1; ``f'' = 2(1 - x/t)/t`` then 0; ``f'/x = (2 - x/t)/t`` then ``1/x``
    (0 at x = t = 0, as in the reference). ``check=False`` skips the input validation.
    """
    x = np.asarray(x, dtype=np.float64)
    t = np.asarray(t, dtype=np.float64)
    if check:
        _check_nonnegative("step_c1", x, t)
    saturated = x >= t
    safe_t = np.where(t > 0, t, 1.0)
    r = x / safe_t
    value = np.where(saturated, x - t / 3.0, x * r * (1.0 - r / 3.0))
    d2 = np.where(saturated, 0.0, 2.0 * (1.0 - r) / safe_t)
    positive = x > 0
    safe_x = np.where(positive, x, 1.0)
    d1_over_x = np.where(saturated, np.where(positive, 1.0 / safe_x, 0.0), (2.0 - r) / safe_t)
    d1 = np.where(saturated, 1.0, x * d1_over_x)
    return SmootherValues(value, d1, d2, d1_over_x)


def step_cinf(x, eps, check: bool = True) -> SmootherValues:
    """C-infinity friction smoother ``f = sqrt(x^2 + eps^2/4) - eps/2``; x >= 0, eps >= 0 (clamped to machine eps).

    ``f' = x/s``, ``f'' = (eps^2/4)/s^3``, ``f'/x = 1/s`` with ``s = sqrt(x^2 + eps^2/4)``.
    """
    x = np.asarray(x, dtype=np.float64)
    eps = np.asarray(eps, dtype=np.float64)
    if check:
        _check_nonnegative("step_cinf", x, eps)
    eps = np.maximum(eps, _CINF_MIN_EPS)
    quarter_eps_sq = 0.25 * eps * eps
    s = np.sqrt(x * x + quarter_eps_sq)
    inv_s = 1.0 / s
    return SmootherValues(s - 0.5 * eps, x * inv_s, quarter_eps_sq * inv_s**3, inv_s)


def friction_smoother(model, x, t, check: bool = True) -> SmootherValues:
    """Dispatch on the Coulomb friction model; ``t`` is the regularization width ``V_f * dt_i`` [m]."""
    model = coerce_friction_model(model)
    if model is CoulombFrictionModel.C1_REGULARIZED:
        return step_c1(x, t, check)
    return step_cinf(x, t, check)
