"""One engine step, as a list of named stages (DESIGN section 2; digest 3.3 "per step for a rigid actor").

`step` groups the worlds by how many completed states their multistep history holds (at most 3 groups, so a
world's result never depends on the rest of the batch) and runs, per group (`_GroupStep.run`), in this order:

    load_history (S filled for spins set from outside) -> step_start (y*) -> static_motion
    -> for each stage i: stage_start (a~_i) -> stage_context -> initial_guess -> newton_solve -> recover_velocity
    -> step_end (b~) -> divergence_reset (worlds where any stage diverged go back to y_n)

then shifts every world's history (the new state becomes y_n). Every stage is vectorized over worlds and actors.

On the compiled Newton a group runs the same stages as kernels instead (`fused.run_group`, the default; the
choice is `fused.scope`'s, from the settings only): `_GroupStep.run` is then the oracle it is tested against.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from .. import lie
from .integration import (
    Tableau, combine_rotations, combine_vectors, step_start_rotations, step_start_vectors,
)
from ..constraints.system import ConstraintSystem
from ..contact.system import ContactSystem
from ..model import Kinematics, Model, State, convergence_weights
from . import fused
from .compiled_model import CompiledModel
from ..solver import compiled_newton
from ..jit import kernel_array
from ..kernels import step as step_kernels
from ..solver.numpy_newton import newton_solve
from ..params import ConvergenceStatus, InitialGuess, SolverParams
from ..potentials.base import StageContext, constant_velocity_pose, guess_outside
from ..potentials.external import DofLoads, Gravity, OffsetForces
from ..potentials.inertia import NewtonEulerInertia, RotationalInertia, TranslationalInertia

CORE_POTENTIALS = (TranslationalInertia(), RotationalInertia(), NewtonEulerInertia(), Gravity(), DofLoads(), OffsetForces())
# A switch for tests and debugging (SUPERDEX_COMPILED_NEWTON=0 in the environment, or False here): off, every stage
# runs on the numpy Newton, the compiled path's oracle. On (the default), scenes the compiled per-world Newton
# covers run on it (sim/solver/compiled_newton.py, docs/engine.md "Solver paths"); the numpy Newton runs every other scene.
COMPILED_NEWTON = os.environ.get("SUPERDEX_COMPILED_NEWTON", "1") != "0"

def solver_path(potentials, params) -> tuple:
    """("compiled", plan) or ("numpy", reason) for a step with these potentials (sim/solver/compiled_newton.py)."""
    if not COMPILED_NEWTON:
        return "numpy", "the compiled Newton is off (SUPERDEX_COMPILED_NEWTON=0 or pipeline.COMPILED_NEWTON = False)"
    kplan, reason = compiled_newton.plan(CORE_POTENTIALS + tuple(potentials), params)
    return ("numpy", reason) if kplan is None else ("compiled", kplan)

def compile_model(model: Model, solver: SolverParams, gravity, extra_potentials, num_worlds: int) -> CompiledModel:
    """The scene's `CompiledModel` for these settings, potentials and world count: its solver path (`solver_path`,
    `fused.scope`) and the compiled Newton's frozen inputs."""
    path, kplan = solver_path(extra_potentials, solver.non_linear_solver)
    reason = fused.scope(solver) if path == "compiled" else None
    decided = (path, kplan if path == "compiled" else None, path == "compiled" and reason is None,
               step_path_name(path, kplan, solver, reason))
    return CompiledModel(model, solver, gravity, CORE_POTENTIALS + tuple(extra_potentials), num_worlds, decided,
                         switches())


def switches() -> tuple:
    """The module switches a compiled model's solver path was decided under (a model built under others is
    rebuilt: tests flip them between steps)."""
    return COMPILED_NEWTON, fused.FUSED_STEP


def system_types() -> tuple:
    """(ContactSystem, ConstraintSystem): the scene's two potentials whose hooks the step knows."""
    return (ContactSystem, ConstraintSystem)


def step_path_name(path: str, detail, solver, reason=None) -> str:
    """What `Scene.solver_path` reports: "compiled (fused step)" (sim/step/fused.py), "compiled (per-stage step:
    <why>)" or "numpy: <why>" (docs/engine.md, "Solver paths"); ``reason``: `fused.scope`'s, when known."""
    if path != "compiled":
        return f"numpy: {detail}"
    if reason is None:
        reason = fused.scope(solver)
    if reason is None:
        return _FUSED_NAME
    return f"compiled (per-stage step: {reason})"


_FUSED_NAME = "compiled (fused step)"


@dataclass
class StepReport:
    status: np.ndarray  # (W,) worst ConvergenceStatus value over the stages
    max_iterations: int
    max_line_search_iterations: int
    residual_norm: float
    actor_status: np.ndarray  # (W, N) per-actor ConvergenceStatus value
    assembly_time: float = 0.0
    solve_time: float = 0.0
    line_search_time: float = 0.0
    num_stages: int = 0
    # Per world group: (worlds, last stage's StageContext, its end com_position, rotation), for force queries.
    last_stages: list = None
    solver_path: str = ""  # `step_path_name`: "compiled (fused step)", "compiled (per-stage step: ...)", "numpy: ..."


def velocity_sym_for_spin(omega: np.ndarray, h: float) -> np.ndarray:
    """S such that R + h (skew(omega) + S) R is exactly a rotation (digest 2.4, UpdateVSymIfDirty).

    S = x (1 - u u^T), u = omega/|omega|, x = (sqrt(1 - h^2 |omega|^2) - 1)/h, the discriminant clamped at 0.
    """
    speed = np.linalg.norm(omega, axis=-1)
    safe = np.where(speed > 0, speed, 1.0)
    u = omega / safe[..., None]
    x = (np.sqrt(np.maximum(1.0 - (h * speed) ** 2, 0.0)) - 1.0) / h
    proj = np.eye(3) - u[..., :, None] * u[..., None, :]
    return np.where((speed > 0)[..., None, None], x[..., None, None] * proj, 0.0)


def interpolate_static(prev_c, prev_r, target_c, target_r, tau: float):
    """Prescribed static pose at fraction tau of the step (linear in c, geodesic in R)."""
    if tau == 1.0:
        return target_c, target_r
    if tau == 0.0:
        return prev_c, prev_r
    c = prev_c + tau * (target_c - prev_c)
    rel = lie.log_so3(target_r @ np.swapaxes(prev_r, -1, -2))
    return c, lie.exp_so3(tau * rel) @ prev_r


def recover_velocity(c, r, c0, r0, stage_dt):
    """v = (c - c0)/dt_i, F = (R - R0)/dt_i R^T, omega = axial(F), S = sym(F) (digest 2.4)."""
    fd = ((r - r0) / stage_dt) @ np.swapaxes(r, -1, -2)
    return (c - c0) / stage_dt, lie.axial(fd), lie.sym(fd)


def step(cm: CompiledModel, state: State, dt: float) -> StepReport:
    """Advance every world of ``state`` by dt in place, on the scene's compiled model ``cm``."""
    model, solver, gravity, potentials = cm.model, cm.solver, cm.gravity, cm.potentials
    num_worlds, num_bodies = state.num_worlds, model.bodies.num
    status = np.zeros(num_worlds, dtype=np.int64)
    actor_status = np.zeros((num_worlds, num_bodies), dtype=np.int64)
    report = StepReport(status, 0, 0, 0.0, actor_status, last_stages=[], solver_path=cm.path_name)
    needed = cm.longest_history
    newton, fuse = cm.newton, cm.fuse
    full = False  # every world has the longest history already: the step leaves num_history as it is
    if num_worlds == 1:  # one world, one group (the single-env case, without the reductions below)
        have = int(state.num_history[0])
        full = have >= 3
        groups = [min(have, needed)]
        avail = None
    else:
        avail = np.minimum(state.num_history, needed)
        groups = [int(avail[0])] if avail.size and np.all(avail == avail[0]) else np.unique(avail).tolist()
    if len(groups) == 1:  # every world in one group: its end state becomes y_n as it is (fresh arrays, no copy)
        tab = cm.tableaus[groups[0]]
        group = _GroupStep(model, state, _all_worlds(num_worlds), tab, dt, solver, gravity, potentials, newton,
                           all_worlds=True, history_count=groups[0])
        new_history0 = fused.run_group(group, cm, None, report) if fuse else group.run(None, report)
    else:
        new_history0 = state.current.copy()
        for count in groups:
            worlds = np.nonzero(avail == count)[0]
            tab = cm.tableaus[int(count)]
            group = _GroupStep(model, state, worlds, tab, dt, solver, gravity, potentials, newton,
                               history_count=int(count))
            if fuse:
                fused.run_group(group, cm, new_history0, report)
            else:
                group.run(new_history0, report)
    shift_history(state, new_history0, dt, report.status, full)
    return report


def shift_history(state: State, new_history0: Kinematics, dt: float, status: np.ndarray, full: bool = False) -> None:
    """The new completed step becomes y_n (and the static actors' previous pose); ``full``: every world already
    holds the longest history, so the counts stay as they are."""
    state.history = [new_history0] + state.history[:2]
    if not full:  # a new array (snapshots share the old one), unless no count changes
        state.num_history = np.minimum(state.num_history + 1, 3)
    state.static_previous_com = new_history0.com_position.copy()
    state.static_previous_rotation = new_history0.rotation.copy()
    state.time = state.time + dt
    state.last_dt = dt
    state.status = status


def _all_worlds(num_worlds: int) -> np.ndarray:
    """arange(num_worlds), one per count (read only by convention: the steps index and pass it, never write it)."""
    rows = _ALL_WORLDS.get(num_worlds)
    if rows is None:
        if len(_ALL_WORLDS) >= 8:
            _ALL_WORLDS.clear()
        rows = _ALL_WORLDS[num_worlds] = np.arange(num_worlds)
    return rows


_ALL_WORLDS: dict = {}


class _GroupStep:
    """One step of the batch worlds ``worlds``, which share a history length and so a tableau, as named stages
    (the module docstring lists them in the order ``run`` calls them)."""

    def __init__(self, model, state, worlds, tab: Tableau, dt, solver, gravity, potentials, newton=None,
                 all_worlds=False, history_count=1):
        self.model, self.state, self.worlds, self.tab, self.dt = model, state, worlds, tab, dt
        # worlds == arange(W): the state's arrays are read as they are, without gathering copies of every world
        self.all_worlds = all_worlds
        self.newton = newton  # compiled_newton.NewtonModel: the compiled Newton; None: the numpy one
        self.history_count = history_count  # the completed states the group's tableau uses
        self.solver, self.gravity, self.potentials = solver, gravity, potentials
        self.static = model.bodies.is_static
        self.sel = self.static[None, :, None]  # broadcasts over (W, N, 3)

    def run(self, out: Kinematics | None, report: StepReport) -> Kinematics:
        """Step the group's worlds; their new state goes into ``out``'s rows, or, with ``out`` None, is returned
        as fresh arrays (the caller keeps them as y_n)."""
        worlds, static = self.worlds, self.static
        hist = self.load_history()
        star = self.step_start(hist)
        self.static_motion(hist)
        # Residual weights from the poses at step start (the reference recomputes them once per step).
        self.force_weight, self.torque_weight = convergence_weights(self.model.bodies, hist[0].rotation, self.gravity)
        stages: list[Kinematics] = []
        diverged = np.zeros(len(worlds), dtype=bool)
        group_status = np.zeros(len(worlds), dtype=np.int64)
        group_actor_status = np.zeros((len(worlds), self.model.bodies.num), dtype=np.int64)
        abs_tol = self.solver.non_linear_solver.abs_tol
        for i in range(self.tab.num_stages):
            start = self.stage_start(i, star, stages)
            ctx = self.stage_context(i, start)
            guess_c, guess_r = self.initial_guess(i, ctx, hist[0] if i == 0 else stages[-1])
            if self.newton is not None:
                res = compiled_newton.solve(self.newton, ctx, guess_c, guess_r, self.solver.non_linear_solver)
            else:
                res = newton_solve(self.potentials, ctx, guess_c, guess_r, self.solver.non_linear_solver)
            _record_solve(report, res)
            group_status = _worst(group_status, res.status)
            diverged |= res.status == ConvergenceStatus.DIVERGED.value
            actor_conv = np.where(res.actor_residual <= abs_tol, ConvergenceStatus.CONVERGED.value, res.status[:, None])
            group_actor_status = _worst(group_actor_status, actor_conv)
            v, w, s = recover_velocity(res.com_position, res.rotation, start.com_position, start.rotation, ctx.stage_dt)
            stages.append(Kinematics(res.com_position, res.rotation, v, w, s))
        report.last_stages.append((worlds, ctx, res.com_position, res.rotation))
        end = self.step_end(star, stages)
        self.divergence_reset(end, hist[0], diverged)
        if out is not None:
            out.put(worlds, end)
        report.status[worlds] = group_status
        report.actor_status[worlds] = np.where(static[None, :], ConvergenceStatus.CONVERGED.value, group_actor_status)
        return end

    def load_history(self) -> list[Kinematics]:
        """The group's completed states y_n, y_{n-1}, ... the tableau combines, with S filled for spins set from
        outside since the last step."""
        state, worlds = self.state, self.worlds
        if self.all_worlds:  # the state's arrays themselves (read only below), in Kinematics of their own
            hist = [Kinematics(h.com_position, h.rotation, h.linear_velocity, h.angular_velocity, h.velocity_sym)
                    for h in state.history[: self.tab.num_history]]
        else:
            hist = [h.take(worlds) for h in state.history[: self.tab.num_history]]
        # Fill S for spins set from outside (digest 2.4) with h = the step's dt, not the stage's: with the stage dt,
        # implicit midpoint gives omega_z = 3.0 after one step at dt 0.1; the reference gives 3.0703 (reference_data).
        dirty = state.sym_dirty[worlds]
        if np.any(dirty):
            hist[0].velocity_sym = np.where(
                dirty[..., None, None], velocity_sym_for_spin(hist[0].angular_velocity, self.dt), hist[0].velocity_sym
            )
            # Store it: y_n keeps this S as part of the history the next multistep steps combine.
            state.history[0].velocity_sym[worlds] = hist[0].velocity_sym
            state.sym_dirty[worlds] = False
        return hist

    def step_start(self, hist) -> Kinematics:
        """y* = sum_j alpha_j y_{n-j} (digest 3.3), rotations on the Lie algebra."""
        alpha = self.tab.alpha
        if len(alpha) == 1:  # y* = y_n; nothing writes into y* (later stages build new arrays from it)
            h = hist[0]
            return Kinematics(h.com_position, h.rotation, h.linear_velocity, h.angular_velocity, h.velocity_sym)
        return Kinematics(
            com_position=step_start_vectors([h.com_position for h in hist], alpha),
            rotation=step_start_rotations([h.rotation for h in hist], alpha),
            linear_velocity=step_start_vectors([h.linear_velocity for h in hist], alpha),
            angular_velocity=step_start_vectors([h.angular_velocity for h in hist], alpha),
            velocity_sym=step_start_vectors([h.velocity_sym for h in hist], alpha),
        )

    def static_motion(self, hist) -> None:
        """The static actors' previous and prescribed poses and the velocity they imply over the step."""
        state, worlds, static, dt = self.state, self.worlds, self.static, self.dt
        if self.all_worlds:
            self.prev_c, self.prev_r = state.static_previous_com, state.static_previous_rotation
        else:
            self.prev_c, self.prev_r = state.static_previous_com[worlds], state.static_previous_rotation[worlds]
        self.target_c, self.target_r = target_c, target_r = hist[0].com_position, hist[0].rotation
        prev_c, prev_r = self.prev_c, self.prev_r
        # Static velocity from consecutive poses, taken at the pivot p (bounding-box centre, local frame) as the
        # reference does: v = (T(p) - T_prev(p)) / dt, omega = log(R R_prev^T) / dt.
        self.static_v = static_v = np.zeros_like(target_c)
        self.static_w = static_w = np.zeros_like(target_c)
        rows = self.model.bodies.static_rows
        moved = rows.size > 0 and not (bool((target_c[:, rows] == prev_c[:, rows]).all())
                                       and bool((target_r[:, rows] == prev_r[:, rows]).all()))
        if moved:  # statics that did not move have exactly zero velocity (no log of R R^T ~ 1 needed)
            pivot = self.model.bodies.static_pivot[static]
            static_v[:, static] = (
                target_c[:, static] + np.einsum("wnij,nj->wni", target_r[:, static], pivot)
                - prev_c[:, static] - np.einsum("wnij,nj->wni", prev_r[:, static], pivot)
            ) / dt
            static_w[:, static] = lie.log_so3(target_r[:, static] @ np.swapaxes(prev_r[:, static], -1, -2)) / dt

    def static_pose(self, tau: float):
        """The static actors' prescribed pose at fraction ``tau`` of the step."""
        return interpolate_static(self.prev_c, self.prev_r, self.target_c, self.target_r, tau)

    def stage_start(self, i: int, star: Kinematics, stages: list) -> Kinematics:
        """Stage i's start a~_i: y* plus the earlier stages (digest 3.3); static actors at their prescribed pose."""
        coeffs = self.tab.a_tilde(i)
        if i == 0:  # no earlier stage: a~_0 is empty and the start is y* (the selections below build new arrays)
            start = Kinematics(star.com_position, star.rotation, star.linear_velocity, star.angular_velocity,
                               star.velocity_sym)
        else:
            start = _combine(star, coeffs, stages)
        tau_start = self.tab.stage_time_factors[i] - self.tab.stage_dt_factors[i]
        s_c0, s_r0 = self.static_pose(tau_start)
        return self.with_static(start, s_c0, s_r0)

    def with_static(self, kin: Kinematics, c_static, r_static) -> Kinematics:
        """``kin`` with the static actors at the pose ``c_static``, ``r_static`` (W, N, ...), moving with the
        step's implied velocity and S = 0: new arrays (one kernel; the same selections as five np.where)."""
        out = Kinematics(np.empty(kin.com_position.shape), np.empty(kin.rotation.shape),
                         np.empty(kin.linear_velocity.shape), np.empty(kin.angular_velocity.shape),
                         np.empty(kin.velocity_sym.shape))
        step_kernels.select_static(
            self.model.bodies.kernel_arrays.is_static, kernel_array(kin.com_position), kernel_array(kin.rotation),
            kernel_array(kin.linear_velocity), kernel_array(kin.angular_velocity), kernel_array(kin.velocity_sym),
            kernel_array(c_static), kernel_array(r_static), kernel_array(self.static_v), kernel_array(self.static_w),
            out.com_position, out.rotation, out.linear_velocity, out.angular_velocity, out.velocity_sym)
        return out

    def stage_context(self, i: int, start: Kinematics) -> StageContext:
        """Everything fixed during stage i's solve."""
        state, worlds, gravity = self.state, self.worlds, self.gravity
        return StageContext(
            model=self.model,
            stage_dt=self.dt * self.tab.stage_dt_factors[i],
            stage_time=state.time + self.tab.stage_time_factors[i] * self.dt,
            com_position0=start.com_position,
            rotation0=start.rotation,
            linear_velocity0=start.linear_velocity,
            angular_velocity0=start.angular_velocity,
            velocity_sym0=start.velocity_sym,
            gravity=np.broadcast_to(gravity, (len(worlds), 3)) if gravity.ndim == 1 else gravity[worlds],
            external_force=state.external_force[worlds],
            offset_force=state.offset_force[worlds] if state.offset_force.shape[2] else None,
            offset_local=state.offset_local if state.offset_local.shape[1] else None,
            world_index=worlds,
            force_weight=self.force_weight,
            torque_weight=self.torque_weight,
        )

    def initial_guess(self, i: int, ctx: StageContext, latest: Kinematics):
        """Newton's start for stage i from ``latest``, the latest solution (y_n, then the previous stage), not the
        stage start y*: with it the default 4-iteration solves match the reference's BDF2 iterates to 1e-15
        (reference_data spin runs). CONSTANT_VELOCITY (not the reference's) advances that pose by its velocity
        over the stage; CONSTANT_VELOCITY_AND_TARGETS also lets potentials refine it (`Potential.refine_guess`)."""
        guess_c, guess_r = latest.com_position, latest.rotation
        guess_mode = self.solver.non_linear_solver.initial_guess
        stage_dt = ctx.stage_dt
        if guess_mode is not InitialGuess.LATEST_SOLUTION:
            guess_c, guess_r = constant_velocity_pose(guess_c, guess_r, latest.linear_velocity,
                                                      latest.angular_velocity, stage_dt)
        if guess_mode in (InitialGuess.CONSTANT_VELOCITY_AND_TARGETS, InitialGuess.CONSTANT_VELOCITY_AND_TARGETS_OUTSIDE):
            predicted_c = guess_c
            for pot in self.potentials:
                guess_c = pot.refine_guess(ctx, guess_c, guess_r)
        if guess_mode is InitialGuess.CONSTANT_VELOCITY_AND_TARGETS_OUTSIDE:
            guess_r = guess_outside(self.potentials, latest, predicted_c, guess_c, guess_r)
        s_c1, s_r1 = self.static_pose(self.tab.stage_time_factors[i])
        guess_c = np.where(self.sel, s_c1, guess_c)
        guess_r = np.where(self.sel[..., None], s_r1, guess_r)
        return guess_c, guess_r

    def step_end(self, star: Kinematics, stages: list) -> Kinematics:
        """y_{n+1} = y* plus the stages with b~ (digest 3.3); static actors end exactly at their prescribed pose,
        moving with the implied velocity."""
        return self.with_static(_combine(star, self.tab.b_tilde, stages), self.target_c, self.target_r)

    def divergence_reset(self, end: Kinematics, previous: Kinematics, diverged: np.ndarray) -> None:
        """Digest 2.6: a world where any stage diverged gets its dynamic actors back at the previous pose
        (``previous`` = y_n), with zero velocity."""
        if not np.any(diverged):
            return
        dyn = diverged[:, None] & ~self.static[None, :]
        for name in ("com_position", "rotation", "linear_velocity", "angular_velocity", "velocity_sym"):
            cur = getattr(end, name)
            prev = getattr(previous, name)
            extra = (None,) * (cur.ndim - 2)
            mask = dyn[(...,) + extra]
            fill = prev if name in ("com_position", "rotation") else np.zeros_like(cur)
            setattr(end, name, np.where(mask, fill, cur))


def _combine(star: Kinematics, coeffs, stages: list) -> Kinematics:
    """y* + sum_j coeffs[j] (Y_j - y*) for every field of the stages' Kinematics (rotations on the Lie algebra)."""
    return Kinematics(
        com_position=combine_vectors(star.com_position, coeffs, [s.com_position for s in stages]),
        rotation=combine_rotations(star.rotation, coeffs, [s.rotation for s in stages]),
        linear_velocity=combine_vectors(star.linear_velocity, coeffs, [s.linear_velocity for s in stages]),
        angular_velocity=combine_vectors(star.angular_velocity, coeffs, [s.angular_velocity for s in stages]),
        velocity_sym=combine_vectors(star.velocity_sym, coeffs, [s.velocity_sym for s in stages]),
    )


def _record_solve(report: StepReport, res) -> None:
    """Fold one stage solve's counts and timings into the step report."""
    report.assembly_time += res.assembly_time
    report.solve_time += res.solve_time
    report.line_search_time += res.line_search_time
    report.num_stages += 1
    report.max_iterations = max(report.max_iterations, int(res.iterations.max(initial=0)))
    report.max_line_search_iterations = max(report.max_line_search_iterations, int(res.line_search_iterations.max(initial=0)))
    report.residual_norm = max(report.residual_norm, float(res.residual_norm.max(initial=0.0)))


def _worst(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Combine statuses: ConvergenceStatus values are ordered NOT_STARTED < CONVERGED < STOPPED < DIVERGED."""
    return np.maximum(a, b)
