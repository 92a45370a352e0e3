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

__all__ = [
    "DissipationTerms",
    "alignment_gate",
    "alignment_gate_from_cosine",
    "dissipation_normal",
    "dissipation_normal_components",
    "dissipation_energy",
    "dissipation_energy_components",
]

# |G| below this (the reference's 100 x near-equal epsilon for float32, generous for float64) has no direction:
# the dissipation normal falls back to -N_A.
_ZERO_GRADIENT_NORM = 1e-9


class DissipationTerms(NamedTuple):
    energy: np.ndarray  # (R,) per unit area [J/m^2]
    grad: np.ndarray  # (R, 3) dD/d(dp)
    hessian: np.ndarray | None  # (R, 3, 3) d^2D/d(dp)^2


def _dot(a, b):
    """a . b over the first axis (component-first (3, ...) arrays), with the rounding of the einsum it replaced."""
    return (a[0] * b[0] + a[2] * b[2]) + a[1] * b[1]


def alignment_gate(grad, colliding_normal, max_alignment, fade: bool) -> tuple[np.ndarray, np.ndarray]:
    """(accept (R,) bool, fade factor a (R,)) from the raw SDF gradient and the colliding normal (collider frame)."""
    g = np.moveaxis(np.asarray(grad, dtype=np.float64), -1, 0)
    na = np.moveaxis(np.asarray(colliding_normal, dtype=np.float64), -1, 0)
    return alignment_gate_from_cosine(_dot(g, na), max_alignment, fade)


def alignment_gate_from_cosine(s, max_alignment, fade: bool, check: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """`alignment_gate` from s = G . N_A directly. ``check=False``: ``max_alignment`` is already a validated
    array of the shape of ``s``."""
    if check:
        m = np.broadcast_to(np.asarray(max_alignment, dtype=np.float64), np.shape(s))
        if np.any(np.abs(m) > 1.0):
            raise ValueError("max_alignment_normals must be in [-1, 1]")
    else:
        m = max_alignment
    accept = s <= m
    if not fade:
        return accept, np.ones(np.shape(s))
    fading = m > -1.0
    if fading.all():
        return accept, (m - s) / (m + 1.0)
    factor = np.where(fading, (m - s) / np.where(fading, m + 1.0, 1.0), 1.0)
    return accept, factor


def dissipation_normal(grad, colliding_normal, use_collider_normal) -> np.ndarray:
    """Unit normal of the friction split: G/|G| (``friction_with_collider_normal``) or -N_A.

    Where |G| vanishes (possible on a grid SDF) the collider normal falls back to -N_A, as in the reference.
    """
    g = np.moveaxis(np.asarray(grad, dtype=np.float64), -1, 0)
    na = np.moveaxis(np.asarray(colliding_normal, dtype=np.float64), -1, 0)
    return np.moveaxis(dissipation_normal_components(g, na, use_collider_normal), 0, -1)


def dissipation_normal_components(grad, colliding_normal, use_collider_normal) -> np.ndarray:
    """`dissipation_normal` with component-first (3, R) arrays."""
    g, na = grad, colliding_normal
    if use_collider_normal is False:
        return -na
    norm = np.sqrt((g[0] * g[0] + g[1] * g[1]) + g[2] * g[2])
    degenerate = norm < _ZERO_GRADIENT_NORM
    if degenerate.any():
        collider_normal = np.where(degenerate, -na, g / np.where(degenerate, 1.0, norm))
    else:
        collider_normal = g / norm
    if use_collider_normal is True:
        return collider_normal
    use = np.broadcast_to(np.asarray(use_collider_normal, dtype=bool), norm.shape)
    if use.all():
        return collider_normal
    return np.where(use, collider_normal, -na)


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
    dp = np.moveaxis(np.asarray(dp, dtype=np.float64), -1, 0)
    n = np.moveaxis(np.asarray(normal, dtype=np.float64), -1, 0)
    t = dissipation_energy_components(
        dp, n, load, coulomb_friction_coefficient, viscous_friction_coefficient, normal_viscous_damping_coefficient,
        friction_falloff_vel, stage_dt, friction_model, want_hessian, fitted_hessian,
    )
    hess = None if t.hessian is None else np.moveaxis(t.hessian, (0, 1), (-2, -1))
    return DissipationTerms(t.energy, np.moveaxis(t.grad, 0, -1), hess)


def dissipation_energy_components(
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
    check: bool = True,
) -> DissipationTerms:
    """`dissipation_energy` with component-first arrays: ``dp``, ``normal`` (3, R); gradient (3, R), Hessian
    (3, 3, R). Terms whose coefficient is zero for every row are skipped (they add exact zeros).
    ``check=False`` skips the validation of the friction smoother's inputs."""
    n = normal
    lam = np.asarray(load, dtype=np.float64)
    if not stage_dt > 0:
        raise ValueError(f"dissipation_energy: stage_dt must be > 0, got {stage_dt}")
    mu = np.asarray(coulomb_friction_coefficient, dtype=np.float64)
    c_t = np.asarray(viscous_friction_coefficient, dtype=np.float64) / stage_dt
    c_n = np.asarray(normal_viscous_damping_coefficient, dtype=np.float64) / stage_dt
    width_m = np.asarray(friction_falloff_vel, dtype=np.float64) * stage_dt
    viscous, damped = bool((c_t != 0.0).any()), bool((c_n != 0.0).any())

    dp_n = _dot(dp, n)
    dp_t = dp - dp_n * n
    x = np.sqrt((dp_t[0] * dp_t[0] + dp_t[1] * dp_t[1]) + dp_t[2] * dp_t[2])
    f = friction_smoother(friction_model, x, width_m, check)

    # energy = lam (mu f + c_t/2 x^2 + c_n/2 dp_n^2), the zero terms left out
    bracket = mu * f.value
    if viscous:
        bracket = bracket + 0.5 * c_t * x * x
    if damped:
        bracket = bracket + 0.5 * c_n * dp_n * dp_n
    energy = lam * bracket
    tangent_coef = mu * f.d1_over_x  # (+ c_t) multiplies dp_t in the gradient and P in the Hessian
    if viscous:
        tangent_coef = tangent_coef + c_t
    inner = tangent_coef * dp_t
    if damped:
        inner = inner + (c_n * dp_n) * n
    grad = lam * inner
    hess = None
    if want_hessian:
        nn = n[:, None] * n[None, :]
        inner = tangent_coef * _eye_minus(nn)
        if damped:
            inner = inner + c_n * nn
        hess = lam * inner
        if not fitted_hessian:
            # Exact Coulomb term: replace f'/x by f'' along the slip direction t.
            safe_x = np.where(x > 0.0, x, 1.0)
            t = np.where(x > 0.0, dp_t / safe_x, 0.0)
            correction = lam * mu * (f.d2 - f.d1_over_x)
            hess = hess + correction * (t[:, None] * t[None, :])
    return DissipationTerms(energy, grad, hess)


def _eye_minus(nn: np.ndarray) -> np.ndarray:
    """I - nn for a component-first (3, 3, ...) array."""
    out = -nn
    for i in range(3):
        out[i, i] += 1.0
    return out
