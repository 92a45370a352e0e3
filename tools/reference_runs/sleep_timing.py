"""Time a resting stack on the released engine with island sleeping off and on (documentation only).

Five 0.4 m cubes stacked on the plane y = 0, dt 1/60, the default solver; 300 steps; per-step wall time
(median of the last 100 steps, once the stack rests) and the step at which the top cube first reports
ConvergenceStatus.NONE (asleep). Prints JSON. Numbers are in docs/api_parity.md.
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np
from _common import box_mesh, init, ints, precision, reals

sdp = init()
ex = sdp.experimental


def run(can_sleep: bool) -> dict:
    v, t = box_mesh((0.2, 0.2, 0.2))
    shape = sdp.create_tri_mesh_shape(coordinates=reals([c for p in v for c in p]),
                                      connectivity=ints([i for tri in t for i in tri]))
    scene = sdp.create_scene("sleep")
    scene.create_rigid_actor(name="ground", shape=sdp.create_plane_shape(normal=[0, 1, 0], distance=0), is_static=True)
    cubes = [scene.create_rigid_actor(name=f"c{i}", shape=shape, density=1000.0,
                                      world_from_local=sdp.TransformRT(translation=[0, 0.2 + 0.4 * i, 0]))
             for i in range(5)]
    params = ex.SleepParams()
    params.can_sleep = can_sleep
    ex.set_sleep_params(scene, params)
    times, asleep_at = [], None
    for step in range(300):
        t0 = time.perf_counter()
        scene.step(1.0 / 60.0)
        times.append(time.perf_counter() - t0)
        if asleep_at is None and cubes[-1].get_convergence_status().name == "NONE":
            asleep_at = step + 1
    return {"median_step_s_last100": float(np.median(times[-100:])), "median_step_s_first20": float(np.median(times[:20])),
            "asleep_at_step": asleep_at, "top_y": float(cubes[-1].get_root_transform().translation[1])}


json.dump({"build": precision(), "awake": run(False), "sleeping": run(True)}, sys.stdout, indent=1)
sys.stdout.write("\n")
