"""Batched Newton solver for one implicit stage (digest section 4). It knows nothing about physics.

Per world: assemble the residual r (the summed potential gradients) and Jacobian K, test convergence, solve
K dx = r, step x <- x (+) (-lambda dx) with a line search, repeat up to ``max_iter`` times. All worlds advance
together; worlds that converged, stopped or diverged are masked out of further updates, so a world's result
never depends on the other worlds in the batch.

The update of a body is the world-frame Lie update: c <- c - lambda dc, R <- exp(skew(-lambda dtheta)) R.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, replace

import numpy as np

from .. import lie
from ..params import ConvergenceMode, ConvergenceStatus, LineSearchType, NonLinearSolverParams, PsdProjMode, Verbosity
from ..potentials.base import PotentialTerms, StageContext


logger = logging.getLogger("superdex_gym.sim.newton")


@dataclass
class NewtonResult:
    com_position: np.ndarray  # (W, N, 3)
    rotation: np.ndarray  # (W, N, 3, 3)
    status: np.ndarray  # (W,) int ConvergenceStatus values
    iterations: np.ndarray  # (W,) Newton iterations (linear solves) taken
    line_search_iterations: np.ndarray  # (W,) the most backtracking steps of any iteration
    residual_norm: np.ndarray  # (W,) final plain Euclidean residual norm over dynamic DoFs
    actor_residual: np.ndarray  # (W, N) final weighted per-actor residual
    assembly_time: float = 0.0
    solve_time: float = 0.0
    line_search_time: float = 0.0


def evaluate_potentials(potentials, ctx, com_position, rotation, want_hessian) -> PotentialTerms:
    """Sum every potential's terms; static actors' rows are zeroed (their pose is prescribed).

    A potential whose ``is_active(ctx)`` returns False contributes nothing and is not evaluated."""
    num_worlds, num_bodies = com_position.shape[:2]
    total = None
    for pot in potentials:
        if not pot.is_active(ctx):
            continue
        t = pot.evaluate(ctx, com_position, rotation, want_hessian)
        if total is None:  # the sum starts as a copy of the first terms (a potential may return cached arrays)
            hess = t.hessian_diag.copy() if want_hessian else None
            total = PotentialTerms(t.energy, t.gradient.copy(), hess, list(t.couplings))
            continue
        total.energy = total.energy + t.energy
        total.gradient += t.gradient
        if want_hessian:
            total.hessian_diag += t.hessian_diag
            total.couplings.extend(t.couplings)
    if total is None:
        total = PotentialTerms.zeros(num_worlds, num_bodies, want_hessian)
    static = ctx.model.bodies.is_static
    total.gradient[:, static] = 0.0
    return total


def _actor_residuals(gradient: np.ndarray, ctx) -> np.ndarray:
    """rho_a = sqrt(sum_j w_aj r_aj^2) per world and actor, (W, N) (digest 4; weights in model.convergence_weights)."""
    f2 = np.einsum("wni,wni->wn", gradient[..., :3], gradient[..., :3])
    t2 = np.einsum("wni,wni->wn", ctx.torque_weight, gradient[..., 3:] ** 2)
    rho = np.sqrt(ctx.force_weight * f2 + t2)
    return np.where(ctx.model.bodies.is_static, 0.0, rho)


def _residual_norm(gradient: np.ndarray) -> np.ndarray:
    return np.sqrt(np.einsum("wni,wni->w", gradient, gradient))


def _solve(terms: PotentialTerms, bodies) -> tuple[np.ndarray, np.ndarray]:
    """Solve K dx = r per world over the dynamic bodies (static rows are pinned: dx = 0 there).

    Returns dx (W, N, 6) and ok (W,) (finite solution). Couplings that touch a static body are dropped; the
    system is block-diagonal (one 6x6 solve per body) unless dynamic bodies are coupled, then one dense
    (6 D) x (6 D) solve over the D dynamic bodies, for the worlds whose coupling blocks are non-zero only.
    """
    static = bodies.is_static
    rhs = terms.gradient
    num_worlds, num_bodies = rhs.shape[:2]
    dyn_idx = np.flatnonzero(~static)
    num_dyn = dyn_idx.size
    dx = np.zeros_like(rhs)
    if num_dyn == 0:
        return dx, np.ones(num_worlds, dtype=bool)
    local = np.full(num_bodies, -1, dtype=np.int64)  # model row -> dynamic row
    local[dyn_idx] = np.arange(num_dyn)
    hess = terms.hessian_diag[:, dyn_idx]
    rhs_d = rhs[:, dyn_idx]
    couplings = []
    for c in terms.couplings:
        keep = (local[c.body_a] >= 0) & (local[c.body_b] >= 0)
        if np.any(keep):
            couplings.append((local[c.body_a[keep]], local[c.body_b[keep]], c.block[:, keep]))
    # Per world: the dense system only where this world's coupling blocks are non-zero, so a world's arithmetic
    # (and its last bits) never depends on which other worlds share the batch.
    coupled = np.zeros(num_worlds, dtype=bool)
    for _, _, blk in couplings:
        coupled |= np.any(blk.reshape(num_worlds, -1) != 0.0, axis=1)
    if not np.any(coupled):
        # Block-diagonal: one 6x6 solve per body.
        sol = batched_solve(hess.reshape(-1, 6, 6), rhs_d.reshape(-1, 6, 1)).reshape(num_worlds, num_dyn, 6)
    else:
        sol = np.empty((num_worlds, num_dyn, 6))
        free = np.flatnonzero(~coupled)
        if free.size:
            sol[free] = batched_solve(hess[free].reshape(-1, 6, 6), rhs_d[free].reshape(-1, 6, 1)).reshape(
                free.size, num_dyn, 6)
        rows = np.flatnonzero(coupled)
        k = rows.size
        dense = np.zeros((k, num_dyn, num_dyn, 6, 6))
        idx = np.arange(num_dyn)
        dense[:, idx, idx] = hess[rows]
        for a, b, blk in couplings:
            blk = blk[rows]
            if len(np.unique(a * num_dyn + b)) == len(a):
                # distinct pairs (the usual case): fancy-index += is exact and much faster than np.add.at
                dense[:, a, b] += blk
                dense[:, b, a] += np.swapaxes(blk, -1, -2)
            else:
                np.add.at(dense, (slice(None), a, b), blk)
                np.add.at(dense, (slice(None), b, a), np.swapaxes(blk, -1, -2))
        dense = dense.transpose(0, 1, 3, 2, 4).reshape(k, 6 * num_dyn, 6 * num_dyn)
        sol[rows] = batched_solve(dense, rhs_d[rows].reshape(k, -1, 1)).reshape(k, num_dyn, 6)
    dx[:, dyn_idx] = sol
    ok = np.all(np.isfinite(sol.reshape(num_worlds, -1)), axis=1)
    return np.where(ok[:, None, None], dx, 0.0), ok


def batched_solve(mats: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """Solve every system; one whose solve fails or is not finite (exactly singular) gets the least-squares
    minimum-norm solution. Nearly singular systems keep their (large) LU solution, as before.

    PSD projection can leave an exactly singular Hessian (a fast-spinning body's projected rotational inertia
    block, measured once in 10^4 random Push steps: smallest eigenvalue 9e-19 of 160); the minimum-norm step
    leaves the singular direction alone instead of returning inf/NaN and diverging the world.
    """
    try:
        with _one_blas_thread():
            out = np.linalg.solve(mats, rhs)[..., 0]
    except np.linalg.LinAlgError:
        out = np.full(rhs.shape[:-1], np.nan)
        for k in range(mats.shape[0]):  # rare failure path: the other systems keep their exact solves
            try:
                out[k] = np.linalg.solve(mats[k], rhs[k])[:, 0]
            except np.linalg.LinAlgError:
                pass
    bad = np.flatnonzero(~np.all(np.isfinite(out), axis=-1))
    for k in bad:  # rare failure path (see above)
        if np.all(np.isfinite(mats[k])) and np.all(np.isfinite(rhs[k])):
            out[k] = np.linalg.lstsq(mats[k], rhs[k], rcond=None)[0][:, 0]
    return out


def _one_blas_thread():
    """A context in which numpy's and scipy's OpenBLAS use one thread (threadpoolctl; the controller scans the
    loaded libraries once). OpenBLAS threads the LU of a dense coupled system (120 x 120 for 20 touching bodies),
    and on shared cores its threads wait for busy ones: the 20-body pile at W = 1 took 1 287 ms per step with two
    threads and 22 ms with one (docs/benchmark_history.md); the compiled Newton's LU is single-threaded too."""
    global _BLAS_CONTROLLER
    if _BLAS_CONTROLLER is None:
        from threadpoolctl import ThreadpoolController

        _BLAS_CONTROLLER = ThreadpoolController()
    return _BLAS_CONTROLLER.limit(limits=1, user_api="blas")


_BLAS_CONTROLLER = None


def _apply(com_position, rotation, dx, lam, mask, dyn_idx=None):
    """x (+) (-lam dx) for the worlds in ``mask`` (W,); the other worlds (and static bodies, dx = 0) are copied."""
    rows = np.flatnonzero(mask)
    new_c, new_r = com_position.copy(), rotation.copy()
    if rows.size == 0:
        return new_c, new_r
    step = -lam * dx[rows]
    if dyn_idx is None:
        new_c[rows] = com_position[rows] + step[..., :3]
        new_r[rows] = lie.exp_so3(step[..., 3:]) @ rotation[rows]
        return new_c, new_r
    sel = np.ix_(rows, dyn_idx)
    new_c[sel] = com_position[sel] + step[:, dyn_idx, :3]
    new_r[sel] = lie.exp_so3(step[:, dyn_idx, 3:]) @ rotation[sel]
    return new_c, new_r


def newton_solve(potentials, ctx: StageContext, com_position, rotation, params: NonLinearSolverParams) -> NewtonResult:
    """Newton over the worlds of ``ctx`` (see the module docstring), as named stages of a `_NewtonRun`:

        per iteration: [remember_best] -> finishing_status -> retire the finished worlds -> newton_direction
        -> step_test -> line_search

    The iteration works on a compacted batch: when worlds finish (converged, stopped, diverged) their iterate and
    residual are written to the result and every array, the context included, shrinks to the worlds still
    iterating, so the last few slow worlds cost what a batch of that size costs. Per-world arithmetic is the same
    as on the full batch (bit-identical results).
    """
    run = _NewtonRun(potentials, ctx, com_position, rotation, params)
    for it in range(params.max_iter + 1):
        if params.verbosity is Verbosity.VERBOSE:
            run.log_iteration(it)
        if params.best_iterate_on_stop:
            run.remember_best()
        fin, capped = run.finishing_status(it)
        finished = fin != ConvergenceStatus.NOT_STARTED.value
        if np.any(finished) and run.retire(finished, fin[finished], capped[finished]).size == 0:
            break
        dx = run.newton_direction()
        if dx is None:  # every remaining world's solve failed: nothing to search
            break
        run.iterations[run.idx] += 1
        run.step_test(dx)
        run.line_search(dx)
    return run.result()


class _NewtonRun:
    """One `newton_solve` call: the result arrays over all worlds of ``ctx`` and the working set, the worlds still
    iterating (batch indices ``idx`` and, row for row, their context ``wctx``, iterate ``c, rot``, terms and
    bookkeeping)."""

    def __init__(self, potentials, ctx: StageContext, com_position, rotation, params: NonLinearSolverParams):
        self.potentials, self.ctx, self.params = potentials, ctx, params
        self.bodies = ctx.model.bodies
        num_worlds = com_position.shape[0]
        self.num_worlds = num_worlds
        self.out_c, self.out_r = com_position.copy(), rotation.copy()
        self.out_grad = np.zeros(com_position.shape[:2] + (6,))
        self.status = np.full(num_worlds, ConvergenceStatus.NOT_STARTED.value)
        self.iterations = np.zeros(num_worlds, dtype=np.int64)
        self.ls_iters = np.zeros(num_worlds, dtype=np.int64)
        self.t_asm = self.t_solve = self.t_ls = 0.0
        self.start = time.perf_counter()
        self._ctx_cache: dict = {}
        self.idx = np.arange(num_worlds)
        self.wctx = ctx
        self.c, self.rot = com_position.copy(), rotation.copy()
        self.project_always = np.full(num_worlds, params.psd_proj_mode is PsdProjMode.ALWAYS)
        self.terms = self.evaluate(self.c, self.rot, self.project_always)
        self.rho0 = _actor_residuals(self.terms.gradient, self.wctx)
        self.norm0 = _residual_norm(self.terms.gradient)
        self.dyn = ~self.bodies.is_static
        self.dyn_idx = np.flatnonzero(self.dyn)
        self.stop_next = np.zeros(num_worlds, dtype=bool)  # last raw increment below rel_step_tol
        # best_iterate_on_stop: the lowest-energy iterate of each working-set world so far and its terms' gradient.
        if params.best_iterate_on_stop:
            self.best_energy = np.full(num_worlds, np.inf)
            self.best_c, self.best_rot, self.best_grad = self.c.copy(), self.rot.copy(), self.terms.gradient.copy()

    def context_of(self, rows):
        """The stage context of the batch worlds ``rows`` (cached: line searches revisit the same sets)."""
        if rows.size == self.num_worlds:
            return self.ctx
        key = rows.tobytes()
        sub = self._ctx_cache.get(key)
        if sub is None:
            if len(self._ctx_cache) > 64:
                self._ctx_cache.clear()
            sub = self._ctx_cache[key] = subset_context(self.ctx, rows)
        return sub

    def evaluate(self, cc, rr, project_mask, rows=None, base=None):
        """Terms at (cc, rr) of the working set; with ``rows`` (working-set positions) only those worlds are
        evaluated and the other rows are copied from ``base``."""
        t0 = time.perf_counter()
        if rows is None or len(rows) == cc.shape[0]:
            res = _evaluate_projected(self.potentials, self.wctx, cc, rr, project_mask)
        else:
            sub = _evaluate_projected(self.potentials, self.context_of(self.idx[rows]), cc[rows], rr[rows],
                                      project_mask[rows])
            res = _scatter_terms(base, sub, rows)
        self.t_asm += time.perf_counter() - t0
        return res

    def converged(self, terms_now, it):
        params = self.params
        if params.convergence_mode is ConvergenceMode.GLOBAL:
            nrm = _residual_norm(terms_now.gradient)
            ok = nrm <= params.abs_tol
            if it > 0:
                ok |= nrm <= params.rel_tol * self.norm0
            return ok
        rho = _actor_residuals(terms_now.gradient, self.wctx)
        ok = rho <= params.abs_tol
        if it > 0:
            ok |= rho <= params.rel_tol * self.rho0
        return np.all(ok | ~self.dyn, axis=1)

    def log_iteration(self, it) -> None:
        rho = _actor_residuals(self.terms.gradient, self.wctx)
        worst = np.unravel_index(np.argmax(rho), rho.shape)
        logger.info("newton it %d: active %d, |r| max %.3e, weighted max %.3e (world %d actor %d)", it,
                    self.idx.size, float(_residual_norm(self.terms.gradient).max()), float(rho.max()),
                    int(self.idx[worst[0]]), int(worst[1]))

    def remember_best(self) -> None:
        """Keep, per working-set world, the iterate with the lowest stage energy seen (best_iterate_on_stop).

        The energy, not the residual norm: Newton minimizes it, and on the launches of issue 16 the lowest-|r|
        iterate still left the cube at 2.0 and 5.3 m/s, the lowest-energy one at 0.26 and 2.96 (the last: 29 and
        28 m/s; docs/reliability.md)."""
        energy = np.asarray(self.terms.energy, dtype=np.float64)
        better = energy < self.best_energy
        if np.any(better):
            self.best_energy[better] = energy[better]
            self.best_c[better], self.best_rot[better] = self.c[better], self.rot[better]
            self.best_grad[better] = self.terms.gradient[better]

    def finishing_status(self, it):
        """Per working-set world, the status it finishes with at iteration ``it`` (NOT_STARTED: keeps going), and
        which of them stop at the iteration cap or the time limit."""
        params = self.params
        fin = np.full(self.idx.size, ConvergenceStatus.NOT_STARTED.value)
        fin[self.stop_next] = ConvergenceStatus.STOPPED.value
        fin[self.converged(self.terms, it)] = ConvergenceStatus.CONVERGED.value
        if params.explosion_control:
            nrm = _residual_norm(self.terms.gradient)
            bad = (fin == ConvergenceStatus.NOT_STARTED.value) & (
                ~np.isfinite(nrm) | (nrm > params.abs_div_tol)
                | (nrm > params.rel_div_tol * np.maximum(self.norm0, 1e-300)))
            fin[bad] = ConvergenceStatus.DIVERGED.value
        last = it == params.max_iter or (
            params.max_elapsed_time_seconds > 0 and time.perf_counter() - self.start > params.max_elapsed_time_seconds)
        capped = np.zeros(self.idx.size, dtype=bool)
        if last:
            capped = fin == ConvergenceStatus.NOT_STARTED.value
            fin[capped] = ConvergenceStatus.STOPPED.value
        return fin, capped

    def retire(self, done, new_status, capped=None):
        """Write the working-set worlds ``done`` (mask) to the result with ``new_status`` and drop them from the
        working set (every per-world array and the context). ``capped`` (one flag per retired world): stopped at
        the cap, so with best_iterate_on_stop their best iterate is written. Returns the positions kept."""
        rows = self.idx[done]
        self.status[rows] = new_status
        self.out_c[rows], self.out_r[rows], self.out_grad[rows] = self.c[done], self.rot[done], self.terms.gradient[done]
        if self.params.best_iterate_on_stop and capped is not None and np.any(capped):
            best = np.flatnonzero(done)[capped]
            self.out_c[rows[capped]], self.out_r[rows[capped]] = self.best_c[best], self.best_rot[best]
            self.out_grad[rows[capped]] = self.best_grad[best]
        keep = np.flatnonzero(~done)
        self.idx, self.c, self.rot = self.idx[keep], self.c[keep], self.rot[keep]
        self.terms = _take_terms(self.terms, keep)
        self.project_always, self.rho0, self.norm0 = self.project_always[keep], self.rho0[keep], self.norm0[keep]
        if self.params.best_iterate_on_stop:
            self.best_energy, self.best_grad = self.best_energy[keep], self.best_grad[keep]
            self.best_c, self.best_rot = self.best_c[keep], self.best_rot[keep]
        if keep.size:
            self.wctx = self.context_of(self.idx)
        return keep

    def newton_direction(self):
        """dx (working set, N, 6) solving K dx = r, with the PSD-projection retry of ``psd_proj_mode``; worlds
        whose solve fails retire DIVERGED at their current iterate. None when no world is left."""
        t0 = time.perf_counter()
        dx, ok = _solve(self.terms, self.bodies)
        descent = np.einsum("wni,wni->w", self.terms.gradient, dx) > 0.0
        self.t_solve += time.perf_counter() - t0
        if self.params.psd_proj_mode in (PsdProjMode.IF_FAIL_RETRY, PsdProjMode.IF_FAIL_ALWAYS):
            failed = ~self.project_always & ~(ok & descent)
            if np.any(failed):
                # Retry this iteration with projected Hessians for the worlds whose solve failed.
                retry_mask = self.project_always | failed
                failed_rows = np.nonzero(failed)[0]
                terms_p = self.evaluate(self.c, self.rot, retry_mask, failed_rows, self.terms)
                dx_p, ok_p = _solve(_take_terms(terms_p, failed_rows), self.bodies)
                dx[failed_rows], ok[failed_rows] = dx_p, ok_p
                if self.params.psd_proj_mode is PsdProjMode.IF_FAIL_ALWAYS:
                    self.project_always = retry_mask
        if not np.all(ok):  # a failed solve: the world stops here, DIVERGED, at its current iterate
            keep = self.retire(~ok, ConvergenceStatus.DIVERGED.value)
            if keep.size == 0:
                return None
            dx = dx[keep]
        return dx

    def step_test(self, dx) -> None:
        """Relative step tolerance on the raw increment (before the line search): stop next iteration when
        |dx| <= rel_step_tol |x|, |x|^2 = |c|^2 + |log R|^2 with the rotation angle from the trace (no full log)."""
        dyn, c, rot = self.dyn, self.c, self.rot
        angle = np.arccos(np.clip(0.5 * (np.trace(rot[:, dyn], axis1=-2, axis2=-1) - 1.0), -1.0, 1.0))
        x_norm = np.sqrt(np.einsum("wni,wni->w", c[:, dyn], c[:, dyn]) + np.einsum("wn,wn->w", angle, angle))
        dx_norm = np.sqrt(np.einsum("wni,wni->w", dx, dx))
        self.stop_next = dx_norm <= self.params.rel_step_tol * x_norm

    def line_search(self, dx) -> None:
        """Move the working set along -dx (`_line_search`) and record the backtracking steps taken."""
        t0 = time.perf_counter()
        self.c, self.rot, self.terms, used = _line_search(
            self.params, self.evaluate, self.terms, self.c, self.rot, dx, np.ones(self.idx.size, dtype=bool),
            self.project_always, self.dyn_idx)
        self.t_ls += time.perf_counter() - t0
        self.ls_iters[self.idx] = np.maximum(self.ls_iters[self.idx], used)
        if self.params.verbosity is Verbosity.VERBOSE:
            logger.info("  line search backtracks: max %d, worlds backtracking %d", int(used.max(initial=0)),
                        int((used > 0).sum()))

    def result(self) -> NewtonResult:
        return NewtonResult(
            com_position=self.out_c,
            rotation=self.out_r,
            status=self.status,
            iterations=self.iterations,
            line_search_iterations=self.ls_iters,
            residual_norm=_residual_norm(self.out_grad),
            actor_residual=_actor_residuals(self.out_grad, self.ctx),
            assembly_time=self.t_asm,
            solve_time=self.t_solve,
            line_search_time=self.t_ls,
        )


def _take_terms(terms: PotentialTerms, rows: np.ndarray) -> PotentialTerms:
    """The terms of the worlds ``rows``."""
    return PotentialTerms(
        energy=terms.energy[rows], gradient=terms.gradient[rows],
        hessian_diag=None if terms.hessian_diag is None else terms.hessian_diag[rows],
        couplings=[replace(cp, block=cp.block[rows]) for cp in terms.couplings],
    )


def _evaluate_projected(potentials, ctx, cc, rr, project_mask) -> PotentialTerms:
    """Per-world PSD projection: evaluate once per distinct setting present and pick rows."""
    if np.all(project_mask) or not np.any(project_mask):
        return evaluate_potentials(potentials, replace(ctx, psd_project=bool(project_mask[0])), cc, rr, True)
    a = evaluate_potentials(potentials, replace(ctx, psd_project=True), cc, rr, True)
    b = evaluate_potentials(potentials, replace(ctx, psd_project=False), cc, rr, True)
    pm = project_mask
    return PotentialTerms(
        energy=np.where(pm, a.energy, b.energy),
        gradient=np.where(pm[:, None, None], a.gradient, b.gradient),
        hessian_diag=np.where(pm[:, None, None, None], a.hessian_diag, b.hessian_diag),
        couplings=_merge_couplings(a.couplings, b.couplings, pm),
    )


_WORLD_FIELDS = ("com_position0", "rotation0", "linear_velocity0", "angular_velocity0", "velocity_sym0", "gravity",
                 "external_force", "offset_force", "torque_weight")


def subset_context(ctx: StageContext, rows: np.ndarray) -> StageContext:
    """The stage context of a subset of its worlds (``world_index`` keeps the batch indices)."""
    changes = {name: getattr(ctx, name)[rows] for name in _WORLD_FIELDS if getattr(ctx, name) is not None}
    base_index = ctx.world_index if ctx.world_index is not None else np.arange(ctx.com_position0.shape[0])
    changes["world_index"] = base_index[rows]
    return replace(ctx, **changes)


def _scatter_terms(base: PotentialTerms, sub: PotentialTerms, rows: np.ndarray) -> PotentialTerms:
    """``base`` with ``rows`` replaced by ``sub``; couplings only for ``rows`` (zero blocks elsewhere)."""
    energy, gradient, hess = base.energy.copy(), base.gradient.copy(), base.hessian_diag.copy()
    energy[rows], gradient[rows], hess[rows] = sub.energy, sub.gradient, sub.hessian_diag
    couplings = []
    for cp in sub.couplings:
        block = np.zeros((energy.shape[0],) + cp.block.shape[1:])
        block[rows] = cp.block
        couplings.append(replace(cp, block=block))
    return PotentialTerms(energy=energy, gradient=gradient, hessian_diag=hess, couplings=couplings)


def _merge_couplings(a_list, b_list, pick_a):
    """Couplings of two evaluations chosen per world: each keeps its blocks only in the worlds it was picked for.

    The two lists may have different pair layouts (a broad phase can activate other pairs at another iterate).
    """
    keep_a = pick_a[:, None, None, None]
    return [replace(ca, block=np.where(keep_a, ca.block, 0.0)) for ca in a_list] + [
        replace(cb, block=np.where(keep_a, 0.0, cb.block)) for cb in b_list
    ]


def _line_search(params, evaluate, terms0, c0, r0, dx, active, project_mask, dyn_idx=None):
    """Backtracking on lambda = 1, alpha, alpha^2, ... (at most line_search_max_iter tries).

    RESIDUAL_NORM accepts the first lambda with |r(x + lambda dx)| <= |r(x)| (plain Euclidean norm); ARMIJO accepts
    Phi(x + lambda dx) <= Phi(x) - c1 lambda r.dx; on the last try the final iterate is taken even without
    improvement (digest 4). Returns the new iterate, its terms and the number of backtracking steps per world.
    """
    ls_type = params.line_search_type
    norm0 = _residual_norm(terms0.gradient)
    slope = np.einsum("wni,wni->w", terms0.gradient, dx)  # -dPhi/dlambda at 0
    pending = active.copy()
    used = np.zeros(active.shape[0], dtype=np.int64)
    c_out, r_out = c0.copy(), r0.copy()
    terms_out = terms0
    lam = 1.0
    max_tries = 1 if ls_type is LineSearchType.NONE else params.line_search_max_iter
    for k in range(max_tries):
        c_try, r_try = _apply(c0, r0, dx, lam, pending, dyn_idx)
        t = evaluate(c_try, r_try, project_mask, np.nonzero(pending)[0], terms_out)
        last = k == max_tries - 1
        if ls_type is LineSearchType.NONE:
            accept = pending.copy()
        else:
            norm_ok = _residual_norm(t.gradient) <= norm0
            armijo_ok = t.energy <= terms0.energy - params.line_search_wolfe1 * lam * slope
            simple_ok = t.energy <= terms0.energy + params.line_search_max_rel_increase * np.abs(terms0.energy)
            accept = {
                LineSearchType.RESIDUAL_NORM: norm_ok,
                LineSearchType.ARMIJO: armijo_ok,
                LineSearchType.ARMIJO_OR_RESIDUAL_NORM: norm_ok | armijo_ok,
                LineSearchType.SIMPLE: simple_ok,
            }[ls_type]
            accept = pending & (accept | last)
        c_out[accept] = c_try[accept]
        r_out[accept] = r_try[accept]
        terms_out = _select_terms(terms_out, t, accept)
        used[accept] = k
        pending &= ~accept
        if not np.any(pending):
            break
        lam *= params.line_search_alpha
    return c_out, r_out, terms_out, used


def _select_terms(old: PotentialTerms, new: PotentialTerms, pick_new: np.ndarray) -> PotentialTerms:
    if np.all(pick_new):
        return new
    if not np.any(pick_new):
        return old
    return PotentialTerms(
        energy=np.where(pick_new, new.energy, old.energy),
        gradient=np.where(pick_new[:, None, None], new.gradient, old.gradient),
        hessian_diag=np.where(pick_new[:, None, None, None], new.hessian_diag, old.hessian_diag),
        couplings=_merge_couplings(new.couplings, old.couplings, pick_new),
    )
