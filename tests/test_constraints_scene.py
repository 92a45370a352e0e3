"""Constraints through the scene API: factories, handles and errors, and the physics they produce (pendulums,
a slider on its limits, a saturated pivot, a rotation drive, a moving target), plus destruction with actors,
capture / restore and batched worlds.

Geometry note: every scene keeps its bodies well apart (gaps >= 0.1 m, far beyond any contact threshold), so
contact never acts and the motion is the constraints' alone.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from reference import set_solver

import superdex_gym.sim as mochi
from superdex_gym.sim.constraints.system import Constraint
from superdex_gym.sim.constraints import (
    JointRotationRangeConstraintParams,
    JointRotationTrackingConstraintParams,
    RigidPivotPositionConstraintParams,
    RigidPivotRotationConstraintParams,
    RigidPivotToRigidTargetConstraintParams,
    RigidPrismaticJointConstraintParams,
    RigidSphericalJointConstraintParams,
)
from superdex_gym.sim.params import QueryType

BDF2 = mochi.IntegrationMethod.BDF2
HALF = 0.05  # m, half extent of the test boxes: 1 kg at the default density 1000


def add_box(scene, name, position=(0.0, 0.0, 0.0), rotation=None, static=False, half=HALF):
    return scene.create_rigid_actor(
        name=name,
        shape=mochi.create_box_mesh_shape([half, half, half]),
        is_static=static,
        world_from_local=mochi.TransformRT(rotation or mochi.Quaternion(), list(position)),
    )


def three_body_scene():
    """A static anchor and two dynamic boxes 0.5 m apart."""
    scene = mochi.create_scene("constraints")
    anchor = add_box(scene, "anchor", (0.0, 1.0, 0.0), static=True, half=0.02)
    a = add_box(scene, "a", (0.0, 0.0, 0.0))
    b = add_box(scene, "b", (0.5, 0.0, 0.0))
    return scene, anchor, a, b


# -- factories ---------------------------------------------------------------------------------------------------


def factory_cases(anchor, a, b):
    """(factory name, params type, fields, actors in order, type name, DoFs per actor) for every type."""
    return [
        ("create_rigid_pivot_position_constraint", RigidPivotPositionConstraintParams,
         dict(actor=a, local_position=[0.0, 0.1, 0.0], target_position=[0.0, 0.2, 0.0]), [a], "RigidPivotPosition",
         [[0, 1, 2, 3, 4, 5]]),
        ("create_rigid_pivot_to_rigid_target_constraint", RigidPivotToRigidTargetConstraintParams,
         dict(actor=a, target_transform=mochi.TransformRT(translation=[0.0, 0.1, 0.0])), [a],
         "RigidPivotToRigidTarget", [[0, 1, 2, 3, 4, 5]]),
        ("create_rigid_pivot_rotation_constraint", RigidPivotRotationConstraintParams,
         dict(actor=a, target_rotation=[0.0, 0.0, 0.3]), [a], "RigidPivotRotation", [[3, 4, 5]]),
        ("create_rigid_spherical_joint_constraint", RigidSphericalJointConstraintParams,
         dict(actor_a=a, actor_b=b, local_pos_a=[0.25, 0.0, 0.0], local_pos_b=[-0.25, 0.0, 0.0]), [a, b],
         "RigidSphericalJoint", [[0, 1, 2, 3, 4, 5], [0, 1, 2, 3, 4, 5]]),
        ("create_rigid_prismatic_joint_constraint", RigidPrismaticJointConstraintParams,
         dict(actor_a=anchor, actor_b=a, free_axis=[1.0, 0.0, 0.0], min=-0.1, max=0.2), [anchor, a],
         "RigidPrismaticJoint", [[0, 1, 2, 3, 4, 5], [0, 1, 2]]),
        ("create_joint_rotation_range_constraint", JointRotationRangeConstraintParams,
         dict(actor_a=a, actor_b=b, angle_range_z=(-0.5, 0.4)), [a, b], "JointRotationRange", [[3, 4, 5], [3, 4, 5]]),
        ("create_joint_rotation_tracking_constraint", JointRotationTrackingConstraintParams,
         dict(actor_a=anchor, actor_b=b), [anchor, b], "JointRotationTracking", [[3, 4, 5], [3, 4, 5]]),
    ]


def test_every_factory_accepts_params_or_keywords_and_actors_or_handles():
    scene, anchor, a, b = three_body_scene()
    assert scene.get_num_constraints() == 0 and scene._constraint_system is None
    created = []
    for name, params_type, fields, actors, kind, dofs in factory_cases(anchor, a, b):
        factory = getattr(scene, name)
        by_params = factory(params_type(stiffness=123.0, **fields))
        as_handles = {k: (v.get_handle() if isinstance(v, mochi.RigidActor) else v) for k, v in fields.items()}
        by_kwargs = factory(damping=4.0, **as_handles)
        by_generic = scene.create_constraint(params_type(**fields))
        for c in (by_params, by_kwargs, by_generic):
            assert isinstance(c, Constraint) and c.is_valid()
            assert c.get_type() == c.constraint_type == kind
            assert c.get_num_actors() == len(actors)
            assert [c.get_actor(i) for i in range(len(actors))] == actors
            assert [c.get_dof_indices_for_actor(i).tolist() for i in range(len(actors))] == dofs
            assert scene.get_constraint(c.get_handle()) is c
        assert (by_params.get_stiffness(), by_params.get_damping(), by_params.get_saturation()) == (123.0, 0.0, -1.0)
        assert (by_kwargs.get_stiffness(), by_kwargs.get_damping()) == (1e6, 4.0)
        created += [by_params, by_kwargs, by_generic]
    assert scene.get_num_constraints() == len(created) == 21
    assert len({c.get_handle() for c in created}) == 21
    seen = []
    scene.for_each_constraint(seen.append)
    assert seen == created  # creation order
    assert scene._extra_potentials.count(scene._constraint_system) == 1  # one system, added once
    scene.step(0.01)  # every type at once steps (the constraints start satisfied or nearly so)
    assert scene.get_solver_stats().convergence_status is not mochi.ConvergenceStatus.DIVERGED


def test_limit_getters_and_target_getters():
    scene, anchor, a, b = three_body_scene()
    slider = scene.create_rigid_prismatic_joint_constraint(actor_a=anchor, actor_b=a, free_axis=[0, 0, 2], max=0.3)
    assert slider.get_limit_min_values().tolist() == [-math.inf] and slider.get_limit_max_values().tolist() == [0.3]
    rng_c = scene.create_joint_rotation_range_constraint(actor_a=a, actor_b=b, angle_range_y=(-0.2, 0.1))
    assert rng_c.get_limit_min_values()[1] == -0.2 and rng_c.get_limit_max_values()[1] == 0.1
    pivot = scene.create_rigid_pivot_position_constraint(actor=a, target_position=[1.0, 2.0, 3.0])
    with pytest.raises(TypeError, match="RigidPrismaticJoint / JointRotationRange"):
        pivot.get_limit_min_values()
    assert pivot.get_target_position().tolist() == [1.0, 2.0, 3.0]
    rot = scene.create_rigid_pivot_rotation_constraint(actor=a)
    rot.set_target_rotation(mochi.Quaternion.rotation_y(0.3))
    np.testing.assert_allclose(rot.get_target_rotation().to_rotation_vector(), [0, 0.3, 0], atol=1e-15)
    rot.set_target_rotation([0.1, 0.0, 0.0])  # rotation vector
    np.testing.assert_allclose(rot.get_target_rotation().to_rotation_vector(), [0.1, 0, 0], atol=1e-15)
    rot.set_target_rotation(np.eye(3))  # matrix
    np.testing.assert_allclose(rot.get_target_rotation().to_array(), [0, 0, 0, 1], atol=1e-15)
    rigid = scene.create_rigid_pivot_to_rigid_target_constraint(actor=b)
    target = mochi.TransformRT(mochi.Quaternion.rotation_x(0.2), [0.0, 0.5, 0.0])
    rigid.set_target_transform(target)
    got = rigid.get_target_transform()
    np.testing.assert_allclose(got.translation, target.translation, atol=1e-15)
    np.testing.assert_allclose(got.rotation.to_array(), target.rotation.to_array(), atol=1e-15)
    with pytest.raises(TypeError, match="set_target_position applies to RigidPivotPosition"):
        rigid.set_target_position([0, 0, 0])
    with pytest.raises(TypeError, match="set_target_rotation applies to"):
        pivot.set_target_rotation(mochi.Quaternion())
    with pytest.raises(TypeError, match="TransformRT"):
        rigid.set_target_transform([0, 0, 0])
    with pytest.raises(ValueError, match="rotation"):
        rot.set_target_rotation([1.0, 2.0])


# -- errors ------------------------------------------------------------------------------------------------------


def bad_creations(scene, anchor, a, b, other_scene_actor, dead):
    """(call, exception type, message fragment): each must fail and leave the scene unchanged."""
    pivot = scene.create_rigid_pivot_position_constraint
    joint = scene.create_rigid_spherical_joint_constraint
    slider = scene.create_rigid_prismatic_joint_constraint
    return [
        (lambda: pivot(actor=987654), ValueError, "no actor with handle 987654"),
        (lambda: pivot(actor=other_scene_actor), ValueError, "belongs to another scene"),
        (lambda: pivot(actor=dead), ValueError, "was destroyed"),
        (lambda: pivot(actor=dead.get_handle()), ValueError, "no actor with handle"),
        (lambda: pivot(actor="a"), TypeError, "RigidActor or an actor handle"),
        (lambda: pivot(actor=True), TypeError, "RigidActor or an actor handle"),
        (lambda: pivot(), ValueError, "actor must be set"),
        (lambda: pivot(actor=anchor), ValueError, "need a dynamic actor"),
        (lambda: scene.create_rigid_pivot_rotation_constraint(actor=anchor.get_handle()), ValueError, "dynamic"),
        (lambda: joint(actor_a=anchor, actor_b=anchor.get_handle()), ValueError, "same actor"),
        (lambda: joint(actor_a=a, actor_b=a.get_handle()), ValueError, "same actor"),
        (lambda: joint(actor_a=a), ValueError, "actor_b must be set"),
        (lambda: slider(actor_a=anchor, actor_b=a, free_axis=[0.0, 0.0, 0.0]), ValueError, "non-zero"),
        (lambda: slider(actor_a=anchor, actor_b=a), ValueError, "Free axis"),
        (lambda: slider(actor_a=anchor, actor_b=a, free_axis=[1, 0, 0], min=0.2, max=0.1), ValueError, "min"),
        (lambda: scene.create_joint_rotation_range_constraint(actor_a=a, actor_b=b, angle_range_x=(0.3, 0.1)),
         ValueError, "min <= max"),
        (lambda: pivot(actor=a, target_position=[0.0, math.nan, 0.0]), ValueError, "finite"),
        (lambda: pivot(actor=a, stiffness=math.nan), ValueError, "stiffness"),
        (lambda: pivot(actor=a, saturation=0.0), ValueError, "saturation must not be zero"),
        (lambda: pivot(actor=a, stiffnes=1.0), TypeError, "no fields \\['stiffnes'\\]"),
        (lambda: pivot(RigidPivotPositionConstraintParams(actor=a), damping=1.0), TypeError, "not both"),
        (lambda: pivot(RigidSphericalJointConstraintParams(actor_a=a, actor_b=b)), TypeError, "expected Rigid"),
        (lambda: scene.create_constraint(object()), TypeError, "expected one of"),
    ]


def test_invalid_creations_raise_clear_errors_and_leave_the_scene_usable():
    scene, anchor, a, b = three_body_scene()
    other = mochi.create_scene("other")
    other_actor = add_box(other, "elsewhere")
    dead = add_box(scene, "dead", (0.0, -1.0, 0.0))
    scene.destroy_actor(dead)
    for call, exc, message in bad_creations(scene, anchor, a, b, other_actor, dead):
        with pytest.raises(exc, match=message):
            call()
        assert scene.get_num_constraints() == 0
    assert scene._constraint_system is None  # nothing was added by the failed attempts
    # A mutated params object is re-validated at creation.
    params = RigidPivotPositionConstraintParams(actor=a)
    params.local_position = [math.inf, 0.0, 0.0]
    with pytest.raises(ValueError, match="finite"):
        scene.create_constraint(params)
    # The scene still works: a joint between a static and a dynamic actor is fine.
    c = scene.create_rigid_spherical_joint_constraint(actor_a=anchor, actor_b=a, local_pos_a=[0, -1, 0])
    for call, exc, message in bad_creations(scene, anchor, a, b, other_actor, dead):
        with pytest.raises(exc, match=message):
            call()
    assert scene.get_num_constraints() == 1 and c.is_valid()
    scene.step(0.01)


def test_runtime_setters_and_destroyed_constraints():
    scene, anchor, a, b = three_body_scene()
    c = scene.create_rigid_spherical_joint_constraint(actor_a=a, actor_b=b, local_pos_a=[0.25, 0, 0],
                                                      local_pos_b=[-0.25, 0, 0])
    keep = scene.create_rigid_pivot_position_constraint(actor=a)
    c.set_stiffness(2e5)
    c.set_damping(3.0)
    c.set_saturation(0.01)
    assert (c.get_stiffness(), c.get_damping(), c.get_saturation()) == (2e5, 3.0, 0.01)
    for setter, value in ((c.set_stiffness, -1.0), (c.set_damping, math.nan), (c.set_saturation, 0.0)):
        with pytest.raises(ValueError):
            setter(value)
    with pytest.raises(IndexError):
        c.get_actor(2)
    with pytest.raises(KeyError, match="no constraint with handle"):
        scene.get_constraint(10**9)
    with pytest.raises(KeyError):
        scene.destroy_constraint(10**9)
    other = mochi.create_scene("other")
    other_c = other.create_rigid_pivot_position_constraint(actor=add_box(other, "x"))
    with pytest.raises(ValueError, match="another scene"):
        scene.destroy_constraint(other_c)
    handle = c.get_handle()
    scene.destroy_constraint(c)
    assert not c.is_valid() and scene.get_num_constraints() == 1 and "destroyed" in repr(c)
    for op in (c.get_deviation, c.get_stiffness, lambda: c.set_damping(1.0), c.get_num_actors,
               lambda: c.get_actor(0), lambda: c.update_old_target(), lambda: scene.destroy_constraint(c)):
        with pytest.raises(RuntimeError, match="destroyed"):
            op()
    with pytest.raises(KeyError):
        scene.get_constraint(handle)
    assert keep.is_valid() and scene.get_constraints() == [keep]
    scene.destroy_constraint(keep.get_handle())  # by handle
    assert scene.get_num_constraints() == 0
    scene.step(0.01)  # an empty system is harmless


# -- pendulums ---------------------------------------------------------------------------------------------------


def zero_crossings(t, x):
    """Times where x changes sign, by linear interpolation between samples."""
    i = np.nonzero(np.sign(x[:-1]) * np.sign(x[1:]) < 0)[0]
    return t[i] - x[i] * (t[i + 1] - t[i]) / (x[i + 1] - x[i])


def test_pendulum_on_a_spherical_joint_to_a_static_anchor_has_the_compound_pendulum_period():
    # A 1 kg cube (half extent 0.05) hung l = 0.1 m below a static anchor by an actor-actor spherical joint.
    # Stiffness: the pivot spring's frequency sqrt(k/m) = 3.2e3 rad/s at k = 1e7 is ~350x the pendulum's 9.2 rad/s;
    # its static stretch m g / k = 1e-6 m lengthens l by 1e-5 (period bias 5e-6) and the quasi-static coupling
    # bias is ~(9.2 / 3.2e3)^2 ~ 1e-5: both far below 0.1%.
    length, theta0, dt = 0.1, 0.03, 0.001
    scene = mochi.create_scene("pendulum")
    set_solver(scene, BDF2)
    anchor = add_box(scene, "anchor", static=True, half=0.02)
    bob = add_box(scene, "bob", (length * math.sin(theta0), -length * math.cos(theta0), 0.0),
                  mochi.Quaternion.rotation_z(theta0))
    joint = scene.create_rigid_spherical_joint_constraint(actor_a=bob, actor_b=anchor, local_pos_a=[0.0, length, 0.0],
                                                          stiffness=1e7)
    assert np.abs(joint.get_deviation()).max() < 1e-15
    mass, izz = bob.get_mass(), bob.get_rigid_moment_of_inertia_local()[5]
    i_pivot = izz + mass * length**2
    # Small-angle period, with the first finite-amplitude correction (1 + theta0^2 / 16 = 1 + 6e-5).
    expected = 2 * math.pi * math.sqrt(i_pivot / (mass * 9.8 * length)) * (1 + theta0**2 / 16)
    steps = int(2.3 * expected / dt)  # crossings at T/4, 3T/4, ..., 9T/4: two full periods
    times, angles, worst = np.zeros(steps), np.zeros(steps), 0.0
    for k in range(steps):
        scene.step(dt)
        c = bob.get_center_of_mass_transform().translation
        times[k], angles[k] = (k + 1) * dt, math.atan2(c[0], -c[1])
        worst = max(worst, float(np.linalg.norm(joint.get_deviation())))
    crossings = zero_crossings(times, angles)
    assert len(crossings) == 5
    period = 2 * (crossings[-1] - crossings[0]) / (len(crossings) - 1)
    error = abs(period / expected - 1)
    print(f"pendulum period {period:.6f} s, expected {expected:.6f} s, error {100 * error:.4f} %, "
          f"max joint gap {worst:.2e} m")
    assert error < 0.01
    assert worst < 1e-5  # m g / k plus the centripetal load: ~1e-6 m


def body_energy(actor, gravity_y=-9.8):
    """Kinetic + gravitational energy [J] of one dynamic actor (inertia about the CoM from its local Real6)."""
    m = actor.get_mass()
    ixx, ixy, ixz, iyy, iyz, izz = actor.get_rigid_moment_of_inertia_local()
    inertia = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
    com = actor.get_center_of_mass_transform()
    rot = com.rotation_matrix
    v, w = actor.get_linear_velocity(), actor.get_angular_velocity()
    return 0.5 * m * v @ v + 0.5 * w @ rot @ inertia @ rot.T @ w - m * gravity_y * com.translation[1]


def test_double_pendulum_energy_stays_bounded_for_10_s_with_bdf2():
    # Anchor at the origin; rod 1: pivot 0.5 m above box 1's CoM, joint 2 at 0.25 m below it; rod 2: box 2's CoM
    # 0.5 m beyond joint 2. The lengths keep the boxes >= 0.25 m apart in every configuration (no contact).
    # Released from rest with both rods horizontal (chaotic motion, speeds up to ~5 m/s).
    # Each step is solved to convergence: with the reference's default budget (4 Newton iterations, abs_tol 1e-3)
    # the fastest phases stop unconverged, and an unconverged step can add energy (measured: +4 % over 10 s from a
    # 1 rad release); converged, the energy only decreases. This test is about the integrator and the joints.
    scene = mochi.create_scene("double pendulum")
    set_solver(scene, BDF2, abs_tol=1e-6, max_iter=20)
    anchor = add_box(scene, "anchor", static=True, half=0.02)
    horizontal = mochi.Quaternion.rotation_z(math.pi / 2)  # local +y -> world -x
    box1 = add_box(scene, "box1", (0.5, 0.0, 0.0), horizontal)
    box2 = add_box(scene, "box2", (1.25, 0.0, 0.0), horizontal)
    j1 = scene.create_rigid_spherical_joint_constraint(actor_a=anchor, actor_b=box1, local_pos_b=[0.0, 0.5, 0.0])
    j2 = scene.create_rigid_spherical_joint_constraint(actor_a=box1, actor_b=box2, local_pos_a=[0.0, -0.25, 0.0],
                                                       local_pos_b=[0.0, 0.5, 0.0])
    energy0 = body_energy(box1) + body_energy(box2)
    # Energy scale: the drop from the release pose to hanging at rest (CoMs 0.5 m and 1.25 m below the anchor).
    scale = energy0 + 9.8 * (box1.get_mass() * 0.5 + box2.get_mass() * 1.25)
    energies, gaps = [], []
    for _ in range(1000):
        scene.step(0.01)
        assert scene.get_solver_stats().convergence_status is mochi.ConvergenceStatus.CONVERGED
        energies.append(body_energy(box1) + body_energy(box2))
        gaps.append(max(np.linalg.norm(j1.get_deviation()), np.linalg.norm(j2.get_deviation())))
    drift = (np.array(energies) - energy0) / scale
    print(f"double pendulum: max energy change {100 * drift.max():+.3f} %, final {100 * drift[-1]:+.2f} % of the "
          f"{scale:.2f} J scale, max joint gap {max(gaps):.2e} m")
    # BDF2 is A-stable and dissipative (here it loses ~40 % in 10 s of this fast motion), so it must never gain
    # energy beyond the O(dt^2) difference between the energy of its finite-difference velocities and the true
    # one, plus the stored spring energy k |g|^2 / 2 (|g| < 1e-3 m: < 0.5 J... at the peak load, ~0.01 J typical).
    # 2 % of the energy scale bounds those; a sign error in a joint's force or damping would blow through it.
    assert drift.max() < 0.02
    assert max(gaps) < 2e-3  # peak joint load ~ 700 N at k = 1e6


# -- slider, saturation, drive, moving target ------------------------------------------------------------------------


def test_prismatic_slider_stops_at_its_limits_within_the_compliance_deflection():
    scene = mochi.create_scene("slider")
    rail = add_box(scene, "rail", (0.0, 0.5, 0.0), static=True)
    box = add_box(scene, "box")
    k, force, lo, hi = 1e6, 20.0, -0.1, 0.2
    slider = scene.create_rigid_prismatic_joint_constraint(actor_a=rail, actor_b=box, free_axis=[1.0, 0.0, 0.0],
                                                           min=lo, max=hi, stiffness=k)
    errors = []
    for push, limit in ((force, hi), (-force, lo)):
        box.set_external_forces_on_dofs([0], [push])
        for _ in range(80):  # 0.8 s: the 0.3 m travel takes <= 0.25 s, then the stiff stop settles (backward Euler)
            scene.step(0.01)
        x = box.get_center_of_mass_transform().translation
        overshoot = x[0] - limit
        errors.append(abs(overshoot - push / k))
        # The travel's deviation is the overshoot past the limit; the transverse one holds gravity (m g / k).
        deviation = slider.get_deviation()
        assert deviation[2] == pytest.approx(overshoot, abs=1e-12)
        assert np.linalg.norm(deviation[:2]) == pytest.approx(9.8 * box.get_mass() / k, rel=1e-3)
        assert abs(overshoot - push / k) < 0.02 * force / k
        assert abs(x[1] - (-9.8 * box.get_mass() / k)) < 1e-8
    print(f"slider stop error {max(errors):.2e} m vs compliance deflection F/k = {force / k:.1e} m")


def test_saturated_pivot_never_pulls_harder_than_its_cap():
    scene = mochi.create_scene("saturation")
    scene.set_gravity([0.0, 0.0, 0.0])
    scene.register_query(QueryType.CONSTRAINT_FORCE)
    box = add_box(scene, "box")
    k, cap_gap = 1e4, 0.01
    cap = k * cap_gap  # 100 N
    pivot = scene.create_rigid_pivot_position_constraint(actor=box, stiffness=k, saturation=cap_gap)
    box.set_external_forces_on_dofs([0], [3 * cap])  # pulls three times harder than the cap allows
    norms = []
    for _ in range(40):
        scene.step(0.01)
        norms.append(np.linalg.norm(pivot.get_force()[:3]))
    ratio = max(norms) / cap
    print(f"saturated pivot: max |force| / (k gbar) - 1 = {ratio - 1:.1e}, "
          f"deviation {np.linalg.norm(pivot.get_deviation()):.3f} m")
    assert ratio <= 1 + 1e-12  # the ramp's derivative never exceeds 1; round-off only
    assert norms[-1] > 0.999 * cap  # far past the ramp the force is the cap
    assert np.linalg.norm(pivot.get_deviation()) > 10 * cap_gap  # and the body got away


def test_rotation_tracking_drive_reaches_its_target_and_holds_it_against_a_torque():
    scene = mochi.create_scene("drive")
    scene.set_gravity([0.0, 0.0, 0.0])
    scene.register_query(QueryType.CONSTRAINT_FORCE)
    base = add_box(scene, "base", (0.0, 0.5, 0.0), static=True)
    box = add_box(scene, "box")
    inertia = box.get_rigid_moment_of_inertia_local()[5]
    k = 100.0  # N m / rad
    drive = scene.create_joint_rotation_tracking_constraint(actor_a=base, actor_b=box, stiffness=k,
                                                            damping=2 * math.sqrt(k * inertia))  # critical
    target = 0.5
    drive.set_target_rotation(mochi.Quaternion.rotation_z(target))
    for _ in range(50):
        scene.step(0.01)
    angle = box.get_root_transform().rotation.to_rotation_vector()
    tracking_error = float(np.linalg.norm(angle - [0.0, 0.0, target]))
    torque = 0.5  # N m, deflection tau / k = 5e-3 rad
    box.set_external_forces_on_dofs([5], [torque])
    for _ in range(50):
        scene.step(0.01)
    deflection = box.get_root_transform().rotation.to_rotation_vector()[2] - target
    print(f"drive: tracking error {tracking_error:.2e} rad, deflection {deflection:.6e} rad vs tau/k {torque / k:.1e}")
    assert tracking_error < 1e-5
    assert abs(deflection / (torque / k) - 1) < 1e-3
    np.testing.assert_allclose(drive.get_deviation(), [0.0, 0.0, deflection], atol=1e-9)
    force = drive.get_force()  # (torque on the base, torque on the box)
    np.testing.assert_allclose(force[3:], [0.0, 0.0, -torque], atol=1e-3 * torque)
    np.testing.assert_allclose(force[:3], -force[3:], atol=1e-12)


def test_body_follows_a_moving_pivot_target_with_bounded_lag():
    scene = mochi.create_scene("follow")
    scene.set_gravity([0.0, 0.0, 0.0])
    radius, freq, k, dt = 0.2, 0.5, 1e4, 0.01
    omega = 2 * math.pi * freq
    box = scene.create_rigid_actor(name="box", shape=mochi.create_box_mesh_shape([HALF] * 3),
                                   world_from_local=mochi.TransformRT(translation=[radius, 0.0, 0.0]),
                                   linear_velocity=[0.0, radius * omega, 0.0])
    pivot = scene.create_rigid_pivot_position_constraint(actor=box, target_position=[radius, 0.0, 0.0], stiffness=k,
                                                         damping=2 * math.sqrt(k * box.get_mass()))
    lags = []
    for n in range(1, 201):  # one revolution
        t = n * dt
        pivot.set_target_position([radius * math.cos(omega * t), radius * math.sin(omega * t), 0.0])
        scene.step(dt)
        lags.append(np.linalg.norm(pivot.get_deviation()))
    centripetal_lag = box.get_mass() * radius * omega**2 / k  # spring force = the centripetal force
    steady = max(lags[50:])
    print(f"moving target: max lag {max(lags):.2e} m, steady {steady:.2e} m, m r w^2 / k = {centripetal_lag:.2e} m")
    # The steady lag is the spring deflection carrying the centripetal force (backward Euler's O(dt) phase error
    # on this 0.5 Hz motion is ~1e-4 of it); 5 % margin.
    assert steady < 1.05 * centripetal_lag
    assert max(lags) < 0.01 * radius


# -- forces, actors, worlds, state -----------------------------------------------------------------------------------


def hanging_box_scene(length=0.3):
    scene = mochi.create_scene("hanging")
    anchor = add_box(scene, "anchor", static=True, half=0.02)
    bob = add_box(scene, "bob", (0.0, -length, 0.0))
    joint = scene.create_rigid_spherical_joint_constraint(actor_a=bob, actor_b=anchor, local_pos_a=[0.0, length, 0.0])
    return scene, anchor, bob, joint


def test_get_force_needs_the_query_and_gives_the_reaction_on_each_actor():
    scene, anchor, bob, joint = hanging_box_scene()
    set_solver(scene, abs_tol=1e-10)  # converged solves: the default stops at a residual of 1e-3 m g
    scene.step(0.01)
    with pytest.raises(RuntimeError, match="register_query\\(QueryType.CONSTRAINT_FORCE\\)"):
        joint.get_force()
    scene.register_query(QueryType.CONSTRAINT_FORCE)
    np.testing.assert_array_equal(joint.get_force(), np.zeros(12))  # no step since the query was registered
    for _ in range(20):
        scene.step(0.01)
    weight = 9.8 * bob.get_mass()
    force = joint.get_force()
    assert force.shape == (12,)  # (force, torque) on the bob, then on the anchor
    np.testing.assert_allclose(force[:6], [0.0, weight, 0.0, 0.0, 0.0, 0.0], atol=1e-6 * weight)
    np.testing.assert_allclose(force[6:9], -force[:3], atol=1e-12)
    late = scene.create_rigid_pivot_position_constraint(actor=bob, target_position=[0.0, -0.3, 0.0])
    np.testing.assert_array_equal(late.get_force(), np.zeros(6))  # created after the last step
    scene.step(0.01)
    assert late.get_force().shape == (6,)
    with pytest.raises(IndexError):
        joint.get_force(world=1)
    scene.unregister_query(QueryType.CONSTRAINT_FORCE)
    with pytest.raises(RuntimeError):
        joint.get_force()


def test_destroying_an_actor_destroys_its_constraints_and_keeps_the_others_working():
    scene, anchor, a, b = three_body_scene()
    c = add_box(scene, "c", (1.0, 0.0, 0.0))
    pa = scene.create_rigid_pivot_position_constraint(actor=a)
    ab = scene.create_rigid_spherical_joint_constraint(actor_a=a, actor_b=b, local_pos_a=[0.25, 0, 0],
                                                       local_pos_b=[-0.25, 0, 0])
    bc = scene.create_rigid_spherical_joint_constraint(actor_a=b, actor_b=c, local_pos_a=[0.25, 0, 0],
                                                       local_pos_b=[-0.25, 0, 0])
    pc = scene.create_rigid_pivot_position_constraint(actor=c, local_position=[0.0, 0.1, 0.0],
                                                      target_position=[1.0, 0.0, 0.0])
    drive = scene.create_joint_rotation_tracking_constraint(actor_a=anchor, actor_b=c)
    scene.destroy_actor(b)
    assert not ab.is_valid() and not bc.is_valid()
    assert scene.get_constraints() == [pa, pc, drive]
    assert pc.get_actor(0) == c and drive.get_actor(0) == anchor and drive.get_actor(1) == c
    np.testing.assert_allclose(pc.get_deviation(), [0.0, 0.1, 0.0], atol=1e-15)  # c's row moved; still c
    with pytest.raises(RuntimeError, match="destroyed"):
        bc.get_deviation()
    # Actors created after the constraints grow the model; the constraints keep working.
    add_box(scene, "late", (0.0, -1.0, 0.0))
    for _ in range(3):
        scene.step(0.01)
    expected = c.get_root_transform().transform_point([0.0, 0.1, 0.0]) - [1.0, 0.0, 0.0]
    np.testing.assert_allclose(pc.get_deviation(), expected, atol=1e-15)
    assert np.linalg.norm(expected) < 1e-4  # the stiff pivot pulled c's point onto its target
    scene.destroy_actor(c)
    assert scene.get_constraints() == [pa]
    scene.step(0.01)


def follower_scene(num_worlds=1):
    """A box on a pivot-position target plus a second box hung from it (a joint coupling two dynamic bodies)."""
    scene = mochi.create_scene("follower")
    set_solver(scene, BDF2)
    lead = add_box(scene, "lead")
    tail = add_box(scene, "tail", (0.0, -0.3, 0.0))
    pivot = scene.create_rigid_pivot_position_constraint(actor=lead, stiffness=1e4, damping=50.0)
    scene.create_rigid_spherical_joint_constraint(actor_a=lead, actor_b=tail, local_pos_b=[0.0, 0.3, 0.0])
    scene.set_num_worlds(num_worlds)
    return scene, lead, tail, pivot


def target_at(n, world):
    return [0.1 * math.sin(0.3 * n + world), 0.05 * world, 0.02 * n]


def pose_arrays(scene):
    cur = scene._state.current
    return [cur.com_position.copy(), cur.rotation.copy(), cur.linear_velocity.copy(), cur.angular_velocity.copy()]


def test_capture_restore_with_constraints_replays_bit_identically():
    scene, lead, tail, pivot = follower_scene(num_worlds=2)

    def run(start, count):
        for n in range(start, start + count):
            for w in range(2):
                pivot.set_target_position(target_at(n, w), world=w)
            scene.step(0.01)

    run(0, 5)
    handle = scene.capture_state()
    target_at_capture = pivot.get_target_position(world=1)
    run(5, 10)
    first = pose_arrays(scene)
    scene.restore_state(handle)
    np.testing.assert_array_equal(pivot.get_target_position(world=1), target_at_capture)
    run(5, 10)
    for x, y in zip(first, pose_arrays(scene)):
        np.testing.assert_array_equal(x, y)
    # Per-world restore: world 1 returns to the snapshot (state and constraint targets), world 0 is untouched.
    world0 = [p[0].copy() for p in pose_arrays(scene)]
    target0 = pivot.get_target_position(world=0)
    scene.restore_state(handle, worlds=[1])
    np.testing.assert_array_equal(pivot.get_target_position(world=1), target_at_capture)
    np.testing.assert_array_equal(pivot.get_target_position(world=0), target0)
    for x, y in zip(world0, pose_arrays(scene)):
        np.testing.assert_array_equal(x, y[0])
    run(5, 10)
    for x, y in zip(first, pose_arrays(scene)):
        np.testing.assert_array_equal(x[1], y[1])  # world 1 replays its first run exactly


def test_batched_worlds_with_per_world_targets_equal_separate_scenes():
    num_worlds, steps = 3, 15
    batched, _, _, pivot = follower_scene(num_worlds)
    singles = [follower_scene(1) for _ in range(num_worlds)]
    targets = np.array([[target_at(n, w) for w in range(num_worlds)] for n in range(steps)])
    for n in range(steps):
        pivot.set_target_position(targets[n])  # (W, 3): one target per world
        batched.step(0.01)
        for w, (scene, _, _, single_pivot) in enumerate(singles):
            single_pivot.set_target_position(targets[n, w])
            scene.step(0.01)
    for w, (scene, *_rest) in enumerate(singles):
        for x, y in zip(pose_arrays(batched), pose_arrays(scene)):
            np.testing.assert_allclose(x[w], y[0], rtol=0, atol=1e-12)  # float64 round-off of batched sums


def test_set_num_worlds_replicates_world_0_of_the_constraints():
    scene, lead, tail, pivot = follower_scene()
    pivot.set_target_position([0.0, 0.1, 0.0])
    scene.set_num_worlds(3)
    for w in range(3):
        np.testing.assert_array_equal(pivot.get_target_position(world=w), [0.0, 0.1, 0.0])
    pivot.set_target_position([[0.0, 0.2, 0.0], [0.0, 0.3, 0.0]], world=[1, 2])
    pivot.update_old_target(world=[1, 2])
    for _ in range(30):
        scene.step(0.01)
    heights = [lead.get_center_of_mass_transform(world=w).translation[1] for w in range(3)]
    assert heights[0] < heights[1] < heights[2]  # each world follows its own target
    assert pivot.get_deviation(world=2).shape == (3,)
    # A constraint created in a batched scene measures its creation-time frame in every world.
    drive = scene.create_joint_rotation_tracking_constraint(actor_a=lead, actor_b=tail)
    for w in range(3):
        np.testing.assert_allclose(drive.get_deviation(world=w), 0.0, atol=1e-12)


def test_restore_matches_constraints_by_handle_and_follows_the_world_count():
    scene, lead, tail, pivot = follower_scene()
    pivot.set_target_position([0.0, 0.1, 0.0])
    handle = scene.capture_state()
    pivot.set_target_position([0.0, 0.5, 0.0])
    late = scene.create_rigid_pivot_position_constraint(actor=tail, target_position=[0.0, -0.7, 0.0])
    scene.set_num_worlds(2)
    scene.restore_state(handle)  # back to one world; the late constraint keeps its target
    assert scene.num_worlds == 1
    np.testing.assert_array_equal(pivot.get_target_position(), [0.0, 0.1, 0.0])
    np.testing.assert_array_equal(late.get_target_position(), [0.0, -0.7, 0.0])
    with pytest.raises(IndexError):
        pivot.get_target_position(world=1)
    scene.destroy_constraint(pivot)
    scene.restore_state(handle)  # a constraint destroyed since the capture is simply not restored
    scene.step(0.01)
    assert late.get_target_position().tolist() == [0.0, -0.7, 0.0]


def test_body_on_a_moving_target_drags_a_resting_box_through_contact():
    """A gravity-free block driven by a pivot-position target pushes a resting box across the floor (contact)."""
    import superdex_gym.sim as mochi

    scene = mochi.create_scene()
    scene.create_rigid_actor(name="ground", shape=mochi.create_plane_shape(normal=[0, 1, 0], distance=0.0),
                             is_static=True)
    box = scene.create_rigid_actor(name="box", shape=mochi.create_box_mesh_shape([0.05, 0.05, 0.05]), density=500.0,
                                   world_from_local=mochi.TransformRT(translation=[0.0, 0.0497, 0.0]))
    pusher = scene.create_rigid_actor(name="pusher", shape=mochi.create_box_mesh_shape([0.02, 0.04, 0.04]),
                                      density=1000.0, has_gravity=False, collider_type=mochi.ColliderType.BOX,
                                      world_from_local=mochi.TransformRT(translation=[-0.09, 0.05, 0.0]))
    drive = scene.create_rigid_pivot_position_constraint(actor=pusher, local_position=[0, 0, 0],
                                                         target_position=[-0.09, 0.05, 0.0], stiffness=1e5)
    scene.create_rigid_pivot_rotation_constraint(actor=pusher, local_rotation=[0, 0, 0], target_rotation=[0, 0, 0],
                                                 stiffness=1e3)
    dt, speed = 0.01, 0.2
    for k in range(1, 101):
        drive.set_target_position([-0.09 + speed * dt * k, 0.05, 0.0])
        scene.step(dt)
    # the pusher followed its target (lag: friction force / k), the box was pushed ahead of it
    px = pusher.get_center_of_mass_transform().translation[0]
    assert px == pytest.approx(-0.09 + speed * 1.0, abs=0.01)
    bx = box.get_center_of_mass_transform().translation[0]
    assert bx > 0.1 and bx - px == pytest.approx(0.07, abs=0.01)  # pusher half 0.02 + box half 0.05 apart
    assert box.get_linear_velocity()[0] == pytest.approx(speed, abs=0.05)


def test_state_bytes_carry_constraint_targets():
    """capture_state_to_bytes / restore_state_from_bytes round-trip the constraint targets too (bit-exact)."""
    import superdex_gym.sim as mochi

    scene = mochi.create_scene()
    scene.set_gravity([0, 0, 0])
    body = scene.create_rigid_actor(shape=mochi.create_box_mesh_shape([0.05, 0.05, 0.05]), density=1000.0)
    drive = scene.create_rigid_pivot_position_constraint(actor=body, local_position=[0, 0, 0],
                                                         target_position=[0.1, 0, 0], stiffness=1e3)
    for _ in range(3):
        scene.step(0.01)
    blob = scene.capture_state_to_bytes()
    first = []
    for _ in range(5):
        scene.step(0.01)
        first.append(body.get_dof_values())
    drive.set_target_position([-1.0, 2.0, 0.0])  # changed after the capture: the bytes must bring it back
    scene.step(0.01)
    scene.restore_state_from_bytes(blob)
    np.testing.assert_array_equal(drive.get_target_position(), [0.1, 0, 0])
    second = []
    for _ in range(5):
        scene.step(0.01)
        second.append(body.get_dof_values())
    assert np.array_equal(np.array(first), np.array(second))


def _pivot(scene, actor):
    return scene.create_rigid_pivot_position_constraint(actor=actor, local_position=[0.0, 0.0, 0.0],
                                                        target_position=[0.0, 0.0, 0.0], stiffness=1e3)


def _pivot_scene(num_worlds):
    """Three boxes, each on a position pivot, in ``num_worlds`` worlds: (scene, actors, pivots)."""
    scene = mochi.create_scene("pivots")
    actors = [add_box(scene, f"b{k}", (float(k), 0.0, 0.0)) for k in range(3)]
    pivots = [_pivot(scene, a) for a in actors]
    scene.set_num_worlds(num_worlds)
    return scene, actors, pivots


def test_set_target_positions_equals_one_call_per_constraint_and_checks_everything_first():
    rng = np.random.default_rng(0)
    positions = rng.normal(size=(2, 3, 3))
    batched, _, pivots_b = _pivot_scene(4)
    single, _, pivots_s = _pivot_scene(4)
    batched.set_target_positions(pivots_b, positions, world=[1, 3])
    for k, pivot in enumerate(pivots_s):
        pivot.set_target_position(positions[:, k], world=[1, 3])
    for w in range(4):
        for pb, ps in zip(pivots_b, pivots_s):
            np.testing.assert_array_equal(pb.get_target_position(w), ps.get_target_position(w))
    batched.set_target_positions(pivots_b, positions[0])  # (C, 3): every world
    np.testing.assert_array_equal(pivots_b[2].get_target_position(0), positions[0, 2])

    before = [p.get_target_position(w).copy() for p in pivots_b for w in range(4)]
    bad_nan = positions.copy()
    bad_nan[1, 2, 0] = np.nan
    other, _, other_pivots = _pivot_scene(4)
    rotation = batched.create_rigid_pivot_rotation_constraint(actor=batched.get_actors()[0],
                                                              local_rotation=[0.0, 0.0, 0.0],
                                                              target_rotation=[0.0, 0.0, 0.0], stiffness=1.0)
    with pytest.raises(ValueError, match="finite"):
        batched.set_target_positions(pivots_b, bad_nan, world=[1, 3])
    with pytest.raises(ValueError, match="positions must have shape"):
        batched.set_target_positions(pivots_b, positions[:, :2], world=[1, 3])
    with pytest.raises(ValueError, match="this scene"):
        batched.set_target_positions(other_pivots, positions, world=[1, 3])
    with pytest.raises(TypeError, match="RigidPivotPosition"):
        batched.set_target_positions([pivots_b[0], rotation], positions[:, :2], world=[1, 3])
    with pytest.raises(IndexError):
        batched.set_target_positions(pivots_b, positions, world=[1, 7])
    for got, want in zip([p.get_target_position(w) for p in pivots_b for w in range(4)], before):
        np.testing.assert_array_equal(got, want)


def test_set_target_positions_follows_constraints_added_and_destroyed():
    scene, actors, pivots = _pivot_scene(1)
    scene.set_target_positions(pivots[1:], [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])  # looked up and kept
    scene.destroy_constraint(pivots[0])  # the others move up a row
    scene.set_target_positions(pivots[1:], [[7.0, 8.0, 9.0], [1.5, 2.5, 3.5]])
    np.testing.assert_array_equal(pivots[1].get_target_position(), [7.0, 8.0, 9.0])
    np.testing.assert_array_equal(pivots[2].get_target_position(), [1.5, 2.5, 3.5])
    with pytest.raises(RuntimeError, match="destroyed"):
        scene.set_target_positions(pivots, np.zeros((3, 3)))
    extra = _pivot(scene, actors[0])
    scene.set_target_positions([pivots[2], extra], [[0.5, 0.5, 0.5], [0.25, 0.25, 0.25]])
    np.testing.assert_array_equal(extra.get_target_position(), [0.25, 0.25, 0.25])
    np.testing.assert_array_equal(pivots[2].get_target_position(), [0.5, 0.5, 0.5])
    np.testing.assert_array_equal(pivots[1].get_target_position(), [7.0, 8.0, 9.0])
