"""Derivatives of the rotation-vector constraint value ``phi = Log(exp(skew(theta)) M)`` at ``theta = 0``.

Every rotational constraint (``RigidPivotRotation``, ``JointRotationRange``, ``JointRotationTracking``) measures
``g = Log(M)`` for a rotation ``M`` that a body's left increment ``R <- exp(skew(theta)) R`` changes as
``M <- exp(skew(P theta)) M`` for some fixed rotation ``P`` (digest 2.4 convention). This module supplies, for a
batch of ``M``:

* ``phi = Log(M)`` (|phi| <= pi, through the quaternion, ``lie.log_so3``);
* the first derivative ``d phi / d theta = Jl^{-1}(phi)``, the inverse left Jacobian of SO(3)
  (``DRotVectorDRotIncrement`` in the reference):
  ``Jl^{-1}(phi) = 1 - K/2 + beta(t) K^2`` with ``K = skew(phi)``, ``t = |phi|``,
  ``beta(t) = 1/t^2 - cot(t/2)/(2t)``;
* the second derivative contracted with a multiplier ``lam``: the symmetric 3x3 matrix
  ``S = d^2 (lam . phi) / d theta^2``.

Second derivative, chain rule written out: along the ray ``theta = s u`` the chart obeys exactly
``d phi / ds = Jl^{-1}(phi) u`` (because ``exp((s+e)u) = exp(e u) exp(s u)``), hence
``d^2 phi / ds^2 = D Jl^{-1}(phi)[Jl^{-1}(phi) u] u``. This quadratic form fixes the (symmetric) Hessian:
``S[j, k] = sym_jk( lam^T D Jl^{-1}[w_j] e_k )``, ``w_j = Jl^{-1} e_j``, with the directional derivative
``D Jl^{-1}[w] = -skew(w)/2 + gamma(t) (phi . w) K^2 + beta(t) (skew(w) K + K skew(w))``,
``gamma = beta'(t)/t``. The scalar coefficients ``beta, gamma`` are kept apart from the geometry (DESIGN 5.3) and
evaluated by their Taylor series below ``_SERIES_ANGLE`` where the closed forms cancel catastrophically.
"""

from __future__ import annotations

import numpy as np

from .. import lie

# Below this angle (rad) beta and gamma use their series. Series truncation there is < 1e-15 relative; the closed
# forms above it lose at most ~(2 / t^4) * 1e-16 / gamma(0) ~ 1e-11 relative (gamma's 2/t^3-type terms cancel).
_SERIES_ANGLE = 0.3


def _beta_gamma(angle: np.ndarray, want_gamma: bool = True) -> tuple[np.ndarray, np.ndarray | None]:
    """beta(t) = 1/t^2 - cot(t/2)/(2t) and gamma(t) = beta'(t)/t, elementwise, for 0 <= t <= pi.

    Series from cot(x) = 1/x - x/3 - x^3/45 - 2x^5/945 - x^7/4725 - 2x^9/93555 - 1382 x^11/638512875 at x = t/2.
    ``want_gamma=False`` returns (beta, None). When every angle is below the series threshold the closed forms
    are not evaluated (their values would be discarded).
    """
    t2 = angle * angle
    beta_series = 1.0 / 12.0 + t2 * (1.0 / 720.0 + t2 * (1.0 / 30240.0 + t2 * (1.0 / 1209600.0 + t2 / 47900160.0)))
    gamma_series = None
    if want_gamma:
        gamma_series = 1.0 / 360.0 + t2 * (
            1.0 / 7560.0 + t2 * (1.0 / 201600.0 + t2 * (1.0 / 5987520.0 + t2 * (13820.0 / (638512875.0 * 4096.0))))
        )
    small = angle < _SERIES_ANGLE
    if np.all(small):
        return beta_series, gamma_series
    t = np.where(small, 1.0, angle)
    half = 0.5 * t
    cot_half = np.cos(half) / np.sin(half)
    beta_closed = 1.0 / (t * t) - cot_half / (2.0 * t)
    # beta'(t) = -2/t^3 + cot(t/2)/(2 t^2) + 1/(4 t sin^2(t/2))
    beta = np.where(small, beta_series, beta_closed)
    if not want_gamma:
        return beta, None
    dbeta = -2.0 / t**3 + cot_half / (2.0 * t * t) + 1.0 / (4.0 * t * np.sin(half) ** 2)
    return beta, np.where(small, gamma_series, dbeta / t)


def log_and_inverse_jacobian(rot: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(..., 3, 3) rotations -> (phi (..., 3), Jl^{-1}(phi) (..., 3, 3)): d Log(exp(theta) M)/d theta at 0."""
    phi = lie.log_so3(rot)
    angle = np.sqrt(np.einsum("...i,...i->...", phi, phi))
    beta, _ = _beta_gamma(angle, want_gamma=False)
    k = lie.skew(phi)
    jinv = np.eye(3) - 0.5 * k + beta[..., None, None] * (k @ k)
    return phi, jinv


def log_hessian_contracted(phi: np.ndarray, jinv: np.ndarray, lam: np.ndarray) -> np.ndarray:
    """Symmetric (..., 3, 3) ``d^2 (lam . Log(exp(theta) M)) / d theta^2`` at 0 (see the module docstring).

    ``phi``, ``jinv`` from `log_and_inverse_jacobian`; ``lam`` (..., 3) the multiplier of each component.
    Row j of the unsymmetrized matrix is ``lam^T D Jl^{-1}[w_j]`` written with cross products
    (``lam^T skew(a) = (lam x a)^T``, ``lam^T K^2 = (phi x (phi x lam))^T``):
    ``-(lam x w)/2 + gamma (phi . w) phi x (phi x lam) + beta ((lam x phi) x w - phi x (lam x w))``.
    """
    angle = np.sqrt(np.einsum("...i,...i->...", phi, phi))
    beta, gamma = _beta_gamma(angle)
    w = np.swapaxes(jinv, -1, -2)  # (..., j, 3): w[..., j, :] = Jl^{-1} e_j
    lam_b = lam[..., None, :]
    phi_b = phi[..., None, :]
    lam_x_w = np.cross(lam_b, w)
    phi_dot_w = np.einsum("...i,...ji->...j", phi, w)
    phi_phi_lam = np.cross(phi, np.cross(phi, lam))[..., None, :]
    lam_x_phi = np.cross(lam, phi)[..., None, :]
    rows = (
        -0.5 * lam_x_w
        + (gamma[..., None] * phi_dot_w)[..., None] * phi_phi_lam
        + beta[..., None, None] * (np.cross(lam_x_phi, w) - np.cross(phi_b, lam_x_w))
    )
    return lie.sym(rows)
