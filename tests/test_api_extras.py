"""The rest of issue 18's names: bounding boxes and meshes, scene identity, value types, the experimental
functions (sleep parameters, improved convergence preset, state transfer between scenes) and the scene helpers,
checked against the released engine's recorded behaviour (`actor_queries` in reference_data) and closed forms."""

import math

import numpy as np
import pytest
from reference import box_mesh, fp64

import superdex_gym.sim as mochi
from superdex_gym.sim import ASSETS_PATH
from superdex_gym.sim.utils import scene_helpers

ex = mochi.experimental


def test_aabbs_and_meshes_match_the_released_engine():
    ref = fp64("actor_queries")["aabb"]
    scene = mochi.create_scene()
    rot = mochi.Quaternion.rotation_z(0.7) * mochi.Quaternion.rotation_x(0.4)
    sphere = mochi.load_shape_from_file(file_path=str(ASSETS_PATH / "sphere/icosphere_3subdiv.1.mochi.json"),
                                        bake_scale=[0.2, 0.2, 0.2])
    actors = {
        "cube": scene.create_rigid_actor(shape=box_mesh((0.2, 0.2, 0.2)), density=1000.0,
                                         world_from_local=mochi.TransformRT(rotation=mochi.Quaternion.rotation_y(0.5),
                                                                            translation=[0.1, 0.3, 0.0])),
        "icosphere": scene.create_rigid_actor(shape=sphere, density=1000.0, collider_type=mochi.ColliderType.SPHERE,
                                              world_from_local=mochi.TransformRT(rotation=rot, translation=[3, 1, 0])),
        "plane": scene.create_rigid_actor(shape=mochi.create_plane_shape(normal=[0, 1, 0], distance=0),
                                          is_static=True),
        "sphere": scene.create_rigid_actor(shape=mochi.create_sphere_shape(center=[1, 0, 0], radius=0.5),
                                           is_static=True),
    }
    for key, actor in actors.items():
        r = ref[key]
        local, world = actor.get_aabb_local(), actor.get_aabb_world()
        # fp64 reference vs float64 here: the same box arithmetic, round-off only (|x| <= 3.4 m, a few ulps)
        for got, want in ((local.min, r["local"][0]), (local.max, r["local"][1]), (world.min, r["world"][0]),
                          (world.max, r["world"][1]), (world.get_size(), r["world_size"])):
            np.testing.assert_allclose(got, want, rtol=0, atol=1e-14)
        np.testing.assert_allclose(world.get_center(), r["world_center"], rtol=0, atol=1e-14)  # NaN == NaN here
        mesh = actor.get_mesh()
        assert [mesh.nodes_per_element, mesh.get_num_nodes(), mesh.get_num_elements()] == r["mesh"]
        assert actor.get_visual_mesh().is_empty() == r["visual_mesh_empty"]
        assert actor.get_type().name == r["type"] and actor.has_root_transform() == r["has_root_transform"]
    # closed form: a cube rotated by 0.5 rad about y spans 0.2 (cos 0.5 + sin 0.5) in x and z
    half = 0.2 * (math.cos(0.5) + math.sin(0.5))
    np.testing.assert_allclose(actors["cube"].get_aabb_world().get_size(), [2 * half, 0.4, 2 * half], rtol=1e-15)
    surface = actors["cube"].get_surface_mesh()
    assert surface.coordinates.shape == (24,) and surface.connectivity.shape == (36,)
    with pytest.raises(ValueError):
        surface.coordinates[0] = 1.0  # a view: read-only


def test_external_forces_getter():
    scene = mochi.create_scene()
    cube = scene.create_rigid_actor(shape=box_mesh((0.1, 0.1, 0.1)))
    ground = scene.create_rigid_actor(shape=mochi.create_plane_shape(), is_static=True)
    out = np.full(6, np.nan)
    cube.get_external_forces(out)
    np.testing.assert_array_equal(out, np.zeros(6))
    cube.set_external_forces_on_dofs([1, 4], [2.0, 3.0])
    cube.add_external_force_at_local_position([1, 0, 0], [0, 0.1, 0])  # not a DoF load: not reported (reference)
    cube.get_external_forces(out)
    np.testing.assert_array_equal(out, [0, 2, 0, 0, 3, 0])
    with pytest.raises(ValueError, match=r"out_forces must have shape \(6,\)"):
        cube.get_external_forces(np.zeros(5))
    with pytest.raises(TypeError, match="out_forces must be a float numpy array"):
        cube.get_external_forces([0.0] * 6)
    ground.get_external_forces(np.zeros(0))


def test_scene_identity_and_states():
    a, b = mochi.create_scene("a"), mochi.create_scene("b")
    assert a.get_name() == "a" and a.get_handle().is_valid() and a.get_handle() != b.get_handle()
    assert a.get_handle() == a.get_handle() and mochi.Scene.DEFAULT_CALLBACK_PRIORITY == 100
    assert a.get_force_single_island() is False
    a.set_force_single_island(True)
    assert a.get_force_single_island() is True
    with pytest.raises(TypeError, match="force_single_island must be a bool"):
        a.set_force_single_island("yes")
    a.create_rigid_actor(shape=box_mesh((0.1, 0.1, 0.1)))
    h1, h2 = a.capture_state(), a.capture_state()
    a.release_all_states()
    for h in (h1, h2):
        with pytest.raises(KeyError, match="released or never captured"):
            a.restore_state(h)
    actor = a.get_actors()[0]
    assert actor.get_scene() is a and actor.get_reference_shape() is actor.get_shape()
    assert actor.get_contact_layer() == "" and actor.get_dof_values([1]).shape == (1,)


def test_value_types():
    assert mochi.Real3(1, 2, 3).tolist() == [1.0, 2.0, 3.0] == mochi.Real3([1, 2, 3]).tolist()
    assert mochi.Real3().tolist() == [0.0] * 3 and mochi.Real6(*range(6)).tolist() == [0, 1, 2, 3, 4, 5]
    with pytest.raises(ValueError, match="Real3 needs 3 numbers"):
        mochi.Real3(1, 2)
    box = mochi.Aabb([0, 0, 0], [1, 2, 4])
    assert box.get_center().tolist() == [0.5, 1, 2] and box.get_size().tolist() == [1, 2, 4]
    with pytest.raises(ValueError, match="min must be <= max"):
        mochi.Aabb([1, 0, 0], [0, 1, 1])
    with pytest.raises(ValueError, match="not NaN"):
        mochi.Aabb([np.nan, 0, 0], [1, 1, 1])
    obb = mochi.Obb(mochi.TransformRT(translation=[1, 2, 3]), [1, 1, 2])
    assert obb.get_center().tolist() == [1, 2, 3] and obb.get_size().tolist() == [2, 2, 4]
    assert mochi.Box(center=[0, 1, 0], half_extents=[1, 1, 1]).rotation == mochi.Quaternion()
    assert mochi.Plane(normal=[0, 0, 1], distance=2).distance == 2.0
    mesh = mochi.MeshData(nodes_per_element=3, coordinates=[0, 0, 0, 1, 0, 0, 0, 1, 0], connectivity=[0, 1, 2])
    assert (mesh.get_num_nodes(), mesh.get_num_elements(), mesh.is_empty()) == (3, 1, False)
    with pytest.raises(ValueError, match="not a multiple of nodes_per_element"):
        mochi.MeshData(nodes_per_element=3, coordinates=[0] * 9, connectivity=[0, 1])
    q = mochi.Quaternion.rotation_x(0.3)
    assert q.get_conjugate().tolist() == [-q.x, -q.y, -q.z, q.w]
    assert mochi.Quaternion.zero().tolist() == [0.0] * 4 == mochi.Quaternion.zero().get_conjugate().tolist()
    with pytest.raises(ValueError, match="non-zero Quaternion"):
        mochi.TransformRT(rotation=mochi.Quaternion.zero())
    t = mochi.TransformRT(rotation=q, translation=[1, 2, 3])
    p = np.array([0.3, -0.2, 0.5])
    np.testing.assert_allclose(t.transform_point_inverse(t.transform_point(p)), p, rtol=0, atol=1e-15)
    assert mochi.QueryHandle(0).is_valid() is False and mochi.QueryHandle(5) == mochi.QueryHandle(5)


def test_count_members_are_not_values():
    scene = mochi.create_scene()
    with pytest.raises(ValueError, match="collider_type COUNT"):
        scene.create_rigid_actor(shape=box_mesh((0.1, 0.1, 0.1)), collider_type=mochi.ColliderType.COUNT)
    assert scene.get_num_actors() == 0
    sp = scene.get_solver_params()
    sp.integration_method = mochi.IntegrationMethod.COUNT
    with pytest.raises(ValueError, match="integration_method COUNT"):
        scene.set_solver_params(sp)
    assert scene.get_solver_params().integration_method is mochi.IntegrationMethod.BACKWARD_EULER
    assert mochi.IntegrationMethod.DEFAULT is mochi.IntegrationMethod.BACKWARD_EULER


def test_sleep_params_match_the_released_engine():
    ref = fp64("actor_queries")["sleep_params"]
    scene = mochi.create_scene()
    d = ex.get_sleep_params(scene)
    assert [d.can_sleep, d.min_steps_before_sleep, d.sleep_threshold] == ref["defaults"] == [False, 20, 0.5]
    for key, message in ref["errors"].items():
        field, value = key.split("=")
        p = ex.SleepParams()
        setattr(p, field, type(getattr(p, field))(value))
        assert message is not None
        with pytest.raises(mochi.Error, match=field):
            ex.set_sleep_params(scene, p)
        assert ex.get_sleep_params(scene) == ex.SleepParams()  # unchanged
    p = ex.SleepParams(min_steps_before_sleep=2, sleep_threshold=1.0)
    ex.set_sleep_params(scene, p)
    assert ref["accepted_bounds"] and ex.get_sleep_params(scene) == p and ex.get_sleep_params(scene) is not p
    with pytest.raises(ValueError, match="sleep_threshold"):  # InvalidArgumentError is a ValueError too
        ex.set_sleep_params(scene, ex.SleepParams(sleep_threshold=math.nan))
    with pytest.warns(UserWarning, match="island sleeping is not implemented"):
        ex.set_sleep_params(scene, ex.SleepParams(can_sleep=True))
    assert ex.get_sleep_params(scene).can_sleep is True
    with pytest.raises(TypeError, match="params must be a SleepParams"):
        ex.set_sleep_params(scene, {"can_sleep": True})


def test_improved_convergence_settings_match_the_released_engine():
    ref = fp64("actor_queries")["improved_convergence"]
    scene = mochi.create_scene()
    cube = scene.create_rigid_actor(shape=box_mesh((0.1, 0.1, 0.1)))
    ex.enable_newton_euler_inertia(cube, True)
    max_iter = scene.get_solver_params().non_linear_solver.max_iter
    ex.apply_improved_convergence_settings(scene)
    sp = scene.get_solver_params()
    assert sp.experimental_eval.explicit_normals is ref["explicit_normals"] is True
    assert sp.experimental_eval.implicit_normal_force_for_dissipation is ref["implicit_normal_force_for_dissipation"]
    assert sp.non_linear_solver.line_search_type.name == ref["line_search_type"] == "ARMIJO"
    assert sp.non_linear_solver.max_iter == max_iter  # untouched (the reference's stays at its 4)
    assert not ex.is_newton_euler_inertia_enabled(cube)
    scene.step(0.01)  # the preset is a valid configuration


def test_newton_euler_terms_need_an_articulated_actor():
    scene = mochi.create_scene()
    cube = scene.create_rigid_actor(shape=box_mesh((0.1, 0.1, 0.1)))
    with pytest.raises(mochi.Error, match="not an articulated body"):
        ex.create_newton_euler_terms(cube)
    assert ex.is_valid_newton_euler_terms(None) is False
    ex.destroy_newton_euler_terms(None)
    assert ex.PointCloudColliderParams().radius == 0.01


def stack_scene(n):
    scene = mochi.create_scene()
    scene.create_rigid_actor(name="ground", shape=mochi.create_plane_shape(), is_static=True)
    cubes = [scene.create_rigid_actor(name=f"c{i}", shape=box_mesh((0.2, 0.2, 0.2)), density=1000.0,
                                      world_from_local=mochi.TransformRT(translation=[0, 0.2 + 0.4 * i, 0]))
             for i in range(n)]
    return scene, cubes


def test_restore_state_from_scene():
    ref = fp64("actor_queries")["restore_state_from_scene"]
    a, cubes_a = stack_scene(3)
    b, cubes_b = stack_scene(3)
    for _ in range(10):
        a.step(1 / 60)
    handle = a.capture_state()
    ex.restore_state_from_scene(b, a, handle)
    assert ref["restored_equal"] and ref["time"][0] == ref["time"][1]
    assert b.get_total_simulation_time() == a.get_total_simulation_time()
    for ca, cb in zip(cubes_a, cubes_b):
        np.testing.assert_array_equal(cb.get_root_transform().translation, ca.get_root_transform().translation)
        np.testing.assert_array_equal(cb.get_linear_velocity(), ca.get_linear_velocity())
    a.step(1 / 60)
    b.step(1 / 60)
    np.testing.assert_array_equal(cubes_b[2].get_dof_values(), cubes_a[2].get_dof_values())  # same next step
    c, cubes_c = stack_scene(2)
    before = cubes_c[1].get_dof_values()
    assert "number of entities has changed" in ref["error_other_composition"]
    with pytest.raises(mochi.Error, match="3 actors, scene_to has 4|4 actors, scene_to has 3"):
        ex.restore_state_from_scene(c, a, handle)
    np.testing.assert_array_equal(cubes_c[1].get_dof_values(), before)
    with pytest.raises(ValueError, match="handle_from"):
        ex.restore_state_from_scene(b, a, 12345)


def test_scene_helpers_match_the_released_ones():
    ref = fp64("actor_queries")["helpers"]
    scene = mochi.create_scene()
    plane = scene_helpers.create_ground_plane(scene)
    assert [plane.get_name(), plane.get_contact_layer(), plane.get_collider_type().name, plane.is_static()] == \
        ref["ground"]
    scene.create_rigid_actor(name="box_a", shape=box_mesh((0.1, 0.1, 0.1)))
    scene.create_rigid_actor(name="box_b", shape=box_mesh((0.1, 0.1, 0.1)))
    assert scene_helpers.find_actor(scene, "box_a").get_name() == ref["find_one"]
    assert "multiple actors" in ref["find_many"] and "No actor found" in ref["find_none"]
    with pytest.raises(ValueError, match='multiple actors matching pattern "box_\\*"'):
        scene_helpers.find_actor(scene, "box_*")
    with pytest.raises(ValueError, match='No actor found matching pattern "nothing"'):
        scene_helpers.find_actor(scene, "nothing")
    tilted = scene_helpers.create_ground_plane(scene, normal=[0, 0, 1], offset=-1.0,
                                               contact_params=mochi.ContactParams(coulomb_friction_coefficient=0.9))
    assert tilted.get_contact_params().coulomb_friction_coefficient == 0.9
    with pytest.raises(TypeError, match="contact_params must be ContactParams"):
        scene_helpers.create_ground_plane(scene, contact_params={"mu": 1})
