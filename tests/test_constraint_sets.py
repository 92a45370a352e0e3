"""Semantics of the constraint sets: constraint values against closed forms, creation-time frames, runtime
setters, removal / actor remapping, state capture and input validation."""

from __future__ import annotations

import numpy as np
import pytest

from superdex_gym.sim import lie
from superdex_gym.sim.constraints import (
    CONSTRAINT_SET_FOR_PARAMS,
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
from superdex_gym.sim.constraints.joints import frame_to_z
from superdex_gym.sim.transforms import Quaternion, TransformRT
from test_constraint_fixtures import ALL_KINDS, build_scenario, make_ctx, random_rotations

ROUND_OFF = 1e-12  # float64 round-off of a few 3x3 products on O(1) values


@pytest.fixture
def two_bodies():
    rng = np.random.default_rng(11)
    w = 2
    com_local = np.array([[0.1, -0.2, 0.05], [0.0, 0.3, -0.1]])
    pos = rng.normal(size=(w, 2, 3))
    rot = random_rotations(rng, (w, 2))
    return com_local, pos, rot


def root_transform(pos, rot, com_local, body):
    """World-from-local root pose of ``body``: t = c - R com_local (digest 9.5)."""
    r = rot[:, body]
    return r, pos[:, body] - np.einsum("wij,j->wi", r, com_local[body])


# -- defaults and names --------------------------------------------------------------------------------------


def test_params_defaults_match_the_reference():
    for params_type in CONSTRAINT_SET_FOR_PARAMS:
        p = params_type()
        assert (p.stiffness, p.damping, p.saturation) == (1e6, 0.0, -1.0)
    r = JointRotationRangeConstraintParams()
    assert tuple(r.angle_range_x) == (-2 * np.pi, 2 * np.pi) and r.range_around_rest is True
    p = RigidPrismaticJointConstraintParams()
    assert p.min is None and p.max is None
    assert RigidPivotToRigidTargetConstraintParams().target_transform == TransformRT()


def test_actor_dofs_match_the_reference():
    assert RigidPivotPositionConstraints.actor_dofs == ((0, 1, 2, 3, 4, 5),)
    assert RigidPivotRotationConstraints.actor_dofs == ((3, 4, 5),)
    assert RigidPrismaticJointConstraints.actor_dofs == ((0, 1, 2, 3, 4, 5), (0, 1, 2))
    assert JointRotationRangeConstraints.actor_dofs == ((3, 4, 5), (3, 4, 5))


# -- constraint values ---------------------------------------------------------------------------------------


def test_pivot_position_is_the_world_point_minus_target(two_bodies):
    com_local, pos, rot = two_bodies
    cs = RigidPivotPositionConstraints(com_local, 2)
    local = np.array([0.4, 0.1, -0.3])
    cs.add(RigidPivotPositionConstraintParams(actor=1, local_position=local, target_position=[1.0, 2.0, 3.0]))
    r, t = root_transform(pos, rot, com_local, 1)
    expected = t + np.einsum("wij,j->wi", r, local) - [1.0, 2.0, 3.0]
    np.testing.assert_allclose(cs.deviation(pos, rot)[:, 0], expected, atol=ROUND_OFF)


def test_pivot_to_rigid_target_is_zero_when_target_is_the_root_transform(two_bodies):
    com_local, pos, rot = two_bodies
    cs = RigidPivotToRigidTargetConstraints(com_local, 2)
    cs.add(RigidPivotToRigidTargetConstraintParams(actor=0, local_position=[0.2, 0.5, -0.1]))
    r, t = root_transform(pos, rot, com_local, 0)
    cs.set_target_transform(0, r, t)
    np.testing.assert_allclose(cs.deviation(pos, rot), 0.0, atol=ROUND_OFF)
    # The released engine's convention: the target is a CoM-frame pose.
    com_frame = RigidPivotToRigidTargetConstraints(com_local, 2, target_transform_is_com_frame=True)
    com_frame.add(RigidPivotToRigidTargetConstraintParams(actor=0, local_position=[0.2, 0.5, -0.1]))
    com_frame.set_target_transform(0, rot[:, 0], pos[:, 0])
    np.testing.assert_allclose(com_frame.deviation(pos, rot), 0.0, atol=ROUND_OFF)


def test_pivot_to_rigid_target_moves_the_target_point_with_the_target_rotation(two_bodies):
    com_local, pos, rot = two_bodies
    cs = RigidPivotToRigidTargetConstraints(com_local, 2)
    local = np.array([1.0, 0.0, 0.0])
    target = TransformRT(Quaternion.rotation_z(np.pi / 2), [0.0, 0.0, 1.0])
    cs.add(RigidPivotToRigidTargetConstraintParams(actor=0, local_position=local, target_transform=target))
    r, t = root_transform(pos, rot, com_local, 0)
    expected = t + np.einsum("wij,j->wi", r, local) - np.array([0.0, 1.0, 1.0])
    np.testing.assert_allclose(cs.deviation(pos, rot)[:, 0], expected, atol=ROUND_OFF)


def test_pivot_rotation_is_the_log_of_the_frame_error(two_bodies):
    com_local, pos, rot = two_bodies
    cs = RigidPivotRotationConstraints(com_local, 2)
    local_rotation = np.array([0.1, 0.2, -0.3])
    cs.add(RigidPivotRotationConstraintParams(actor=1, local_rotation=local_rotation))
    frame = rot[:, 1] @ lie.exp_so3(local_rotation)
    cs.set_target_rotation(0, lie.exp_so3(np.array([0.0, 0.0, -0.25])) @ frame)  # target turned -0.25 about z
    np.testing.assert_allclose(cs.deviation(pos, rot)[:, 0], [[0.0, 0.0, 0.25]] * 2, atol=ROUND_OFF)
    cs.set_target_rotation(0, frame)
    np.testing.assert_allclose(cs.deviation(pos, rot), 0.0, atol=1e-9)


def test_spherical_joint_is_the_pivot_separation(two_bodies):
    com_local, pos, rot = two_bodies
    cs = RigidSphericalJointConstraints(com_local, 2)
    pa, pb = np.array([0.5, 0.0, 0.0]), np.array([-0.5, 0.1, 0.0])
    cs.add(RigidSphericalJointConstraintParams(actor_a=0, actor_b=1, local_pos_a=pa, local_pos_b=pb))
    ra, ta = root_transform(pos, rot, com_local, 0)
    rb, tb = root_transform(pos, rot, com_local, 1)
    expected = ta + np.einsum("wij,j->wi", ra, pa) - tb - np.einsum("wij,j->wi", rb, pb)
    np.testing.assert_allclose(cs.deviation(pos, rot)[:, 0], expected, atol=ROUND_OFF)


def test_prismatic_joint_frees_the_axis_and_limits_travel(two_bodies):
    com_local, pos, rot = two_bodies
    axis = np.array([1.0, 2.0, -2.0]) / 3.0
    cs = RigidPrismaticJointConstraints(com_local, 2)
    cs.add(RigidPrismaticJointConstraintParams(actor_a=0, actor_b=1, free_axis=axis, min=-0.1, max=0.2), pos, rot)
    np.testing.assert_allclose(cs.deviation(pos, rot), 0.0, atol=ROUND_OFF)  # satisfied at creation
    assert cs.limits(0) == (-0.1, 0.2)
    moved = pos.copy()
    moved[:, 1] += 0.15 * axis  # slide within the limits
    np.testing.assert_allclose(cs.deviation(moved, rot), 0.0, atol=ROUND_OFF)
    moved[:, 1] += 0.15 * axis  # 0.3 along the axis: 0.1 beyond max
    np.testing.assert_allclose(cs.deviation(moved, rot)[:, 0], [[0.0, 0.0, 0.1]] * 2, atol=ROUND_OFF)
    side = np.cross(axis, [0.0, 0.0, 1.0])
    side /= np.linalg.norm(side)
    moved = pos.copy()
    moved[:, 1] += 0.07 * side - 0.3 * axis
    g = cs.deviation(moved, rot)[:, 0]
    np.testing.assert_allclose(np.linalg.norm(g[:, :2], axis=-1), 0.07, atol=ROUND_OFF)
    np.testing.assert_allclose(g[:, 2], -0.2, atol=ROUND_OFF)  # signed: below min
    turned = rot.copy()
    turned[:, 1] = lie.exp_so3(np.array([0.3, -0.2, 0.5])) @ rot[:, 1]  # B's rotation is not restricted
    np.testing.assert_allclose(cs.deviation(pos, turned), 0.0, atol=ROUND_OFF)
    # The free axis is frozen in A's frame: it turns with A.
    turn_a = lie.exp_so3(np.array([0.0, 0.4, 0.0]))
    rot_a, pos_b = rot.copy(), pos.copy()
    rot_a[:, 0] = turn_a @ rot[:, 0]
    pos_b[:, 1] = pos[:, 0] + np.einsum("ij,wj->wi", turn_a, pos[:, 1] - pos[:, 0]) + 0.05 * turn_a @ axis
    np.testing.assert_allclose(cs.deviation(pos_b, rot_a), 0.0, atol=ROUND_OFF)


def test_frame_to_z_maps_every_axis_to_z():
    rng = np.random.default_rng(2)
    axes = rng.normal(size=(50, 3))
    axes = np.concatenate([axes, [[0, 0, 1.0], [0, 0, -1.0], [1e-9, 0, -1.0], [0, 1e-7, -1.0], [1.0, 0, 0]]])
    axes /= np.linalg.norm(axes, axis=-1, keepdims=True)
    q = frame_to_z(axes)
    np.testing.assert_allclose(np.einsum("nij,nj->ni", q, axes), np.tile([0.0, 0.0, 1.0], (len(axes), 1)),
                               atol=ROUND_OFF)
    np.testing.assert_allclose(np.swapaxes(q, -1, -2) @ q, np.broadcast_to(np.eye(3), q.shape), atol=ROUND_OFF)
    np.testing.assert_allclose(np.linalg.det(q), 1.0, atol=ROUND_OFF)


def test_rotation_tracking_starts_satisfied_and_tracks_the_relative_target(two_bodies):
    com_local, pos, rot = two_bodies
    cs = JointRotationTrackingConstraints(com_local, 2)
    cs.add(JointRotationTrackingConstraintParams(actor_a=0, actor_b=1, ref_frame_rot_vec=[0.3, 0.0, 0.2]), pos, rot)
    np.testing.assert_allclose(cs.deviation(pos, rot), 0.0, atol=ROUND_OFF)
    # Turning both bodies together keeps the relative rotation.
    turn = lie.exp_so3(np.array([0.5, -0.4, 0.2]))
    np.testing.assert_allclose(cs.deviation(pos, turn @ rot), 0.0, atol=1e-9)
    # g = Log((R_A R_hat R_0)^-1 R_B R_0): with R_hat = R_A^T R_B exp(v) (B turned by v in B's frame) and
    # R_0 = 1 (ref_frame_rot_vec = 0 for an A at identity), g = -v.
    ident = np.broadcast_to(np.eye(3), rot.shape).copy()
    cs2 = JointRotationTrackingConstraints(com_local, 2)
    cs2.add(JointRotationTrackingConstraintParams(actor_a=0, actor_b=1), pos, ident)
    v = np.array([0.1, -0.2, 0.15])
    cs2.set_target_rotation(0, lie.exp_so3(v))
    np.testing.assert_allclose(cs2.deviation(pos, ident)[:, 0], -np.tile(v, (2, 1)), atol=1e-9)


def test_rotation_range_around_rest_is_relative_to_creation(two_bodies):
    com_local, pos, rot = two_bodies
    cs = JointRotationRangeConstraints(com_local, 2)
    bounds = dict(angle_range_x=(-0.1, 0.1), angle_range_y=(-0.1, 0.1), angle_range_z=(-0.1, 0.2))
    cs.add(JointRotationRangeConstraintParams(actor_a=0, actor_b=1, **bounds), pos, rot)
    np.testing.assert_allclose(cs.deviation(pos, rot), 0.0)
    np.testing.assert_array_equal(cs.limit_min_values(0), [-0.1, -0.1, -0.1])
    np.testing.assert_array_equal(cs.limit_max_values(0), [0.1, 0.1, 0.2])
    # ref_frame_rot_vec = 0: the joint frame is the world frame at creation; turning B by 0.35 about world z
    # (with A fixed) gives r_AB = (R_A R_0)^T (turn) ... = 0.35 e_z in that frame, 0.15 beyond the bound.
    turned = rot.copy()
    turned[:, 1] = lie.exp_so3(np.array([0.0, 0.0, 0.35])) @ rot[:, 1]
    np.testing.assert_allclose(cs.deviation(pos, turned)[:, 0], [[0.0, 0.0, 0.15]] * 2, atol=1e-12)
    absolute = JointRotationRangeConstraints(com_local, 2)
    absolute.add(JointRotationRangeConstraintParams(actor_a=0, actor_b=1, range_around_rest=False, **bounds),
                 pos, rot)
    # R_0 = R_A^T at creation, so r = Log(R_0^T R_A^T R_B R_0) = Log(R_B R_A^T) (the world-frame relative turn).
    expected_r = lie.log_so3(rot[:, 1] @ np.swapaxes(rot[:, 0], -1, -2))
    lo, hi = np.array([-0.1, -0.1, -0.1]), np.array([0.1, 0.1, 0.2])
    expected = np.where(expected_r > hi, expected_r - hi, np.where(expected_r < lo, lo - expected_r, 0.0))
    np.testing.assert_allclose(absolute.deviation(pos, rot)[:, 0], expected, atol=1e-12)


# -- batching ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_subset_of_worlds_via_world_index_equals_the_batch(kind):
    """The solver may evaluate a subset of worlds (ctx.world_index): per-world targets and frames follow them."""
    sc = build_scenario(kind, seed=9)
    cs = sc.constraints
    batched = cs.evaluate(sc.ctx, sc.pos, sc.rot, True)
    for worlds in ([1], [2, 0]):
        ctx = make_ctx(sc.pos_start[worlds], sc.rot_start[worlds])
        ctx.world_index = np.array(worlds)
        sub = cs.evaluate(ctx, sc.pos[worlds], sc.rot[worlds], True)
        np.testing.assert_allclose(sub.energy, batched.energy[worlds], rtol=1e-14)
        np.testing.assert_allclose(sub.gradient, batched.gradient[worlds], rtol=1e-14, atol=1e-14)
        np.testing.assert_allclose(sub.hessian_diag, batched.hessian_diag[worlds], rtol=1e-14, atol=1e-12)
        np.testing.assert_allclose(cs.deviation(sc.pos[worlds], sc.rot[worlds], worlds=worlds),
                                   cs.deviation(sc.pos, sc.rot)[worlds], atol=1e-15)
    with pytest.raises(ValueError, match="world_index"):
        cs.evaluate(make_ctx(sc.pos_start[:1], sc.rot_start[:1]), sc.pos[:1], sc.rot[:1], False)


def test_targets_are_per_world():
    cs = RigidPivotPositionConstraints(np.zeros((1, 3)), 3)
    cs.add(RigidPivotPositionConstraintParams(actor=0, target_position=[1.0, 0.0, 0.0]))
    cs.set_target_position(0, [0.0, 5.0, 0.0], worlds=[1])
    np.testing.assert_array_equal(cs.target_position(0), [[1, 0, 0], [0, 5, 0], [1, 0, 0]])
    cs.set_target_position(0, np.arange(6.0).reshape(2, 3), worlds=np.array([True, False, True]))
    np.testing.assert_array_equal(cs.target_position(0), [[0, 1, 2], [0, 5, 0], [3, 4, 5]])
    cs.update_old_target(0, worlds=[0])
    np.testing.assert_array_equal(cs._old_targets["position"][:, 0], [[0, 1, 2], [1, 0, 0], [1, 0, 0]])


# -- lifecycle -----------------------------------------------------------------------------------------------


def test_remove_and_remap_actors_drop_constraints_and_keep_the_rest():
    sc = build_scenario("spherical", seed=10)
    cs = sc.constraints
    before = cs.local_terms(sc.ctx, sc.pos, sc.rot, False).energy
    mapping = cs.remove([1])
    np.testing.assert_array_equal(mapping, [0, -1, 1])
    np.testing.assert_allclose(cs.local_terms(sc.ctx, sc.pos, sc.rot, False).energy, before[:, [0, 2]])
    # Destroy actor 3 (pairs left: (0, 1), (3, 0)); the others shift down by one from index 3 (none here).
    actor_map = np.array([0, 1, 2, -1])
    com_local = cs.com_local[:3]
    mapping = cs.remap_actors(actor_map, com_local)
    np.testing.assert_array_equal(mapping, [0, -1])
    np.testing.assert_array_equal(cs.actors, [[0, 1]])
    keep = [0, 1, 2]
    after = cs.local_terms(make_ctx(sc.pos_start[:, keep], sc.rot_start[:, keep]), sc.pos[:, keep], sc.rot[:, keep],
                           False).energy
    np.testing.assert_allclose(after, before[:, [0]])


def test_remap_reorders_actor_indices():
    cs = RigidPivotPositionConstraints(np.zeros((3, 3)), 1)
    cs.add(RigidPivotPositionConstraintParams(actor=2))
    cs.add(RigidPivotPositionConstraintParams(actor=0))
    mapping = cs.remap_actors(np.array([-1, 0, 1]), np.zeros((2, 3)))  # actor 0 destroyed, 1 -> 0, 2 -> 1
    np.testing.assert_array_equal(mapping, [0, -1])
    np.testing.assert_array_equal(cs.actors, [[1]])


def test_state_round_trip():
    sc = build_scenario("pivot_position", seed=12)
    cs = sc.constraints
    state = cs.get_state()
    energy = cs.evaluate(sc.ctx, sc.pos, sc.rot, False).energy
    cs.set_target_position(0, [9.0, 9.0, 9.0])
    cs.update_old_target()
    cs.set_state(state)
    np.testing.assert_array_equal(cs.evaluate(sc.ctx, sc.pos, sc.rot, False).energy, energy)


def test_runtime_parameter_setters():
    cs = RigidPivotPositionConstraints(np.zeros((1, 3)), 1)
    cs.add(RigidPivotPositionConstraintParams(actor=0))
    cs.set_stiffness(0, 5.0)
    cs.set_damping(0, 2.0)
    cs.set_saturation(0, 0.1)
    assert (cs.stiffness[0], cs.damping[0], cs.saturation[0]) == (5.0, 2.0, 0.1)


def test_empty_set_evaluates_to_zero():
    cs = RigidSphericalJointConstraints(np.zeros((2, 3)), 2)
    pos, rot = np.zeros((2, 2, 3)), np.broadcast_to(np.eye(3), (2, 2, 3, 3)).copy()
    terms = cs.evaluate(make_ctx(pos, rot), pos, rot, True)
    assert np.all(terms.energy == 0) and terms.couplings == []
    assert cs.deviation(pos, rot).shape == (2, 0, 3)


# -- validation ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: RigidPivotPositionConstraintParams(stiffness=-1.0), "stiffness"),
        (lambda: RigidPivotPositionConstraintParams(stiffness=float("nan")), "stiffness"),
        (lambda: RigidPivotPositionConstraintParams(damping=-0.5), "damping"),
        (lambda: RigidPivotPositionConstraintParams(saturation=0.0), "saturation must not be zero"),
        (lambda: RigidPivotPositionConstraintParams(local_position=[0.0, np.nan, 0.0]), "local_position"),
        (lambda: RigidPivotPositionConstraintParams(target_position=[0.0, 1.0]), "target_position"),
        (lambda: RigidPrismaticJointConstraintParams(free_axis=[0.0, 0.0, 0.0]), "Free axis"),
        (lambda: RigidPrismaticJointConstraintParams(free_axis=[1, 0, 0], min=0.2, max=0.1), "Wrong limits"),
        (lambda: JointRotationRangeConstraintParams(angle_range_y=(0.3, -0.3)), "min <= max"),
        (lambda: JointRotationRangeConstraintParams(ref_frame_rot_vec=[np.inf, 0, 0]), "ref_frame_rot_vec"),
        (lambda: RigidPivotToRigidTargetConstraintParams(target_transform=(0, 0, 0)), "TransformRT"),
    ],
)
def test_params_reject_bad_values(make, message):
    with pytest.raises((ValueError, TypeError), match=message):
        make()


def test_add_rejects_incomplete_or_inconsistent_params(two_bodies):
    com_local, pos, rot = two_bodies
    spherical = RigidSphericalJointConstraints(com_local, 2)
    with pytest.raises(ValueError, match="actor_a must be set"):
        spherical.add(RigidSphericalJointConstraintParams(actor_b=1))
    with pytest.raises(ValueError, match="cannot be the same"):
        spherical.add(RigidSphericalJointConstraintParams(actor_a=1, actor_b=1))
    with pytest.raises(ValueError, match="out of range"):
        spherical.add(RigidSphericalJointConstraintParams(actor_a=0, actor_b=5))
    with pytest.raises(TypeError, match="model actor index"):
        spherical.add(RigidSphericalJointConstraintParams(actor_a="box", actor_b=1))
    with pytest.raises(TypeError, match="expects RigidSphericalJointConstraintParams"):
        spherical.add(RigidPivotPositionConstraintParams(actor=0))
    prismatic = RigidPrismaticJointConstraints(com_local, 2)
    with pytest.raises(ValueError, match="Free axis"):
        prismatic.add(RigidPrismaticJointConstraintParams(actor_a=0, actor_b=1), pos, rot)
    with pytest.raises(ValueError, match="need the current poses"):
        prismatic.add(RigidPrismaticJointConstraintParams(actor_a=0, actor_b=1, free_axis=[0, 0, 1]))
    with pytest.raises(ValueError, match="shapes"):
        prismatic.add(RigidPrismaticJointConstraintParams(actor_a=0, actor_b=1, free_axis=[0, 0, 1]), pos[:1], rot)
    assert len(spherical) == 0 and len(prismatic) == 0


def test_setters_reject_bad_values():
    cs = RigidPivotRotationConstraints(np.zeros((1, 3)), 2)
    cs.add(RigidPivotRotationConstraintParams(actor=0))
    with pytest.raises(ValueError, match="rotation matrix"):
        cs.set_target_rotation(0, np.diag([1.0, 1.0, -1.0]))
    with pytest.raises(ValueError, match="rotation matrix"):
        cs.set_target_rotation(0, 2.0 * np.eye(3))
    with pytest.raises(ValueError, match="finite"):
        cs.set_target_rotation(0, np.full((3, 3), np.nan))
    with pytest.raises(ValueError, match="shape"):
        cs.set_target_rotation(0, np.broadcast_to(np.eye(3), (3, 3, 3)))
    with pytest.raises(IndexError):
        cs.set_stiffness(3, 1.0)
    with pytest.raises(ValueError, match="stiffness"):
        cs.set_stiffness(0, -1.0)
    with pytest.raises(ValueError, match="saturation"):
        cs.set_saturation(0, 0.0)
    pivots = RigidPivotPositionConstraints(np.zeros((1, 3)), 2)
    pivots.add(RigidPivotPositionConstraintParams(actor=0))
    with pytest.raises(ValueError, match="finite"):
        pivots.set_target_position(0, [0.0, np.inf, 0.0])
    pos, rot = np.zeros((2, 1, 3)), np.broadcast_to(np.eye(3), (2, 1, 3, 3)).copy()
    with pytest.raises(ValueError, match="stage_dt"):
        pivots.evaluate(make_ctx(pos, rot, stage_dt=0.0), pos, rot, False)


def test_non_finite_iterate_gives_nan_energy_not_an_exception():
    cs = RigidPivotPositionConstraints(np.zeros((1, 3)), 2)
    cs.add(RigidPivotPositionConstraintParams(actor=0, saturation=0.1))
    pos, rot = np.zeros((2, 1, 3)), np.broadcast_to(np.eye(3), (2, 1, 3, 3)).copy()
    bad = pos.copy()
    bad[1, 0, 0] = np.nan
    energy = cs.evaluate(make_ctx(pos, rot), bad, rot, False).energy
    assert energy[0] == 0.0 and np.isnan(energy[1])
