"""Per-world state of one articulation in a scene: the oracle's W-leading arrays taken, put back, replicated and
captured by world, plus a per-world history length so that a setter restarts only the worlds it writes.

`ArticulatedOracle` keeps one integrator history for all its worlds; the scene keeps ``num_history`` (W,) beside
it, as the rigid pipeline does (sim/step/pipeline.py): 0 means the world's velocities were set from outside (the
next step restarts it with BACKWARD_EULER and the spin's S), k >= 1 that history entries 0..k-1 are that world's.
A step groups the worlds by history length and steps each group as an oracle of its own worlds, so W worlds
stepped together give each world's bits alone.
"""

from __future__ import annotations

import copy

import numpy as np

from ..step.integration import effective_tableau
from .oracle import ArticulatedOracle, _Snapshot

# The oracle's attributes with a leading world axis (None allowed for the controller's).
PER_WORLD = ("q", "joint_velocity", "link_velocity", "link_omega", "link_f", "joint_lin", "joint_omega", "joint_f",
             "dof_loads", "gravity", "last_iterations", "target_pose", "target_pose_old",
             "constraint_target", "constraint_target_old", "controller_force", "constraint_force",
             "link_offset_com", "link_offset_rot", "link_offset_com_old", "link_offset_rot_old")
SNAPSHOT_FIELDS = ("q", "joint_velocity", "link_velocity", "link_f", "joint_lin", "joint_f")


def take(oracle: ArticulatedOracle, worlds: np.ndarray, history: int) -> ArticulatedOracle:
    """An oracle of ``worlds`` only (copies), with the first ``history`` history entries (0: restart)."""
    sub = copy.copy(oracle)
    sub.num_worlds = len(worlds)
    for name in PER_WORLD:
        value = getattr(oracle, name, None)
        setattr(sub, name, None if value is None else value[worlds].copy())
    sub._history = [_Snapshot(*(getattr(s, f)[worlds].copy() for f in SNAPSHOT_FIELDS))
                    for s in oracle._history[:history]]
    sub._spin_dirty = history == 0
    return sub


def put(oracle: ArticulatedOracle, worlds: np.ndarray, sub: ArticulatedOracle) -> None:
    """Write ``sub`` (an oracle of ``worlds``) back into ``oracle``'s rows; history entries past ``sub``'s are the
    other worlds' and stay."""
    for name in PER_WORLD:
        value = getattr(sub, name, None)
        if value is None:
            continue
        mine = getattr(oracle, name, None)
        if mine is None:  # the controller's arrays start where a pose controller is added
            mine = np.zeros((oracle.num_worlds,) + value.shape[1:], dtype=value.dtype)
            setattr(oracle, name, mine)
        mine[worlds] = value
    while len(oracle._history) < len(sub._history):
        oracle._history.append(_Snapshot(*(getattr(oracle._history[-1], f).copy() if oracle._history else
                                           np.zeros((oracle.num_worlds,) + getattr(sub._history[0], f).shape[1:])
                                           for f in SNAPSHOT_FIELDS)))
    for mine, theirs in zip(oracle._history, sub._history):
        for f in SNAPSHOT_FIELDS:
            getattr(mine, f)[worlds] = getattr(theirs, f)


def replicate(oracle: ArticulatedOracle, world: int, num_worlds: int) -> None:
    """Every per-world array becomes ``num_worlds`` copies of world ``world`` (Scene.set_num_worlds)."""
    rows = np.full(num_worlds, world, dtype=np.int64)
    for name in PER_WORLD:
        value = getattr(oracle, name, None)
        if value is not None:
            setattr(oracle, name, value[rows].copy())
    oracle._history = [_Snapshot(*(getattr(s, f)[rows].copy() for f in SNAPSHOT_FIELDS)) for s in oracle._history]
    oracle.num_worlds = num_worlds


def step_worlds(oracle: ArticulatedOracle, num_history: np.ndarray, dt: float, method, **solver) -> np.ndarray:
    """Step every world (grouped by history length) and return the new per-world history lengths."""
    needed = effective_tableau(method, 3).num_history
    counts = np.minimum(num_history, needed)
    for count in np.unique(counts).tolist():
        worlds = np.flatnonzero(counts == count)
        sub = take(oracle, worlds, count)
        sub.step(dt, method, **solver)
        put(oracle, worlds, sub)
    return np.minimum(np.maximum(counts, 1) + 1, 3)  # a restarted world holds its restart state and the new one


def capture(oracle: ArticulatedOracle, num_history: np.ndarray) -> dict:
    """Copies of everything a step changes (nested dict of arrays for state_io)."""
    data = {name: getattr(oracle, name).copy() for name in PER_WORLD if getattr(oracle, name, None) is not None}
    data["history"] = [{f: getattr(s, f).copy() for f in SNAPSHOT_FIELDS} for s in oracle._history]
    data["num_history"] = num_history.copy()
    return data


def restore(oracle: ArticulatedOracle, data: dict, worlds=None, source_worlds=None) -> np.ndarray:
    """Put ``capture``'s data back (all worlds, or ``worlds`` from ``source_worlds``); returns num_history."""
    num_history = np.asarray(data["num_history"], dtype=np.int64)
    src = copy.copy(oracle)
    src.num_worlds = len(num_history)
    for name in PER_WORLD:
        setattr(src, name, np.array(data[name]) if name in data else None)
    src._history = [_Snapshot(*(np.array(h[f]) for f in SNAPSHOT_FIELDS)) for h in data["history"]]
    if worlds is None:
        for name in PER_WORLD:
            setattr(oracle, name, getattr(src, name))
        oracle._history, oracle.num_worlds = src._history, src.num_worlds
        return num_history.copy()
    source_worlds = np.asarray(source_worlds, dtype=np.int64)
    put(oracle, np.asarray(worlds), take(src, source_worlds, len(src._history)))
    return num_history[source_worlds]
