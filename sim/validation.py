"""Argument checks shared by the engine and the environments: booleans that are booleans, arrays of real numbers,
and the bounds of masses, lengths and time steps with the reason each bound exists.

Bounds (each message repeats its reason):

* masses in [MIN_MASS_KG, MAX_MASS_KG]: the Newton residual is weighted by 1/(m g)^2 and its divergence test
  (``abs_div_tol`` = 1e9 N on the plain residual) reads a 1e9 kg body at rest as diverged; a body that must not
  move is a static actor, not a heavy one.
* lengths (box half extents, mesh coordinates) at most MAX_LENGTH_M: area and volume integrals square and cube
  them, and beyond 1e6 m float64 round-off makes real triangles look degenerate. Box half extents at least
  MIN_LENGTH_M: the inertia integrals go as the fifth power of the size (1e-200 m gives a zero inertia), and a
  micrometre box is already a thousand times thinner than the contact's penalty smoothing distance.
* time steps at least MIN_TIME_STEP_S: the inertia Hessian m / dt^2 then stays below ~1e14 m, so gravity and
  contact terms keep float64 precision and the linear solves stay regular.
"""

from __future__ import annotations

import numpy as np

MIN_MASS_KG = 1e-6
MAX_MASS_KG = 1e6
MAX_LENGTH_M = 1e6
MIN_LENGTH_M = 1e-6
MIN_TIME_STEP_S = 1e-7


def as_bool(value, name: str) -> bool:
    """``value`` if it is a bool (Python or numpy); anything else, strings included, raises TypeError."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise TypeError(f"{name} must be a bool (True or False), got {value!r}; strings such as 'False' and numbers "
                    "are not taken as booleans")


def real_array(value, name: str) -> np.ndarray:
    """``value`` as a float64 array, refusing what numpy would coerce silently or fail on obscurely: strings,
    ragged nesting, and complex, boolean or object entries (TypeError / ValueError naming ``name``)."""
    if isinstance(value, (str, bytes)):
        raise TypeError(f"{name} must be real numbers, got the string {value!r}")
    try:
        arr = np.asarray(value)
    except ValueError as exc:  # ragged nesting
        raise ValueError(f"{name} must be a rectangular array of real numbers, got {value!r}") from exc
    if arr.dtype.kind not in "iuf":
        raise TypeError(f"{name} must hold real numbers (int or float), got dtype {arr.dtype} ({value!r})")
    return arr.astype(np.float64)


def check_mass(mass: float, name: str) -> float:
    """A finite mass in [MIN_MASS_KG, MAX_MASS_KG] (see the module docstring for why)."""
    if not (np.isfinite(mass) and MIN_MASS_KG <= mass <= MAX_MASS_KG):
        raise ValueError(f"{name} must be in [{MIN_MASS_KG:g}, {MAX_MASS_KG:g}] kg, got {mass!r}: the solver weighs "
                         "residuals by 1/(m g)^2 and tests divergence at 1e9 N, so masses outside this range stall or "
                         "diverge their world; make an immovable body static instead")
    return float(mass)


def as_real(value, name: str) -> float:
    """A real number (int or float, Python or numpy); strings, booleans and complex numbers raise TypeError."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a real number, got {value!r}")
    return float(value)


def as_int(value, name: str, low: int, high: int, reason: str = "") -> int:
    """An integer in [low, high] (booleans and floats refused, ValueError as the engine's counts do); ``reason``
    says why the bounds are what they are."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if not low <= value <= high:
        raise ValueError(f"{name} must be in [{low}, {high}], got {value!r}" + (f": {reason}" if reason else ""))
    return int(value)


def bounded_real(value, name: str, low: float, high: float, reason: str = "", low_open: bool = False) -> float:
    """A finite real in [low, high] (or (low, high] with ``low_open``); ``reason`` explains the bounds."""
    x = as_real(value, name)
    ok = np.isfinite(x) and (x > low if low_open else x >= low) and x <= high
    if not ok:
        interval = f"{'(' if low_open else '['}{low:g}, {high:g}]"
        raise ValueError(f"{name} must be a finite number in {interval}, got {value!r}" + (f": {reason}" if reason else ""))
    return x
