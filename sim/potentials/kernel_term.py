"""Potentials with a per-world numba kernel: the compiled Newton's extension point (docs/engine.md, "Kernel terms").

A `KernelTerm` is a `Potential` (its numpy ``evaluate`` is the oracle and the numpy Newton's path) that also has a
numba kernel of one fixed signature, `TERM_SIGNATURE`, and packs what the kernel reads into one float and one int
array per stage (``pack``). The compiled Newton calls every term of a scene by the kernel's address with that
term's slices of the packed blocks, so a new term is a file of its own: nothing in the Newton names it. A scene
whose potentials are all built in or kernel terms takes the compiled path (``scene.solver_path()``).

The kernel, for one world (its arrays have a leading axis of 1; ``row`` is the world's index in the scene, for
per-world data packed by the term):

    kernel(floats, ints, row, c, r, c0, r0, v0, omega0, stage_dt, want_hessian, project,
           energy, gradient, hessian, coupling) -> None

adds its energy into energy (1,), its gradient into gradient (1, N, 6) and, with want_hessian, its diagonal blocks
into hessian (1, N, 6, 6) and the blocks d^2 E / (d q_a d q_b) of its ``coupling_pairs`` into coupling (1, P, 6, 6)
(one block per pair, in pair order), in the engine's DoF convention (potentials/base.py: world-frame translation
and left rotation increment). ``project``: the solver asks for PSD blocks (psd_proj_mode). c (1, N, 3), r (1, N, 3,
3) are the iterate, c0, r0, v0, omega0 the stage start. Compile it with `term_kernel`; it must not raise or allocate
per call more than it needs (it runs inside every Newton iteration of every world).
"""

from __future__ import annotations

import numpy as np
from numba import njit, types

from ..jit import address_call, kernel, kernel_array, wrapper_address
from .base import Coupling, Potential, PotentialTerms, StageContext

_F1, _F3, _F4 = (types.Array(types.float64, d, "C") for d in (1, 3, 4))
_I1 = types.Array(types.int64, 1, "C")
TERM_SIGNATURE = types.none(_F1, _I1, types.int64, _F3, _F4, _F3, _F4, _F3, _F3, types.float64, types.boolean,
                            types.boolean, _F1, _F3, _F4, _F4)


def term_kernel(fn):
    """Compile ``fn`` as a kernel term (the engine's kernel options; C-callable, so the Newton can call it)."""
    return kernel(fn)


class KernelTerm(Potential):
    """A potential the compiled Newton evaluates through its numba kernel (module docstring).

    Subclasses set ``kernel`` (a `term_kernel`), implement ``pack`` and the numpy oracle ``evaluate``, and
    ``coupling_pairs`` when the term couples bodies."""

    kernel = None

    def pack(self, ctx: StageContext) -> tuple[np.ndarray, np.ndarray]:
        """(floats, ints): everything the kernel reads this stage, as 1-D float64 and int64 arrays."""
        raise NotImplementedError(f"{type(self).__name__} must implement pack()")

    def coupling_pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """(body_a (P,), body_b (P,)): the pairs whose coupling blocks the kernel writes (a != b); none by default."""
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)

    def kernel_address(self) -> int:
        """The address the Newton calls the kernel by (compiled, or loaded from the cache, at first use)."""
        if type(self).kernel is None:
            raise TypeError(f"{type(self).__name__}.kernel is not set: decorate a kernel with term_kernel")
        return wrapper_address(type(self).kernel, TERM_SIGNATURE)

    def evaluate_kernel(self, ctx: StageContext, com_position, rotation, want_hessian: bool) -> PotentialTerms:
        """The kernel's terms of every world, as ``evaluate`` returns them: for tests against the oracle."""
        num_worlds, n = com_position.shape[:2]
        floats, ints = (kernel_array(a, t) for a, t in zip(self.pack(ctx), (np.float64, np.int64)))
        body_a, body_b = self.coupling_pairs()
        rows = np.arange(num_worlds) if ctx.world_index is None else ctx.world_index
        terms = PotentialTerms.zeros(num_worlds, n, True)
        coupling = np.zeros((num_worlds, len(body_a), 6, 6))
        _run_worlds(np.int64(self.kernel_address()), floats, ints, kernel_array(rows, np.int64),
                    *(kernel_array(a) for a in (com_position, rotation, ctx.com_position0, ctx.rotation0,
                                                ctx.linear_velocity0, ctx.angular_velocity0)),
                    float(ctx.stage_dt), bool(want_hessian), bool(ctx.psd_project), terms.energy, terms.gradient,
                    terms.hessian_diag, coupling)
        if not want_hessian:
            terms.hessian_diag = None
        elif len(body_a):
            terms.couplings = [Coupling(np.asarray(body_a), np.asarray(body_b), coupling)]
        return terms


call_term = address_call(term_kernel, TERM_SIGNATURE)  # any term kernel, by its address


@njit(cache=True, nogil=True)
def _run_worlds(address, floats, ints, rows, c, r, c0, r0, v0, om0, stage_dt, want_hessian, project, energy, grad,
                hess, coupling):
    """The term's kernel on every world, one at a time (one-world copies, as the compiled Newton calls it)."""
    n = c.shape[1]
    e1, g1, h1 = np.zeros(1), np.zeros((1, n, 6)), np.zeros((1, n, 6, 6))
    k1 = np.zeros((1, coupling.shape[1], 6, 6))
    for w in range(c.shape[0]):
        e1[0] = 0.0
        g1[:] = 0.0
        h1[:] = 0.0
        k1[:] = 0.0
        call_term(address, floats, ints, rows[w], c[w:w + 1], r[w:w + 1], c0[w:w + 1], r0[w:w + 1], v0[w:w + 1],
                  om0[w:w + 1], stage_dt, want_hessian, project, e1, g1, h1, k1)
        energy[w] += e1[0]
        grad[w] += g1[0]
        hess[w] += h1[0]
        coupling[w] += k1[0]
