"""An articulation's stage objective with the common terms in one kernel call (sim/kernels/articulated_terms.py):
the links' inertia and gravity, the 1-DoF joints' rotor inertia and friction, the soft limits and the single-DoF
drives. The other terms (SPHERICAL joints' own terms, range constraints, DoF loads, cycle joints, pose tracking)
are added from their numpy oracles when a model or stage has them. `energy.total` is the all-numpy sum this is
tested against (tests/test_articulated_compiled_terms.py): equal to round-off, not bit for bit, since the kernel
sums per world in its own order.
"""

from __future__ import annotations

import numpy as np

from ..jit import kernel_array
from ..kernels import articulated_terms as kernels
from . import energy
from .kinematics import _subtree, link_jacobians
from .params import ArticulatedJointType as JT


class PackedModel:
    """A model's constant kernel arrays (built once per model: `packed_model`)."""

    def __init__(self, model):
        one_dof = [(j, info.offset) for j, (t, info) in enumerate(zip(model.joint_type, model.dof_info))
                   if t in (JT.REVOLUTE, JT.PRISMATIC)]
        fr = [model.friction[j] for j, _ in one_dof]
        mu0 = np.array([f.coulomb + f.stiction_extra for f in fr], dtype=float)
        # the DoF columns of each link's Jacobian that can be nonzero: those of the joints from the root to it
        moves = np.zeros((model.num_links, model.num_dofs), dtype=bool)
        for k, info in enumerate(model.dof_info):
            links = _subtree(model, k) > 0.5
            moves[np.ix_(links, np.arange(info.offset, info.offset + info.get_size()))] = True
        cols = np.zeros((model.num_links, max(model.num_dofs, 1)), dtype=np.int64)
        for l in range(model.num_links):
            cols[l, :np.count_nonzero(moves[l])] = np.flatnonzero(moves[l])
        self.links = (kernel_array(model.mass), kernel_array(model.has_gravity.astype(np.float64)),
                      kernel_array(model.second_moment), cols, moves.sum(axis=1).astype(np.int64))
        self.joints = (kernel_array(np.array([d for _, d in one_dof]), np.int64),
                       kernel_array(np.array([model.rotor_inertia[j] for j, _ in one_dof], dtype=float)),
                       kernel_array(np.array([f.viscous for f in fr], dtype=float)), kernel_array(mu0),
                       kernel_array(np.array([f.falloff_vel for f in fr], dtype=float)),
                       kernel_array(np.divide(np.array([f.coulomb for f in fr], dtype=float), mu0,
                                              out=np.zeros_like(mu0), where=mu0 != 0.0)),
                       kernel_array(np.array([f.stribeck_vel for f in fr], dtype=float)))
        # A SPHERICAL block's limits chain through its rotation vector's increment Jacobian: a model with any limited
        # SPHERICAL joint keeps the numpy soft limits whole, else the kernel owns every DoF's limit.
        spherical = np.zeros(model.num_dofs, dtype=bool)
        for j, info in enumerate(model.dof_info):
            if model.joint_type[j] == JT.SPHERICAL:
                spherical[info.offset:info.offset + 3] = True
        limited = np.isfinite(model.dof_lower) | np.isfinite(model.dof_upper)
        self.numpy_limits = bool(np.any(limited & spherical))
        owned = limited & ~self.numpy_limits
        self.limits = (kernel_array(model.dof_lower), kernel_array(model.dof_upper),
                       kernel_array(model.dof_limit_stiffness), kernel_array(model.dof_limit_damping),
                       kernel_array(owned, np.bool_))
        self.has_spherical = bool(np.any(spherical))
        self.has_cycles = model.cycle_child.size > 0


def packed_model(model) -> PackedModel:
    """The model's `PackedModel`, built on first use (the model is frozen: the pack lives in its __dict__)."""
    packed = model.__dict__.get("_packed_terms")
    if packed is None:
        packed = model.__dict__["_packed_terms"] = PackedModel(model)
    return packed


def _packed_drives(stage, num_worlds: int):
    """The stage's drives as kernel arrays (dof, stiffness, damping, saturation; per-world target and old target),
    packed once per stage."""
    packed = stage.packed
    if packed is None:
        ds = stage.drives
        target = np.empty((num_worlds, len(ds)))
        target_old = np.empty((num_worlds, len(ds)))
        for i, d in enumerate(ds):
            target[:, i] = d.target
            target_old[:, i] = d.target if d.target_old is None else d.target_old
        packed = stage.packed = (
            kernel_array(np.array([d.dof for d in ds]), np.int64),
            kernel_array(np.array([d.stiffness for d in ds], dtype=float)),
            kernel_array(np.array([d.damping for d in ds], dtype=float)),
            kernel_array(np.array([d.saturation for d in ds], dtype=float)), target, target_old)
    return packed


def total(model, q, stage, kinematics=None):
    """Energy (W,), gradient (W, D) and Newton matrix (W, D, D) of the stage objective at poses q: `energy.total`
    with its common terms compiled. ``kinematics``: link_jacobians(model, q) when the caller has it already."""
    pm = packed_model(model)
    q = kernel_array(q)
    num_worlds, num_dofs = q.shape
    rot, _, com, jac = link_jacobians(model, q) if kinematics is None else kinematics
    e = np.empty(num_worlds)
    g = np.empty((num_worlds, num_dofs))
    h = np.empty((num_worlds, num_dofs, num_dofs))
    st = (float(stage.dt), kernel_array(stage.q0), kernel_array(stage.link_pred_com), kernel_array(stage.link_pred_rot),
          kernel_array(stage.joint_velocity0), kernel_array(np.broadcast_to(stage.gravity, (num_worlds, 3))))
    kernels.joint_space_terms(pm.links, pm.joints, pm.limits, _packed_drives(stage, num_worlds), st,
                              (kernel_array(rot), kernel_array(com), kernel_array(jac)), q, bool(stage.psd), e, g, h)
    rest = []
    if pm.has_spherical:
        rest.append(energy.rotation_joint_terms)
    if pm.numpy_limits:
        rest.append(energy.soft_limits)
    if stage.ranges:
        rest.append(energy.ranges)
    if stage.dof_loads is not None and np.any(stage.dof_loads):
        rest.append(energy.dof_loads)
    if pm.has_cycles:
        rest.append(energy.cycle_joints)
    if stage.tracking:
        rest.append(energy.tracking)
    for term in rest:
        te, tg, th = term(model, q, stage)
        e, g, h = e + te, g + tg, h + th
    return e, g, h
