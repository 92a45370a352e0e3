"""Camera observations (``obs_mode``, ``image_size``, ``camera``, ``randomize`` kwargs of every id): rgb, depth and
segmentation images of every world from one call of the compiled rasterizer, under their own ``Dict`` keys beside
the goal keys; and per-episode domain randomization of colours, light and camera pose. ``docs/pixels.md``.

Keys by mode part (``obs_mode`` is parts joined by ``+``, e.g. ``"rgb"``, ``"state+rgb"``, ``"rgbd"``):

* always: ``achieved_goal``, ``desired_goal`` (as in ``"state"``: HER relabels them);
* ``state``: ``observation``, the state vector (``"state"`` alone is today's observation, bit for bit);
* any image part: ``proprioception``, the robot's own observation parts (grip point, finger offsets and their
  velocities), float32;
* ``rgb``: (H, W, 3) uint8; ``depth``: (H, W, 1) float32 metres along the view axis (``far_m`` where nothing is
  seen); ``segmentation``: (H, W, 1) int32 actor ids (``segmentation_ids``); ``rgbd`` = ``rgb`` + ``depth``.
"""

from __future__ import annotations

import numpy as np
from gymnasium import spaces

from ..rendering.batch_view import WorldsView
from ..rendering.camera import Camera
from ..rendering.scene_view import default_camera
from ..rendering.shading import ShadingParams

IMAGE_PARTS = ("rgb", "depth", "segmentation")
MODE_PARTS = ("state", "rgbd") + IMAGE_PARTS
CAMERAS = ("task", "front", "top", "wrist")
WRIST_FOV_Y_DEG = 70.0  # a wrist camera's wider view (a RealSense D435's colour sensor: 69 x 42 deg)
MAX_IMAGE_SIZE = 4096
# Domain randomization ranges (``randomize=True``; a dict of these keys sets some, 0 turns one off): colours are
# scaled per channel by a factor in [1 - c, 1 + c] (clipped to [0, 1]); the light direction is turned by up to
# ``light_deg`` about a random axis (kept pointing down); the camera's eye moves by up to ``camera_m`` per axis and
# it looks at a target moved by up to ``camera_m`` / 2 per axis.
DEFAULT_RANDOMIZATION = {"color": 0.15, "light_deg": 20.0, "camera_m": 0.02}


def parse_obs_mode(obs_mode) -> tuple:
    """The parts of ``obs_mode`` (``"rgbd"`` read as rgb + depth), validated; ValueError names the argument."""
    if not isinstance(obs_mode, str) or not obs_mode:
        raise ValueError(f"obs_mode must be a string such as 'state', 'rgb' or 'state+rgb', got {obs_mode!r}")
    parts = obs_mode.split("+")
    unknown = [p for p in parts if p not in MODE_PARTS]
    if unknown or len(set(parts)) != len(parts):
        raise ValueError(f"obs_mode {obs_mode!r}: parts must be distinct ones of {list(MODE_PARTS)} joined by '+' "
                         f"(e.g. 'rgb', 'rgbd', 'state+rgb')")
    out = []
    for p in parts:
        out += ["rgb", "depth"] if p == "rgbd" else [p]
    if len(set(out)) != len(out):
        raise ValueError(f"obs_mode {obs_mode!r} names rgb or depth twice ('rgbd' is rgb + depth)")
    return tuple(out)


def parse_image_size(image_size) -> tuple[int, int]:
    """``image_size``: an int (square) or (height, width), each in [1, MAX_IMAGE_SIZE]."""
    values = image_size if isinstance(image_size, (tuple, list)) and len(image_size) == 2 else (image_size,) * 2
    for v in values:
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)) or not 1 <= v <= MAX_IMAGE_SIZE:
            raise ValueError(f"image_size must be a positive int (or (height, width) ints) up to {MAX_IMAGE_SIZE} "
                             f"pixels, got {image_size!r}")
    return int(values[0]), int(values[1])


def parse_randomize(randomize) -> dict | None:
    """``randomize``: False / None (off), True (`DEFAULT_RANDOMIZATION`) or a dict of some of its keys."""
    if randomize is None or randomize is False:
        return None
    if randomize is True:
        return dict(DEFAULT_RANDOMIZATION)
    if not isinstance(randomize, dict):
        raise ValueError(f"randomize must be True, False or a dict with keys {sorted(DEFAULT_RANDOMIZATION)}, "
                         f"got {randomize!r}")
    unknown = set(randomize) - set(DEFAULT_RANDOMIZATION)
    if unknown:
        raise ValueError(f"randomize: unknown keys {sorted(unknown)}; known: {sorted(DEFAULT_RANDOMIZATION)}")
    out = dict.fromkeys(DEFAULT_RANDOMIZATION, 0.0)
    for key, value in randomize.items():
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)) \
                or not np.isfinite(value) or value < 0:
            raise ValueError(f"randomize[{key!r}] must be a finite number >= 0, got {value!r}")
        out[key] = float(value)
    if out["color"] >= 1.0 or out["light_deg"] > 60.0 or out["camera_m"] > 0.2:
        raise ValueError(f"randomize ranges must keep the scene recognisable: color < 1, light_deg <= 60, "
                         f"camera_m <= 0.2; got {out}")
    return out


def task_camera(task, kind: str, height: int, width: int) -> Camera:
    """The ``camera`` kwarg's view: ``"task"`` (``render()``'s: the task's orbit view), ``"front"`` (level with the
    table, looking along +x) or ``"top"`` (straight down, image up = +x), at the task's distance and target; for
    ``"wrist"`` the intrinsics (its pose follows the robot's hand, `PixelObservations`)."""
    if kind not in CAMERAS:
        raise ValueError(f"camera must be one of {list(CAMERAS)}, got {kind!r}")
    view = dict(task.camera)
    if kind == "wrist":
        return Camera(eye=np.array([0.0, 0.0, 0.3]), target=np.zeros(3), up=(1.0, 0.0, 0.0),
                      fov_y_deg=WRIST_FOV_Y_DEG, width=width, height=height)
    if kind == "front":
        view.update(azimuth_deg=180.0, elevation_deg=15.0)
    if kind != "top":
        return default_camera(width, height, **view)
    target = np.asarray(view.get("target", (0.0, 0.0, 0.0)), dtype=np.float64)
    return Camera(eye=target + [0.0, 0.0, view.get("distance_m", 0.9)], target=target, up=(1.0, 0.0, 0.0),
                  width=width, height=height)


class PixelObservations:
    """The image part of the observations of ``worlds`` (a `RobotTaskWorlds`): spaces, frames, randomization."""

    def __init__(self, worlds, obs_mode="state", image_size=64, camera="task", randomize=False):
        self.parts = parse_obs_mode(obs_mode)
        height, width = parse_image_size(image_size)
        self.randomization = parse_randomize(randomize)
        self.worlds = worlds
        self.images = tuple(p for p in IMAGE_PARTS if p in self.parts)
        self.camera = task_camera(worlds.task, camera, height, width)
        self.wrist = camera == "wrist"
        if self.wrist and worlds.robot.wrist_camera() is None:
            raise ValueError(f"camera='wrist' needs a robot that carries a camera; {type(worlds.robot).__name__} "
                             f"does not (use one of {[c for c in CAMERAS if c != 'wrist']})")
        # per world: the randomized offsets of a wrist camera's eye and target (zero without randomization)
        self._wrist_jitter = np.zeros((worlds.num_worlds, 2, 3))
        self.view = None
        self.looks = None
        if self.images:
            # shadow map texels: one per image pixel (a pixel at 64 x 64 is ~1 cm on the table, a texel ~5 mm over the
            # casters), at least 64 and at most the numpy renderer's 256
            shading = ShadingParams(shadow_map_size=int(np.clip(max(height, width), 64, 256)))
            self.view = WorldsView(worlds, self.camera, shading, empty_depth=self.camera.far_m, cache_per_world=True)
            self.looks = self.view.default_looks(worlds.num_worlds)
        robot_bounds = worlds.robot.observation_bounds()
        bounds = {**robot_bounds, **worlds.task.observation_bounds(robot_bounds)}  # every part's, as the worlds'
        layout = worlds.observation_layout
        starts = np.cumsum([0] + [len(bounds[k][0]) for k in layout])
        self._proprio_cols = np.concatenate([np.arange(starts[i], starts[i + 1]) for i, k in enumerate(layout)
                                             if k in robot_bounds]).astype(np.int64)

    @property
    def active(self) -> bool:
        return self.parts != ("state",)

    @property
    def segmentation_ids(self) -> dict:
        """Segmentation id -> actor name (0: nothing opaque)."""
        return dict(self.view.segmentation_ids) if self.view is not None else {}

    def space(self, state_space: spaces.Dict) -> spaces.Dict:
        if not self.active:
            return state_space
        out = {k: state_space[k] for k in ("achieved_goal", "desired_goal")}
        if "state" in self.parts:
            out["observation"] = state_space["observation"]
        if self.images:
            obs = state_space["observation"]
            cols = self._proprio_cols
            out["proprioception"] = spaces.Box(obs.low[cols], obs.high[cols], dtype=np.float32)
        h, w = self.camera.height, self.camera.width
        if "rgb" in self.parts:
            out["rgb"] = spaces.Box(0, 255, (h, w, 3), dtype=np.uint8)
        if "depth" in self.parts:
            out["depth"] = spaces.Box(0.0, self.camera.far_m, (h, w, 1), dtype=np.float32)
        if "segmentation" in self.parts:
            out["segmentation"] = spaces.Box(0, len(self.view.segmentation_ids) - 1, (h, w, 1), dtype=np.int32)
        return spaces.Dict(out)

    def observe(self, state: dict, worlds=None) -> dict:
        """The observation dict from the state one (arrays over the worlds ``worlds``, default all)."""
        if not self.active:
            return state
        out = {"achieved_goal": state["achieved_goal"], "desired_goal": state["desired_goal"]}
        if "state" in self.parts:
            out["observation"] = state["observation"]
        if self.images:
            out["proprioception"] = np.ascontiguousarray(state["observation"][:, self._proprio_cols])
            if self.wrist:
                self._follow_the_hand(worlds)
            rgb, depth, seg = self.view.render(self.looks, want_rgb="rgb" in self.parts, worlds=worlds,
                                               want_geometry="depth" in self.parts or "segmentation" in self.parts)
            if "rgb" in self.parts:
                out["rgb"] = rgb
            if "depth" in self.parts:
                out["depth"] = depth[..., None]
            if "segmentation" in self.parts:
                out["segmentation"] = seg[..., None]
        return out

    def _follow_the_hand(self, worlds) -> None:
        """Place every rendered world's camera at its robot's wrist camera (whole-array; the kernel redraws a world's
        kept layers when its camera moved)."""
        eye, target, up = self.worlds.robot.wrist_camera()
        rows = slice(None) if worlds is None else np.asarray(worlds, dtype=np.int64)
        eye = eye[rows] + self._wrist_jitter[rows, 0]
        target = target[rows] + self._wrist_jitter[rows, 1]
        forward = target - eye
        forward /= np.linalg.norm(forward, axis=1, keepdims=True)
        right = np.cross(forward, up[rows])
        right /= np.linalg.norm(right, axis=1, keepdims=True)
        self.looks.cam_eye[rows] = eye
        self.looks.cam_rot[rows] = np.stack([right, np.cross(right, forward), -forward], axis=1)  # Camera.rotation's

    def randomize_worlds(self, worlds, rngs) -> None:
        """New looks for ``worlds`` (K,) from their episode generators ``rngs`` (K), when randomizing."""
        r = self.randomization
        if r is None or self.view is None:
            return
        base = self.view.default_looks(1)
        cam = self.camera
        for i, rng in zip(np.asarray(worlds, dtype=np.int64), rngs):
            looks = self.looks
            scale = lambda shape: 1.0 + rng.uniform(-r["color"], r["color"], size=shape)  # noqa: E731
            looks.actor_albedo[i] = np.clip(base.actor_albedo[0] * scale(base.actor_albedo.shape[1:]), 0.0, 1.0)
            looks.checker[i] = np.clip(base.checker[0] * scale(base.checker.shape[1:]), 0.0, 1.0)
            looks.marker_albedo[i] = np.clip(base.marker_albedo[0] * scale(base.marker_albedo.shape[1:]), 0.0, 1.0)
            looks.light[i] = _turned(base.light[0], rng, np.deg2rad(r["light_deg"]))
            eye_jitter = rng.uniform(-r["camera_m"], r["camera_m"], size=3)
            target_jitter = rng.uniform(-0.5 * r["camera_m"], 0.5 * r["camera_m"], size=3)
            if self.wrist:  # the mount moves with the hand: jitter its offsets instead
                self._wrist_jitter[i] = eye_jitter, target_jitter
                continue
            eye, target = cam.eye + eye_jitter, cam.target + target_jitter
            moved = Camera(eye=eye, target=target, up=cam.up, fov_y_deg=cam.fov_y_deg, width=cam.width,
                           height=cam.height, near_m=cam.near_m, far_m=cam.far_m)
            looks.cam_eye[i], looks.cam_rot[i] = moved.eye, moved.rotation


def _turned(direction: np.ndarray, rng, max_angle: float) -> np.ndarray:
    """``direction`` turned by an angle uniform in [0, max_angle] about a random axis perpendicular to it (Rodrigues),
    still pointing down."""
    axis = np.cross(direction, rng.normal(size=3))
    axis /= max(np.linalg.norm(axis), 1e-12)
    angle = rng.uniform(0.0, max_angle)
    out = direction * np.cos(angle) + np.cross(axis, direction) * np.sin(angle)
    if out[2] > -0.2:  # a sun near the horizon would leave the scene dark: keep the original
        out = direction
    return out / np.linalg.norm(out)


class RenderView:
    """``render()``'s frames of every world in one kernel call: the render camera (480 x 480 by default) and the
    numpy renderer's shadow map, with each world's randomized colours and light (its camera is not jittered)."""

    def __init__(self, worlds, camera: Camera, pixels: PixelObservations):
        self.view = WorldsView(worlds, camera)
        self.pixels = pixels

    def frames(self, depth_only: bool) -> tuple[np.ndarray, np.ndarray]:
        looks = self.view.default_looks(self.view.worlds.num_worlds)
        if self.pixels.looks is not None:
            src = self.pixels.looks
            looks.actor_albedo, looks.checker, looks.light = src.actor_albedo, src.checker, src.light
            looks.marker_albedo = src.marker_albedo
        rgb, depth, _ = self.view.render(looks, want_rgb=not depth_only)
        return rgb, depth
