"""A Newton step over joint coordinates for articulated-only scenes, for every integration method: the whole-array
formulation a compiled Newton will be held to, and what the fidelity tests run against the released engine's
trajectories. Its stage objective is `terms` (compiled_terms.total by default, as the scene steps; energy.total
evaluates every term in numpy).

State per world: the pose q, the joint velocities, and a rigid velocity state (v, F = skew(w) + S) for each link and
for each joint's own motion, which the engine keeps: after a step v = (c - c0)/dt and F = (R - R0)/dt R^T (finite
differences, as for a rigid actor), so the next stage's predictor is 2 X - X_prev. Setting joint velocities, or a
pose, makes the link velocities J(q) qdot, with S chosen so that the rotation predictor is a rotation
(sim/pipeline.velocity_sym_for_spin).

Methods follow sim/step/integration.py: the step starts from y* = sum alpha_r y_{n+1-r}, stage i from
y* + sum a~_ij (Y_j - y*), and ends at y* + sum b~_i (Y_i - y*), each combination over the joint pose (rotation
blocks in the Lie algebra) and every velocity state (joint and link, linearly); the links' stage-start transforms
are the forward kinematics of the combined pose. Any setter restarts the history, so the next step is
BACKWARD_EULER, as in the engine.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from .. import lie
from ..step.integration import combine_rotations, combine_vectors, effective_tableau
from ..params import DEFAULT_GRAVITY, IntegrationMethod
from ..step.pipeline import velocity_sym_for_spin
from ..validation import as_int, bounded_real, real_array
from ..constraints.params import check_saturation
from .energy import (Drive, PositionTarget, RangeConstraint, RotationRange, RotationTarget, StageData, drives as
                     drive_terms, ranges as range_terms, tracking as tracking_terms)
from .boundary import BoundaryConditions, eliminate
from .compiled_terms import total as compiled_total
from .kinematics import add_delta, forward_kinematics, joint_transforms, link_jacobians, pose_delta
from .model import ArticulationModel
from ..solver.numpy_newton import batched_solve
from .stopping import Stopping, articulation_weights, from_solver
from .params import ArticulatedJointType as JT
from .params import PoseControllerParams, PoseTrackingParams

# Armijo constant of the backtracking line search (sufficient decrease of the stage energy).
_ARMIJO = 1e-4
# Relative size of float64 round-off in the summed stage energy (tens of terms of size ~m |dc|^2 / dt^2).
_ENERGY_ROUND_OFF = 1e-13


@dataclass
class ConstraintRecord:
    """One articulated constraint of an oracle. Targets are per world in the oracle's ``constraint_target`` (and the
    previous step's in ``constraint_target_old``) at columns slot.. (1 for a DoF target, 9 for a rotation matrix)."""

    kind: str  # "single_dof_target", "single_dof_range", "rotation_target" or "rotation_range"
    joint: int
    dof: int  # the DoF (single-DoF kinds) or the first DoF of the joint's rotation block
    stiffness: float
    damping: float
    saturation: float
    lower: np.ndarray | None = None  # range kinds: (1,) or (3,)
    upper: np.ndarray | None = None
    slot: int = -1  # target kinds: first column in constraint_target
    force_slot: int = -1  # first column in constraint_force (1 column for single-DoF kinds, 3 for rotation kinds)

    @property
    def num_dofs(self) -> int:
        return 3 if self.kind.startswith("rotation") else 1

    @property
    def width(self) -> int:
        return {"single_dof_target": 1, "rotation_target": 9}.get(self.kind, 0)


def checked_rotation(value, name: str) -> np.ndarray:
    """A finite proper rotation matrix (3, 3), within round-off of orthonormal."""
    rot = real_array(value, name)
    if rot.shape != (3, 3) or not np.all(np.isfinite(rot)):
        raise ValueError(f"{name} must be a finite 3x3 rotation matrix, got shape {rot.shape}")
    if np.abs(rot.T @ rot - np.eye(3)).max() > 1e-9 or np.linalg.det(rot) < 0:
        raise ValueError(f"{name} must be a rotation (orthonormal, det +1)")
    return rot.copy()


def _compliance(stiffness, damping, saturation):
    return (bounded_real(stiffness, "stiffness", 0.0, np.inf), bounded_real(damping, "damping", 0.0, np.inf),
            check_saturation(bounded_real(saturation, "saturation", -np.inf, np.inf)))


@dataclass
class _Snapshot:
    """One completed state: pose and every velocity state (W-leading arrays)."""

    q: np.ndarray
    joint_velocity: np.ndarray
    link_velocity: np.ndarray
    link_f: np.ndarray
    joint_lin: np.ndarray
    joint_f: np.ndarray


class ArticulatedOracle:
    """One articulation in W worlds, stepped in numpy (whole-array over worlds)."""

    def __init__(self, model: ArticulationModel, num_worlds: int = 1, gravity=DEFAULT_GRAVITY):
        self.model = model
        self.num_worlds = as_int(num_worlds, "num_worlds", 1, 1 << 20)
        self.gravity = np.broadcast_to(real_array(gravity, "gravity"), (self.num_worlds, 3)).copy()
        self.q = np.zeros((self.num_worlds, model.num_dofs))
        self.constraints: list[ConstraintRecord] = []
        self.constraint_target = np.zeros((self.num_worlds, 0))  # (W, S): the target kinds' columns (their slot)
        self.constraint_target_old = np.zeros((self.num_worlds, 0))
        self.dof_loads = np.zeros((self.num_worlds, model.num_dofs))
        self.controller = None  # PoseControllerParams once add_pose_controller is called
        self.target_pose = self.target_pose_old = None  # (W, D) the controller's target and old target
        # Link targets given as transforms (set_articulated_target_link_transforms) differ from the target pose's
        # links: kept as offsets, CoM (W, L, 3) added and rotation (W, L, 3, 3) applied on the left; zero and
        # identity when the target is a pose. The _old ones are the previous step's.
        self.link_offset_com = self.link_offset_rot = self.link_offset_com_old = self.link_offset_rot_old = None
        self.joint_velocity = np.broadcast_to(model.joint_velocities, self.q.shape).copy()
        self._velocities_from_joints()
        self.last_iterations = np.zeros(self.num_worlds, dtype=np.int64)
        self.controller_force = None  # (W, D) once the controller force is wanted (want_controller_force)
        self.want_controller_force = False
        # (W, F): each constraint's generalized force at the end of the last step, at its force_slot; computed
        # while want_constraint_force (QueryType.CONSTRAINT_FORCE registered on the scene or a constraint).
        self.constraint_force = np.zeros((self.num_worlds, 0))
        self.want_constraint_force = False
        self.boundary = BoundaryConditions(model)  # DoFs held at values (boundary.py); shared by every world
        # The stage objective: the compiled common terms plus the rest in numpy (compiled_terms.total), as the scene
        # steps; energy.total (every term in numpy) is what tests compare it with
        self.terms = compiled_total

    def _velocities_from_joints(self) -> None:
        m = self.model
        rot, _, _, jac = link_jacobians(m, self.q)
        self.link_velocity = np.einsum("wlkd,wd->wlk", jac[:, :, :3], self.joint_velocity)
        self.link_omega = np.einsum("wlkd,wd->wlk", jac[:, :, 3:], self.joint_velocity)
        # Each joint's own motion has a rigid velocity state too (rotor inertia of SPHERICAL / FREE joints).
        self.joint_lin = np.zeros((self.num_worlds, m.num_links, 3))
        self.joint_omega = np.zeros((self.num_worlds, m.num_links, 3))
        for j, info in enumerate(m.dof_info):
            if m.joint_type[j] in (JT.SPHERICAL, JT.FREE):
                o = info.get_rot_offset()
                self.joint_omega[:, j] = self.joint_velocity[:, o:o + 3]
            if m.joint_type[j] == JT.FREE:
                self.joint_lin[:, j] = self.joint_velocity[:, info.offset:info.offset + 3]
        self._spin_dirty = True  # S is set once the step length is known, as the engine does
        self._history: list[_Snapshot] = []  # newest first; empty after a setter (the next step is BE)

    def set_pose(self, q) -> None:
        """Set the pose of every world; the links' velocities become J(q) qdot of the current joint velocities, as
        the engine recomputes them."""
        q = np.broadcast_to(real_array(q, "pose"), self.q.shape)
        if not np.all(np.isfinite(q)):
            raise ValueError("pose must be finite")
        self.q = q.copy()
        self._velocities_from_joints()

    @property
    def drives(self) -> list:
        return [c for c in self.constraints if c.kind == "single_dof_target"]

    @property
    def ranges(self) -> list:
        return [c for c in self.constraints if c.kind in ("single_dof_range", "rotation_range")]

    def _add(self, record: ConstraintRecord, target=None) -> ConstraintRecord:
        """Append ``record`` with its initial target (every world; a row of width record.width) after all checks."""
        if record.width:
            record.slot = self.constraint_target.shape[1]
            columns = np.broadcast_to(np.asarray(target, dtype=np.float64).reshape(-1), (self.num_worlds, record.width))
            self.constraint_target = np.concatenate([self.constraint_target, columns], axis=1)
            self.constraint_target_old = np.concatenate([self.constraint_target_old, columns], axis=1)
        record.force_slot = self.constraint_force.shape[1]
        self.constraint_force = np.concatenate([self.constraint_force, np.zeros((self.num_worlds, record.num_dofs))],
                                               axis=1)
        self.constraints.append(record)
        return record

    def remove_constraint(self, record: ConstraintRecord) -> None:
        """Drop ``record``; its target columns stay (unused), so the other records' slots hold."""
        self.constraints.remove(record)

    def add_single_dof_target(self, joint_index: int, dof_index: int, target_value: float,
                              stiffness: float = 1e6, damping: float = 0.0, saturation: float = -1.0):
        dof = self._dof(joint_index, dof_index)
        target = bounded_real(target_value, "target_value", -np.inf, np.inf)
        k, d, sat = _compliance(stiffness, damping, saturation)
        return self._add(ConstraintRecord("single_dof_target", int(joint_index), dof, k, d, sat), target)

    def _dof(self, joint_index, dof_index) -> int:
        m = self.model
        j = as_int(joint_index, "joint_index", 0, m.num_links - 1)
        info = m.dof_info[j]
        if info.get_size() == 0:
            raise ValueError(f"joint {j} ({m.joint_names[j]!r}) has no DoFs")
        return info.offset + as_int(dof_index, "dof_index", 0, info.get_size() - 1)

    def add_single_dof_range(self, joint_index: int, dof_index: int, min_value: float, max_value: float,
                             stiffness: float = 1e6, damping: float = 0.0, saturation: float = -1.0):
        lo = bounded_real(min_value, "min_value", -np.inf, np.inf)
        hi = bounded_real(max_value, "max_value", -np.inf, np.inf)
        if lo > hi:
            raise ValueError(f"min_value must be <= max_value, got {lo} > {hi}")
        dof = self._dof(joint_index, dof_index)
        k, d, sat = _compliance(stiffness, damping, saturation)
        return self._add(ConstraintRecord("single_dof_range", int(joint_index), dof, k, d, sat, np.array([lo]),
                                          np.array([hi])))

    def _rotation_joint(self, joint_index, what: str) -> int:
        """The first DoF of a SPHERICAL / FREE joint's rotation block (the reference refuses other joints)."""
        m = self.model
        j = as_int(joint_index, "joint_index", 0, m.num_links - 1)
        if m.joint_type[j] not in (JT.SPHERICAL, JT.FREE):
            raise ValueError(f"joint_index: a {what} needs a joint with a 3D rotation (SPHERICAL or FREE); joint {j} "
                             f"({m.joint_names[j]!r}) is {m.joint_type[j].name}")
        return m.dof_info[j].get_rot_offset()

    def add_rotation_target(self, joint_index: int, target, stiffness: float = 1e6, damping: float = 0.0,
                            saturation: float = -1.0):
        """A 3D rotation target on joint ``joint_index``'s rotation R_j (``target`` a rotation matrix)."""
        dof = self._rotation_joint(joint_index, "3D rotation target")
        rot = checked_rotation(target, "target")
        k, d, sat = _compliance(stiffness, damping, saturation)
        return self._add(ConstraintRecord("rotation_target", int(joint_index), dof, k, d, sat), rot)

    def add_rotation_range(self, joint_index: int, min_values, max_values, stiffness: float = 1e6,
                           damping: float = 0.0, saturation: float = -1.0):
        """A 3D rotation range [min_values, max_values] (rad) on joint ``joint_index``'s rotation vector."""
        dof = self._rotation_joint(joint_index, "3D rotation range")
        bounds = []
        for name, v in (("min_values", min_values), ("max_values", max_values)):
            arr = real_array(v, name).reshape(-1)
            if arr.shape != (3,) or np.any(np.isnan(arr)):
                raise ValueError(f"{name} must be 3 numbers (rad, not NaN), got {np.asarray(v).tolist()}")
            bounds.append(arr.copy())
        bad = np.flatnonzero(bounds[0] > bounds[1])
        if bad.size:
            raise ValueError(f"min_values must be <= max_values, got {bounds[0][bad[0]]} > {bounds[1][bad[0]]} on "
                             f"component {int(bad[0])}")
        k, d, sat = _compliance(stiffness, damping, saturation)
        return self._add(ConstraintRecord("rotation_range", int(joint_index), dof, k, d, sat, *bounds))

    def _constraint_terms(self):
        """(drives, ranges, tracking) of the constraints, with each world's targets."""
        out = {"drives": [], "ranges": [], "tracking": []}
        for c in self.constraints:
            group, term = self._constraint_term(c)
            out[group].append(term)
        return out["drives"], out["ranges"], out["tracking"]

    def _constraint_term(self, c: ConstraintRecord) -> tuple:
        """(group of StageData it belongs to, its energy term) for one constraint."""
        ct, cto = self.constraint_target, self.constraint_target_old
        if c.kind == "single_dof_target":
            return "drives", Drive(c.dof, ct[:, c.slot], c.stiffness, c.damping, cto[:, c.slot], c.saturation)
        if c.kind == "single_dof_range":
            return "ranges", RangeConstraint(c.dof, float(c.lower[0]), float(c.upper[0]), c.stiffness, c.damping,
                                             c.saturation)
        if c.kind == "rotation_range":
            return "ranges", RotationRange(c.joint, c.lower, c.upper, c.stiffness, c.damping, c.saturation)
        cols = slice(c.slot, c.slot + 9)
        return "tracking", RotationTarget(c.joint, "joint", ct[:, cols].reshape(-1, 3, 3),
                                          cto[:, cols].reshape(-1, 3, 3), c.stiffness, c.damping, c.saturation)

    def set_external_forces_on_dofs(self, dof_indices, force_values) -> None:
        """Constant generalized forces on DoFs (N or N m), replacing earlier ones, in every world."""
        idx = np.asarray(dof_indices)
        vals = real_array(force_values, "force_values").reshape(-1)
        if idx.ndim != 1 or idx.dtype.kind not in "iu" or idx.shape != vals.shape:
            raise ValueError("dof_indices must be integers, one per force value")
        if np.any((idx < 0) | (idx >= self.model.num_dofs)) or not np.all(np.isfinite(vals)):
            raise ValueError(f"dof_indices must be in [0, {self.model.num_dofs - 1}] and forces finite")
        loads = np.zeros(self.model.num_dofs)
        loads[idx] = vals
        self.dof_loads = np.broadcast_to(loads, self.dof_loads.shape).copy()

    def add_pose_controller(self, params: PoseControllerParams) -> None:
        """The engine's pose controller: per link, joint / link-position / link-rotation tracking gains (empty or
        size-one slices broadcast); the targets start at the current pose."""
        if self.controller is not None:
            raise ValueError("this actor already has a pose controller")
        if not isinstance(params, PoseControllerParams):
            raise TypeError(f"expected PoseControllerParams, got {type(params).__name__}")
        n = self.model.num_links
        slices = {}
        for name in ("joint_tracking", "link_pos_tracking", "link_rot_tracking"):
            entries = list(getattr(params, name)) or [PoseTrackingParams()]
            if len(entries) not in (1, n):
                raise ValueError(f"{name} must be empty, of size 1 or of size num_links ({n}), got {len(entries)}")
            for i, e in enumerate(entries):
                k = bounded_real(e.stiffness, f"{name}[{i}].stiffness", 0.0, np.inf)
                d = bounded_real(e.damping, f"{name}[{i}].damping", 0.0, np.inf)
                try:
                    check_saturation(bounded_real(e.saturation, f"{name}[{i}].saturation", -np.inf, np.inf))
                except ValueError as exc:
                    raise ValueError(f"{name}[{i}].saturation: {exc}") from exc
            slices[name] = [(float(e.stiffness), float(e.damping), float(e.saturation)) for e in entries] * (
                n if len(entries) == 1 else 1)
        self.controller = slices
        self.target_pose = self.q.copy()
        self.target_pose_old = self.q.copy()
        self.link_offset_com = np.zeros((self.num_worlds, self.model.num_links, 3))
        self.link_offset_rot = np.broadcast_to(np.eye(3), self.link_offset_com.shape + (3,)).copy()
        self.link_offset_com_old, self.link_offset_rot_old = self.link_offset_com.copy(), self.link_offset_rot.copy()
        # The engine starts the target velocity at the joints' velocity: the next step's old target is
        # target (-) dt qdot, and only after that step does a moved target act as the target's velocity.
        self._target_velocity = self.joint_velocity.copy()

    def set_target_pose(self, pose) -> None:
        """New controller target; its change from the previous step's target acts as the target's velocity."""
        self.target_pose = self._checked_target(pose)

    def reset_target_pose(self, pose) -> None:
        """New controller target with zero target velocity for the next step."""
        self.target_pose = self._checked_target(pose)
        self._target_velocity = np.zeros_like(self.q)

    def set_target_velocity(self, velocity) -> None:
        """The target's velocity for the next step only (one value per DoF), as the engine's override."""
        self._checked_target(self.q)
        v = np.broadcast_to(real_array(velocity, "velocity"), self.q.shape)
        if not np.all(np.isfinite(v)):
            raise ValueError("velocity must be finite")
        self._target_velocity = v.copy()

    def _checked_target(self, pose) -> np.ndarray:
        if self.controller is None:
            raise ValueError("add_pose_controller first: this actor has no pose controller")
        q = np.broadcast_to(real_array(pose, "pose"), self.q.shape)
        if not np.all(np.isfinite(q)):
            raise ValueError("pose must be finite")
        return q.copy()

    def _controller_terms(self):
        """(drives, tracking) of the pose controller for the next stage."""
        if self.controller is None:
            return [], []
        m = self.model
        drives, tracking = [], []
        trot, _, tcom = forward_kinematics(m, self.target_pose)
        trot0, _, tcom0 = forward_kinematics(m, self.target_pose_old)
        tcom, trot = tcom + self.link_offset_com, self.link_offset_rot @ trot
        tcom0, trot0 = tcom0 + self.link_offset_com_old, self.link_offset_rot_old @ trot0
        jrot, _ = joint_transforms(m, self.target_pose)
        jrot0, _ = joint_transforms(m, self.target_pose_old)
        for i, info in enumerate(m.dof_info):
            k, d, sat = self.controller["joint_tracking"][i]
            if (k or d) and info.get_size() == 1:
                o = info.offset
                drives.append(Drive(dof=o, target=self.target_pose[:, o], stiffness=k, damping=d,
                                    target_old=self.target_pose_old[:, o], saturation=sat))
            elif (k or d) and info.rot_size == 3:
                tracking.append(RotationTarget(i, "joint", jrot[:, i], jrot0[:, i], k, d, sat))
            k, d, sat = self.controller["link_pos_tracking"][i]
            if k or d:
                tracking.append(PositionTarget(i, tcom[:, i], tcom0[:, i], k, d, sat))
            k, d, sat = self.controller["link_rot_tracking"][i]
            if k or d:
                tracking.append(RotationTarget(i, "link", trot[:, i], trot0[:, i], k, d, sat))
        return drives, tracking

    def link_transforms(self):
        """World rotation (W, L, 3, 3) and origin (W, L, 3) of every link frame."""
        rot, origin, _ = forward_kinematics(self.model, self.q)
        return rot, origin

    def _combine_pose(self, poses, coeffs):
        """q* = q_n + sum coeffs_r (q_r - q_n) on scalar DoFs; rotation blocks combined in the Lie algebra."""
        out = combine_vectors(poses[0], coeffs, poses[1:])
        for jtype, info in zip(self.model.joint_type, self.model.dof_info):
            if jtype in (JT.SPHERICAL, JT.FREE):
                sl = slice(info.get_rot_offset(), info.get_rot_offset() + 3)
                rots = [lie.exp_so3(np.ascontiguousarray(p[:, sl])) for p in poses]
                out[:, sl] = lie.log_so3(combine_rotations(rots[0], coeffs, rots[1:]))
        return out

    def _combine(self, base: _Snapshot, coeffs, others) -> _Snapshot:
        """base + sum_j coeffs[j] (others[j] - base) for every field (pose rotation blocks in the Lie algebra)."""
        def vec(name):
            return combine_vectors(getattr(base, name), coeffs, [getattr(o, name) for o in others])

        return _Snapshot(self._combine_pose([base.q] + [o.q for o in others], coeffs), vec("joint_velocity"),
                         vec("link_velocity"), vec("link_f"), vec("joint_lin"), vec("joint_f"))

    def step(self, dt: float, method: IntegrationMethod = IntegrationMethod.BACKWARD_EULER, abs_tol: float = 1e-9,
             step_tol: float = 1e-14, max_iter: int = 100, solver=None) -> None:
        """One step of ``method`` (the framework of sim/step/integration.py): every stage minimizes its stage energy over
        q by Newton with a backtracking line search.

        A world stops once its largest gradient entry is <= ``abs_tol`` or its Newton step moved no DoF by more than
        ``step_tol`` (the gradient's round-off floor grows with m/dt^2, so a fixed gradient bound alone can stall).
        With ``solver`` (NonLinearSolverParams) it stops as a scene holding this articulation alone does instead
        (sim/articulated/stopping.py), and abs_tol / max_iter are not used."""
        dt = bounded_real(dt, "dt", 0.0, np.inf, low_open=True)
        if not isinstance(method, IntegrationMethod):
            raise TypeError(f"method must be an IntegrationMethod, got {method!r}")
        if solver is None:
            stop = Stopping(abs_tol=abs_tol, step_tol=step_tol, max_iter=max_iter)
        else:
            a_ref = max(1.0, float(np.linalg.norm(self.gravity[0])))
            weights = articulation_weights(self.model, self.q, a_ref)
            stop = replace(from_solver(solver, weights, np.zeros(1, dtype=np.int64)), step_tol=step_tol)
        tab, star = self.begin_step(dt, method)
        stages, iterations = [], np.zeros(self.num_worlds, dtype=np.int64)
        for i in range(tab.num_stages):
            start = self.stage_start(i, tab, star, stages)
            dt_stage = float(tab.stage_dt_factors[i]) * dt
            stage = self.stage_data(start, dt_stage)
            q, its = self._newton(stage, start.q, stop)
            stages.append(self.stage_end(start, q, dt_stage))
            iterations += its
        self.finish_step(tab, star, stages, iterations)

    # --- the phases of a step (sim/articulated/coupled.py runs them around its own Newton) -------------------------
    def begin_step(self, dt: float, method: IntegrationMethod):
        """Restart the history if velocities were set from outside, fix the controller's terms for the step and
        return (tableau, y*)."""
        if self._spin_dirty or not self._history:
            if self._spin_dirty:  # S for velocities set from outside, with the step's dt as the engine does
                self.link_f = lie.skew(self.link_omega) + velocity_sym_for_spin(self.link_omega, dt)
                self.joint_f = lie.skew(self.joint_omega) + velocity_sym_for_spin(self.joint_omega, dt)
                self._spin_dirty = False
            self._history = [self._snapshot()]
        tab = effective_tableau(method, len(self._history))
        hist = self._history[:tab.num_history]
        if self.controller is not None and self._target_velocity is not None:
            self.target_pose_old = add_delta(self.model, self.target_pose, -dt * self._target_velocity)
            self.link_offset_com_old, self.link_offset_rot_old = self.link_offset_com.copy(), self.link_offset_rot.copy()
            self._target_velocity = None
        self._stage_controller = self._controller_terms()
        return tab, self._combine(hist[0], tab.alpha[1:], hist[1:])

    def stage_start(self, i: int, tab, star: _Snapshot, stages: list) -> _Snapshot:
        return star if i == 0 else self._combine(star, tab.a_tilde(i), stages)

    def finish_step(self, tab, star: _Snapshot, stages: list, iterations: np.ndarray) -> None:
        """Combine the stages into the step's end state and shift the history."""
        self.last_iterations = iterations
        # b~ = (1,) (BE, BDF): the step ends at the stage itself, not at y* + 1 (Y - y*), which rounds differently
        single = tab.num_stages == 1 and float(tab.b_tilde[0]) == 1.0
        result = stages[0] if single else self._combine(star, tab.b_tilde, stages)
        self.q, self.joint_velocity = result.q, result.joint_velocity
        self.link_velocity, self.link_f = result.link_velocity, result.link_f
        self.joint_lin, self.joint_f = result.joint_lin, result.joint_f
        self.link_omega, self.joint_omega = lie.axial(self.link_f), lie.axial(self.joint_f)
        self._history = [self._snapshot()] + self._history[:2]
        if self.want_constraint_force:  # before the old targets move: the damping compares with this step's
            self._constraint_forces(stages[-1].q)
        self.constraint_target_old = self.constraint_target.copy()  # this step's targets are the next's old ones
        if self.want_controller_force:
            self.controller_force = self._controller_force(stages[-1].q)
        if self.controller is not None:  # the target reached this step is the next step's old target
            self.target_pose_old = self.target_pose.copy()
            self.link_offset_com_old, self.link_offset_rot_old = self.link_offset_com.copy(), self.link_offset_rot.copy()

    def stage_data(self, start: _Snapshot, dt_stage: float) -> StageData:
        """What stage of length dt_stage from ``start`` holds fixed."""
        m = self.model
        q0 = start.q
        rot0, _, com0 = forward_kinematics(m, q0)
        jrot0, jtrans0 = joint_transforms(m, q0)
        drives, ranges, tracking = self._constraint_terms()
        self._last_stage = StageData(dt=dt_stage, q0=q0, link_pred_com=com0 + dt_stage * start.link_velocity,
                                     link_pred_rot=rot0 + dt_stage * (start.link_f @ rot0),
                                     joint_velocity0=start.joint_velocity, gravity=self.gravity,
                                     drives=drives + self._stage_controller[0],
                                     tracking=tracking + self._stage_controller[1],
                                     ranges=ranges, dof_loads=self.dof_loads,
                                     joint_pred_trans=jtrans0 + dt_stage * start.joint_lin,
                                     joint_pred_rot=jrot0 + dt_stage * (start.joint_f @ jrot0))
        return self._last_stage

    def _controller_force(self, q: np.ndarray) -> np.ndarray:
        """(W, D) generalized force of the pose controller's constraints at pose q (the end of the step's last
        stage, with that stage's data): minus their gradient; zeros without a controller."""
        if self.controller is None:
            return np.zeros_like(q)
        stage = replace(self._last_stage, drives=self._stage_controller[0], tracking=self._stage_controller[1],
                        ranges=[])
        return -(drive_terms(self.model, q, stage)[1] + tracking_terms(self.model, q, stage)[1])

    def _constraint_forces(self, q: np.ndarray) -> None:
        """Each constraint's generalized force on its DoFs at pose q (the end of the step's last stage, with that
        stage's data): minus the gradient of its own energy, into its constraint_force columns."""
        for c in self.constraints:
            group, term = self._constraint_term(c)
            stage = replace(self._last_stage, **{g: [term] if g == group else [] for g in ("drives", "ranges",
                                                                                          "tracking")})
            g = (drive_terms(self.model, q, stage)[1] + tracking_terms(self.model, q, stage)[1]
                 + range_terms(self.model, q, stage)[1])
            self.constraint_force[:, c.force_slot:c.force_slot + c.num_dofs] = -g[:, c.dof:c.dof + c.num_dofs]

    def _newton(self, stage: StageData, q0: np.ndarray, stop: Stopping):
        """Minimize the stage energy over q from q0; returns q and the Newton iterations per world."""
        m = self.model
        held, _ = self.boundary.effective()
        if held.size:
            q0 = self.boundary.hold(q0)

        def evaluate(q, rows, base):  # every world: the oracle stays the plain batched formulation
            energy, grad, hess = self.terms(m, q, stage)
            eliminate(grad, hess, held)
            return energy, grad, hess, q

        def accept(e_trial, energy, g_trial, grad_norm, alpha, slope):
            # Near the solution the energy change drops below its round-off, so a step that lowers the
            # gradient there is accepted too (otherwise the search shrinks alpha and stalls the Newton).
            flat = np.abs(e_trial - energy) <= _ENERGY_ROUND_OFF * (1.0 + np.abs(energy))
            return (e_trial <= energy + _ARMIJO * alpha * slope) | (flat & (np.linalg.norm(g_trial, axis=1) < grad_norm))

        q, iterations, _ = minimize(evaluate, lambda q, step: add_delta(m, q, step),
                                    lambda mask, trial, q: np.where(mask[:, None], trial, q), q0.copy(),
                                    self.num_worlds, accept, stop)
        return q, iterations

    def stage_end(self, start: _Snapshot, q: np.ndarray, dt_stage: float) -> _Snapshot:
        """The stage's end state at pose q: velocities are the stage's finite differences."""
        m = self.model
        q0 = start.q
        rot0, _, com0 = forward_kinematics(m, q0)
        jrot0, jtrans0 = joint_transforms(m, q0)
        rot1, _, com1 = forward_kinematics(m, q)
        jrot1, jtrans1 = joint_transforms(m, q)
        joint_f = (jrot1 - jrot0) / dt_stage @ np.swapaxes(jrot1, -1, -2)
        # Reported joint velocities (as the engine reports them): scalar DoFs dq/dt; rotation blocks the joint's
        # angular velocity axial((R_j - R_j0)/dt R_j^T) in its parent frame (not log(R_j R_j0^T)/dt).
        joint_velocity = pose_delta(m, q0, q) / dt_stage
        joint_omega = lie.axial(joint_f)
        for j, info in enumerate(m.dof_info):
            if m.joint_type[j] in (JT.SPHERICAL, JT.FREE):
                o = info.get_rot_offset()
                joint_velocity[:, o:o + 3] = joint_omega[:, j]
        end = _Snapshot(q=q, joint_velocity=joint_velocity, link_velocity=(com1 - com0) / dt_stage,
                        link_f=(rot1 - rot0) / dt_stage @ np.swapaxes(rot1, -1, -2),
                        joint_lin=(jtrans1 - jtrans0) / dt_stage, joint_f=joint_f)
        return end

    def _snapshot(self) -> _Snapshot:
        return _Snapshot(self.q.copy(), self.joint_velocity.copy(), self.link_velocity.copy(), self.link_f.copy(),
                         self.joint_lin.copy(), self.joint_f.copy())


def minimize(evaluate, move, select, x, num_worlds: int, accept, stop: Stopping):
    """Newton with a backtracking line search, per world: ``evaluate(x, rows, base)`` -> (energy (W,), gradient
    (W, n), Newton matrix (W, n, n), x as evaluated), where only the worlds ``rows`` need evaluating and ``base``
    holds those four for the others (rows None: every world; an evaluate may always do all: the other rows of its
    result are not read), ``move(x, step)`` the iterate moved by step (W, n),
    ``select(mask, trial, x)`` trial where mask else x, ``accept(...)`` the line search's rule, ``stop`` the
    `Stopping` rule (at most stop.max_iter iterations; a world stops once converged or once its step moved nothing
    by more than stop.step_tol). Returns (x, iterations per world, converged per world); the accepted trial's terms
    are the next iteration's (a world's own values only)."""
    active = np.ones(num_worlds, dtype=bool)
    iterations = np.zeros(num_worlds, dtype=np.int64)
    energy, grad, hess, x = evaluate(x, None, None)
    rho0 = stop.residuals(grad)
    converged = np.zeros(num_worlds, dtype=bool)
    for it in range(stop.max_iter):
        converged |= active & stop.converged(grad, rho0, it)
        active &= ~converged
        if not np.any(active):
            break
        direction = -batched_solve(hess, grad[..., None])  # exactly singular (PSD-projected) systems: lstsq
        slope = np.einsum("wd,wd->w", grad, direction)
        alpha = np.where(active, 1.0, 0.0)
        grad_norm = np.linalg.norm(grad, axis=1)
        # the first try evaluates the active worlds (the others' step is 0), each later one the worlds it backtracks
        rows, base = np.flatnonzero(active), (energy, grad, hess, x)
        for _ls in range(stop.line_search_max_iter):
            e_trial, g_trial, h_trial, trial = evaluate(move(x, alpha[:, None] * direction), rows, base)
            bad = active & ~accept(e_trial, energy, g_trial, grad_norm, alpha, slope) & (alpha > 1e-12)
            if not np.any(bad) or _ls == stop.line_search_max_iter - 1:
                break  # the last try is taken even without improvement
            alpha = np.where(bad, stop.line_search_alpha * alpha, alpha)
            rows, base = np.flatnonzero(bad), (e_trial, g_trial, h_trial, trial)
        iterations += active
        moved = np.max(np.abs(alpha[:, None] * direction), axis=1)
        x = select(active, trial, x)
        energy = np.where(active, e_trial, energy)
        grad = np.where(active[:, None], g_trial, grad)
        hess = np.where(active[:, None, None], h_trial, hess)
        still = moved > stop.step_tol
        converged |= active & ~still  # moved nothing: the round-off floor
        active &= still
    else:
        converged |= active & stop.converged(grad, rho0, stop.max_iter)
    return x, iterations, converged
