"""Kernels of the step's own per-substep work outside the Newton solve (sim/tunnelling.py, sim/pipeline.py), each
replacing a run of small numpy calls whose Python overhead cost more than their arithmetic.

Each kernel does exactly the numpy code's arithmetic, in its order (elementwise operations, and sums of three
squares in the order np.linalg.norm adds them), so results are bit-identical to the numpy code it replaces
(tests/test_step_kernels.py compares them). Products of matrices, einsum contractions and transcendental
functions stay in numpy: their rounding depends on which BLAS / SIMD kernel numpy picks for the CPU.
"""

from __future__ import annotations

import numpy as np

from ..jit import kernel


@kernel
def tunnelling_worst(com0, com1, dynamic, angle, reach, centres, radius, half, ratio_out, which_out):
    """The tail of `sim.tunnelling.tunnelling_ratio` for W worlds, D dynamic and S static colliders.

    model: ``dynamic`` (D,) rows, ``reach`` (D,) m, ``radius`` / ``half`` (S,) m; data in: ``com0`` / ``com1``
    (W, N, 3) CoMs at step start / end, ``angle`` (W, D) rad each dynamic body's rotation over the step,
    ``centres`` (W, S, 3) the colliders' bounding-sphere centres at step start; data out: ``ratio_out`` (W,) the
    largest travel / half thickness over (body, collider within reach) pairs, 0 when none is, NaN when any pair's
    ratio is NaN; ``which_out`` (W,) the collider index of the first largest, -1 unless that ratio is > 0."""
    num_static = centres.shape[1]
    for w in range(com0.shape[0]):
        best = 0.0
        best_k = 0
        first = True
        for d in range(dynamic.shape[0]):
            n = dynamic[d]
            dx = com1[w, n, 0] - com0[w, n, 0]
            dy = com1[w, n, 1] - com0[w, n, 1]
            dz = com1[w, n, 2] - com0[w, n, 2]
            move = np.sqrt((dx * dx + dy * dy) + dz * dz)
            travel = move + reach[d] * angle[w, d]
            for s in range(num_static):
                gx = com0[w, n, 0] - centres[w, s, 0]
                gy = com0[w, n, 1] - centres[w, s, 1]
                gz = com0[w, n, 2] - centres[w, s, 2]
                gap = np.sqrt((gx * gx + gy * gy) + gz * gz)
                ratio = travel / half[s] if gap <= (reach[d] + travel) + radius[s] else 0.0
                # np.max / np.argmax: the first NaN wins and is returned, else the first largest value.
                if first or ratio > best or (np.isnan(ratio) and not np.isnan(best)):
                    best = ratio
                    best_k = d * num_static + s
                first = False
        ratio_out[w] = best
        which_out[w] = best_k % num_static if best > 0 else -1
