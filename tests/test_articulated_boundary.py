"""Boundary conditions on articulated DoFs (sim/articulated/boundary.py) against the released fp64 engine
(reference_data/articulated_boundary_runs.json, made by tools/reference_runs/articulated_boundary_runs.py; its header
says how): the SPHERICAL / REVOLUTE / REVOLUTE chain with a permanent and a clearable entry, then the SPHERICAL
rotation and an override of the permanent entry, then a clear, 30 steps, BACKWARD_EULER and BDF2.

The held DoFs leave the solve, so they equal the values exactly; the other DoFs follow the reference to the
trajectory tests' bound (test_articulated_constraints.ACHIEVED, measured below it); the velocities are finite
differences of poses over dt, so their bound is 2 ACHIEVED / dt. Measured (2026-12-05): poses 1.2e-11 (BACKWARD_EULER)
and 3.5e-11 (BDF2), joint velocities 9.9e-10 and 4.4e-9.
"""

import json
from pathlib import Path

import numpy as np
import pytest

import superdex_gym.sim as mochi

from test_articulated_constraints import ACHIEVED, _chain
from test_constraints_scene import add_box

RUNS = json.loads((Path(__file__).parent / "reference_data" / "articulated_boundary_runs.json").read_text())


def _apply(actor, k):
    for what, dofs, values in RUNS["changes"].get(str(k), []):
        if what == "permanent":
            actor.add_boundary_condition_dofs_world_permanent(dofs, values)
        elif what == "clearable":
            actor.add_boundary_condition_dofs_world(dofs, values)
        else:
            actor.clear_boundary_conditions()


@pytest.mark.parametrize("key, method", [("backward_euler", mochi.IntegrationMethod.BACKWARD_EULER),
                                         ("bdf2", mochi.IntegrationMethod.BDF2)])
def test_boundary_conditions_follow_the_reference(key, method):
    run = RUNS[key]
    scene, a = _chain("boundary")
    params = scene.get_solver_params()
    params.integration_method = method
    scene.set_solver_params(params)
    a.set_articulated_pose_from_joints(run["q0"])
    poses, vels = [], []
    for k in range(run["steps"]):
        _apply(a, k)
        if str(k) in run["entries"]:
            entries = run["entries"][str(k)]
            assert a.get_boundary_condition_dof_indices().tolist() == entries["indices"]
            assert a.get_boundary_condition_dof_values_world().tolist() == entries["values"]
        scene.step(run["dt"])
        poses.append(a.get_articulated_pose())
        vels.append(a.get_articulated_joint_velocities())
    poses, vels = np.array(poses), np.array(vels)
    assert np.abs(poses - np.array(run["pose"])).max() <= ACHIEVED
    assert np.abs(vels - np.array(run["joint_velocities"])).max() <= 2 * ACHIEVED / run["dt"]
    assert poses[0, 3] == 0.7 and poses[0, 4] == -0.1 and poses[15, 4] == 0.2 and poses[25, 4] == -0.1
    np.testing.assert_allclose(poses[12, :3], [0.1, 0.2, 0.3], rtol=0, atol=1e-15)  # the rotation block, held
    assert abs(poses[-1, 3] - 0.7) > 1e-3  # cleared: DoF 3 moves again


def _state(scene, a):
    return (a.get_articulated_pose().tobytes(), a.get_boundary_condition_dof_indices().tobytes(),
            a.get_boundary_condition_dof_values_world().tobytes())


@pytest.mark.parametrize("dofs, values, match", [
    ([0, 1], [0.1, 0.2], "all or none"),
    ([4, 3], [0.1, 0.2], "strictly increasing"),
    ([3, 3], [0.1, 0.2], "strictly increasing"),
    ([9], [0.1], "dof_indices must be in"),
    ([-1], [0.1], "dof_indices must be in"),
    ([4], [float("nan")], "dof_values_world must be finite"),
    ([3, 4], [0.1], "one value per DoF index"),
    ([3.0], [0.1], "integers"),
])
def test_bad_boundary_conditions_name_the_argument_and_add_nothing(dofs, values, match):
    scene, a = _chain("bad")
    a.add_boundary_condition_dofs_world([3], [0.5])
    before = _state(scene, a)
    for add in (a.add_boundary_condition_dofs_world, a.add_boundary_condition_dofs_world_permanent):
        with pytest.raises(ValueError, match=match):
            add(dofs, values)
        assert _state(scene, a) == before


def test_worlds_together_equal_each_alone_and_rigid_bodies_still_move():
    scene, a = _chain("together", num_worlds=2)
    box = add_box(scene, "box", (1.0, 0.0, 0.0))  # far from the chain: no contact
    a.add_boundary_condition_dofs_world([0, 1, 2, 3], [0.1, 0.0, 0.0, 0.3])
    a.set_articulated_pose_from_joints([0.0, 0.1, 0.0, 0.2, 0.1], world=1)
    for _ in range(5):
        scene.step(0.01)
    for w in range(2):
        s1, a1 = _chain("alone")
        b1 = add_box(s1, "box", (1.0, 0.0, 0.0))
        a1.add_boundary_condition_dofs_world([0, 1, 2, 3], [0.1, 0.0, 0.0, 0.3])
        if w == 1:
            a1.set_articulated_pose_from_joints([0.0, 0.1, 0.0, 0.2, 0.1])
        for _ in range(5):
            s1.step(0.01)
        assert np.array_equal(a.get_articulated_pose(world=w), a1.get_articulated_pose())
        assert np.array_equal(box.get_dof_values(world=w), b1.get_dof_values())
    assert box.get_dof_values()[1] < -1e-3  # the free box fell beside the held chain
