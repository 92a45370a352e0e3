"""Capture and restore of a scene's batched state: in memory (handles) and as bytes (numpy .npz, no pickle).

Restores are bit-exact: the arrays are copied, never recomputed. A snapshot remembers the actor handles it was
taken with; restoring into a scene whose actors changed is an error.
"""

from __future__ import annotations

import io
import itertools
import json
from dataclasses import fields

import numpy as np

from .model import Kinematics, State
from .step.pipeline import system_types

_STATE_ARRAYS = ("num_history", "sym_dirty", "static_previous_com", "static_previous_rotation", "external_force",
                 "offset_force", "offset_local", "status")
_KIN_FIELDS = tuple(f.name for f in fields(Kinematics))


class StateStore:
    def __init__(self, scene):
        self._scene = scene
        self._snapshots: dict = {}
        self._handles = itertools.count(1)
        self._layout_of = (None, None)  # (model, layout): the actors change only with a new model

    def _layout(self) -> tuple:
        """The actor handles in model row order (a snapshot's key); kept per compiled model."""
        model = self._scene.compiled_model()
        if model is not None and self._layout_of[0] is model:
            return self._layout_of[1]
        layout = tuple(r.handle for r in self._scene.actor_records()) + tuple(self._scene._nested)
        if model is not None:
            self._layout_of = (model, layout)
        return layout

    def capture(self) -> int:
        h = next(self._handles)
        self._snapshots[h] = self.snapshot()
        return h

    def snapshot(self) -> tuple:
        """An in-memory copy of everything that changes (state, statuses, contact/constraint data)."""
        return (self._layout(), self._scene._state.copy(), self._scene._actor_status.copy(), self._extra_capture())

    def step_snapshot(self) -> tuple:
        """A `snapshot` for undoing the next step and nothing else: a step builds new arrays for everything it
        changes and never writes into the current ones, so this one shares them instead of copying them. A full
        snapshot where a step could write in place: registered callbacks, potentials other than the scene's
        contact and constraint systems, or spins set from outside (the step stores their S in the current state)."""
        scene = self._scene
        st = scene._state
        contact, constraints = system_types()  # the step replaces these systems' arrays, never writes into them
        if (scene._callbacks["pre"] or scene._callbacks["post"] or np.logical_or.reduce(st.sym_dirty, axis=None)
                or not all(type(p) is contact or type(p) is constraints for p in scene._extra_potentials)):
            return self.snapshot()
        state = State(list(st.history), st.num_history, st.sym_dirty, st.static_previous_com,
                      st.static_previous_rotation, st.external_force, st.offset_force, st.offset_local, st.status,
                      st.time, st.last_dt)
        extra = [p.capture(shared=True) if type(p) is constraints else p.capture() for p in scene._extra_potentials]
        return self._layout(), state, scene._actor_status, extra

    def _extra_capture(self):
        return [p.capture() for p in self._scene.potentials()]

    def _get(self, handle):
        try:
            return self._snapshots[handle]
        except (KeyError, TypeError):
            raise KeyError(f"no captured state with handle {handle!r} (released or never captured)") from None

    def restore(self, handle: int, release_immediately: bool, worlds) -> None:
        # a captured state brings its world count back with it (the reference's restore_state)
        self.restore_snapshot(self._get(handle), worlds, resize=True)
        if release_immediately:
            self.release(handle)

    def check(self, snapshot) -> None:
        """ValueError unless ``snapshot`` is a snapshot of a scene with these actors and as many worlds, every
        array shaped as this scene's (per actor), its poses and velocities finite and its rotations proper."""
        self._check_kind(snapshot)
        if snapshot[1].num_worlds != self._scene.num_worlds:
            raise ValueError(f"the snapshot holds {snapshot[1].num_worlds} worlds, the scene {self._scene.num_worlds}")
        check_state_values(snapshot[1], self._scene._state, "the snapshot")
        if np.shape(snapshot[2]) != np.shape(self._scene._actor_status) or len(snapshot[3]) != len(
                self._scene.potentials()):
            raise ValueError("the snapshot's actor statuses or contact / constraint data do not fit this scene")

    def _check_kind(self, snapshot) -> None:
        if not (isinstance(snapshot, tuple) and len(snapshot) == 4 and isinstance(snapshot[1], State)):
            raise ValueError(f"not a scene snapshot (scene.snapshot()): {type(snapshot).__name__}")
        if snapshot[0] != self._layout():
            raise ValueError("the captured state was taken with a different set of actors; cannot restore it")

    def restore_snapshot(self, snapshot: tuple, worlds, source=None, resize: bool = False) -> None:
        """Restore a `snapshot` (all worlds, or ``worlds`` from the snapshot's ``source`` worlds); a whole-scene
        restore of another world count is refused unless ``resize`` (then the scene takes the snapshot's)."""
        self._check_kind(snapshot)
        layout, state, status, extra = snapshot
        scene = self._scene
        if worlds is None and state.num_worlds != scene.num_worlds and not resize:
            raise ValueError(f"the snapshot holds {state.num_worlds} worlds, the scene {scene.num_worlds}: restore "
                             "a one-world snapshot into chosen worlds with worlds=..., or resize with set_num_worlds")
        if worlds is None:
            scene._state = state.copy()
            scene._actor_status = status.copy()
            for pot, data in zip(scene.potentials(), extra):
                if data is not None:
                    pot.restore(data, worlds=None, source_worlds=None)
        else:
            target = scene._worlds(worlds)
            if source is not None:
                source = np.asarray(source, dtype=np.int64)
                if source.shape != target.shape or np.any((source < 0) | (source >= state.num_worlds)):
                    raise ValueError("source worlds must match the target worlds and lie in the snapshot")
            elif state.num_worlds == 1:
                source = np.zeros(len(target), dtype=np.int64)
            elif state.num_worlds == scene.num_worlds:
                source = target
            else:
                raise ValueError(
                    f"a snapshot of {state.num_worlds} worlds can restore a subset of worlds only into a scene of "
                    f"the same size (this one has {scene.num_worlds}) or from a one-world snapshot"
                )
            _restore_worlds(scene._state, state, target, source)
            scene._actor_status[target] = status[source]
            for pot, data in zip(scene.potentials(), extra):
                if data is not None:
                    pot.restore(data, worlds=target, source_worlds=source)

    def release(self, handle: int) -> None:
        self._get(handle)
        del self._snapshots[handle]

    def equal(self, a: int, b: int) -> bool:
        la, sa, _, _ = self._get(a)
        lb, sb, _, _ = self._get(b)
        if la != lb:
            return False
        da, db = _to_arrays(sa), _to_arrays(sb)
        return da.keys() == db.keys() and all(
            da[k].shape == db[k].shape and np.array_equal(da[k], db[k]) for k in da
        )

    def to_bytes(self) -> bytes:
        """State, statuses and the contact / constraint systems' data (targets), as an .npz without pickles."""
        arrays = _to_arrays(self._scene._state)
        arrays["__actor_status__"] = self._scene._actor_status
        extras = [_flatten(data, f"extra{i}", arrays) for i, data in enumerate(self._extra_capture())]
        meta = {"layout": list(self._layout()), "time": self._scene._state.time,
                "last_dt": self._scene._state.last_dt, "history": len(self._scene._state.history),
                "extras": extras}
        buf = io.BytesIO()
        np.savez(buf, __meta__=np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8), **arrays)
        return buf.getvalue()

    def from_bytes(self, data: bytes) -> None:
        try:
            with np.load(io.BytesIO(data), allow_pickle=False) as z:
                meta = json.loads(bytes(z["__meta__"]).decode())
                arrays = {k: z[k] for k in z.files if k != "__meta__"}
        except Exception as exc:  # malformed input: say so, leave the scene as it was
            raise ValueError(f"not a captured scene state: {exc}") from exc
        if tuple(meta.get("layout", ())) != self._layout():
            raise ValueError("the captured state was taken with a different set of actors; cannot restore it")
        try:
            history = [
                Kinematics(**{f: arrays[f"history{i}_{f}"] for f in _KIN_FIELDS}) for i in range(int(meta["history"]))
            ]
            state = State(history=history, **{k: arrays[k] for k in _STATE_ARRAYS},
                          time=float(meta["time"]), last_dt=float(meta["last_dt"]))
            extras = [_unflatten(e, arrays) for e in meta.get("extras", [])]
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"not a captured scene state: {exc}") from exc
        scene = self._scene
        check_state_values(state, scene._state, "the captured state", same_worlds=False)
        scene._state = state
        if "__actor_status__" in arrays:
            scene._actor_status = arrays["__actor_status__"]
        for pot, data in zip(scene.potentials(), extras):
            if data is not None:
                pot.restore(data, worlds=None, source_worlds=None)


def _flatten(obj, prefix: str, arrays: dict):
    """A JSON skeleton of nested dicts / lists / scalars, with every array moved into ``arrays``."""
    if isinstance(obj, np.ndarray):
        arrays[prefix] = obj
        return {"__array__": prefix}
    if isinstance(obj, dict):
        if not all(isinstance(k, str) for k in obj):
            raise TypeError(f"cannot serialize a dict with non-string keys at {prefix}")
        return {"__dict__": {k: _flatten(v, f"{prefix}/{k}", arrays) for k, v in obj.items()}}
    if isinstance(obj, (list, tuple)):
        return {"__list__": [_flatten(v, f"{prefix}/{i}", arrays) for i, v in enumerate(obj)]}
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    if isinstance(obj, (np.integer, np.floating, np.bool_)):
        return obj.item()
    raise TypeError(f"cannot serialize {type(obj).__name__} at {prefix}")


def _unflatten(node, arrays: dict):
    if isinstance(node, dict):
        if "__array__" in node:
            return arrays[node["__array__"]]
        if "__dict__" in node:
            return {k: _unflatten(v, arrays) for k, v in node["__dict__"].items()}
        if "__list__" in node:
            return [_unflatten(v, arrays) for v in node["__list__"]]
    return node


def _to_arrays(state: State) -> dict:
    out = {k: getattr(state, k) for k in _STATE_ARRAYS}
    for i, kin in enumerate(state.history):
        for f in _KIN_FIELDS:
            out[f"history{i}_{f}"] = getattr(kin, f)
    out["time"] = np.array(state.time)
    out["last_dt"] = np.array(state.last_dt)
    return out


def _restore_worlds(dst: State, src: State, target: np.ndarray, source: np.ndarray) -> None:
    """Copy worlds ``source`` of ``src`` into worlds ``target`` of ``dst`` (history entries matched by age)."""
    for k in _STATE_ARRAYS:
        if k == "offset_local":
            continue
        getattr(dst, k)[target] = getattr(src, k)[source]
    while len(dst.history) < len(src.history):
        dst.history.append(dst.history[-1].copy())
    for i, kin in enumerate(dst.history):
        kin.put(target, src.history[min(i, len(src.history) - 1)].take(source))
    dst.num_history[target] = np.minimum(src.num_history[source], len(src.history))


ROTATION_TOLERANCE = 1e-6  # |R^T R - I|: a proper rotation carried by float64 steps stays far within this


def check_state_values(state: State, reference: State, what: str, same_worlds: bool = True) -> None:
    """ValueError unless ``state``'s arrays have ``reference``'s shapes (the same actors; the same world count
    unless not ``same_worlds``), its kinematics are finite and its rotations proper (orthonormal, det +1)."""
    if len(state.history) < 1 or len(state.history) > len(reference.history) + 2:
        raise ValueError(f"{what} holds {len(state.history)} history entries")
    for name in _STATE_ARRAYS:
        got, ref = np.shape(getattr(state, name)), np.shape(getattr(reference, name))
        per_world = name != "offset_local"  # the others have a leading world axis
        if (got[per_world:] != ref[per_world:] if per_world and not same_worlds else got != ref) or (
                per_world and got[:1] != (state.num_worlds,)):
            raise ValueError(f"{what}'s {name} has shape {got}, this scene's {ref} (another actor layout)")
    expected = (state.num_worlds,) + np.shape(reference.current.com_position)[1:]
    for i, kin in enumerate(state.history):
        for name in _KIN_FIELDS:
            value = np.asarray(getattr(kin, name))
            ref = np.shape(getattr(reference.current, name))
            if value.shape != expected[:2] + ref[2:] or value.dtype != np.float64:
                raise ValueError(f"{what}'s {name} (history {i}) has shape {value.shape} {value.dtype}, this "
                                 f"scene's {expected[:2] + ref[2:]} float64 (an actor's row missing or extra)")
            if not np.logical_and.reduce(np.isfinite(value), axis=None):
                raise ValueError(f"{what}'s {name} (history {i}) holds NaN or inf")
        rot = kin.rotation
        error = np.abs(np.einsum("wnki,wnkj->wnij", rot, rot) - np.eye(3)).max(initial=0.0)
        if error > ROTATION_TOLERANCE or np.any(np.linalg.det(rot) <= 0):
            raise ValueError(f"{what}'s rotation (history {i}) is not a rotation matrix (|R^T R - I| = {error:.3g}, "
                             "or det <= 0)")
