"""Tasks on the Panda arm beyond Reach (PandaPush-v0, PandaPickAndPlace-v0, PandaStack2-v0, PandaStack3-v0): the
scripted policies through "ee" control, and the geometry they are given."""

import numpy as np
import pytest

from superdex_gym.envs import ENVS
from superdex_gym.envs.core.vector_env import RobotTaskVectorEnv
from superdex_gym.envs.robots.panda_arm import PandaArm
from superdex_gym.envs.scripted import PANDA_FINGER_HALF_M, scripted_policy_for


def test_the_policys_finger_size_is_the_arms_closed_finger_boxes():
    centre, half = PandaArm(PandaArm.make_config()).boxes_at(np.zeros(3))
    fingers = np.abs(centre[1:, :2]) + half[1:, :2]  # both fingers' boxes, hand at yaw 0, fingers closed
    np.testing.assert_allclose(fingers.max(axis=0), PANDA_FINGER_HALF_M, atol=5e-5)
    inner = np.abs(centre[1:, 1]) - half[1:, 1]  # each finger's inner face, from the grip axis, at zero travel
    np.testing.assert_allclose(inner, -0.0013, atol=1e-4)  # the boxes meet there (1.3 mm overlap): gap = travel


def _scripted_success(env_id, num_worlds, seed=0):
    spec = ENVS[env_id]
    env = RobotTaskVectorEnv(num_envs=num_worlds, task=spec.task, robot=spec.robot,
                             max_episode_steps=spec.max_episode_steps, **dict(spec.kwargs))
    policy = scripted_policy_for(env_id)
    obs, _ = env.reset(seed=seed)
    success = np.zeros(num_worlds, dtype=bool)
    for _ in range(spec.max_episode_steps):
        obs, _, terminated, truncated, info = env.step(policy(obs))
    assert np.all(truncated)  # every episode ran its 50 steps (no world was cut short by a divergence)
    success = np.asarray(info["final_info"]["is_success"] if "final_info" in info else info["is_success"])
    env.close()
    return success


@pytest.mark.slow
@pytest.mark.parametrize("env_id", ["SuperDex/PandaPush-v0", "SuperDex/PandaPickAndPlace-v0",
                                    "SuperDex/PandaStack2-v0", "SuperDex/PandaStack3-v0"])
def test_scripted_policies_on_the_arm_solve_95_of_100_seeded_episodes(env_id):
    """World i of a batch seeded 0 is the single env seeded i (contract tests), so this is seeds 0..99. Measured:
    Push 99/100, PickAndPlace 100/100, Stack2 100/100, Stack3 96/100."""
    success = _scripted_success(env_id, 100)
    assert success.mean() >= 0.95, np.flatnonzero(~success)


@pytest.mark.parametrize("env_id", ["SuperDex/PandaPush-v0", "SuperDex/PandaPickAndPlace-v0",
                                    "SuperDex/PandaStack2-v0"])
def test_scripted_policies_on_the_arm_solve_seeded_episodes(env_id):
    success = _scripted_success(env_id, 8)
    assert success.all(), np.flatnonzero(~success)  # seeds 0..7 are among the measured successes


@pytest.mark.parametrize("batched", [False, True])
def test_render_frames_the_whole_arm(batched):
    """render()'s view is the task's with the robot's overrides: every link of the arm and the cube project inside
    the frame (the tasks' 0.9 m view shows only the hand); a caller's camera kwargs still win."""
    import gymnasium as gym

    env_id = "SuperDex/PandaPickAndPlace-v0"
    env = (gym.make_vec(env_id, num_envs=2, vectorization_mode="vector_entry_point", render_mode="rgb_array")
           if batched else gym.make(env_id, render_mode="rgb_array"))
    env.reset(seed=0)
    inner = env.unwrapped if not batched else env
    camera = inner._camera
    scene = inner.worlds.scene
    points = [np.asarray(scene.get_actor(h).get_center_of_mass_transform().translation)
              for h in inner.worlds.robot.arm.get_nested_link_actors()]
    points.append(np.asarray(inner.worlds.observations()["achieved_goal"])[0])
    pixels, depth = camera.project_points(np.array(points))
    assert np.all(depth > 0)
    assert np.all((pixels >= 0) & (pixels <= [camera.width, camera.height])), pixels
    frame = env.render()
    assert np.asarray(frame).ndim == (4 if batched else 3) or isinstance(frame, (tuple, list))
    env.close()
    if not batched:
        near = gym.make(env_id, render_mode="rgb_array", camera_distance=0.5)
        assert np.linalg.norm(near.unwrapped._camera.eye - near.unwrapped._camera.target) == pytest.approx(0.5)
        near.close()


def test_the_wrist_camera_rides_on_the_hand():
    """camera="wrist": each world's camera is the arm's wrist camera after every reset and step, its frames show
    the fingers (their segmentation ids in every frame) and the cube between them at the grasp; spaces pass the
    checker."""
    import gymnasium as gym
    from gymnasium.utils.env_checker import check_env

    env_id = "SuperDex/PandaPickAndPlace-v0"
    env = gym.make(env_id, obs_mode="state+rgb+segmentation", camera="wrist", image_size=48)
    check_env(env.unwrapped, skip_render_check=True)
    ids = {name: k for k, name in env.unwrapped.pixels.segmentation_ids.items()}
    policy = scripted_policy_for(env_id)
    obs, _ = env.reset(seed=0)
    looks, robot = env.unwrapped.pixels.looks, env.unwrapped.worlds.robot
    for step in range(12):
        eye, _, _ = robot.wrist_camera()
        np.testing.assert_array_equal(looks.cam_eye, eye)
        seg = obs["segmentation"][..., 0]
        assert np.isin([ids["panda/left_finger"], ids["panda/right_finger"]], seg).all(), step
        obs, *_ = env.step(policy({k: v[None] for k, v in obs.items()})[0])
    assert ids["cube"] in seg  # the policy closes on the cube by step 10
    env.close()


def test_the_wrist_camera_is_refused_on_a_robot_without_one_and_batches_bit_for_bit():
    import gymnasium as gym

    with pytest.raises(ValueError, match="camera='wrist'"):
        gym.make("SuperDex/PickAndPlace-v0", obs_mode="rgb", camera="wrist")
    kwargs = dict(obs_mode="rgb", camera="wrist", image_size=32, randomize=True)
    venv = gym.make_vec("SuperDex/PandaPickAndPlace-v0", num_envs=2, vectorization_mode="vector_entry_point",
                        **kwargs)
    batch, _ = venv.reset(seed=5)
    for w in range(2):
        single = gym.make("SuperDex/PandaPickAndPlace-v0", **kwargs)
        obs, _ = single.reset(seed=5 + w)
        np.testing.assert_array_equal(obs["rgb"], batch["rgb"][w])
        single.close()
    venv.close()
