"""The unified multistep / multistage time-integration framework (digest sections 3.1-3.3).

A method is (alpha, beta; A, b, c). The step start ``y* = sum_r alpha_r y_{n+1-r}``; stage i has length
``dt_i = beta A_ii dt`` and starts from ``Y_i^0 = y* + sum_{j<i} a~_ij (Y_j - y*)``; the step ends at
``y_{n+1} = y* + sum_i b~_i (Y_i - y*)``, with ``a~_i = A_{i,1:i-1} A_{1:i-1,1:i-1}^{-1}`` and ``b~ = b^T A^{-1}``
(stage states are stored instead of slopes). Vectors combine linearly; rotations combine in the Lie algebra
about a base rotation (seed page, "Solution Reconstruction").
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from .. import lie
from ..params import IntegrationMethod


@dataclass(frozen=True)
class Tableau:
    name: str
    alpha: tuple  # multistep weights (alpha_1 .. alpha_l), sum 1
    beta: float
    a: np.ndarray  # (s, s) lower-triangular Butcher matrix with positive diagonal
    b: np.ndarray  # (s,)
    c: np.ndarray  # (s,)
    order: int

    @property
    def num_history(self) -> int:
        return len(self.alpha)

    @property
    def num_stages(self) -> int:
        return len(self.b)

    @cached_property
    def stage_dt_factors(self) -> np.ndarray:
        """dt_i / dt = beta * A_ii."""
        return self.beta * np.diag(self.a)

    @cached_property
    def stage_time_factors(self) -> np.ndarray:
        """(t_i - t_n) / dt = 1 - beta + beta c_i."""
        return 1.0 - self.beta + self.beta * self.c

    @cached_property
    def b_tilde(self) -> np.ndarray:
        return np.linalg.solve(self.a.T, self.b)

    def a_tilde(self, i: int) -> np.ndarray:
        """Stage-start coefficients of stage i over stages 0..i-1."""
        if i == 0:
            return np.zeros(0)
        cache = self.__dict__.setdefault("_a_tilde", {})  # frozen: computed once per stage (read-only use)
        if i not in cache:
            cache[i] = np.linalg.solve(self.a[:i, :i].T, self.a[i, :i])
        return cache[i]


_G2 = 1.0 - np.sqrt(2.0) / 2.0
_G3 = 0.5 + 1.0 / (2.0 * np.sqrt(3.0))
# gamma of DIRK33: the root of 6 g^3 - 18 g^2 + 9 g - 1 = 0 in (0, 1) that makes the method L-stable.
_G = 0.435866521508459
_B1 = -1.5 * _G**2 + 4.0 * _G - 0.25
_B2 = 1.5 * _G**2 - 5.0 * _G + 1.25
_C2 = (1.0 + _G) / 2.0


def _one(x):
    return np.array([[x]], dtype=float)


TABLEAUS = {
    IntegrationMethod.BACKWARD_EULER: Tableau("BACKWARD_EULER", (1.0,), 1.0, _one(1.0), np.ones(1), np.ones(1), 1),
    IntegrationMethod.BDF2: Tableau("BDF2", (4 / 3, -1 / 3), 2 / 3, _one(1.0), np.ones(1), np.ones(1), 2),
    IntegrationMethod.BDF3: Tableau(
        "BDF3", (18 / 11, -9 / 11, 2 / 11), 6 / 11, _one(1.0), np.ones(1), np.ones(1), 3
    ),
    IntegrationMethod.DIRK22: Tableau(
        "DIRK22", (1.0,), 1.0, np.array([[_G2, 0.0], [1.0 - _G2, _G2]]), np.array([1.0 - _G2, _G2]),
        np.array([_G2, 1.0]), 2,
    ),
    IntegrationMethod.DIRK23: Tableau(
        "DIRK23", (1.0,), 1.0, np.array([[_G3, 0.0], [-1.0 / np.sqrt(3.0), _G3]]), np.array([0.5, 0.5]),
        np.array([_G3, 1.0 - _G3]), 3,
    ),
    IntegrationMethod.DIRK33: Tableau(
        "DIRK33", (1.0,), 1.0,
        np.array([[_G, 0.0, 0.0], [_C2 - _G, _G, 0.0], [_B1, _B2, _G]]), np.array([_B1, _B2, _G]),
        np.array([_G, _C2, 1.0]), 3,
    ),
    IntegrationMethod.SYMPLECTIC_DIRK12: Tableau(
        "SYMPLECTIC_DIRK12", (1.0,), 1.0, _one(0.5), np.ones(1), np.array([0.5]), 2
    ),
    IntegrationMethod.SYMPLECTIC_DIRK22: Tableau(
        "SYMPLECTIC_DIRK22", (1.0,), 1.0, np.array([[0.25, 0.0], [0.5, 0.25]]), np.array([0.5, 0.5]),
        np.array([0.25, 0.75]), 2,
    ),
}

# Start-up (digest 3.2): a multistep method with fewer completed states than it needs uses the next lower BDF.
_STARTUP = {1: IntegrationMethod.BACKWARD_EULER, 2: IntegrationMethod.BDF2, 3: IntegrationMethod.BDF3}


def effective_tableau(method: IntegrationMethod, num_history_available: int) -> Tableau:
    """The tableau used for a step when only ``num_history_available`` completed states exist (>= 1)."""
    tab = TABLEAUS[method]
    if tab.num_history > num_history_available:
        return TABLEAUS[_STARTUP[max(1, num_history_available)]]
    return tab


# --- reconstruction -----------------------------------------------------------------------------------------------


def combine_vectors(base: np.ndarray, coeffs, others) -> np.ndarray:
    """base + sum_j coeffs[j] (others[j] - base): the linear reconstruction (digest 3.3)."""
    out = None  # base.copy() only when no coefficient is non-zero: `base + x` is already a new array
    for coef, other in zip(coeffs, others):
        if coef != 0.0:
            out = (base if out is None else out) + coef * (other - base)
    return base.copy() if out is None else out


def combine_rotations(base: np.ndarray, coeffs, others) -> np.ndarray:
    """C(R_b; {(c_j, R_j)}) = exp(skew(sum_j c_j log(R_j R_b^T))) R_b (seed page), batched (..., 3, 3)."""
    coeffs = [float(c) for c in coeffs]
    nonzero = [j for j, c in enumerate(coeffs) if c != 0.0]
    if len(nonzero) == 1 and coeffs[nonzero[0]] == 1.0:
        return others[nonzero[0]].copy()  # the reference's shortcut: a single unit coefficient copies the stage
    theta = np.zeros(base.shape[:-1])
    base_t = np.swapaxes(base, -1, -2)
    for coef, other in zip(coeffs, others):
        if coef != 0.0:
            theta = theta + coef * lie.log_so3(other @ base_t)
    return lie.exp_so3(theta) @ base


def step_start_vectors(history, alpha) -> np.ndarray:
    """y* = y_n + sum_{r>=2} alpha_r (y_{n+1-r} - y_n); history[0] is y_n."""
    return combine_vectors(history[0], alpha[1:], history[1 : len(alpha)])


def step_start_rotations(history, alpha) -> np.ndarray:
    """R*_n = C(R_n; {(alpha_r, R_{n+1-r})}_{r=1..l}); log(R_n R_n^T) = 0 so r = 1 drops out."""
    if len(alpha) == 1:
        return history[0].copy()
    return combine_rotations(history[0], alpha[1:], history[1 : len(alpha)])
