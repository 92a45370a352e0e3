"""The tunnelling limit of penalty contact (docs/reliability.md): a body crosses a static collider unseen when one
step carries a surface point past the collider's middle, where the signed distance's gradient flips and the
penalty pushes it out of the far side.

A step is safe when every dynamic body's surface moves less than the half thickness of each static collider it
could reach in that step: ``tunnelling ratio = max over (dynamic body, static collider within reach) of
(|dc| + reach * |dtheta|) / (collider half thickness)`` < 1, with ``dc`` the centre-of-mass displacement,
``dtheta`` the rotation angle of the step and ``reach`` the farthest surface point from the centre of mass; a
collider is within reach when its bounding sphere meets the sphere the body's surface can sweep. Planes are
half-spaces (no far side) and never limit it. The ratio bounds the jump of one step only: a wall also needs the
penalty energy up to its middle to exceed the body's kinetic energy into it (docs/reliability.md).
"""

from __future__ import annotations

import numpy as np

from . import lie
from .jit import kernel_array
from .kernels import step as step_kernels


def tunnelling_geometry(records) -> dict:
    """Per model: ``reach`` (N,) m of each dynamic body (0 for statics); for the non-plane static colliders their
    rows ``static``, ``half`` thickness [m] (half the smallest local bounding-box side), bounding-box ``centre``
    (local, m) and bounding-sphere ``radius`` [m], and ``names``."""
    reach = np.zeros(len(records))
    static, half, centre, radius, names = [], [], [], [], []
    for i, r in enumerate(records):
        shape = r.shape
        if r.is_static:
            if shape.kind == "plane":
                continue
            lo, hi = shape.aabb()
            static.append(i)
            half.append(0.5 * float(np.min(hi - lo)))
            centre.append(0.5 * (lo + hi))
            radius.append(0.5 * float(np.linalg.norm(hi - lo)))
            names.append(r.name)
        elif getattr(shape, "vertices", None) is not None:
            reach[i] = float(np.max(np.linalg.norm(shape.vertices - r.com_local, axis=1)))
    return {"reach": reach, "static": np.array(static, dtype=np.int64), "half": np.array(half),
            "centre": np.array(centre).reshape(-1, 3), "radius": np.array(radius), "names": names}


def tunnelling_ratio(com0, rot0, com1, rot1, geometry: dict, dynamic: np.ndarray,
                     inputs=False) -> tuple[np.ndarray, np.ndarray]:
    """Per world (W,): the step's ratio (module docstring) and the index into ``geometry["names"]`` of the collider
    that sets it (-1 where no collider is within reach). ``inputs``: `tunnelling_kernel_inputs` of this geometry
    and mask, when the caller keeps them."""
    num_worlds = com0.shape[0]
    if inputs is False:
        inputs = _kernel_inputs(geometry, dynamic)
    if inputs is None:
        return np.zeros(num_worlds), np.full(num_worlds, -1)
    # One kernel: the step's rotations and the colliders' centres as numpy's products round them, then the angles,
    # travel, gaps, the reach test and the worst pair (sim/kernels/step.py, the same arithmetic as the numpy code).
    ratio = np.empty(num_worlds)
    which = np.empty(num_worlds, dtype=np.int64)
    near_pi = step_kernels.tunnelling_step(kernel_array(com0), kernel_array(rot0), kernel_array(com1),
                                           kernel_array(rot1), *inputs, ratio, which)
    if near_pi:  # a body turned by nearly pi in one step: log_so3's quaternion route, in numpy
        return tunnelling_ratio_numpy(com0, rot0, com1, rot1, geometry, dynamic)
    return ratio, which


def tunnelling_kernel_inputs(geometry: dict, dynamic: np.ndarray):
    """The kernel's inputs for this geometry and dynamic mask (None when no pair exists), for a caller that keeps
    them with the geometry (the scene, per compiled model)."""
    return _kernel_inputs(geometry, dynamic)


def _kernel_inputs(geometry: dict, dynamic: np.ndarray):
    """The geometry's arrays for `step_kernels.tunnelling_step` (dynamic rows, static rows, centres, the dynamic
    bodies' reach, radii, half thicknesses), kept in the geometry dict per dynamic mask and geometry arrays (a copy
    of the dict with other arrays gets its own); None when no pair exists."""
    key = (dynamic.tobytes(), geometry["static"], geometry["centre"], geometry["reach"], geometry["radius"],
           geometry["half"])
    cached = geometry.get("_kernel_inputs")
    if cached is None or cached[0][0] != key[0] or any(a is not b for a, b in zip(cached[0][1:], key[1:])):
        rows = geometry["static"]
        dyn = np.flatnonzero(dynamic)
        value = None
        if rows.size and dyn.size:
            value = (kernel_array(dyn, np.int64), kernel_array(rows, np.int64), kernel_array(geometry["centre"]),
                     kernel_array(geometry["reach"][dyn]), kernel_array(geometry["radius"]),
                     kernel_array(geometry["half"]))
        cached = geometry["_kernel_inputs"] = (key, value)
    return cached[1]


def tunnelling_ratio_numpy(com0, rot0, com1, rot1, geometry: dict, dynamic: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`tunnelling_ratio` in numpy only: the oracle tests/test_step_kernels.py holds the kernel to, bit for bit."""
    num_worlds = com0.shape[0]
    rows = geometry["static"]
    if rows.size == 0 or not np.any(dynamic):
        return np.zeros(num_worlds), np.full(num_worlds, -1)
    c0 = com0[:, dynamic]
    move = np.linalg.norm(com1[:, dynamic] - c0, axis=-1)
    angle = np.linalg.norm(lie.log_so3(rot1[:, dynamic] @ np.swapaxes(rot0[:, dynamic], -1, -2)), axis=-1)
    reach = geometry["reach"][dynamic]
    travel = move + reach * angle  # (W, D) the farthest any surface point moved
    centres = com0[:, rows] + np.einsum("wsij,sj->wsi", rot0[:, rows], geometry["centre"])
    gap = np.linalg.norm(c0[:, :, None] - centres[:, None], axis=-1)  # (W, D, S)
    near = gap <= (reach + travel)[:, :, None] + geometry["radius"][None, None]
    ratio = np.where(near, travel[:, :, None] / geometry["half"][None, None], 0.0).reshape(num_worlds, -1)
    worst = np.argmax(ratio, axis=1)
    which = np.where(ratio.max(axis=1) > 0, worst % rows.size, -1)
    return ratio.max(axis=1), which
