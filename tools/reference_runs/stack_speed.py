"""Time the released engine on the benchmark's aligned 5-box stack, in world-steps/s (documentation only).

The scene is exactly ``superdex_gym.benchmark._contact_scene("stack", W)`` / ``case_contact``: a static plane
(normal (0,1,0), distance 0); five 0.2 m boxes (half extents 0.1, the 8-vertex / 12-triangle mesh of
``create_box_mesh_shape([0.1,0.1,0.1])``, rebuilt here with the same vertex and triangle order, since the
released engine has no ``create_box_mesh_shape``), density 1000, at y = 0.0993 + 0.1993 k; default
solver, contact and sleep settings (sleeping is off by default in the released engine and we check it);
dt = 0.01; 3 settling steps, then ``--repeats`` timed runs of ``--steps`` steps each. The released engine
has no ``set_num_worlds``, so W worlds are built two ways:

* ``scenes``: W separate scenes, each one stack, stepped one after another (``for s in scenes: s.step``).
  This is the fair equivalent of our W worlds: every world is its own independent solve, like ours.
  Each scene holds ~1.7 MB (RSS), so stepping 256 of them in turn runs from cold caches: the per-world rate
  at W = 256 is about a third of W = 1 (one scene stepped again and again stays in L2); 32 scenes in turn
  already halve it.
* ``far``: one scene holding W stacks 1 m apart on a square grid (one ``step`` per world-step). The engine
  may then share per-step overhead (and its Newton loop) across stacks, so this is the engine's best case.

Rates are world-steps/s = W * steps / wall seconds; each run's rate, their median, min and max are printed,
with the process CPU time per run (CPU > wall would mean the engine used threads despite
``initialize(num_worker_threads=0)``) and the thread count of the process before/after initialising and
after stepping. ``--check-steps N`` also steps a fresh W = 1 stack N steps and records every box's final
height (the top box should be at ~0.8965 m if the stack stands), plus the spread of the top box's height
over the worlds of the timed scenes.

Usage (the venv and the fp64 target of ``tests/reference_data/README.md``):

    /work/venv-ref/bin/python tools/reference_runs/stack_speed.py --worlds 1 256            # fp32 build
    SUPERDEX_PRECISION=fp64 PYTHONPATH=/work/ref-fp64 /work/venv-ref/bin/python \\
        tools/reference_runs/stack_speed.py --worlds 1 256                                  # fp64 build

``--engine ours`` runs the same code on ``superdex_gym.sim`` (for the height check; our own timing is
``superdex-bench --skip-env --only stack``, which uses ``set_num_worlds``). ``tools/stack_speed_compare.sh``
alternates this script with ``superdex-bench``. Prints one JSON document.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time

import numpy as np

DT = 0.01
SETTLE_STEPS = 3
HALF = 0.1
N_BOXES = 5


def box_vertices_triangles(h):
    """The same arrays as ``superdex_gym.sim.shapes.box_mesh(h)`` (vertex i has +h_k where bit k of i is set;
    per axis and side one quad split in two, flipped to face outwards)."""
    h = np.asarray(h, dtype=np.float64)
    bits = (np.arange(8)[:, None] >> np.arange(3)[None, :]) & 1
    vertices = (2.0 * bits - 1.0) * h
    quads = []
    for axis in range(3):
        b, c = [k for k in range(3) if k != axis]
        for side in (0, 1):
            quads.append([(side << axis) | (i << b) | (j << c) for i, j in [(0, 0), (1, 0), (1, 1), (0, 1)]])
    quads = np.array(quads)
    triangles = np.concatenate([quads[:, [0, 1, 2]], quads[:, [0, 2, 3]]])
    p = vertices[triangles]
    normal = np.cross(p[:, 1] - p[:, 0], p[:, 2] - p[:, 0])
    inward = np.einsum("fi,fi->f", normal, p.mean(axis=1)) < 0
    triangles[inward] = triangles[inward][:, [0, 2, 1]]
    return vertices, triangles


def num_threads() -> int:
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return -1


class Engine:
    def __init__(self, which: str):
        self.which = which
        self.threads_before_init = num_threads()
        if which == "ref":
            sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
            from _common import init, precision, real_dtype
            self.sdp = init()  # initialize(num_worker_threads=0)
            self.precision = precision()
            self.dtype = real_dtype()
        else:
            import superdex_gym.sim as sdp
            self.sdp = sdp
            self.precision = "fp64 (superdex_gym.sim)"
            self.dtype = np.float64
        self.threads_after_init = num_threads()
        v, t = box_vertices_triangles([HALF] * 3)
        self.box = self.sdp.create_tri_mesh_shape(np.ascontiguousarray(v.reshape(-1), dtype=self.dtype),
                                                  np.ascontiguousarray(t.reshape(-1), dtype=np.int32))
        self.plane = self.sdp.create_plane_shape(normal=[0, 1, 0], distance=0.0)

    def scene(self, name: str, offsets):
        """One scene with a ground plane and one stack per (x, z) offset; returns (scene, [boxes per stack])."""
        sdp = self.sdp
        scene = sdp.create_scene(name)
        scene.create_rigid_actor(name="ground", shape=self.plane, is_static=True)
        stacks = []
        for j, (x, z) in enumerate(offsets):
            stacks.append([scene.create_rigid_actor(name=f"s{j}box{k}", shape=self.box, density=1000.0,
                                                    world_from_local=sdp.TransformRT(
                                                        translation=[x, 0.0993 + 0.1993 * k, z]))
                           for k in range(N_BOXES)])
        return scene, stacks

    def sleep_info(self, scene) -> dict:
        p = self.sdp.experimental.get_sleep_params(scene)
        return {"can_sleep": bool(p.can_sleep), "min_steps_before_sleep": int(p.min_steps_before_sleep),
                "sleep_threshold": float(p.sleep_threshold)}


def grid_offsets(n: int, spacing: float = 1.0):
    side = int(np.ceil(np.sqrt(n)))
    return [((i % side) * spacing, (i // side) * spacing) for i in range(n)]


def build(engine: Engine, layout: str, worlds: int):
    """Returns (step function doing one world-step for all W worlds, list of top boxes, sleep info)."""
    if layout == "scenes":
        built = [engine.scene(f"stack{w}", [(0.0, 0.0)]) for w in range(worlds)]
        scenes = [s for s, _ in built]
        tops = [st[-1] for _, stacks in built for st in stacks]

        def step():
            for s in scenes:
                s.step(DT)
        return step, tops, engine.sleep_info(scenes[0])
    scene, stacks = engine.scene("stacks", grid_offsets(worlds))
    tops = [st[-1] for st in stacks]

    def step():
        scene.step(DT)
    return step, tops, engine.sleep_info(scene)


def top_heights(tops) -> list[float]:
    return [float(t.get_root_transform().translation[1]) for t in tops]


def time_case(engine: Engine, layout: str, worlds: int, steps: int, repeats: int) -> dict:
    t0 = time.perf_counter()
    step, tops, sleep = build(engine, layout, worlds)
    build_s = time.perf_counter() - t0
    settle = []
    for _ in range(SETTLE_STEPS):
        t0 = time.perf_counter()
        step()
        settle.append(time.perf_counter() - t0)
    rates, cpu_over_wall = [], []
    for _ in range(repeats):
        c0, t0 = time.process_time(), time.perf_counter()
        for _ in range(steps):
            step()
        wall = time.perf_counter() - t0
        rates.append(worlds * steps / wall)
        cpu_over_wall.append((time.process_time() - c0) / wall)
    y = top_heights(tops)
    return {"layout": layout, "worlds": worlds, "steps_per_run": steps, "repeats": repeats,
            "world_steps_per_s_median": statistics.median(rates), "world_steps_per_s_min": min(rates),
            "world_steps_per_s_max": max(rates), "world_steps_per_s_runs": rates,
            "engine_steps_per_s_median": statistics.median(rates) / worlds,
            "cpu_over_wall_runs": cpu_over_wall, "settle_step_s": settle, "build_s": build_s,
            "threads_after_stepping": num_threads(), "sleep_params": sleep,
            "top_y_after": {"steps": SETTLE_STEPS + repeats * steps, "min": min(y), "max": max(y)}}


def height_check(engine: Engine, steps: int) -> dict:
    scene, (boxes,) = engine.scene("check", [(0.0, 0.0)])
    for _ in range(steps):
        scene.step(DT)
    top = boxes[-1].get_root_transform()
    return {"steps": steps, "dt": DT, "box_y": [float(b.get_root_transform().translation[1]) for b in boxes],
            "top_box_xz": [float(top.translation[0]), float(top.translation[2])],
            "top_box_rotation_xyzw": [float(c) for c in np.asarray(top.rotation).reshape(-1)]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--engine", choices=["ref", "ours"], default="ref")
    ap.add_argument("--worlds", type=int, nargs="+", default=[1, 256])
    ap.add_argument("--layout", choices=["scenes", "far", "both"], default="both")
    ap.add_argument("--steps", type=int, default=None, help="steps per run (default: 300 at W=1, 20 at W=256, "
                    "scaled as 6000/W clipped to [5, 300])")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--check-steps", type=int, default=300, help="steps of the W=1 height check (0: skip)")
    args = ap.parse_args()
    load_start = list(os.getloadavg())
    engine = Engine(args.engine)
    layouts = ["scenes", "far"] if args.layout == "both" else [args.layout]
    cases = []
    for w in args.worlds:
        steps = args.steps or int(min(300, max(5, 6000 // w)))
        for layout in (layouts if w > 1 else ["scenes"]):
            cases.append(time_case(engine, layout, w, steps, args.repeats))
    out = {"build": engine.precision, "engine": args.engine, "python": platform.python_version(),
           "threads": {"before_init": engine.threads_before_init, "after_init": engine.threads_after_init,
                       "at_end": num_threads()},
           "loadavg_start_end": None, "cases": cases}
    if args.check_steps:
        out["height_check"] = height_check(engine, args.check_steps)
    if args.engine == "ref":
        from _common import take_logs
        out["engine_logs"] = take_logs()[:20]
    out["loadavg_start_end"] = [load_start, list(os.getloadavg())]
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
