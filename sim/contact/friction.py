"""Per-sample dissipation: regularized Coulomb friction, viscous friction and normal damping on the stage
displacement (digest 5.3 "Stage-discrete form"; contact.md "Friction and Damping", "Stage-Discrete Dissipation").

The stage relative displacement in collider coordinates is dp = Y - Y0 (= V_rel dt_i), with Y = X_B,i(x_A,i) the
current and Y0 = X_B,i^0(x_A,i^0) the stage-start pullback of the sample. With a unit normal N, the projector
P = 1 - N N^T, dp_n = N . dp, dp_t = P dp, x = |dp_t| and the load lam (held fixed), the energy per unit area is
dt_i times the dissipation potential R:

    D = lam [ mu f(x; V_f dt_i) + c_t / (2 dt_i) x^2 + c_n / (2 dt_i) dp_n^2 ]

with f the friction smoother of ``ramp.py`` (step_c1 by default). Chain rule, with t = dp_t / x, dx/d(dp) = t and
d^2x/d(dp)^2 = (P - t t^T) / x:

    dD/d(dp)     = lam [ mu f'(x)/x dp_t + c_t/dt_i dp_t + c_n/dt_i dp_n N ]
    d^2D/d(dp)^2 = lam [ mu (f'(x)/x (P - t t^T) + f''(x) t t^T) + c_t/dt_i P + c_n/dt_i N N^T ]

The *fitted* Coulomb Hessian (reference default) replaces the bracket after mu by f'(x)/x P (the Hessian of the
quadratic that matches the force at the current slip), which is PSD and isotropic in the tangent plane.

The alignment gate (``alignment_gate``): s = G . N_A with N_A the colliding outward normal in collider
coordinates; the sample is rejected (penalty included) when s > m = ``max_alignment_normals``; the dissipation
load is faded by a = (m - s)/(m + 1) when fading is on and m > -1, else a = 1.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .ramp import friction_smoother

__all__ = ["DissipationTerms", "alignment_gate", "dissipation_normal", "dissipation_energy"]

# |G| below this (the reference's 100 x near-equal epsilon for float32, generous for float64) has no direction:
# the dissipation normal falls back to -N_A.
_ZERO_GRADIENT_NORM = 1e-9


class DissipationTerms(NamedTuple):
    energy: np.ndarray  # (R,) per unit area [J/m^2]
    grad: np.ndarray  # (R, 3) dD/d(dp)
    hessian: np.ndarray | None  # (R, 3, 3) d^2D/d(dp)^2


def alignment_gate(grad, colliding_normal, max_alignment, fade: bool) -> tuple[np.ndarray, np.ndarray]:
    """(accept (R,) bool, fade factor a (R,)) from the raw SDF gradient and the colliding normal (collider frame)."""
    s = np.einsum("...i,...i->...", np.asarray(grad, dtype=np.float64), np.asarray(colliding_normal, dtype=np.float64))
    m = np.broadcast_to(np.asarray(max_alignment, dtype=np.float64), s.shape)
    if np.any(np.abs(m) > 1.0):
        raise ValueError("max_alignment_normals must be in [-1, 1]")
    accept = s <= m
    fading = bool(fade) & (m > -1.0)
    factor = np.where(fading, (m - s) / np.where(fading, m + 1.0, 1.0), 1.0)
    return accept, factor


def dissipation_normal(grad, colliding_normal, use_collider_normal) -> np.ndarray:
    """Unit normal of the friction split: G/|G| (``friction_with_collider_normal``) or -N_A.

    Where |G| vanishes (possible on a grid SDF) the collider normal falls back to -N_A, as in the reference.
    """
    g = np.asarray(grad, dtype=np.float64)
    na = np.asarray(colliding_normal, dtype=np.float64)
    norm = np.linalg.norm(g, axis=-1)
    degenerate = norm < _ZERO_GRADIENT_NORM
    collider_normal = np.where(degenerate[..., None], -na, g / np.where(degenerate, 1.0, norm)[..., None])
    use = np.broadcast_to(np.asarray(use_collider_normal, dtype=bool), norm.shape)
    return np.where(use[..., None], collider_normal, -na)


def dissipation_energy(
    dp,
    normal,
    load,
    coulomb_friction_coefficient,
    viscous_friction_coefficient,
    normal_viscous_damping_coefficient,
    friction_falloff_vel,
    stage_dt: float,
    friction_model,
    want_hessian: bool,
    fitted_hessian: bool = True,
) -> DissipationTerms:
    """Dissipation energy density and its derivatives with respect to dp (see module doc); (R,)-shaped params."""
    dp = np.asarray(dp, dtype=np.float64)
    n = np.asarray(normal, dtype=np.float64)
    lam = np.asarray(load, dtype=np.float64)
    if not stage_dt > 0:
        raise ValueError(f"dissipation_energy: stage_dt must be > 0, got {stage_dt}")
    mu = np.asarray(coulomb_friction_coefficient, dtype=np.float64)
    c_t = np.asarray(viscous_friction_coefficient, dtype=np.float64) / stage_dt
    c_n = np.asarray(normal_viscous_damping_coefficient, dtype=np.float64) / stage_dt
    width_m = np.asarray(friction_falloff_vel, dtype=np.float64) * stage_dt

    dp_n = np.einsum("...i,...i->...", dp, n)
    dp_t = dp - dp_n[..., None] * n
    x = np.linalg.norm(dp_t, axis=-1)
    f = friction_smoother(friction_model, x, width_m)

    energy = lam * (mu * f.value + 0.5 * c_t * x * x + 0.5 * c_n * dp_n * dp_n)
    tangent_coef = mu * f.d1_over_x + c_t  # multiplies dp_t in the gradient and P in the Hessian
    grad = lam[..., None] * (tangent_coef[..., None] * dp_t + (c_n * dp_n)[..., None] * n)
    hess = None
    if want_hessian:
        nn = n[..., :, None] * n[..., None, :]
        proj = np.eye(3) - nn
        hess = lam[..., None, None] * (tangent_coef[..., None, None] * proj + c_n[..., None, None] * nn)
        if not fitted_hessian:
            # Exact Coulomb term: replace f'/x by f'' along the slip direction t.
            safe_x = np.where(x > 0.0, x, 1.0)
            t = np.where((x > 0.0)[..., None], dp_t / safe_x[..., None], 0.0)
            correction = lam * mu * (f.d2 - f.d1_over_x)
            hess = hess + correction[..., None, None] * (t[..., :, None] * t[..., None, :])
    return DissipationTerms(energy, grad, hess)
