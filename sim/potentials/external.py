"""Gravity and external loads (seed page "Continuous Model", digest 2.3).

* Gravity: U = -m g . c on dynamic bodies with ``has_gravity``.
* DoF loads (``set_external_forces_on_dofs``): a world force f on DoFs 0-2 and a world torque tau on DoFs 3-5,
  U = -f . c - tau . theta, theta = log(R R0^T) the stage rotation (its gradient at the iterate is -tau to first
  order; the torque enters the residual exactly as -tau, as a generalized force does).
* Offset forces: a constant world force f at body-frame offset r from the CoM, U = -f . c - f . R r.
  Rotational gradient (left perturbation): -(R r) x f; Hessian -1/2 (f p^T + p f^T) + (f . p) 1 with p = R r.
"""

from __future__ import annotations

import numpy as np

from .. import lie
from ..jit import kernel_array
from ..kernels import inertia as kernels
from ..kernels import loads as load_kernels
from .base import Potential, PotentialTerms, StageContext
from .inertia import _hessian_out, project_psd_3x3


class Gravity(Potential):
    def evaluate(self, ctx: StageContext, com_position, rotation, want_hessian):
        arrays = ctx.model.bodies.kernel_arrays
        num_worlds, num_bodies = com_position.shape[:2]
        terms = PotentialTerms.zeros(num_worlds, num_bodies, want_hessian)
        kernels.gravity(arrays.mass, arrays.is_static, arrays.has_gravity, kernel_array(ctx.gravity),
                        kernel_array(com_position), terms.energy, terms.gradient)
        return terms

    def evaluate_numpy(self, ctx: StageContext, com_position, rotation, want_hessian):
        """The numpy oracle of `evaluate` (tests compare them)."""
        bodies = ctx.model.bodies
        num_worlds, num_bodies = com_position.shape[:2]
        terms = PotentialTerms.zeros(num_worlds, num_bodies, want_hessian)
        mass = np.where(~bodies.is_static & bodies.has_gravity, bodies.mass, 0.0)  # (N,)
        weight = mass[None, :, None] * ctx.gravity[:, None, :]  # (W, N, 3) N
        terms.energy = -np.einsum("wni,wni->w", weight, com_position)
        terms.gradient[..., :3] = -weight
        return terms


class DofLoads(Potential):
    def is_active(self, ctx: StageContext) -> bool:
        return bool(np.any(ctx.external_force))

    def evaluate(self, ctx: StageContext, com_position, rotation, want_hessian):
        num_worlds, num_bodies = com_position.shape[:2]
        terms = PotentialTerms.zeros(num_worlds, num_bodies, want_hessian)
        load_kernels.dof_loads(ctx.model.bodies.kernel_arrays.is_static, kernel_array(ctx.external_force),
                               kernel_array(com_position), kernel_array(rotation), kernel_array(ctx.rotation0),
                               terms.energy, terms.gradient)
        return terms

    def evaluate_numpy(self, ctx: StageContext, com_position, rotation, want_hessian):
        """The numpy oracle of `evaluate` (tests compare them)."""
        num_worlds, num_bodies = com_position.shape[:2]
        terms = PotentialTerms.zeros(num_worlds, num_bodies, want_hessian)
        load = np.where(ctx.model.bodies.is_static[None, :, None], 0.0, ctx.external_force)
        if not np.any(load):
            return terms
        theta = lie.log_so3(rotation @ np.swapaxes(ctx.rotation0, -1, -2))
        terms.energy = -np.einsum("wni,wni->w", load[..., :3], com_position) - np.einsum(
            "wni,wni->w", load[..., 3:], theta
        )
        terms.gradient[:] = -load
        return terms


class OffsetForces(Potential):
    def is_active(self, ctx: StageContext) -> bool:
        return ctx.offset_force is not None

    def evaluate(self, ctx: StageContext, com_position, rotation, want_hessian):
        num_worlds, num_bodies = com_position.shape[:2]
        terms = PotentialTerms.zeros(num_worlds, num_bodies, want_hessian)
        if ctx.offset_force is None:
            return terms
        load_kernels.offset_forces(
            ctx.model.bodies.kernel_arrays.is_static, kernel_array(ctx.offset_force), kernel_array(ctx.offset_local),
            kernel_array(com_position), kernel_array(rotation), want_hessian, bool(ctx.psd_project), terms.energy,
            terms.gradient, _hessian_out(terms))
        return terms

    def evaluate_numpy(self, ctx: StageContext, com_position, rotation, want_hessian):
        """The numpy oracle of `evaluate` (tests compare them)."""
        num_worlds, num_bodies = com_position.shape[:2]
        terms = PotentialTerms.zeros(num_worlds, num_bodies, want_hessian)
        if ctx.offset_force is None:
            return terms
        force = np.where(ctx.model.bodies.is_static[None, :, None, None], 0.0, ctx.offset_force)  # (W, N, K, 3)
        arm = np.einsum("wnij,nkj->wnki", rotation, ctx.offset_local)  # p = R r, (W, N, K, 3)
        terms.energy = -np.einsum("wnki,wni->w", force, com_position) - np.einsum("wnki,wnki->w", force, arm)
        terms.gradient[..., :3] = -force.sum(axis=2)
        terms.gradient[..., 3:] = -np.cross(arm, force).sum(axis=2)
        if want_hessian:
            fp = np.einsum("wnki,wnkj->wnij", force, arm)
            hess = -lie.sym(fp) + np.einsum("wnki,wnki->wn", force, arm)[..., None, None] * np.eye(3)
            if ctx.psd_project:
                hess = project_psd_3x3(hess)
            terms.hessian_diag[..., 3:, 3:] = hess
        return terms
