"""The worker threads of world-parallel kernels: the count ``initialize`` sets and the split of a call's worlds.

Kept apart from sim/context.py (which creates scenes) so the solver can ask for the count without importing the
scene. N >= 2 splits a compiled Newton's worlds into N contiguous slices, one per thread (the kernels release the
GIL); every world is computed alone, so the results are bit-identical to one call. Serial by default because
these machines' cores are shared.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np

_settings = {"num_worker_threads": 1}
_pools: dict = {}  # one lazily created pool per worker count, kept for the process (idle threads are cheap)


def set_worker_threads(count: int) -> None:
    """Threads for world-parallel kernels from now on (values below 2 mean serial)."""
    _settings["num_worker_threads"] = max(int(count), 1)


def worker_threads() -> int:
    """Threads for world-parallel kernels: ``initialize``'s count when it is >= 2, else 1."""
    return _settings["num_worker_threads"]


def run_world_slices(stage, num_worlds: int) -> None:
    """``stage(slice)`` over all worlds: one call with ``slice(None)``, or one contiguous slice per worker thread."""
    threads = min(worker_threads(), num_worlds)
    if threads < 2:
        stage(slice(None))
        return
    pool = _pool(threads)
    bounds = np.linspace(0, num_worlds, threads + 1).round().astype(int)
    futures = [pool.submit(stage, slice(lo, hi)) for lo, hi in zip(bounds[:-1], bounds[1:])]
    for future in futures:
        future.result()  # re-raises a worker's exception here


def _pool(threads: int) -> ThreadPoolExecutor:
    """The process's pool of ``threads`` workers, created at first use."""
    pool = _pools.get(threads)
    if pool is None:
        pool = _pools[threads] = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="superdex-worlds")
    return pool
