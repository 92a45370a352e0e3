"""The fused step: a world group's whole engine step as a few kernel calls (docs/engine.md, "Solver paths").

`pipeline.step` runs a group of worlds here instead of through `_GroupStep`'s named stages when the compiled
Newton solves its stages and the step's settings are ones the kernels implement (`scope`). Per stage it makes
three calls: `kernels.fused.stage_begin` (at stage 0 also the step start and the statics' motion; then the
stage start and Newton's start), the compiled Newton (`compiled_newton.run_stage`) and `kernels.fused.stage_end`
(velocity recovery, statuses; after the last stage the step end and the divergence reset). Python's share is
reading a few attributes and allocating the outputs.

The order and the formulas are `_GroupStep`'s (sim/step/pipeline.py), which stays the path of every other scene and
the test oracle (`SUPERDEX_FUSED_STEP=0`, or `FUSED_STEP = False` here). The two differ by round-off only: the
kernels sum 3x3 products left to right, numpy's matmul fuses multiply-adds (tests/test_fused_step.py).
"""

from __future__ import annotations

import os

import numpy as np

from ..solver import compiled_newton
from ..jit import compile_in_processes, kernel_array
from ..kernels import fused as fused_kernels
from ..kernels import guess as guess_kernels
from ..kernels import newton as newton_kernels
from ..model import Kinematics, _force_weight
from ..params import InitialGuess
from ..potentials import base as potentials_base
from ..potentials.base import StageContext

# A switch for tests and debugging, on by default: SUPERDEX_FUSED_STEP=0 in the environment, or False here, runs
# every compiled step through _GroupStep's per-stage Python (the fused kernels' oracle; every InitialGuess mode is
# fused, so nothing else reaches that path).
FUSED_STEP = os.environ.get("SUPERDEX_FUSED_STEP", "1") != "0"

_GUESS_CODE = {InitialGuess.LATEST_SOLUTION: fused_kernels.GUESS_LATEST,
               InitialGuess.CONSTANT_VELOCITY: fused_kernels.GUESS_VELOCITY,
               InitialGuess.CONSTANT_VELOCITY_AND_TARGETS: fused_kernels.GUESS_TARGETS}


_OUTSIDE = InitialGuess.CONSTANT_VELOCITY_AND_TARGETS_OUTSIDE


def scope(solver) -> str | None:
    """None when a step of the compiled Newton with these settings runs fused, else the reason it does not."""
    if not FUSED_STEP:
        return "the fused step is off (SUPERDEX_FUSED_STEP=0 or superdex_gym.sim.step.fused.FUSED_STEP = False)"
    guess = solver.non_linear_solver.initial_guess
    if guess not in _GUESS_CODE and guess is not _OUTSIDE:
        return f"initial_guess {guess.name}"
    return None


def _guess_outside(nm, is_static, latest, stage_dt, guess_c, guess_r) -> bool:
    """``CONSTANT_VELOCITY_AND_TARGETS_OUTSIDE`` on the fused step (`kernels.guess.outside_guess`; the per-stage
    step's `potentials.base.guess_outside` is its oracle): writes the latest rotation into ``guess_r`` for the
    bodies whose guess goes too deep into a contact. ``latest`` (c, R, v, omega): the latest solution the guess
    started from. True when a rotation was replaced."""
    pot = nm.contact
    if pot is None:  # no contact pair: no depth to test
        return False
    num_worlds, n = guess_c.shape[:2]
    return guess_kernels.outside_guess(
        potentials_base.GUESS_DEPTH_MARGIN, stage_dt, is_static, tuple(kernel_array(a) for a in latest),
        (guess_c, guess_r), pot.depth_kernel_inputs(),
        (np.empty((num_worlds, n, 3)), np.empty((num_worlds, n, 3, 3)), np.empty((num_worlds, n), dtype=bool),
         np.empty((num_worlds, n)), np.empty((num_worlds, n))))


def _tableau_arrays(tab):
    """(alpha (3,), a~ (S, S) lower-triangular, b~ (S,)) of a tableau as kernel arrays."""
    s = tab.num_stages
    alpha = np.zeros(3)
    alpha[: tab.num_history] = tab.alpha
    a_tilde = np.zeros((s, s))
    for i in range(1, s):
        a_tilde[i, :i] = tab.a_tilde(i)
    return alpha, a_tilde, kernel_array(np.asarray(tab.b_tilde, dtype=float))


_NO_GUESS = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros((0, 3)), np.zeros((1, 0, 3)))


def _pivot_guess(nm, stage_dt):
    """The pivot drives' Newton start (`RigidPivotPositionConstraints.guess_on_targets`): their target rows,
    actors, CoM-frame arms (the model's, per stage length) and the current targets (Wt, C, 3)."""
    if nm.point is None:
        return _NO_GUESS
    rows = nm.guess_rows(stage_dt)
    return _NO_GUESS if rows is None else rows + (kernel_array(nm.point[0].target_array("position")),)


class StepHeads:
    """What a group's fused step reads that its compiled model (sim/step/compiled_model.py), its tableau and its
    step length decide: stage_begin's and stage_end's stage and model groups per stage, the gravity rows, the
    convergence weights' inputs and the step's working arrays that leave no trace after it (y*, the static
    velocities, the stages, Newton's start: every entry is written before it is read in a step)."""

    def __init__(self, cm, tab, dt, worlds, num_worlds):
        n = cm.num_bodies
        params = cm.solver.non_linear_solver
        bodies = cm.model.bodies
        arrays = bodies.kernel_arrays
        self.is_static = arrays.is_static
        self.world_rows = kernel_array(worlds, np.int64)
        self.gravity_w = np.ascontiguousarray(np.broadcast_to(cm.gravity, (num_worlds, 3)), dtype=float)
        a_ref = max(1.0, float(np.linalg.norm(cm.gravity)))
        self.force_weight = kernel_array(_force_weight(bodies, a_ref))
        sqrt_inertia, sqrt_mass = kernel_array(bodies.sqrt_inertia), kernel_array(bodies.sqrt_mass)
        static_pivot = kernel_array(bodies.static_pivot)
        alpha, a_tilde, self.b_tilde = _tableau_arrays(tab)
        self.num_stages = num_stages = tab.num_stages
        self.outside = params.initial_guess is _OUTSIDE  # the kernels' targets guess, then the depth test's kernel
        guess_mode = fused_kernels.GUESS_TARGETS if self.outside else _GUESS_CODE[params.initial_guess]
        self.guess_targets = guess_mode == fused_kernels.GUESS_TARGETS
        vec, mat = self.vec, self.mat = (num_worlds, n, 3), (num_worlds, n, 3, 3)
        self.star = [np.empty(vec), np.empty(mat), np.empty(vec), np.empty(vec), np.empty(mat)]
        self.static_v, self.static_w = np.empty(vec), np.empty(vec)
        self.stages = [np.empty((num_stages,) + vec), np.empty((num_stages,) + mat), np.empty((num_stages,) + vec),
                       np.empty((num_stages,) + vec), np.empty((num_stages,) + mat)]
        self.guess_c, self.guess_r = np.empty(vec), np.empty(mat)
        abs_tol = float(params.abs_tol)
        times, heads, ends = [], [], []
        for i in range(num_stages):
            stage_dt = dt * float(tab.stage_dt_factors[i])
            tau_end = float(tab.stage_time_factors[i])
            tau_start = tau_end - float(tab.stage_dt_factors[i])
            times.append((stage_dt, tau_end))
            # stage_begin's and stage_end's stage and model groups (kernels/fused.py names them)
            heads.append(((i, alpha, tab.num_history, a_tilde, float(dt), stage_dt, tau_start, tau_end, guess_mode),
                          (arrays.is_static, static_pivot, sqrt_inertia, sqrt_mass, a_ref)))
            ends.append(((i, i == num_stages - 1, self.b_tilde, stage_dt, abs_tol),
                         (arrays.is_static, self.force_weight)))
        self.stage_times, self.begin_heads, self.end_heads = times, heads, ends
        self.step_group = (tuple(self.star), self.static_v, self.static_w, tuple(self.stages))


def run_group(group, cm, out, report) -> Kinematics:
    """`pipeline._GroupStep.run` for ``group`` (a `_GroupStep`) on the fused kernels: the group's new state goes
    into ``out``'s rows, or, with ``out`` None, is returned as fresh arrays."""
    model, state, tab, dt = group.model, group.state, group.tab, group.dt
    # the history as it is, unless a spin was set from outside
    if group.all_worlds and not np.logical_or.reduce(state.sym_dirty, axis=None):
        hist = state.history[: tab.num_history]
    else:
        hist = group.load_history()  # S filled for spins set from outside
    h0 = hist[0]
    h1 = hist[1] if len(hist) > 1 else h0
    h2 = hist[2] if len(hist) > 2 else h0
    worlds = group.worlds
    if group.all_worlds:
        prev_c, prev_r = state.static_previous_com, state.static_previous_rotation
        external_force, offset_force = state.external_force, state.offset_force
    else:
        prev_c, prev_r = state.static_previous_com[worlds], state.static_previous_rotation[worlds]
        external_force, offset_force = state.external_force[worlds], state.offset_force[worlds]
    num_worlds, n = h0.com_position.shape[:2]
    b = (cm.step_heads(group.history_count, tab, dt, worlds) if group.all_worlds
         else StepHeads(cm, tab, dt, worlds, num_worlds))
    nm = cm.newton
    gravity_w, force_weight = b.gravity_w, b.force_weight
    torque_weight = np.empty(b.vec)  # stage_begin's, at stage 0
    has_offset = offset_force.shape[2] > 0
    offset_local = state.offset_local if has_offset else None
    offset_force = offset_force if has_offset else None
    num_stages = b.num_stages
    vec, mat = b.vec, b.mat
    stages, guess_c, guess_r = b.stages, b.guess_c, b.guess_r
    step_status = np.zeros(num_worlds, dtype=np.int64)
    actor_status = np.zeros((num_worlds, n), dtype=np.int64)
    counts = np.zeros(2, dtype=np.int64)
    residual = np.zeros(1)
    end = [np.empty(vec), np.empty(mat), np.empty(vec), np.empty(vec), np.empty(mat)]
    history = (kernel_array(h0.com_position), kernel_array(h0.rotation), kernel_array(h0.linear_velocity),
               kernel_array(h0.angular_velocity), kernel_array(h0.velocity_sym))
    if h1 is h0:
        older = history + history
    else:
        older = tuple(kernel_array(a) for h in (h1, h2) for a in (h.com_position, h.rotation, h.linear_velocity,
                                                                    h.angular_velocity, h.velocity_sym))
    prev_c, prev_r = kernel_array(prev_c), kernel_array(prev_r)
    if not fused_kernels.stage_begin.overloads and newton_kernels.cold_cache():
        # The first step of a process on a cold cache: a child compiles the fused kernels while this process
        # compiles the Newton (run on no worlds; its callees compile in two more children), then loads them.
        children = compile_in_processes([f"from {fused_kernels.__name__} import compile_kernels; compile_kernels()"])
        none = slice(0, 0)
        compiled_newton.run_stage(
            nm, b.stage_times[0][0], *(a[none] for a in history), gravity_w[none],
            kernel_array(external_force)[none], None if offset_force is None else kernel_array(offset_force)[none],
            offset_local, force_weight, torque_weight[none], kernel_array(worlds, np.int64)[none],
            guess_c[none], guess_r[none])
        for child in children:
            child.wait()
    hist_group = (history, older[:5], older[5:], prev_c, prev_r)
    report_group = (step_status, actor_status, counts, residual)
    end = tuple(end)
    for i in range(num_stages):
        stage_dt, tau_end = b.stage_times[i]
        guess = _pivot_guess(nm, stage_dt) if b.guess_targets else _NO_GUESS
        start = [np.empty(vec), np.empty(mat), np.empty(vec), np.empty(vec), np.empty(mat)]
        start = tuple(start)
        fused_kernels.stage_begin(*b.begin_heads[i], torque_weight, hist_group, guess + (b.world_rows,),
                                  b.step_group, start, (guess_c, guess_r))
        if b.outside:
            latest = (history[:2] + history[2:4]) if i == 0 else tuple(stages[k][i - 1] for k in range(4))
            _guess_outside(nm, b.is_static, latest, stage_dt, guess_c, guess_r)
        solve = compiled_newton.run_stage(
            nm, stage_dt, *start, gravity_w, external_force, offset_force, offset_local, force_weight,
            torque_weight, b.world_rows, guess_c, guess_r, fresh=True, stage_time=state.time + tau_end * dt)
        fused_kernels.stage_end(*b.end_heads[i], torque_weight, start[:2], solve, history[:2], b.step_group,
                                report_group, end)
    report.num_stages += num_stages
    report.max_iterations = max(report.max_iterations, int(counts[0]))
    report.max_line_search_iterations = max(report.max_line_search_iterations, int(counts[1]))
    report.residual_norm = max(report.residual_norm, float(residual[0]))
    ctx = StageContext(
        model=model, stage_dt=stage_dt, stage_time=state.time + tau_end * dt, com_position0=start[0],
        rotation0=start[1], linear_velocity0=start[2], angular_velocity0=start[3], velocity_sym0=start[4],
        gravity=gravity_w, external_force=external_force, offset_force=offset_force, offset_local=offset_local,
        world_index=worlds, force_weight=force_weight, torque_weight=torque_weight)
    report.last_stages.append((worlds, ctx, solve[0], solve[1]))
    result = Kinematics(*end)
    if group.all_worlds:  # the report's arrays are these (fresh per step)
        report.status = step_status
        report.actor_status = actor_status
    else:
        report.status[worlds] = step_status
        report.actor_status[worlds] = actor_status
        out.put(worlds, result)
    return result
