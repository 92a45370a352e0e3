"""Camera observations (``obs_mode``, ``image_size``, ``camera``, ``randomize``) and the batched compiled rasterizer.

Oracles: the numpy renderer (`SceneView`, the frames ``render()`` gave before the kernel), the camera's projection
(a point projected by `Camera.project_points` lands on the pixel of its actor), the closed-form depth of the table
plane seen straight from above, and single environments with the same seeds (the vector env's frames).
"""

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import superdex_gym  # noqa: F401  (registers the ids)
from superdex_gym.envs.core import pixels
from superdex_gym.envs.rendering import batch_view
from superdex_gym.envs.rendering.batch_view import WorldsView
from superdex_gym.envs.rendering.scene_view import SceneView, default_camera

MODES = ["state", "rgb", "depth", "rgbd", "segmentation", "state+rgb", "state+rgbd+segmentation"]


def stepped_env(env_id, seed=3, steps=4, **kwargs):
    env = gym.make(env_id, **kwargs)
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        env.step(rng.uniform(-1, 1, 4).astype(np.float32))
    return env


# -- fidelity to the numpy renderer -------------------------------------------------------------------------------

# The kernel repeats the numpy renderer's arithmetic operation for operation (float64 edge functions, float32
# nearness, lighting and packing; raster_kernel's docstring), so frames are expected equal. The one source of
# difference left is the order of the three products in a vertex transform (numpy's matmul may sum them in another
# order): a vertex 1 ulp (~1e-16 m) apart moves an edge by ~1e-13 px, which flips a pixel only when its centre lies
# that close to an edge or a shadow-map texel boundary. So: depth equal to float32 rounding, and at most 0.1% of the
# pixels (a few per frame at 64 x 64) may differ in colour at all. Measured on this machine: no pixel differs.
MAX_DIFFERENT_PIXELS = 0.001


@pytest.mark.parametrize("env_id,size", [("SuperDex/Push-v0", 64), ("SuperDex/Stack3-v0", 84),
                                         ("SuperDex/Throw-v0", 128), ("SuperDex/Reach-v0", 97)])
def test_kernel_frames_equal_the_numpy_renderer(env_id, size):
    worlds = stepped_env(env_id).unwrapped.worlds
    camera = default_camera(size, size, **worlds.task.camera)
    oracle = SceneView(worlds, camera=camera)
    rgb_np, depth_np = oracle.renderer.render(oracle.meshes(0))
    view = WorldsView(worlds, camera)
    rgb, depth, _ = view.render(view.default_looks(1))
    differs = np.any(rgb[0] != rgb_np, axis=2)
    assert differs.mean() <= MAX_DIFFERENT_PIXELS
    assert np.array_equal(np.isinf(depth[0]), np.isinf(depth_np))
    finite = np.isfinite(depth_np)
    np.testing.assert_allclose(depth[0][finite], depth_np[finite], rtol=2 ** -22)


def test_observation_frames_equal_the_numpy_renderer_with_their_shadow_map():
    """Observations use a shadow map of max(64, image size) texels (the numpy renderer's default is 256): given the
    same one, the numpy renderer draws the observation's frame."""
    from superdex_gym.envs.rendering.renderer import Renderer
    from superdex_gym.envs.rendering.shading import ShadingParams

    env = stepped_env("SuperDex/Push-v0", obs_mode="rgb", image_size=64)
    obs = env.unwrapped._obs()
    p = env.unwrapped.pixels
    assert p.view.shading.shadow_map_size == 64
    oracle = SceneView(env.unwrapped.worlds, camera=p.camera)
    rgb_np, _ = Renderer(camera=p.camera, shading=ShadingParams(shadow_map_size=64)).render(oracle.meshes(0))
    assert np.any(obs["rgb"] != rgb_np, axis=2).mean() <= MAX_DIFFERENT_PIXELS


def test_frames_over_steps_equal_the_numpy_renderer():
    """Frames after the first reuse the world's kept static and marker layers and redraw only the tiles the moving
    bodies or their shadows reach (raster_kernel.render_worlds): each step's frame is still the numpy renderer's."""
    from superdex_gym.envs.rendering.renderer import Renderer
    from superdex_gym.envs.rendering.shading import ShadingParams

    env = stepped_env("SuperDex/PickAndPlace-v0", seed=4, steps=1, obs_mode="rgb", image_size=64)
    p = env.unwrapped.pixels
    oracle = SceneView(env.unwrapped.worlds, camera=p.camera)
    renderer = Renderer(camera=p.camera, shading=ShadingParams(shadow_map_size=64))
    rng = np.random.default_rng(4)
    for _ in range(4):
        obs = env.step(rng.uniform(-1, 1, 4).astype(np.float32))[0]
        rgb_np, _ = renderer.render(oracle.meshes(0))
        assert np.any(obs["rgb"] != rgb_np, axis=2).mean() <= MAX_DIFFERENT_PIXELS


def test_kept_layers_give_the_frames_of_a_fresh_view():
    """The layers kept between calls are redrawn when what they depend on changes (randomized colours, light and
    camera at a reset, a new goal): frames equal a new view's, which keeps nothing, bit for bit; and an rgb-only
    call draws the same rgb."""
    venv = gym.make_vec("SuperDex/Stack2-v0", num_envs=3, vectorization_mode="vector_entry_point",
                        obs_mode="rgbd+segmentation", image_size=40, randomize=True)
    venv.reset(seed=5)
    base = venv.unwrapped
    rng = np.random.default_rng(5)
    for step in range(6):
        actions = rng.uniform(-1, 1, (3, 4)).astype(np.float32)
        obs = venv.step(actions)[0] if step != 3 else venv.reset(seed=50)[0]  # a reset draws new looks and goals
        fresh = WorldsView(base.worlds, base.pixels.camera, base.pixels.view.shading,
                           empty_depth=base.pixels.camera.far_m)
        rgb, depth, seg = fresh.render(base.pixels.looks)
        assert np.array_equal(obs["rgb"], rgb) and np.array_equal(obs["depth"][..., 0], depth)
        assert np.array_equal(obs["segmentation"][..., 0], seg)
        rgb_only, _, _ = base.pixels.view.render(base.pixels.looks, want_geometry=False)
        assert np.array_equal(rgb_only, rgb)


def test_render_matches_the_numpy_renderer_at_480():
    env = stepped_env("SuperDex/Push-v0", render_mode="rgb_array")
    frame = env.render()
    worlds = env.unwrapped.worlds
    oracle = SceneView(worlds, camera=env.unwrapped._camera)
    assert frame.shape == (480, 480, 3) and frame.dtype == np.uint8
    assert np.any(frame != oracle.rgb(0), axis=2).mean() <= MAX_DIFFERENT_PIXELS


# -- spaces and the checker -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", MODES)
def test_spaces_are_exact_and_check_env_passes(mode):
    env = gym.make("SuperDex/Push-v0", obs_mode=mode, image_size=(24, 32))
    check_env(env.unwrapped, skip_render_check=True)
    obs, _ = env.reset(seed=0)
    space = env.observation_space
    assert set(obs) == set(space.spaces)
    assert {"achieved_goal", "desired_goal"} <= set(obs)
    assert space.contains(obs)
    parts = pixels.parse_obs_mode(mode)
    assert ("observation" in obs) == ("state" in parts)
    if "rgb" in parts:
        assert space["rgb"].shape == (24, 32, 3) and space["rgb"].dtype == np.uint8
    if "depth" in parts:
        assert space["depth"].shape == (24, 32, 1) and space["depth"].dtype == np.float32
    if "segmentation" in parts:
        assert space["segmentation"].dtype == np.int32 and space["segmentation"].shape == (24, 32, 1)
    if parts != ("state",):
        assert obs["proprioception"].shape == (10,)  # grip 3, fingers 2, grip velocity 3, finger velocity 2
        state = env.unwrapped.worlds.observations()["observation"][0]
        np.testing.assert_array_equal(obs["proprioception"][:3], state[:3])


def test_state_mode_is_the_default_observation():
    a, b = gym.make("SuperDex/Push-v0"), gym.make("SuperDex/Push-v0", obs_mode="state")
    assert a.observation_space == b.observation_space
    oa, ob = a.reset(seed=4)[0], b.reset(seed=4)[0]
    for _ in range(3):
        action = np.array([0.5, -0.2, 0.1, 0.0], dtype=np.float32)
        oa, ob = a.step(action)[0], b.step(action)[0]
    assert oa.keys() == ob.keys() and all(np.array_equal(oa[k], ob[k]) for k in oa)


@pytest.mark.parametrize("kwargs,named", [
    ({"obs_mode": "rgbx"}, "obs_mode"), ({"obs_mode": "rgb+rgb"}, "obs_mode"), ({"obs_mode": "rgbd+depth"}, "obs_mode"),
    ({"obs_mode": ""}, "obs_mode"), ({"obs_mode": 3}, "obs_mode"),
    ({"obs_mode": "rgb", "image_size": 0}, "image_size"), ({"obs_mode": "rgb", "image_size": -8}, "image_size"),
    ({"obs_mode": "rgb", "image_size": 64.0}, "image_size"), ({"obs_mode": "rgb", "image_size": "64"}, "image_size"),
    ({"obs_mode": "rgb", "image_size": True}, "image_size"), ({"obs_mode": "rgb", "image_size": (64, 0)}, "image_size"),
    ({"obs_mode": "rgb", "camera": "side"}, "camera"), ({"obs_mode": "rgb", "camera": None}, "camera"),
    ({"obs_mode": "rgb", "randomize": "yes"}, "randomize"), ({"obs_mode": "rgb", "randomize": {"hue": 1}}, "randomize"),
    ({"obs_mode": "rgb", "randomize": {"color": -0.1}}, "randomize"),
    ({"obs_mode": "rgb", "randomize": {"color": float("nan")}}, "randomize"),
    ({"obs_mode": "rgb", "randomize": {"camera_m": 1.0}}, "randomize"),
])
def test_bad_kwargs_raise_errors_naming_them(kwargs, named):
    for make in (lambda: gym.make("SuperDex/Reach-v0", **kwargs),
                 lambda: gym.make_vec("SuperDex/Reach-v0", num_envs=2, vectorization_mode="vector_entry_point",
                                      **kwargs)):
        with pytest.raises(ValueError, match=named):
            make()


# -- vector env, determinism, one kernel call -----------------------------------------------------------------------

def test_vector_frames_equal_single_env_frames_bit_for_bit():
    kwargs = {"obs_mode": "state+rgbd+segmentation", "image_size": 40, "randomize": True}
    n = 3
    venv = gym.make_vec("SuperDex/Push-v0", num_envs=n, vectorization_mode="vector_entry_point", **kwargs)
    singles = [gym.make("SuperDex/Push-v0", **kwargs) for _ in range(n)]
    vobs, _ = venv.reset(seed=11)
    sobs = [env.reset(seed=11 + i)[0] for i, env in enumerate(singles)]
    rng = np.random.default_rng(0)
    for step in range(4):
        for i in range(n):
            for key in vobs:
                assert np.array_equal(vobs[key][i], sobs[i][key]), (step, i, key)
        actions = rng.uniform(-1, 1, (n, 4)).astype(np.float32)
        vobs = venv.step(actions)[0]
        sobs = [env.step(actions[i])[0] for i, env in enumerate(singles)]


def test_make_vec_renders_every_world_in_one_kernel_call(monkeypatch):
    venv = gym.make_vec("SuperDex/Push-v0", num_envs=5, vectorization_mode="vector_entry_point", obs_mode="rgb",
                        image_size=16)
    venv.reset(seed=0)
    calls = []
    kernel = batch_view.render_worlds

    def counting(*args):
        calls.append(args[-1].shape[0])  # the segmentation output: one frame per world drawn
        return kernel(*args)

    monkeypatch.setattr(batch_view, "render_worlds", counting)
    obs = venv.step(np.zeros((5, 4), dtype=np.float32))[0]
    assert calls == [5]
    assert obs["rgb"].shape == (5, 16, 16, 3)


def test_frames_are_deterministic():
    def frames():
        env = stepped_env("SuperDex/Stack2-v0", seed=9, obs_mode="rgbd+segmentation", image_size=48, randomize=True)
        return env.step(np.full(4, 0.3, dtype=np.float32))[0]

    a, b = frames(), frames()
    for key in a:
        assert a[key].tobytes() == b[key].tobytes(), key


def test_sb3_adapter_passes_image_observations_through():
    pytest.importorskip("stable_baselines3")
    from superdex_gym.envs.adapters.sb3 import SuperDexSB3VecEnv

    venv = SuperDexSB3VecEnv(2, seed=0, env_id="SuperDex/Reach-v0", obs_mode="rgb", image_size=20,
                             max_episode_steps=2)
    obs = venv.reset()
    assert obs["rgb"].shape == (2, 20, 20, 3) and obs["rgb"].dtype == np.uint8
    assert venv.observation_space["rgb"].shape == (20, 20, 3)
    venv.step(np.zeros((2, 4)))
    obs, _, done, infos = venv.step(np.zeros((2, 4)))
    assert done.all()
    assert infos[0]["terminal_observation"]["rgb"].shape == (20, 20, 3)
    # the new episodes' first frames, rendered after the reset in the same step
    np.testing.assert_array_equal(obs["rgb"], venv.venv.observations()["rgb"])


# -- what the pictures show ----------------------------------------------------------------------------------------

def test_segmentation_ids_match_the_objects():
    env = stepped_env("SuperDex/Push-v0", steps=0, obs_mode="segmentation", image_size=128)
    obs = env.unwrapped._obs()
    seg = obs["segmentation"][..., 0]
    ids = env.unwrapped.pixels.segmentation_ids
    by_name = {name: k for k, name in ids.items()}
    assert ids[0] == "(nothing)" and set(np.unique(seg)) <= set(ids)
    worlds = env.unwrapped.worlds
    camera = env.unwrapped.pixels.camera
    pos, _ = worlds.scene.get_actor_poses(worlds.scene.get_actors())
    for name in ("cube", "palm", "table"):
        k = by_name[name] - 1
        (x, y), = camera.project_points(pos[0, k] + (0.0, 0.0, 0.02 if name == "cube" else 0.0))[0]
        assert seg[int(y), int(x)] == by_name[name], name
    # every actor id drawn covers pixels of that actor only: the cube's pixels are where its projected box is
    cube = np.argwhere(seg == by_name["cube"])
    corners = pos[0, by_name["cube"] - 1] + 0.02 * np.array(np.meshgrid([-1, 1], [-1, 1], [-1, 1])).reshape(3, -1).T
    xy, _ = camera.project_points(corners)
    assert xy[:, 1].min() - 1 <= cube[:, 0].min() and cube[:, 0].max() <= xy[:, 1].max() + 1
    assert xy[:, 0].min() - 1 <= cube[:, 1].min() and cube[:, 1].max() <= xy[:, 0].max() + 1


def test_depth_of_the_table_seen_from_above_is_the_camera_height():
    env = stepped_env("SuperDex/Reach-v0", steps=0, obs_mode="depth+segmentation", image_size=64, camera="top")
    obs = env.unwrapped._obs()
    camera = env.unwrapped.pixels.camera
    height = camera.eye[2]  # the table top is the plane z = 0, the camera looks straight down
    table = obs["segmentation"][..., 0] == 1
    assert env.unwrapped.pixels.segmentation_ids[1] == "table" and table.mean() > 0.5
    # depth = 1 / q with q interpolated in float32: a few float32 roundings, relative 2^-24 each
    np.testing.assert_allclose(obs["depth"][..., 0][table], height, rtol=1e-6)
    palm = obs["segmentation"][..., 0] == 2
    assert obs["depth"][..., 0][palm].max() < height - 0.1  # the gripper, 15 cm up, is nearer


def test_empty_pixels_have_the_far_depth_and_the_background_colour():
    env = stepped_env("SuperDex/Reach-v0", steps=0, obs_mode="rgbd+segmentation", image_size=32, camera="front")
    obs = env.unwrapped._obs()
    empty = obs["segmentation"][..., 0] == 0
    assert empty.any()
    assert np.all(obs["depth"][..., 0][empty] == env.unwrapped.pixels.camera.far_m)


def test_cameras_differ_and_sizes_are_any():
    frames = {cam: stepped_env("SuperDex/PandaPush-v0", steps=0, obs_mode="rgb", image_size=(30, 50),
                               camera=cam).unwrapped._obs()["rgb"] for cam in pixels.CAMERAS}
    assert all(f.shape == (30, 50, 3) for f in frames.values())
    assert len({f.tobytes() for f in frames.values()}) == len(pixels.CAMERAS)  # every view its own


# -- domain randomization -------------------------------------------------------------------------------------------

def test_randomization_is_seeded_per_episode_and_within_its_ranges():
    def looks(seed, **kwargs):
        env = gym.make("SuperDex/Push-v0", obs_mode="rgb", image_size=32, randomize=True, **kwargs)
        obs = env.reset(seed=seed)[0]
        return obs["rgb"], env.unwrapped.pixels

    a, pa = looks(1)
    b, _ = looks(1)
    c, pc = looks(2)
    assert np.array_equal(a, b) and not np.array_equal(a, c)
    base = pa.view.default_looks(1)
    r = pixels.DEFAULT_RANDOMIZATION
    for p in (pa, pc):
        ratio = p.looks.actor_albedo[0] / base.actor_albedo[0]
        inside = (ratio >= 1 - r["color"] - 1e-12) & (ratio <= 1 + r["color"] + 1e-12)
        assert np.all(inside | (p.looks.actor_albedo[0] == 1))  # or clipped at 1
        angle = np.degrees(np.arccos(np.clip(p.looks.light[0] @ base.light[0], -1, 1)))
        assert 0 < angle <= r["light_deg"] + 1e-9
        assert np.all(np.abs(p.looks.cam_eye[0] - base.cam_eye[0]) <= r["camera_m"] + 1e-12)
    # a new episode draws new looks from the env's generator
    env = gym.make("SuperDex/Push-v0", obs_mode="rgb", image_size=32, randomize={"color": 0.3})
    first = env.reset(seed=5)[0]["rgb"]
    second = env.reset()[0]["rgb"]
    assert not np.array_equal(first, second)
    p = env.unwrapped.pixels
    assert np.array_equal(p.looks.light, p.view.default_looks(1).light)  # light_deg 0: the default direction


def test_randomization_off_leaves_the_state_trajectory_unchanged():
    plain = stepped_env("SuperDex/Push-v0", seed=7, steps=3)
    randomized = stepped_env("SuperDex/Push-v0", seed=7, steps=3, obs_mode="state+rgb", image_size=16)
    np.testing.assert_array_equal(plain.unwrapped.worlds.observations()["observation"],
                                  randomized.unwrapped.worlds.observations()["observation"])


def test_worker_threads_draw_the_serial_frames():
    from helpers import assert_worker_threads_give_the_serial_bits

    def run():
        venv = gym.make_vec("SuperDex/Stack2-v0", num_envs=5, vectorization_mode="vector_entry_point",
                            obs_mode="rgbd+segmentation", image_size=24, randomize=True)
        venv.reset(seed=2)
        obs = venv.step(np.full((5, 4), 0.2, dtype=np.float32))[0]
        return [obs["rgb"], obs["depth"], obs["segmentation"]]

    assert_worker_threads_give_the_serial_bits(run)


def test_worker_threads_render_the_serial_frames():
    """``render()``'s view keeps one set of layers per thread, not per world: 2 threads draw the serial frames."""
    from helpers import assert_worker_threads_give_the_serial_bits

    def run():
        venv = gym.make_vec("SuperDex/Push-v0", num_envs=5, vectorization_mode="vector_entry_point",
                            obs_mode="rgb", image_size=16, randomize=True)
        venv.reset(seed=3)
        venv.step(np.full((5, 4), 0.2, dtype=np.float32))
        worlds = venv.unwrapped.worlds
        view = WorldsView(worlds, default_camera(48, 48, **worlds.task.camera))
        looks = venv.unwrapped.pixels.looks
        looks = batch_view.Looks(looks.actor_albedo, looks.checker, looks.marker_albedo, looks.light, looks.background,
                             view.default_looks(5).cam_eye, view.default_looks(5).cam_rot)
        return [view.render(looks)[0], view.render(looks)[0]]

    assert_worker_threads_give_the_serial_bits(run)
