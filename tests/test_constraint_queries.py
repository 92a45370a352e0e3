"""Constraint queries (the reference's ``Constraint.register_query`` / ``cancel_query`` / ``is_query_supported``
with QueryType.CONSTRAINT_FORCE) on rigid and articulated constraints, and ``get_force`` on articulated ones.

The articulated forces follow the released fp64 engine's (reference_data/articulated_constraint_force.json, made by
tools/reference_runs/articulated_constraint_force.py; its header says how): a 3D rotation target, a saturated
single-DoF target moved at step 20 and a single-DoF range on the SPHERICAL / REVOLUTE / REVOLUTE chain, 40 steps.
A force is minus the gradient of the constraint's energy at the step's end, k g + d/dt (g - g0) for an unsaturated
DoF constraint; a pose gap e moves it by at most (k + d/dt) * 2e (g and g - g0 each move by <= e), so the bound below
is that with the trajectory tests' pose bound (test_articulated_constraints.ACHIEVED). Measured (2026-12-05): pose gap
1.1e-12; force gaps 1.0e-10 N m (rotation target, forces up to 44 N m), 5.2e-10 N (drive, up to 283 N), 9.5e-10 N
(range, up to 26 N).
"""

import json
from pathlib import Path

import numpy as np
import pytest

import superdex_gym.sim as mochi
from superdex_gym.sim.params import QueryType

from test_articulated_constraints import ACHIEVED, Q, RUNS, _chain
from test_constraints_scene import hanging_box_scene
from reference import set_solver

FORCE = json.loads((Path(__file__).parent / "reference_data" / "articulated_constraint_force.json").read_text())
DT = FORCE["dt"]


def _three_constraints(scene, a):
    h = a.get_handle()
    return [scene.create_articulated3d_rotation_target_constraint(actor=h, joint_index=0, target=Q(RUNS["target_a"]),
                                                                  stiffness=300.0, damping=2.0),
            scene.create_articulated_single_dof_target_constraint(actor=h, joint_index=1, target_value=0.5,
                                                                  stiffness=2000.0, damping=5.0, saturation=0.05),
            scene.create_articulated_single_dof_range_constraint(actor=h, joint_index=2, min_value=-0.1,
                                                                 max_value=0.1, stiffness=3000.0, damping=1.0)]


def _run(scene, a, constraints, worlds=None):
    a.set_articulated_pose_from_joints(FORCE["q0"])
    poses, forces = [], []
    for k in range(FORCE["steps"]):
        if k == FORCE["move_at"]:
            constraints[1].set_target_dof(0.0)
        scene.step(DT)
        poses.append(a.get_articulated_pose())
        forces.append([c.get_force() for c in constraints])
    return np.array(poses), forces


def test_articulated_constraint_forces_follow_the_reference():
    scene, a = _chain("constraint_force")
    constraints = _three_constraints(scene, a)
    assert [c.is_query_supported(QueryType.CONSTRAINT_FORCE) for c in constraints] == FORCE["query_supported"]
    assert [c.get_dof_indices_for_actor(0).tolist() for c in constraints] == FORCE["dof_indices"]
    for c in constraints:
        c.register_query(QueryType.CONSTRAINT_FORCE)
    poses, forces = _run(scene, a, constraints)
    assert np.abs(poses - np.array(FORCE["pose"])).max() <= ACHIEVED
    scale = [300.0 + 2.0 / DT, 2000.0 + 5.0 / DT, 3000.0 + 1.0 / DT]  # k + d/dt of each constraint
    for ours, ref in zip(forces, FORCE["force"]):
        for i, (f, r) in enumerate(zip(ours, ref)):
            assert f.shape == (len(r),)
            gap = np.abs(f - np.array(r)).max()
            assert gap <= scale[i] * 2 * ACHIEVED, (i, gap)
    assert max(abs(f[2][0]) for f in forces) > 1.0 and min(abs(f[2][0]) for f in forces) == 0.0  # range: on, off


def test_constraint_query_registration_is_counted_and_checked():
    scene, a = _chain("queries")
    rot, drive, rng = _three_constraints(scene, a)
    with pytest.raises(RuntimeError, match="CONSTRAINT_FORCE"):
        drive.get_force()
    with pytest.raises(mochi.Error, match="CONSTRAINT_FORCE only"):
        drive.register_query(QueryType.TOTAL_CONTACT_FORCE)
    assert not drive.is_query_supported(QueryType.TOTAL_CONTACT_FORCE) and not scene.has_registered_queries()
    with pytest.raises(TypeError, match="type must be a QueryType"):
        drive.register_query("force")
    first = drive.register_query(QueryType.CONSTRAINT_FORCE)
    second = rng.register_query(QueryType.CONSTRAINT_FORCE.value)  # the reference takes the integer value too
    np.testing.assert_array_equal(rot.get_force(), np.zeros(3))  # registered, no step since: zeros (rigid's rule)
    a.set_articulated_pose_from_joints(FORCE["q0"])
    scene.step(DT)
    np.testing.assert_allclose(drive.get_force(), FORCE["force"][0][1], rtol=0, atol=1e-6)
    drive.cancel_query(first)
    drive.cancel_query(first)  # twice: no effect
    drive.cancel_query(second)  # another constraint's handle: no effect
    assert rot.get_force().shape == (3,)  # rng's registration still makes the steps compute every force
    rng.cancel_query(second)
    with pytest.raises(RuntimeError, match="CONSTRAINT_FORCE"):
        drive.get_force()
    third = rot.register_query(QueryType.CONSTRAINT_FORCE)
    scene.destroy_constraint(rot)  # its registration goes with it
    assert not scene.is_query_registered(QueryType.CONSTRAINT_FORCE)
    with pytest.raises(RuntimeError, match="destroyed"):
        rot.register_query(QueryType.CONSTRAINT_FORCE)
    assert third.value > 0


def test_articulated_constraint_forces_of_worlds_together_equal_each_alone():
    scene, a = _chain("together", num_worlds=3)
    constraints = _three_constraints(scene, a)
    scene.register_query(QueryType.CONSTRAINT_FORCE)  # the scene's registration computes them too
    targets = [0.5, -0.2, 0.3]
    a.set_articulated_pose_from_joints(FORCE["q0"])
    for w, t in enumerate(targets):
        constraints[1].set_target_dof(t, world=w)
    for _ in range(5):
        scene.step(DT)
    for w, t in enumerate(targets):
        s1, a1 = _chain("alone")
        c1 = _three_constraints(s1, a1)
        c1[0].register_query(QueryType.CONSTRAINT_FORCE)
        a1.set_articulated_pose_from_joints(FORCE["q0"])
        c1[1].set_target_dof(t)
        for _ in range(5):
            s1.step(DT)
        for c, alone in zip(constraints, c1):
            assert np.array_equal(c.get_force(world=w), alone.get_force())


def test_capture_restore_brings_the_forces_back():
    scene, a = _chain("capture")
    constraints = _three_constraints(scene, a)
    constraints[2].register_query(QueryType.CONSTRAINT_FORCE)
    a.set_articulated_pose_from_joints(FORCE["q0"])
    scene.step(DT)
    state = scene.capture_state()
    before = [c.get_force() for c in constraints]
    scene.step(DT)
    assert not np.array_equal(constraints[1].get_force(), before[1])
    scene.restore_state(state)
    for c, f in zip(constraints, before):
        assert np.array_equal(c.get_force(), f)


def test_rigid_constraint_registration_equals_the_scene_registration():
    forces = []
    for on_constraint in (True, False):
        scene, anchor, bob, joint = hanging_box_scene()
        set_solver(scene, abs_tol=1e-10)
        assert joint.is_query_supported(QueryType.CONSTRAINT_FORCE)
        assert not joint.is_query_supported(QueryType.CONTACT_POINTS)
        with pytest.raises(mochi.Error, match="CONSTRAINT_FORCE only"):
            joint.register_query(QueryType.CONTACT_POINTS)
        handle = joint.register_query(QueryType.CONSTRAINT_FORCE) if on_constraint else None
        if not on_constraint:
            scene.register_query(QueryType.CONSTRAINT_FORCE)
        for _ in range(5):
            scene.step(0.01)
        forces.append(joint.get_force())
        if on_constraint:
            joint.cancel_query(handle)
            with pytest.raises(RuntimeError, match="CONSTRAINT_FORCE"):
                joint.get_force()
            handle = joint.register_query(QueryType.CONSTRAINT_FORCE)
            scene.destroy_constraint(joint)
            assert not scene.has_registered_queries()
    assert np.array_equal(forces[0], forces[1]) and np.abs(forces[0]).max() > 1.0
