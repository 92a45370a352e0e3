"""Two-actor rotational joints: JointRotationRange and JointRotationTracking (``constraints.mdx``).

Both measure the rotation vector of a relative rotation ``M = P R_B N`` with ``P = (R_A L)^T``:

* JointRotationRange:    L = R_0,           N = R_0 R_ref^T,  r_AB = Log(M), g_j = one-sided violation of r_AB,j
* JointRotationTracking: L = R_hat R_0,     N = R_0,          g = Log(M)

``R_0`` is the joint frame in A's local frame, frozen at creation from ``ref_frame_rot_vec`` (world):
``R_0 = R_A^T exp(ref_frame_rot_vec)``. Range: ``R_ref`` is the creation-time ``(R_A R_0)^T R_B R_0`` with
``range_around_rest`` (identity otherwise). Tracking: the target ``R_hat`` (B relative to A, in A's frame) starts as
the creation-time ``R_A^T R_B``, so the constraint starts satisfied.

Left increments act as ``M <- exp(-skew(P theta_A)) exp(skew(P theta_B)) M``. With x = P theta_A, y = P theta_B and
``z = y - x - (x x y)/2 + O(3)`` (BCH), and Log's derivatives ``Jl^{-1}`` and ``S = d^2(lam . Log)/dz^2``
(`rotation_log`):

    d phi/d theta_B = Jl^{-1} P = -d phi/d theta_A
    theta_A theta_A = theta_B theta_B = P^T S P
    theta_A theta_B = P^T (-S + skew(Jl^{-T} lam)/2) P      (the 1/2 from the BCH bracket)

Range signs: ``g_j = r_j - max_j`` above, ``min_j - r_j`` below (reference ``EvalJointRotationRangeConstraint``),
so ``dg_j = sigma_j dr_j`` with ``sigma = +1 / -1 / 0``; the curvature uses ``sigma * lam``. The bounds act on
rotation-vector components, so they describe a range of motion only for moderate angles (docs note); the default
(-2 pi, 2 pi) never activates because |r| <= pi.
"""

from __future__ import annotations

from types import MappingProxyType

import numpy as np

from .. import lie
from ..jit import kernel_array
from ..kernels import joints as joint_kernels
from .base import ROTATION_DOFS, ConstraintKinematics, RigidConstraintSet, as_rotation_batch, as_vector_batch
from .params import (
    JointRotationRangeConstraintParams,
    JointRotationTrackingConstraintParams,
    finite_range,
    finite_vector3,
)
from .joints import joint_kernel_outputs
from .rotation_log import log_and_inverse_jacobian, log_hessian_contracted


def _relative_rotation_terms(m, p, with_jacobian, sign=None):
    """Log(M) -> (phi, Jacobian (W, C, 2, 3, 6) or None, curvature or None) for M = P R_B N.

    ``sign`` (W, C, 3) maps phi to the range value per component (dg_j = sign_j dphi_j); None for tracking.
    """
    phi, jinv = log_and_inverse_jacobian(m)
    if not with_jacobian:
        return phi, None, None
    d_b = jinv @ p  # d phi / d theta_B
    if sign is not None:
        d_b = sign[..., :, None] * d_b
    jacobian = np.zeros(phi.shape[:2] + (2, 3, 6))
    jacobian[:, :, 0, :, 3:] = -d_b
    jacobian[:, :, 1, :, 3:] = d_b

    def curvature(lam: np.ndarray) -> np.ndarray:
        lam_phi = lam if sign is None else sign * lam
        s = log_hessian_contracted(phi, jinv, lam_phi)
        grad_z = np.einsum("wcji,wcj->wci", jinv, lam_phi)  # Jl^{-T} lam
        p_t = np.swapaxes(p, -1, -2)
        out = np.zeros(phi.shape[:2] + (2, 2, 6, 6))
        out[:, :, 0, 0, 3:, 3:] = p_t @ s @ p
        out[:, :, 1, 1, 3:, 3:] = out[:, :, 0, 0, 3:, 3:]
        out[:, :, 0, 1, 3:, 3:] = p_t @ (0.5 * lie.skew(grad_z) - s) @ p
        return out

    return phi, jacobian, curvature


def _joint_frame(params, actors, rotation):
    """R_0 = R_A^T exp(ref_frame_rot_vec): (W, 3, 3), the joint frame in A's local frame."""
    world_frame = lie.exp_so3(finite_vector3(params.ref_frame_rot_vec, "ref_frame_rot_vec"))
    return np.swapaxes(rotation[:, actors[0]], -1, -2) @ world_frame


class JointRotationRangeConstraints(RigidConstraintSet):
    """Rotation limits between actor pairs. Per world: ``frame`` R_0 and ``reference`` R_ref (W, C, 3, 3)."""

    constraint_type = "JointRotationRange"
    params_type = JointRotationRangeConstraintParams
    num_constrained_actors = 2
    actor_dofs = (ROTATION_DOFS, ROTATION_DOFS)
    data_shapes = MappingProxyType({"min": (3,), "max": (3,)})
    world_data_shapes = MappingProxyType({"frame": (3, 3), "reference": (3, 3)})

    def packed_geometry(self) -> tuple:
        """The per-world frames and references, then the limits."""
        return self._world_data["frame"], self._world_data["reference"], self._data["min"], self._data["max"]

    def _prepare(self, params, actors, com_position, rotation):
        com_position, rotation = self._require_pose(com_position, rotation)
        frame = _joint_frame(params, actors, rotation)
        if params.range_around_rest:
            r_a, r_b = rotation[:, actors[0]], rotation[:, actors[1]]
            reference = np.swapaxes(r_a @ frame, -1, -2) @ r_b @ frame
        else:
            reference = np.broadcast_to(np.eye(3), frame.shape)
        ranges = np.stack([finite_range(getattr(params, f"angle_range_{ax}"), f"angle_range_{ax}") for ax in "xyz"])
        return {"min": ranges[:, 0], "max": ranges[:, 1]}, {"frame": frame, "reference": reference}, {}

    def limit_min_values(self, index: int) -> np.ndarray:
        """(3,) lower bounds [rad] on the rotation-vector components (``get_limit_min_values``)."""
        return self._data["min"][int(self._index(index))].copy()

    def limit_max_values(self, index: int) -> np.ndarray:
        return self._data["max"][int(self._index(index))].copy()

    def _values_kernel(self, com_position, rotation, world_rows, targets, with_jacobian):
        g, jac = joint_kernel_outputs(rotation.shape[0], len(self), with_jacobian)
        joint_kernels.rotation_range_values(
            rotation, kernel_array(self.actors, np.int64), kernel_array(world_rows, np.int64),
            kernel_array(self._world_data["frame"]), kernel_array(self._world_data["reference"]),
            kernel_array(self._data["min"]), kernel_array(self._data["max"]), with_jacobian, g, jac,
            *joint_kernels.rotation_scratch())
        return g, (jac if with_jacobian else None)

    def _kinematics(self, com_position, rotation, targets, frozen, with_jacobian):
        _, r_a = self._gather(com_position, rotation, 0)
        _, r_b = self._gather(com_position, rotation, 1)
        frame, reference = frozen["frame"], frozen["reference"]
        p = np.swapaxes(r_a @ frame, -1, -2)
        m = p @ r_b @ frame @ np.swapaxes(reference, -1, -2)
        phi = lie.log_so3(m)
        above = phi > self._data["max"]
        below = phi < self._data["min"]
        g = np.where(above, phi - self._data["max"], np.where(below, self._data["min"] - phi, 0.0))
        if not with_jacobian:
            return ConstraintKinematics(g)
        sign = np.where(above, 1.0, np.where(below, -1.0, 0.0))
        _, jacobian, curvature = _relative_rotation_terms(m, p, True, sign)
        return ConstraintKinematics(g, jacobian, curvature)


class JointRotationTrackingConstraints(RigidConstraintSet):
    """Relative-rotation targets between actor pairs. Per world: ``frame`` R_0; target ``rotation`` R_hat."""

    constraint_type = "JointRotationTracking"
    params_type = JointRotationTrackingConstraintParams
    num_constrained_actors = 2
    actor_dofs = (ROTATION_DOFS, ROTATION_DOFS)
    world_data_shapes = MappingProxyType({"frame": (3, 3)})
    target_shapes = MappingProxyType({"rotation": (3, 3)})

    def packed_geometry(self) -> tuple:
        """The per-world frames and the target rotations."""
        return self._world_data["frame"], self._targets["rotation"]

    def _prepare(self, params, actors, com_position, rotation):
        com_position, rotation = self._require_pose(com_position, rotation)
        frame = _joint_frame(params, actors, rotation)
        relative = np.swapaxes(rotation[:, actors[0]], -1, -2) @ rotation[:, actors[1]]  # R_A^T R_B
        return {}, {"frame": frame}, {"rotation": relative}

    def set_target_rotation(self, index: int, rotation_matrix, worlds=None) -> None:
        """Target orientation of B relative to A, in A's local frame: (3, 3) or one per selected world."""
        self._assign_target("rotation", index, rotation_matrix, worlds, as_rotation_batch)

    def _values_kernel(self, com_position, rotation, world_rows, targets, with_jacobian):
        g, jac = joint_kernel_outputs(rotation.shape[0], len(self), with_jacobian)
        joint_kernels.rotation_tracking_values(
            rotation, kernel_array(self.actors, np.int64), kernel_array(world_rows, np.int64),
            kernel_array(self._world_data["frame"]), kernel_array(targets["rotation"]), with_jacobian, g, jac,
            *joint_kernels.rotation_scratch())
        return g, (jac if with_jacobian else None)

    def _kinematics(self, com_position, rotation, targets, frozen, with_jacobian):
        _, r_a = self._gather(com_position, rotation, 0)
        _, r_b = self._gather(com_position, rotation, 1)
        frame = frozen["frame"]
        p = np.swapaxes(r_a @ targets["rotation"] @ frame, -1, -2)
        m = p @ r_b @ frame
        phi, jacobian, curvature = _relative_rotation_terms(m, p, with_jacobian)
        return ConstraintKinematics(phi, jacobian, curvature)
