"""The numpy oracle of an articulation's stage energy in joint coordinates (the compiled terms are checked against it).

Each term returns (energy (W,), gradient (W, D), Hessian (W, D, D)) at poses q (W, D) for the fixed stage data.
What the released engine does, and so what these do (tests/reference_data/articulated_runs.json checks it):

* Links: the rigid incremental potentials (sim/potentials/inertia.py, external.py) of each link's CoM c_i(q) and
  rotation R_i(q) with the link's own predictor (c~ = c0 + dt v0, R~ = R0 + dt (skew(w0) + S0) R0), and gravity.
  Gradient J^T g; Hessian J^T H J (Gauss-Newton: the engine drops the second derivative of the kinematics).
* Rotor inertia of a 1-DoF joint: a/2 ((q - q0)/dt - v0)^2 with v0 the joint's stage-start velocity.
* Viscous joint friction: mu_v/(2 dt) (q - q0)^2 (the dissipation potential's incremental form).
* Dry joint friction: mu0 dt phi(|v|), v = (q - q0)/dt, mu0 = coulomb + stiction_extra, phi the documented
  smoothed ramp (cubic below falloff_vel, then linear with an optional Gaussian Stribeck decay).
* SPHERICAL joints, on the joint's own rotation R_j in its parent frame: viscous friction as the rotation merit
  1/2 tr((R_j - R_j0) W (R_j - R_j0)^T), W = mu_v/(2 dt); rotor inertia as a rigid body of second moment a/2
  (isotropic) with the joint's predictor; dry friction mu0 dt phi(|v|), v = log(R_j R_j0^T)/dt, whose gradient
  along the increment is mu0 phi'(|v|)/|v| v. (FREE joints take none of these: the engine ignores them.)
* Soft limits: k/2 g^2 with g = max(q - upper, 0) + max(lower - q, 0) per DoF, plus d/(2 dt) (g(q) - g(q0))^2;
  a SPHERICAL joint's limits act on the components of its rotation vector.
* Single-DoF target drives: k/2 (q - target)^2 + d/(2 dt) ((q - target) - (q0 - target0))^2; single-DoF range
  constraints as the soft limits. 3D rotation targets on a SPHERICAL / FREE joint are the pose controller's joint
  rotation target; 3D rotation ranges are soft limits on the joint's rotation vector, g_i = max(x_i - max_i,
  min_i - x_i, 0).
* Saturation gbar > 0 on any constraint (sim/constraints/base.py, the reference's IPCstepC1): the elastic part
  k/2 |g|^2 becomes k gbar rho(|g|), so the force is capped at k gbar; damping is unchanged. Newton takes the
  fitted Hessian kappa = k gbar rho'(x)/x (the engine's default); ``hessian="exact"`` adds the radial part.
* Cycle joints: k/2 |x_anchor - x_pivot|^2, the pivot the cycle joint's origin in the child link (the inverse
  of joint_from_child_link), the anchor the pivot's place in the parent link at the zero pose.
* Pose controller (constraints, as the engine builds it): 1-DoF joint tracking is a single-DoF target drive;
  SPHERICAL / FREE joint tracking a rotation target on R_j; link tracking targets the link's CoM position and its
  rotation, g = log(R R_t^T); each k/2 |g|^2 + d/(2 dt) |g - g0|^2 against the stage-start state and old target.
* Generalized forces f on DoFs: -f q on scalar DoFs and FREE translations; on a rotation block the gradient is
  -tau exactly and the energy the engine's local merit 1/2 tr(skew(tau) R_j R_j0^T) (valid near R_j = R_j0).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from .. import lie
from ..contact.ramp import step_c1
from ..potentials.inertia import project_psd_3x3
from .kinematics import joint_transforms, link_jacobians, rotvec_increment_jacobian
from .params import ArticulatedJointType as JT


@dataclass
class Drive:
    """A single-DoF target drive on DoF ``dof``; target and target_old are floats or (W,) arrays."""

    dof: int
    target: float
    stiffness: float
    damping: float
    target_old: float | None = None  # the target at the stage start; None -> same as target
    saturation: float = -1.0  # > 0 caps the elastic force at stiffness * saturation


@dataclass
class RotationTarget:
    """Rotation tracking of a SPHERICAL / FREE joint's R_j (joint) or of a link's R (link): g = log(R R_t^T),
    k/2 |g|^2 + d/(2 dt) |g - g0|^2 with g0 = log(R0 R_t0^T) at the stage start and the old target."""

    index: int  # joint (kind "joint") or link (kind "link")
    kind: str
    target: np.ndarray  # (W, 3, 3)
    target_old: np.ndarray  # (W, 3, 3)
    stiffness: float
    damping: float
    saturation: float = -1.0


@dataclass
class PositionTarget:
    """Position tracking of a link's CoM: g = c - c_t, k/2 |g|^2 + d/(2 dt) |g - g0|^2."""

    link: int
    target: np.ndarray  # (W, 3)
    target_old: np.ndarray  # (W, 3)
    stiffness: float
    damping: float
    saturation: float = -1.0


@dataclass
class RangeConstraint:
    """A single-DoF range constraint: g = max(q - max_value, min_value - q, 0), k/2 g^2 + d/(2 dt) (g - g0)^2."""

    dof: int
    min_value: float
    max_value: float
    stiffness: float
    damping: float
    saturation: float = -1.0


@dataclass
class RotationRange:
    """A 3D rotation range on a SPHERICAL / FREE joint's rotation vector x (its pose block): g_i = max(x_i - upper_i,
    lower_i - x_i, 0), k/2 |g|^2 + d/(2 dt) |g - g0|^2 (or the saturated elastic part)."""

    joint: int
    lower: np.ndarray  # (3,)
    upper: np.ndarray  # (3,)
    stiffness: float
    damping: float
    saturation: float = -1.0


@dataclass
class StageData:
    """What a stage holds fixed: its length, the stage-start pose, link predictors, joint velocities, loads."""

    dt: float
    q0: np.ndarray  # (W, D)
    link_pred_com: np.ndarray  # (W, L, 3)
    link_pred_rot: np.ndarray  # (W, L, 3, 3), generally not a rotation
    joint_velocity0: np.ndarray  # (W, D)
    gravity: np.ndarray  # (W, 3)
    drives: list = field(default_factory=list)
    ranges: list = field(default_factory=list)  # RangeConstraint, RotationRange
    tracking: list = field(default_factory=list)  # RotationTarget, PositionTarget (the pose controller)
    dof_loads: np.ndarray | None = None  # (W, D) generalized forces (set_external_forces_on_dofs); None -> none
    # Rotor-inertia predictors of SPHERICAL / FREE joints (the joint's own motion, as a rigid body's): (W, L, ...)
    joint_pred_trans: np.ndarray | None = None
    joint_pred_rot: np.ndarray | None = None
    psd: bool = True  # project indefinite link rotation blocks (Newton); False gives the exact blocks (tests)
    # the drives as kernel arrays (compiled_terms), packed at first use; not an init field, so replace() drops it
    packed: tuple | None = field(default=None, init=False, repr=False, compare=False)


def _rows_of(value, rows):
    """A per-world array's ``rows``; scalars and None (shared by every world) as they are."""
    return value if value is None or np.ndim(value) == 0 else value[rows]


def take_worlds(stage: StageData, rows: np.ndarray) -> StageData:
    """``stage`` restricted to its worlds ``rows`` (per-world drive and tracking targets too)."""
    return replace(
        stage, q0=stage.q0[rows], link_pred_com=stage.link_pred_com[rows], link_pred_rot=stage.link_pred_rot[rows],
        joint_velocity0=stage.joint_velocity0[rows], gravity=_rows_of(stage.gravity, rows),
        dof_loads=_rows_of(stage.dof_loads, rows), joint_pred_trans=_rows_of(stage.joint_pred_trans, rows),
        joint_pred_rot=_rows_of(stage.joint_pred_rot, rows),
        drives=[replace(d, target=_rows_of(d.target, rows), target_old=_rows_of(d.target_old, rows))
                for d in stage.drives],
        tracking=[replace(t, target=t.target[rows], target_old=t.target_old[rows]) for t in stage.tracking])


def link_terms_cartesian(model, com, rot, stage: StageData):
    """Per-link energy (W,), gradient (W, L, 6) and Hessian (W, L, 6, 6) in (dc, dtheta), the rigid formulas."""
    dt2 = stage.dt * stage.dt
    stiffness = model.mass / dt2  # (L,)
    diff = com - stage.link_pred_com
    energy = 0.5 * np.einsum("l,wli,wli->w", stiffness, diff, diff)
    weight = model.mass * model.has_gravity  # (L,)
    energy = energy - np.einsum("l,wi,wli->w", weight, stage.gravity, com)
    grad = np.zeros(com.shape[:2] + (6,))
    grad[..., :3] = stiffness[None, :, None] * diff - weight[None, :, None] * stage.gravity[:, None, :]
    # Rotation: Phi = 1/2 tr((R - R~) W (R - R~)^T) = const - tr(A), A = R W R~^T, W = J/dt^2 (inertia.py).
    w_mat = model.second_moment / dt2
    pred = stage.link_pred_rot
    big_a = rot @ w_mat @ np.swapaxes(pred, -1, -2)
    const = 0.5 * np.trace(w_mat, axis1=-2, axis2=-1) + 0.5 * np.einsum("wlij,ljk,wlik->wl", pred, w_mat, pred)
    energy = energy + np.sum(const - np.trace(big_a, axis1=-2, axis2=-1), axis=1)
    grad[..., 3:] = 2.0 * lie.axial(big_a)
    hess = np.zeros(com.shape[:2] + (6, 6))
    hess[..., 0, 0] = hess[..., 1, 1] = hess[..., 2, 2] = stiffness
    m = -big_a
    rot_h = lie.sym(m) - np.trace(m, axis1=-2, axis2=-1)[..., None, None] * np.eye(3)
    hess[..., 3:, 3:] = project_psd_3x3(rot_h) if stage.psd else rot_h
    return energy, grad, hess


def link_terms(model, q, stage: StageData):
    """Links' inertia and gravity pulled back to joint coordinates: J^T g and J^T H J."""
    rot, _, com, jac = link_jacobians(model, q)
    energy, g6, h6 = link_terms_cartesian(model, com, rot, stage)
    grad = np.einsum("wlkd,wlk->wd", jac, g6)
    hess = (np.swapaxes(jac, -1, -2) @ h6 @ jac).sum(axis=1)  # matmuls: the three-operand einsum loops generically
    return energy, grad, hess


def _one_dof_joints(model):
    """(joint, DoF) of each REVOLUTE / PRISMATIC joint."""
    return [(i, info.offset) for i, (t, info) in enumerate(zip(model.joint_type, model.dof_info))
            if t in (JT.REVOLUTE, JT.PRISMATIC)]


def _zeros(q):
    num_worlds, num_dofs = q.shape
    return np.zeros(num_worlds), np.zeros((num_worlds, num_dofs)), np.zeros((num_worlds, num_dofs, num_dofs))


def rotor_inertia(model, q, stage: StageData):
    energy, grad, hess = _zeros(q)
    for j, d in _one_dof_joints(model):
        a = model.rotor_inertia[j]
        if a == 0.0:
            continue
        dv = (q[:, d] - stage.q0[:, d]) / stage.dt - stage.joint_velocity0[:, d]
        energy += 0.5 * a * dv * dv
        grad[:, d] += a * dv / stage.dt
        hess[:, d, d] += a / stage.dt**2
    return energy, grad, hess


def viscous_friction(model, q, stage: StageData):
    energy, grad, hess = _zeros(q)
    for j, d in _one_dof_joints(model):
        mu = model.friction[j].viscous
        if mu == 0.0:
            continue
        dq = q[:, d] - stage.q0[:, d]
        energy += 0.5 * mu / stage.dt * dq * dq
        grad[:, d] += mu / stage.dt * dq
        hess[:, d, d] += mu / stage.dt
    return energy, grad, hess


def dry_friction_ramp(x, falloff, ratio, stribeck):
    """phi(x), phi'(x), phi''(x) and phi'(x)/x (finite at 0) of the documented dry-friction ramp, x = |v| >= 0."""
    x = np.asarray(x, dtype=np.float64)
    low = x < falloff
    u = np.maximum(x - falloff, 0.0)
    if stribeck > 0.0:
        from scipy import special  # here, not at import: scipy is a third of the engine's import time

        gauss = np.exp(-(u / stribeck) ** 2)
        erf = special.erf(u / stribeck)
        hi_phi = 2 * falloff / 3 + ratio * u + (1 - ratio) * stribeck * math.sqrt(math.pi) / 2 * erf
        hi_d1 = ratio + (1 - ratio) * gauss
        hi_d2 = -(1 - ratio) * 2 * u / stribeck**2 * gauss
    else:
        hi_phi, hi_d1, hi_d2 = 2 * falloff / 3 + ratio * u, np.ones_like(x) * ratio, np.zeros_like(x)
    phi = np.where(low, x * x / falloff * (1 - x / (3 * falloff)), hi_phi)
    d1 = np.where(low, 2 * x / falloff - x * x / falloff**2, hi_d1)
    d2 = np.where(low, 2 / falloff - 2 * x / falloff**2, hi_d2)
    d1_over_x = np.where(low, 2 / falloff - x / falloff**2, hi_d1 / np.where(low, 1.0, x))
    return phi, d1, d2, d1_over_x


def dry_friction(model, q, stage: StageData, hessian: str = "fitted"):
    """mu0 dt phi(|v|); ``hessian`` "fitted" (mu0 phi'(x)/x / dt, never negative, the engine's default for Newton)
    or "exact" (mu0 phi''(x) / dt, for derivative checks)."""
    energy, grad, hess = _zeros(q)
    for j, d in _one_dof_joints(model):
        f = model.friction[j]
        mu0 = f.coulomb + f.stiction_extra
        if mu0 == 0.0:
            continue
        v = (q[:, d] - stage.q0[:, d]) / stage.dt
        phi, d1, d2, d1_over_x = dry_friction_ramp(np.abs(v), f.falloff_vel, f.coulomb / mu0, f.stribeck_vel)
        energy += mu0 * stage.dt * phi
        grad[:, d] += mu0 * d1_over_x * v
        hess[:, d, d] += mu0 * (d1_over_x if hessian == "fitted" else d2) / stage.dt
    return energy, grad, hess


def _rotation_joints(model):
    """(joint, translation offset or None, rotation offset) of each SPHERICAL / FREE joint (generalized forces act
    on both; friction and rotor inertia on SPHERICAL joints only: the engine ignores them on FREE ones)."""
    out = []
    for i, (t, info) in enumerate(zip(model.joint_type, model.dof_info)):
        if t == JT.SPHERICAL:
            out.append((i, None, info.get_rot_offset()))
        elif t == JT.FREE:
            out.append((i, info.get_trans_offset(), info.get_rot_offset()))
    return out


def _rotation_merit(rot, pred, weight, psd):
    """1/2 tr((R - P) w (R - P)^T) for a scalar weight w: energy, left gradient and Hessian (inertia.py identities)."""
    big_a = weight * rot @ np.swapaxes(pred, -1, -2)
    energy = 0.5 * weight * 3.0 + 0.5 * weight * np.einsum("wij,wij->w", pred, pred) - np.trace(big_a, axis1=-2,
                                                                                                  axis2=-1)
    m = -big_a
    hess = lie.sym(m) - np.trace(m, axis1=-2, axis2=-1)[..., None, None] * np.eye(3)
    return energy, 2.0 * lie.axial(big_a), (project_psd_3x3(hess) if psd else hess)


def rotation_joint_terms(model, q, stage: StageData, hessian: str = "fitted"):
    """Viscous friction, rotor inertia and dry friction of SPHERICAL and FREE joints (module docstring)."""
    energy, grad, hess = _zeros(q)
    joints = [jt for jt in _rotation_joints(model) if jt[1] is None]  # SPHERICAL only (see _rotation_joints)
    if not joints:
        return energy, grad, hess
    jrot, jtrans = joint_transforms(model, q)
    jrot0, jtrans0 = joint_transforms(model, stage.q0)
    dt = stage.dt
    for j, ot, orot in joints:
        f = model.friction[j]
        r_sl = slice(orot, orot + 3)
        parts = []  # (energy, trans grad, trans hess, rot grad, rot hess)
        if f.viscous:
            e, g, h = _rotation_merit(jrot[:, j], jrot0[:, j], 0.5 * f.viscous / dt, stage.psd)
            dtr = jtrans[:, j] - jtrans0[:, j]
            parts.append((e + 0.5 * f.viscous / dt * np.einsum("wi,wi->w", dtr, dtr), f.viscous / dt * dtr,
                          f.viscous / dt, g, h))
        a = model.rotor_inertia[j]
        if a:
            e, g, h = _rotation_merit(jrot[:, j], stage.joint_pred_rot[:, j], 0.5 * a / dt**2, stage.psd)
            dtr = jtrans[:, j] - stage.joint_pred_trans[:, j]
            parts.append((e + 0.5 * a / dt**2 * np.einsum("wi,wi->w", dtr, dtr), a / dt**2 * dtr, a / dt**2, g, h))
        mu0 = f.coulomb + f.stiction_extra
        if mu0 and ot is None:
            v = lie.log_so3(jrot[:, j] @ np.swapaxes(jrot0[:, j], -1, -2)) / dt
            speed = np.linalg.norm(v, axis=1)
            phi, d1, d2, d1_over_x = dry_friction_ramp(speed, f.falloff_vel, f.coulomb / mu0, f.stribeck_vel)
            unit = v / np.where(speed > 0, speed, 1.0)[:, None]
            h = (mu0 / dt * d1_over_x)[:, None, None] * np.eye(3)
            if hessian == "exact":
                h = h + (mu0 / dt * (d2 - d1_over_x))[:, None, None] * np.einsum("wi,wj->wij", unit, unit)
            parts.append((mu0 * dt * phi, 0.0, 0.0, mu0 * d1_over_x[:, None] * v, h))
        for e, gt, ht, gr, hr in parts:
            energy += e
            grad[:, r_sl] += gr
            hess[:, r_sl, r_sl] += hr
            if ot is not None:
                grad[:, ot:ot + 3] += gt
                idx = np.arange(ot, ot + 3)
                hess[:, idx, idx] += ht
    return energy, grad, hess


def _limit_gap(model, q):
    """g = max(q - upper, 0) + max(lower - q, 0) and dg/dq per DoF (W, D)."""
    above = q > model.dof_upper
    below = q < model.dof_lower
    gap = np.where(above, q - model.dof_upper, 0.0) + np.where(below, model.dof_lower - q, 0.0)
    slope = above.astype(np.float64) - below.astype(np.float64)
    return gap, slope


def soft_limits(model, q, stage: StageData):
    energy, grad, hess = _zeros(q)
    if not np.any(np.isfinite(model.dof_lower) | np.isfinite(model.dof_upper)):
        return energy, grad, hess
    gap, slope = _limit_gap(model, q)
    gap0, _ = _limit_gap(model, stage.q0)
    k, d = model.dof_limit_stiffness, model.dof_limit_damping / stage.dt
    dgap = gap - gap0
    energy += np.sum(0.5 * k * gap * gap + 0.5 * d * dgap * dgap, axis=1)
    grad += (k * gap + d * dgap) * slope
    idx = np.arange(q.shape[1])
    hess[:, idx, idx] += (k + d) * slope * slope
    # A SPHERICAL block's limits act on its rotation vector, which a Lie increment moves by J_inv d: chain rule
    # (Gauss-Newton: the Jacobian's own derivative is dropped, as for the links).
    for j, info in enumerate(model.dof_info):
        if model.joint_type[j] != JT.SPHERICAL:
            continue
        sl = slice(info.offset, info.offset + 3)
        if not np.any(np.isfinite(model.dof_lower[sl]) | np.isfinite(model.dof_upper[sl])):
            continue
        jinv = rotvec_increment_jacobian(q[:, sl])
        grad[:, sl] = np.einsum("wki,wk->wi", jinv, grad[:, sl])
        hess[:, sl, sl] = np.einsum("wki,wkl,wlj->wij", jinv, hess[:, sl, sl], jinv)
    return energy, grad, hess


def elastic(stiffness: float, saturation: float, norm2):
    """The constraints' elastic part at |g|^2 = norm2: (energy, kappa = dU/d|g| / |g|, radial = the exact Hessian's
    extra factor along g/|g|): k/2 |g|^2, or k gbar rho(|g|) with saturation gbar > 0 (module docstring)."""
    if not saturation > 0:
        return 0.5 * stiffness * norm2, np.full_like(norm2, stiffness), np.zeros_like(norm2)
    ramp = step_c1(np.sqrt(norm2), np.full_like(norm2, saturation), check=False)
    cap = stiffness * saturation
    return cap * ramp.value, cap * ramp.d1_over_x, cap * (ramp.d2 - ramp.d1_over_x)


def _range_gap(x, lower, upper):
    """g = max(x - upper, 0) + max(lower - x, 0) and dg/dx, elementwise."""
    gap = np.maximum(x - upper, 0.0) + np.maximum(lower - x, 0.0)
    return gap, (x > upper).astype(np.float64) - (x < lower)


def ranges(model, q, stage: StageData, hessian: str = "fitted"):
    """Single-DoF range constraints, and 3D rotation ranges chained through the rotation vector's increment
    Jacobian (Gauss-Newton, as the spherical soft limits)."""
    energy, grad, hess = _zeros(q)
    for rc in stage.ranges:
        c = rc.damping / stage.dt
        if isinstance(rc, RotationRange):
            o = model.dof_info[rc.joint].get_rot_offset()
            sl = slice(o, o + 3)
            gap, slope = _range_gap(q[:, sl], rc.lower, rc.upper)
            gap0, _ = _range_gap(stage.q0[:, sl], rc.lower, rc.upper)
            e, kappa, _ = elastic(rc.stiffness, rc.saturation, np.einsum("wi,wi->w", gap, gap))
            energy += e + 0.5 * c * np.einsum("wi,wi->w", gap - gap0, gap - gap0)
            jinv = slope[:, :, None] * rotvec_increment_jacobian(q[:, sl])  # dg/d(increment)
            grad[:, sl] += np.einsum("wki,wk->wi", jinv, kappa[:, None] * gap + c * (gap - gap0))
            hess[:, sl, sl] += (kappa + c)[:, None, None] * np.einsum("wki,wkj->wij", jinv, jinv)
            continue
        x, x0 = q[:, rc.dof], stage.q0[:, rc.dof]
        gap, slope = _range_gap(x, rc.min_value, rc.max_value)
        gap0, _ = _range_gap(x0, rc.min_value, rc.max_value)
        e, kappa, radial = elastic(rc.stiffness, rc.saturation, gap * gap)
        energy += e + 0.5 * c * (gap - gap0) ** 2
        grad[:, rc.dof] += (kappa * gap + c * (gap - gap0)) * slope
        curvature = kappa + radial if hessian == "exact" else kappa
        hess[:, rc.dof, rc.dof] += (curvature + c) * slope * slope
    return energy, grad, hess


def dof_loads(model, q, stage: StageData):
    energy, grad, hess = _zeros(q)
    if stage.dof_loads is None or not np.any(stage.dof_loads):
        return energy, grad, hess
    load = stage.dof_loads
    grad -= load
    scalar = np.ones(q.shape[1], dtype=bool)
    jrot, jrot0 = None, None
    for j, ot, orot in _rotation_joints(model):
        scalar[orot:orot + 3] = False
        if jrot is None:
            jrot, _ = joint_transforms(model, q)
            jrot0, _ = joint_transforms(model, stage.q0)
        step = jrot[:, j] @ np.swapaxes(jrot0[:, j], -1, -2)
        energy += 0.5 * np.einsum("wij,wji->w", lie.skew(load[:, orot:orot + 3]), step)
    energy -= np.einsum("wd,wd->w", load[:, scalar], q[:, scalar])
    return energy, grad, hess


def drives(model, q, stage: StageData, hessian: str = "fitted"):
    energy, grad, hess = _zeros(q)
    for dr in stage.drives:
        target_old = dr.target if dr.target_old is None else dr.target_old
        g = q[:, dr.dof] - dr.target
        dg = g - (stage.q0[:, dr.dof] - target_old)
        c = dr.damping / stage.dt
        e, kappa, radial = elastic(dr.stiffness, dr.saturation, g * g)
        energy += e + 0.5 * c * dg * dg
        grad[:, dr.dof] += kappa * g + c * dg
        hess[:, dr.dof, dr.dof] += (kappa + radial if hessian == "exact" else kappa) + c
    return energy, grad, hess


def tracking(model, q, stage: StageData):
    """Pose-controller constraints: joint and link rotation targets and link CoM position targets (the 1-DoF joint
    targets are `drives`) and the 3D rotation target constraints (kind "joint"). Gradients chain through the Lie
    increment; Hessians are Gauss-Newton (kappa + d/dt) G^T G."""
    energy, grad, hess = _zeros(q)
    if not stage.tracking:
        return energy, grad, hess
    rot, _, com, jac = link_jacobians(model, q)
    rot0, _, com0, _ = link_jacobians(model, stage.q0)
    jrot, _ = joint_transforms(model, q)
    jrot0, _ = joint_transforms(model, stage.q0)
    for t in stage.tracking:
        c = t.damping / stage.dt
        if isinstance(t, PositionTarget):
            g = com[:, t.link] - t.target
            g0 = com0[:, t.link] - t.target_old
            gmap = jac[:, t.link, :3]  # (W, 3, D): dg/dq
        else:
            if t.kind == "joint":
                r, r0 = jrot[:, t.index], jrot0[:, t.index]
                o = model.dof_info[t.index].get_rot_offset()
                dtheta = np.zeros(q.shape[:1] + (3, q.shape[1]))
                dtheta[:, :, o:o + 3] = np.eye(3)
            else:
                r, r0 = rot[:, t.index], rot0[:, t.index]
                dtheta = jac[:, t.index, 3:]
            g = lie.log_so3(r @ np.swapaxes(t.target, -1, -2))
            g0 = lie.log_so3(r0 @ np.swapaxes(t.target_old, -1, -2))
            gmap = rotvec_increment_jacobian(g) @ dtheta
        e, kappa, _ = elastic(t.stiffness, t.saturation, np.einsum("wi,wi->w", g, g))
        energy += e + 0.5 * c * np.einsum("wi,wi->w", g - g0, g - g0)
        grad += np.einsum("wid,wi->wd", gmap, kappa[:, None] * g + c * (g - g0))
        hess += (kappa + c)[:, None, None] * np.einsum("wid,wie->wde", gmap, gmap)
    return energy, grad, hess


def cycle_joints(model, q, stage: StageData):
    """Cycle joints: k/2 |x_anchor - x_pivot|^2 between a point of the parent link and one of the child link,
    gradient J^T k g and Gauss-Newton Hessian k J^T J with J the difference of the points' Jacobians."""
    energy, grad, hess = _zeros(q)
    if model.cycle_child.size == 0:
        return energy, grad, hess
    rot, origin, com, jac = link_jacobians(model, q)

    def point_and_jacobian(links, point):
        arm = np.einsum("wcij,cj->wci", rot[:, links], point) + origin[:, links] - com[:, links]  # from the CoM
        x = com[:, links] + arm
        j = jac[:, links, :3] - np.einsum("wcij,wcjd->wcid", lie.skew(arm), jac[:, links, 3:])
        return x, j

    xa, ja = point_and_jacobian(model.cycle_parent, model.cycle_parent_point)
    xb, jb = point_and_jacobian(model.cycle_child, model.cycle_child_point)
    gap, jg = xa - xb, ja - jb  # (W, C, 3), (W, C, 3, D)
    k = model.cycle_stiffness
    energy += 0.5 * np.einsum("c,wci,wci->w", k, gap, gap)
    grad += np.einsum("c,wcid,wci->wd", k, jg, gap)
    hess += np.einsum("c,wcid,wcie->wde", k, jg, jg)
    return energy, grad, hess


TERMS = (link_terms, rotor_inertia, viscous_friction, dry_friction, rotation_joint_terms, soft_limits, drives, ranges,
         dof_loads, cycle_joints, tracking)


def total(model, q, stage: StageData):
    """Sum of every term (the stage objective, its gradient and the Newton matrix)."""
    energy, grad, hess = _zeros(q)
    for term in TERMS:
        e, g, h = term(model, q, stage)
        energy, grad, hess = energy + e, grad + g, hess + h
    return energy, grad, hess
