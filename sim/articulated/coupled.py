"""The step of a scene that holds articulated actors: one Newton per world over the generalized DoF vector
[6 per dynamic rigid actor | the joint coordinates of each articulation], every integration method.

Links are rows of the scene's model like rigid actors (so contact, layers, pair filters, constraints and queries
see them), but they own no DoFs: at every Newton iterate their poses are the forward kinematics of the joint
coordinates, and each row potential's per-body gradient g and Hessian blocks H are pulled back through the link
Jacobians J (W, 6, D): J^T g and J^T H J (couplings J_a^T B J_b). The dropped second-order term is
sum_l g_l . d^2 x_l / dq^2, the curvature of the kinematics weighted by the contact force: it vanishes at
rest-free contact and is indefinite in general, so leaving it out keeps the Newton matrix positive (semi)definite,
as the released engine's Gauss-Newton does for the links' own inertia (sim/articulated/energy.py).

The links' inertia, gravity and every joint term come from the articulation's terms (compiled_terms.total); the
rigid inertia, gravity and loads from the core potentials on a model where link rows are static (so they add
nothing for links). The stage structure is the rigid pipeline's (`_GroupStep`) and the oracle's
(begin_step / stage_start / stage_data / stage_end / finish_step), run side by side on the same tableau: the
worlds are grouped by the shorter of their rigid and articulated history lengths. With no rigid actor and no
contact, every row term is exactly zero and a world's bits are the oracle's.

The Newton is the oracle's (sim/articulated/oracle.py `minimize`) stopped by the scene's NonLinearSolverParams
(sim/articulated/stopping.py): max_iter, abs_tol / rel_tol on per-actor weighted residuals (each dynamic rigid
actor, each articulation) and line_search_max_iter tries of the backtracking search, whose rule is Armijo on the
energy or a lower residual norm. A world that reaches max_iter unconverged goes on (STOPPED), as in the rigid step.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from .. import lie
from ..jit import kernel_array
from ..kernels import articulated_terms as articulated_kernels
from ..model import Kinematics, convergence_weights
from ..params import ConvergenceMode, ConvergenceStatus
from ..solver.numpy_newton import evaluate_potentials, subset_context
from ..step import pipeline
from ..step.integration import effective_tableau
from . import worlds as per_world
from .boundary import eliminate
from .compiled_terms import total
from .energy import take_worlds
from .kinematics import add_delta, forward_kinematics, link_jacobians
from .oracle import _ARMIJO, minimize
from .stopping import articulation_weights, from_solver

PATH_NAME = "numpy: generalized coordinates (articulated actors)"
# Evaluate only the worlds a Newton iteration or line-search try moves (False: every world every time; a switch
# for tests, which check both give the same bits)
SUBSET_EVALUATION = True


@dataclass
class _Art:
    """One articulation in one world group: its sub-oracle, model rows of its links, DoF block, stage data."""

    actor: object
    sub: object
    rows: np.ndarray
    offset: int
    stage: object = None
    star: object = None
    stages: list = None


def _system(potentials):
    """The scene's ArticulationSystem among its potentials (sim/articulated/system.py)."""
    return next(p for p in potentials if hasattr(p, "link_rows"))


def core_model(model, link_rows: np.ndarray):
    """The scene's model with link rows static: the rigid inertia, gravity and loads then add nothing for links."""
    cached = model.__dict__.get("_articulated_core")
    if cached is not None:
        return cached
    static = model.bodies.is_static.copy()
    static[link_rows] = True
    b = model.bodies
    bodies = replace(b, mass=np.where(static, 0.0, b.mass), is_static=static,
                     second_moment=np.where(static[:, None, None], 0.0, b.second_moment),
                     inertia=np.where(static[:, None, None], 0.0, b.inertia))
    core = replace(model, bodies=bodies)
    model.__dict__["_articulated_core"] = core  # frozen dataclass: the cache lives in its __dict__
    return core


def step(model, state, dt, solver, gravity, extra_potentials=()) -> pipeline.StepReport:
    """Advance every world by dt in place: a scene holding articulations (`Scene.step` calls this instead of
    `pipeline.step`)."""
    system = _system(extra_potentials)
    actors = system.actors
    link_rows = np.concatenate([system.link_rows(a) for a in actors])
    core = core_model(model, link_rows)
    method = solver.integration_method
    num_worlds = state.num_worlds
    needed = effective_tableau(method, 3).num_history
    counts = np.minimum(state.num_history, needed)
    dirty = np.array([a._num_history == 0 for a in actors], dtype=np.int64).reshape(len(actors), num_worlds)
    for a in actors:
        counts = np.minimum(counts, np.maximum(np.minimum(a._num_history, needed), 1))
    report = pipeline.StepReport(np.zeros(num_worlds, dtype=np.int64), 0, 0, 0.0,
                                 np.zeros((num_worlds, model.bodies.num), dtype=np.int64), last_stages=[],
                                 solver_path=PATH_NAME)
    new0 = state.current.copy()
    keys = np.vstack([counts[None, :], dirty])
    for key in np.unique(keys, axis=1).T:
        worlds = np.flatnonzero(np.all(keys == key[:, None], axis=0))
        _step_group(model, core, state, worlds, int(key[0]), key[1:], dt, solver, gravity, extra_potentials,
                    system, new0, report)
    pipeline.shift_history(state, new0, dt, report.status)
    return report


def _step_group(model, core, state, worlds, count, dirty, dt, solver, gravity, extra, system, out, report):
    tab = effective_tableau(solver.integration_method, count)
    group = pipeline._GroupStep(core, state, worlds, tab, dt, solver, gravity, pipeline.CORE_POTENTIALS + tuple(extra))
    hist = group.load_history()
    star = group.step_start(hist)
    group.static_motion(hist)
    group.force_weight, group.torque_weight = convergence_weights(core.bodies, hist[0].rotation, gravity)
    arts, offset = [], 6 * int(np.count_nonzero(~core.bodies.is_static))
    for a, d in zip(system.actors, dirty):
        sub = per_world.take(a._oracle, worlds, 0 if d else count)
        sub.gravity[:] = gravity
        a._apply_pending(sub, worlds, dt)
        art = _Art(a, sub, system.link_rows(a), offset, stages=[])
        _, art.star = sub.begin_step(dt, solver.integration_method)
        arts.append(art)
        offset += a.model.num_dofs
    stop = _stopping(solver, core, group, arts, gravity)
    stages, iterations = [], np.zeros(len(worlds), dtype=np.int64)
    converged = np.ones(len(worlds), dtype=bool)
    for i in range(tab.num_stages):
        dt_stage = dt * tab.stage_dt_factors[i]
        starts = [art.sub.stage_start(i, tab, art.star, art.stages) for art in arts]
        start = _with_links(group.stage_start(i, star, stages), arts, starts)
        ctx = group.stage_context(i, start)
        for art, s in zip(arts, starts):
            art.stage = art.sub.stage_data(s, float(dt_stage))
        guess_c, guess_r = group.initial_guess(i, ctx, hist[0] if i == 0 else stages[-1])
        c, r, qs, its, ok = newton(ctx, replace(ctx, model=model), guess_c, guess_r, [s.q for s in starts], arts,
                                   extra, offset, stop)
        iterations += its
        converged &= ok
        for art, s, q in zip(arts, starts, qs):
            art.stages.append(art.sub.stage_end(s, q, float(dt_stage)))
        v, w, sym = pipeline.recover_velocity(c, r, start.com_position, start.rotation, ctx.stage_dt)
        stages.append(Kinematics(c, r, v, w, sym))
    report.last_stages.append((worlds, replace(ctx, model=model), c, r))
    end = group.step_end(star, stages)
    for art in arts:
        art.sub.finish_step(tab, art.star, art.stages, iterations)
        per_world.put(art.actor._oracle, worlds, art.sub)
        art.actor._num_history[worlds] = min(count + 1, 3)
    end = _with_links(end, arts, [art.sub for art in arts], end_state=True)
    out.put(worlds, end)
    report.num_stages += tab.num_stages
    report.max_iterations = max(report.max_iterations, int(iterations.max(initial=0)))
    status = np.where(converged, ConvergenceStatus.CONVERGED.value, ConvergenceStatus.STOPPED.value)
    report.status[worlds] = status
    report.actor_status[worlds] = status[:, None]


def _stopping(solver, core, group, arts, gravity):
    """The scene's solver settings over this group's DoFs: 6 per dynamic rigid actor weighted by the rigid rule,
    then each articulation's block as one actor (sim/articulated/stopping.py)."""
    dyn = np.flatnonzero(~core.bodies.is_static)
    num_worlds = group.torque_weight.shape[0]
    rigid = np.empty((num_worlds, dyn.size, 6))
    rigid[..., :3] = np.broadcast_to(group.force_weight, core.bodies.mass.shape)[dyn][None, :, None]
    rigid[..., 3:] = group.torque_weight[:, dyn]
    a_ref = max(1.0, float(np.linalg.norm(gravity)))
    if solver.non_linear_solver.convergence_mode is ConvergenceMode.GLOBAL:  # from_solver weighs every DoF 1
        weights = np.ones((num_worlds, rigid[0].size + sum(art.sub.q.shape[1] for art in arts)))
    else:
        weights = np.concatenate([rigid.reshape(num_worlds, -1)]
                                 + [articulation_weights(art.actor.model, art.sub.q, a_ref) for art in arts], axis=1)
    segments = np.concatenate([6 * np.arange(dyn.size), [art.offset for art in arts]]).astype(np.int64)
    return from_solver(solver.non_linear_solver, weights, segments)


def _with_links(kin: Kinematics, arts, states, end_state: bool = False) -> Kinematics:
    """``kin`` with every link row at the forward kinematics of its articulation's state (a stage start snapshot,
    or with ``end_state`` the sub-oracle after its step) and moving with its link velocities (S = sym part of F)."""
    out = Kinematics(kin.com_position.copy(), kin.rotation.copy(), kin.linear_velocity.copy(),
                     kin.angular_velocity.copy(), kin.velocity_sym.copy())
    for art, s in zip(arts, states):
        rot, _, com = forward_kinematics(art.actor.model, s.q)
        out.com_position[:, art.rows] = com
        out.rotation[:, art.rows] = rot
        out.linear_velocity[:, art.rows] = s.link_velocity
        out.angular_velocity[:, art.rows] = lie.axial(s.link_f)
        out.velocity_sym[:, art.rows] = lie.sym(s.link_f)
    return out


def row_terms(ctx_core, ctx_full, c, r, qs, arts, extra, size, pull_back=None):
    """The row potentials (rigid inertia / gravity / loads, contact, constraints) at the rigid rows' (c, r) and the
    links' forward kinematics of qs, pulled back to the generalized DoFs: energy (W,), J^T g (W, n), the
    Gauss-Newton J^T H J plus couplings (W, n, n), the rows' (c, r) with the links placed, and each articulation's
    link_jacobians at its q. ``pull_back``: `pull_back_kernel` (the default) or `pull_back_numpy`."""
    c, r = c.copy(), r.copy()
    kinematics = []
    for art, q in zip(arts, qs):
        kin = link_jacobians(art.actor.model, q)
        kinematics.append(kin)
        c[:, art.rows], r[:, art.rows] = kin[2], kin[0]
    core = evaluate_potentials(pipeline.CORE_POTENTIALS, ctx_core, c, r, True)
    rows = evaluate_potentials(extra, ctx_full, c, r, True)
    grad, hess = (pull_back or pull_back_kernel)(ctx_core.model.bodies.is_static, arts, kinematics, size,
                                                 core.gradient + rows.gradient, core.hessian_diag + rows.hessian_diag,
                                                 rows.couplings)
    return core.energy + rows.energy, grad, hess, (c, r), kinematics


def pull_back_kernel(is_static, arts, kinematics, size, grad6, hess6, couplings):
    """Per-row gradient (W, N, 6), diagonal blocks (W, N, 6, 6) and couplings pulled back to the generalized DoFs
    in one kernel call (sim/kernels/articulated_terms.py pull_back): (J^T g (W, n), J^T H J (W, n, n))."""
    num_worlds, num_rows = grad6.shape[:2]
    kind = np.zeros(num_rows, dtype=np.int64)
    col = np.zeros(num_rows, dtype=np.int64)
    link = np.zeros(num_rows, dtype=np.int64)
    dyn = np.flatnonzero(~is_static)
    kind[dyn], col[dyn] = 1, 6 * np.arange(dyn.size)
    ndof = np.concatenate([np.full(len(art.rows), kin[3].shape[3]) for art, kin in zip(arts, kinematics)]
                          ).astype(np.int64)
    first = 0
    for art in arts:
        kind[art.rows], col[art.rows] = 2, art.offset
        link[art.rows] = first + np.arange(len(art.rows))
        first += len(art.rows)
    if len(kinematics) == 1:
        link_jac = kernel_array(kinematics[0][3])
    else:
        link_jac = np.zeros((num_worlds, first, 6, max(kin[3].shape[3] for kin in kinematics)))
        first = 0
        for kin in kinematics:
            jac = kin[3]
            link_jac[:, first:first + jac.shape[1], :, :jac.shape[3]] = jac
            first += jac.shape[1]
    if couplings:
        coupling = (np.concatenate([cp.body_a for cp in couplings]).astype(np.int64),
                    np.concatenate([cp.body_b for cp in couplings]).astype(np.int64),
                    kernel_array(np.concatenate([cp.block for cp in couplings], axis=1)))
    else:
        coupling = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros((num_worlds, 0, 6, 6)))
    grad = np.empty((num_worlds, size))
    hess = np.empty((num_worlds, size, size))
    articulated_kernels.pull_back((kind, col, link, ndof), link_jac, kernel_array(grad6), kernel_array(hess6),
                                  coupling, grad, hess)
    return grad, hess


def pull_back_numpy(is_static, arts, kinematics, size, grad6, hess6, couplings):
    """`pull_back_kernel` in numpy (its oracle, tests/test_articulated_coupled.py)."""
    num_worlds, num_rows = grad6.shape[:2]
    proj = np.zeros((num_worlds, num_rows, 6, size))  # d(row increment) / d(generalized increment)
    dyn = np.flatnonzero(~is_static)
    proj[:, dyn, :, :6 * len(dyn)] = np.eye(6 * len(dyn)).reshape(len(dyn), 6, 6 * len(dyn))
    for art, kin in zip(arts, kinematics):
        proj[:, art.rows, :, art.offset:art.offset + kin[3].shape[3]] = kin[3]
    grad = np.einsum("wnkd,wnk->wd", proj, grad6)
    proj_t = np.swapaxes(proj, -1, -2)
    hess = (proj_t @ hess6 @ proj).sum(axis=1)
    for cp in couplings:
        block = (proj_t[:, cp.body_a] @ cp.block @ proj[:, cp.body_b]).sum(axis=1)
        hess += block + np.swapaxes(block, 1, 2)
    return grad, hess


def _evaluate(ctx_core, ctx_full, c, r, qs, arts, extra, size):
    """Energy (W,), gradient (W, n) and Newton matrix (W, n, n) of the coupled stage: the row terms plus each
    articulation's own terms (compiled_terms.total) on its DoF block."""
    row_energy, grad, hess, placed, kinematics = row_terms(ctx_core, ctx_full, c, r, qs, arts, extra, size)
    energy = np.zeros(c.shape[0])
    for art, q, kin in zip(arts, qs, kinematics):
        e, g, h = total(art.actor.model, q, art.stage, kin)
        sl = slice(art.offset, art.offset + q.shape[1])
        energy = energy + e
        grad[:, sl] = g + grad[:, sl]
        hess[:, sl, sl] = h + hess[:, sl, sl]
    return energy + row_energy, grad, hess, placed


def _move(c, r, qs, arts, step, dyn):
    """The iterate moved by ``step`` (W, n): rigid rows by (dc, left dtheta), joint coordinates by q (+) dq."""
    c, r = c.copy(), r.copy()
    if dyn.size:
        d6 = step[:, :6 * dyn.size].reshape(-1, dyn.size, 6)
        c[:, dyn] = c[:, dyn] + d6[..., :3]
        r[:, dyn] = lie.exp_so3(d6[..., 3:]) @ r[:, dyn]
    new_qs = [add_delta(art.actor.model, q, step[:, art.offset:art.offset + q.shape[1]]) for art, q in zip(arts, qs)]
    return c, r, new_qs


def _accept(e_trial, energy, g_trial, grad_norm, alpha, slope):
    """Armijo on the energy, or a lower gradient norm: the default contact gradient is the reference's residual,
    not the exact gradient of its energy (sim/contact/potential.py), which the rigid Newton's default
    RESIDUAL_NORM search accepts on (the oracle's round-off rule is a special case)."""
    return (e_trial <= energy + _ARMIJO * alpha * slope) | (np.linalg.norm(g_trial, axis=1) < grad_norm)


def newton(ctx_core, ctx_full, c, r, qs, arts, extra, size, stop):
    """Minimize the coupled stage energy under the Stopping rule ``stop``; returns (c, r, qs, iterations per world,
    converged per world)."""
    dyn = np.flatnonzero(~ctx_core.model.bodies.is_static)
    # DoFs under boundary conditions start at their values and leave the solve (sim/articulated/boundary.py)
    held = np.concatenate([art.offset + art.sub.boundary.effective()[0] for art in arts])
    qs = [art.sub.boundary.hold(q) if art.sub.boundary else q for art, q in zip(arts, qs)]

    num_worlds = c.shape[0]

    def evaluate(x, rows, base):
        if rows is None or rows.size == num_worlds or not SUBSET_EVALUATION:
            energy, grad, hess, (cc, rr) = _evaluate(ctx_core, ctx_full, x[0], x[1], x[2], arts, extra, size)
            eliminate(grad, hess, held)
            return energy, grad, hess, (cc, rr, x[2])
        # only the worlds still moving: each world's terms are its own (worlds together == alone), so the others'
        # are the base's, bit for bit
        sub_arts = [replace(art, stage=take_worlds(art.stage, rows)) for art in arts]
        e, g, h, (cc, rr) = _evaluate(subset_context(ctx_core, rows), subset_context(ctx_full, rows), x[0][rows],
                                      x[1][rows], [q[rows] for q in x[2]], sub_arts, extra, size)
        eliminate(g, h, held)
        energy, grad, hess = base[0].copy(), base[1].copy(), base[2].copy()
        energy[rows], grad[rows], hess[rows] = e, g, h
        c_out, r_out = base[3][0].copy(), base[3][1].copy()
        c_out[rows], r_out[rows] = cc, rr
        qs_out = [qb.copy() for qb in base[3][2]]
        for qo, q in zip(qs_out, x[2]):
            qo[rows] = q[rows]
        return energy, grad, hess, (c_out, r_out, qs_out)

    def select(mask, trial, x):
        return (np.where(mask[:, None, None], trial[0], x[0]), np.where(mask[:, None, None, None], trial[1], x[1]),
                [np.where(mask[:, None], t, q) for t, q in zip(trial[2], x[2])])

    (c, r, qs), iterations, converged = minimize(evaluate, lambda x, step: _move(*x, arts, step, dyn), select,
                                                 (c, r, [q.copy() for q in qs]), c.shape[0], _accept, stop)
    return c, r, qs, iterations, converged
