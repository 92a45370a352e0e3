"""Module-level context functions of the reference API: ``initialize`` / ``shutdown`` / ``create_scene``.

The reference engine keeps a process-wide context with a worker-thread pool. Here the context only tracks the
scenes it created: the worker count is accepted (and validated) so reference scripts run unchanged, and numpy
vectorization replaces the thread pool.
"""

from __future__ import annotations

from .scene import Scene

_state = {"initialized": False, "num_worker_threads": -1, "scenes": []}


def initialize(num_worker_threads: int = -1) -> None:
    """Accepted and harmless: negative -> hardware default, 0 -> single thread, N -> N workers (ignored here)."""
    if isinstance(num_worker_threads, bool) or not isinstance(num_worker_threads, int):
        raise TypeError(f"num_worker_threads must be an integer, got {num_worker_threads!r}")
    _state["initialized"] = True
    _state["num_worker_threads"] = num_worker_threads


def shutdown() -> None:
    for scene in list(_state["scenes"]):
        destroy_scene(scene)
    _state["initialized"] = False


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
