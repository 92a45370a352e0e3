"""Time the released engine on the benchmark's arm (7 revolute joints + 2 prismatic fingers held by single-DoF
drives; with ``--scene cube`` pressing on a free cube), single-threaded, in world-steps/s (documentation only).

The scene is built by the very source of ``superdex_gym.benchmark.arm_scene`` (read from the file and run with the
released engine as ``mod``: the same calls on both engines). The released engine has no ``set_num_worlds``, so W
worlds are W separate scenes stepped one after another (every world its own solve, as ours). dt = 0.01; 3 settling
steps, then ``--repeats`` timed runs of ``--steps`` steps each; default solver settings (max_iter 4). Prints JSON
with each run's rate and their median.

    cd tools/reference_runs && SUPERDEX_PRECISION=fp64 PYTHONPATH=/work/ref312-fp64 /work/ref312/bin/python \\
        arm_speed.py --worlds 1 64 --steps 25 --repeats 5
"""

from __future__ import annotations

import argparse
import ast
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from _common import init, precision

BENCH = Path(__file__).resolve().parents[2] / "superdex_gym" / "benchmark.py"
NAMES = ("ARM_AXES", "ARM_POSE", "arm_box_shape", "arm_scene", "ARM_CUBE_CENTRE", "arm_cube_scene")


def load_arm_scenes():
    """``arm_scene``, ``arm_cube_scene`` and their constants, compiled from benchmark.py's source (nothing else of
    ours is imported)."""
    tree = ast.parse(BENCH.read_text())
    keep = [n for n in tree.body if (isinstance(n, ast.FunctionDef) and n.name in NAMES) or (
        isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id in NAMES for t in n.targets))]
    namespace = {"np": np, "mochi": None}  # the default ``mod`` names our module; the released one is passed
    exec(compile(ast.Module(body=keep, type_ignores=[]), str(BENCH), "exec"), namespace)  # noqa: S102 (ours)
    return namespace


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--worlds", type=int, nargs="+", default=[1, 64])
    parser.add_argument("--steps", type=int, default=25)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--scene", choices=("hold", "cube"), default="hold",
                        help="the arm holding a pose (arm_scene) or pressing on a cube (arm_cube_scene)")
    args = parser.parse_args()
    sdp = init()
    arm_scene = load_arm_scenes()["arm_scene" if args.scene == "hold" else "arm_cube_scene"]
    out = {"build": precision(), "script": "tools/reference_runs/arm_speed.py", "args": vars(args), "worlds": {}}
    for w in args.worlds:
        scenes = [arm_scene(1, sdp) for _ in range(w)]
        for _ in range(3):
            for scene, _arm in scenes:
                scene.step(0.01)
        rates = []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            for _ in range(args.steps):
                for scene, _arm in scenes:
                    scene.step(0.01)
            rates.append(w * args.steps / (time.perf_counter() - t0))
        pose = np.zeros(9)
        scenes[0][1].get_articulated_pose(pose)
        out["worlds"][str(w)] = {"world-steps/s": statistics.median(rates), "runs": rates,
                                 "pose_after": pose.tolist()}
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
