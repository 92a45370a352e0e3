"""s**3 with the bits of libm's pow(s, 3), without calling pow on the common path.

The penalty ramp (`contact._poly_relu`, ramp.poly_relu's ``s**3``) takes libm's pow(s, 3.0), and pow was ~12% of
the aligned 5-box stack's Newton time. A plain ``s * s * s`` rounds twice and differs from pow in about a quarter
of the inputs, which would move every contact trajectory by round-off. `pow_cube` computes the exact cube as an
unevaluated sum (two FMAs), rounds it once, and returns that when it is provably what pow returns; otherwise it
calls pow:

* s^3 = s3 + e3 + e2 s exactly, with s s = s2 + e2 and s2 s = s3 + e3 (the FMAs' exact error terms), so
  r = fl(s3 + lo), lo = fl(e3 + fl(e2 s)), is the correctly rounded cube unless s^3 lies within ~2^-50 ulp of a
  midpoint between doubles (lo's own error), and d = (s3 - r) + lo is s^3 - r to ~2^-50 ulp (s3 - r is exact).
* glibc's pow (sysdeps/ieee754/dbl-64/e_pow.c, the ``__ieee754_pow_fma`` these machines run) rounds once a value
  within (0.009 + 3 |ln s| 1.3 2^-15) ulp of s^3 before its final rounding (its stated bounds: exp 0.509 ulp with
  the rounding, log relative error 1.3 2^-68); for 2^-20 <= |s| <= 2^20 that is below 0.011 ulp.
* So when |d| <= 0.45 ulp(r) and r is not a power of two (the same spacing on both sides), s^3 is at least
  0.05 ulp from a midpoint and pow rounds to r as well. Anything else (|s| outside [2^-20, 2^20], NaN, zero,
  |d| > 0.45 ulp, r a power of two: ~10% of the ramp's inputs) returns pow(s, 3.0) itself.

tests/test_pow_cube.py checks it against math.pow on random, near-midpoint and edge inputs (0 of 2 x 10^8 random
inputs differed when it was written).
"""

from __future__ import annotations

import math

from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic

from ..jit import inner_kernel
from .so3 import fma

_MANTISSA = (1 << 52) - 1


@intrinsic
def _float_bits(typingctx, x):
    """The IEEE-754 bits of a float64 as an int64."""
    sig = types.int64(types.float64)

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(64))

    return sig, codegen


@intrinsic
def _bits_float(typingctx, bits):
    """The float64 with the IEEE-754 bits ``bits`` (an int64)."""
    sig = types.float64(types.int64)

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.DoubleType())

    return sig, codegen


@inner_kernel(_nrt=False)
def pow_cube(s):
    """math.pow(s, 3.0), bit for bit (module docstring)."""
    a = abs(s)
    if not (a >= 9.5367431640625e-07 and a <= 1048576.0):  # [2^-20, 2^20]; NaN and 0 too
        return math.pow(s, 3.0)
    s2 = s * s
    e2 = fma(s, s, -s2)
    s3 = s2 * s
    e3 = fma(s2, s, -s3)
    lo = e3 + e2 * s
    r = s3 + lo
    d = (s3 - r) + lo
    bits = _float_bits(r)
    exponent = (bits >> 52) & 0x7FF  # |r| in [2^-60, 2^60]: normal, exponent - 52 >= 1
    ulp = _bits_float((exponent - 52) << 52)
    if (bits & _MANTISSA) == 0 or abs(d) > 0.45 * ulp:
        return math.pow(s, 3.0)
    return r
