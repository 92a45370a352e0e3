"""A user-written potential with its own numba kernel: a zero-length spring between points of two actors.

    E = k/2 |x_a - x_b|^2,  x = c + R p  (p: the attachment point in the actor's CoM frame)

`SpringTerm` is a `KernelTerm`: ``evaluate`` is its numpy formulation (the numpy Newton's path and the test
oracle) and ``spring_kernel`` the per-world kernel the compiled Newton calls by address, so a scene with springs
keeps the compiled path (``scene.solver_path()``). Run this file to drop a box hanging from a static anchor.

Derivatives, in the engine's DoF convention (world translation dc, left rotation increment dtheta): with
d = x_a - x_b, q = R p (per side), the force f = k d gives the gradient (f, q x f) on a and (-f, -q x f) on b.
The Hessian is J^T k J with J = [1, -skew(q)] per side (its Gauss-Newton part, positive semi-definite) plus, on the
rotation block, the term of the rotation's second order: sym(d' q^T) - (d' . q) 1 with d' = k d on a and -k d on b.
With ``project`` (psd_proj_mode ALWAYS, the default) the Gauss-Newton part alone is returned: PSD by construction.
"""

from __future__ import annotations

import numpy as np

import superdex_gym.sim as mochi
from superdex_gym.sim.potentials.base import Coupling, PotentialTerms
from superdex_gym.sim.potentials.kernel_term import KernelTerm, term_kernel


@term_kernel
def spring_kernel(floats, ints, row, c, r, c0, r0, v0, omega0, stage_dt, want_hessian, project, energy, gradient,
                  hessian, coupling):
    """floats: per spring (k, p_a (3), p_b (3)); ints: per spring (a, b). One world (leading axis 1)."""
    for s in range(ints.shape[0] // 2):
        a, b = ints[2 * s], ints[2 * s + 1]
        k = floats[7 * s]
        q = np.zeros((2, 3))  # R p per side
        for i in range(3):
            for j in range(3):
                q[0, i] += r[0, a, i, j] * floats[7 * s + 1 + j]
                q[1, i] += r[0, b, i, j] * floats[7 * s + 4 + j]
        d = np.zeros(3)
        for i in range(3):
            d[i] = (c[0, a, i] + q[0, i]) - (c[0, b, i] + q[1, i])
        energy[0] += 0.5 * k * (d[0] * d[0] + d[1] * d[1] + d[2] * d[2])
        jac = np.zeros((2, 3, 6))  # J per side: [1, -skew(q)]; the sign of side b is in `sign`
        for side in range(2):
            qx, qy, qz = q[side, 0], q[side, 1], q[side, 2]
            for i in range(3):
                jac[side, i, i] = 1.0
            jac[side, 0, 4], jac[side, 0, 5] = qz, -qy
            jac[side, 1, 3], jac[side, 1, 5] = -qz, qx
            jac[side, 2, 3], jac[side, 2, 4] = qy, -qx
        for side in range(2):
            body = a if side == 0 else b
            sign = 1.0 if side == 0 else -1.0
            for m in range(6):
                gradient[0, body, m] += sign * k * (jac[side, 0, m] * d[0] + jac[side, 1, m] * d[1]
                                                    + jac[side, 2, m] * d[2])
        if not want_hessian:
            continue
        for sa in range(2):
            for sb in range(2):
                sign = 1.0 if sa == sb else -1.0
                block = np.zeros((6, 6))
                for m in range(6):
                    for n in range(6):
                        block[m, n] = sign * k * (jac[sa, 0, m] * jac[sb, 0, n] + jac[sa, 1, m] * jac[sb, 1, n]
                                                  + jac[sa, 2, m] * jac[sb, 2, n])
                if sa == sb:
                    body = a if sa == 0 else b
                    if not project:  # the rotation's second-order term: sym(f q^T) - (f . q) 1, f = +-k d
                        f_dot_q = 0.0
                        for i in range(3):
                            f_dot_q += sign * (1.0 if sa == 0 else -1.0) * k * d[i] * q[sa, i]
                        for i in range(3):
                            for j in range(3):
                                fi = (1.0 if sa == 0 else -1.0) * k * d[i]
                                fj = (1.0 if sa == 0 else -1.0) * k * d[j]
                                block[3 + i, 3 + j] += 0.5 * (fi * q[sa, j] + q[sa, i] * fj)
                            block[3 + i, 3 + i] -= f_dot_q
                    for m in range(6):
                        for n in range(6):
                            hessian[0, body, m, n] += block[m, n]
                elif sa == 0:  # d^2 E / (d q_a d q_b) into this spring's slot
                    for m in range(6):
                        for n in range(6):
                            coupling[0, s, m, n] += block[m, n]


class SpringTerm(KernelTerm):
    """Zero-length springs between points of actor pairs (no spring joins an actor to itself)."""

    kernel = spring_kernel

    def __init__(self, scene, pairs, stiffness, points_a, points_b):
        self.scene, self.pairs = scene, [tuple(p) for p in pairs]
        if any(a == b for a, b in self.pairs):
            raise ValueError("pairs: a spring must join two different actors")
        self.stiffness = np.broadcast_to(np.asarray(stiffness, dtype=np.float64), (len(self.pairs),)).copy()
        if not np.all(np.isfinite(self.stiffness)) or np.any(self.stiffness < 0):
            raise ValueError(f"stiffness must be finite and >= 0, got {stiffness!r}")
        self.points = np.stack([np.asarray(points_a, dtype=np.float64).reshape(-1, 3),
                                np.asarray(points_b, dtype=np.float64).reshape(-1, 3)], axis=1)
        if self.points.shape != (len(self.pairs), 2, 3) or not np.all(np.isfinite(self.points)):
            raise ValueError("points_a, points_b: one finite (3,) CoM-frame point per pair")

    @property
    def actors(self):
        """(S, 2) model rows of each spring's actors (rows move when an actor is destroyed: read them each stage)."""
        return self.scene.actor_rows([actor for pair in self.pairs for actor in pair]).reshape(-1, 2)

    def pack(self, ctx):
        floats = np.concatenate([self.stiffness[:, None], self.points.reshape(-1, 6)], axis=1).ravel()
        return floats, self.actors.ravel()

    def coupling_pairs(self):
        return self.actors[:, 0], self.actors[:, 1]

    def evaluate(self, ctx, com_position, rotation, want_hessian):
        """The numpy formulation (vectorized over worlds and springs)."""
        num_worlds, n = com_position.shape[:2]
        a, b = self.actors[:, 0], self.actors[:, 1]
        q = np.stack([np.einsum("wsij,sj->wsi", rotation[:, a], self.points[:, 0]),
                      np.einsum("wsij,sj->wsi", rotation[:, b], self.points[:, 1])], axis=2)  # (W, S, 2, 3)
        d = (com_position[:, a] + q[:, :, 0]) - (com_position[:, b] + q[:, :, 1])  # (W, S, 3)
        k = self.stiffness
        terms = PotentialTerms.zeros(num_worlds, n, want_hessian)
        terms.energy[:] = 0.5 * np.einsum("s,wsi,wsi->w", k, d, d)
        jac = np.zeros((num_worlds, len(k), 2, 3, 6))
        jac[..., :3] = np.eye(3)
        jac[..., 3:] = -_skew(q)
        sign = np.array([1.0, -1.0])
        grad = np.einsum("s,p,wspim,wsi->wspm", k, sign, jac, d)  # (W, S, 2, 6)
        np.add.at(terms.gradient, (slice(None), a), grad[:, :, 0])
        np.add.at(terms.gradient, (slice(None), b), grad[:, :, 1])
        if want_hessian:
            diag = np.einsum("s,wspim,wspin->wspmn", k, jac, jac)
            if not ctx.psd_project:
                f = np.einsum("s,p,wsi->wspi", k, sign, d)
                fq = np.einsum("wspi,wspj->wspij", f, q)
                diag[..., 3:, 3:] += 0.5 * (fq + np.swapaxes(fq, -1, -2)) - np.einsum(
                    "wspi,wspi->wsp", f, q)[..., None, None] * np.eye(3)
            np.add.at(terms.hessian_diag, (slice(None), a), diag[:, :, 0])
            np.add.at(terms.hessian_diag, (slice(None), b), diag[:, :, 1])
            block = -np.einsum("s,wsim,wsin->wsmn", k, jac[:, :, 0], jac[:, :, 1])
            terms.couplings = [Coupling(a, b, block)]
        return terms


def _skew(v):
    """skew(v) of (..., 3) vectors: skew(v) u = v x u."""
    out = np.zeros(v.shape + (3,))
    out[..., 0, 1], out[..., 0, 2] = -v[..., 2], v[..., 1]
    out[..., 1, 0], out[..., 1, 2] = v[..., 2], -v[..., 0]
    out[..., 2, 0], out[..., 2, 1] = -v[..., 1], v[..., 0]
    return out


def main(steps: int = 100):
    """A 10 cm box hung from a static anchor by a spring at its top face's centre; returns its final height."""
    scene = mochi.create_scene("spring")
    anchor = scene.create_rigid_actor(name="anchor", shape=mochi.create_icosphere_shape(0.01, 1), is_static=True,
                                      world_from_local=mochi.TransformRT(translation=[0.0, 1.0, 0.0]))
    box = scene.create_rigid_actor(name="box", shape=mochi.create_box_mesh_shape([0.1, 0.1, 0.1]), density=500.0,
                                   world_from_local=mochi.TransformRT(translation=[0.1, 0.8, 0.0]))
    scene.add_potential(SpringTerm(scene, [(box, anchor)], 200.0, [0.0, 0.05, 0.0], [0.0, 0.0, 0.0]))
    for _ in range(steps):
        scene.step(0.01)
    print(f"solver path: {scene.solver_path()}; box centre {box.get_center_of_mass_transform().translation_array}")
    return box


if __name__ == "__main__":
    main()
