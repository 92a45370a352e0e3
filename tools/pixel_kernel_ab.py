"""Same-process A/B of the compiled rasterizer against an earlier commit's: per-frame time and pixel differences.

    python tools/pixel_kernel_ab.py [--ref 60177da] [--size 64] [--worlds 64] [--steps 30] [--repeats 7]

The reference `raster_kernel.py` is read from git at ``--ref`` into a temporary module, fed the arrays the current
`WorldsView` prepares (minus the flags it did not know), and timed alternately with the current kernel on the same
stepped Push worlds (median of ``--repeats`` calls per kernel, every call drawing every world). The frames of both are
then compared over a set of scenes (every task; 64, 84, 96 and 128 pixels; the task, front and top cameras; default
and randomized looks; 12 steps of random actions): rgb pixels that differ, the largest channel difference, and
whether depth and segmentation are equal.
"""

from __future__ import annotations

import argparse
import importlib
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def reference_kernel(ref: str):
    """The ``render_worlds`` of ``envs/rendering/raster_kernel.py`` at commit ``ref``, compiled from a copy."""
    repo = Path(__file__).resolve().parents[1]
    src = subprocess.run(["git", "show", f"{ref}:envs/rendering/raster_kernel.py"], cwd=repo, check=True,
                         capture_output=True, text=True).stdout
    # an importable module on sys.path: numba's on-disk cache finds its module by name when it loads a kernel
    folder = Path(tempfile.gettempdir()) / "superdex_reference_kernels"
    folder.mkdir(exist_ok=True)
    name = f"raster_kernel_{ref}"
    path = folder / f"{name}.py"
    if not path.exists() or path.read_text() != src:
        path.write_text(src)
    sys.path.insert(0, str(folder))
    return importlib.import_module(name).render_worlds


def reference_frames(kernel, view, looks):
    """The reference kernel's (rgb, depth, seg) of every world of ``view`` (a `WorldsView`)."""
    from superdex_gym.envs.rendering.raster_kernel import CASTS_SHADOW, PATTERNED, RECEIVES_SHADOW
    from superdex_gym.envs.rendering.scene_view import TABLE_PATTERN
    from superdex_gym.sim import lie
    from superdex_gym.sim.jit import kernel_array

    pos, quat = view.worlds.scene.get_actor_poses(view.actors)
    k, cam = pos.shape[0], view.camera
    centres = kernel_array(np.asarray(view.worlds.goal, dtype=np.float64).reshape(k, view.num_markers, 3))
    rgb = np.empty((k, cam.height, cam.width, 3), dtype=np.uint8)
    depth = np.empty((k, cam.height, cam.width), dtype=np.float32)
    seg = np.empty((k, cam.height, cam.width), dtype=np.int32)
    kernel(view.tri_local, view.tri_actor, view.tri_flags & (PATTERNED | CASTS_SHADOW | RECEIVES_SHADOW),
           view.tri_seg, kernel_array(pos), kernel_array(lie.quat_to_matrix(quat)), looks.actor_albedo,
           view.mk_local, view.mk_index, view.mk_radius, centres, looks.marker_albedo, view.mk_alpha, looks.checker,
           float(TABLE_PATTERN.cell_size_m), view.checker_origin, looks.light, looks.background, looks.cam_eye,
           looks.cam_rot, float(cam.focal_length_px), float(cam.near_m), float(cam.far_m), view.ray_right,
           view.ray_up, view.shading_values, int(view.shading.shadow_map_size), True, True, view.empty_depth, rgb,
           depth, seg)
    return rgb, depth, seg


def stepped_worlds(env_id: str, num_worlds: int, steps: int, seed: int = 0):
    import gymnasium as gym

    import superdex_gym  # noqa: F401

    venv = gym.make_vec(env_id, num_envs=num_worlds, vectorization_mode="vector_entry_point")
    venv.reset(seed=seed)
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        venv.step(rng.uniform(-1, 1, (num_worlds, 4)).astype(np.float32))
    return venv


def view_of(worlds, size: int, per_world_cache: bool, camera: str = "task"):
    from superdex_gym.envs.core.pixels import task_camera
    from superdex_gym.envs.rendering.batch_view import WorldsView
    from superdex_gym.envs.rendering.shading import ShadingParams

    camera = task_camera(worlds.task, camera, size, size)
    return WorldsView(worlds, camera, ShadingParams(shadow_map_size=int(np.clip(size, 64, 256))),
                      empty_depth=camera.far_m, cache_per_world=per_world_cache)


def randomized_looks(worlds, view, seed: int):
    """Per-world looks drawn as ``randomize=True`` draws them (colours, light, camera pose)."""
    from superdex_gym.envs.core.pixels import PixelObservations

    pixels = PixelObservations(worlds, "rgb", (view.camera.height, view.camera.width), randomize=True)
    pixels.camera = view.camera
    rngs = [np.random.default_rng([seed, w]) for w in range(worlds.num_worlds)]
    pixels.looks = view.default_looks(worlds.num_worlds)
    pixels.view = view
    pixels.randomize_worlds(np.arange(worlds.num_worlds), rngs)
    return pixels.looks


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ref", default="60177da")
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--worlds", type=int, default=64)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--skip-compare", action="store_true")
    args = parser.parse_args(argv)
    ref = reference_kernel(args.ref)

    venv = stepped_worlds("SuperDex/Push-v0", args.worlds, args.steps)
    worlds = venv.unwrapped.worlds if hasattr(venv, "unwrapped") else venv.worlds
    view = view_of(worlds, args.size, per_world_cache=True)
    looks = view.default_looks(worlds.num_worlds)
    rng = np.random.default_rng(1)
    timings = {"reference": [], "current": []}
    cpu = {"reference": [], "current": []}
    reference_frames(ref, view, looks)
    view.render(looks)
    for _ in range(args.repeats):
        for name in timings:
            # a new step between calls: the dynamic bodies move, as between two observations
            venv.step(rng.uniform(-1, 1, (args.worlds, 4)).astype(np.float32))
            t0, c0 = time.perf_counter(), time.thread_time()
            if name == "reference":
                reference_frames(ref, view, looks)
            else:
                view.render(looks)
            timings[name].append(time.perf_counter() - t0)
            cpu[name].append(time.thread_time() - c0)
    for clock, times in (("wall-clock", timings), ("CPU time", cpu)):
        per_frame = {name: 1e3 * statistics.median(t) / args.worlds for name, t in times.items()}
        print(f"{args.size}x{args.size}, {args.worlds} worlds per call, median of {args.repeats}, {clock}: "
              f"reference {args.ref} {per_frame['reference']:.4f} ms/frame, current {per_frame['current']:.4f} "
              f"ms/frame, speed-up {per_frame['reference'] / per_frame['current']:.2f}x")
    venv.close()
    if args.skip_compare:
        return
    worst = 0
    for env_id in ("SuperDex/Reach-v0", "SuperDex/Push-v0", "SuperDex/PickAndPlace-v0", "SuperDex/Stack2-v0",
                   "SuperDex/Stack3-v0", "SuperDex/Throw-v0"):
        venv = stepped_worlds(env_id, 8, 0, seed=5)
        worlds = venv.unwrapped.worlds if hasattr(venv, "unwrapped") else venv.worlds
        cases = [(64, "task", False), (84, "task", False), (128, "task", False), (64, "front", True),
                 (96, "top", True), (64, "task", True)]
        views = {case: view_of(worlds, case[0], per_world_cache=True, camera=case[1]) for case in cases}
        counts = []
        for step in range(12):
            for (size, camera, randomize), v in views.items():
                # randomized looks: new ones every 4 steps (as at resets), the same in between (the kept layers)
                looks = randomized_looks(worlds, v, step // 4) if randomize else v.default_looks(worlds.num_worlds)
                a, b = reference_frames(ref, v, looks), v.render(looks)
                differs = np.any(a[0] != b[0], axis=-1)
                counts.append(int(differs.sum()))
                worst = max(worst, int(np.abs(a[0].astype(int) - b[0].astype(int)).max()))
                if not (np.array_equal(a[1], b[1]) and np.array_equal(a[2], b[2])):
                    print(f"  {env_id} {size} {camera} {randomize}: depth or segmentation differ")
            venv.step(np.random.default_rng(step).uniform(-1, 1, (8, 4)).astype(np.float32))
        print(f"  {env_id}: {len(counts)} calls of 8 worlds (sizes 64-128, cameras task / front / top, default and "
              f"randomized looks), rgb pixels differing per call: max {max(counts)}")
    print(f"largest channel difference: {worst}")


if __name__ == "__main__":
    sys.exit(main())
