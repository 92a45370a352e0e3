"""Hunt-Crossley restitution calibration of the normal damping (digest 5.3; contact.md "Restitution Behavior of
Rigid Collisions"; reference ``sdp.experimental``).

The rational approximation c_n = (1 - e)(1 + 9/2 e) / (e v (1 + 8/3 e)) [s/m] of the coefficient of restitution
e at impact speed v [m/s] matches Hunt & Crossley's e -> 1 limit (c_n ~ 3/2 (1 - e)/v) and the e -> 0 limit
(e v ~ 1/c_n). Its inverse is the positive root of A e^2 + B e - 1 = 0 with alpha = c_n v, A = 9/2 + 8/3 alpha,
B = alpha + 1 - 9/2. Observing the restitution in a simulation needs >= 2nd-order integration (BDF2) and steps
that resolve the impact.
"""

from __future__ import annotations

import numpy as np

__all__ = ["calibrate_normal_viscous_damping_coefficient", "effective_coefficient_of_restitution"]


def calibrate_normal_viscous_damping_coefficient(cor, v):
    """Normal viscous damping coefficient c_n [s/m] giving restitution ``cor`` in (0, 1] at impact speed ``v`` > 0."""
    e = np.asarray(cor, dtype=np.float64)
    speed = np.asarray(v, dtype=np.float64)
    if np.any(~np.isfinite(e)) or np.any(e <= 0.0) or np.any(e > 1.0):
        raise ValueError(f"coefficient of restitution must be in (0, 1], got {cor}")
    if np.any(~np.isfinite(speed)) or np.any(speed <= 0.0):
        raise ValueError(f"impact speed v must be finite and > 0 m/s, got {v}")
    c = (1.0 - e) * (1.0 + 4.5 * e) / (e * speed * (1.0 + (8.0 / 3.0) * e))
    return float(c) if c.ndim == 0 else c


def effective_coefficient_of_restitution(c, v):
    """Restitution predicted for normal damping ``c`` >= 0 [s/m] at impact speed ``v`` > 0 [m/s] (the inverse)."""
    c_n = np.asarray(c, dtype=np.float64)
    speed = np.asarray(v, dtype=np.float64)
    if np.any(~np.isfinite(c_n)) or np.any(c_n < 0.0):
        raise ValueError(f"normal damping coefficient must be finite and >= 0 s/m, got {c}")
    if np.any(~np.isfinite(speed)) or np.any(speed <= 0.0):
        raise ValueError(f"impact speed v must be finite and > 0 m/s, got {v}")
    alpha = c_n * speed
    a = 4.5 + (8.0 / 3.0) * alpha
    b = alpha + 1.0 - 4.5
    e = (-b + np.sqrt(b * b + 4.0 * a)) / (2.0 * a)
    return float(e) if e.ndim == 0 else e
