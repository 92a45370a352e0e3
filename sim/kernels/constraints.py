"""Pivot constraint kernels: per-constraint values and Jacobians of the pivot types, and the compliant-energy
assembly shared by every one-actor type (sim/constraints/base.py has the formulas; its numpy `local_terms` is
the oracle). Worlds are the outer loop; ``world_rows`` (W,) maps the evaluated worlds to the rows of the
per-world target arrays (the batch indices of ``ctx.world_index``)."""

from __future__ import annotations

import numpy as np

from ..jit import inner_kernel, kernel
from .so3 import so3_log

_SERIES_ANGLE = 0.3  # rotation_log._SERIES_ANGLE: beta by its series below it


@inner_kernel  # called from kernels only (the tests call it through a jitted shim)
def log_inverse_jacobian(phi, out):
    """Jl^{-1}(phi) = 1 - K/2 + beta K^2, K = skew(phi), beta(t) = 1/t^2 - cot(t/2)/(2t) (series below 0.3)."""
    t2 = phi[0] * phi[0] + phi[1] * phi[1] + phi[2] * phi[2]
    angle = np.sqrt(t2)
    if angle < _SERIES_ANGLE:
        beta = 1.0 / 12.0 + t2 * (1.0 / 720.0 + t2 * (1.0 / 30240.0 + t2 * (1.0 / 1209600.0 + t2 / 47900160.0)))
    else:
        half = 0.5 * angle
        beta = 1.0 / (angle * angle) - (np.cos(half) / np.sin(half)) / (2.0 * angle)
    x, y, z = phi[0], phi[1], phi[2]
    # K = [[0, -z, y], [z, 0, -x], [-y, x, 0]]; K^2 = phi phi^T - t^2 1
    out[0, 0] = 1.0 + beta * (x * x - t2)
    out[0, 1] = 0.5 * z + beta * (x * y)
    out[0, 2] = -0.5 * y + beta * (x * z)
    out[1, 0] = -0.5 * z + beta * (y * x)
    out[1, 1] = 1.0 + beta * (y * y - t2)
    out[1, 2] = 0.5 * x + beta * (y * z)
    out[2, 0] = 0.5 * y + beta * (z * x)
    out[2, 1] = -0.5 * x + beta * (z * y)
    out[2, 2] = 1.0 + beta * (z * z - t2)


@inner_kernel
def arm(rot, w, n, arm_local, c):
    """(R_n r_c) of world w: a body's rotation applied to constraint c's CoM-frame arm, summed left to right."""
    a0 = rot[w, n, 0, 0] * arm_local[c, 0] + rot[w, n, 0, 1] * arm_local[c, 1] + rot[w, n, 0, 2] * arm_local[c, 2]
    a1 = rot[w, n, 1, 0] * arm_local[c, 0] + rot[w, n, 1, 1] * arm_local[c, 1] + rot[w, n, 1, 2] * arm_local[c, 2]
    a2 = rot[w, n, 2, 0] * arm_local[c, 0] + rot[w, n, 2, 1] * arm_local[c, 1] + rot[w, n, 2, 2] * arm_local[c, 2]
    return a0, a1, a2


@inner_kernel
def compliance_multiplier(g, g_old, w, c, k, d, gbar, damped):
    """(energy U + d/(2 dt)|dg|^2 (nan when |g|^2 is not finite), kappa, lam) of constraint c in world w (base.py's
    chain rule: lam = kappa g + (d/dt) dg): U = k/2 |g|^2, or k gbar rho(|g|) with the IPCstepC1 ramp of width gbar
    when saturation gbar > 0. Shared by the one- and two-actor compliance kernels."""
    norm2 = g[w, c, 0] * g[w, c, 0] + g[w, c, 1] * g[w, c, 1] + g[w, c, 2] * g[w, c, 2]
    finite = np.isfinite(norm2)
    dissipation = 0.0
    if damped:
        dg2 = 0.0
        for i in range(3):
            dgi = g[w, c, i] - g_old[w, c, i]
            dg2 += dgi * dgi
        dissipation = 0.5 * d * dg2
    if gbar > 0.0:  # step_c1(|g|, gbar): value x r (1 - r/3) / x - t/3, rho'/x = (2 - r)/t / 1/x
        x = np.sqrt(norm2) if finite else 0.0
        r = x / gbar
        max_force = k * gbar
        if x >= gbar:
            elastic = max_force * (x - gbar / 3.0)
            kappa = max_force * (1.0 / x if x > 0.0 else 0.0)
        else:
            elastic = max_force * (x * r * (1.0 - r / 3.0))
            kappa = max_force * ((2.0 - r) / gbar)
    else:
        elastic = 0.5 * k * norm2
        kappa = k
    energy = (elastic + dissipation) if finite else np.nan
    lam0, lam1, lam2 = kappa * g[w, c, 0], kappa * g[w, c, 1], kappa * g[w, c, 2]
    if damped:
        lam0 += d * (g[w, c, 0] - g_old[w, c, 0])
        lam1 += d * (g[w, c, 1] - g_old[w, c, 1])
        lam2 += d * (g[w, c, 2] - g_old[w, c, 2])
    return energy, kappa, lam0, lam1, lam2


# The kernels below allocate nothing and are compiled without NRT: with it, each call increfs and decrefs every
# array argument, which cost more than these kernels' arithmetic when the compiled Newton calls them per world.
@kernel(_nrt=False)
def point_pivot_values(com, rot, actors, world_rows, arm_local, target, with_jacobian, g_out, jac_out):
    """RigidPivotPosition: g = c + R r - p_hat, J = [1, -skew(R r)] (r = x_local - com_local, (C, 3))."""
    for w in range(com.shape[0]):
        tw = world_rows[w]
        for c in range(actors.shape[0]):
            n = actors[c]
            a0, a1, a2 = arm(rot, w, n, arm_local, c)
            g_out[w, c, 0] = com[w, n, 0] + a0 - target[tw, c, 0]
            g_out[w, c, 1] = com[w, n, 1] + a1 - target[tw, c, 1]
            g_out[w, c, 2] = com[w, n, 2] + a2 - target[tw, c, 2]
            if with_jacobian:
                for i in range(3):
                    for j in range(6):
                        jac_out[w, c, i, j] = 0.0
                    jac_out[w, c, i, i] = 1.0
                # -skew(a) = [[0, a2, -a1], [-a2, 0, a0], [a1, -a0, 0]]
                jac_out[w, c, 0, 4] = a2
                jac_out[w, c, 0, 5] = -a1
                jac_out[w, c, 1, 3] = -a2
                jac_out[w, c, 1, 5] = a0
                jac_out[w, c, 2, 3] = a1
                jac_out[w, c, 2, 4] = -a0


@kernel
def rotation_pivot_values(rot, actors, world_rows, local_rotation, target, with_jacobian, g_out, jac_out):
    """RigidPivotRotation: g = Log(R R_l R_hat^T), J = [0, Jl^{-1}(g)]. The numpy Newton's entry point:
    `rotation_pivot_values_into` with its work arrays allocated here."""
    rotation_pivot_values_into(rot, actors, world_rows, local_rotation, target, with_jacobian, g_out, jac_out,
                               np.empty((4, 3, 3)))


# Called by address from newton_stage with its work arrays passed in: it allocates nothing (the four arrays it
# allocated per call cost their malloc, free and reference counting once per world and evaluation).
@kernel(no_cpython_wrapper=True, _nrt=False)
def rotation_pivot_values_into(rot, actors, world_rows, local_rotation, target, with_jacobian, g_out, jac_out,
                               work):
    """`rotation_pivot_values` with its work arrays ``work`` (4, 3, 3)."""
    m, rl, jinv = work[0], work[1], work[2]
    phi = work[3, 0]
    for w in range(rot.shape[0]):
        tw = world_rows[w]
        for c in range(actors.shape[0]):
            n = actors[c]
            for i in range(3):
                for j in range(3):
                    rl[i, j] = rot[w, n, i, 0] * local_rotation[c, 0, j] + rot[w, n, i, 1] * local_rotation[c, 1, j] \
                        + rot[w, n, i, 2] * local_rotation[c, 2, j]
            for i in range(3):
                for j in range(3):
                    m[i, j] = rl[i, 0] * target[tw, c, j, 0] + rl[i, 1] * target[tw, c, j, 1] \
                        + rl[i, 2] * target[tw, c, j, 2]
            so3_log(m, phi)
            for i in range(3):
                g_out[w, c, i] = phi[i]
            if with_jacobian:
                log_inverse_jacobian(phi, jinv)
                for i in range(3):
                    for j in range(3):
                        jac_out[w, c, i, j] = 0.0
                        jac_out[w, c, i, 3 + j] = jinv[i, j]


@kernel(_nrt=False)
def one_actor_compliance(g, g_old, jac, actors, stiffness, damping_over_dt, saturation, damped, want_hessian,
                         energy_out, grad_out, hess_out):
    """Add Phi = U(g) + d/(2 dt) |g - g_old|^2 of every constraint into energy_out (W,), grad_out (W, N, 6) and
    the Gauss-Newton Hessian (kappa + d/dt) J^T J into hess_out (W, N, 6, 6) (module docstring of base.py):
    U = k/2 |g|^2, or k gbar rho(|g|) with the IPCstepC1 ramp of width gbar when saturation gbar > 0."""
    for w in range(g.shape[0]):
        e = 0.0
        for c in range(actors.shape[0]):
            d = damping_over_dt[c]
            energy, kappa, lam0, lam1, lam2 = compliance_multiplier(g, g_old, w, c, stiffness[c], d, saturation[c],
                                                                    damped)
            e += energy
            n = actors[c]
            for j in range(6):
                grad_out[w, n, j] += jac[w, c, 0, j] * lam0 + jac[w, c, 1, j] * lam1 + jac[w, c, 2, j] * lam2
            if want_hessian:
                s = kappa + d
                for i in range(6):
                    for j in range(6):
                        hess_out[w, n, i, j] += s * (jac[w, c, 0, i] * jac[w, c, 0, j] + jac[w, c, 1, i] * jac[w, c, 1, j]
                                                     + jac[w, c, 2, i] * jac[w, c, 2, j])
        energy_out[w] += e
