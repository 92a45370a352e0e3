"""Scenes holding articulated actors and rigid actors, stepped in generalized coordinates (sim/articulated/coupled.py):
derivative checks of the coupled stage problem, links in contact with static and dynamic rigid actors, W worlds
together == alone, every integrator, state capture, and rigid-only scenes untouched."""

import dataclasses

import numpy as np
import pytest

import superdex_gym.sim as mochi
from superdex_gym.sim import articulated as art
from superdex_gym.sim import lie
from superdex_gym.sim.articulated import coupled
from superdex_gym.sim.articulated.kinematics import link_jacobians
from superdex_gym.sim.contact.params import ContactParams
from superdex_gym.sim.params import IntegrationMethod
from superdex_gym.sim.solver.numpy_newton import evaluate_potentials
from superdex_gym.sim.step import pipeline

JT = art.ArticulatedJointType
LINK = mochi.create_box_mesh_shape([0.05, 0.2, 0.05])
CUBE = mochi.create_box_mesh_shape([0.05, 0.05, 0.05])
BOX = mochi.create_box_mesh_shape([0.6, 0.2, 0.2])
FRICTIONLESS = ContactParams(coulomb_friction_coefficient=0.0)


def chain_params(n=3, contact=None):
    p = art.ArticulatedActorParams(name="chain", world_from_root=mochi.TransformRT(translation=[0, 2, 0]))
    p.joints = [art.ArticulatedJointParams(type=JT.REVOLUTE, axis=[0, 0, 1],
                                           parent_link_from_joint=mochi.TransformRT(translation=[0, -0.2 if i else 0, 0]))
                for i in range(n)]
    kw = {} if contact is None else {"contact": contact}
    p.links = [art.ArticulatedLinkParams(parent_link=i - 1, shape=LINK, density=1000.0, **kw,
                                         parent_joint_from_link=mochi.TransformRT(translation=[0, -0.2, 0]))
               for i in range(n)]
    return p


def box_scene(method=IntegrationMethod.BACKWARD_EULER, cube=True, contact=None):
    """A 3-link chain hanging from (0, 2, 0), raised to 1.2 rad so that it falls onto a static box on its +x side;
    a free cube on the -x side in the path of the swing back."""
    scene = mochi.create_scene("coupled")
    sp = scene.get_solver_params()
    sp.integration_method = method
    scene.set_solver_params(sp)
    a = scene.create_articulated_actor(chain_params(contact=contact))
    kw = {} if contact is None else {"contact": contact}
    box = scene.create_rigid_actor(shape=BOX, is_static=True, world_from_local=mochi.TransformRT(translation=[0.9, 1.2, 0]),
                                   **kw)
    c = scene.create_rigid_actor(shape=CUBE, density=500.0, has_gravity=False, **kw,
                                 world_from_local=mochi.TransformRT(translation=[-0.5, 1.55, 0])) if cube else None
    a.set_articulated_pose_from_joints([1.2, 0.0, 0.0])
    return scene, a, box, c


def _stage_args(scene, steps):
    """The arguments of the coupled Newton of the last step (captured by wrapping it), and its result."""
    captured = {}
    real = coupled.newton

    def spy(*args):
        out = real(*args)
        captured["args"], captured["out"] = args, out
        return out

    coupled.newton = spy
    try:
        for _ in range(steps):
            scene.step(0.01)
    finally:
        coupled.newton = real
    return captured["args"], captured["out"]


def _pressing_scene():
    """The chain's tip link inside the contact ramp of a free cube, frictionless (a conservative contact, so the
    row energy is an exact potential of its gradient)."""
    scene = mochi.create_scene("fd")
    a = scene.create_articulated_actor(chain_params(2, FRICTIONLESS))
    scene.create_rigid_actor(shape=CUBE, density=500.0, contact=FRICTIONLESS,
                             world_from_local=mochi.TransformRT(translation=[0.1498, 1.35, 0.0]))
    a.set_articulated_pose_from_joints([0.05, 0.1])
    return scene, a


def test_coupled_gradient_matches_finite_differences():
    """Central differences of the stage energy along every generalized DoF (6 of the cube, 2 joint angles) at the
    step's Newton start; h = 1e-6: truncation h^2 E''' ~ 1e-9 and round-off eps E / h ~ 1e-8 of gradients ~1e2."""
    scene, _ = _pressing_scene()
    (ctx_core, ctx_full, c, r, qs, arts, extra, size, _stop), _ = _stage_args(scene, 1)
    dyn = np.flatnonzero(~ctx_core.model.bodies.is_static)
    energy, grad, _, _ = coupled._evaluate(ctx_core, ctx_full, c, r, qs, arts, extra, size)
    assert np.abs(grad).max() > 1.0  # in contact and off equilibrium: the check is not of zeros

    def e_at(x):
        cc, rr, qq = coupled._move(c, r, qs, arts, x[None], dyn)
        return coupled._evaluate(ctx_core, ctx_full, cc, rr, qq, arts, extra, size)[0][0]

    h = 1e-6
    fd = np.array([(e_at(h * e) - e_at(-h * e)) / (2 * h) for e in np.eye(size)])
    np.testing.assert_allclose(grad[0], fd, rtol=0, atol=1e-6 * np.abs(grad).max())


def test_coupled_hessian_is_the_chain_rule_without_the_kinematic_curvature():
    """The row terms' Newton matrix: cube x cube and cube x joint blocks are exact derivatives of the gradient
    (the cube's gradient depends on the links only through their poses: B J); the joint x joint block is
    J^T H J + couplings, i.e. the derivative of J^T g minus sum_l g_l . d^2 x_l / dq^2, the dropped term,
    measured here by differencing J with g held fixed."""
    scene, _ = _pressing_scene()
    (ctx_core, ctx_full, c, r, qs, arts, extra, size, _stop), _ = _stage_args(scene, 1)
    # the contact's exact Hessian (by default it drops second-order rotation terms: tests/test_contact_potential.py)
    contact = scene.potentials()[0].potential()
    contact.config = dataclasses.replace(contact.config, exact_geometric_hessian=True)
    contact.uses_kernel = False  # the exact Hessian is the numpy path's (ContactPotential._init_kernel_arrays)
    ctx_core, ctx_full = (dataclasses.replace(x, psd_project=False) for x in (ctx_core, ctx_full))
    dyn = np.flatnonzero(~ctx_core.model.bodies.is_static)
    _, grad, hess, _, _ = coupled.row_terms(ctx_core, ctx_full, c, r, qs, arts, extra, size)

    def g_at(x):
        cc, rr, qq = coupled._move(c, r, qs, arts, x[None], dyn)
        return coupled.row_terms(ctx_core, ctx_full, cc, rr, qq, arts, extra, size)

    h = 1e-6
    fd = np.array([(g_at(h * e)[1][0] - g_at(-h * e)[1][0]) / (2 * h) for e in np.eye(size)]).T
    scale = np.abs(hess).max()
    # exact up to the FD error h^2 H''' / H ~ 1e-6; differencing a left-trivialized rotation gradient adds an
    # antisymmetric 1/2 skew(g) to the cube's rotation block, so that block is compared with sym(FD)
    np.testing.assert_allclose(hess[0, :6, :6], 0.5 * (fd[:6, :6] + fd[:6, :6].T), rtol=0, atol=1e-5 * scale)
    np.testing.assert_allclose(hess[0, :6, 6:], fd[:6, 6:], rtol=0, atol=1e-5 * scale)
    g6 = _row_gradient(ctx_core, ctx_full, c, r, qs, arts, extra)
    curvature = np.zeros((2, 2))
    model = arts[0].actor.model
    for e in range(2):
        d = np.zeros((1, 2))
        d[0, e] = h
        jp = link_jacobians(model, qs[0] + d)[3][0]
        jm = link_jacobians(model, qs[0] - d)[3][0]
        curvature[:, e] = sum((jp[l] - jm[l]).T @ g6[0, row] for l, row in enumerate(arts[0].rows)) / (2 * h)
    assert np.abs(curvature).max() > 1e-6 * scale  # the dropped term is there to measure
    np.testing.assert_allclose(hess[0, 6:, 6:] + curvature, fd[6:, 6:], rtol=0, atol=1e-5 * scale)


def _row_gradient(ctx_core, ctx_full, c, r, qs, arts, extra):
    """The row potentials' per-row (W, N, 6) gradient with the links placed by forward kinematics."""
    _, _, _, (cc, rr), _ = coupled.row_terms(ctx_core, ctx_full, c, r, qs, arts, extra, 6 + qs[0].shape[1])
    core = evaluate_potentials(pipeline.CORE_POTENTIALS, ctx_core, cc, rr, False)
    rows = evaluate_potentials(extra, ctx_full, cc, rr, False)
    return core.gradient + rows.gradient


def _tip_depth_in_box(a, box, world=0):
    """Deepest penetration (m, > 0 inside) of the tip link's box corners into the static box."""
    t = a.get_articulated_link_transforms(world=world)[2]
    corners = np.array([[sx * 0.05, sy * 0.2, sz * 0.05] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)])
    world_pts = corners @ t.rotation_matrix.T + t.translation_array
    return -box.get_points_distance_to_surface(world_pts, world=world).min()


def test_chain_falls_onto_a_static_box_and_rests_on_it():
    scene, a, box, _ = box_scene(cube=False)
    scene.register_query(mochi.QueryType.TOTAL_CONTACT_FORCE)
    depths, forces = [], []
    for _ in range(40):
        scene.step(0.01)
        depths.append(_tip_depth_in_box(a, box))
        forces.append(sum(np.linalg.norm(scene.get_actor(h).get_contact_force_world())
                          for h in a.get_nested_link_actors()))
    # The tip's corner lands at ~1.2 m/s on a penalty contact: measured 17.8 mm deep at impact, then at rest
    # within the ramp delta + 2 eps = 11 mm (ContactParams defaults) -- on the box, never through its 0.4 m
    assert max(depths) < 0.025
    assert max(depths[-15:]) < 0.011
    assert max(forces) > 1.0  # the box holds the chain up: contact forces on links are reported
    # without the box the chain swings down past it (the stop is the contact's, not the joints')
    free = mochi.create_scene("free")
    b = free.create_articulated_actor(chain_params())
    b.set_articulated_pose_from_joints([1.2, 0.0, 0.0])
    free_depths = []
    for _ in range(40):
        free.step(0.01)
        free_depths.append(_tip_depth_in_box(b, box))
    assert max(free_depths) > 0.1


def test_a_swinging_link_pushes_a_free_cube():
    scene = mochi.create_scene("push")
    scene.set_gravity([0.0, 0.0, 0.0])
    a = scene.create_articulated_actor(chain_params(1))
    cube = scene.create_rigid_actor(shape=CUBE, density=500.0,
                                    world_from_local=mochi.TransformRT(translation=[0.12, 1.7, 0.0]))
    a.set_articulated_joint_velocities([2.0])  # the link (from y = 2 down to 1.6) swings towards +x
    for _ in range(15):
        scene.step(0.01)
    v = cube.get_linear_velocity()
    # pushed along the swing; out of its plane only by the triangulated faces' uneven samples (measured 2e-4 v_x)
    assert v[0] > 0.1 and abs(v[2]) < 1e-2 * v[0]
    assert a.get_articulated_joint_velocities()[0] < 2.0  # and the link slowed down


def test_adjacent_links_do_not_collide_by_default():
    scene = mochi.create_scene("adj")
    a = scene.create_articulated_actor(chain_params())
    l0, l1, l2 = a.get_nested_link_actors()
    assert not scene.is_actor_contact_enabled(l0, l1) and not scene.is_actor_contact_enabled(l2, l1)
    assert scene.is_actor_contact_enabled(l0, l2)
    scene.enable_actor_contact_symmetric(l0, l1, True)
    assert scene.is_actor_contact_enabled(l1, l0)


def _run(method, poses, steps=5):
    scene, a, _, cube = box_scene(method)
    scene.set_num_worlds(len(poses))
    for w, q in enumerate(poses):
        a.set_articulated_pose_from_joints(q, world=w)
    out = []
    for _ in range(steps):
        scene.step(0.01)
        out.append((np.array([a.get_articulated_pose(world=w) for w in range(len(poses))]),
                    scene.get_actor_poses([cube])[0].copy()))
    return out


@pytest.mark.parametrize("method", [IntegrationMethod.BACKWARD_EULER, IntegrationMethod.BDF2])
def test_worlds_together_equal_each_alone_with_contact(method):
    poses = [[1.2, 0.0, 0.0], [1.0, 0.3, -0.2], [-1.1, 0.0, 0.4]]
    together = _run(method, poses, steps=12)
    for w, q in enumerate(poses):
        alone = _run(method, [q], steps=12)
        for k in range(12):
            assert np.array_equal(together[k][0][w], alone[k][0][0]), (w, k)
            assert np.array_equal(together[k][1][w], alone[k][1][0]), (w, k)


def test_evaluating_only_the_moving_worlds_gives_the_bits_of_evaluating_all(monkeypatch):
    """The coupled Newton evaluates only the worlds an iteration or a line-search try moves
    (coupled.SUBSET_EVALUATION); worlds converging at different iterations, in contact, step to the same bits as
    when every world is evaluated every time."""
    poses = [[1.2, 0.0, 0.0], [1.0, 0.3, -0.2], [-1.1, 0.0, 0.4], [0.1, 0.0, 0.0]]
    runs = []
    for flag in (True, False):
        monkeypatch.setattr(coupled, "SUBSET_EVALUATION", flag)
        runs.append(_run(IntegrationMethod.BDF2, poses, steps=12))
    for k in range(12):
        assert np.array_equal(runs[0][k][0], runs[1][k][0]) and np.array_equal(runs[0][k][1], runs[1][k][1]), k


# Backward Euler in the default lane, the other integrators in the slow lane (pytest -m slow, run by CI).
@pytest.mark.parametrize("method", [m if m is IntegrationMethod.BACKWARD_EULER else pytest.param(m, marks=pytest.mark.slow)
                                    for m in IntegrationMethod if m is not IntegrationMethod.COUNT])
def test_every_integrator_steps_links_against_the_box(method):
    scene, a, box, _ = box_scene(method, cube=False)
    for _ in range(30):
        scene.step(0.01)
    q = a.get_articulated_pose()
    assert np.all(np.isfinite(q)) and _tip_depth_in_box(a, box) < 0.011
    assert q[0] > 0.3  # held up by the box (free fall takes it below 0 by then)


def test_capture_restore_replays_a_mixed_scene_bit_for_bit():
    scene, a, _, cube = box_scene(IntegrationMethod.BDF2)
    for _ in range(10):
        scene.step(0.01)
    handle = scene.capture_state()
    runs = []
    for _ in range(2):
        for _ in range(10):
            scene.step(0.01)
        runs.append((a.get_articulated_pose().copy(), scene.get_actor_poses([cube])[0].copy()))
        scene.restore_state(handle)
    assert np.array_equal(runs[0][0], runs[1][0]) and np.array_equal(runs[0][1], runs[1][1])


def test_link_rows_in_the_scene_state_follow_the_articulation():
    scene, a, _, _ = box_scene()
    for _ in range(3):
        scene.step(0.01)
    links = [scene.get_actor(h) for h in a.get_nested_link_actors()]
    trans, quat = scene.get_actor_poses(links)
    for i, t in enumerate(a.get_articulated_link_transforms()):
        np.testing.assert_allclose(trans[0, i], t.translation_array, rtol=0, atol=1e-15)
        np.testing.assert_allclose(lie.quat_to_matrix(quat[0, i]), t.rotation_matrix, rtol=0, atol=1e-14)
    with pytest.raises(TypeError, match="no DoFs of its own"):
        links[0].set_external_forces_on_dofs([0], [1.0])


def test_destroying_the_articulation_restores_the_rigid_solver_path():
    scene = mochi.create_scene("path")
    scene.create_rigid_actor(shape=CUBE, density=500.0)
    before = scene.solver_path()
    a = scene.create_articulated_actor(chain_params())
    scene.step(0.01)
    assert scene.get_solver_stats() is not None
    scene.destroy_actor(a)
    assert scene.solver_path() == before and scene.get_num_actors() == 1
    assert "generalized coordinates" not in before


def test_solver_path_names_the_generalized_coordinate_step():
    scene, *_ = box_scene()
    assert scene.solver_path() == coupled.PATH_NAME
    scene.step(0.01)
    assert scene.get_solver_stats().max_non_linear_iters >= 1


def test_batched_setters_refuse_link_actors_and_change_nothing():
    scene, a, _, cube = box_scene()
    link = scene.get_actor(a.get_nested_link_actors()[0])
    before = scene.capture_state_to_bytes()
    with pytest.raises(ValueError, match="no DoFs of their own"):
        scene.set_actor_poses([cube, link], np.zeros((1, 2, 3)), np.tile([0.0, 0.0, 0.0, 1.0], (1, 2, 1)))
    with pytest.raises(ValueError, match="no DoFs of their own"):
        scene.set_actor_velocities([link], np.ones((1, 1, 3)), np.zeros((1, 1, 3)))
    assert scene.capture_state_to_bytes() == before


def test_link_contact_layers_filter_contact_as_for_rigid_actors():
    """Links on their own layer, with that layer's contact against the box's layer turned off, fall through the
    box; the same scene with the layers left on holds them up (test_chain_falls_onto_a_static_box_and_rests_on_it)."""
    scene, a, box, _ = box_scene(cube=False)
    for h in a.get_nested_link_actors():
        scene.get_actor(h).set_contact_layer("arm")
    scene.enable_layer_contact_symmetric("arm", box.get_layer(), False)
    scene.set_step_warnings(False)  # the tunnelling check does not read layers: passing through is the point here
    depths = []
    for _ in range(40):
        scene.step(0.01)
        depths.append(_tip_depth_in_box(a, box))
    assert max(depths) > 0.1
