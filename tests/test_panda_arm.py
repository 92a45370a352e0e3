"""The Panda arm robot (envs/robots/panda_arm.py) on Reach: Gymnasium's checker in every control mode, the scripted
reach through "ee" control, joint limits under random and limit-seeking actions, the IK, bad input named, seeded
replay and the native vector env against single envs, bit for bit."""

import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import superdex_gym  # noqa: F401 (registers the ids)
from superdex_gym.envs.robots import panda_arm as pa
from superdex_gym.envs.robots.base import Robot
from superdex_gym.sim import lie
from superdex_gym.sim.articulated import batch
from superdex_gym.suite import scripted_policy

ENV_ID = "SuperDex/PandaReach-v0"
MODES = {"ee": 4, "ee_yaw": 5, "joints": 8}
CONTROL_DT = 0.04  # s, the worlds' default control step (2 x 0.02 s)
# the most a joint target moves in one control step (Franka's velocity limits): a drive that follows its target
# lags it by less than this, so a target clipped to a limit holds the joint within it of the limit
LIMIT_TOL = pa.MAX_VELOCITY * CONTROL_DT


def _robot(env):
    return env.unwrapped.worlds.robot


def test_the_arm_implements_the_robot_interface():
    assert issubclass(pa.PandaArm, Robot) and not pa.PandaArm.__abstractmethods__
    robot = pa.PandaArm(pa.PandaArm.make_config())
    lo, hi = robot.workspace()
    np.testing.assert_array_equal(lo, pa.WORKSPACE[0])
    np.testing.assert_array_equal(hi, pa.WORKSPACE[1])
    assert robot.max_opening_m == pytest.approx(0.08)
    assert robot.clone().config == robot.config
    centres, halves = robot.boxes_at(np.array([0.0, 0.0, 0.15]))
    assert centres.shape == halves.shape == (3, 3)
    # the closed fingers' boxes end at the grip point (their lowest corner), the hand above them
    assert np.min(centres[:, 2] - halves[:, 2]) == pytest.approx(0.15, abs=1e-12)
    assert 0.0 < robot.footprint_m() < robot.reach_margin_m() < 0.15


@pytest.mark.parametrize("control", MODES)
def test_check_env_passes_in_every_control_mode(control):
    env = gym.make(ENV_ID, control=control)
    assert env.action_space.shape == (MODES[control],)
    assert env.observation_space["observation"].shape == (10 + 14,)  # Reach's 10 + 7 joint positions, 7 velocities
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(env.unwrapped, skip_render_check=True)


def test_dense_id_is_the_same_arm_with_distance_rewards():
    env = gym.make("SuperDex/PandaReachDense-v0")
    obs, _ = env.reset(seed=4)
    obs, reward, *_ = env.step(np.zeros(4))
    assert reward == pytest.approx(-np.linalg.norm(obs["achieved_goal"] - obs["desired_goal"]), abs=1e-6)


def test_scripted_reach_solves_95_of_100_seeded_episodes_through_ee_control():
    """Worlds 0..99 of one batch are the single envs seeded 0..99 (vector == single, below); the scripted Reach
    policy is the floating gripper's, unchanged: 100/100 within 7 steps measured."""
    policy = scripted_policy(ENV_ID)
    venv = gym.make_vec(ENV_ID, num_envs=100)
    obs, _ = venv.reset(seed=0)
    solved = np.zeros(100, dtype=bool)
    for _ in range(12):
        obs, _, _, _, info = venv.step(policy(obs))
        solved |= info["is_success"]
    assert solved.sum() >= 95


def test_the_hand_keeps_pointing_down_and_observes_the_joints():
    """Under saturated random "ee" actions the hand points down to within the IK's residual at its joint targets
    plus the drives' lag (each revolute joint turns the hand by at most its own deviation: unit axes); the
    residual of 2 Gauss-Newton steps per control step stays below 0.01 rad (measured 3.3 mrad, tilt 0.4 degrees);
    the observation's joint parts are the engine's pose and velocities."""
    env = gym.make(ENV_ID)
    obs, _ = env.reset(seed=1)
    robot = _robot(env)
    rng = np.random.default_rng(0)
    for _ in range(20):
        obs, *_ = env.step(np.sign(rng.uniform(-1, 1, 4)))
        rot = env.unwrapped.worlds.scene.get_actor_rotations([robot.hand])[0, 0]
        q, qd = batch.joint_state(robot.arm)
        commanded = q.copy()
        commanded[0, :7] = robot._target[0]
        _, target_rot = pa.hand_grip(robot.model, commanded)
        residual = np.linalg.norm(lie.log_so3(target_rot[0] @ pa.R_DOWN.T))
        assert residual < 0.01
        tilt = np.arccos(np.clip(-rot[2, 2], -1.0, 1.0))
        assert tilt <= residual + np.abs(q[0, :7] - robot._target[0]).sum() + 1e-12
        np.testing.assert_array_equal(obs["observation"][10:17], q[0, :7].astype(np.float32))
        np.testing.assert_array_equal(obs["observation"][17:24], qd[0, :7].astype(np.float32))


def test_ee_yaw_turns_the_hand_by_the_commanded_rate():
    """+1 on the yaw rate for 5 steps commands 5 x 0.1 rad; after 3 steps at rest the hand is there to 1e-4 rad (each
    step's Gauss-Newton iterations from the last targets shrink the residual quadratically: 5e-7 rad measured)."""
    env = gym.make(ENV_ID, control="ee_yaw")
    env.reset(seed=2)
    robot = _robot(env)
    for _ in range(5):
        env.step(np.array([0.0, 0.0, 0.0, 1.0, -1.0]))
    for _ in range(3):  # the hand settles on the last target
        env.step(np.array([0.0, 0.0, 0.0, 0.0, -1.0]))
    rot = env.unwrapped.worlds.scene.get_actor_rotations([robot.hand])[0, 0]
    yaw = lie.log_so3(rot @ pa.R_DOWN.T)
    assert yaw[2] == pytest.approx(0.5, abs=1e-4) and np.linalg.norm(yaw[:2]) < 1e-4


@pytest.mark.parametrize("control", MODES)
def test_joint_limits_are_held(control):
    """World 0 pushes every joint toward its nearer limit at full rate ("joints") or takes saturated random actions
    ("ee" modes), world 1 random actions: the commanded targets never leave the limits, the joints stay within one
    control step's travel of them, and the limit-seeking world does reach a limit (the clip is exercised)."""
    env = gym.make_vec(ENV_ID, num_envs=2, control=control)
    obs, _ = env.reset(seed=3)
    robot = env.worlds.robot
    rng = np.random.default_rng(1)
    q0 = batch.joint_state(robot.arm)[0][0, :7]
    toward = np.where(pa.UPPER - q0 < q0 - pa.LOWER, 1.0, -1.0)
    reached = False
    for _ in range(25):
        actions = rng.uniform(-1, 1, (2, MODES[control]))
        actions[0] = np.sign(actions[0])
        if control == "joints":
            actions[0, :7] = toward
        env.step(actions)
        q = batch.joint_state(robot.arm)[0][:, :7]
        assert np.all(robot._target >= pa.LOWER) and np.all(robot._target <= pa.UPPER)
        assert np.all(q >= pa.LOWER - LIMIT_TOL) and np.all(q <= pa.UPPER + LIMIT_TOL)
        reached |= bool(np.any(np.isclose(robot._target[0], np.where(toward > 0, pa.UPPER, pa.LOWER))))
    if control == "joints":
        assert reached


def test_ik_solves_reachable_poses_to_round_off():
    """Poses sampled inside the limits around the home posture, their grip points and hand rotations as targets:
    the DLS IK from home_joints lands on them (residual < 1e-6 m / rad after its check iterations)."""
    model = pa.arm_model()
    rng = np.random.default_rng(0)
    q = np.zeros((20, model.num_dofs))
    q[:, :7] = np.clip(np.asarray(pa.HOME_JOINTS) + rng.uniform(-0.4, 0.4, (20, 7)), pa.LOWER, pa.UPPER)
    grip, rot = pa.hand_grip(model, q)
    seed = np.zeros_like(q)
    seed[:, :7] = pa.HOME_JOINTS
    solved, _, _ = pa.solve_ik(model, seed, grip, rot, pa.IK_CHECK_ITERATIONS, np.asarray(pa.HOME_JOINTS))
    seed[:, :7] = solved
    got, got_rot = pa.hand_grip(model, seed)
    assert np.max(np.linalg.norm(got - grip, axis=1)) < 1e-6
    assert np.max(np.linalg.norm(lie.log_so3(got_rot @ np.swapaxes(rot, -1, -2)), axis=1)) < 1e-6
    assert np.all(solved >= pa.LOWER) and np.all(solved <= pa.UPPER)


def test_the_default_workspace_and_home_are_reachable_pointing_down():
    config = pa.PandaArm.make_config()
    assert pa.unreachable_points(config) is None
    model = pa.arm_model()
    _, residual = pa.reach_pose(model, np.array([[0.0, 0.0, 0.15], [0.2, 0.2, 0.005], [-0.2, -0.2, 0.3]]),
                                pa.HOME_JOINTS)
    assert np.all(residual < pa.IK_CHECK_TOL)


@pytest.mark.parametrize("kwargs, match", [
    ({"control": "cartesian"}, "control must be one of"),
    ({"control": 3}, "control must be one of"),
    ({"home_joints": (0.0, -0.785, 0.0, 0.5, 0.0, 1.57, 0.785)}, r"home_joints\[3\] = 0.5 rad lies outside"),
    ({"home_joints": (0.0, 1.0)}, "home_joints must be 7"),
    ({"workspace": ((-0.2, -0.2, 0.005), (0.9, 0.2, 0.3))}, "workspace .* is beyond the arm's reach"),
    ({"workspace": ((-0.2, -0.2, -0.1), (0.2, 0.2, 0.3))}, "workspace low z"),
    ({"workspace": (0.2, 0.2)}, r"workspace must be \(low \(3,\), high \(3,\)\)"),
    ({"max_step": 0.0}, r"max_step must be in \(0, 0.5\]"),
    ({"max_step": float("nan")}, r"max_step must be in \(0, 0.5\]"),
    ({"max_step": 0.6}, r"max_step must be in \(0, 0.5\]"),
])
def test_bad_kwargs_raise_naming_the_argument(kwargs, match):
    with pytest.raises(ValueError, match=match):
        gym.make(ENV_ID, **kwargs)
    env = gym.make(ENV_ID)  # nothing was left behind: a good make works
    env.reset(seed=0)
    env.step(np.zeros(4))


def test_max_step_scales_the_ee_target_per_unit_action():
    """The joint target of one step of +x is the IK of the grip point moved by max_step (2 cm), not by the default
    5 cm. From home, Franka's joint velocity limits let the grip move at most 2.5 cm along +x in a 25 Hz step (the
    whole joint step scaled to the fastest joint's cap), so a larger max_step is capped there."""
    env = gym.make(ENV_ID, max_step=0.02)
    env.reset(seed=0)
    robot = env.unwrapped.worlds.robot
    grip, _ = robot.grip_point()
    env.step(np.array([1.0, 0.0, 0.0, 0.0]))
    q = np.concatenate([robot._target, np.zeros((1, robot.model.num_dofs - pa.ARM))], axis=1)
    reached, _ = pa.hand_grip(robot.model, q)
    np.testing.assert_allclose(reached - grip, [[0.02, 0.0, 0.0]], rtol=0, atol=1e-4)  # the IK's few iterations


def test_a_joints_action_of_the_wrong_length_raises_and_steps_nothing():
    env = gym.make(ENV_ID, control="joints")
    obs, _ = env.reset(seed=5)
    state = env.unwrapped.get_state()
    for bad in (np.zeros(7), np.zeros(4), np.zeros(9)):
        with pytest.raises(ValueError, match=r"action must have shape \(8,\)"):
            env.step(bad)
    after = env.unwrapped.get_state()
    np.testing.assert_array_equal(after["worlds"]["robot"]["target"], state["worlds"]["robot"]["target"])
    obs2, *_ = env.step(np.zeros(8))  # still usable
    assert env.observation_space.contains(obs2)


@pytest.mark.parametrize("control", ["ee", "joints"])
def test_same_seed_gives_bit_identical_trajectories(control):
    actions = np.random.default_rng(7).uniform(-1, 1, (12, MODES[control]))
    runs = []
    for _ in range(2):
        env = gym.make(ENV_ID, control=control)
        obs, _ = env.reset(seed=11)
        trajectory = [obs["observation"].copy(), obs["desired_goal"].copy()]
        for a in actions:
            obs, reward, *_ = env.step(a)
            trajectory += [obs["observation"].copy(), np.float32(reward)]
        runs.append(trajectory)
    for a, b in zip(*runs):
        np.testing.assert_array_equal(a, b)


def test_vector_env_equals_single_envs_bit_for_bit_with_ee_yaw():
    """gym.make_vec serves the arm natively: W = 3 worlds stepped together equal the same worlds stepped alone."""
    n, steps = 3, 8
    venv = gym.make_vec(ENV_ID, num_envs=n, control="ee_yaw")
    assert type(venv).__name__ == "RobotTaskVectorEnv"
    actions = np.random.default_rng(2).uniform(-1, 1, (steps, n, 5))
    obs, _ = venv.reset(seed=20)
    batched = [obs]
    for a in actions:
        batched.append(venv.step(a)[0])
    for i in range(n):
        env = gym.make(ENV_ID, control="ee_yaw")
        single = [env.reset(seed=20 + i)[0]]
        single += [env.step(a)[0] for a in actions[:, i]]
        for b, s in zip(batched, single):
            for key in s:
                np.testing.assert_array_equal(b[key][i], s[key])


def test_soak_policies_on_the_arm_break_nothing():
    """The soak's random and adversarial policies (superdex_gym.soak) on 16 worlds x 40 steps: no NaN, no exception,
    nothing outside the observation space, the arena or a static body, no substep undone or diverged."""
    from superdex_gym.soak import soak

    counts = soak(ENV_ID, world_steps=640, num_worlds=16, seed=0)
    for key in ("nan", "exceptions", "obs_outside_space", "outside_arena", "inside_static", "diverged_substeps",
                "physics_diverged"):
        assert counts[key] == 0, key
    assert counts["world_steps"] >= 640 and counts["max_tunnelling_ratio"] < 1.0


def test_the_links_collide_with_the_table():
    """"joints" actions tilting the shoulder and elbow down drive the hand into the table: the table stops it (the
    grip point stays put over the last steps while the joint targets stay 0.05 rad ahead) with the links' lowest
    corner less than the default contact's 2 x 5 mm ramp below the top (measured 7.2 mm: the uncapped drives
    compress the ramp)."""
    env = gym.make(ENV_ID, control="joints")
    env.reset(seed=0)
    robot, scene = _robot(env), env.unwrapped.worlds.scene
    action = np.zeros(8)
    action[[1, 3]] = 1.0
    heights = []
    for _ in range(20):
        obs, _, _, truncated, info = env.step(action)
        assert not truncated and not info["physics_diverged"]
        pos, rot = scene.get_actor_translations(robot.links)[0], scene.get_actor_rotations(robot.links)[0]
        lowest = min((link.get_shape().vertices @ rot[k].T + pos[k])[:, 2].min() for k, link in enumerate(robot.links))
        assert lowest > -2 * 0.005
        heights.append(obs["observation"][2])
    assert min(heights) < 0.0  # it did reach the table
    assert np.ptp(heights[-4:]) < 1e-3
    q = batch.joint_state(robot.arm)[0][0, :7]
    assert robot._target[0, 1] - q[1] > 0.01  # the shoulder drive still pushes: the table holds it back


def test_free_fingers_are_driven_as_one_at_the_rate_limit():
    """block_gripper=False: the finger command opens the pair at 16 mm per control step to 8 cm and closes it again;
    both fingers travel alike (mirrored drives with one target: equal to round-off) and reach half the commanded
    opening to within 0.1 mm (the 1e3 N/m drives on 15 g fingers settle in a substep; 4 um measured)."""
    env = gym.make(ENV_ID, block_gripper=False)
    env.reset(seed=0)
    robot = _robot(env)
    expected = 0.0
    for command in [1.0] * 6 + [-1.0] * 3:
        obs, *_ = env.step(np.array([0.0, 0.0, 0.0, command]))
        expected = float(np.clip(expected + 0.016 * command, 0.0, 0.08))
        q = batch.joint_state(robot.arm)[0][0, 7:]
        assert robot._opening[0] == pytest.approx(expected, abs=1e-12)
        assert abs(q[0] - q[1]) < 1e-9
        assert q[0] == pytest.approx(expected / 2, abs=1e-4)
        np.testing.assert_array_equal(obs["observation"][3:5], np.array([q[0], -q[1]], dtype=np.float32))


def test_a_state_with_joint_targets_past_the_limits_is_refused():
    env = gym.make(ENV_ID)
    env.reset(seed=6)
    state = env.unwrapped.get_state()
    bad = {**state, "worlds": {**state["worlds"], "robot": dict(state["worlds"]["robot"])}}
    bad["worlds"]["robot"]["target"] = state["worlds"]["robot"]["target"].copy()
    bad["worlds"]["robot"]["target"][0, 3] = 0.5  # joint 4's upper limit is -0.0698 rad
    with pytest.raises(ValueError, match=r"\['target'\] must lie inside the joint limits"):
        env.unwrapped.set_state(bad)
    np.testing.assert_array_equal(env.unwrapped.get_state()["worlds"]["robot"]["target"],
                                  state["worlds"]["robot"]["target"])
    env.unwrapped.set_state(state)  # the good one still restores
    env.step(np.zeros(4))
