"""Per-sample normal penalty: W = k/2 h(-phi)^2 per unit reference area (digest 5.3; contact.md "Frictionless
Normal Penalty").

Two levels, as everywhere in the contact code:

* ``penalty_scalar(phi, ...)``: the scalar kernel of the distance alone, with h = poly_relu(-phi, eps, eps - delta):
  ``w = k/2 h^2``, ``dw/dphi = -k h h'`` (so the load is ``lambda_n = k h h' >= 0``) and
  ``d^2w/dphi^2 = k (h'^2 + h h'')``.
* ``penalty_energy(phi, G, H_phi, ...)``: the chain rule to the sample's collider-frame position Y,
  with phi = Phi(Y), G = grad Phi, H_phi = hess Phi:

      dW/dY     = dw/dphi G                      (= -lambda_n G: the traction T_n = lambda_n G pushes out)
      d^2W/dY^2 = d^2w/dphi^2 G G^T + dw/dphi H_phi

  Without ``H_phi`` (or with ``include_curvature=False``) the second term is dropped: the reference's
  ``dForce = -k (h'^2 + h h'') G G^T`` (PSD), a Gauss-Newton Hessian.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .ramp import poly_relu

__all__ = ["PenaltyScalar", "PenaltyTerms", "penalty_scalar", "penalty_energy", "penalty_energy_components"]


class PenaltyScalar(NamedTuple):
    energy: np.ndarray  # w = k/2 h^2 [J/m^2 = Pa m]
    d_phi: np.ndarray  # dw/dphi = -k h h' [Pa]
    d2_phi: np.ndarray  # d^2 w / dphi^2 = k (h'^2 + h h'') [Pa/m]
    load: np.ndarray  # lambda_n = k h h' >= 0 [Pa]


class PenaltyTerms(NamedTuple):
    energy: np.ndarray  # (R,) per unit area
    grad: np.ndarray  # (R, 3) dW/dY
    hessian: np.ndarray | None  # (R, 3, 3) d^2W/dY^2
    load: np.ndarray  # (R,) lambda_n


def penalty_scalar(
    phi, penalty_coefficient, smoothing_half_distance_m, threshold_m, check: bool = True
) -> PenaltyScalar:
    """Scalar penalty kernel of the signed distance ``phi`` [m]; parameters broadcast against ``phi``.

    Active for phi < delta, blended over delta - 2 eps < phi < delta, linear in the penetration below.
    ``check=False`` skips the parameter validation (parameters validated once by the caller).
    """
    phi = np.asarray(phi, dtype=np.float64)
    k = np.asarray(penalty_coefficient, dtype=np.float64)
    eps = np.asarray(smoothing_half_distance_m, dtype=np.float64)
    delta = np.asarray(threshold_m, dtype=np.float64)
    if check and np.any(k < 0):
        raise ValueError("penalty_scalar: the penalty coefficient must be >= 0")
    # h(x) with x = -phi; dh/dphi = -h'(x), d^2h/dphi^2 = h''(x).
    h = poly_relu(-phi, eps, eps - delta, check)
    load = k * h.value * h.d1
    return PenaltyScalar(0.5 * k * h.value**2, -load, k * (h.d1**2 + h.value * h.d2), load)


def penalty_energy(
    phi,
    grad,
    hess_phi,
    penalty_coefficient,
    smoothing_half_distance_m,
    threshold_m,
    want_hessian: bool,
    include_curvature: bool = True,
) -> PenaltyTerms:
    """Penalty energy density and its derivatives with respect to the collider-frame position Y (see module doc).

    ``phi`` (R,), ``grad`` (R, 3), ``hess_phi`` (R, 3, 3) or None.
    """
    g = np.moveaxis(np.asarray(grad, dtype=np.float64), -1, 0)
    hp = None if hess_phi is None else np.moveaxis(np.asarray(hess_phi, dtype=np.float64), (-2, -1), (0, 1))
    t = penalty_energy_components(phi, g, hp, penalty_coefficient, smoothing_half_distance_m, threshold_m,
                                  want_hessian, include_curvature)
    hW = None if t.hessian is None else np.moveaxis(t.hessian, (0, 1), (-2, -1))
    return PenaltyTerms(t.energy, np.moveaxis(t.grad, 0, -1), hW, t.load)


def penalty_energy_components(
    phi,
    grad,
    hess_phi,
    penalty_coefficient,
    smoothing_half_distance_m,
    threshold_m,
    want_hessian: bool,
    include_curvature: bool = True,
    scalar: PenaltyScalar | None = None,
) -> PenaltyTerms:
    """`penalty_energy` with component-first arrays: ``grad`` (3, R), ``hess_phi`` (3, 3, R) or None; the returned
    gradient is (3, R) and the Hessian (3, 3, R). ``scalar``: the `penalty_scalar` of ``phi`` when the caller
    already has it (the parameters are then unused)."""
    g = grad
    s = scalar
    if s is None:
        s = penalty_scalar(phi, penalty_coefficient, smoothing_half_distance_m, threshold_m)
    dW = s.d_phi * g
    hW = None
    if want_hessian:
        hW = s.d2_phi * (g[:, None] * g[None, :])
        if include_curvature and hess_phi is not None:
            hW = hW + s.d_phi * hess_phi
    return PenaltyTerms(s.energy, dW, hW, s.load)
