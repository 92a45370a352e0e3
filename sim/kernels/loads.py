"""External loads and the experimental Newton-Euler inertia as kernels (sim/potentials/external.py and
inertia.py hold the formulas and the numpy oracles); worlds outer x bodies, into zeroed outputs."""

from __future__ import annotations

import numpy as np

from ..jit import kernel
from .inertia import store_rotation_hessian
from .so3 import so3_log


@kernel
def dof_loads(is_static, load, com, rot, rot0, energy_out, grad_out):
    """U = -f . c - tau . Log(R R0^T) per dynamic body, load (W, N, 6) = (f, tau); gradient -load."""
    m = np.empty((3, 3))
    theta = np.empty(3)
    for w in range(com.shape[0]):
        e_force = 0.0
        e_torque = 0.0
        for n in range(com.shape[1]):
            if is_static[n]:
                continue
            for i in range(3):
                for j in range(3):
                    m[i, j] = (rot[w, n, i, 0] * rot0[w, n, j, 0] + rot[w, n, i, 1] * rot0[w, n, j, 1]) \
                        + rot[w, n, i, 2] * rot0[w, n, j, 2]
            so3_log(m, theta)
            for i in range(3):
                e_force += load[w, n, i] * com[w, n, i]
                e_torque += load[w, n, 3 + i] * theta[i]
            for i in range(6):
                grad_out[w, n, i] = -load[w, n, i]
        energy_out[w] = -e_force - e_torque


@kernel
def offset_forces(is_static, force, offset_local, com, rot, want_hessian, psd_project, energy_out, grad_out,
                  hess_out):
    """U = -f . c - f . R r per force slot (force (W, N, K, 3) world, offsets r (N, K, 3) body frame); rotational
    gradient -(p x f), Hessian -sym(f p^T) + (f . p) 1 with p = R r."""
    p = np.empty(3)
    fp = np.empty((3, 3))
    h = np.empty((3, 3))
    vals = np.empty(3)
    vecs = np.empty((3, 3))
    scratch = np.empty((3, 3))
    for w in range(com.shape[0]):
        e = 0.0
        for n in range(com.shape[1]):
            for i in range(3):  # element by element: slice assignment compiles a broadcasting path
                for j in range(3):
                    fp[i, j] = 0.0
            f_dot_p = 0.0
            if not is_static[n]:
                for k in range(force.shape[2]):
                    f = force[w, n, k]
                    r = offset_local[n, k]
                    for i in range(3):
                        p[i] = (rot[w, n, i, 0] * r[0] + rot[w, n, i, 1] * r[1]) + rot[w, n, i, 2] * r[2]
                    for i in range(3):
                        e += f[i] * com[w, n, i] + f[i] * p[i]
                        grad_out[w, n, i] -= f[i]
                        f_dot_p += f[i] * p[i]
                        for j in range(3):
                            fp[i, j] += f[i] * p[j]
                    grad_out[w, n, 3] -= p[1] * f[2] - p[2] * f[1]
                    grad_out[w, n, 4] -= p[2] * f[0] - p[0] * f[2]
                    grad_out[w, n, 5] -= p[0] * f[1] - p[1] * f[0]
            if want_hessian:
                store_rotation_hessian(fp, f_dot_p, psd_project, h, vals, vecs, scratch, hess_out[w, n])
        energy_out[w] = -e


@kernel
def newton_euler_inertia(inertia, active, stage_dt, rot, rot0, omega0, want_hessian, energy_out, grad_out, hess_out):
    """Residual M (omega - omega0)/dt + omega x (M omega), M = R I R^T, omega = axial((R - R0)/dt R^T); merit
    1/2 dw^T M dw; Jacobian M / dt^2 (not a potential, digest 2.5)."""
    mw = np.empty((3, 3))
    ri = np.empty((3, 3))
    fd = np.empty((3, 3))
    omega = np.empty(3)
    dw = np.empty(3)
    m_omega = np.empty(3)
    for w in range(rot.shape[0]):
        e = 0.0
        for n in range(rot.shape[1]):
            if not active[n]:
                continue
            r = rot[w, n]
            for i in range(3):
                for j in range(3):
                    ri[i, j] = r[i, 0] * inertia[n, 0, j] + r[i, 1] * inertia[n, 1, j] + r[i, 2] * inertia[n, 2, j]
            for i in range(3):
                for j in range(3):
                    mw[i, j] = ri[i, 0] * r[j, 0] + ri[i, 1] * r[j, 1] + ri[i, 2] * r[j, 2]
                    fd[i, j] = 0.0
                    for k in range(3):
                        fd[i, j] += (r[i, k] - rot0[w, n, i, k]) / stage_dt * r[j, k]
            omega[0] = 0.5 * (fd[2, 1] - fd[1, 2])
            omega[1] = 0.5 * (fd[0, 2] - fd[2, 0])
            omega[2] = 0.5 * (fd[1, 0] - fd[0, 1])
            for i in range(3):
                dw[i] = omega[i] - omega0[w, n, i]
            for i in range(3):
                m_omega[i] = mw[i, 0] * omega[0] + mw[i, 1] * omega[1] + mw[i, 2] * omega[2]
            cross = (omega[1] * m_omega[2] - omega[2] * m_omega[1], omega[2] * m_omega[0] - omega[0] * m_omega[2],
                     omega[0] * m_omega[1] - omega[1] * m_omega[0])
            for i in range(3):
                grad_out[w, n, 3 + i] = (mw[i, 0] * dw[0] + mw[i, 1] * dw[1] + mw[i, 2] * dw[2]) / stage_dt + cross[i]
                for j in range(3):
                    e += 0.5 * dw[i] * mw[i, j] * dw[j]
                    if want_hessian:
                        hess_out[w, n, 3 + i, 3 + j] = mw[i, j] / (stage_dt * stage_dt)
        energy_out[w] = e
