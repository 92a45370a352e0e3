"""Module-level context functions of the reference API: ``initialize`` / ``shutdown`` / ``create_scene``.

The reference engine keeps a process-wide context with a worker-thread pool. Here the context tracks the scenes
it created and the worker count: N >= 2 splits the compiled Newton's worlds over N threads (results bit-identical
to serial); anything else, the reference's default -1 included, is serial here, because these machines' cores are
shared (numba's prange pool slowed batched steps 2-60x under load in the prototype of issue 12).
"""

from __future__ import annotations

from . import threads
from .scene import Scene

_state = {"initialized": False, "num_worker_threads": -1, "scenes": []}


def initialize(num_worker_threads: int = -1) -> None:
    """The process-wide context. ``num_worker_threads``: N >= 2 -> the compiled Newton (docs/engine.md, "Solver
    paths") solves contiguous slices of a step's worlds on N threads; 0, 1 or negative -> one thread (the
    reference reads negative as the hardware's count; here threads are opt-in)."""
    if isinstance(num_worker_threads, bool) or not isinstance(num_worker_threads, int):
        raise TypeError(f"num_worker_threads must be an integer, got {num_worker_threads!r}")
    _state["initialized"] = True
    _state["num_worker_threads"] = num_worker_threads
    threads.set_worker_threads(num_worker_threads)


def worker_threads() -> int:
    """Threads for world-parallel kernels: ``initialize``'s count when it is >= 2, else 1."""
    return threads.worker_threads()


def shutdown() -> None:
    for scene in list(_state["scenes"]):
        destroy_scene(scene)
    _state["initialized"] = False
    threads.set_worker_threads(1)


def is_initialized() -> bool:
    return _state["initialized"]


def create_scene(name: str = "") -> Scene:
    """A new scene. Works without ``initialize`` too (the context is implicit)."""
    scene = Scene(name)
    _state["scenes"].append(scene)
    return scene


def destroy_scene(scene: Scene) -> None:
    if not isinstance(scene, Scene):
        raise TypeError(f"expected a Scene, got {type(scene).__name__}")
    if scene in _state["scenes"]:
        _state["scenes"].remove(scene)
    scene.alive = False
