"""Shared builders for the constraint tests: random poses, a StageContext, one populated set per constraint type.

The StageContext's ``model`` is a bare ``SimpleNamespace()``: constraint sets read nothing from it (they hold their
own ``com_local``), only ``stage_dt`` and the stage-start poses ``com_position0`` / ``rotation0``.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from superdex_gym.sim import lie
from superdex_gym.sim.constraints import (
    JointRotationRangeConstraintParams,
    JointRotationRangeConstraints,
    JointRotationTrackingConstraintParams,
    JointRotationTrackingConstraints,
    RigidPivotPositionConstraintParams,
    RigidPivotPositionConstraints,
    RigidPivotRotationConstraintParams,
    RigidPivotRotationConstraints,
    RigidPivotToRigidTargetConstraintParams,
    RigidPivotToRigidTargetConstraints,
    RigidPrismaticJointConstraintParams,
    RigidPrismaticJointConstraints,
    RigidSphericalJointConstraintParams,
    RigidSphericalJointConstraints,
)
from superdex_gym.sim.potentials.base import StageContext
from superdex_gym.sim.transforms import Quaternion, TransformRT

NUM_WORLDS = 3
NUM_BODIES = 4
STAGE_DT = 0.05  # s


def make_ctx(com_position0, rotation0, stage_dt=STAGE_DT) -> StageContext:
    w, n = com_position0.shape[:2]
    return StageContext(
        model=SimpleNamespace(),
        stage_dt=stage_dt,
        stage_time=0.0,
        com_position0=com_position0,
        rotation0=rotation0,
        linear_velocity0=np.zeros((w, n, 3)),
        angular_velocity0=np.zeros((w, n, 3)),
        velocity_sym0=np.zeros((w, n, 3, 3)),
        gravity=np.zeros((w, 3)),
        external_force=np.zeros((w, n, 6)),
    )


def random_rotations(rng, shape, max_angle=np.pi):
    axis = rng.normal(size=shape + (3,))
    axis /= np.linalg.norm(axis, axis=-1, keepdims=True)
    return lie.exp_so3(axis * rng.uniform(0.0, max_angle, size=shape + (1,)))


def perturb_pose(rng, com_position, rotation, translation_scale, angle_scale):
    """A nearby pose: CoM moved by ~translation_scale m, rotation turned by ~angle_scale rad (left)."""
    shape = com_position.shape[:-1]
    turn = lie.exp_so3(rng.normal(scale=angle_scale, size=shape + (3,)))
    return com_position + rng.normal(scale=translation_scale, size=shape + (3,)), turn @ rotation


class Scenario(SimpleNamespace):
    """constraints (the set), creation / stage-start / current poses and the stage context."""


def _poses(rng):
    w, n = NUM_WORLDS, NUM_BODIES
    pos = rng.normal(scale=0.5, size=(w, n, 3))
    rot = random_rotations(rng, (w, n))
    return pos, rot


def build_scenario(kind: str, seed: int = 0, saturation: float = -1.0, exact_hessian: bool = True,
                   stiffness: float = 1e3, damping: float = 4.0) -> Scenario:
    """A set of ``kind`` with a few constraints over shared actors, and random poses for a stage.

    Deviations are O(0.1) so every term matters; saturation (when on) is set so that some constraints sit below
    and some above the ramp width; range bounds are tight so the limits are active.
    """
    rng = np.random.default_rng(seed)
    pos_create, rot_create = _poses(rng)
    com_local = rng.normal(scale=0.1, size=(NUM_BODIES, 3))
    common = dict(stiffness=stiffness, damping=damping, saturation=saturation)
    pairs = [(0, 1), (2, 1), (3, 0)]
    singles = [0, 1, 1, 3]
    w = NUM_WORLDS
    if kind == "pivot_position":
        cs = RigidPivotPositionConstraints(com_local, w, exact_hessian=exact_hessian)
        for a in singles:
            cs.add(RigidPivotPositionConstraintParams(actor=a, local_position=rng.normal(scale=0.3, size=3),
                                                      target_position=rng.normal(size=3), **common))
        for i in range(len(cs)):  # per-world targets near the pivots
            cs.set_target_position(i, rng.normal(scale=0.5, size=(w, 3)))
    elif kind == "pivot_to_rigid_target":
        cs = RigidPivotToRigidTargetConstraints(com_local, w, exact_hessian=exact_hessian)
        for a in singles:
            target = TransformRT(Quaternion.from_rotation_vector(rng.normal(size=3)), rng.normal(size=3))
            cs.add(RigidPivotToRigidTargetConstraintParams(actor=a, local_position=rng.normal(scale=0.3, size=3),
                                                           target_transform=target, **common))
    elif kind == "pivot_rotation":
        cs = RigidPivotRotationConstraints(com_local, w, exact_hessian=exact_hessian)
        for a in singles:
            local_rotation = rng.normal(scale=0.5, size=3)
            cs.add(RigidPivotRotationConstraintParams(actor=a, local_rotation=local_rotation,
                                                      target_rotation=(0.0, 0.0, 0.0), **common))
            # Targets within ~0.6 rad of the pivot frame (keeps Log away from its cut at pi).
            pivot = rot_create[:, a] @ lie.exp_so3(local_rotation)
            cs.set_target_rotation(len(cs) - 1, random_rotations(rng, (w,), 0.6) @ pivot)
    elif kind == "spherical":
        cs = RigidSphericalJointConstraints(com_local, w, exact_hessian=exact_hessian)
        for a, b in pairs:
            cs.add(RigidSphericalJointConstraintParams(actor_a=a, actor_b=b, local_pos_a=rng.normal(scale=0.3, size=3),
                                                       local_pos_b=rng.normal(scale=0.3, size=3), **common))
    elif kind == "prismatic":
        cs = RigidPrismaticJointConstraints(com_local, w, exact_hessian=exact_hessian)
        limits = [(-0.02, 0.03), (None, 0.01), (-0.01, None)]
        for (a, b), (lo, hi) in zip(pairs, limits):
            cs.add(RigidPrismaticJointConstraintParams(actor_a=a, actor_b=b, free_axis=rng.normal(size=3),
                                                       min=lo, max=hi, **common), pos_create, rot_create)
    elif kind == "rotation_range":
        cs = JointRotationRangeConstraints(com_local, w, exact_hessian=exact_hessian)
        for i, (a, b) in enumerate(pairs):
            cs.add(JointRotationRangeConstraintParams(actor_a=a, actor_b=b, ref_frame_rot_vec=rng.normal(size=3),
                                                      angle_range_x=(-0.05, 0.04), angle_range_y=(-0.03, 0.06),
                                                      angle_range_z=(-0.5, 0.5) if i == 0 else (-0.02, 0.02),
                                                      range_around_rest=(i != 2), **common), pos_create, rot_create)
    elif kind == "rotation_tracking":
        cs = JointRotationTrackingConstraints(com_local, w, exact_hessian=exact_hessian)
        for a, b in pairs:
            cs.add(JointRotationTrackingConstraintParams(actor_a=a, actor_b=b, ref_frame_rot_vec=rng.normal(size=3),
                                                         **common), pos_create, rot_create)
        cs.set_target_rotation(0, random_rotations(rng, (w,), 0.4) @ cs._targets["rotation"][:, 0])
    else:
        raise ValueError(kind)
    if kind == "pivot_to_rigid_target":
        pos_start, rot_start = perturb_pose(rng, pos_create, rot_create, 0.05, 0.1)
        # Put the targets near the actors so deviations stay O(0.1).
        for i, a in enumerate(singles):
            root_rotation = rot_create[:, a]
            root_translation = pos_create[:, a] - np.einsum("wij,j->wi", root_rotation, com_local[a])
            turned = random_rotations(rng, (w,), 0.3) @ root_rotation
            cs.set_target_transform(i, turned, root_translation + rng.normal(scale=0.1, size=(w, 3)))
    pos_start, rot_start = perturb_pose(rng, pos_create, rot_create, 0.05, 0.1)
    cs.advance_old_targets()  # the targets set above belong to the previous step
    pos, rot = perturb_pose(rng, pos_start, rot_start, 0.08, 0.15)
    if saturation > 0:
        for i in range(len(cs)):
            # Width between the smallest and largest deviation: both ramp branches are exercised.
            # Midway between two neighbouring deviations, so no |g| sits at the ramp end where rho'' jumps.
            norms = np.sort(np.linalg.norm(cs.deviation(pos, rot)[:, i], axis=-1))
            middle = len(norms) // 2
            cs.set_saturation(i, float(0.5 * (norms[middle - 1] + norms[middle])) if norms[-1] > 0 else 0.05)
    return Scenario(constraints=cs, pos_create=pos_create, rot_create=rot_create, pos_start=pos_start,
                    rot_start=rot_start, pos=pos, rot=rot, ctx=make_ctx(pos_start, rot_start), rng=rng)


ALL_KINDS = (
    "pivot_position",
    "pivot_to_rigid_target",
    "pivot_rotation",
    "spherical",
    "prismatic",
    "rotation_range",
    "rotation_tracking",
)


# Sanity checks of the scenarios themselves: the FD tests below are only meaningful if every term is exercised.


def test_scenarios_have_nonzero_deviation_in_every_world():
    for kind in ALL_KINDS:
        sc = build_scenario(kind, seed=1)
        g = sc.constraints.deviation(sc.pos, sc.rot)
        assert g.shape == (NUM_WORLDS, len(sc.constraints), 3)
        assert np.all(np.linalg.norm(g, axis=-1).max(axis=1) > 1e-3), kind


def test_range_scenario_has_active_and_inactive_components():
    sc = build_scenario("rotation_range", seed=1)
    g = sc.constraints.deviation(sc.pos, sc.rot)
    assert np.any(g == 0.0) and np.any(g > 0.0)


def assert_worlds_alone_equal_together(sc) -> None:
    """Every world of the scenario's constraint set evaluated alone (its own stage context and world index) equals
    its row of the evaluation of all worlds together, bit for bit: energy, gradient, diagonal blocks and any
    coupling blocks."""
    cs = sc.constraints
    together = cs.evaluate(sc.ctx, sc.pos, sc.rot, True)
    for w in range(cs.num_worlds):
        ctx = make_ctx(sc.pos_start[w:w + 1], sc.rot_start[w:w + 1])
        ctx.world_index = np.array([w])
        alone = cs.evaluate(ctx, sc.pos[w:w + 1], sc.rot[w:w + 1], True)
        np.testing.assert_array_equal(alone.energy[0], together.energy[w])
        np.testing.assert_array_equal(alone.gradient[0], together.gradient[w])
        np.testing.assert_array_equal(alone.hessian_diag[0], together.hessian_diag[w])
        assert len(alone.couplings) == len(together.couplings)
        for a, t in zip(alone.couplings, together.couplings):
            np.testing.assert_array_equal(a.block[0], t.block[w])
