"""Rigid-body assembly of per-sample contact terms into body gradients and Hessian blocks (digest 5.3,
"Rigid-body assembly"; reference ``mochi_rigid.cpp``).

Input per active sample (row): the world gradient g = R_B dE/dY and Hessian H = R_B (d^2E/dY^2) R_B^T of the
weighted sample energy with respect to v = R_B Y = x - c_B, with x = c_A + R_A X the sample's world position,
r = x - c_A and u = x - c_B. Perturbing the DoFs q = (dc, dtheta) of both bodies (c += dc,
R <- exp(skew(dtheta)) R),

    v = exp(-skew(theta_B)) (u + dc_A + (exp(skew(theta_A)) - 1) r - dc_B)

so to first order dv = J_A q_A + J_B q_B with J_A = [1, -skew(r)] and J_B = [-1, skew(u)]:

    grad_A = J_A^T g = (g, r x g)            grad_B = J_B^T g = (-g, -u x g)

(the force on A is f = -g at x, the force on B is +g: balanced), and the Gauss-Newton blocks

    H_AA = J_A^T H J_A,   H_BB = J_B^T H J_B,   H_AB = J_A^T H J_B.

The exact Hessian (``exact_hessian`` rows) adds g . d^2v/dq^2, from the second-order terms of v:
1/2 theta_A x (theta_A x r), 1/2 theta_B x (theta_B x u), -theta_B x dc_A, +theta_B x dc_B and
-theta_B x (theta_A x r), which give

    AA rot-rot:  sym(g r^T) - (g . r) 1        BB rot-rot:  sym(g u^T) - (g . u) 1
    BB trans-rot: skew(g) (rot-trans: its transpose -skew(g))
    AB trans_A-rot_B: -skew(g)                  AB rot_A-rot_B: -skew(r) skew(g)

Rotational blocks are the symmetric second derivative of theta -> E(exp(skew(theta)) R) at theta = 0.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..lie import skew
from ..potentials.base import Coupling, PotentialTerms

__all__ = ["ContactRows", "CouplingSlots", "assemble_rigid_contact"]


@dataclass(frozen=True)
class ContactRows:
    """Per active (world, pair, sample) row data of one contact evaluation, R rows."""

    world: np.ndarray  # (R,) int
    pair: np.ndarray  # (R,) int, index into the pair table
    body_a: np.ndarray  # (R,) colliding body
    body_b: np.ndarray  # (R,) collider body
    sample: np.ndarray  # (R,) row in the potential's (body-sorted) sample arrays
    weight: np.ndarray  # (R,) m^2
    x: np.ndarray  # (R, 3) m, world sample position
    r: np.ndarray  # (R, 3) m, x - c_A
    u: np.ndarray  # (R, 3) m, x - c_B
    phi: np.ndarray  # (R,) m, signed distance
    normal_world: np.ndarray  # (R, 3) world unit collider normal
    energy: np.ndarray  # (R,) J, weighted sample energy
    g: np.ndarray  # (R, 3) N, world gradient of the weighted energy w.r.t. v (force on A = -g)
    h: np.ndarray | None  # (R, 3, 3) N/m, world Hessian w.r.t. v
    exact_hessian: bool  # add the second-order terms of v(q)


@dataclass(frozen=True)
class CouplingSlots:
    """One off-diagonal block per unordered pair of dynamic bodies; both pair directions accumulate into it."""

    body_a: np.ndarray  # (S,) int, the smaller body index
    body_b: np.ndarray  # (S,) int
    slot_of_pair: np.ndarray  # (P,) int, slot of each ordered contact pair, -1 when a body is static
    flip_of_pair: np.ndarray  # (P,) bool, the pair's colliding body is the slot's body_b


def _btrans(m: np.ndarray) -> np.ndarray:
    return np.swapaxes(m, -1, -2)


def _blocks(tt: np.ndarray, tr: np.ndarray, rt: np.ndarray, rr: np.ndarray) -> np.ndarray:
    """(R, 6, 6) from four (R, 3, 3) blocks [[tt, tr], [rt, rr]]."""
    out = np.empty(tt.shape[:-2] + (6, 6))
    out[..., :3, :3], out[..., :3, 3:], out[..., 3:, :3], out[..., 3:, 3:] = tt, tr, rt, rr
    return out


def _scatter_add(target: np.ndarray, index: np.ndarray, values: np.ndarray) -> None:
    """target[index[i]] += values[i] for a 2-D target (rows may repeat); bincount per column (faster than add.at)."""
    m = target.shape[0]
    for col in range(values.shape[1]):  # loop over <= 36 matrix entries, never over samples
        target[:, col] += np.bincount(index, weights=values[:, col], minlength=m)


def assemble_rigid_contact(
    rows: ContactRows, num_worlds: int, num_bodies: int, slots: CouplingSlots, want_hessian: bool
) -> PotentialTerms:
    """Sum the rows into `PotentialTerms` (energy (W,), gradient (W, N, 6), diagonal and coupling blocks)."""
    n = num_bodies
    terms = PotentialTerms.zeros(num_worlds, n, want_hessian)
    num_slots = slots.body_a.shape[0]
    if want_hessian and num_slots:
        block = np.zeros((num_worlds, num_slots, 6, 6))
        terms.couplings.append(Coupling(slots.body_a.copy(), slots.body_b.copy(), block))
    if rows.world.size == 0:
        return terms
    terms.energy[:] = np.bincount(rows.world, weights=rows.energy, minlength=num_worlds)
    g, r, u = rows.g, rows.r, rows.u
    ia = rows.world * n + rows.body_a
    ib = rows.world * n + rows.body_b
    grad = terms.gradient.reshape(num_worlds * n, 6)
    _scatter_add(grad, ia, np.concatenate([g, np.cross(r, g)], axis=1))
    _scatter_add(grad, ib, np.concatenate([-g, -np.cross(u, g)], axis=1))
    if not want_hessian:
        return terms

    # J^T H J with S_v = skew(v); H is symmetric, so S H = -(H S)^T.
    hw = rows.h
    sr, su = skew(r), skew(u)
    h_sr, h_su = hw @ sr, hw @ su
    sr_h, su_h = -_btrans(h_sr), -_btrans(h_su)
    h_aa = _blocks(hw, -h_sr, sr_h, -(sr @ h_sr))
    h_bb = _blocks(hw, -h_su, su_h, -(su @ h_su))
    h_ab = _blocks(-hw, h_su, -sr_h, sr @ h_su)
    if rows.exact_hessian:
        eye = np.eye(3)
        sg = skew(g)
        gr = g[:, :, None] * r[:, None, :]
        gu = g[:, :, None] * u[:, None, :]
        h_aa[:, 3:, 3:] += 0.5 * (gr + _btrans(gr)) - np.einsum("ri,ri->r", g, r)[:, None, None] * eye
        h_bb[:, 3:, 3:] += 0.5 * (gu + _btrans(gu)) - np.einsum("ri,ri->r", g, u)[:, None, None] * eye
        h_bb[:, :3, 3:] += sg
        h_bb[:, 3:, :3] -= sg
        h_ab[:, :3, 3:] -= sg
        h_ab[:, 3:, 3:] -= sr @ sg
    diag = terms.hessian_diag.reshape(num_worlds * n, 36)
    _scatter_add(diag, ia, h_aa.reshape(-1, 36))
    _scatter_add(diag, ib, h_bb.reshape(-1, 36))
    slot = slots.slot_of_pair[rows.pair]
    coupled = np.flatnonzero(slot >= 0)
    if coupled.size:
        flip = slots.flip_of_pair[rows.pair[coupled]]
        block = np.where(flip[:, None, None], _btrans(h_ab[coupled]), h_ab[coupled])
        target = terms.couplings[0].block.reshape(num_worlds * num_slots, 36)
        _scatter_add(target, rows.world[coupled] * num_slots + slot[coupled], block.reshape(-1, 36))
    return terms
