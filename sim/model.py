"""The compiled model and the batched state (DESIGN section 2, the MuJoCo mjModel / mjData split).

The model is immutable arrays describing all actors, shared by every world. The state has a leading world axis W.
A scene recompiles its model when actors are created or destroyed or their mass properties change; the state
keeps its per-actor rows in the same order as the model.
"""

from __future__ import annotations

from collections import namedtuple
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from .jit import kernel_array
from .kernels.step import torque_weights


@dataclass(frozen=True)
class Bodies:
    """Per-actor arrays, N actors (static ones included), body frame = CoM frame with the actor's local axes."""

    mass: np.ndarray  # (N,) kg; 0 for static actors
    second_moment: np.ndarray  # (N, 3, 3) kg m^2, J = int rho r r^T about the CoM, body frame
    inertia: np.ndarray  # (N, 3, 3) kg m^2, I = tr(J) 1 - J
    com_local: np.ndarray  # (N, 3) m, CoM in the actor's local frame
    is_static: np.ndarray  # (N,) bool
    has_gravity: np.ndarray  # (N,) bool
    newton_euler: np.ndarray  # (N,) bool, experimental Newton-Euler inertia
    static_pivot: np.ndarray  # (N, 3) m, local point where a static actor's implied velocity is measured

    @property
    def num(self) -> int:
        return int(self.mass.shape[0])

    @cached_property
    def static_rows(self) -> np.ndarray:
        """(S,) int64 rows of the static actors, ascending."""
        return np.flatnonzero(self.is_static)

    @cached_property
    def sqrt_inertia(self) -> np.ndarray:
        """(N, 3, 3) principal square roots of the body-frame inertia, for the convergence weights (built once
        per model: the step used to look them up by the inertia's bytes every substep)."""
        return _sqrt_inertia(self.inertia)

    @cached_property
    def sqrt_mass(self) -> np.ndarray:
        """(N,) sqrt(max(mass, 0)), the convergence weights' mass factor."""
        return np.sqrt(np.maximum(self.mass, 0.0))

    @cached_property
    def kernel_arrays(self) -> "BodyKernelArrays":
        """The arrays the kernels read, C-contiguous and writable (sim/jit.py), built once per model."""
        return BodyKernelArrays(
            mass=kernel_array(self.mass),
            second_moment=kernel_array(self.second_moment),
            is_static=kernel_array(self.is_static, np.bool_),
            has_gravity=kernel_array(self.has_gravity, np.bool_),
            rotational_inertia=kernel_array(~self.is_static & ~self.newton_euler, np.bool_),
            inertia=kernel_array(self.inertia),
            newton_euler=kernel_array(~self.is_static & self.newton_euler, np.bool_),
        )


# Per-body arrays for the kernels; rotational_inertia / newton_euler (N,) mark the dynamic bodies of each form.
BodyKernelArrays = namedtuple("BodyKernelArrays",
                              "mass second_moment is_static has_gravity rotational_inertia inertia newton_euler")


@dataclass(frozen=True)
class Model:
    bodies: Bodies
    potentials: tuple = ()  # extra potentials (contact, constraints) that own model-level data


def compile_bodies(records) -> Bodies:
    """Build the per-actor arrays from the scene's actor records (in scene order)."""
    n = len(records)
    mass = np.array([0.0 if r.is_static else r.mass for r in records], dtype=np.float64).reshape(n)
    second = np.array([r.second_moment for r in records], dtype=np.float64).reshape(n, 3, 3)
    inertia = np.trace(second, axis1=1, axis2=2)[:, None, None] * np.eye(3) - second
    is_static = np.array([r.is_static for r in records], dtype=bool).reshape(n)
    return Bodies(
        mass=mass,
        second_moment=np.where(is_static[:, None, None], 0.0, second),
        inertia=np.where(is_static[:, None, None], 0.0, inertia),
        com_local=np.array([r.com_local for r in records], dtype=np.float64).reshape(n, 3),
        is_static=is_static,
        has_gravity=np.array([r.has_gravity for r in records], dtype=bool).reshape(n),
        newton_euler=np.array([r.newton_euler for r in records], dtype=bool).reshape(n),
        static_pivot=np.array([r.static_pivot for r in records], dtype=np.float64).reshape(n, 3),
    )


def _sqrt_inertia(inertia: np.ndarray) -> np.ndarray:
    vals, vecs = np.linalg.eigh(inertia)
    return (vecs * np.sqrt(np.maximum(vals, 0.0))[:, None, :]) @ np.swapaxes(vecs, -1, -2)


def convergence_weights(bodies: Bodies, rotation: np.ndarray, gravity: np.ndarray):
    """Per-actor residual weights of PER_ACTOR_WEIGHTED convergence (the reference's rule, measured on the fp64
    build: tools/reference_runs/convergence_weights.py, agreement 1e-10).

    a_ref = max(1, |g|); force weight 1/(m a_ref)^2 on the 3 translational DoFs; rotational DoF i weight 1/tau_i^2
    with tau_i = a_ref sqrt(m) (sqrt(R I R^T))_ii, the principal square root of the world inertia. A non-positive
    scale gets weight 1. So a body at rest under gravity has weighted residual exactly 1.

    Returns force_weight (N,) and torque_weight (W, N, 3), from the rotations (W, N, 3, 3) at step start.
    """
    a_ref = max(1.0, float(np.linalg.norm(gravity)))
    # sqrt(R I R^T) = R sqrt(I) R^T; sqrt(I) from the local eigen-decomposition (I is constant per body). One
    # kernel, bit for bit `convergence_weights_numpy`'s einsum and selections.
    torque_weight = np.empty(rotation.shape[:-1])
    torque_weights(kernel_array(rotation), kernel_array(bodies.sqrt_inertia), kernel_array(bodies.sqrt_mass), a_ref,
                   torque_weight)
    return _force_weight(bodies, a_ref), torque_weight


def convergence_weights_numpy(bodies: Bodies, rotation: np.ndarray, gravity: np.ndarray):
    """`convergence_weights` in numpy only (the oracle tests/test_step_kernels.py holds the kernel to)."""
    a_ref = max(1.0, float(np.linalg.norm(gravity)))
    sqrt_world_diag = np.einsum("wnij,njk,wnik->wni", rotation, bodies.sqrt_inertia, rotation)
    tau = a_ref * bodies.sqrt_mass[None, :, None] * sqrt_world_diag
    torque_weight = np.where(tau > 0, 1.0 / np.where(tau > 0, tau, 1.0) ** 2, 1.0)
    return _force_weight(bodies, a_ref), torque_weight


def _force_weight(bodies: Bodies, a_ref: float) -> np.ndarray:
    """(N,) 1/(m a_ref)^2, 1 where that scale is not positive; kept per model and a_ref (it depends on nothing
    else, and the step asks for it every substep). Callers only read it."""
    cache = bodies.__dict__.setdefault("_force_weight", {})  # frozen dataclass: the cache lives in its __dict__
    weight = cache.get(a_ref)
    if weight is None:
        force_scale = bodies.mass * a_ref
        weight = np.where(force_scale > 0, 1.0 / np.where(force_scale > 0, force_scale, 1.0) ** 2, 1.0)
        if len(cache) >= 4:
            cache.clear()
        cache[a_ref] = weight
    return weight


@dataclass
class Kinematics:
    """A pose + velocity state of all actors in all worlds (one completed step or one stage)."""

    com_position: np.ndarray  # (W, N, 3) m, world CoM
    rotation: np.ndarray  # (W, N, 3, 3) world-from-body
    linear_velocity: np.ndarray  # (W, N, 3) m/s, world CoM velocity
    angular_velocity: np.ndarray  # (W, N, 3) rad/s, world omega
    velocity_sym: np.ndarray  # (W, N, 3, 3) 1/s, symmetric part S of the rotation finite difference

    # The five fields written out: a generic walk over dataclasses.fields() cost more than the copies themselves
    # (copy runs several times per step: the step's new history entry and every env substep's snapshot).
    def copy(self) -> "Kinematics":
        return Kinematics(self.com_position.copy(), self.rotation.copy(), self.linear_velocity.copy(),
                          self.angular_velocity.copy(), self.velocity_sym.copy())

    def take(self, worlds: np.ndarray) -> "Kinematics":
        return Kinematics(self.com_position[worlds], self.rotation[worlds], self.linear_velocity[worlds],
                          self.angular_velocity[worlds], self.velocity_sym[worlds])

    def put(self, worlds: np.ndarray, other: "Kinematics") -> None:
        self.com_position[worlds] = other.com_position
        self.rotation[worlds] = other.rotation
        self.linear_velocity[worlds] = other.linear_velocity
        self.angular_velocity[worlds] = other.angular_velocity
        self.velocity_sym[worlds] = other.velocity_sym

    @staticmethod
    def at_rest(num_worlds: int, num_bodies: int) -> "Kinematics":
        rot = np.zeros((num_worlds, num_bodies, 3, 3))
        rot[...] = np.eye(3)
        return Kinematics(
            com_position=np.zeros((num_worlds, num_bodies, 3)),
            rotation=rot,
            linear_velocity=np.zeros((num_worlds, num_bodies, 3)),
            angular_velocity=np.zeros((num_worlds, num_bodies, 3)),
            velocity_sym=np.zeros((num_worlds, num_bodies, 3, 3)),
        )


@dataclass
class State:
    """Everything that changes during simulation, with a leading world axis.

    ``history[0]`` is the current completed step y_n, ``history[1]`` is y_{n-1}, ... (at most 3, for BDF3).
    ``num_history`` (W,) counts the valid entries per world; setting a pose or velocity resets it to 1 so the
    next step of a multistep method falls back to backward Euler (digest 3.2).
    Static actors' rows of ``history[0]`` hold their prescribed pose; ``static_previous_*`` hold the pose at the
    end of the previous step, so their velocity is implied by consecutive poses.
    """

    history: list  # list[Kinematics], newest first
    num_history: np.ndarray  # (W,) int
    sym_dirty: np.ndarray  # (W, N) bool: S must be re-derived from omega at the next stage (digest 2.4)
    static_previous_com: np.ndarray  # (W, N, 3)
    static_previous_rotation: np.ndarray  # (W, N, 3, 3)
    external_force: np.ndarray  # (W, N, 6) world force / torque on the DoFs, persists until cleared
    offset_force: np.ndarray  # (W, N, K, 3) world forces at body offsets
    offset_local: np.ndarray  # (N, K, 3) body-frame offsets from the CoM
    status: np.ndarray  # (W,) int ConvergenceStatus value of the last step
    time: float = 0.0  # s, total simulated time (the same in every world)
    last_dt: float = 0.0

    @property
    def current(self) -> Kinematics:
        return self.history[0]

    @property
    def num_worlds(self) -> int:
        return int(self.num_history.shape[0])

    def copy(self) -> "State":
        """A deep copy: every array copied, the history's Kinematics too (written out: copy.deepcopy's generic
        walk cost ~0.4 ms per call, taken before every env substep by the env guard)."""
        return State(
            history=[h.copy() for h in self.history],
            num_history=self.num_history.copy(),
            sym_dirty=self.sym_dirty.copy(),
            static_previous_com=self.static_previous_com.copy(),
            static_previous_rotation=self.static_previous_rotation.copy(),
            external_force=self.external_force.copy(),
            offset_force=self.offset_force.copy(),
            offset_local=self.offset_local.copy(),
            status=self.status.copy(),
            time=self.time,
            last_dt=self.last_dt,
        )
