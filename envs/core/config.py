"""Settings every robot + task shares (physics step, substeps, Newton solver) and the ``gym.make`` kwargs parsing
that hands each part (worlds, robot, task) its own kwargs.

Why the solver defaults are what they are (measurements): ``docs/envs_notes.md``.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass

import numpy as np

import superdex_gym.sim as mochi
from superdex_gym.sim.validation import as_bool, as_int, as_real, bounded_real, real_array

# Contact for grasping and stacking (docs/environments.md, Grasping): a 0.25 mm penalty ramp instead of 5 mm (a
# quarter of a 4 cm cube tilts towers) and sticking friction (V_f 1e-4 m/s) let held cubes and towers settle where
# Newton converges.
GRASP_CONTACT = {"penalty_smoothing_half_distance": 2.5e-4, "penalty_threshold_default": 1e-4,
                 "friction_falloff_vel": 1e-4}

V_MAX = 10.0  # m/s, bound of every linear velocity in an observation (clipped to it; see docs/envs_notes.md)
# s: at V_MAX a body moves at most 0.2 m per step, the table's half thickness, so it cannot pass its midplane
# (the thinnest static collider; docs/reliability.md)
MAX_PHYSICS_DT = 0.02
MAX_SUBSTEPS = 50  # each substep is one engine call of ~5-20 ms: more makes one step() take seconds
MAX_SUBSTEP_REFINEMENT = 4  # a stopped substep split 2^4 ways is already shorter than any contact event here


@dataclass(frozen=True)
class WorldConfig:
    """Physics, control rate and solver settings of the worlds' scene."""

    physics_dt: float = 0.02  # s; one 40 ms step is slower and fails more (docs/envs_notes.md)
    substeps: int = 2  # physics steps per control step -> 25 Hz
    integration_method: mochi.IntegrationMethod = mochi.IntegrationMethod.BACKWARD_EULER
    solver_abs_tol: float = 1e-2  # 1% of the cube's weight [N] (docs/envs_notes.md)
    solver_max_iter: int = 8
    # Newton starts from the constant-velocity prediction, the gripper on its drive targets (docs/envs_notes.md)
    solver_initial_guess: mochi.InitialGuess = mochi.InitialGuess.CONSTANT_VELOCITY_AND_TARGETS
    solver_line_search_max_iter: int = 2  # engine default 4 (docs/envs_notes.md)
    # A world that stops at the iteration cap keeps its lowest-energy iterate, not the last one, which launched
    # cubes at 26-29 m/s (docs/reliability.md)
    solver_best_iterate_on_stop: bool = True
    # Nesting depth of redoing a world's STOPPED substep as two half substeps: a squeeze that snaps a yawed cube
    # straight stops Newton at its cap and can leave a finger inside the cube (docs/environments.md, Grasping)
    substep_refinement: int = 0
    # The same for a substep the guard undid because a surface sample ended past a static collider's middle (a thin
    # wall hit faster than its half thickness per substep): its halves meet the wall with half the travel
    tunnelling_refinement: int = 0

    @property
    def control_dt(self) -> float:
        return self.physics_dt * self.substeps

    def validate(self) -> "WorldConfig":
        bounded_real(self.physics_dt, "physics_dt", 1e-4, MAX_PHYSICS_DT,
                     f"V_MAX x physics_dt must stay within the table's 0.2 m half thickness (no tunnelling); below "
                     "1e-4 s a control step needs hundreds of engine calls")
        as_int(self.substeps, "substeps", 1, MAX_SUBSTEPS, "each substep is one engine call; more would make one "
               "step() take seconds")
        bounded_real(self.solver_abs_tol, "solver_abs_tol", 0.0, 1.0, "a weighted residual of 1 is the body's "
                     "weight: a looser tolerance accepts unbalanced forces", low_open=True)
        as_int(self.solver_max_iter, "solver_max_iter", 1, 100, "each iteration is a full potential evaluation")
        as_int(self.solver_line_search_max_iter, "solver_line_search_max_iter", 1, 20,
               "each try is a full potential evaluation")
        as_int(self.substep_refinement, "substep_refinement", 0, MAX_SUBSTEP_REFINEMENT,
               "each level can triple the cost of a substep that stops")
        as_int(self.tunnelling_refinement, "tunnelling_refinement", 0, MAX_SUBSTEP_REFINEMENT,
               "each level can triple the cost of a substep that tunnels")
        if not isinstance(self.solver_initial_guess, mochi.InitialGuess):
            raise TypeError(f"solver_initial_guess must be an InitialGuess, got {self.solver_initial_guess!r}")
        return self

    def apply(self, scene) -> None:
        """Gravity (Z up) and the Newton settings on ``scene`` (``set_solver_params`` validates them)."""
        scene.set_gravity([0.0, 0.0, -9.8])
        sp = scene.get_solver_params()
        sp.integration_method = self.integration_method
        sp.non_linear_solver.abs_tol = float(self.solver_abs_tol)
        sp.non_linear_solver.max_iter = int(self.solver_max_iter)
        sp.non_linear_solver.initial_guess = self.solver_initial_guess
        sp.non_linear_solver.line_search_max_iter = self.solver_line_search_max_iter
        sp.non_linear_solver.best_iterate_on_stop = self.solver_best_iterate_on_stop
        scene.set_solver_params(sp)


def world_config(physics_dt=0.02, substeps=2, solver_abs_tol=1e-2, solver_max_iter=8,
                 solver_initial_guess="CONSTANT_VELOCITY_AND_TARGETS", solver_line_search_max_iter=2,
                 solver_best_iterate_on_stop=True, substep_refinement=0, tunnelling_refinement=0) -> WorldConfig:
    """The physics and solver ``gym.make`` kwargs as a validated `WorldConfig`.

    ``solver_initial_guess``: an ``InitialGuess`` or its name; ``"LATEST_SOLUTION"`` is the reference's.
    ``solver_line_search_max_iter``: line-search tries per Newton iteration (the engine's default is 4).
    ``solver_best_iterate_on_stop``: a solve stopped at its cap keeps its lowest-energy iterate (False: the last,
    as the reference engine does).
    ``substep_refinement``: a substep whose Newton solve stopped at its iteration cap is redone, in that world only,
    as two half substeps (the drive targets halfway), nested up to this many times; 0: never (the engine's step as
    it is). ``tunnelling_refinement``: the same for a substep undone because a body's surface ended past a static
    collider's middle (sim/tunnelling.py). Worlds stay independent: W worlds together equal the same worlds stepped
    alone, bit for bit."""
    if isinstance(solver_initial_guess, str):
        try:
            solver_initial_guess = mochi.InitialGuess[solver_initial_guess.upper()]
        except KeyError:
            names = [g.name for g in mochi.InitialGuess]
            raise ValueError(f"solver_initial_guess must be one of {names}, got {solver_initial_guess!r}") from None
    return WorldConfig(physics_dt=as_real(physics_dt, "physics_dt"), substeps=substeps, solver_abs_tol=solver_abs_tol,
                       solver_max_iter=solver_max_iter, solver_initial_guess=solver_initial_guess,
                       solver_line_search_max_iter=solver_line_search_max_iter,
                       solver_best_iterate_on_stop=as_bool(solver_best_iterate_on_stop,
                                                           "solver_best_iterate_on_stop"),
                       substep_refinement=substep_refinement,
                       tunnelling_refinement=tunnelling_refinement).validate()


def split_kwargs(kwargs: dict, *factories) -> list[dict]:
    """``kwargs`` dealt to ``factories`` by their parameter names (the first that names one takes it); a kwarg no
    factory names raises TypeError, as an unknown ``gym.make`` kwarg does."""
    out, rest = [], dict(kwargs)
    for factory in factories:
        names = set(inspect.signature(factory).parameters)
        out.append({k: rest.pop(k) for k in list(rest) if k in names})
    if rest:
        raise TypeError(f"unexpected keyword argument(s) {sorted(rest)}")
    return out


def finite_array(value, shape, name) -> np.ndarray:
    arr = real_array(value, name)
    if arr.shape != shape or not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be {shape} finite numbers, got {value!r}")
    return arr


def clip(values: np.ndarray, low, high) -> np.ndarray:
    """np.clip(values, low, high) without its Python wrapper (it costs more than the arithmetic on a few numbers
    every step): np.minimum(np.maximum(values, low), high), as numpy defines clip, so the same bits (NaN passes)."""
    return np.minimum(np.maximum(values, low), high)
