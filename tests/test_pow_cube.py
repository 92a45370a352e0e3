"""kernels.cube.pow_cube against its oracle, libm's pow(s, 3.0) as numba calls it (the penalty ramp's s**3 before):
the same bits on random inputs of the ramp's range (-1, 1), over 80 binades, on inputs whose exact cube lies
near a midpoint between doubles (its fallback), and on the edge cases."""

import math

import numba
import numpy as np

from superdex_gym.sim.kernels.pow_cube import pow_cube


@numba.njit(cache=False)
def _both(xs, out_fast, out_pow):
    for i in range(xs.shape[0]):
        out_fast[i] = pow_cube(xs[i])
        out_pow[i] = math.pow(xs[i], 3.0)


def _assert_same_bits(xs):
    fast, slow = np.empty_like(xs), np.empty_like(xs)
    _both(xs, fast, slow)
    same = fast.view(np.int64) == slow.view(np.int64)
    assert same.all(), (xs[~same][:5], fast[~same][:5], slow[~same][:5])
    assert np.any(slow != 0.0)  # the oracle computed something


def test_pow_cube_equals_libm_pow_on_the_ramp_range_and_across_binades():
    rng = np.random.default_rng(12)
    _assert_same_bits(rng.uniform(-1.0, 1.0, 2_000_000))
    size = 1_000_000
    wide = np.ldexp(rng.uniform(0.5, 1.0, size) * rng.choice([-1.0, 1.0], size), rng.integers(-40, 40, size))
    _assert_same_bits(wide)


def test_pow_cube_equals_libm_pow_near_midpoints_and_at_the_edges():
    # s^3 within a few ulps of a midpoint between doubles in [1/2, 1): s = cbrt((m + 1/2) 2^-53), so the fallback runs.
    rng = np.random.default_rng(3)
    m = rng.integers(2**52, 2**53, 200_000).astype(np.float64)
    near = np.cbrt((m + 0.5) * 2.0**-53) * rng.choice([-1.0, 1.0], m.size)
    near = np.concatenate([near, np.nextafter(near, 2.0), np.nextafter(near, -2.0)])
    _assert_same_bits(near)
    edges = np.array([0.0, -0.0, np.nan, np.inf, -np.inf, 5e-324, -5e-324, 1e-300, 1e-7, 2.0**-20, -(2.0**-20),
                      np.nextafter(2.0**-20, 0.0), 2.0**20, np.nextafter(2.0**20, 1e300), 0.5, -0.25, 1.0, -1.0,
                      np.nextafter(1.0, 0.0), 1.0 / 3.0, 3.0, 1e10, -1e10])
    _assert_same_bits(edges)
