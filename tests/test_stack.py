"""Stack2 and Stack3: spawns, reset options, the staged dense reward, towers that stand, the scripted policy."""

import gymnasium as gym
import numpy as np
import pytest

import superdex_gym  # noqa: F401  (registers the ids)
from superdex_gym.envs.scripted import scripted_policy_for

S2, S3 = "SuperDex/Stack2-v0", "SuperDex/Stack3-v0"
HALF = 0.02


@pytest.mark.parametrize("env_id,cubes", [(S2, 2), (S3, 3)])
def test_spawns_rest_apart_on_the_table_and_are_never_solved_over_1000_resets(env_id, cubes):
    env = gym.make(env_id)
    task = env.unwrapped.worlds.task
    assert env.unwrapped.worlds.robot.config.block_gripper is False  # the rows' default: fingers free
    min_distance = task.config.cube_min_distance_m
    assert min_distance > 2 * HALF * np.sqrt(2)  # more than the cube's diagonal: no overlap at any yaw
    closest, solved = np.inf, 0
    for seed in range(1000):
        obs, info = env.reset(seed=seed)
        cube = obs["achieved_goal"].reshape(cubes, 3).astype(np.float64)
        goal = obs["desired_goal"].reshape(cubes, 3).astype(np.float64)
        np.testing.assert_allclose(cube[:, 2], HALF, rtol=1e-6)  # resting on the table, never in mid-air
        np.testing.assert_allclose(goal[:, :2], np.tile(goal[0, :2], (cubes, 1)))  # a tower ...
        np.testing.assert_allclose(goal[:, 2], HALF * (1 + 2 * np.arange(cubes)), rtol=1e-6)  # ... on the table
        spots = np.vstack([goal[:1, :2], cube[:, :2]])
        d = np.linalg.norm(spots[:, None] - spots[None], axis=-1)[np.triu_indices(cubes + 1, 1)]
        closest = min(closest, d.min())
        assert np.linalg.norm(cube[:, :2], axis=1).min() >= 0.1 - 1e-6  # clear of the gripper's home
        solved += info["is_success"]
    assert solved == 0
    assert min_distance - 1e-6 <= closest < min_distance + 0.01  # the bound is met and reached


def _tower(cubes, offset_m, base=(0.12, -0.1)):
    return np.array([[base[0] + offset_m * i, base[1], HALF * (1 + 2 * i)] for i in range(cubes)])


def test_object_poses_option_and_bad_options_leave_the_episode_as_it_was():
    env, twin = gym.make(S2), gym.make(S2)
    poses = [[0.1, 0.1, HALF, 0, 0, np.sin(0.2), np.cos(0.2)], [-0.1, 0.15, HALF]]
    obs, _ = env.reset(seed=1, options={"object_poses": poses, "goal": [0.0, -0.1, HALF, 0.0, -0.1, 3 * HALF]})
    np.testing.assert_allclose(obs["achieved_goal"], [0.1, 0.1, HALF, -0.1, 0.15, HALF], atol=1e-7)
    np.testing.assert_allclose(obs["observation"][10 + 6:10 + 9], [0, 0, 0.4], atol=1e-6)  # cube0's yaw
    twin.reset(seed=1, options={"object_poses": poses, "goal": [0.0, -0.1, HALF, 0.0, -0.1, 3 * HALF]})
    env.reset(options={"object_poses": _tower(2, 0.01)})  # a tower: touching, not overlapping
    env.reset(seed=1, options={"object_poses": poses, "goal": [0.0, -0.1, HALF, 0.0, -0.1, 3 * HALF]})
    for bad, match in (
            ([[0.1, 0.1, HALF]], r"must hold 2 poses"),
            ([[0.1, 0.1, HALF], [0.12, 0.1, HALF]], "cubes 0 and 1 inside each other"),
            ([[0.1, 0.1, HALF], [0.1, 0.1, 3 * HALF - 1e-3]], "cubes 0 and 1 inside each other"),
            ([[0.1, 0.1, HALF], [-0.1, 0.1, -0.05]], r"\[1\] puts cube 1 inside the table"),
            ([[0.0, 0.0, HALF], [-0.1, 0.1, HALF]], "inside the gripper"),
            ([[5.0, 0.0, HALF], [-0.1, 0.1, HALF]], "outside the achieved_goal bounds"),
            ([[0.1, 0.1, HALF, 0, 0, 0, 0], [-0.1, 0.1, HALF]], "quaternion must be non-zero"),
            ([[0.1, 0.1, np.nan], [-0.1, 0.1, HALF]], "finite"),
            ([[0.1, 0.1, HALF], ["a", 0.1, HALF]], r"\[1\] must be")):
        with pytest.raises(ValueError, match=match):
            env.reset(seed=7, options={"object_poses": bad})
    a = np.array([0.3, -0.2, 0.5, 1.0])
    after, expected = env.step(a)[0], twin.step(a)[0]
    for key in after:
        np.testing.assert_array_equal(after[key], expected[key])
    np.testing.assert_array_equal(env.reset()[0]["desired_goal"], twin.reset()[0]["desired_goal"])  # same stream


def test_dense_reward_is_staged_per_cube_from_the_goals():
    """place_i = -|cube_i - target_i|, lift_i = -(height cube_i lacks), stage = -0.25 x cubes not in the tower
    (counted from the bottom), as the module documents; success needs every cube within 5 cm."""
    task = gym.make("SuperDex/Stack3Dense-v0").unwrapped.worlds.task
    desired = _tower(3, 0.0).ravel()
    achieved = np.array([_tower(3, 0.0).ravel(),  # built
                         (_tower(3, 0.0) + [[0.03, 0, 0], [0, 0, 0], [0, 0.1, -0.04]]).ravel(),  # top one off
                         (_tower(3, 0.0) + [[0.06, 0, 0], [0, 0, 0], [0, 0, 0]]).ravel()])  # bottom one off
    terms = task.reward_terms(achieved, np.tile(desired, (3, 1)), dense=True)
    assert sorted(terms) == ["lift_0", "lift_1", "lift_2", "place_0", "place_1", "place_2", "stage"]
    np.testing.assert_allclose(terms["place_0"], [0, -0.03, -0.06])
    np.testing.assert_allclose(terms["place_2"], [0, -np.hypot(0.1, 0.04), 0])
    np.testing.assert_allclose(terms["lift_2"], [0, -0.04, 0])
    np.testing.assert_allclose(terms["lift_0"] + terms["lift_1"], 0)
    np.testing.assert_allclose(terms["stage"], [0, -0.25, -0.75])  # a cube on an unplaced one is no tower
    np.testing.assert_array_equal(task.is_success(achieved, desired), [True, False, False])


def test_a_three_cube_tower_with_1_cm_offsets_stands_10_s_at_every_stacking_env_settings():
    """Measured: the top cube drifts 0.58 mm in 10 s (the engine's default contact topples it, 7.7 cm off in 3 s).
    Stack2 has Stack3's settings (contact, quadrature, physics) but two cubes: its two-cube tower is checked too."""
    s2, s3 = (gym.make(e).unwrapped for e in (S2, S3))
    t2, t3 = s2.worlds.task, s3.worlds.task
    assert vars(t2.surface_contact()) == vars(t3.surface_contact())
    assert t2.cube_actor_kwargs == t3.cube_actor_kwargs and s2.worlds.config == s3.worlds.config
    for env, cubes in ((s3, 3), (s2, 2)):
        start = _tower(cubes, 0.01)
        env.reset(seed=0, options={"object_poses": start})
        for _ in range(250):  # 10 s at 25 Hz, the gripper still at home
            obs, _, _, truncated, info = env.step(np.array([0.0, 0.0, 0.0, -1.0]))
            assert info["stopped_substeps"] == 0 and not truncated
        drift = np.linalg.norm(obs["achieved_goal"].reshape(cubes, 3) - start, axis=1)
        assert drift.max() < 1e-3, drift


def _scripted_successes(env_id, steps, episodes=100):
    venv = gym.make_vec(env_id, num_envs=episodes, max_episode_steps=steps)
    policy = scripted_policy_for(env_id)
    obs, _ = venv.reset(seed=0)
    for _ in range(steps):
        obs, _, _, truncated, info = venv.step(policy(obs))
    assert truncated.all()
    cubes = obs["achieved_goal"].reshape(episodes, -1, 3) - obs["desired_goal"].reshape(episodes, -1, 3)
    built = np.linalg.norm(cubes, axis=-1).max(axis=1) < 0.01  # no swapped cubes either (both pass 5 cm)
    return info["is_success"].sum(), built.sum()


def test_scripted_stack2_builds_16_seeded_towers_within_50_steps():
    # the suite's quick check (the 100-episode figure below is slow): measured 16/16 built to within 1 cm
    assert min(_scripted_successes(S2, 50, episodes=16)) >= 15


@pytest.mark.slow
def test_scripted_stack2_over_100_seeded_episodes():
    # measured 100/100 (each tower built to within 1 cm), the last within 5 cm after 45 steps: here within 60 of the
    # episode's 100
    assert min(_scripted_successes(S2, 60)) >= 95


@pytest.mark.slow
def test_scripted_stack3_over_100_seeded_episodes():
    # measured 100/100 (each tower built to within 1 cm; the last within 5 cm after 71 steps of 150); the issue's
    # target 90
    assert min(_scripted_successes(S3, 150)) >= 90


def _staggered_boxes(contact, quadrature, offset_m=0.02, half=0.1):
    import superdex_gym.sim as mochi

    scene = mochi.create_scene("staggered five boxes")
    scene.set_gravity([0.0, 0.0, -9.8])
    scene.create_rigid_actor(name="ground", shape=mochi.create_plane_shape(normal=[0, 0, 1], distance=0.0),
                             is_static=True, contact=contact)
    kw = {} if quadrature is None else {"boundary_element_type": quadrature}
    boxes = [scene.create_rigid_actor(name=f"box{k}", shape=mochi.create_box_mesh_shape([half] * 3), density=1000.0,
                                      contact=contact, collider_type=mochi.ColliderType.BOX,
                                      world_from_local=mochi.TransformRT(translation=[offset_m * k, 0, half * (1 + 2 * k)]),
                                      **kw)
             for k in range(5)]
    return scene, boxes


def test_five_staggered_0_2_m_boxes_stand_at_dt_0_01_with_the_grasp_contact():
    """Five 0.2 m boxes, each level 2 cm off the one below (every upper centre of mass well inside its support):
    with GRASP_CONTACT (as it is, not scaled to the box) and 16 quadrature points per face they stand at dt 0.01.
    Measured: the top box settles 1.28 mm sideways and 0.40 mm down within 1 s (the contacts' compliance under
    up to 392 N) and then moves 0.04 mm in 5 s; with the engine's default contact it falls (1.5 m off in 3 s)."""
    import superdex_gym.sim as mochi
    from superdex_gym.envs.core.config import GRASP_CONTACT

    scene, boxes = _staggered_boxes(mochi.ContactParams(**GRASP_CONTACT), mochi.ActorBoundaryElementType.P1Q16)
    start = scene.get_actor_translations(boxes)[0].copy()
    for _ in range(100):
        scene.step(0.01)
    settled = scene.get_actor_translations(boxes)[0].copy()
    for _ in range(200):
        scene.step(0.01)
    end = scene.get_actor_translations(boxes)[0]
    assert np.linalg.norm(end - start, axis=1).max() < 2e-3  # standing: settled within the contacts' compliance
    assert np.linalg.norm(end - settled, axis=1).max() < 1e-4  # and not creeping over the next 2 s
