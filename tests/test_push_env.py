"""SuperDex/Push-v0 and PushDense-v0: what is particular to Push (the contract every id keeps, checkers, batching,
HER rewards, replay, state, reset options, NaN actions: test_env_contract.py)."""

import gymnasium as gym
from gymnasium.vector.utils import batch_space
import numpy as np
import pytest

import superdex_gym  # noqa: F401  (registers the environments)
from superdex_gym.envs.core.config import V_MAX
from superdex_gym.envs.core.vector_env import RobotTaskVectorEnv
from superdex_gym.envs.scripted import scripted_push_action



def test_spaces_and_metadata():
    env = gym.make("SuperDex/Push-v0")
    assert env.spec.max_episode_steps == 50
    assert env.metadata["render_fps"] == 25  # = 1 / (physics_dt * substeps) = 1 / 0.04
    obs_space = env.observation_space
    assert set(obs_space.spaces) == {"observation", "achieved_goal", "desired_goal"}
    assert all(s.dtype == np.float32 for s in obs_space.spaces.values())
    assert env.action_space.shape == (4,) and env.action_space.low.min() == -1 and env.action_space.high.max() == 1
    obs, info = env.reset(seed=0)
    assert obs_space.contains(obs)
    assert set(info) >= {"is_success"}


def test_make_vec_is_native_batched_env():
    venv = gym.make_vec("SuperDex/Push-v0", num_envs=4)
    assert isinstance(venv, RobotTaskVectorEnv)
    assert venv.metadata["autoreset_mode"] == gym.vector.AutoresetMode.NEXT_STEP
    assert venv.worlds.scene.num_worlds == 4  # one engine scene, 4 worlds
    obs, info = venv.reset(seed=3)
    assert obs["observation"].shape == (4, 25) and info["_is_success"].all()
    assert venv.max_episode_steps == 50


def test_reset_options_and_never_solved_at_reset():
    env = gym.make("SuperDex/Push-v0")
    obs, info = env.reset(seed=0, options={"goal": [0.1, 0.1, 0.02], "object_pose": [-0.1, 0.05, 0.02]})
    np.testing.assert_allclose(obs["desired_goal"], [0.1, 0.1, 0.02], atol=1e-7)
    np.testing.assert_allclose(obs["achieved_goal"], [-0.1, 0.05, 0.02], atol=1e-6)
    with pytest.raises(ValueError, match="unknown reset options"):
        env.reset(options={"bogus": 1})
    with pytest.raises(ValueError, match="object_pose"):
        env.reset(options={"object_pose": [0, 0]})
    # positions outside the observation space's goal bounds, or a cube started inside the table, are refused
    with pytest.raises(ValueError, match="outside the desired_goal bounds"):
        env.reset(options={"goal": [5.0, 0.0, 0.02]})
    with pytest.raises(ValueError, match="outside the achieved_goal bounds"):
        env.reset(options={"object_pose": [0.0, -1.5, 0.02]})
    with pytest.raises(ValueError, match="inside the table"):
        env.reset(options={"object_pose": [0.0, 0.0, 0.0]})
    tilted = [0.15, 0.0, 0.02, 0.0, np.sin(np.pi / 8), 0.0, np.cos(np.pi / 8)]  # 45 deg: its edge dips to z < 0
    with pytest.raises(ValueError, match="inside the table"):
        env.reset(options={"object_pose": tilted})
    env.reset(options={"object_pose": [0.15, 0.0, 0.02 * np.sqrt(2) + 1e-4] + tilted[3:]})  # the same, lifted: fine
    env.reset(options={"object_pose": [0.6, 0.0, -0.38]})  # on the floor beside the table: fine
    # the gripper starts at home (0, 0, 0.02) with closed fingers (x half 1 cm, y half 1.2 cm, 5 cm tall)
    with pytest.raises(ValueError, match="inside the gripper"):
        env.reset(options={"object_pose": [0.0, 0.025, 0.02]})
    env.reset(options={"object_pose": [0.0, 0.035, 0.02]})  # beside the fingers: fine


def test_sampled_episodes_are_never_solved_and_keep_the_cube_off_the_gripper():
    """512 sampled episodes: goal beyond the success radius, cube >= 0.1 m (FetchPush's distance) from the
    gripper's home, both in the 0.3 m square, cube resting on the table, gripper at the cube's height."""
    venv = gym.make_vec("SuperDex/Push-v0", num_envs=512)
    obs, info = venv.reset(seed=0)
    cube, goal, grip = obs["achieved_goal"], obs["desired_goal"], obs["observation"][:, :3]
    assert not info["is_success"].any()
    assert np.linalg.norm(cube - goal, axis=1).min() >= 0.05
    assert np.linalg.norm(cube[:, :2], axis=1).min() >= 0.1
    assert np.abs(np.concatenate([cube[:, :2], goal[:, :2]])).max() <= 0.15
    np.testing.assert_allclose(cube[:, 2], 0.02, atol=1e-6)
    np.testing.assert_allclose(grip, np.tile([0.0, 0.0, 0.02], (512, 1)), atol=1e-6)
    # the keep-out distance is a kwarg of the task config; values that leave no room, or let the cube start on
    # the fingers, are refused
    with pytest.raises(ValueError, match="too little"):
        gym.make("SuperDex/Push-v0", cube_gripper_min_distance=0.2)
    with pytest.raises(ValueError, match="closed fingers"):
        gym.make("SuperDex/Push-v0", cube_gripper_min_distance=0.03)


def test_bad_reset_option_leaves_the_episode_and_the_generator_as_they_were():
    env = gym.make("SuperDex/Push-v0")
    twin = gym.make("SuperDex/Push-v0")
    obs, _ = env.reset(seed=3)
    twin.reset(seed=3)
    for options in ({"goal": [0.0, 0.0, 9.0]}, {"goal": [0.1, 0.1, 0.02], "object_pose": [0.0, 0.0, -0.01]}):
        with pytest.raises(ValueError):
            env.reset(options=options)
    a = np.array([0.3, -0.2, 0.1, 0.0])
    after, *_ = env.step(a)
    expected, *_ = twin.step(a)
    for key in after:
        np.testing.assert_array_equal(after[key], expected[key])
    np.testing.assert_array_equal(env.reset()[0]["desired_goal"], twin.reset()[0]["desired_goal"])
    venv = gym.make_vec("SuperDex/Push-v0", num_envs=200)
    for seed in range(5):
        obs, info = venv.reset(seed=1000 * seed)
        d = np.linalg.norm(obs["achieved_goal"] - obs["desired_goal"], axis=1)
        assert d.min() > 0.05 and not info["is_success"].any()  # 1000 resets, none solved
        assert np.abs(obs["desired_goal"][:, :2]).max() <= 0.15 + 1e-6  # the 0.3 m square


def test_out_of_range_actions_are_clipped():
    a = gym.make("SuperDex/Push-v0")
    b = gym.make("SuperDex/Push-v0")
    a.reset(seed=2)
    b.reset(seed=2)
    oa = a.step(np.array([5.0, -3.0, 2.0, 9.0]))[0]
    ob = b.step(np.array([1.0, -1.0, 1.0, 1.0]))[0]
    np.testing.assert_array_equal(oa["observation"], ob["observation"])


def test_physics_kwargs_and_bad_kwargs():
    env = gym.make("SuperDex/Push-v0", physics_dt=0.01, substeps=4, cube_size=0.05, cube_mass=0.1, friction=0.8,
                   goal_range=0.2, distance_threshold=0.04)
    obs, _ = env.reset(seed=0)
    assert env.unwrapped.worlds.task.cube.get_mass() == pytest.approx(0.1)
    assert env.metadata["render_fps"] == 25
    assert np.abs(obs["desired_goal"][:2]).max() <= 0.1 + 1e-6
    with pytest.raises(ValueError, match="physics_dt"):
        gym.make("SuperDex/Push-v0", physics_dt=-1)
    with pytest.raises(ValueError, match="substeps"):
        gym.make("SuperDex/Push-v0", substeps=0)
    with pytest.raises(ValueError, match="goal_range"):
        gym.make("SuperDex/Push-v0", goal_range=0.05)
    with pytest.raises(ValueError, match="solver_initial_guess"):
        gym.make("SuperDex/Push-v0", solver_initial_guess="warm")


def test_solver_initial_guess_kwarg():
    import superdex_gym.sim as mochi

    default = gym.make("SuperDex/Push-v0").unwrapped.worlds.scene
    assert default.get_solver_params().non_linear_solver.initial_guess is mochi.InitialGuess.CONSTANT_VELOCITY_AND_TARGETS
    ref = gym.make("SuperDex/Push-v0", solver_initial_guess="latest_solution").unwrapped.worlds.scene
    assert ref.get_solver_params().non_linear_solver.initial_guess is mochi.InitialGuess.LATEST_SOLUTION


def test_solver_line_search_kwarg():
    default = gym.make("SuperDex/Push-v0").unwrapped.worlds.scene
    assert default.get_solver_params().non_linear_solver.line_search_max_iter == 2
    engine = gym.make("SuperDex/Push-v0", solver_line_search_max_iter=4).unwrapped.worlds.scene
    assert engine.get_solver_params().non_linear_solver.line_search_max_iter == 4
    for bad in (0, 1.5, -3):
        with pytest.raises(ValueError, match="line_search_max_iter"):
            gym.make("SuperDex/Push-v0", solver_line_search_max_iter=bad)


def test_terminate_on_success():
    env = gym.make("SuperDex/Push-v0", terminate_on_success=True)
    obs, _ = env.reset(seed=0)
    for _ in range(50):
        obs, r, term, trunc, info = env.step(scripted_push_action(obs))
        if term:
            break
    assert term and info["is_success"] and r == 0.0


def test_vector_autoreset_next_step():
    venv = gym.make_vec("SuperDex/Push-v0", num_envs=2, max_episode_steps=3)
    obs, _ = venv.reset(seed=0)
    first = obs["observation"].copy()
    for k in range(3):
        obs, r, te, tr, _ = venv.step(np.zeros((2, 4)))
    assert tr.all() and not te.any()
    obs, r, te, tr, _ = venv.step(np.ones((2, 4)))  # the autoreset step: new episodes, reward 0, action ignored
    assert not tr.any() and not te.any() and np.all(r == 0.0)
    assert not np.allclose(obs["observation"], first)  # a fresh episode, not a replay of the first one
    np.testing.assert_allclose(obs["observation"][:, :3], [[0, 0, 0.02]] * 2, atol=1e-6)  # gripper at home


def test_random_actions_stay_finite_and_above_table():
    """10 000 random-action steps (100 worlds x 100 steps, with autoresets): finite, cube never below the table."""
    venv = gym.make_vec("SuperDex/Push-v0", num_envs=100)
    obs, _ = venv.reset(seed=0)
    rng = np.random.default_rng(0)
    half = 0.02
    for _ in range(100):
        obs, r, te, tr, _ = venv.step(rng.uniform(-1, 1, (100, 4)))
        for v in obs.values():
            assert np.all(np.isfinite(v))
        on_table = np.all(np.abs(obs["achieved_goal"][:, :2]) < 0.4, axis=1)
        # a cube on the table keeps its centre above the top (penalty band: a few mm)
        assert np.all(obs["achieved_goal"][on_table, 2] > half - 0.01)


@pytest.mark.parametrize("mode", ["rgb_array", "depth_array"])
def test_rendering(mode):
    env = gym.make("SuperDex/Push-v0", render_mode=mode, render_width=160, render_height=120)
    env.reset(seed=0)
    frame = env.render()
    if mode == "rgb_array":
        assert frame.shape == (120, 160, 3) and frame.dtype == np.uint8
        assert frame.std() > 10  # a picture, not a blank
    else:
        assert frame.shape == (120, 160) and np.isfinite(frame).any()
    default = gym.make("SuperDex/Push-v0", render_mode="rgb_array")
    default.reset(seed=0)
    assert default.render().shape == (480, 480, 3)


def test_human_mode_without_pygame_says_what_to_install():
    pytest.importorskip("gymnasium")
    try:
        import pygame  # noqa: F401
        pytest.skip("pygame is installed here")
    except ImportError:
        pass
    from superdex_gym.envs.core.env import RobotTaskEnv

    with pytest.raises(ValueError, match="pip install 'superdex-gym\\[human\\]'"):
        RobotTaskEnv(render_mode="human", task="push:PushTask")


def test_scripted_policy_solves_push():
    """The scripted policy solves >= 90% of 100 seeded episodes (batched: 100 worlds, seeds 0..99)."""
    venv = gym.make_vec("SuperDex/Push-v0", num_envs=100)
    obs, info = venv.reset(seed=0)
    success = np.zeros(100, dtype=bool)
    for _ in range(50):
        obs, r, te, tr, info = venv.step(scripted_push_action(obs))
    success = info["is_success"]
    assert success.mean() >= 0.9, success.mean()


def test_sb3_vec_env_adapter():
    from stable_baselines3.common.vec_env import VecEnv

    from superdex_gym.envs.adapters.sb3 import SuperDexSB3VecEnv

    venv = SuperDexSB3VecEnv(num_envs=2, seed=0)
    assert isinstance(venv, VecEnv)
    obs = venv.reset()
    assert obs["observation"].shape == (2, 25)
    dones_seen = False
    for k in range(50):
        obs, rewards, dones, infos = venv.step(np.zeros((2, 4), dtype=np.float32))
        if dones.any():
            dones_seen = True
            assert infos[0]["TimeLimit.truncated"] and "terminal_observation" in infos[0]
    assert dones_seen
    r = venv.env_method("compute_reward", np.zeros((3, 3)), np.ones((3, 3)), [{}] * 3, indices=[0])[0]
    assert r.shape == (3,) and np.all(r == -1.0)


def test_batched_worlds_bit_identical_to_single_envs_in_float64():
    """Each world of a batch computes exactly what it computes alone: same float64 poses to the last bit.

    12 worlds x 30 random steps bring fingers and cubes into contact in several worlds at once. Newton solves a
    world's coupled (dense) system only where that world's coupling blocks are non-zero; when the dense path
    was chosen for every world of a batch as soon as any world had a coupling, 11 of these 12 worlds drifted
    from their single-env runs at the round-off level (measured), so the check can fail."""
    n, steps = 12, 30
    rng = np.random.default_rng(0)
    actions = rng.uniform(-1, 1, (steps, n, 4))

    def poses(worlds):
        actors = [worlds.task.cube, *worlds.robot.actors]
        s = worlds.scene
        return np.concatenate([s.get_actor_translations(actors).reshape(worlds.num_worlds, -1),
                               s.get_actor_rotations(actors).reshape(worlds.num_worlds, -1)], axis=1)

    venv = gym.make_vec("SuperDex/Push-v0", num_envs=n)
    venv.reset(seed=10)
    batched = []
    for a in actions:
        venv.step(a)
        batched.append(poses(venv.worlds))
    batched = np.array(batched)
    for i in range(n):
        env = gym.make("SuperDex/Push-v0")
        env.reset(seed=10 + i)
        single = []
        for a in actions[:, i]:
            env.step(a)
            single.append(poses(env.unwrapped.worlds)[0])
        np.testing.assert_array_equal(batched[:, i], np.array(single), err_msg=f"world {i}")


def _squeeze(**kwargs) -> tuple[float, float]:
    """Max cube speed [m/s] and height [m] over 10 physics steps after the closed fingers, resting on the top of a
    cube on the table, are commanded 3.5 cm down into it (the situation behind a launch seen about once per 10^5
    random-action world steps: a finger driven into the cube squeezes it against the table)."""
    env = gym.make_vec("SuperDex/Push-v0", num_envs=1, **kwargs)
    env.reset(seed=0)
    w = env.worlds
    w.reset_worlds(np.array([0]), [np.random.default_rng(0)], {"object_pose": [0.15, 0.0, 0.02]})
    on_top = np.array([[0.15, 0.0, 0.0405]])  # grip point (between the finger tips) 0.5 mm above the cube
    w.robot.place(on_top, np.zeros(1), np.arange(1))
    w.robot.set_targets(on_top - [0.0, 0.0, 0.035], np.zeros(1))
    speed = height = 0.0
    for _ in range(10):
        w.scene.step(w.config.physics_dt)
        lin, _ = w.scene.get_actor_velocities([w.task.cube])
        speed = max(speed, float(np.linalg.norm(lin)))
        height = max(height, float(w.scene.get_actor_translations([w.task.cube])[0, 0, 2]))
    return speed, height


def test_gripper_force_cap_keeps_a_squeezed_cube_from_being_launched():
    # Uncapped (1e6 N/m drives, kN of squeeze) and from the constant-velocity guess, the cube is thrown up: 30 cm
    # at 2.4 m/s on one machine, 24 cm at 1.99 m/s on another with the same numpy / scipy (measured; the stiff
    # squeeze amplifies BLAS round-off). Capped at 50 N it stays on the table (2.7 cm centre height at most,
    # < 0.82 m/s, measured on both), with either guess. Bounds: the gripper's own top speed (1.25 m/s: faster is a
    # launch, not a push), one cube size above rest for the capped cube and 10 cm (5 cube sizes) for the thrown
    # one. Since Newton returns its lowest-energy iterate when it stops (issue 16), the defaults release the
    # squeeze as a 1.3 cm hop at 0.61 m/s (centre 3.4 cm) where the last iterate held the cube 7 mm inside the
    # table (centre 2.4 cm, 0.75 m/s); the force-cap-alone run stays at 1.8 cm.
    speed, height = _squeeze(gripper_max_force=None, solver_initial_guess="CONSTANT_VELOCITY")
    assert speed > 1.25 and height > 0.1
    for kwargs in ({"solver_initial_guess": "CONSTANT_VELOCITY"}, {}):  # the force cap alone; the defaults
        speed, height = _squeeze(**kwargs)
        assert speed < 1.25 and height < 0.02 + 0.02
    for bad in (0.0, -5.0, float("nan"), "strong"):
        with pytest.raises(ValueError, match="gripper_max_force"):
            gym.make("SuperDex/Push-v0", gripper_max_force=bad)


@pytest.mark.parametrize("speed", [4.0, 10.0])
def test_walls_hold_a_cube_thrown_at_them(speed):
    """A cube on the floor thrown at a wall at up to V_MAX (10 m/s, the observation's velocity bound) stays in the
    arena: the walls are thick enough that one step's travel (20 cm) never carries it past their middle."""
    assert speed <= V_MAX
    venv = gym.make_vec("SuperDex/Push-v0", num_envs=1)
    venv.reset(seed=0)
    w = venv.worlds
    w.reset_worlds(np.array([0]), [np.random.default_rng(0)], {"object_pose": [0.7, 0.0, -0.38]})
    w.scene.set_actor_velocities([w.task.cube], np.array([[[speed, 0.0, 0.0]]]), np.zeros((1, 1, 3)))
    low, high = w.observation_bounds()
    for _ in range(40):
        w.scene.step(w.config.physics_dt)
        x = w.scene.get_actor_translations([w.task.cube])[0, 0]
        assert x[0] < 1.0 - 0.01  # the inner face at arena_half = 1 m, minus the cube's half size (2 cm) + band
        assert np.all(x >= low[3:6]) and np.all(x <= high[3:6])
