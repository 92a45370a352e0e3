"""The potential interface shared by every physical effect (DESIGN section 2).

A potential is an object with one job: given the batched stage data and the current Newton iterate, return its
energy, gradient and Hessian blocks for the bodies it touches. The Newton solver sums potentials and knows nothing
about physics; a new physical effect is a new potential.

Generalized coordinates per body are the 6-vector ``(dc, dtheta)``: a world-frame translation of the centre of mass
and a world-frame (left) rotation increment, ``R <- exp(skew(dtheta)) R``. Gradients and Hessians are with respect
to that increment at zero, so the rotational gradient of a function ``f(R)`` is ``d/dtheta f(exp(skew(theta)) R)``.

Shapes (W worlds, N actors in the model, static actors included; static rows are ignored by the solver):

* ``energy``: (W,)
* ``gradient``: (W, N, 6), DoF order [translation(3), rotation(3)]
* ``hessian_diag``: (W, N, 6, 6), the per-body diagonal blocks
* ``couplings``: list of ``Coupling(body_a (P,), body_b (P,), block (W, P, 6, 6))``: the off-diagonal block
  d^2 E / d q_a d q_b for pairs of bodies (the solver adds the transpose for (b, a)). Pairs with a == b are not
  allowed here (put them in ``hessian_diag``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
import numpy as np

from .. import lie


@dataclass
class Coupling:
    body_a: np.ndarray  # (P,) int, actor index
    body_b: np.ndarray  # (P,) int, actor index, body_b != body_a
    block: np.ndarray  # (W, P, 6, 6): d^2 E / (d q_a d q_b)


@dataclass
class PotentialTerms:
    energy: np.ndarray  # (W,)
    gradient: np.ndarray  # (W, N, 6)
    hessian_diag: np.ndarray | None  # (W, N, 6, 6) or None when not requested
    couplings: list = field(default_factory=list)  # list[Coupling]

    @staticmethod
    def zeros(num_worlds: int, num_bodies: int, want_hessian: bool) -> "PotentialTerms":
        return PotentialTerms(
            energy=np.zeros(num_worlds),
            gradient=np.zeros((num_worlds, num_bodies, 6)),
            hessian_diag=np.zeros((num_worlds, num_bodies, 6, 6)) if want_hessian else None,
        )


@dataclass
class StageContext:
    """Everything fixed during one implicit stage. All arrays are world frame, leading world axis W.

    ``stage_dt`` is the stage length Delta t_i = beta * A_ii * dt (digest 3.1), the dt of every stage formula.
    """

    model: object  # the compiled model (sim.model.Model)
    stage_dt: float  # s
    stage_time: float  # s, t_i
    com_position0: np.ndarray  # (W, N, 3) stage-start centre of mass
    rotation0: np.ndarray  # (W, N, 3, 3) stage-start world-from-body rotation
    linear_velocity0: np.ndarray  # (W, N, 3) stage-start CoM velocity
    angular_velocity0: np.ndarray  # (W, N, 3) stage-start world angular velocity omega
    velocity_sym0: np.ndarray  # (W, N, 3, 3) stage-start symmetric part S of the rotation finite difference
    gravity: np.ndarray  # (W, 3) m/s^2
    external_force: np.ndarray  # (W, N, 6) world force [N] and torque [N m] on the DoFs
    psd_project: bool = True  # project per-element Hessians to PSD (NonLinearSolverParams.psd_proj_mode)
    # Offset forces (force at a body-frame offset from the CoM): (W, N, K, 3) forces and (N, K, 3) offsets.
    offset_force: np.ndarray | None = None
    offset_local: np.ndarray | None = None
    # Per-actor convergence weights (model.convergence_weights): (N,) force and (W, N, 3) torque.
    force_weight: np.ndarray | None = None
    torque_weight: np.ndarray | None = None
    # (W,) indices of these worlds in the scene's batch, for potentials holding per-world data (targets).
    world_index: np.ndarray | None = None


class Potential:
    """One physical effect, and the extension protocol of the engine (docs/engine.md, "Extension protocol").

    Subclasses implement ``evaluate``; every other method is a hook with a no-op default, called by the engine
    at the point its docstring names. ``evaluate`` must be vectorized over worlds and bodies (no Python loop over
    either). Add one to a scene with ``scene.add_potential``.
    """

    # --- per stage (sim/step/pipeline.py, sim/solver/numpy_newton.py) ------------------------------------------------------------
    def evaluate(
        self, ctx: StageContext, com_position: np.ndarray, rotation: np.ndarray, want_hessian: bool
    ) -> PotentialTerms:
        """Energy, gradient and Hessian at the iterate (com_position (W, N, 3), rotation (W, N, 3, 3))."""
        raise NotImplementedError(f"{type(self).__name__} must implement evaluate()")

    def is_active(self, ctx: StageContext) -> bool:
        """False when the potential contributes nothing this stage: the solver then skips ``evaluate``."""
        return True

    def refine_guess(self, ctx: StageContext, guess_c: np.ndarray, guess_r: np.ndarray) -> np.ndarray:
        """The Newton start's centres of mass (W, N, 3) under ``InitialGuess.CONSTANT_VELOCITY_AND_TARGETS``;
        potentials that know where bodies are driven move them there. Only the start changes, not the solution."""
        return guess_c

    def penetration_depth(self, com_position: np.ndarray, rotation: np.ndarray):
        """(W, N) deepest penetration of each body at the pose in ramp widths (contact potentials), or None;
        ``InitialGuess.CONSTANT_VELOCITY_AND_TARGETS_OUTSIDE`` reads it to keep Newton's start out of objects."""
        return None

    # --- per step (Scene.step) ----------------------------------------------------------------------------------
    def before_step(self, scene) -> None:
        """Before the step's solves; nothing can change the scene until ``after_solves``."""

    def after_solves(self, scene) -> None:
        """After the step's solves, also when they raised."""

    def after_step(self, scene, report) -> None:
        """After a completed step, with its ``pipeline.StepReport`` (queries read ``report.last_stages``)."""

    # --- scene changes (Scene, sim/state_io.py) -----------------------------------------------------------------
    def on_actor_destroyed(self, actor, row: int) -> None:
        """Before ``actor`` (model row ``row``) leaves the scene; the model still holds it."""

    def on_num_worlds_changed(self, num_worlds: int) -> None:
        """After ``scene.set_num_worlds``: world 0 was replicated; replicate per-world data the same way."""

    def capture(self):
        """Per-world data a state capture must keep (nested dicts / lists of arrays and scalars), or None."""
        return None

    def restore(self, data, worlds=None, source_worlds=None) -> None:
        """Restore what ``capture`` returned: every world (``worlds`` None) or ``worlds`` from the capture's
        ``source_worlds``. Only called with data that is not None."""


# Ramp widths a guess may go deeper than the latest pose before its rotation is dropped: 4 (1 mm with the grasp
# contact) held 100/100 seed-0 picks, 2-3 and 8 held 96-99 (docs/environments.md, Grasping).
GUESS_DEPTH_MARGIN = 4.0


def constant_velocity_pose(com_position, rotation, linear_velocity, angular_velocity, dt):
    """A pose advanced by its velocity over ``dt``: c + dt v, exp(dt omega) R (``InitialGuess.CONSTANT_VELOCITY``;
    the per-stage step's guess and the fused step's OUTSIDE test share it)."""
    return com_position + dt * linear_velocity, lie.exp_so3(dt * angular_velocity) @ rotation


def guess_outside(potentials, latest, predicted_c, guess_c, guess_r):
    """``InitialGuess.CONSTANT_VELOCITY_AND_TARGETS_OUTSIDE``: a body on its constant-velocity prediction
    (``predicted_c``; bodies a drive target placed are left there) whose guess penetrates a contact more than
    ``GUESS_DEPTH_MARGIN`` ramp widths deeper than its latest pose starts with its latest rotation (its predicted
    translation kept): a yawed cube snapping straight between closing fingers at 10-30 rad/s is otherwise
    predicted with a corner ~20 ramp widths inside a finger, beyond 8 Newton iterations (docs/environments.md)."""
    predicted = np.all(guess_c == predicted_c, axis=-1)
    deeper = None
    for pot in potentials:
        at_guess = pot.penetration_depth(guess_c, guess_r)
        # Most stages need no second evaluation; a squeezing finger on its drive target is deep but never moved.
        if at_guess is None or not (predicted & (at_guess > GUESS_DEPTH_MARGIN)).any():
            continue
        at_latest = np.maximum(pot.penetration_depth(latest.com_position, latest.rotation), 0.0)
        step = at_guess > at_latest + GUESS_DEPTH_MARGIN
        deeper = step if deeper is None else deeper | step
    if deeper is None:
        return guess_r
    deeper &= predicted
    return np.where(deeper[..., None, None], latest.rotation, guess_r) if deeper.any() else guess_r
