"""The suite's benchmark harness: ``python -m superdex_gym.benchmark``.

Prints the median of several runs for each case, and the same figure as a ratio against a baseline measured in
the same process (a fixed batch of numpy 6x6 solves), so figures from different (shared, noisy) machines compare.
Later issues add cases to ``CASES``.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from pathlib import Path

import numpy as np

import superdex_gym.sim as mochi


def _median_rate(fn, units: int, repeats: int) -> float:
    """Median over ``repeats`` runs of units / seconds for ``fn()`` doing ``units`` units of work."""
    rates = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        rates.append(units / (time.perf_counter() - t0))
    return statistics.median(rates)


def baseline(repeats: int) -> float:
    """Batched numpy work of the engine's kind: 1000 solves of 6x6 systems, per second (x1000)."""
    rng = np.random.default_rng(0)
    a = rng.normal(size=(1000, 6, 6))
    a = a @ np.swapaxes(a, -1, -2) + 6 * np.eye(6)
    b = rng.normal(size=(1000, 6, 1))

    def run():
        for _ in range(20):
            np.linalg.solve(a, b)

    return _median_rate(run, 20, repeats)


def free_bodies_scene(num_worlds: int, num_bodies: int = 10):
    scene = mochi.create_scene("bench")
    rng = np.random.default_rng(1)
    shape = mochi.create_box_mesh_shape([0.05, 0.1, 0.15])
    for k in range(num_bodies):
        scene.create_rigid_actor(
            name=f"box{k}", shape=shape, density=1000.0,
            world_from_local=mochi.TransformRT(translation=rng.normal(size=3).tolist()),
            linear_velocity=rng.normal(size=3).tolist(), angular_velocity=(3 * rng.normal(size=3)).tolist(),
        )
    scene.set_num_worlds(num_worlds)
    return scene


def case_free_bodies(num_worlds: int, repeats: int, steps: int):
    scene = free_bodies_scene(num_worlds)
    scene.step(0.01)  # warm-up

    def run():
        for _ in range(steps):
            scene.step(0.01)

    rate = _median_rate(run, steps, repeats)
    return {"engine steps/s": rate, "body-steps/s": rate * num_worlds * 10}


def _contact_scene(kind: str, num_worlds: int):
    """The issue-3 contact cases: a sphere dropped on a plane, an aligned 5-box stack, a 20-body pile."""
    if kind == "pile":
        return _pile_scene(20, num_worlds)
    scene = mochi.create_scene(kind)
    scene.create_rigid_actor(name="ground", shape=mochi.create_plane_shape(normal=[0, 1, 0], distance=0.0),
                             is_static=True)
    if kind == "sphere":
        scene.create_rigid_actor(name="ball", shape=mochi.create_icosphere_shape(0.1, 2), density=1000.0,
                                 world_from_local=mochi.TransformRT(translation=[0, 0.3, 0]))
    elif kind == "stack":
        box = mochi.create_box_mesh_shape([0.1, 0.1, 0.1])
        for k in range(5):
            scene.create_rigid_actor(name=f"box{k}", shape=box, density=1000.0,
                                     world_from_local=mochi.TransformRT(translation=[0, 0.0993 + 0.1993 * k, 0]))
    else:
        raise ValueError(f"unknown contact scene {kind!r}")
    scene.set_num_worlds(num_worlds)
    return scene


def case_contact(kind: str, num_worlds: int, repeats: int, steps: int):
    return _settled_rate(_contact_scene(kind, num_worlds), num_worlds, repeats, steps)  # settled into contact first


def _settled_rate(scene, num_worlds: int, repeats: int, steps: int) -> dict:
    """Engine and world steps/s of ``scene`` after 3 settling steps (runs of ``steps`` steps of 0.01 s)."""
    for _ in range(3):
        scene.step(0.01)

    def run():
        for _ in range(steps):
            scene.step(0.01)

    rate = _median_rate(run, steps, repeats)
    return {"engine steps/s": rate, "world-steps/s": rate * num_worlds}


def _random_action_rate(make_env, steps: int, num_envs: int, repeats: int) -> float:
    """Env steps/s (aggregate over the batch) with random actions and resets, median of ``repeats`` runs."""
    env = make_env()
    rng = np.random.default_rng(0)
    batched = num_envs > 1
    env.reset(seed=0)
    shape = (num_envs, 4) if batched else env.action_space.shape

    def run():
        done_steps = 0
        while done_steps < steps:
            out = env.step(rng.uniform(-1, 1, shape).astype(np.float32))
            done_steps += num_envs
            if not batched and (out[2] or out[3]):
                env.reset()

    rate = _median_rate(run, steps, repeats)
    env.close()
    return rate


def case_env(args):
    """Env steps/s for single Push-v0 and make_vec(64), reset time, render time; the anchors if installed."""
    import gymnasium as gym

    import superdex_gym  # noqa: F401

    out = {}
    steps, reps = args.env_steps, 3
    single = _random_action_rate(lambda: gym.make("SuperDex/Push-v0"), steps, 1, reps)
    vec = _random_action_rate(lambda: gym.make_vec("SuperDex/Push-v0", num_envs=64), steps, 64, reps)
    out["SuperDex/Push-v0 single env steps/s"] = single
    out["SuperDex/Push-v0 make_vec(64) aggregate env steps/s"] = vec
    # The opt-in worker threads (initialize(num_worker_threads=2): the worlds' Newton solves on two threads, the
    # same bits); the machine's other work shares those cores, so this line moves with its load.
    mochi.initialize(num_worker_threads=2)
    try:
        threaded = _random_action_rate(lambda: gym.make_vec("SuperDex/Push-v0", num_envs=64), steps, 64, reps)
    finally:
        mochi.initialize(num_worker_threads=0)
    out["SuperDex/Push-v0 make_vec(64) aggregate env steps/s, 2 worker threads"] = threaded
    env = gym.make("SuperDex/Push-v0", render_mode="rgb_array")
    env.reset(seed=0)
    times = []
    for k in range(50):
        t0 = time.perf_counter()
        env.reset(seed=k)
        times.append(time.perf_counter() - t0)
    out["reset ms (median of 50)"] = 1e3 * statistics.median(times)
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        env.render()
        times.append(time.perf_counter() - t0)
    out["render ms per 480x480 frame (median of 5)"] = 1e3 * statistics.median(times)
    # The Panda arm on the same task (an articulated actor, its step in numpy): a fifth of the steps, same protocol.
    arm_steps = max(steps // 5, 64)
    arm_single = _random_action_rate(lambda: gym.make("SuperDex/PandaPush-v0"), arm_steps, 1, reps)
    arm_vec = _random_action_rate(lambda: gym.make_vec("SuperDex/PandaPush-v0", num_envs=64), arm_steps, 64, reps)
    out["SuperDex/PandaPush-v0 single env steps/s"] = arm_single
    out["SuperDex/PandaPush-v0 make_vec(64) aggregate env steps/s"] = arm_vec
    out["ratio PandaPush-v0 / Push-v0, single"] = arm_single / single
    out["ratio PandaPush-v0 / Push-v0, make_vec(64)"] = arm_vec / vec
    anchors = {}
    try:
        import gymnasium_robotics

        gym.register_envs(gymnasium_robotics)
        anchors["FetchPush-v4"] = _random_action_rate(lambda: gym.make("FetchPush-v4"), steps, 1, reps)
    except Exception as exc:  # not installed (the `bench` extra) or broken MuJoCo
        out["FetchPush-v4"] = f"unavailable ({type(exc).__name__}: {exc}); pip install 'superdex-gym[bench]'"
    try:
        import panda_gym  # noqa: F401

        anchors["PandaPush-v3"] = _random_action_rate(lambda: gym.make("PandaPush-v3"), steps, 1, reps)
    except Exception as exc:
        out["PandaPush-v3"] = f"unavailable ({type(exc).__name__}: {exc}); pip install 'superdex-gym[bench]'"
    for name, rate in anchors.items():
        out[f"{name} env steps/s"] = rate
        out[f"ratio single / {name}"] = single / rate
        out[f"ratio make_vec(64) aggregate / {name}"] = vec / rate
        out[f"ratio make_vec(64) aggregate, 2 worker threads / {name}"] = threaded / rate
        out[f"ratio PandaPush-v0 single / {name}"] = arm_single / rate
        out[f"ratio PandaPush-v0 make_vec(64) aggregate / {name}"] = arm_vec / rate
    return out


ENV_CASES = ("env cases: SuperDex/Push-v0 single and make_vec(64), reset, render, SuperDex/PandaPush-v0 single and "
             "make_vec(64), the FetchPush / PandaPush anchors")
PIXEL_CASES = ("pixel cases: make_vec(64) Push with rgb 64x64 against state-only, one 64x64 frame, frames/s at 64, 84, "
               "128, the numpy renderer and MuJoCo's offscreen renderer")


def _alternating_rates(makers: dict, steps: int, num_envs: int, repeats: int, cpu_rates: dict | None = None) -> dict:
    """Aggregate env steps/s of each maker, their runs alternated (so the machine's drift hits all alike), medians.
    ``cpu_rates`` (a dict) also gets the rates by the stepping thread's CPU time (single-threaded runs only): on a
    shared machine the time spent waiting for a core is not the env's."""
    envs = {name: make() for name, make in makers.items()}
    rng = np.random.default_rng(0)
    for env in envs.values():
        env.reset(seed=0)
        env.step(np.zeros((num_envs, 4), dtype=np.float32))
    rates = {name: [] for name in envs}
    cpu = {name: [] for name in envs}
    for _ in range(repeats):
        for name, env in envs.items():
            actions = rng.uniform(-1, 1, (steps // num_envs, num_envs, 4)).astype(np.float32)
            t0, c0 = time.perf_counter(), time.thread_time()
            for a in actions:
                env.step(a)
            cpu[name].append(len(actions) * num_envs / (time.thread_time() - c0))
            rates[name].append(len(actions) * num_envs / (time.perf_counter() - t0))
    for env in envs.values():
        env.close()
    if cpu_rates is not None:
        cpu_rates.update({name: statistics.median(r) for name, r in cpu.items()})
    return {name: statistics.median(r) for name, r in rates.items()}


def _median_seconds(fn, runs: int) -> float:
    fn()
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def case_pixels(args) -> dict:
    """Camera observations (docs/pixels.md): the cost of rgb 64 x 64 observations on make_vec(64) Push against the
    state-only env, one frame's time, frames/s at three sizes, the numpy renderer's frame and MuJoCo's offscreen
    renderer (where it runs headless)."""
    import gymnasium as gym

    import superdex_gym  # noqa: F401
    from superdex_gym.envs.rendering.batch_view import WorldsView
    from superdex_gym.envs.rendering.scene_view import SceneView, default_camera

    out = {}
    reps = max(1, min(int(args.repeats), 5))
    cpu = {}
    rates = _alternating_rates({
        "state": lambda: gym.make_vec("SuperDex/Push-v0", num_envs=64, vectorization_mode="vector_entry_point"),
        "rgb": lambda: gym.make_vec("SuperDex/Push-v0", num_envs=64, vectorization_mode="vector_entry_point",
                                    obs_mode="rgb", image_size=64),
    }, max(args.env_steps, 64 * 10), 64, reps, cpu)
    out["Push-v0 make_vec(64) state-only aggregate env steps/s"] = rates["state"]
    out["Push-v0 make_vec(64) rgb 64x64 aggregate env steps/s"] = rates["rgb"]
    out["ratio rgb 64x64 / state-only (target >= 0.5)"] = rates["rgb"] / rates["state"]
    out["ratio rgb 64x64 / state-only by the stepping thread's CPU time"] = cpu["rgb"] / cpu["state"]
    # the opt-in worker threads split the worlds' frames (and their Newton solves) over two threads, the same bits
    mochi.initialize(num_worker_threads=2)
    try:
        threaded = _alternating_rates({
            "state": lambda: gym.make_vec("SuperDex/Push-v0", num_envs=64, vectorization_mode="vector_entry_point"),
            "rgb": lambda: gym.make_vec("SuperDex/Push-v0", num_envs=64, vectorization_mode="vector_entry_point",
                                        obs_mode="rgb", image_size=64),
        }, max(args.env_steps, 64 * 10), 64, reps)
    finally:
        mochi.initialize(num_worker_threads=0)
    out["Push-v0 make_vec(64) rgb 64x64 aggregate env steps/s, 2 worker threads"] = threaded["rgb"]
    out["ratio rgb 64x64 / state-only, both on 2 worker threads"] = threaded["rgb"] / threaded["state"]
    venv = gym.make_vec("SuperDex/Push-v0", num_envs=64, vectorization_mode="vector_entry_point")
    venv.reset(seed=0)
    venv.step(np.zeros((64, 4), dtype=np.float32))
    worlds = venv.unwrapped.worlds if hasattr(venv, "unwrapped") else venv.worlds
    one = np.array([0])
    rng = np.random.default_rng(1)
    for size in (64, 84, 128):
        # as observations draw them: layers kept per world, the bodies moved by a step (not timed) between calls
        view = WorldsView(worlds, default_camera(size, size), empty_depth=10.0, cache_per_world=True)
        looks = view.default_looks(64)
        view.render(looks)
        times, cpu_times = [], []
        for _ in range(max(reps, 5)):
            venv.step(rng.uniform(-1, 1, (64, 4)).astype(np.float32))
            t0, c0 = time.perf_counter(), time.thread_time()
            view.render(looks)
            times.append(time.perf_counter() - t0)
            cpu_times.append(time.thread_time() - c0)
        batch = statistics.median(times)
        out[f"frames/s at {size}x{size} (64 worlds per kernel call, rgb + depth + segmentation)"] = 64 / batch
        if size == 64:
            out["ms per 64x64 frame in a call of 64 worlds (target <= 0.2)"] = 1e3 * batch / 64
            out["CPU ms per 64x64 frame in a call of 64 worlds"] = 1e3 * statistics.median(cpu_times) / 64
            out["one 64x64 frame ms (one world per call with its Python, median of 100)"] = 1e3 * _median_seconds(
                lambda: view.render(looks, worlds=one), 100)
            oracle = SceneView(worlds, camera=default_camera(size, size))
            out["numpy renderer ms per 64x64 frame (median of 20)"] = 1e3 * _median_seconds(
                lambda: oracle.renderer.render(oracle.meshes(0)), 20)
    venv.close()
    out.update(_mujoco_offscreen(reps))
    return out


def _mujoco_offscreen(reps: int) -> dict:
    """MuJoCo's offscreen renderer on a box on a plane at 64 x 64 (frames/s) when it runs headless here (MUJOCO_GL
    egl or osmesa, each tried in a child process: a GL backend that cannot start may abort the process); otherwise
    why not."""
    import importlib.util
    import os
    import subprocess
    import sys

    key = "MuJoCo offscreen 64x64 frames/s"
    if importlib.util.find_spec("mujoco") is None:
        return {key: "unavailable (no mujoco); pip install 'superdex-gym[bench]'"}
    code = ("import mujoco, time, statistics\n"
            "xml = \"<mujoco><worldbody><light pos='0 0 2'/><geom type='plane' size='1 1 .1'/><body pos='0 0 .1'>"
            "<freejoint/><geom type='box' size='.02 .02 .02'/></body><camera name='c' pos='-.6 -.6 .6' "
            "xyaxes='1 -1 0 .5 .5 1'/></worldbody></mujoco>\"\n"
            "m = mujoco.MjModel.from_xml_string(xml); d = mujoco.MjData(m); r = mujoco.Renderer(m, 64, 64)\n"
            "r.update_scene(d, camera='c'); r.render()\nts = []\n"
            f"for _ in range({50 * reps}):\n"
            "    t = time.perf_counter(); mujoco.mj_step(m, d); r.update_scene(d, camera='c'); r.render()\n"
            "    ts.append(time.perf_counter() - t)\n"
            "print(1.0 / statistics.median(ts))\n")
    errors = []
    for backend in ("egl", "osmesa"):
        run = subprocess.run([sys.executable, "-c", code], env={**os.environ, "MUJOCO_GL": backend},
                             capture_output=True, text=True, timeout=300)
        if run.returncode == 0:
            return {key: float(run.stdout.split()[-1]), "MuJoCo GL backend": backend}
        last = [line for line in run.stderr.splitlines() if line.strip()][-1:] or [f"exit {run.returncode}"]
        errors.append(f"MUJOCO_GL={backend}: {last[0].strip()}")
    return {key: "cannot run headless here (" + "; ".join(errors) + ")"}


# The arm of the articulated cases: 7 revolute joints (axes z, x, z, x, z, x, z) of 0.2 m links, then two
# prismatic fingers on the last link; every DoF held at ARM_POSE by a single-DoF drive (stiffness 2000, damping 20).
ARM_AXES = ([0, 0, 1], [1, 0, 0]) * 3 + ([0, 0, 1],)
ARM_POSE = [0.3, -0.4, 0.2, 0.6, -0.1, 0.3, 0.5, 0.02, 0.02]


def arm_box_shape(mod, half):
    """A box of half extents ``half`` as a triangle mesh (the call both engines take alike)."""
    corners = np.array([[(1 if (i >> k) & 1 else -1) for k in range(3)] for i in range(8)], dtype=np.float64)
    tris = np.array([[0, 2, 3], [0, 3, 1], [4, 5, 7], [4, 7, 6], [0, 1, 5], [0, 5, 4], [2, 6, 7], [2, 7, 3],
                     [0, 4, 6], [0, 6, 2], [1, 3, 7], [1, 7, 5]], dtype=np.int32).ravel()
    return mod.create_tri_mesh_shape((corners * np.asarray(half, dtype=np.float64)).ravel(), tris)


def arm_scene(num_worlds: int, mod=mochi):
    """The 7-joint arm with two fingers, in ``num_worlds`` worlds, on ``mod`` (this engine, or the released one in
    tools/reference_runs/arm_speed.py: the same calls)."""
    link, finger = arm_box_shape(mod, [0.04, 0.1, 0.04]), arm_box_shape(mod, [0.01, 0.04, 0.02])
    jt, tf = mod.ArticulatedJointType, mod.TransformRT
    p = mod.ArticulatedActorParams(name="arm", world_from_root=tf(translation=[0, 1.5, 0]))
    joints = [mod.ArticulatedJointParams(type=jt.REVOLUTE, axis=axis, parent_link_from_joint=tf(translation=[0, -0.1 if i else 0, 0]))
              for i, axis in enumerate(ARM_AXES)]
    joints += [mod.ArticulatedJointParams(type=jt.PRISMATIC, axis=[s, 0, 0], parent_link_from_joint=tf(translation=[0.03 * s, -0.1, 0]))
               for s in (1, -1)]
    links = [mod.ArticulatedLinkParams(parent_link=i - 1, shape=link, density=1000.0,
                                       parent_joint_from_link=tf(translation=[0, -0.1, 0])) for i in range(7)]
    links += [mod.ArticulatedLinkParams(parent_link=6, shape=finger, density=1000.0,
                                        parent_joint_from_link=tf(translation=[0, -0.04, 0])) for _ in range(2)]
    p.joints, p.links = joints, links
    scene = mod.create_scene("arm")
    arm = scene.create_articulated_actor(p)
    for j, target in enumerate(ARM_POSE):
        scene.create_articulated_single_dof_target_constraint(mod.ArticulatedSingleDofTargetConstraintParams(
            actor=arm.get_handle(), joint_index=j, dof_index=0, target_value=target, stiffness=2000.0, damping=20.0))
    arm.set_articulated_pose_from_joints(np.array(ARM_POSE))
    if num_worlds > 1:
        scene.set_num_worlds(num_worlds)
    return scene, arm


# The arm pressing on a cube: a free 8 cm cube (0.512 kg) on a static slab, its top 1 mm below the lowest corner of
# the fingers at ARM_POSE (forward kinematics: y = 0.2425 m, x, z = 0.582, -0.158 m); sagging under gravity against
# its drives, the arm comes down on it, so the step has finger-cube and cube-slab contact.
ARM_CUBE_CENTRE = [0.582, 0.2425 - 0.001 - 0.04, -0.158]


def arm_cube_scene(num_worlds: int, mod=mochi):
    """`arm_scene` with the cube of ARM_CUBE_CENTRE under its fingers, on ``mod`` (the same calls on both engines)."""
    scene, arm = arm_scene(1, mod)
    cube, slab = arm_box_shape(mod, [0.04] * 3), arm_box_shape(mod, [0.3, 0.02, 0.3])
    x, y, z = ARM_CUBE_CENTRE
    scene.create_rigid_actor(name="slab", shape=slab, is_static=True,
                             world_from_local=mod.TransformRT(translation=[x, y - 0.06, z]))
    scene.create_rigid_actor(name="cube", shape=cube, density=1000.0,
                             world_from_local=mod.TransformRT(translation=[x, y, z]))
    if num_worlds > 1:
        scene.set_num_worlds(num_worlds)
    return scene, arm


def case_arm(num_worlds: int, repeats: int, steps: int, scene_of=arm_scene):
    return _settled_rate(scene_of(num_worlds)[0], num_worlds, repeats, steps)  # settled against the drives first


CASES = {
    "free bodies (10 boxes), W=1": lambda r, s: case_free_bodies(1, r, s),
    "free bodies (10 boxes), W=256": lambda r, s: case_free_bodies(256, r, max(5, s // 10)),
    "sphere on plane, W=1": lambda r, s: case_contact("sphere", 1, r, s),
    "sphere on plane, W=256": lambda r, s: case_contact("sphere", 256, r, max(3, s // 20)),
    # The stack's cost per step falls ~3x as it comes to rest, so both stack sizes run the same step windows (3
    # settling steps, then runs of --steps steps; the settling case runs of a tenth) as the released engine's
    # timing in tools/stack_speed_compare.sh, which passes it the same numbers.
    "aligned 5-box stack, W=1": lambda r, s: case_contact("stack", 1, r, s),
    "aligned 5-box stack, W=256": lambda r, s: case_contact("stack", 256, r, s),
    "aligned 5-box stack settling, W=256": lambda r, s: case_contact("stack", 256, r, max(3, s // 10)),
    "20-body pile, W=1": lambda r, s: case_contact("pile", 1, r, max(5, s // 4)),
    "20-body pile, W=256": lambda r, s: case_contact("pile", 256, r, 2),
    # the released engine's single-thread rate of the same arm: tools/reference_runs/arm_speed.py
    "arm (7 joints + 2 fingers) holding a pose, W=1": lambda r, s: case_arm(1, r, max(5, s // 4)),
    "arm (7 joints + 2 fingers) holding a pose, W=64": lambda r, s: case_arm(64, r, max(3, s // 20)),
    "arm pressing on a cube, W=1": lambda r, s: case_arm(1, r, max(5, s // 4), arm_cube_scene),
    "arm pressing on a cube, W=64": lambda r, s: case_arm(64, r, max(3, s // 20), arm_cube_scene),
}


def _pile_scene(num_bodies: int, num_worlds: int):
    """The 20-body pile's recipe with ``num_bodies`` boxes."""
    scene = mochi.create_scene("pile")
    scene.create_rigid_actor(name="ground", shape=mochi.create_plane_shape(normal=[0, 1, 0], distance=0.0),
                             is_static=True)
    rng = np.random.default_rng(2)
    box = mochi.create_box_mesh_shape([0.05, 0.05, 0.05])
    for k in range(num_bodies):
        xz = rng.uniform(-0.15, 0.15, 2)
        scene.create_rigid_actor(name=f"b{k}", shape=box, density=1000.0,
                                 world_from_local=mochi.TransformRT(mochi.Quaternion.from_rotation_vector(
                                     rng.normal(size=3)), [xz[0], 0.06 + 0.11 * k, xz[1]]))
    scene.set_num_worlds(num_worlds)
    return scene


def _state_bytes_per_world(scene) -> float:
    """Bytes of the scene's batched state (every history entry and per-world array) per world."""
    from dataclasses import fields

    state = scene._state
    total = 0
    for f in fields(state):
        value = getattr(state, f.name)
        if f.name == "history":
            total += sum(getattr(h, g.name).nbytes for h in value for g in fields(h))
        elif isinstance(value, np.ndarray) and f.name != "offset_local":
            total += value.nbytes
    return total / state.num_worlds


def _engine_rate(scene, steps: int, warm_up: bool = True) -> float:
    if warm_up:
        scene.step(0.01)  # warm-up (and into contact)
    t0 = time.perf_counter()
    for _ in range(steps):
        scene.step(0.01)
    return steps / (time.perf_counter() - t0)


def scaling(worlds=(1, 4, 16, 64, 256, 1024, 4096), bodies=(1, 2, 5, 10, 20, 50), pile_worlds=64,
            env_steps=20, steps=3) -> dict:
    """How cost grows with worlds (Push-v0 through make_vec, the aligned 5-box stack) and with bodies (a pile at
    ``pile_worlds`` worlds), with the state bytes per world. One run per point (the trend, not a median)."""
    import gymnasium as gym

    import superdex_gym  # noqa: F401  (registers the envs)

    rows = {"worlds": [], "bodies": []}
    for w in worlds:
        env = gym.make_vec("SuperDex/Push-v0", num_envs=w)
        env.reset(seed=0)
        env.action_space.seed(0)
        env.step(env.action_space.sample())
        t0 = time.perf_counter()
        for _ in range(env_steps):
            env.step(env.action_space.sample())
        push = env_steps / (time.perf_counter() - t0)
        push_bytes = _state_bytes_per_world(env.unwrapped.worlds.scene)
        env.close()
        stack = _contact_scene("stack", w)
        for _ in range(3):  # the benchmark's stack cases' settling steps, then their settling window's first run
            stack.step(0.01)
        rate = _engine_rate(stack, 10, warm_up=False)
        rows["worlds"].append({"W": w, "Push env steps/s": push, "Push world-steps/s": push * w,
                               "Push state bytes/world": push_bytes, "stack engine steps/s": rate,
                               "stack world-steps/s": rate * w, "stack state bytes/world":
                               _state_bytes_per_world(stack)})
    for n in bodies:
        pile = _pile_scene(n, pile_worlds)
        rate = _engine_rate(pile, steps)
        rows["bodies"].append({"bodies": n, "W": pile_worlds, "engine steps/s": rate,
                               "world-steps/s": rate * pile_worlds, "state bytes/world": _state_bytes_per_world(pile)})
    return rows


def write_scaling(rows: dict, out_dir) -> tuple:
    """The scaling tables as markdown and a two-panel plot (PNG) in ``out_dir``; returns both paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    lines = ["| W | Push-v0 env steps/s | Push world-steps/s | stack engine steps/s | stack world-steps/s | "
             "state bytes/world (Push / stack) |", "|---|---|---|---|---|---|"]
    for r in rows["worlds"]:
        lines.append(f"| {r['W']} | {r['Push env steps/s']:,.1f} | {r['Push world-steps/s']:,.0f} | "
                     f"{r['stack engine steps/s']:,.1f} | {r['stack world-steps/s']:,.0f} | "
                     f"{r['Push state bytes/world']:,.0f} / {r['stack state bytes/world']:,.0f} |")
    lines += ["", "Push: 20 env steps after one; the stack: steps 4-13 (3 settling steps first, as the benchmark's "
              "settling case; its cost per step falls ~3x as it comes to rest); the pile: steps 2-4."]
    lines += ["", "| bodies (pile) | W | engine steps/s | world-steps/s | state bytes/world |", "|---|---|---|---|---|"]
    for r in rows["bodies"]:
        lines.append(f"| {r['bodies']} | {r['W']} | {r['engine steps/s']:,.1f} | {r['world-steps/s']:,.0f} | "
                     f"{r['state bytes/world']:,.0f} |")
    table = out / "scaling.md"
    table.write_text("\n".join(lines) + "\n")
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    ws = [r["W"] for r in rows["worlds"]]
    left.loglog(ws, [r["Push world-steps/s"] for r in rows["worlds"]], "o-", label="Push-v0 (env steps x W)")
    left.loglog(ws, [r["stack world-steps/s"] for r in rows["worlds"]], "s-", label="5-box stack (engine)")
    left.set_xlabel("worlds W")
    left.set_ylabel("world-steps/s")
    left.legend()
    left.grid(True, which="both", alpha=0.3)
    bs = [r["bodies"] for r in rows["bodies"]]
    right.loglog(bs, [r["world-steps/s"] for r in rows["bodies"]], "o-")
    right.set_xlabel(f"bodies in the pile (W={rows['bodies'][0]['W'] if rows['bodies'] else '-'})")
    right.set_ylabel("world-steps/s")
    right.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    plot = out / "scaling.png"
    fig.savefig(plot, dpi=100)
    plt.close(fig)
    return table, plot


RATIO_NOTE = ("xR baseline = the case's engine steps/s divided by the baseline's rate in batches of 1000 numpy 6x6 "
              "solves/s: x0.1 means one engine step takes as long as 10 such batches (10 000 solves) on this "
              "machine. Shared machines drift; compare ratios, not raw rates, between runs.")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="superdex-bench", description="SuperDex Gym benchmark harness",
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5, help="runs per case; the median is reported")
    parser.add_argument("--steps", type=int, default=100, help="engine steps per run (W=256 runs a tenth)")
    parser.add_argument("--only", default=None,
                        help=f"run only cases whose name contains this text (the env cases' name: {ENV_CASES!r}; the "
                             f"pixel cases': {PIXEL_CASES!r})")
    parser.add_argument("--env-steps", type=int, default=5000, help="env steps per run of the env cases")
    parser.add_argument("--skip-env", action="store_true", help="engine cases only")
    parser.add_argument("--json", default=None, metavar="PATH", help="also write the results as JSON to PATH")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--scaling", default=None, metavar="DIR",
                        help="instead of the cases: cost against worlds (1..4096) and bodies (1..50), state bytes "
                             "per world; writes DIR/scaling.md and DIR/scaling.png")
    return parser


def main(argv=None) -> int:
    from tqdm import tqdm

    args = build_parser().parse_args(argv)
    if args.scaling:
        table, plot = write_scaling(scaling(), args.scaling)
        print(table.read_text())
        print(f"plot written to {plot}")
        return 0
    cases = [name for name in CASES if not args.only or args.only in name]
    run_env = not args.skip_env and (not args.only or args.only in ENV_CASES)
    run_pixels = not args.skip_env and (not args.only or args.only in PIXEL_CASES)
    machine = {"python": platform.python_version(), "numpy": np.__version__, "machine": platform.machine()}
    report = {"machine": machine, "args": vars(args), "cases": {}, "env": {}, "pixels": {}}
    with tqdm(total=1 + len(cases) + run_env + run_pixels, unit="case", leave=False, disable=args.no_progress) as bar:
        bar.set_description("baseline")
        base = baseline(args.repeats)
        bar.update(1)
        report["baseline"] = {"numpy 6x6 solves/s": base * 1000, "batches of 1000 solves/s": base}
        tqdm.write(f"python {machine['python']}, numpy {machine['numpy']}, {machine['machine']}")
        tqdm.write(f"baseline: {base * 1000:,.0f} numpy 6x6 solves/s (median of {args.repeats})")
        tqdm.write(RATIO_NOTE)
        for name in cases:
            bar.set_description(name)
            result = CASES[name](args.repeats, args.steps)
            bar.update(1)
            parts = [f"{k} {v:,.1f}" for k, v in result.items()]
            ratio = result["engine steps/s"] / base
            report["cases"][name] = {**result, "ratio to baseline": ratio}
            tqdm.write(f"{name:40s} " + ", ".join(parts) + f"  (x{ratio:.3g} baseline)")
        for run, part, label, case, width in ((run_env, "env", ENV_CASES, case_env, 55),
                                              (run_pixels, "pixels", PIXEL_CASES, case_pixels, 70)):
            if not run:
                continue
            bar.set_description(label)
            report[part] = case(args)
            bar.update(1)
            for key, value in report[part].items():
                tqdm.write(f"{key:{width}s} {value:,.3f}" if isinstance(value, float) else f"{key:{width}s} {value}")
            if part == "env":
                tqdm.write("ratio single / X: single-env steps/s over X's; make_vec(64) aggregate: 64 worlds' env "
                           "steps/s summed, over X's single-env rate")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")
        print(f"results written to {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
