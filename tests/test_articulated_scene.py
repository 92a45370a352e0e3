"""Articulated actors in a Scene (sim/articulated/actor.py, system.py, worlds.py): the reference's method names and
conventions, stepping through the scene == the numpy oracle bit for bit, W worlds together == alone, state capture,
bad input leaving the scene as it was.

Facts marked "1.0.1" were read from superdex-physics 1.0.1 (fp64) with tools/reference_runs/articulated_scene_api.py
on 2026-12-05; the tests never import the reference.
"""

import inspect
import json
from pathlib import Path

import numpy as np
import pytest

import superdex_gym.sim as mochi
from superdex_gym.sim import articulated as art
from superdex_gym.sim.articulated.oracle import ArticulatedOracle
from superdex_gym.sim.params import IntegrationMethod

JT = art.ArticulatedJointType
SCENE_SOLVER = mochi.NonLinearSolverParams()  # a new scene's settings: the oracle then stops as the scene does
SHAPE = mochi.create_box_mesh_shape([0.05, 0.2, 0.05])
SURFACE = json.loads((Path(__file__).parent / "reference_data" / "api_surface.json").read_text())

# 1.0.1: the Actor methods an articulated actor has (those of mochi_physics_double.Actor with "articulated", "dof",
# "joint", "pose" or "nested" in their names that this engine implements; the others are listed in docs/engine.md).
REFERENCE_METHODS = [
    "add_articulated_delta_to_pose", "add_articulated_pose_controller", "compute_articulated_pose_delta",
    "get_articulated_dof_limits", "get_articulated_joint_friction_params", "get_articulated_joint_inertia_params",
    "get_articulated_joint_velocities", "get_articulated_link_transforms", "get_articulated_pose",
    "get_articulated_pose_controller_params", "get_articulated_pose_distance", "get_articulated_shape_info",
    "get_articulated_target_pose", "get_nested_link_actors", "get_num_dofs", "has_articulated_pose_controller",
    "is_nested_link_actor", "remove_articulated_pose_controller", "reset_articulated_target_pose",
    "set_articulated_joint_friction_params", "set_articulated_joint_inertia_params",
    "set_articulated_joint_velocities", "set_articulated_pose_from_joints", "set_articulated_pose_from_links",
    "set_articulated_target_pose", "set_articulated_target_velocity", "set_external_forces_on_dofs",
    "set_articulated_pose_controller_params", "get_articulated_target_link_transforms", "get_dof_values",
    "set_articulated_target_link_transforms", "reset_articulated_target_link_transforms",
    "get_articulated_controller_force", "register_query", "cancel_query", "is_query_supported",
    "add_boundary_condition_dofs_world", "add_boundary_condition_dofs_world_permanent", "clear_boundary_conditions",
    "get_boundary_condition_dof_indices", "get_boundary_condition_dof_values_world",
]
LINK_METHODS = ["get_articulated_actor", "get_articulated_jacobian", "is_nested_link_actor"]
# 1.0.1, the five-joint chain below (FREE, SPHERICAL, PRISMATIC, REVOLUTE with limits [-0.5, 0.7], HARD) at pose Q and
# Q + 0.1: get_articulated_pose_distance (one value per joint; other out sizes raise "Invalid output size").
Q = [0.1, 0.2, 0.3, 0.3, -0.2, 0.5, 0.4, 0.1, -0.3, 0.05, 0.7]
DIST_TRANS = [0.17320508075688779, 0.0, 0.10000000000000002, 0.0, 0.0]
DIST_ROT = [0.17134511410128028, 0.17143151066554016, 0.0, 0.09999999999999998, 0.0]
# 1.0.1: a 5-link actor adds 6 actors (itself and its links); a link reports 6 DoFs, RIGID type, not static.
ACTORS_ADDED, LINK_DOFS = 6, 6


def five_joint_params(name="a"):
    types = [(JT.FREE, [0, 0, 1]), (JT.SPHERICAL, [0, 0, 1]), (JT.PRISMATIC, [1, 0, 0]), (JT.REVOLUTE, [0, 0, 1]),
             (JT.HARD, [0, 0, 1])]
    p = art.ArticulatedActorParams(name=name, world_from_root=mochi.TransformRT(translation=[0, 2, 0]))
    p.joints = [art.ArticulatedJointParams(type=t, axis=ax,
                                           parent_link_from_joint=mochi.TransformRT(translation=[0, -0.3 if i else 0, 0]))
                for i, (t, ax) in enumerate(types)]
    p.joints[3].min_limit, p.joints[3].max_limit, p.joints[3].inertia = [0, 0, -0.5], [0, 0, 0.7], 0.3
    p.links = [art.ArticulatedLinkParams(parent_link=i - 1, shape=SHAPE, density=1000.0,
                                         parent_joint_from_link=mochi.TransformRT(translation=[0, -0.2, 0]))
               for i in range(5)]
    return p


def chain_params(name="chain", n=3, **joint_kw):
    p = art.ArticulatedActorParams(name=name, world_from_root=mochi.TransformRT(translation=[0, 2, 0]))
    p.joints = [art.ArticulatedJointParams(type=JT.REVOLUTE, axis=[0, 0, 1], **joint_kw,
                                           parent_link_from_joint=mochi.TransformRT(translation=[0, -0.2 if i else 0, 0]))
                for i in range(n)]
    p.links = [art.ArticulatedLinkParams(parent_link=i - 1, shape=SHAPE, density=1000.0,
                                         parent_joint_from_link=mochi.TransformRT(translation=[0, -0.2, 0]))
               for i in range(n)]
    return p


def scene_with(params, method=IntegrationMethod.BACKWARD_EULER):
    scene = mochi.create_scene("artic")
    sp = scene.get_solver_params()
    sp.integration_method = method
    scene.set_solver_params(sp)
    return scene, scene.create_articulated_actor(params)


def test_reference_methods_exist_with_the_reference_arguments():
    """Argument names (then only optional extras such as ``world``) as recorded from 1.0.1's Actor in
    reference_data/api_surface.json."""
    scene, a = scene_with(five_joint_params())
    link = scene.get_actor(a.get_nested_link_actors()[0])
    for obj, names in ((a, REFERENCE_METHODS), (link, LINK_METHODS)):
        for name in names:
            params = list(inspect.signature(getattr(obj, name)).parameters.values())
            args = SURFACE["Actor"][name]["args"]
            assert [p.name for p in params[:len(args)]] == args, name
            assert all(p.default is not inspect.Parameter.empty for p in params[len(args):]), name


def test_actor_counts_names_and_link_facts_match_the_reference():
    scene = mochi.create_scene("s")
    a = scene.create_articulated_actor(five_joint_params())
    assert scene.get_num_actors() == ACTORS_ADDED
    assert a.get_type() == mochi.ActorType.ARTICULATED and a.get_num_dofs() == len(Q)
    links = [scene.get_actor(h) for h in a.get_nested_link_actors()]
    assert [x.get_name() for x in links] == [f"a/link_{i}" for i in range(5)]
    assert all(x.is_nested_link_actor() and x.get_articulated_actor() == a.get_handle() for x in links)
    assert links[2].get_num_dofs() == LINK_DOFS and links[2].get_type() == mochi.ActorType.RIGID
    assert not links[2].is_static() and scene.find_actor("a/link_3") is links[3]
    with pytest.raises(TypeError, match="no DoFs of its own"):
        links[2].set_velocity([1, 0, 0], [0, 0, 0])  # 1.0.1 refuses it too ("not supported for this actor type")


def test_pose_distance_dof_limits_and_inertia_match_the_reference():
    _, a = scene_with(five_joint_params())
    trans, rot = np.zeros(5), np.zeros(5)
    out = a.get_articulated_pose_distance(Q, np.array(Q) + 0.1, trans, rot)
    assert out[0] is trans and out[1] is rot
    np.testing.assert_allclose(trans, DIST_TRANS, rtol=0, atol=1e-15)
    np.testing.assert_allclose(rot, DIST_ROT, rtol=0, atol=1e-15)
    with pytest.raises(ValueError, match="out_trans_distances"):
        a.get_articulated_pose_distance(Q, Q, np.zeros(4), np.zeros(5))
    limits = a.get_articulated_dof_limits()
    assert limits.shape == (11, 2) and np.isinf(limits[:10]).all() and limits[10].tolist() == [-0.5, 0.7]
    assert a.get_articulated_joint_inertia_params().tolist() == [0.0, 0.0, 0.0, 0.3, 0.0]


def test_out_arrays_are_filled_and_returned():
    _, a = scene_with(five_joint_params())
    a.set_articulated_pose_from_joints(Q)
    out = np.zeros(11)
    assert a.get_articulated_pose(out) is out and out.tolist() == Q
    vel = np.zeros(11)
    assert a.get_articulated_joint_velocities(vel) is vel
    with pytest.raises(ValueError, match="out_pose"):
        a.get_articulated_pose(np.zeros(10))
    added = np.zeros(11)
    delta = np.zeros(11)
    delta[3] = 1e-2
    assert a.add_articulated_delta_to_pose(Q, delta, added) is added
    back = a.compute_articulated_pose_delta(Q, added)
    np.testing.assert_allclose(back, delta, rtol=0, atol=1e-15)
    transforms = [None] * 5
    assert a.get_articulated_link_transforms(transforms) is transforms and isinstance(transforms[0], mochi.TransformRT)


def test_pose_from_links_inverts_link_transforms():
    _, a = scene_with(five_joint_params())
    a.set_articulated_pose_from_joints(Q)
    links = a.get_articulated_link_transforms()
    a.set_articulated_pose_from_joints(np.zeros(11))
    a.set_articulated_pose_from_links(links)
    # FK then its inverse: round-off of a few rotation products and logs
    np.testing.assert_allclose(a.get_articulated_pose(), Q, rtol=0, atol=1e-14)


def test_link_actor_reads_follow_the_articulation():
    scene, a = scene_with(five_joint_params())
    a.set_articulated_pose_from_joints(Q)
    a.set_articulated_joint_velocities(np.arange(11) * 0.1)
    link = scene.get_actor(a.get_nested_link_actors()[2])
    jac = link.get_articulated_jacobian().reshape(6, 11)
    np.testing.assert_allclose(link.get_linear_velocity(), jac[:3] @ (np.arange(11) * 0.1), rtol=0, atol=1e-14)
    np.testing.assert_allclose(link.get_angular_velocity(), jac[3:] @ (np.arange(11) * 0.1), rtol=0, atol=1e-14)
    com = link.get_center_of_mass_transform().translation_array
    root = link.get_root_transform()
    np.testing.assert_allclose(com, root.transform_point(art.build_model(five_joint_params()).com_local[2]),
                               rtol=0, atol=1e-15)


@pytest.mark.parametrize("method", [IntegrationMethod.BACKWARD_EULER, IntegrationMethod.BDF2,
                                    IntegrationMethod.DIRK22])
def test_scene_steps_bit_identical_to_the_oracle(method):
    scene, a = scene_with(chain_params(), method)
    oracle = ArticulatedOracle(art.build_model(chain_params()))
    for x in (a, oracle):
        (x.set_articulated_pose_from_joints if x is a else x.set_pose)([0.5, 0.1, -0.2])
    for _ in range(6):
        scene.step(0.01)
        oracle.step(0.01, method, solver=SCENE_SOLVER)
        assert np.array_equal(a.get_articulated_pose(), oracle.q[0])
        assert np.array_equal(a.get_articulated_joint_velocities(), oracle.joint_velocity[0])


def _set_world(a, w):
    a.set_articulated_pose_from_joints([0.3 * w, -0.1 * w, 0.2], world=w)
    a.set_articulated_joint_velocities([0.5, -w, 0.1 * w], world=w)


@pytest.mark.parametrize("method", [IntegrationMethod.BACKWARD_EULER, IntegrationMethod.BDF2])
def test_worlds_together_equal_each_alone(method):
    """W = 4 worlds set apart, one of them reset between steps (so the worlds' histories differ), against a scene of
    one world doing the same."""
    scene, a = scene_with(chain_params(), method)
    scene.set_num_worlds(4)
    for w in range(4):
        _set_world(a, w)
    together = []
    for k in range(5):
        if k == 2:
            _set_world(a, 1)
        scene.step(0.01)
        together.append(np.array([a.get_articulated_pose(world=w) for w in range(4)]))
    for w in range(4):
        alone, b = scene_with(chain_params(), method)
        b.set_articulated_pose_from_joints([0.3 * w, -0.1 * w, 0.2])
        b.set_articulated_joint_velocities([0.5, -w, 0.1 * w])
        for k in range(5):
            if k == 2 and w == 1:
                b.set_articulated_pose_from_joints([0.3, -0.1, 0.2])
                b.set_articulated_joint_velocities([0.5, -1, 0.1])
            alone.step(0.01)
            assert np.array_equal(b.get_articulated_pose(), together[k][w]), (w, k)


def test_capture_and_restore_bring_back_pose_velocities_and_history():
    scene, a = scene_with(chain_params(), IntegrationMethod.BDF2)
    scene.set_num_worlds(2)
    a.set_articulated_pose_from_joints([0.5, 0.1, -0.2])
    scene.step(0.01)
    handle = scene.capture_state()
    data = scene.capture_state_to_bytes()
    runs = []
    for _ in range(2):
        for _ in range(3):
            scene.step(0.01)
        runs.append(np.array([a.get_articulated_pose(world=w) for w in range(2)]))
        scene.restore_state(handle)
    assert np.array_equal(runs[0], runs[1])
    scene.restore_state_from_bytes(data)
    for _ in range(3):
        scene.step(0.01)
    assert np.array_equal(runs[0], [a.get_articulated_pose(world=w) for w in range(2)])
    # one world restored from the capture while the other keeps its own state
    scene.restore_state(handle)
    for _ in range(3):
        scene.step(0.01)
    other = a.get_articulated_pose(world=0).copy()
    scene.restore_state(handle, worlds=[1])
    assert np.array_equal(a.get_articulated_pose(world=0), other)
    for _ in range(3):
        scene.step(0.01)
    assert np.array_equal(a.get_articulated_pose(world=1), runs[0][1])


def test_bad_params_leave_the_scene_unchanged():
    scene, a = scene_with(chain_params())
    before = (scene.get_num_actors(), [x.get_name() for x in scene.get_actors()])
    bad = chain_params("bad")
    bad.links[2].parent_link = 5
    with pytest.raises(ValueError, match="link 2"):
        scene.create_articulated_actor(bad)
    bad = chain_params("bad")
    bad.joints[1].axis = [0, 0, float("nan")]
    with pytest.raises(ValueError, match="joint 1"):
        scene.create_articulated_actor(bad)
    assert (scene.get_num_actors(), [x.get_name() for x in scene.get_actors()]) == before
    # the next actor gets the handle the rejected ones did not take
    b = scene.create_articulated_actor(chain_params("b"))
    assert b.get_handle() == a.get_nested_link_actors()[-1] + 1


@pytest.mark.parametrize("call, match", [
    (lambda a: a.set_articulated_pose_from_joints([0.0, np.nan, 0.0]), "pose must be finite"),
    (lambda a: a.set_articulated_joint_velocities([0.0, 1.0]), "3 values"),
    (lambda a: a.set_external_forces_on_dofs([0, 7], [1.0, 2.0]), "dof_indices"),
    (lambda a: a.set_articulated_joint_inertia_params([0.0, -1.0, 0.0]), "inertia"),
    (lambda a: a.set_articulated_target_pose([0.0, 0.0, 0.0]), "no pose controller"),
    (lambda a: a.get_articulated_pose(world=3), "world 3"),
])
def test_bad_calls_raise_and_change_nothing(call, match):
    scene, a = scene_with(chain_params())
    a.set_articulated_pose_from_joints([0.5, 0.1, -0.2])
    before = scene.capture_state_to_bytes()
    with pytest.raises((ValueError, IndexError), match=match):
        call(a)
    after = scene.capture_state_to_bytes()
    scene.restore_state_from_bytes(before)
    assert a.get_articulated_pose().tolist() == [0.5, 0.1, -0.2] and len(after) == len(before)
    assert a.get_articulated_joint_inertia_params().tolist() == [0.0, 0.0, 0.0]


def test_pose_controller_through_the_scene_matches_the_oracle():
    gains = art.PoseControllerParams(3)
    for g in gains.joint_tracking:
        g.stiffness, g.damping = 200.0, 5.0
    scene, a = scene_with(chain_params())
    oracle = ArticulatedOracle(art.build_model(chain_params()))
    a.add_articulated_pose_controller(gains)
    oracle.add_pose_controller(gains)
    assert a.has_articulated_pose_controller()
    for k in range(6):
        target = [0.1 * k, -0.05 * k, 0.2]
        a.set_articulated_target_pose(target)
        oracle.set_target_pose(target)
        scene.step(0.01)
        oracle.step(0.01, solver=SCENE_SOLVER)
        assert np.array_equal(a.get_articulated_pose(), oracle.q[0]), k
    a.remove_articulated_pose_controller()
    assert not a.has_articulated_pose_controller()


def test_external_dof_forces_and_friction_setters_act_like_the_oracle():
    scene, a = scene_with(chain_params())
    model = art.build_model(chain_params(friction=art.ArticulatedJointFrictionParams(viscous=0.2)))
    oracle = ArticulatedOracle(model)
    a.set_articulated_joint_friction_params([art.ArticulatedJointFrictionParams(viscous=0.2)] * 3)
    a.set_external_forces_on_dofs([1], [0.7])
    oracle.set_external_forces_on_dofs([1], [0.7])
    for _ in range(4):
        scene.step(0.01)
        oracle.step(0.01, solver=SCENE_SOLVER)
    assert np.array_equal(a.get_articulated_pose(), oracle.q[0])
    assert a.get_articulated_joint_friction_params()[0].viscous == 0.2


def test_destroying_the_articulated_actor_removes_its_links():
    scene, a = scene_with(chain_params())
    link = a.get_nested_link_actors()[0]
    with pytest.raises(ValueError, match="destroy the articulated actor"):
        scene.destroy_actor(link)
    scene.destroy_actor(a)
    assert scene.get_num_actors() == 0 and not a.is_valid()
    with pytest.raises(KeyError):
        scene.get_actor(link)


def test_single_dof_constraints_through_the_scene_match_the_oracle_and_refuse_bad_input():
    scene, a = scene_with(chain_params())
    rigid = scene.create_rigid_actor(shape=SHAPE, density=1000.0, world_from_local=mochi.TransformRT(translation=[5, 0, 0]))
    with pytest.raises(ValueError, match="articulated actor"):
        scene.create_articulated_single_dof_target_constraint(actor=rigid.get_handle(), joint_index=0)
    with pytest.raises(ValueError, match="saturation must not be zero"):
        scene.create_articulated_single_dof_target_constraint(actor=a, joint_index=0, saturation=0.0)
    with pytest.raises(ValueError, match="dof_index"):
        scene.create_articulated_single_dof_range_constraint(actor=a, joint_index=1, dof_index=1)
    with pytest.raises(ValueError, match="min_value"):
        scene.create_articulated_single_dof_range_constraint(actor=a, joint_index=1, min_value=1.0, max_value=0.0)
    assert a._oracle.drives == [] and a._oracle.ranges == []
    scene.create_articulated_single_dof_target_constraint(art.ArticulatedSingleDofTargetConstraintParams(
        actor=a.get_handle(), joint_index=1, target_value=0.4, stiffness=300.0, damping=2.0))
    scene.create_articulated_single_dof_range_constraint(actor=a, joint_index=2, min_value=-0.1, max_value=0.1,
                                                         stiffness=500.0)
    oracle = ArticulatedOracle(art.build_model(chain_params()))
    oracle.add_single_dof_target(1, 0, 0.4, 300.0, 2.0)
    oracle.add_single_dof_range(2, 0, -0.1, 0.1, 500.0)
    for _ in range(5):
        scene.step(0.01)
        oracle.step(0.01, solver=SCENE_SOLVER)
    assert np.array_equal(a.get_articulated_pose(), oracle.q[0])


def test_target_velocity_and_reset_through_the_scene_match_the_oracle():
    """The controller's target velocity override and reset act per step as the oracle's (which the fidelity tests
    hold to the released engine), and a world's override leaves the other worlds alone."""
    gains = art.PoseControllerParams(3)
    for g in gains.joint_tracking:
        g.stiffness, g.damping = 100.0, 8.0
    scene, a = scene_with(chain_params())
    scene.set_num_worlds(2)
    oracle = ArticulatedOracle(art.build_model(chain_params()))
    plain = ArticulatedOracle(art.build_model(chain_params()))
    for o in (oracle, plain):
        o.add_pose_controller(gains)
    a.add_articulated_pose_controller(gains)
    for k in range(6):
        target = [0.1 * k, 0.05, -0.1]
        a.set_articulated_target_pose(target)
        oracle.set_target_pose(target)
        plain.set_target_pose(target)
        if k == 2:
            a.set_articulated_target_velocity([0.5, 0.0, 0.0], world=0)
            oracle.set_target_velocity([0.5, 0.0, 0.0])
        if k == 4:
            a.reset_articulated_target_pose(target, world=0)
            oracle.reset_target_pose(target)
        scene.step(0.01)
        oracle.step(0.01, solver=SCENE_SOLVER)
        plain.step(0.01, solver=SCENE_SOLVER)
        assert np.array_equal(a.get_articulated_pose(world=0), oracle.q[0]), k
        assert np.array_equal(a.get_articulated_pose(world=1), plain.q[0]), k
    assert a.get_articulated_pose_controller_params().joint_tracking[0].stiffness == 100.0


def test_controller_gains_can_change_keeping_the_targets_and_target_links_follow_the_target():
    gains = art.PoseControllerParams(3)
    scene, a = scene_with(chain_params())
    a.add_articulated_pose_controller(gains)
    a.set_articulated_target_pose([0.2, -0.1, 0.3])
    stiff = art.PoseControllerParams(3)
    for g in stiff.joint_tracking:
        g.stiffness = 500.0
    bad = art.PoseControllerParams(2)
    with pytest.raises(ValueError, match="joint_tracking"):
        a.set_articulated_pose_controller_params(bad)
    assert a.get_articulated_pose_controller_params().joint_tracking[0].stiffness == 0.0
    a.set_articulated_pose_controller_params(stiff)
    assert a.get_articulated_pose_controller_params().joint_tracking[2].stiffness == 500.0
    assert a.get_articulated_target_pose().tolist() == [0.2, -0.1, 0.3]
    targets = a.get_articulated_target_link_transforms()
    a.set_articulated_pose_from_joints([0.2, -0.1, 0.3])
    for t, l in zip(targets, a.get_articulated_link_transforms()):
        assert np.array_equal(t.translation_array, l.translation_array)
    out = np.zeros(2)
    assert a.get_dof_values([2, 0], out) is out and out.tolist() == [0.3, 0.2]
