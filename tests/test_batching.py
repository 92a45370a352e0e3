"""Batched worlds: one call steps W worlds; W worlds stepped together equal the same worlds stepped one by one."""

import numpy as np
import pytest

import superdex_gym.sim as mochi


def build(num_worlds=1, method=mochi.IntegrationMethod.BDF2):
    scene = mochi.create_scene()
    sp = scene.get_solver_params()
    sp.integration_method = method
    scene.set_solver_params(sp)
    # 2 m apart: no contact unless a test moves them together
    a = scene.create_rigid_actor(name="a", shape=mochi.create_box_mesh_shape([0.1, 0.2, 0.3]), density=1000.0)
    b = scene.create_rigid_actor(name="b", shape=mochi.create_icosphere_shape(0.2, 2), density=500.0,
                                 collider_type=mochi.ColliderType.SPHERE, world_from_local=mochi.TransformRT(translation=[2, 0, 0]))
    s = scene.create_rigid_actor(name="s", shape=mochi.create_box_mesh_shape([0.5, 0.1, 0.5]), is_static=True,
                                 world_from_local=mochi.TransformRT(translation=[4, 0, 0]))
    scene.set_num_worlds(num_worlds)
    return scene, (a, b, s)


def world_setup(rng, n):
    return dict(
        pos=0.2 * rng.normal(size=(n, 3, 3)) + np.array([[0.0, 0, 0], [2, 0, 0], [4, 0, 0]]), quat=rng.normal(size=(n, 3, 4)), lin=rng.normal(size=(n, 2, 3)),
        ang=rng.normal(size=(n, 2, 3)) * 3, force=rng.normal(size=(n, 6)) * 50,
    )


def apply(scene, actors, setup, worlds, rows):
    a, b, s = actors
    scene.set_actor_poses(actors, setup["pos"][rows], setup["quat"][rows], worlds=worlds)
    zeros = np.zeros((len(rows), 1, 3))
    scene.set_actor_velocities([a, b, s], np.concatenate([setup["lin"][rows], zeros], 1),
                               np.concatenate([setup["ang"][rows], zeros], 1), worlds=worlds)
    for w, r in zip(worlds, rows):
        a.set_external_forces_on_dofs(range(6), setup["force"][r], world=int(w))


def snapshot(scene, actors):
    pos, quat = scene.get_actor_poses(actors)
    lin, ang = scene.get_actor_velocities(actors)
    return np.concatenate([pos.reshape(pos.shape[0], -1), quat.reshape(pos.shape[0], -1),
                           lin.reshape(pos.shape[0], -1), ang.reshape(pos.shape[0], -1)], axis=1)


@pytest.mark.parametrize("method", [mochi.IntegrationMethod.BACKWARD_EULER, mochi.IntegrationMethod.BDF2,
                                    mochi.IntegrationMethod.DIRK33])
def test_batched_equals_separate(rng, method):
    num_worlds, steps = 5, 12
    setup = world_setup(rng, num_worlds)
    batched, actors = build(num_worlds, method)
    apply(batched, actors, setup, np.arange(num_worlds), np.arange(num_worlds))
    singles = []
    for w in range(num_worlds):
        sc, acts = build(1, method)
        apply(sc, acts, setup, [0], [w])
        singles.append((sc, acts))
    for k in range(steps):
        if k == 6:
            # reset one world mid-run (its history restarts) while the others keep their BDF history
            moved = {"pos": setup["pos"][::-1], "quat": setup["quat"], "lin": setup["lin"], "ang": setup["ang"],
                     "force": setup["force"]}
            apply(batched, actors, moved, [2], [2])
            apply(singles[2][0], singles[2][1], moved, [0], [2])
        batched.step(0.01)
        for sc, _ in singles:
            sc.step(0.01)
        got = snapshot(batched, actors)
        for w, (sc, acts) in enumerate(singles):
            # bit for bit: a world's arithmetic never depends on the other worlds of the batch
            np.testing.assert_array_equal(got[w], snapshot(sc, acts)[0])


def test_world_accessors_and_errors():
    scene, (a, b, s) = build(4)
    a.set_velocity([1, 0, 0], [0, 0, 0], world=2)
    scene.step(0.01)
    assert a.get_linear_velocity(world=2)[0] == pytest.approx(1.0)
    assert a.get_linear_velocity(world=1)[0] == 0.0
    assert scene.get_world_status().shape == (4,)
    with pytest.raises(IndexError):
        a.get_linear_velocity(world=4)
    with pytest.raises(ValueError, match="shape"):
        scene.set_actor_poses([a], np.zeros((4, 2, 3)), np.zeros((4, 2, 4)))
    with pytest.raises(ValueError, match="finite"):
        scene.set_actor_poses([a], np.full((4, 1, 3), np.nan), np.tile([0, 0, 0, 1.0], (4, 1, 1)))
    scene.step(0.01)


def test_restore_one_world_from_single_world_snapshot():
    scene, actors = build(1)
    initial = scene.capture_state()
    scene.set_num_worlds(3)
    for _ in range(5):
        scene.step(0.01)
    moved = snapshot(scene, actors)
    scene.restore_state(initial, worlds=[1])
    fresh = snapshot(scene, actors)
    np.testing.assert_array_equal(fresh[0], moved[0])
    np.testing.assert_array_equal(fresh[2], moved[2])
    ref, ref_actors = build(1)
    np.testing.assert_array_equal(fresh[1], snapshot(ref, ref_actors)[0])


@pytest.mark.parametrize("max_iter", [2, 16])
def test_batched_equals_separate_in_contact_with_worlds_finishing_at_different_iterations(max_iter):
    """Worlds in contact at different speeds leave Newton at different iterations (converged at once, after many
    iterations, or stopped at max_iter); the batch compacts as they finish. Each world still matches its own
    single-world run exactly."""
    num_worlds, steps = 6, 10
    speeds = np.array([0.0, 0.5, 2.0, 5.0, 10.0, 20.0])  # sphere b driven into the static box s (its face at x=3.5)
    setup = dict(pos=np.tile([[0.0, 0, 0], [3.3, 0, 0], [4, 0, 0]], (num_worlds, 1, 1)),
                 quat=np.tile([0.0, 0, 0, 1], (num_worlds, 3, 1)), lin=np.zeros((num_worlds, 2, 3)),
                 ang=np.zeros((num_worlds, 2, 3)), force=np.zeros((num_worlds, 6)))
    setup["lin"][:, 1, 0] = speeds
    setup["ang"][:, 1, 2] = np.linspace(0, 4, num_worlds)

    def make(n):
        scene, actors = build(n, mochi.IntegrationMethod.BACKWARD_EULER)
        sp = scene.get_solver_params()
        sp.non_linear_solver.max_iter = max_iter
        scene.set_solver_params(sp)
        return scene, actors

    batched, actors = make(num_worlds)
    apply(batched, actors, setup, np.arange(num_worlds), np.arange(num_worlds))
    singles = []
    for w in range(num_worlds):
        sc, acts = make(1)
        apply(sc, acts, setup, [0], [w])
        singles.append((sc, acts))
    iterations = []
    for _ in range(steps):
        batched.step(0.01)
        iterations.append(batched.get_solver_stats().max_non_linear_iters)
        for sc, _ in singles:
            sc.step(0.01)
        got = snapshot(batched, actors)
        for w, (sc, acts) in enumerate(singles):
            np.testing.assert_array_equal(got[w], snapshot(sc, acts)[0], err_msg=f"world {w}")
    assert max(iterations) > 1  # the contacts made some world iterate (the check exercises the compaction)
