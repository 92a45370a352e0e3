"""The tunnelling limit of penalty contact (docs/reliability.md): a body crosses a static collider unseen when one
step carries a surface point past the collider's middle, where the signed distance's gradient flips and the
penalty pushes it out of the far side.

The tunnelling ratio measures where each surface sample's step went, along the collider's normal: for every
dynamic body's sample (its mesh vertices and contact quadrature points; the centre of mass for a body without a
mesh) whose straight path from the step's start to its end meets a static collider's box, how far past the face it
entered through (or, starting inside, the face it was nearest) it ended, over the box's thinnest half thickness
(`sample_depth`); the step's ratio is the largest over (dynamic body, static collider within reach, sample).
>= 1: a sample ended past the middle, and the penalty may push it out of the far side. Travel along a wall does
not count, so a thin wall only limits how deep a body may press into it in one step, not how fast it may fall
beside it. A collider is within reach when its bounding sphere meets the sphere the body's surface can sweep
(``|dc| + reach * |dtheta|`` around the start centre). Planes are half-spaces (no far side) and never limit it.
The ratio bounds one step's result only: a wall also needs the penalty energy up to its middle to exceed the
body's kinetic energy into it (docs/reliability.md).
"""

from __future__ import annotations

import numpy as np

from . import lie
from .contact.system import _samples_of
from .jit import kernel_array
from .kernels import step as step_kernels


def tunnelling_geometry(records) -> dict:
    """Per model: ``reach`` (N,) m of each dynamic body (0 for statics) and its surface samples ``points`` (Q, 3)
    (its mesh's vertices and the contact's quadrature points, from the centre of mass, body frame; rows
    ``offsets[k]:offsets[k + 1]`` are row k's, none for statics); for the non-plane static colliders their rows
    ``static``, bounding-box ``half_extents`` (S, 3) and smallest ``half`` thickness [m], box ``centre`` (local,
    m), bounding-sphere ``radius`` [m], and ``names``."""
    reach = np.zeros(len(records))
    static, half_extents, centre, radius, names = [], [], [], [], []
    points, offsets = [], [0]
    for i, r in enumerate(records):
        shape = r.shape
        if r.is_static:
            if shape.kind != "plane":
                lo, hi = shape.aabb()
                static.append(i)
                half_extents.append(0.5 * (hi - lo))
                centre.append(0.5 * (lo + hi))
                radius.append(0.5 * float(np.linalg.norm(hi - lo)))
                names.append(r.name)
        elif getattr(shape, "vertices", None) is not None:
            contact = _samples_of(r)  # the contact's own surface samples, and the corners between them
            surface = np.asarray(shape.vertices, dtype=np.float64)
            if contact is not None:
                surface = np.concatenate([surface, contact.points])
            samples = surface - r.com_local
            reach[i] = float(np.max(np.linalg.norm(samples, axis=1)))
            points.append(samples)
        else:
            points.append(np.zeros((1, 3)))  # no vertices: the centre of mass stands for the body
        offsets.append(offsets[-1] + (0 if r.is_static else len(points[-1])))
    half_extents = np.array(half_extents).reshape(-1, 3)
    return {"reach": reach, "static": np.array(static, dtype=np.int64), "half_extents": half_extents,
            "half": half_extents.min(axis=1, initial=np.inf), "centre": np.array(centre).reshape(-1, 3),
            "radius": np.array(radius), "names": names,
            "points": np.concatenate(points).reshape(-1, 3) if points else np.zeros((0, 3)),
            "offsets": np.array(offsets, dtype=np.int64)}


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
    """The geometry's arrays for `step_kernels.tunnelling_step` (dynamic rows, static rows, box centres, the dynamic
    bodies' reach, samples and their offsets, half extents, radii), kept in the geometry dict per dynamic mask and
    geometry arrays (a copy of the dict with other arrays gets its own); None when no pair exists."""
    names = ("static", "centre", "reach", "points", "offsets", "half_extents", "radius")
    key = (dynamic.tobytes(), *(geometry[k] for k in names))
    cached = geometry.get("_kernel_inputs")
    if cached is None or cached[0][0] != key[0] or any(a is not b for a, b in zip(cached[0][1:], key[1:])):
        rows = geometry["static"]
        dyn = np.flatnonzero(dynamic)
        value = None
        if rows.size and dyn.size:
            value = (kernel_array(dyn, np.int64), kernel_array(rows, np.int64), kernel_array(geometry["centre"]),
                     kernel_array(geometry["reach"][dyn]), kernel_array(geometry["points"]),
                     kernel_array(geometry["offsets"], np.int64), kernel_array(geometry["half_extents"]),
                     kernel_array(geometry["radius"]))
        cached = geometry["_kernel_inputs"] = (key, value)
    return cached[1]


def _rotated(m, x, y, z, transposed=False):
    """m @ (x, y, z) (m^T @ with ``transposed``), each sum as ((a0 + a1) + a2): the kernel's `_apply`."""
    if transposed:
        m = np.swapaxes(m, -1, -2)
    return tuple((m[..., i, 0] * x + m[..., i, 1] * y) + m[..., i, 2] * z for i in range(3))


def sample_depth(p0, p1, half) -> np.ndarray:
    """How far sample paths from ``p0`` to ``p1`` (..., 3) (box-local) end past the face of the box of ``half``
    extents (3,) they entered through (starting inside: the face they were nearest), along that face's normal,
    over the box's thinnest half thickness (a sample deeper than that may be nearer another face, whose penalty
    pushes it on through: the far one, or for one that came down on a thin wall's top, the wall's sides); 0 for a
    path that misses the box or ends outside on its entry side. Slab clipping, each axis in turn (a zero step
    along an axis: the path misses unless it lies within that slab)."""
    step = p1 - p0
    t_enter = np.full(p0.shape[:-1], -np.inf)
    t_exit = np.full(p0.shape[:-1], np.inf)
    axis = np.full(p0.shape[:-1], -1)
    miss = np.zeros(p0.shape[:-1], dtype=bool)
    with np.errstate(divide="ignore", invalid="ignore"):
        for i in range(3):
            zero = step[..., i] == 0.0
            miss |= zero & (np.abs(p0[..., i]) > half[i])
            ta = (-half[i] - p0[..., i]) / step[..., i]
            tb = (half[i] - p0[..., i]) / step[..., i]
            near, far = np.where(ta < tb, ta, tb), np.where(ta < tb, tb, ta)
            later = ~zero & (near > t_enter)
            t_enter, axis = np.where(later, near, t_enter), np.where(later, i, axis)
            t_exit = np.where(~zero & (far < t_exit), far, t_exit)
    hit = ~miss & (t_enter <= t_exit) & (t_exit >= 0.0) & (t_enter <= 1.0)
    inside = (t_enter < 0.0) | (axis < 0)
    nearest = np.argmin(half - np.abs(p0), axis=-1)  # the first nearest face, as the kernel's strict <
    axis = np.where(inside, nearest, axis)
    take = np.maximum(axis, 0)[..., None]
    start, move, end = (np.take_along_axis(a, take, axis=-1)[..., 0] for a in (p0, step, p1))
    sign = np.where(inside, np.where(start >= 0.0, 1.0, -1.0), np.where(move > 0.0, -1.0, 1.0))
    depth = half[np.maximum(axis, 0)] - sign * end
    thinnest = min(half[0], min(half[1], half[2]))
    return np.where(hit, np.where(depth > 0.0, depth / thinnest, 0.0), 0.0)


def tunnelling_ratio_numpy(com0, rot0, com1, rot1, geometry: dict, dynamic: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`tunnelling_ratio` in numpy (a loop over body and collider pairs, vectorized over worlds and samples): the
    oracle tests/test_step_kernels.py holds the kernel to, bit for bit."""
    num_worlds = com0.shape[0]
    rows = geometry["static"]
    if rows.size == 0 or not np.any(dynamic):
        return np.zeros(num_worlds), np.full(num_worlds, -1)
    dyn = np.flatnonzero(dynamic)
    c0 = com0[:, dynamic]
    move = np.linalg.norm(com1[:, dynamic] - c0, axis=-1)
    angle = np.linalg.norm(lie.log_so3(rot1[:, dynamic] @ np.swapaxes(rot0[:, dynamic], -1, -2)), axis=-1)
    reach = geometry["reach"][dynamic]
    travel = move + reach * angle  # (W, D) the farthest any surface point moved
    c = geometry["centre"]
    centres = np.stack([com0[:, rows, i] + ((rot0[:, rows, i, 0] * c[:, 0] + rot0[:, rows, i, 1] * c[:, 1])
                                            + rot0[:, rows, i, 2] * c[:, 2]) for i in range(3)], axis=-1)
    gap = np.linalg.norm(c0[:, :, None] - centres[:, None], axis=-1)  # (W, D, S)
    near = gap <= (reach + travel)[:, :, None] + geometry["radius"][None, None]
    offsets, points = geometry["offsets"], geometry["points"]
    ratio = np.zeros((num_worlds, len(dyn), rows.size))
    for d, n in enumerate(dyn):
        q = points[offsets[n]:offsets[n + 1]]  # (P, 3)
        a = _rotated(rot0[:, n, None], q[:, 0], q[:, 1], q[:, 2])  # (W, P) each
        b = _rotated(rot1[:, n, None], q[:, 0], q[:, 1], q[:, 2])
        for s, m in enumerate(rows):
            f, o = rot0[:, m, None], centres[:, s, None]
            pa = _rotated(f, *((com0[:, n, i, None] + a[i]) - o[..., i] for i in range(3)), transposed=True)
            pb = _rotated(f, *((com1[:, n, i, None] + b[i]) - o[..., i] for i in range(3)), transposed=True)
            depth = sample_depth(np.stack(pa, axis=-1), np.stack(pb, axis=-1), geometry["half_extents"][s])
            worst = np.where(np.isnan(depth).any(axis=1), np.nan, depth.max(axis=1, initial=0.0))
            ratio[:, d, s] = np.where(near[:, d, s], worst, 0.0)
    ratio = ratio.reshape(num_worlds, -1)
    worst = np.argmax(ratio, axis=1)
    which = np.where(ratio.max(axis=1) > 0, worst % rows.size, -1)
    return ratio.max(axis=1), which
