"""When a Newton over generalized coordinates stops: the scene's NonLinearSolverParams, or the oracle's
run-to-convergence rule.

The scene step (sim/articulated/coupled.py) follows the scene's solver settings as the rigid Newton does:
``max_iter``, ``abs_tol`` / ``rel_tol`` on per-actor weighted residuals (``PER_ACTOR_WEIGHTED``) or on the plain
norm (``GLOBAL``), and a backtracking line search of ``line_search_max_iter`` tries by ``line_search_alpha``, the
last try taken even without improvement (digest section 4). The released engine does the same for scenes with
articulations: its fidelity runs here set abs_tol = rel_tol = 1e-12, max_iter 100 to get converged trajectories
(tools/reference_runs/articulated_runs.py).

Weights. A rigid actor's are the reference's measured rule (sim/model.py `convergence_weights`). The engine's rule
for an articulation was not measured; ours generalizes the rigid one: an articulation is one actor, DoF d weighted
1 / (a_ref^2 M m_dd), with M the articulation's mass, m_dd the diagonal of its generalized mass matrix at the step
start (sum over links of m |J_c[:, d]|^2 + J_w[:, d]^T I_world J_w[:, d]) and a_ref = max(1, |g|). For one free
body this is the rigid rule (force weight 1/(m a_ref)^2; torque weight 1/(a_ref^2 m I_ii), the rigid rule's
(sqrt(I))_ii^2 replaced by I_ii, equal for a diagonal inertia), so an articulation holding itself up against gravity
has weighted residual ~1, as a resting rigid actor has exactly 1.

The oracle's rule (`Stopping()`, the defaults): stop once the largest gradient entry is <= 1e-9, at most 100
iterations, up to 30 halvings in the line search; the fidelity tests' converged runs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..params import ConvergenceMode, LineSearchType
from .kinematics import link_jacobians


@dataclass(frozen=True)
class Stopping:
    """A Newton's stopping rule. ``weights`` (W, n) and ``segments`` (A,) (each actor's first DoF) give per-actor
    weighted residuals rho_a = sqrt(sum_d w_d r_d^2); with ``weights`` None the residual is the largest |r_d|."""

    abs_tol: float = 1e-9
    rel_tol: float = 0.0
    max_iter: int = 100
    line_search_max_iter: int = 30
    line_search_alpha: float = 0.5
    step_tol: float = 1e-14  # a step that moved no DoF by more than this stops the world (round-off floor)
    weights: np.ndarray | None = None
    segments: np.ndarray | None = None

    def residuals(self, grad: np.ndarray) -> np.ndarray:
        """(W, A) per-actor residuals ((W, 1) without weights)."""
        if self.weights is None:
            return np.max(np.abs(grad), axis=1, keepdims=True)
        return np.sqrt(np.add.reduceat(self.weights * grad * grad, self.segments, axis=1))

    def converged(self, grad: np.ndarray, rho0: np.ndarray, iteration: int) -> np.ndarray:
        """(W,) every actor within abs_tol, or (after iteration 0) within rel_tol of its iteration-0 residual."""
        rho = self.residuals(grad)
        ok = rho <= self.abs_tol
        if iteration > 0 and self.rel_tol > 0:
            ok |= rho <= self.rel_tol * rho0
        return np.all(ok, axis=1)


def articulation_weights(model, q: np.ndarray, a_ref: float) -> np.ndarray:
    """(W, D) residual weights of one articulation's DoFs at pose q (module docstring)."""
    rot, _, _, jac = link_jacobians(model, q)
    s = model.second_moment
    body_inertia = np.trace(s, axis1=-2, axis2=-1)[:, None, None] * np.eye(3) - s
    world_inertia = rot @ body_inertia @ np.swapaxes(rot, -1, -2)
    lin, ang = jac[:, :, :3], jac[:, :, 3:]
    # sums of squares by elementwise products and a batched matmul: the three-operand einsum loops generically
    mgen = (model.mass[None, :, None, None] * lin * lin + ang * (world_inertia @ ang)).sum(axis=(1, 2))
    scale2 = a_ref * a_ref * float(np.sum(model.mass)) * mgen
    return np.where(scale2 > 0, 1.0 / np.where(scale2 > 0, scale2, 1.0), 1.0)


def from_solver(params, weights: np.ndarray, segments: np.ndarray) -> Stopping:
    """The scene's NonLinearSolverParams as a Stopping over DoFs with per-actor ``weights`` / ``segments``."""
    if params.convergence_mode is ConvergenceMode.GLOBAL:
        weights, segments = np.ones_like(weights), np.zeros(1, dtype=np.int64)
    return Stopping(abs_tol=float(params.abs_tol), rel_tol=float(params.rel_tol), max_iter=int(params.max_iter),
                    line_search_max_iter=(1 if params.line_search_type is LineSearchType.NONE
                                          else int(params.line_search_max_iter)),
                    line_search_alpha=float(params.line_search_alpha), weights=weights,
                    segments=np.asarray(segments, dtype=np.int64))
