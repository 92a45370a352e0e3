"""Cold (or cached) compile cost of the engine's kernels: one process steps Push-v0, the aligned 5-box stack and a box
with DoF loads, an offset force and Newton-Euler inertia (every potential kernel), then prints the wall-clock of
each part and the kernels that compiled, each with its own time (its callees' compiles subtracted), from numba's
``numba:compile`` events. Point ``NUMBA_CACHE_DIR`` at an empty directory for a cold measurement.

    NUMBA_CACHE_DIR=$(mktemp -d) python tools/jit_cost.py            # the default (compiled Newton) path
    NUMBA_CACHE_DIR=$(mktemp -d) python tools/jit_cost.py --numpy-newton

docs/engine.md ("Solver paths") and docs/benchmark_history.md hold the figures it gave.
"""

import argparse
import resource
import time

T_START = time.perf_counter()

from numba.core import event  # noqa: E402  (timed from before the engine's imports)


class OwnCompileTimes(event.Listener):
    """Per compiled function: wall-clock of its compile minus the compiles it triggered (its callees)."""

    def __init__(self):
        self.open, self.own = [], {}

    def on_start(self, ev):
        self.open.append([time.perf_counter(), 0.0])

    def on_end(self, ev):
        start, children = self.open.pop()
        spent = time.perf_counter() - start
        if self.open:
            self.open[-1][1] += spent
        func = getattr((ev.data or {}).get("dispatcher"), "py_func", None)
        name = f"{getattr(func, '__module__', '?').rsplit('.', 1)[-1]}.{getattr(func, '__qualname__', '?')}"
        total, count = self.own.get(name, (0.0, 0))
        self.own[name] = (total + spent - children, count + 1)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--numpy-newton", action="store_true", help="step on the numpy Newton (default: compiled)")
    parser.add_argument("--top", type=int, default=25, help="how many kernels to list (default 25)")
    args = parser.parse_args(argv)
    compiles = OwnCompileTimes()
    event.register("numba:compile", compiles)

    import gymnasium as gym
    import numpy as np

    import superdex_gym  # noqa: F401  (registers the environments)
    import superdex_gym.sim as mochi
    from superdex_gym.benchmark import _contact_scene
    from superdex_gym.sim.step import pipeline

    pipeline.COMPILED_NEWTON = not args.numpy_newton
    parts = {"imports": time.perf_counter() - T_START}
    t = time.perf_counter()
    env = gym.make("SuperDex/Push-v0")
    env.reset(seed=0)
    for action in np.random.default_rng(0).uniform(-1, 1, (5, 4)).astype(np.float32):
        env.step(action)
    parts["Push-v0"] = time.perf_counter() - t
    t = time.perf_counter()
    stack = _contact_scene("stack", 1)
    stack.step(0.01)
    parts["5-box stack"] = time.perf_counter() - t
    t = time.perf_counter()
    scene = mochi.create_scene()
    box = scene.create_rigid_actor(shape=mochi.create_box_mesh_shape([0.1, 0.2, 0.3]), density=1000.0,
                                   angular_velocity=[1, 2, 3])
    mochi.experimental.enable_newton_euler_inertia(box, True)
    box.set_external_forces_on_dofs([0, 4], [1.0, 0.5])
    box.add_external_force_at_local_position([0, 0, 2.0], [0.05, 0, 0])
    scene.step(0.01)
    parts["loads"] = time.perf_counter() - t
    parts["total"] = time.perf_counter() - T_START
    usage = resource.getrusage(resource.RUSAGE_SELF)
    # CPU seconds of this process: on a shared machine they vary less with the load than wall-clock does.
    parts["process CPU"] = usage.ru_utime + usage.ru_stime

    print(f"solver path: Push-v0 {env.unwrapped.worlds.scene.solver_path()!r}, loads {scene.solver_path()!r}")
    print("  ".join(f"{k} {v:.2f} s" for k, v in parts.items()))
    own = sorted(compiles.own.items(), key=lambda kv: -kv[1][0])
    print(f"{len(own)} functions compiled, {sum(v[0] for _, v in own):.1f} s in all; their own times:")
    for name, (seconds, count) in own[:args.top]:
        print(f"{seconds:7.2f} s  x{count:<2d} {name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
