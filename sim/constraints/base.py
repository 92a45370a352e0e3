"""Compliant constraints as a potential: the energy, residual and Hessian shared by every type (digest 8).

A constraint type provides its value ``g(q, p_hat)`` (3 components) with the Jacobian ``J = dg/dq`` per
constrained actor and, for the exact Hessian, the curvature ``sum_i lam_i d^2 g_i / dq^2``. This module turns that
into the stage potential of ``physics/docs/concepts/constraints.mdx``:

    Phi = U(g) + d / (2 dt_i) |Delta g|^2,   Delta g = g(q, p_hat) - g(q_i^0, p_hat_i^0)
    U = k/2 |g|^2                      (saturation off, saturation < 0)
    U = k gbar rho(|g|)                (saturation gbar > 0), rho = IPCstepC1 with ramp width t = gbar

``q_i^0`` is the stage-start pose (``ctx.com_position0 / rotation0``) and ``p_hat_i^0`` the *old* target: the target
of the previous step (`advance_old_targets`, called by the pipeline after every completed step, as the reference's
``PostStepEcs`` does), or the new one after `update_old_target`. Moving a target between steps therefore damps.

Chain rule (``x = |g|``, ``rho'(x)/x`` regular at 0, ``rho''``):

    dPhi/dg = lam = kappa g + (d/dt_i) Delta g,   kappa = k  or  k gbar rho'(x)/x
    r       = J^T lam                                                   (the residual; the force is -r)
    d2Phi/dg2 = (kappa + d/dt_i) 1 [+ k gbar (rho'' - rho'/x) g g^T / x^2 with saturation]
    K_exact = J^T (d2Phi/dg2) J + sum_i lam_i d^2 g_i/dq^2
    K_GN    = (kappa + d/dt_i) J^T J                                    (default, PSD; the reference's
                                                                         "fitted saturation Hessian")

With the ramp width ``t = gbar``: ``rho(x) = x^2/gbar - x^3/(3 gbar^2)`` below ``gbar``, ``x - gbar/3`` above, so
``U ~ k x^2`` near 0 (effective stiffness 2k) and ``|dU/dg| = k gbar rho'(x) <= k gbar`` (the force cap). The
reference evaluates ``IPCstepC1(|g|, saturation)`` and scales it by ``maxForce = stiffness * saturation``
(``mochi_constraint.cpp``, ``ComputeLocalObjResDRes``). Saturation does not touch the damping term.

Range constraints need no special case: their ``g`` and ``J`` vanish inside the bounds, so a constraint inside
its bounds at both the iterate and the stage start contributes exactly nothing, and one that was violated only
at the stage start contributes the constant ``d/(2 dt_i)|g^0|^2`` with zero gradient (as in the reference, where
it is "active" when active at either).

Frames: the engine state is the CoM pose ``(c, R)`` with ``x_world = c + R (x_local - com_local)``; pivots given
in the actor's local (root transform) frame become CoM-frame arms ``x_local - com_local`` at evaluation time, from
the ``com_local`` this set holds (`set_com_local` when the scene's actors change).
"""

from __future__ import annotations

import operator
from types import MappingProxyType
from typing import Callable, Mapping, NamedTuple, Optional

import numpy as np

from .. import lie
from ..contact.ramp import step_c1
from ..jit import kernel_array
from ..kernels import constraints as constraint_kernels
from ..kernels import joints as joint_kernels
from ..potentials.base import Coupling, PotentialTerms, StageContext
from .params import ConstraintParams, check_damping, check_saturation, check_stiffness

ALL_DOFS = (0, 1, 2, 3, 4, 5)
TRANSLATION_DOFS = (0, 1, 2)
ROTATION_DOFS = (3, 4, 5)

_NO_HESSIAN = np.zeros((0, 0, 6, 6))  # the kernels' Hessian output when none is asked for (never written)

# Tolerance on |R^T R - 1| and det(R) for rotation matrices handed to setters.
_ROTATION_TOL = 1e-6


class ConstraintKinematics(NamedTuple):
    """The constraint value, its Jacobian per constrained actor and the curvature of ``lam . g``.

    ``value`` (W, C, 3); ``jacobian`` (W, C, A, 3, 6) or None; ``curvature(lam (W, C, 3))`` -> (W, C, A, A, 6, 6)
    with block [a, b] = d^2 (lam . g) / dq_a dq_b (rotations on the chart theta -> exp(skew(theta)) R), or None.
    """

    value: np.ndarray
    jacobian: Optional[np.ndarray] = None
    curvature: Optional[Callable[[np.ndarray], np.ndarray]] = None


class ConstraintLocalTerms(NamedTuple):
    energy: np.ndarray  # (W, C)
    gradient: np.ndarray  # (W, C, A, 6): dPhi/dq_a, world force/torque residual per constrained actor
    hessian: Optional[np.ndarray]  # (W, C, A, A, 6, 6)


# ---------------------------------------------------------------------------------------------------------------
# Geometric helpers shared by the types.


def checked_stage_dt(stage_dt) -> float:
    """The stage length as a float, or the ValueError that names a non-positive or non-finite one."""
    dt = float(stage_dt)
    if not (np.isfinite(dt) and dt > 0.0):
        raise ValueError(f"stage_dt must be positive and finite, got {stage_dt}")
    return dt


def point_jacobian(arm: np.ndarray, sign: float = 1.0) -> np.ndarray:
    """(..., 3) world arm a = R r -> (..., 3, 6) d(sign * (c + a))/d(c, theta) = sign * [1, -skew(a)]."""
    jac = np.zeros(arm.shape[:-1] + (3, 6))
    jac[..., :, :3] = sign * np.eye(3)
    jac[..., :, 3:] = -sign * lie.skew(arm)
    return jac


def point_curvature(lam: np.ndarray, arm: np.ndarray) -> np.ndarray:
    """d^2 (lam . exp(skew(theta)) a) / d theta^2 at 0 = sym(lam a^T) - (lam . a) 1, from a + t x a + t x (t x a)/2."""
    outer = lam[..., :, None] * arm[..., None, :]
    return lie.sym(outer) - np.einsum("...i,...i->...", lam, arm)[..., None, None] * np.eye(3)


def as_rotation_batch(value, num_worlds: int, name: str) -> np.ndarray:
    """A (3, 3) or (W, 3, 3) rotation matrix -> (W, 3, 3), checked orthonormal with det +1."""
    arr = np.asarray(value, dtype=np.float64)
    if arr.shape == (3, 3):
        arr = np.broadcast_to(arr, (num_worlds, 3, 3))
    if arr.shape != (num_worlds, 3, 3):
        raise ValueError(f"{name} must have shape (3, 3) or ({num_worlds}, 3, 3), got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite")
    ortho = np.abs(np.swapaxes(arr, -1, -2) @ arr - np.eye(3)).max()
    if ortho > _ROTATION_TOL or np.any(np.linalg.det(arr) < 0.0):
        raise ValueError(f"{name} must be a rotation matrix (orthonormal, det +1); |R^T R - 1| = {ortho:.3g}")
    return np.array(arr)


def as_vector_batch(value, num_worlds: int, name: str) -> np.ndarray:
    """A (3,) or (W, 3) finite vector -> (W, 3)."""
    arr = np.asarray(value, dtype=np.float64)
    if arr.shape == (3,):
        arr = np.broadcast_to(arr, (num_worlds, 3))
    if arr.shape != (num_worlds, 3):
        raise ValueError(f"{name} must have shape (3,) or ({num_worlds}, 3), got {arr.shape}")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} must be finite, got {arr.tolist()}")
    return np.array(arr)


# ---------------------------------------------------------------------------------------------------------------


class RigidConstraintSet:
    """All constraints of one type, for every world; a `Potential` (``evaluate``) plus the runtime interface.

    Storage (C constraints, W worlds, A = actors per constraint):

    * ``actors`` (C, A) int model indices; ``stiffness``, ``damping``, ``saturation`` (C,)
    * ``_data[name]`` (C, ...) creation data shared by all worlds (local offsets, limits)
    * ``_world_data[name]`` (W, C, ...) creation data measured from each world's pose (joint frames)
    * ``_targets[name]`` / ``_old_targets[name]`` (W, C, ...) current and stage-start targets

    Subclasses set the class attributes and implement ``_prepare`` (params -> one constraint's arrays) and
    ``_kinematics`` (poses -> value, Jacobian, curvature, vectorized over W and C).

    ``exact_hessian=True`` adds the curvature of g and the exact saturation Hessian (used by the
    finite-difference tests; it can be indefinite). The default is the reference's Gauss-Newton Hessian.
    """

    constraint_type: str = ""
    params_type: type = ConstraintParams
    num_constrained_actors: int = 1
    actor_dofs: tuple = (ALL_DOFS,)  # DoF indices per constrained actor (``get_dof_indices_for_actor``)
    # name -> trailing shape, per storage kind (read-only class constants; subclasses replace them)
    data_shapes: Mapping = MappingProxyType({})
    world_data_shapes: Mapping = MappingProxyType({})
    target_shapes: Mapping = MappingProxyType({})

    def __init__(self, com_local: np.ndarray, num_worlds: int, *, exact_hessian: bool = False):
        if int(num_worlds) < 1:
            raise ValueError(f"num_worlds must be >= 1, got {num_worlds}")
        self.num_worlds = int(num_worlds)
        self.exact_hessian = bool(exact_hessian)
        self.set_com_local(com_local)
        a = self.num_constrained_actors
        self.actors = np.zeros((0, a), dtype=np.int64)
        self.stiffness = np.zeros(0)
        self.damping = np.zeros(0)
        self.saturation = np.zeros(0)
        w = self.num_worlds
        self._data = {k: np.zeros((0,) + s) for k, s in self.data_shapes.items()}
        self._world_data = {k: np.zeros((w, 0) + s) for k, s in self.world_data_shapes.items()}
        self._targets = {k: np.zeros((w, 0) + s) for k, s in self.target_shapes.items()}
        self._old_targets = {k: np.zeros((w, 0) + s) for k, s in self.target_shapes.items()}

    # -- construction -------------------------------------------------------------------------------------------

    def __len__(self) -> int:
        return int(self.actors.shape[0])

    @property
    def num_bodies(self) -> int:
        return int(self.com_local.shape[0])

    def set_com_local(self, com_local: np.ndarray) -> None:
        """(N, 3) CoM of every model actor in its local frame (``model.bodies.com_local``)."""
        com_local = np.asarray(com_local, dtype=np.float64)
        if com_local.ndim != 2 or com_local.shape[1] != 3:
            raise ValueError(f"com_local must have shape (N, 3), got {com_local.shape}")
        if not np.all(np.isfinite(com_local)):
            raise ValueError("com_local must be finite")
        self.com_local = np.array(com_local)

    def add(self, params, com_position: Optional[np.ndarray] = None, rotation: Optional[np.ndarray] = None) -> int:
        """Append one constraint; returns its index. Actor fields of ``params`` must be model indices (ints).

        ``com_position`` (W, N, 3) / ``rotation`` (W, N, 3, 3) are the current poses, needed by the types that
        freeze a creation-time frame or target (prismatic, rotation range / tracking); ignored by the others.
        """
        if not isinstance(params, self.params_type):
            raise TypeError(
                f"{type(self).__name__}.add expects {self.params_type.__name__}, got {type(params).__name__}"
            )
        params.validate(require_complete=True)
        actors = self._actor_indices(params)
        if com_position is not None or rotation is not None:
            com_position, rotation = self._check_pose(com_position, rotation)
        data, world_data, targets = self._prepare(params, actors, com_position, rotation)
        self.actors = np.concatenate([self.actors, np.asarray(actors, dtype=np.int64)[None]], axis=0)
        self.stiffness = np.append(self.stiffness, check_stiffness(params.stiffness))
        self.damping = np.append(self.damping, check_damping(params.damping))
        self.saturation = np.append(self.saturation, check_saturation(params.saturation))
        for k, s in self.data_shapes.items():
            self._data[k] = np.concatenate([self._data[k], np.broadcast_to(data[k], s)[None]], axis=0)
        w = self.num_worlds
        for k, s in self.world_data_shapes.items():
            value = np.broadcast_to(world_data[k], (w,) + s)[:, None]
            self._world_data[k] = np.concatenate([self._world_data[k], value], axis=1)
        for k, s in self.target_shapes.items():
            value = np.broadcast_to(targets[k], (w,) + s)[:, None]
            self._targets[k] = np.concatenate([self._targets[k], value], axis=1)
            self._old_targets[k] = np.concatenate([self._old_targets[k], value], axis=1)
        return len(self) - 1

    def _actor_indices(self, params) -> tuple:
        names = ("actor",) if self.num_constrained_actors == 1 else ("actor_a", "actor_b")
        out = []
        for name in names:
            value = getattr(params, name)
            try:
                index = operator.index(value)
            except TypeError as exc:
                raise TypeError(
                    f"{name} must be a model actor index (int) here; the scene resolves actor objects, got {value!r}"
                ) from exc
            if not 0 <= index < self.num_bodies:
                raise ValueError(f"{name} index {index} out of range for {self.num_bodies} actors")
            out.append(index)
        if len(out) == 2 and out[0] == out[1]:
            raise ValueError("Constrained objects cannot be the same (actor_a == actor_b)")
        return tuple(out)

    def _check_pose(self, com_position, rotation):
        if com_position is None or rotation is None:
            raise ValueError("com_position and rotation must be given together")
        com_position = np.asarray(com_position, dtype=np.float64)
        rotation = np.asarray(rotation, dtype=np.float64)
        w, n = self.num_worlds, self.num_bodies
        if com_position.shape != (w, n, 3) or rotation.shape != (w, n, 3, 3):
            raise ValueError(
                f"poses must have shapes ({w}, {n}, 3) and ({w}, {n}, 3, 3), "
                f"got {com_position.shape} and {rotation.shape}"
            )
        if not (np.all(np.isfinite(com_position)) and np.all(np.isfinite(rotation))):
            raise ValueError("poses must be finite")
        return com_position, rotation

    def _require_pose(self, com_position, rotation):
        if com_position is None:
            raise ValueError(f"{self.constraint_type} constraints need the current poses at creation")
        return com_position, rotation

    # -- removal ------------------------------------------------------------------------------------------------

    def remove(self, indices) -> np.ndarray:
        """Drop constraints; returns the (C_old,) map old index -> new index (-1 for removed ones)."""
        keep = np.ones(len(self), dtype=bool)
        idx = np.atleast_1d(np.asarray(indices, dtype=np.int64))
        if idx.size and (idx.min() < 0 or idx.max() >= len(self)):
            raise IndexError(f"constraint index out of range for {len(self)} {self.constraint_type} constraints")
        keep[idx] = False
        return self._keep(keep)

    def remap_actors(self, actor_map: np.ndarray, com_local: Optional[np.ndarray] = None) -> np.ndarray:
        """Follow a change of the model's actor list. ``actor_map`` (N_old,) gives each old actor's new index, or
        -1 if it was destroyed; constraints on a destroyed actor are dropped (the reference auto-destroys them).
        Returns the constraint map old index -> new index (-1 for dropped). ``com_local`` is the new model's."""
        actor_map = np.asarray(actor_map, dtype=np.int64)
        if actor_map.ndim != 1 or (len(self) and actor_map.shape[0] <= self.actors.max()):
            raise ValueError(
                f"actor_map must be (N_old,) covering every constrained actor, got shape {actor_map.shape}"
            )
        new_actors = actor_map[self.actors] if len(self) else self.actors
        keep = np.all(new_actors >= 0, axis=1)
        self.actors = new_actors
        if com_local is not None:
            self.set_com_local(com_local)
        mapping = self._keep(keep)
        if len(self) and self.actors.max() >= self.num_bodies:
            raise ValueError("remapped actor index beyond com_local; pass the new model's com_local")
        return mapping

    def _keep(self, keep: np.ndarray) -> np.ndarray:
        mapping = np.full(len(self), -1, dtype=np.int64)
        mapping[keep] = np.arange(int(keep.sum()))
        self.actors = self.actors[keep]
        self.stiffness = self.stiffness[keep]
        self.damping = self.damping[keep]
        self.saturation = self.saturation[keep]
        for k in self._data:
            self._data[k] = self._data[k][keep]
        for store in (self._world_data, self._targets, self._old_targets):
            for k in store:
                store[k] = store[k][:, keep]
        return mapping

    # -- runtime parameters -------------------------------------------------------------------------------------

    def _index(self, index) -> np.ndarray:
        if type(index) is int:  # one row, the drives' every-substep case: checked without numpy's reductions
            if not 0 <= index < len(self):
                raise IndexError(
                    f"constraint index {index} out of range for {len(self)} {self.constraint_type} constraints"
                )
            return np.int64(index)
        idx = np.asarray(index, dtype=np.int64)
        if idx.size and (idx.min() < 0 or idx.max() >= len(self)):
            raise IndexError(
                f"constraint index {index} out of range for {len(self)} {self.constraint_type} constraints"
            )
        return idx

    def set_stiffness(self, index, stiffness: float) -> None:
        self.stiffness[self._index(index)] = check_stiffness(stiffness)

    def set_damping(self, index, damping: float) -> None:
        self.damping[self._index(index)] = check_damping(damping)

    def set_saturation(self, index, saturation: float) -> None:
        self.saturation[self._index(index)] = check_saturation(saturation)

    def _worlds(self, worlds) -> np.ndarray:
        if worlds is None:
            return np.arange(self.num_worlds)
        if type(worlds) is np.ndarray and worlds.dtype == np.int64 and worlds.ndim == 1:
            # the scene's own world lists (Constraint methods pass scene._worlds(...)): only the range to check,
            # in Python for a few worlds (two numpy reductions cost more there)
            n = self.num_worlds
            if (not all(0 <= x < n for x in worlds.tolist()) if worlds.size <= 16 else
                    worlds.size and (worlds.min() < 0 or worlds.max() >= n)):
                raise IndexError(f"world index out of range for {self.num_worlds} worlds")
            return worlds
        w = np.atleast_1d(np.asarray(worlds))
        if w.dtype == bool:
            if w.shape != (self.num_worlds,):
                raise ValueError(f"world mask must have shape ({self.num_worlds},), got {w.shape}")
            return np.nonzero(w)[0]
        w = w.astype(np.int64)
        if w.size and (w.min() < 0 or w.max() >= self.num_worlds):
            raise IndexError(f"world index out of range for {self.num_worlds} worlds")
        return w

    def _assign_target(self, name: str, index, value, worlds, checker) -> None:
        """Set target ``name`` of one constraint in the selected worlds; ``value`` is one value or one per world."""
        i = int(self._index(index))
        w = self._worlds(worlds)
        self._targets[name][w, i] = checker(value, w.size, name)

    def update_old_target(self, index=None, worlds=None) -> None:
        """Stage-start target := current target (teleport without a damping transient). ``index`` None = all."""
        idx = np.arange(len(self)) if index is None else np.atleast_1d(self._index(index))
        sel = np.ix_(self._worlds(worlds), idx)
        for k in self._targets:
            self._old_targets[k][sel] = self._targets[k][sel]

    def advance_old_targets(self) -> None:
        """End of a completed step: every old target := current target (the reference's ``PostStepEcs``)."""
        for k in self._targets:
            self._old_targets[k] = self._targets[k].copy()

    def get_state(self) -> dict:
        """Copies of the mutable per-world arrays (targets, old targets), for capture_state."""
        return {
            "targets": {k: v.copy() for k, v in self._targets.items()},
            "old_targets": {k: v.copy() for k, v in self._old_targets.items()},
        }

    def set_state(self, state: dict) -> None:
        for key, store in (("targets", self._targets), ("old_targets", self._old_targets)):
            for k in store:
                value = np.asarray(state[key][k], dtype=np.float64)
                if value.shape != store[k].shape:
                    raise ValueError(f"state {key}[{k}] has shape {value.shape}, expected {store[k].shape}")
                store[k] = value.copy()

    # -- type hooks ---------------------------------------------------------------------------------------------

    def _prepare(self, params, actors, com_position, rotation):
        """-> (data {name: trailing-shaped}, world_data {name: (W,)+shape or shape}, targets {...})."""
        raise NotImplementedError

    def _kinematics(
        self, com_position, rotation, targets: dict, frozen: dict, with_jacobian: bool
    ) -> ConstraintKinematics:
        """``targets`` / ``frozen`` (the world data) are already restricted to the worlds of the poses."""
        raise NotImplementedError

    def _select_worlds(self, store: dict, worlds) -> dict:
        return store if worlds is None else {k: v[worlds] for k, v in store.items()}

    def check_world_rows(self, com_position: np.ndarray, worlds):
        """Validate that the poses cover either all worlds (``worlds`` None) or the listed batch worlds."""
        if worlds is None:
            if com_position.shape[0] != self.num_worlds:
                raise ValueError(
                    f"poses cover {com_position.shape[0]} worlds but the set has {self.num_worlds}; "
                    "pass the batch indices of those worlds (ctx.world_index)"
                )
            return None
        worlds = np.asarray(worlds, dtype=np.int64)
        if worlds.shape != (com_position.shape[0],):
            raise ValueError(f"world_index must have shape ({com_position.shape[0]},), got {worlds.shape}")
        return worlds

    def _gather(self, com_position, rotation, slot: int):
        """Poses of the ``slot``-th constrained actor of every constraint: (W, C, 3), (W, C, 3, 3)."""
        a = self.actors[:, slot]
        return com_position[:, a], rotation[:, a]

    def _arm(self, rotation_c: np.ndarray, local_position: np.ndarray, slot: int) -> np.ndarray:
        """World arm R (x_local - com_local) (W, C, 3) of local-frame points (C, 3) on the slot-th actors."""
        body = local_position - self.com_local[self.actors[:, slot]]
        return np.einsum("wcij,cj->wci", rotation_c, body)

    # -- queries ------------------------------------------------------------------------------------------------

    def deviation(self, com_position: np.ndarray, rotation: np.ndarray, worlds=None) -> np.ndarray:
        """(W, C, 3) constraint value g at the given poses and the current targets (``get_deviation``).

        ``worlds`` lists the batch worlds the poses belong to (default: all worlds, in order)."""
        if len(self) == 0:
            return np.zeros((com_position.shape[0], 0, 3))
        worlds = self.check_world_rows(com_position, worlds)
        targets = self._select_worlds(self._targets, worlds)
        frozen = self._select_worlds(self._world_data, worlds)
        return self._kinematics(com_position, rotation, targets, frozen, with_jacobian=False).value

    def force(self, ctx: StageContext, com_position: np.ndarray, rotation: np.ndarray) -> np.ndarray:
        """(W, C, A, 6) generalized constraint force -r = -J^T lam on each constrained actor: world force [N] and
        torque about its CoM [N m] (``get_force``; evaluate with the last stage's context and the end pose).
        Components outside ``actor_dofs`` are zero."""
        if len(self) == 0:
            return np.zeros((com_position.shape[0], 0, self.num_constrained_actors, 6))
        return -self.local_terms(ctx, com_position, rotation, want_hessian=False).gradient

    def local_terms(
        self, ctx: StageContext, com_position: np.ndarray, rotation: np.ndarray, want_hessian: bool
    ) -> ConstraintLocalTerms:
        """Per-constraint energy, gradient and Hessian blocks (see the module docstring for the formulas)."""
        dt = checked_stage_dt(ctx.stage_dt)
        worlds = self.check_world_rows(com_position, getattr(ctx, "world_index", None))
        frozen = self._select_worlds(self._world_data, worlds)
        targets = self._select_worlds(self._targets, worlds)
        old_targets = self._select_worlds(self._old_targets, worlds)
        kin = self._kinematics(com_position, rotation, targets, frozen, with_jacobian=True)
        g = kin.value
        k = self.stiffness
        damp = self.damping / dt  # d / dt_i
        damped = bool(np.any(damp != 0.0))
        saturated = self.saturation > 0.0
        any_saturated = bool(np.any(saturated))
        norm2 = np.einsum("wci,wci->wc", g, g)
        finite = np.isfinite(norm2)  # a diverged iterate must give a non-finite energy, not an exception
        if damped:  # the stage-start value is needed only by the damping term
            g_old = self._kinematics(ctx.com_position0, ctx.rotation0, old_targets, frozen, with_jacobian=False).value
            dg = g - g_old
            dissipation = 0.5 * damp * np.einsum("wci,wci->wc", dg, dg)
        else:
            dissipation = 0.0
        if any_saturated:
            norm = np.sqrt(norm2)
            ramp = step_c1(np.where(finite, norm, 0.0), np.where(saturated, self.saturation, 1.0))
            max_force = k * np.where(saturated, self.saturation, 0.0)  # k gbar
            elastic = np.where(saturated, max_force * ramp.value, 0.5 * k * norm2)
            kappa = np.where(saturated, max_force * ramp.d1_over_x, k)
        else:  # the same values without the ramp (saturation off everywhere)
            elastic = 0.5 * k * norm2
            kappa = np.broadcast_to(k, norm2.shape)
        energy = np.where(finite, elastic + dissipation, np.nan)
        lam = kappa[..., None] * g
        if damped:
            lam = lam + damp[:, None] * dg
        grad = np.einsum("wcaid,wci->wcad", kin.jacobian, lam)
        hess = None
        if want_hessian:
            jtj = np.einsum("wcaid,wcbie->wcabde", kin.jacobian, kin.jacobian)
            hess = (kappa + damp)[..., None, None, None, None] * jtj
            if self.exact_hessian:
                if any_saturated:
                    # (rho'' - rho'/x) along g/|g|; zero where g = 0 (its limit there).
                    safe = np.where(norm > 0.0, norm, 1.0)
                    unit = np.where((norm > 0.0)[..., None], g / safe[..., None], 0.0)
                    radial = np.where(saturated, max_force * (ramp.d2 - ramp.d1_over_x), 0.0)
                    ju = np.einsum("wcaid,wci->wcad", kin.jacobian, unit)
                    hess = hess + radial[..., None, None, None, None] * np.einsum("wcad,wcbe->wcabde", ju, ju)
                hess = hess + kin.curvature(lam)
        return ConstraintLocalTerms(energy, grad, hess)

    def _values_kernel(self, com_position, rotation, world_rows, targets: dict, with_jacobian: bool):
        """This type's value g (W, C, 3) and Jacobian J (W, C, 3, 6) for one actor, (W, C, 2, 3, 6) for two, from
        its kernel (sim/kernels/constraints.py, joints.py), or None for the types that have none (their numpy
        `_kinematics` runs instead)."""
        return None

    def target_array(self, name: str) -> np.ndarray:
        """The (W, C, ...) array of target ``name`` itself (its setters write it in place): a compiled step reads the
        current targets from it every stage."""
        return self._targets[name]

    def packed_geometry(self) -> tuple:
        """The compiled Newton's per-constraint geometry of a joint type, in its packed order (kernels/joints.py,
        `joint_set_terms`); pivot types have none."""
        raise NotImplementedError(f"{self.constraint_type} has no packed joint geometry")

    def stage_start_values(self, com0, rot0, world_rows) -> np.ndarray:
        """g (W, C, 3) at the stage-start poses and the old targets (the damping term's), from this type's kernel."""
        return self._values_kernel(kernel_array(com0), kernel_array(rot0), world_rows, self._old_targets, False)[0]

    def _evaluate_kernel(self, ctx, com_position, rotation, want_hessian, terms) -> bool:
        """Add this set's terms into ``terms`` with the kernels (Gauss-Newton Hessian); False when this type has
        no kernel. Two-actor sets append their A-B blocks as one `Coupling`, as `evaluate_numpy` does."""
        dt = checked_stage_dt(ctx.stage_dt)
        worlds = self.check_world_rows(com_position, ctx.world_index)
        world_rows = np.arange(com_position.shape[0]) if worlds is None else worlds
        com, rot = kernel_array(com_position), kernel_array(rotation)
        current = self._values_kernel(com, rot, world_rows, self._targets, True)
        if current is None:
            return False
        g, jac = current
        damp = self.damping / dt  # d / dt_i
        damped = bool(np.any(damp != 0.0))
        g_old = g
        if damped:  # the stage-start value is needed only by the damping term
            g_old = self.stage_start_values(ctx.com_position0, ctx.rotation0, world_rows)
        hessian = terms.hessian_diag if want_hessian else _NO_HESSIAN
        if self.num_constrained_actors == 1:
            constraint_kernels.one_actor_compliance(
                g, g_old, jac, kernel_array(self.actors[:, 0], np.int64), kernel_array(self.stiffness), damp,
                kernel_array(self.saturation), damped, want_hessian, terms.energy, terms.gradient, hessian)
            return True
        coupling = np.empty((g.shape[0], len(self), 6, 6)) if want_hessian else _NO_HESSIAN
        joint_kernels.two_actor_compliance(
            g, g_old, jac, kernel_array(self.actors, np.int64), kernel_array(self.stiffness), damp,
            kernel_array(self.saturation), damped, want_hessian, terms.energy, terms.gradient, hessian, coupling)
        if want_hessian:
            pairs = self.actors.copy()
            terms.couplings.append(Coupling(pairs[:, 0], pairs[:, 1], coupling))
        return True

    def _distinct_rows(self, slot: int) -> bool:
        rows = self.actors[:, slot]
        key = (slot, rows.tobytes())
        cache = self.__dict__.setdefault("_distinct_cache", {})
        if key not in cache:
            if len(cache) > 64:
                cache.clear()
            cache[key] = np.unique(rows).size == rows.size
        return cache[key]

    def evaluate(
        self, ctx: StageContext, com_position: np.ndarray, rotation: np.ndarray, want_hessian: bool,
        out: PotentialTerms | None = None,
    ) -> PotentialTerms:
        """This set's terms, added into ``out`` when given (and returned)."""
        num_worlds, num_bodies = com_position.shape[:2]
        terms = PotentialTerms.zeros(num_worlds, num_bodies, want_hessian) if out is None else out
        if len(self) == 0:
            return terms
        if num_bodies != self.num_bodies:
            raise ValueError(f"poses have {num_bodies} actors but com_local has {self.num_bodies}; call set_com_local")
        if not self.exact_hessian and self._evaluate_kernel(ctx, com_position, rotation, want_hessian, terms):
            return terms
        return self.evaluate_numpy(ctx, com_position, rotation, want_hessian, terms)

    def evaluate_numpy(self, ctx, com_position, rotation, want_hessian, terms: PotentialTerms) -> PotentialTerms:
        """`evaluate` through `local_terms` (numpy): the oracle of the kernel path, and the path of the types
        without kernels and of ``exact_hessian`` (the FD tests' exact curvature)."""
        local = self.local_terms(ctx, com_position, rotation, want_hessian)
        terms.energy = terms.energy + local.energy.sum(axis=1)
        every_world = slice(None)
        for a in range(self.num_constrained_actors):
            rows = self.actors[:, a]
            if self._distinct_rows(a):  # fancy-index += is exact for distinct rows and much faster than add.at
                terms.gradient[:, rows] += local.gradient[:, :, a]
                if want_hessian:
                    terms.hessian_diag[:, rows] += local.hessian[:, :, a, a]
                continue
            np.add.at(terms.gradient, (every_world, rows), local.gradient[:, :, a])
            if want_hessian:
                np.add.at(terms.hessian_diag, (every_world, rows), local.hessian[:, :, a, a])
        if want_hessian and self.num_constrained_actors == 2:
            pairs = self.actors.copy()
            terms.couplings.append(Coupling(pairs[:, 0], pairs[:, 1], local.hessian[:, :, 0, 1]))
        return terms
