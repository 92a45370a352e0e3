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

from ..potentials.base import Coupling, PotentialTerms

__all__ = ["ContactRows", "CouplingSlots", "assemble_rigid_contact"]


@dataclass(frozen=True)
class ContactRows:
    """Per active (world, pair, sample) row data of one contact evaluation, R rows.

    Vectors and matrices are component-first: (3, R) and (3, 3, R) (row r is ``x[:, r]``, ``h[:, :, r]``).
    """

    world: np.ndarray  # (R,) int
    pair: np.ndarray  # (R,) int, index into the pair table
    body_a: np.ndarray  # (R,) colliding body
    body_b: np.ndarray  # (R,) collider body
    sample: np.ndarray  # (R,) row in the potential's (body-sorted) sample arrays
    weight: np.ndarray  # (R,) m^2
    x: np.ndarray  # (3, R) m, world sample position
    r: np.ndarray  # (3, R) m, x - c_A
    u: np.ndarray  # (3, R) m, x - c_B
    phi: np.ndarray  # (R,) m, signed distance
    normal_world: np.ndarray  # (3, R) world unit collider normal
    energy: np.ndarray  # (R,) J, weighted sample energy
    g: np.ndarray  # (3, R) N, world gradient of the weighted energy w.r.t. v (force on A = -g)
    h: np.ndarray | None  # (3, 3, R) N/m, world Hessian w.r.t. v (symmetric)
    exact_hessian: bool  # add the second-order terms of v(q)


@dataclass(frozen=True)
class CouplingSlots:
    """One off-diagonal block per unordered pair of dynamic bodies; both pair directions accumulate into it."""

    body_a: np.ndarray  # (S,) int, the smaller body index
    body_b: np.ndarray  # (S,) int
    slot_of_pair: np.ndarray  # (P,) int, slot of each ordered contact pair, -1 when a body is static
    flip_of_pair: np.ndarray  # (P,) bool, the pair's colliding body is the slot's body_b


def _cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a x b over the first axis of component-first arrays (a: (3, ...), b: (3, ...), broadcasting)."""
    return np.stack([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]])


def _times_skew(m: np.ndarray, v: np.ndarray) -> np.ndarray:
    """M skew(v) for M (3, 3, R): row i of the product is (row i of M) x v."""
    return np.stack([m[:, 1] * v[2] - m[:, 2] * v[1], m[:, 2] * v[0] - m[:, 0] * v[2], m[:, 0] * v[1] - m[:, 1] * v[0]],
                    axis=1)


def _skew_times(v: np.ndarray, m: np.ndarray) -> np.ndarray:
    """skew(v) M for M (3, 3, R): column j of the product is v x (column j of M)."""
    return np.stack([v[1] * m[2] - v[2] * m[1], v[2] * m[0] - v[0] * m[2], v[0] * m[1] - v[1] * m[0]])


def _skew(v: np.ndarray) -> np.ndarray:
    zero = np.zeros(v.shape[1:])
    return np.stack([np.stack([zero, -v[2], v[1]]), np.stack([v[2], zero, -v[0]]), np.stack([-v[1], v[0], zero])])


def _scatter_rows(num_targets: int, index: np.ndarray, values: np.ndarray) -> np.ndarray:
    """(num_targets, C) sums of the columns of ``values`` (C, R) per target ``index`` (R,) (repeats accumulate in
    row order): one bincount over all C components at once."""
    c = values.shape[0]
    flat = (np.arange(c)[:, None] * num_targets + index[None, :]).ravel()
    return np.bincount(flat, weights=values.reshape(-1), minlength=c * num_targets).reshape(c, num_targets).T


def assemble_rigid_contact(
    rows: ContactRows, num_worlds: int, num_bodies: int, slots: CouplingSlots, want_hessian: bool
) -> PotentialTerms:
    """Sum the rows into `PotentialTerms` (energy (W,), gradient (W, N, 6), diagonal and coupling blocks).

    Both bodies of a row have the same form: with the lever v (r for A, u for B) and the sign s (+1 for A, -1
    for B), J = s [1, -skew(v)], so the gradient is (s g, v x (s g)) and the diagonal block
    [[H, -H S_v], [-(H S_v)^T, -S_v H S_v]] (the sign cancels). The A and B rows are therefore stacked and
    processed together.
    """
    n = num_bodies
    terms = PotentialTerms.zeros(num_worlds, n, want_hessian)
    num_slots = slots.body_a.shape[0]
    if rows.world.size == 0:
        return terms
    terms.energy[:] = np.bincount(rows.world, weights=rows.energy, minlength=num_worlds)
    g, r, u = rows.g, rows.r, rows.u
    num_rows = g.shape[1]
    targets = num_worlds * n
    base = rows.world * n
    index = np.concatenate([base + rows.body_a, base + rows.body_b])  # A rows, then B rows
    lever = np.concatenate([r, u], axis=1)
    force = np.concatenate([g, -g], axis=1)
    grad_rows = np.concatenate([force, _cross(lever, force)])
    terms.gradient.reshape(targets, 6)[:] = _scatter_rows(targets, index, grad_rows)
    if not want_hessian:
        return terms

    # J^T H J with S_v = skew(v); H is symmetric, so S H = -(H S)^T.
    hw = rows.h
    h2 = np.concatenate([hw, hw], axis=2)
    h_sv = _times_skew(h2, lever)  # [H S_r | H S_u]
    diag_rows = np.empty((6, 6, 2 * num_rows))
    diag_rows[:3, :3] = h2
    np.negative(h_sv, out=diag_rows[:3, 3:])
    diag_rows[3:, :3] = diag_rows[:3, 3:].transpose(1, 0, 2)
    np.negative(_skew_times(lever, h_sv), out=diag_rows[3:, 3:])
    if rows.exact_hessian:
        g2 = np.concatenate([g, g], axis=1)
        gv = g2[:, None] * lever[None, :]
        g_v = (g2[0] * lever[0] + g2[1] * lever[1]) + g2[2] * lever[2]
        rr = diag_rows[3:, 3:]
        rr += 0.5 * (gv + gv.transpose(1, 0, 2))
        for i in range(3):
            rr[i, i] -= g_v
        sg = _skew(g)
        diag_rows[:3, 3:, num_rows:] += sg
        diag_rows[3:, :3, num_rows:] -= sg
    terms.hessian_diag.reshape(targets, 36)[:] = _scatter_rows(targets, index, diag_rows.reshape(36, -1))
    slot = slots.slot_of_pair[rows.pair]
    coupled = np.flatnonzero(slot >= 0)
    if coupled.size:
        # H_AB = J_A^T H J_B = [[-H, H S_u], [(H S_r)^T, S_r H S_u]] (+ exact terms)
        h_sr = h_sv[..., :num_rows].take(coupled, axis=2)
        h_su = h_sv[..., num_rows:].take(coupled, axis=2)
        h_ab = np.empty((6, 6, coupled.size))
        np.negative(hw.take(coupled, axis=2), out=h_ab[:3, :3])
        h_ab[:3, 3:] = h_su
        h_ab[3:, :3] = h_sr.transpose(1, 0, 2)
        h_ab[3:, 3:] = _skew_times(r.take(coupled, axis=1), h_su)
        if rows.exact_hessian:
            gc = g.take(coupled, axis=1)
            sg = _skew(gc)
            h_ab[:3, 3:] -= sg
            h_ab[3:, 3:] -= _skew_times(r.take(coupled, axis=1), sg)
        flip = slots.flip_of_pair[rows.pair[coupled]]
        if flip.any():
            h_ab = np.where(flip, h_ab.transpose(1, 0, 2), h_ab)
        # Only when some row couples two dynamic bodies: without couplings the Newton system stays
        # block-diagonal (one 6x6 solve per body instead of a dense solve per world).
        block = np.zeros((num_worlds, num_slots, 6, 6))
        terms.couplings.append(Coupling(slots.body_a.copy(), slots.body_b.copy(), block))
        target = block.reshape(num_worlds * num_slots, 36)
        target[:] = _scatter_rows(num_worlds * num_slots, rows.world[coupled] * num_slots + slot[coupled],
                                  h_ab.reshape(36, -1))
    return terms
