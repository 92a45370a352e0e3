"""Two-actor translational joints: RigidSphericalJoint and RigidPrismaticJoint (``constraints.mdx``, "Rigid-Rigid").

RigidSphericalJoint, arms ``a_X = R_X (x_X - com_local_X)``:
    g = c_A + a_A - c_B - a_B,   J_A = [1, -skew(a_A)],   J_B = [-1, skew(a_B)]
    curvature of lam . g: A rot-rot ``sym(lam a_A^T) - (lam . a_A) 1``, B rot-rot minus the same with a_B.

RigidPrismaticJoint (reference ``EvalRigidPrismaticJointConstraint``), with ``u = c_B - c_A`` (CoM positions: B's
rotation does not enter, so B contributes its 3 translational DoFs only), the frozen joint frame ``Q`` (A-local ->
joint, ``Q R_A^T free_axis = e_z`` at creation) and the creation offset ``s_ref``:
    s = P u - s_ref,  P = Q R_A^T;   g = (s_1, s_2, g_3),  g_3 = s_3 - max above max, s_3 - min below min, else 0
    J_A = [-P, P skew(u)],  J_B = [P, 0]   (row 3 zeroed when the limit is inactive)
From ``s(theta) = P exp(-skew(theta)) u = P (u - theta x u + theta x (theta x u)/2)``, with ``mu = P^T lam``
(lam with its 3rd entry masked by the limit activity):
    theta_A theta_A: sym(mu u^T) - (mu . u) 1;   d^2/dtheta_A du = skew(mu)  (u = c_B - c_A).
Only the transverse offset is constrained: combine with JointRotationTracking for a full prismatic joint.
"""

from __future__ import annotations

from types import MappingProxyType

import numpy as np

from .. import lie
from ..jit import kernel_array
from ..kernels import joints as joint_kernels
from .base import ALL_DOFS, TRANSLATION_DOFS, ConstraintKinematics, RigidConstraintSet, point_curvature, point_jacobian
from .params import RigidPrismaticJointConstraintParams, RigidSphericalJointConstraintParams, finite_vector3


_NO_JACOBIAN = np.zeros((0, 0, 2, 3, 6))  # the kernels' Jacobian output when none is asked for (never written)


def joint_kernel_outputs(num_worlds: int, num_constraints: int, with_jacobian: bool):
    """Outputs of a two-actor values kernel: g (W, C, 3) and the Jacobian (W, C, 2, 3, 6) or an empty stand-in."""
    g = np.empty((num_worlds, num_constraints, 3))
    return g, (np.empty((num_worlds, num_constraints, 2, 3, 6)) if with_jacobian else _NO_JACOBIAN)


class RigidSphericalJointConstraints(RigidConstraintSet):
    """Ball-and-socket joints between actor pairs."""

    constraint_type = "RigidSphericalJoint"
    params_type = RigidSphericalJointConstraintParams
    num_constrained_actors = 2
    actor_dofs = (ALL_DOFS, ALL_DOFS)
    data_shapes = MappingProxyType({"local_pos_a": (3,), "local_pos_b": (3,)})

    def packed_geometry(self) -> tuple:
        """The CoM-frame arms of A and B (C, 3) each."""
        _, arm_a, arm_b = self._kernel_geometry()
        return arm_a, arm_b

    def _prepare(self, params, actors, com_position, rotation):
        data = {
            "local_pos_a": finite_vector3(params.local_pos_a, "local_pos_a"),
            "local_pos_b": finite_vector3(params.local_pos_b, "local_pos_b"),
        }
        return data, {}, {}

    def _values_kernel(self, com_position, rotation, world_rows, targets, with_jacobian):
        actors, arm_a, arm_b = self._kernel_geometry()
        g, jac = joint_kernel_outputs(com_position.shape[0], len(self), with_jacobian)
        joint_kernels.spherical_joint_values(com_position, rotation, actors, arm_a, arm_b, with_jacobian, g, jac)
        return g, (jac if with_jacobian else None)

    def _kernel_geometry(self):
        """(actors (C, 2) int64, CoM-frame arms local_pos - com_local of A and B (C, 3)) as kernel arrays, kept until
        the constraints or the CoMs change (every Newton evaluation of the numpy path asks)."""
        key = (self.actors.tobytes(), self._data["local_pos_a"].tobytes(), self._data["local_pos_b"].tobytes(),
               self.com_local.tobytes())
        cached = self.__dict__.get("_geometry_cache")
        if cached is None or cached[0] != key:
            cached = self._geometry_cache = (key, (
                kernel_array(self.actors, np.int64),
                kernel_array(self._data["local_pos_a"] - self.com_local[self.actors[:, 0]]),
                kernel_array(self._data["local_pos_b"] - self.com_local[self.actors[:, 1]])))
        return cached[1]

    def _kinematics(self, com_position, rotation, targets, frozen, with_jacobian):
        c_a, r_a = self._gather(com_position, rotation, 0)
        c_b, r_b = self._gather(com_position, rotation, 1)
        arm_a = self._arm(r_a, self._data["local_pos_a"], 0)
        arm_b = self._arm(r_b, self._data["local_pos_b"], 1)
        g = c_a + arm_a - c_b - arm_b
        if not with_jacobian:
            return ConstraintKinematics(g)
        jacobian = np.stack([point_jacobian(arm_a), point_jacobian(arm_b, sign=-1.0)], axis=2)

        def curvature(lam: np.ndarray) -> np.ndarray:
            out = np.zeros(g.shape[:2] + (2, 2, 6, 6))
            out[:, :, 0, 0, 3:, 3:] = point_curvature(lam, arm_a)
            out[:, :, 1, 1, 3:, 3:] = -point_curvature(lam, arm_b)
            return out

        return ConstraintKinematics(g, jacobian, curvature)


def frame_to_z(axis: np.ndarray) -> np.ndarray:
    """(..., 3) unit vectors -> (..., 3, 3) rotations Q with Q axis = e_z.

    As the reference's prismatic ``localFrame``: the minimal rotation about axis x e_z by the angle between them;
    when the axis is within ~1e-6 rad of -e_z, a half turn about x (the reference's fallback), followed here by
    the tiny minimal rotation that makes Q axis = e_z exact.
    """
    axis = np.asarray(axis, dtype=np.float64)

    def cross_z(v):
        return np.stack([v[..., 1], -v[..., 0], np.zeros_like(v[..., 0])], axis=-1)  # v x e_z

    half_turn_x = np.diag([1.0, -1.0, -1.0])
    flip = (axis[..., 2] < 0.0) & (np.linalg.norm(cross_z(axis), axis=-1) < 1e-6)
    a = np.where(flip[..., None], axis @ half_turn_x, axis)
    cross = cross_z(a)
    sin = np.linalg.norm(cross, axis=-1)
    angle = np.arctan2(sin, a[..., 2])
    # Rotation vector = unit(cross) * angle; angle / sin -> 1 as the angle -> 0 (|a| = 1, so |cross| = sin(angle)).
    scale = np.where(sin > 1e-300, angle / np.where(sin > 1e-300, sin, 1.0), 1.0)
    q = lie.exp_so3(scale[..., None] * cross)
    return np.where(flip[..., None, None], q @ half_turn_x, q)


class RigidPrismaticJointConstraints(RigidConstraintSet):
    """Sliders between actor pairs. Per world: joint frame ``frame`` (W, C, 3, 3), offset ``reference_offset``."""

    constraint_type = "RigidPrismaticJoint"
    params_type = RigidPrismaticJointConstraintParams
    num_constrained_actors = 2
    actor_dofs = (ALL_DOFS, TRANSLATION_DOFS)
    data_shapes = MappingProxyType({"min": (), "max": ()})
    world_data_shapes = MappingProxyType({"frame": (3, 3), "reference_offset": (3,)})

    def packed_geometry(self) -> tuple:
        """The per-world frames and reference offsets, then the limits."""
        return self._world_data["frame"], self._world_data["reference_offset"], self._data["min"], self._data["max"]

    def _prepare(self, params, actors, com_position, rotation):
        com_position, rotation = self._require_pose(com_position, rotation)
        axis = finite_vector3(params.free_axis, "free_axis")
        axis = axis / np.linalg.norm(axis)
        r_a = rotation[:, actors[0]]
        local_axis = np.einsum("wji,j->wi", r_a, axis)  # R_A^T axis, per world
        frame = frame_to_z(local_axis / np.linalg.norm(local_axis, axis=-1, keepdims=True))
        offset = com_position[:, actors[1]] - com_position[:, actors[0]]
        reference = np.einsum("wij,wkj,wk->wi", frame, r_a, offset)  # Q R_A^T (c_B - c_A)
        data = {
            "min": -np.inf if params.min is None else float(params.min),
            "max": np.inf if params.max is None else float(params.max),
        }
        return data, {"frame": frame, "reference_offset": reference}, {}

    def limits(self, index: int) -> tuple:
        """(min, max) travel [m] relative to the creation offset; -inf / inf when unset."""
        i = int(self._index(index))
        return float(self._data["min"][i]), float(self._data["max"][i])

    def _values_kernel(self, com_position, rotation, world_rows, targets, with_jacobian):
        g, jac = joint_kernel_outputs(com_position.shape[0], len(self), with_jacobian)
        joint_kernels.prismatic_joint_values(
            com_position, rotation, kernel_array(self.actors, np.int64), kernel_array(world_rows, np.int64),
            kernel_array(self._world_data["frame"]), kernel_array(self._world_data["reference_offset"]),
            kernel_array(self._data["min"]), kernel_array(self._data["max"]), with_jacobian, g, jac)
        return g, (jac if with_jacobian else None)

    def _kinematics(self, com_position, rotation, targets, frozen, with_jacobian):
        c_a, r_a = self._gather(com_position, rotation, 0)
        c_b, _ = self._gather(com_position, rotation, 1)
        u = c_b - c_a
        p = frozen["frame"] @ np.swapaxes(r_a, -1, -2)  # Q R_A^T
        s = np.einsum("wcij,wcj->wci", p, u) - frozen["reference_offset"]
        upper, lower = self._data["max"], self._data["min"]
        above, below = s[..., 2] > upper, s[..., 2] < lower
        travel = np.where(above, s[..., 2] - upper, np.where(below, s[..., 2] - lower, 0.0))
        g = np.concatenate([s[..., :2], travel[..., None]], axis=-1)
        if not with_jacobian:
            return ConstraintKinematics(g)
        row_mask = np.ones(g.shape)
        row_mask[..., 2] = above | below
        jacobian = np.zeros(g.shape[:2] + (2, 3, 6))
        jacobian[:, :, 0, :, :3] = -p
        jacobian[:, :, 0, :, 3:] = p @ lie.skew(u)
        jacobian[:, :, 1, :, :3] = p
        jacobian *= row_mask[:, :, None, :, None]

        def curvature(lam: np.ndarray) -> np.ndarray:
            mu = np.einsum("wcji,wcj->wci", p, lam * row_mask)
            cross = lie.skew(mu)
            out = np.zeros(g.shape[:2] + (2, 2, 6, 6))
            out[:, :, 0, 0, 3:, 3:] = point_curvature(mu, u)
            out[:, :, 0, 0, 3:, :3] = -cross  # d^2/dtheta_A dc_A = -skew(mu)
            out[:, :, 0, 0, :3, 3:] = cross  # its transpose
            out[:, :, 0, 1, 3:, :3] = cross  # d^2/dtheta_A dc_B = skew(mu)
            return out

        return ConstraintKinematics(g, jacobian, curvature)
