"""One-actor constraints against kinematic targets: RigidPivotPosition, RigidPivotToRigidTarget, RigidPivotRotation.

Values (``physics/docs/concepts/constraints.mdx``, "Rigid Pivots to Kinematic Targets"), with the pivot ``x`` in
the actor's local frame and its CoM-frame arm ``a = R (x - com_local)``:

* RigidPivotPosition:      g = c + a - p_hat;                  J = [1, -skew(a)]
* RigidPivotToRigidTarget: g = c + a - (t_hat + R_hat x_t);    J = [1, -skew(a)]
* RigidPivotRotation:      g = Log(R R_l R_hat^T);             J = [0, Jl^{-1}(g)]  (left increments of R
                                                                 act on the left of the product)

Curvature of ``lam . g`` (rotation-rotation block only; g is linear in c): ``sym(lam a^T) - (lam . a) 1`` for the
points, ``rotation_log.log_hessian_contracted`` for the rotation.

RigidPivotToRigidTarget target frame: the docs define the target point as ``T_hat(x)``, the same local point under
the prescribed (world-from-local) target transform, so ``x_t = x`` and ``target_transform`` is a pose of the
actor's local frame, like ``actor.get_transform()``. The released engine instead applies the target to the CoM-frame
arm, ``x_t = x - com_local`` (``mochi_constraint.cpp`` passes ``posLocal - com`` to both points), which makes the
target a CoM-frame pose; ``target_transform_is_com_frame=True`` reproduces that. The two agree when com_local = 0.
"""

from __future__ import annotations

from types import MappingProxyType

import numpy as np

from .. import lie
from ..jit import kernel_array
from ..kernels import constraints as constraint_kernels
from .base import (
    ALL_DOFS,
    ROTATION_DOFS,
    ConstraintKinematics,
    RigidConstraintSet,
    as_rotation_batch,
    as_vector_batch,
    point_curvature,
    point_jacobian,
)
from .params import (
    RigidPivotPositionConstraintParams,
    RigidPivotRotationConstraintParams,
    RigidPivotToRigidTargetConstraintParams,
    finite_vector3,
)
from .rotation_log import log_and_inverse_jacobian, log_hessian_contracted


_NO_JACOBIAN = np.zeros((0, 0, 3, 6))  # the kernels' Jacobian output when none is asked for (never written)


def _kernel_outputs(num_worlds: int, num_constraints: int, with_jacobian: bool):
    g = np.empty((num_worlds, num_constraints, 3))
    return g, (np.empty((num_worlds, num_constraints, 3, 6)) if with_jacobian else _NO_JACOBIAN)


def _point_terms(g: np.ndarray, arm: np.ndarray, with_jacobian: bool) -> ConstraintKinematics:
    """Value/Jacobian/curvature of a one-actor point constraint g = c + a - target."""
    if not with_jacobian:
        return ConstraintKinematics(g)
    jacobian = point_jacobian(arm)[:, :, None]  # (W, C, 1, 3, 6)

    def curvature(lam: np.ndarray) -> np.ndarray:
        out = np.zeros(g.shape[:2] + (1, 1, 6, 6))
        out[:, :, 0, 0, 3:, 3:] = point_curvature(lam, arm)
        return out

    return ConstraintKinematics(g, jacobian, curvature)


class _PointPivots(RigidConstraintSet):
    """The two point pivots' kernel path: g = c + R r - p with this type's target point p (W, C, 3) world
    (`_target_points`), by the point pivots' kernel (kernels/constraints.py `point_pivot_values`)."""

    def _target_points(self, targets) -> np.ndarray:
        """The target point of every constraint (W, C, 3) in the worlds of ``targets`` (this type's target arrays)."""
        raise NotImplementedError

    def _values_kernel(self, com_position, rotation, world_rows, targets, with_jacobian):
        actors, arm_local = self._kernel_geometry()
        g, jac = _kernel_outputs(com_position.shape[0], len(self), with_jacobian)
        constraint_kernels.point_pivot_values(
            com_position, rotation, actors, kernel_array(world_rows, np.int64), arm_local,
            kernel_array(self._target_points(targets)), with_jacobian, g, jac)
        return g, (jac if with_jacobian else None)

    def target_points(self) -> np.ndarray:
        """The current target point of every constraint (W, C, 3)."""
        return self._target_points(self._targets)

    def kernel_geometry(self):
        """(actors (C,) int64, arm_local (C, 3)) as the kernels take them (`_kernel_geometry`)."""
        return self._kernel_geometry()

    def _kernel_geometry(self):
        """(actors (C,) int64, arm_local (C, 3) = local_position - com_local) as kernel arrays, kept until the
        constraints or the CoMs change (every Newton evaluation of the numpy path asks)."""
        key = (self.actors.tobytes(), self._data["local_position"].tobytes(), self.com_local.tobytes())
        cached = self.__dict__.get("_geometry_cache")
        if cached is None or cached[0] != key:
            actors = kernel_array(self.actors[:, 0], np.int64)
            cached = self._geometry_cache = (key, (actors, kernel_array(
                self._data["local_position"] - self.com_local[self.actors[:, 0]])))
        return cached[1]


class RigidPivotPositionConstraints(_PointPivots):
    """World anchors. Target ``position`` (W, C, 3) world [m]."""

    constraint_type = "RigidPivotPosition"
    params_type = RigidPivotPositionConstraintParams
    num_constrained_actors = 1
    actor_dofs = (ALL_DOFS,)
    data_shapes = MappingProxyType({"local_position": (3,)})
    target_shapes = MappingProxyType({"position": (3,)})

    def _prepare(self, params, actors, com_position, rotation):
        data = {"local_position": finite_vector3(params.local_position, "local_position")}
        return data, {}, {"position": finite_vector3(params.target_position, "target_position")}

    def set_target_position(self, index: int, position, worlds=None) -> None:
        """position (3,) or one (3,) per selected world [m]."""
        self._assign_target("position", index, position, worlds, as_vector_batch)

    def target_position(self, index: int) -> np.ndarray:
        return self._targets["position"][:, int(self._index(index))].copy()

    def _kinematics(self, com_position, rotation, targets, frozen, with_jacobian):
        c, r = self._gather(com_position, rotation, 0)
        arm = self._arm(r, self._data["local_position"], 0)
        return _point_terms(c + arm - targets["position"], arm, with_jacobian)

    def _target_points(self, targets) -> np.ndarray:
        return targets["position"]

    def guess_on_targets(self, ctx, guess_c: np.ndarray, guess_r: np.ndarray) -> np.ndarray:
        """Newton start for ``InitialGuess.CONSTANT_VELOCITY_AND_TARGETS``: every dynamic actor held by exactly one
        of these constraints, stiff (k h^2 > 100 m: the target, not the inertia, decides where it ends) and
        undamped, gets its pivot on the target, c = p_hat - R a with R the guessed rotation."""
        ok, rows, arm_local = self.guess_rows(ctx.model.bodies, ctx.stage_dt)
        if ok.size == 0:
            return guess_c
        targets = self._select_worlds(self._targets, ctx.world_index)["position"][:, ok]  # (W, K, 3)
        out = guess_c.copy()
        out[:, rows] = targets - np.einsum("wkij,kj->wki", guess_r[:, rows], arm_local)
        return out

    def guess_rows(self, bodies, stage_dt: float):
        """(constraint rows ok, their actors, arm_local) of `guess_on_targets`: they depend on the model, the stage
        length and the constraints' parameters only, so they are kept until one of those changes (asked every
        substep; the key's bytes cost less than recomputing them)."""
        key = (id(bodies), float(stage_dt), self.actors.tobytes(), self.stiffness.tobytes(),
               self.damping.tobytes(), self._data["local_position"].tobytes(), self.com_local.tobytes())
        cached = self.__dict__.get("_guess_cache")
        if cached is not None and cached[0] == key and cached[1] is bodies:
            return cached[2]
        actors = self.actors[:, 0]
        held = np.bincount(actors, minlength=bodies.num)[actors] == 1
        stiff = (self.stiffness * stage_dt**2 > 100.0 * bodies.mass[actors]) & (self.damping == 0.0)
        ok = np.flatnonzero(held & stiff & ~bodies.is_static[actors])
        value = (ok, actors[ok], self._data["local_position"][ok] - self.com_local[actors[ok]])
        self._guess_cache = (key, bodies, value)
        return value


class RigidPivotToRigidTargetConstraints(_PointPivots):
    """Pivot follows a target rigid motion. Targets ``rotation`` (W, C, 3, 3), ``translation`` (W, C, 3)."""

    constraint_type = "RigidPivotToRigidTarget"
    params_type = RigidPivotToRigidTargetConstraintParams
    num_constrained_actors = 1
    actor_dofs = (ALL_DOFS,)
    data_shapes = MappingProxyType({"local_position": (3,)})
    target_shapes = MappingProxyType({"rotation": (3, 3), "translation": (3,)})

    def __init__(self, com_local, num_worlds, *, exact_hessian=False, target_transform_is_com_frame=False):
        super().__init__(com_local, num_worlds, exact_hessian=exact_hessian)
        self.target_transform_is_com_frame = bool(target_transform_is_com_frame)

    def _prepare(self, params, actors, com_position, rotation):
        data = {"local_position": finite_vector3(params.local_position, "local_position")}
        transform = params.target_transform
        targets = {"rotation": transform.rotation_matrix, "translation": np.asarray(transform.translation, dtype=float)}
        return data, {}, targets

    def set_target_transform(self, index: int, rotation_matrix, translation, worlds=None) -> None:
        """World-from-local target pose: rotation (3, 3) or (W_sel, 3, 3), translation (3,) or (W_sel, 3) [m]."""
        self._assign_target("rotation", index, rotation_matrix, worlds, as_rotation_batch)
        self._assign_target("translation", index, translation, worlds, as_vector_batch)

    def _kinematics(self, com_position, rotation, targets, frozen, with_jacobian):
        c, r = self._gather(com_position, rotation, 0)
        arm = self._arm(r, self._data["local_position"], 0)
        return _point_terms(c + arm - self._target_points(targets), arm, with_jacobian)

    def _target_points(self, targets) -> np.ndarray:
        """t_hat + R_hat x_t (W, C, 3), x_t the local point (or its CoM-frame arm with
        ``target_transform_is_com_frame``, module docstring); the kernel path computes it once per call, as here."""
        local = self._data["local_position"]
        target_local = local - self.com_local[self.actors[:, 0]] if self.target_transform_is_com_frame else local
        return targets["translation"] + np.einsum("wcij,cj->wci", targets["rotation"], target_local)


class RigidPivotRotationConstraints(RigidConstraintSet):
    """Orientation target. Target ``rotation`` (W, C, 3, 3) world; pivot frame ``local_rotation`` (C, 3, 3)."""

    constraint_type = "RigidPivotRotation"
    params_type = RigidPivotRotationConstraintParams
    num_constrained_actors = 1
    actor_dofs = (ROTATION_DOFS,)
    data_shapes = MappingProxyType({"local_rotation": (3, 3)})
    target_shapes = MappingProxyType({"rotation": (3, 3)})

    def kernel_geometry(self):
        """(actors (C,) int64, local_rotation (C, 3, 3)) as the kernels take them."""
        return kernel_array(self.actors[:, 0], np.int64), kernel_array(self._data["local_rotation"])

    def _prepare(self, params, actors, com_position, rotation):
        data = {"local_rotation": lie.exp_so3(finite_vector3(params.local_rotation, "local_rotation"))}
        return data, {}, {"rotation": lie.exp_so3(finite_vector3(params.target_rotation, "target_rotation"))}

    def set_target_rotation(self, index: int, rotation_matrix, worlds=None) -> None:
        """World target rotation: (3, 3) or one per selected world."""
        self._assign_target("rotation", index, rotation_matrix, worlds, as_rotation_batch)

    def _values_kernel(self, com_position, rotation, world_rows, targets, with_jacobian):
        g, jac = _kernel_outputs(rotation.shape[0], len(self), with_jacobian)
        constraint_kernels.rotation_pivot_values(
            rotation, kernel_array(self.actors[:, 0], np.int64), kernel_array(world_rows, np.int64),
            kernel_array(self._data["local_rotation"]), kernel_array(targets["rotation"]), with_jacobian, g, jac)
        return g, (jac if with_jacobian else None)

    def _kinematics(self, com_position, rotation, targets, frozen, with_jacobian):
        _, r = self._gather(com_position, rotation, 0)
        m = r @ self._data["local_rotation"][None] @ np.swapaxes(targets["rotation"], -1, -2)
        phi, jinv = log_and_inverse_jacobian(m)
        if not with_jacobian:
            return ConstraintKinematics(phi)
        jacobian = np.zeros(phi.shape[:2] + (1, 3, 6))
        jacobian[:, :, 0, :, 3:] = jinv

        def curvature(lam: np.ndarray) -> np.ndarray:
            out = np.zeros(phi.shape[:2] + (1, 1, 6, 6))
            out[:, :, 0, 0, 3:, 3:] = log_hessian_contracted(phi, jinv, lam)
            return out

        return ConstraintKinematics(phi, jacobian, curvature)
