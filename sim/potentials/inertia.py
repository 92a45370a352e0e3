"""Inertial terms of the stage problem (seed page "Discretization", digest 2.4 and 2.5).

* ``TranslationalInertia``: Phi = m/(2 dt_i^2) |c - c~|^2, c~ = c0 + dt_i v0.
* ``RotationalInertia`` (default, incremental potential, Ferguson et al. 2021 with the Lie-algebra linearization of
  Romanya-Serrasolsas et al. 2025): Phi = -tr(R W R~^T) + C with W = J / dt_i^2 and the predictor
  R~ = R0 + dt_i (skew(omega0) + S0) R0 (generally not a rotation).
* ``NewtonEulerInertia`` (experimental, not a potential): r = M (omega - omega0)/dt_i + omega x (M omega),
  M = R I R^T, omega from the stage finite difference; Jacobian approximated by M / dt_i^2.

Static actors get zero rows; the solver pins them.
"""

from __future__ import annotations

import numpy as np

from .. import lie
from ..jit import kernel_array
from ..kernels import inertia as kernels
from ..kernels import loads as load_kernels
from .base import Potential, PotentialTerms, StageContext


def project_psd_3x3(h: np.ndarray) -> np.ndarray:
    """Clamp negative eigenvalues of symmetric (..., 3, 3) blocks to zero.

    Blocks that are already positive definite (Sylvester: all leading minors > 0) are returned as they are; only
    the others go through the eigen-decomposition, which dominates the cost otherwise.
    """
    m1 = h[..., 0, 0]
    m2 = h[..., 0, 0] * h[..., 1, 1] - h[..., 0, 1] * h[..., 1, 0]
    m3 = np.linalg.det(h)
    bad = ~((m1 > 0) & (m2 > 0) & (m3 > 0))
    if not np.any(bad):
        return h
    out = h.copy()
    vals, vecs = np.linalg.eigh(h[bad])
    out[bad] = (vecs * np.maximum(vals, 0.0)[..., None, :]) @ np.swapaxes(vecs, -1, -2)
    return out


class TranslationalInertia(Potential):
    def evaluate(self, ctx: StageContext, com_position, rotation, want_hessian):
        arrays = ctx.model.bodies.kernel_arrays
        num_worlds, num_bodies = com_position.shape[:2]
        terms = PotentialTerms.zeros(num_worlds, num_bodies, want_hessian)
        kernels.translational_inertia(
            arrays.mass, arrays.is_static, float(ctx.stage_dt), kernel_array(com_position),
            kernel_array(ctx.com_position0), kernel_array(ctx.linear_velocity0), want_hessian, terms.energy,
            terms.gradient, _hessian_out(terms))
        return terms

    def evaluate_numpy(self, ctx: StageContext, com_position, rotation, want_hessian):
        """The numpy oracle of `evaluate` (tests compare them)."""
        bodies = ctx.model.bodies
        dyn = ~bodies.is_static
        num_worlds, num_bodies = com_position.shape[:2]
        terms = PotentialTerms.zeros(num_worlds, num_bodies, want_hessian)
        stiffness = np.where(dyn, bodies.mass, 0.0) / ctx.stage_dt**2  # (N,) kg/s^2
        # Phi = k/2 |c - c~|^2  ->  grad = k (c - c~),  Hessian = k I
        diff = com_position - (ctx.com_position0 + ctx.stage_dt * ctx.linear_velocity0)
        terms.energy = 0.5 * np.einsum("n,wni,wni->w", stiffness, diff, diff)
        terms.gradient[..., :3] = stiffness[None, :, None] * diff
        if want_hessian:
            terms.hessian_diag[..., 0, 0] = stiffness
            terms.hessian_diag[..., 1, 1] = stiffness
            terms.hessian_diag[..., 2, 2] = stiffness
        return terms


class RotationalInertia(Potential):
    """The default incremental potential; bodies with the Newton-Euler flag are skipped (see NewtonEulerInertia)."""

    def evaluate(self, ctx: StageContext, com_position, rotation, want_hessian):
        arrays = ctx.model.bodies.kernel_arrays
        num_worlds, num_bodies = com_position.shape[:2]
        terms = PotentialTerms.zeros(num_worlds, num_bodies, want_hessian)
        kernels.rotational_inertia(
            arrays.second_moment, arrays.rotational_inertia, float(ctx.stage_dt), kernel_array(rotation),
            kernel_array(ctx.rotation0), kernel_array(ctx.angular_velocity0), kernel_array(ctx.velocity_sym0),
            want_hessian, bool(ctx.psd_project), terms.energy, terms.gradient, _hessian_out(terms))
        return terms

    def evaluate_numpy(self, ctx: StageContext, com_position, rotation, want_hessian):
        """The numpy oracle of `evaluate` (tests compare them)."""
        bodies = ctx.model.bodies
        active = ~bodies.is_static & ~bodies.newton_euler
        num_worlds, num_bodies = com_position.shape[:2]
        terms = PotentialTerms.zeros(num_worlds, num_bodies, want_hessian)
        idx = np.flatnonzero(active)  # only these rows are non-zero (static rows stay zero, not projected)
        if idx.size == 0:
            return terms
        weight = bodies.second_moment[idx] / ctx.stage_dt**2  # W = J/dt^2
        pred = ctx.rotation0[:, idx] + ctx.stage_dt * (
            (lie.skew(ctx.angular_velocity0[:, idx]) + ctx.velocity_sym0[:, idx]) @ ctx.rotation0[:, idx])
        # A = R W R~^T. Left perturbation R <- exp(skew(t)) R:
        #   d/dt tr(exp(skew t) A) = -2 axial(A);  d^2/dt^2 = sym(A) - tr(A) 1  (lie.h identities)
        # Phi = -tr(A) + C, with C chosen so that Phi(R~ if it were a rotation) = 0:
        #   Phi = 1/2 tr((R - R~) W (R - R~)^T) = 1/2 tr(W) + 1/2 tr(R~ W R~^T) - tr(A).
        big_a = rotation[:, idx] @ weight @ np.swapaxes(pred, -1, -2)
        tr_a = np.trace(big_a, axis1=-2, axis2=-1)
        const = 0.5 * np.trace(weight, axis1=-2, axis2=-1) + 0.5 * np.einsum("wnij,njk,wnik->wn", pred, weight, pred)
        terms.energy = np.sum(const - tr_a, axis=1)
        terms.gradient[:, idx, 3:] = 2.0 * lie.axial(big_a)
        if want_hessian:
            eye = np.eye(3)
            m = -big_a
            hess = lie.sym(m) - np.trace(m, axis1=-2, axis2=-1)[..., None, None] * eye
            if ctx.psd_project:
                hess = project_psd_3x3(hess)
            terms.hessian_diag[:, idx, 3:, 3:] = hess
        return terms


class NewtonEulerInertia(Potential):
    """Experimental Newton-Euler residual for bodies flagged with ``enable_newton_euler_inertia``.

    Not derived from a potential: the gradient slot carries the residual and ``energy`` is the merit
    1/2 dw^T M dw (digest 2.5), used only by energy-based line searches.
    """

    def is_active(self, ctx: StageContext) -> bool:
        return bool(np.any(ctx.model.bodies.newton_euler))

    def evaluate(self, ctx: StageContext, com_position, rotation, want_hessian):
        arrays = ctx.model.bodies.kernel_arrays
        num_worlds, num_bodies = com_position.shape[:2]
        terms = PotentialTerms.zeros(num_worlds, num_bodies, want_hessian)
        load_kernels.newton_euler_inertia(
            arrays.inertia, arrays.newton_euler, float(ctx.stage_dt), kernel_array(rotation),
            kernel_array(ctx.rotation0), kernel_array(ctx.angular_velocity0), want_hessian, terms.energy,
            terms.gradient, _hessian_out(terms))
        return terms

    def evaluate_numpy(self, ctx: StageContext, com_position, rotation, want_hessian):
        """The numpy oracle of `evaluate` (tests compare them)."""
        bodies = ctx.model.bodies
        active = ~bodies.is_static & bodies.newton_euler
        num_worlds, num_bodies = com_position.shape[:2]
        terms = PotentialTerms.zeros(num_worlds, num_bodies, want_hessian)
        if not np.any(active):
            return terms
        inertia = np.where(active[:, None, None], bodies.inertia, 0.0)
        m_world = rotation @ inertia @ np.swapaxes(rotation, -1, -2)
        fd = (rotation - ctx.rotation0) / ctx.stage_dt @ np.swapaxes(rotation, -1, -2)
        omega = lie.axial(fd)
        d_omega = omega - ctx.angular_velocity0
        m_omega = np.einsum("wnij,wnj->wni", m_world, omega)
        residual = np.einsum("wnij,wnj->wni", m_world, d_omega) / ctx.stage_dt + np.cross(omega, m_omega)
        terms.gradient[..., 3:] = residual
        terms.energy = 0.5 * np.einsum("wni,wnij,wnj->w", d_omega, m_world, d_omega)
        if want_hessian:
            terms.hessian_diag[..., 3:, 3:] = m_world / ctx.stage_dt**2
        return terms


_NO_HESSIAN = np.zeros((0, 0, 6, 6))  # the kernels' Hessian output when none is asked for (never written)


def _hessian_out(terms: PotentialTerms) -> np.ndarray:
    return _NO_HESSIAN if terms.hessian_diag is None else terms.hessian_diag
