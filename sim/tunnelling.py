"""The tunnelling limit of penalty contact (docs/reliability.md): a body crosses a static collider unseen when one
step carries a surface point past the collider's middle, where the signed distance's gradient flips and the
penalty pushes it out of the far side.

A step is safe when every dynamic body's surface moves less than the thinnest static collider's half thickness:
``tunnelling ratio = max over dynamic bodies of (|dc| + reach * |dtheta|) / min static half thickness`` < 1, with
``dc`` the centre-of-mass displacement, ``dtheta`` the rotation angle of the step and ``reach`` the farthest
surface point from the centre of mass. Planes are half-spaces (no far side) and never limit it. The ratio bounds
the jump of one step only: a wall also needs the penalty energy up to its middle to exceed the body's kinetic
energy into it (docs/reliability.md has both limits and measurements).
"""

from __future__ import annotations

import numpy as np

from . import lie


def tunnelling_geometry(records) -> tuple[np.ndarray, float, str]:
    """``(reach (N,) m`` of each dynamic body (0 for statics), the thinnest static collider's half thickness [m]
    (inf when there is none but planes) and its actor name)."""
    reach = np.zeros(len(records))
    half, name = np.inf, ""
    for i, r in enumerate(records):
        shape = r.shape
        if r.is_static:
            if shape.kind == "plane":
                continue
            lo, hi = shape.aabb()
            h = 0.5 * float(np.min(hi - lo))
            if h < half:
                half, name = h, r.name
        elif getattr(shape, "vertices", None) is not None:
            reach[i] = float(np.max(np.linalg.norm(shape.vertices - r.com_local, axis=1)))
    return reach, half, name


def tunnelling_ratio(com0, rot0, com1, rot1, reach: np.ndarray, dynamic: np.ndarray, half: float) -> np.ndarray:
    """(W,) the step's largest surface-point travel of a dynamic body over ``half`` (see the module docstring)."""
    if not np.isfinite(half) or not np.any(dynamic):
        return np.zeros(com0.shape[0])
    move = np.linalg.norm(com1[:, dynamic] - com0[:, dynamic], axis=-1)
    angle = np.linalg.norm(lie.log_so3(rot1[:, dynamic] @ np.swapaxes(rot0[:, dynamic], -1, -2)), axis=-1)
    return np.max(move + reach[dynamic] * angle, axis=1) / half
