"""``InitialGuess.CONSTANT_VELOCITY_AND_TARGETS_OUTSIDE`` on the fused step as one kernel per stage
(`potentials.base.guess_outside` is the numpy oracle; sim/step/fused.py calls this one).

`fused.stage_begin` has already written Newton's start with the pivot drives' targets and the statics on their
prescribed pose. This kernel builds the pose the test looks at (the per-stage step's guess before the statics are
placed: a static body on its constant-velocity prediction), takes each body's deepest contact at it and, for the
bodies the drives did not place whose guess is more than ``margin`` ramp widths deeper than at their latest pose,
puts their latest rotation into Newton's start. The same operations as the numpy path, in its order (the
prediction c + dt v, `fused._exp` and `so3.matmul3` as `lie.exp_so3(dt w) @ R`, `depth.contact_depth` for the
depths), so the same bits.
"""

from __future__ import annotations

import numpy as np

from ..jit import kernel
from .depth import contact_depth
from .fused import _exp
from .so3 import matmul3


@kernel
def outside_guess(margin, stage_dt, is_static, latest, guess, depth_inputs, work):
    """Returns True when a rotation was replaced. ``margin``: the test's threshold in ramp widths; ``latest``: the
    latest solution (c, r, v, omega: y_n, then the previous stage); ``guess``: Newton's start (c, r; r is
    rewritten in place); ``depth_inputs``: `kernels.depth.contact_depth`'s arrays before the poses
    (`ContactPotential.depth_kernel_inputs`: any collider kind, a mesh's distance by address); ``work``: the tested
    pose (W, N, 3), (W, N, 3, 3), which bodies sit on their prediction and the depths at the tested pose and at
    the latest one (W, N)."""
    latest_c, latest_r, latest_v, latest_w = latest
    guess_c, guess_r = guess
    pre_c, pre_r, predicted, at_guess, at_latest = work
    num_worlds, n = latest_c.shape[0], latest_c.shape[1]
    m = np.empty((3, 3))
    theta = np.empty(3)
    any_deep = False
    for w in range(num_worlds):
        for b in range(n):
            on_prediction = True
            for a in range(3):
                p = latest_c[w, b, a] + stage_dt * latest_v[w, b, a]
                c = p if is_static[b] else guess_c[w, b, a]
                pre_c[w, b, a] = c
                if c != p:
                    on_prediction = False
            predicted[w, b] = on_prediction
            if is_static[b]:
                for a in range(3):
                    theta[a] = stage_dt * latest_w[w, b, a]
                _exp(theta, m)
                matmul3(m, latest_r[w, b], pre_r[w, b])
            else:
                for a in range(3):
                    for e in range(3):
                        pre_r[w, b, a, e] = guess_r[w, b, a, e]
            at_guess[w, b] = 0.0
            at_latest[w, b] = 0.0
    contact_depth(*depth_inputs, pre_c, pre_r, at_guess)
    for w in range(num_worlds):
        for b in range(n):
            if predicted[w, b] and at_guess[w, b] > margin:
                any_deep = True
    if not any_deep:  # most stages: no second depth pass
        return False
    contact_depth(*depth_inputs, latest_c, latest_r, at_latest)
    replaced = False
    for w in range(num_worlds):
        for b in range(n):
            # the depths are >= 0 (zeroed, then raised), as numpy's np.maximum(depth, 0) leaves them
            if not is_static[b] and predicted[w, b] and at_guess[w, b] > at_latest[w, b] + margin:
                for a in range(3):
                    for e in range(3):
                        guess_r[w, b, a, e] = latest_r[w, b, a, e]
                replaced = True
    return replaced
