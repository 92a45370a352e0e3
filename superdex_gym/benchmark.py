"""The suite's benchmark harness: ``python -m superdex_gym.benchmark``.

Prints the median of several runs for each case, and the same figure as a ratio against a baseline measured in
the same process (a fixed batch of numpy 6x6 solves), so figures from different (shared, noisy) machines compare.
Later issues add cases to ``CASES``.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time

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


CASES = {
    "free bodies (10 boxes), W=1": lambda r, s: case_free_bodies(1, r, s),
    "free bodies (10 boxes), W=256": lambda r, s: case_free_bodies(256, r, max(5, s // 10)),
}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="SuperDex Gym benchmark harness")
    parser.add_argument("--repeats", type=int, default=5, help="runs per case; the median is reported")
    parser.add_argument("--steps", type=int, default=100, help="engine steps per run (W=256 runs a tenth)")
    parser.add_argument("--only", default=None, help="run only cases whose name contains this text")
    args = parser.parse_args(argv)
    base = baseline(args.repeats)
    print(f"python {platform.python_version()}, numpy {np.__version__}, {platform.machine()}")
    print(f"baseline: {base * 1000:,.0f} numpy 6x6 solves/s (median of {args.repeats})")
    for name, fn in CASES.items():
        if args.only and args.only not in name:
            continue
        result = fn(args.repeats, args.steps)
        parts = [f"{k} {v:,.1f}" for k, v in result.items()]
        ratio = result["engine steps/s"] / base
        print(f"{name:40s} " + ", ".join(parts) + f"  (x{ratio:.3g} baseline)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
