"""Per-actor queries (issue 18) against the released engine's numbers (`actor_queries` in reference_data, taken by
tools/reference_runs/actor_queries.py) and against closed forms: force from one actor, the batch sum, SDF
distances, the registration life cycle, which actors support which queries, and batched worlds."""

import warnings

import numpy as np
import pytest
from reference import box_mesh, fp64

import superdex_gym.sim as mochi

QT = mochi.QueryType
DT = 1.0 / 60.0
# The three-cube stack reproduces the released fp64 engine's poses to the last bit here (positions compared exactly
# below); the forces are sums of the same per-sample terms in another order, so they agree to round-off: ~100
# samples of ~20 N summed, relative error a few 1e-15; 1e-12 leaves room for the summation order only.
FORCE_RTOL = 1e-12
# The types the released engine supports on rigid mesh actors that are not implemented here (docs/api_parity.md).
NOT_IMPLEMENTED_HERE = {"SURFACE_NODE_POSITIONS", "SURFACE_NODE_NORMALS", "NODE_CONTACT_FORCES"}


def plane_actor(scene, name="ground"):
    return scene.create_rigid_actor(name=name, shape=mochi.create_plane_shape(normal=[0, 1, 0], distance=0),
                                    is_static=True)


def stack(n=3, register=True):
    scene = mochi.create_scene("stack")
    ground = plane_actor(scene)
    shape = box_mesh((0.2, 0.2, 0.2))
    cubes = [scene.create_rigid_actor(name=f"cube{i}", shape=shape, density=1000.0,
                                      world_from_local=mochi.TransformRT(translation=[0, 0.2 + 0.4 * i, 0]))
             for i in range(n)]
    handles = [c.register_query(QT.TOTAL_CONTACT_FORCE) for c in cubes] if register else []
    return scene, ground, cubes, handles


def test_stack_forces_match_the_released_engine():
    ref = fp64("actor_queries")["stack"]
    scene, ground, cubes, _ = stack()
    for _ in range(60):
        scene.step(DT)
    assert [c.get_center_of_mass_transform().translation[1] for c in cubes] == ref["com_y"]
    actors = [ground] + cubes
    for c, total in zip(cubes, ref["total"]):
        np.testing.assert_allclose(c.get_contact_force_world(), total, rtol=FORCE_RTOL, atol=1e-11)
        pair_sum = np.zeros(3)
        for a in actors:
            f = c.get_contact_force_from_actor_world(a)
            np.testing.assert_allclose(f, ref["from"][c.get_name()][a.get_name()], rtol=FORCE_RTOL, atol=1e-11)
            np.testing.assert_array_equal(f, -a.get_contact_force_from_actor_world(c)) if not a.is_static() else None
            pair_sum += f
        np.testing.assert_allclose(pair_sum, c.get_contact_force_world(), rtol=1e-13, atol=1e-10)
    # closed form at rest: the ground carries the whole stack, each interface what is above it (m = 64 kg)
    mg = 64.0 * 9.8
    assert cubes[0].get_contact_force_from_actor_world(ground)[1] == pytest.approx(3 * mg, rel=1e-3)
    assert cubes[1].get_contact_force_from_actor_world(cubes[2])[1] == pytest.approx(-mg, rel=1e-3)
    batch = mochi.experimental.get_contact_force_world_batch
    assert batch(cubes, [ground]) == pytest.approx(ref["batch_cubes_ground"], rel=FORCE_RTOL)
    assert batch(cubes, cubes) == pytest.approx(ref["batch_cubes_cubes"], rel=FORCE_RTOL)
    assert batch(cubes[:1], cubes[1:2]) == pytest.approx(ref["batch_first_second"], rel=FORCE_RTOL)
    assert batch([], [ground]) == ref["batch_empty"] == 0.0


def test_query_life_cycle_follows_the_released_engine():
    ref = fp64("actor_queries")["stack"]
    assert "results should be available after the next simulation step" in ref["error_registered_before_step"]
    scene, ground, cubes, _ = stack(register=False)
    with pytest.raises(mochi.Error, match="needs actor.register_query"):
        cubes[0].get_contact_force_world()
    handle = cubes[0].register_query(QT.TOTAL_CONTACT_FORCE)
    assert isinstance(handle, mochi.QueryHandle) and handle.is_valid()
    with pytest.raises(mochi.Error, match="available after the next simulation step"):
        cubes[0].get_contact_force_world()
    scene.step(DT)
    assert cubes[0].get_contact_force_world()[1] > 0
    with pytest.raises(mochi.Error, match="actor 'cube1' has none"):  # registrations are per actor
        cubes[1].get_contact_force_world()
    with pytest.raises(mochi.Error, match="other must be an actor"):
        cubes[0].get_contact_force_from_actor_world(None)
    second = cubes[0].register_query(QT.TOTAL_CONTACT_FORCE)  # reference counted: one cancel leaves the other
    cubes[0].cancel_query(handle)
    cubes[0].cancel_query(handle)  # cancelling twice has no effect
    scene.step(DT)
    assert cubes[0].get_contact_force_world()[1] > 0
    cubes[0].cancel_query(second)
    scene.step(DT)
    with pytest.raises(mochi.Error):
        cubes[0].get_contact_force_world()
    assert not scene.is_query_registered(QT.TOTAL_CONTACT_FORCE)
    with pytest.raises(TypeError, match="handle must be a QueryHandle"):
        cubes[0].cancel_query(3)
    with pytest.raises(mochi.Error, match="register_query"):
        mochi.experimental.get_contact_force_world_batch(cubes, [ground])


def test_supported_queries_match_the_released_engine():
    ref = fp64("actor_queries")["supported"]
    scene = mochi.create_scene()
    shape = box_mesh((0.2, 0.2, 0.2))
    actors = {
        "dynamic_mesh": scene.create_rigid_actor(shape=shape, density=1000.0),
        "dynamic_mesh_no_collider": scene.create_rigid_actor(shape=shape, density=1000.0,
                                                             collider_type=mochi.ColliderType.NONE),
        "static_mesh": scene.create_rigid_actor(shape=shape, is_static=True),
        "static_plane": plane_actor(scene),
        "static_sphere": scene.create_rigid_actor(shape=mochi.create_sphere_shape(center=[1, 0, 0], radius=0.5),
                                                  is_static=True),
    }
    for key, actor in actors.items():
        ours = {q.name: actor.is_query_supported(q) for q in QT if q is not QT.COUNT}
        differ = {name for name in ours if ours[name] != ref[key][name]}
        assert differ <= NOT_IMPLEMENTED_HERE and all(ref[key][n] for n in differ), (key, differ)
        for q in QT:
            if q is QT.COUNT or actor.is_query_supported(q):
                continue
            before = scene._actor_queries._entries.copy()
            with pytest.raises(mochi.Error, match=q.name):
                actor.register_query(q)
            assert scene._actor_queries._entries == before  # all-or-nothing, as the reference
    assert actors["dynamic_mesh"].is_query_supported(QT.TOTAL_CONTACT_FORCE.value)  # QueryType | int
    with pytest.raises(TypeError, match="type must be a QueryType"):
        actors["dynamic_mesh"].register_query("TOTAL_CONTACT_FORCE")
    with pytest.raises(mochi.Error, match="COUNT"):
        actors["dynamic_mesh"].register_query(QT.COUNT)


def test_register_query_and_compute_warns_and_registers():
    scene, _, cubes, _ = stack(n=1, register=False)
    with pytest.warns(UserWarning, match="does not support immediate computation"):
        handle = cubes[0].register_query_and_compute(QT.TOTAL_CONTACT_FORCE)
    with pytest.raises(mochi.Error, match="next simulation step"):
        cubes[0].get_contact_force_world()
    scene.step(DT)
    assert cubes[0].get_contact_force_world()[1] > 0
    cubes[0].cancel_query(handle)


def test_sdf_distances_of_a_cube_on_a_plane():
    scene, ground, cubes, _ = stack(n=1, register=False)
    cube = cubes[0]
    cube.register_query(QT.SDF_DISTANCES)
    cube.register_query(QT.CONTACT_POINTS)
    empty = cube.get_sdf_distances()  # before a step: empty, no error (as the released engine)
    assert empty.distances.shape == (0,) and empty.world_positions.shape == (0, 3)
    ground_query = ground.register_query(QT.SDF_DISTANCES)  # static actors take it and have no samples
    for _ in range(30):
        scene.step(DT)
    sd = cube.get_sdf_distances()
    # P1Q3 puts 3 samples on each of the bottom face's 2 triangles: 6 active samples against the plane
    assert sd.distances.shape == (6,) and sd.world_positions.shape == (6, 3) and sd.distance_grads.shape == (6, 3)
    np.testing.assert_array_equal(sd.distances, sd.world_positions[:, 1])  # the plane y = 0: phi = y exactly
    np.testing.assert_array_equal(sd.distance_grads, np.tile([0.0, 1.0, 0.0], (6, 1)))
    assert np.all(sd.distances < 0)  # resting inside the penalty band
    points = cube.get_contact_points_world()
    np.testing.assert_array_equal(sorted(sd.sample_indices), sorted(p.sample_index for p in points))
    assert ground.get_sdf_distances().distances.shape == (0,)
    ground.cancel_query(ground_query)


def test_scene_level_registration_keeps_its_behaviour():
    scene, ground, cubes, _ = stack(n=1, register=False)
    scene.register_query(QT.TOTAL_CONTACT_FORCE)
    np.testing.assert_array_equal(cubes[0].get_contact_force_world(), np.zeros(3))  # zeros before the first step
    scene.step(DT)
    np.testing.assert_array_equal(ground.get_contact_force_world(), -cubes[0].get_contact_force_world())
    assert cubes[0].get_contact_force_from_actor_world(ground)[1] > 0


def test_batched_worlds_give_each_worlds_own_results():
    """World i of a batch answers as the same world stepped alone, bit for bit (the stack's top cube placed
    differently per world)."""
    heights = [1.0, 1.05, 2.0]

    def build(num_worlds):
        scene, ground, cubes, _ = stack(n=2)
        for c in cubes:
            c.register_query(QT.SDF_DISTANCES)
        scene.set_num_worlds(num_worlds)
        return scene, ground, cubes

    scene, ground, cubes = build(len(heights))
    for w, y in enumerate(heights):
        cubes[1].set_root_transform(mochi.TransformRT(translation=[0, y, 0]), world=w)
    for _ in range(10):
        scene.step(DT)
    for w, y in enumerate(heights):
        single, g1, c1 = build(1)
        c1[1].set_root_transform(mochi.TransformRT(translation=[0, y, 0]))
        for _ in range(10):
            single.step(DT)
        np.testing.assert_array_equal(cubes[0].get_contact_force_from_actor_world(cubes[1], world=w),
                                      c1[0].get_contact_force_from_actor_world(c1[1]))
        np.testing.assert_array_equal(cubes[1].get_sdf_distances(world=w).distances, c1[1].get_sdf_distances().distances)
        a, b = cubes[1].get_aabb_world(world=w), c1[1].get_aabb_world()
        np.testing.assert_array_equal(a.min, b.min)
        np.testing.assert_array_equal(a.max, b.max)
        assert mochi.experimental.get_contact_force_world_batch(cubes, [ground] + cubes, world=w) == \
            mochi.experimental.get_contact_force_world_batch(c1, [g1] + c1)
    assert np.all(cubes[0].get_contact_force_from_actor_world(cubes[1], world=2) == 0)  # world 2: not touching
    with pytest.raises(IndexError, match="world 3 out of range"):
        cubes[0].get_contact_force_from_actor_world(cubes[1], world=3)


def test_destroying_an_actor_drops_its_registrations():
    scene, ground, cubes, _ = stack(n=2)
    scene.step(DT)
    scene.destroy_actor(cubes[1])
    assert scene.is_query_registered(QT.TOTAL_CONTACT_FORCE)  # cube0's registration remains
    scene.destroy_actor(cubes[0])
    assert not scene.is_query_registered(QT.TOTAL_CONTACT_FORCE)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        scene.step(DT)
