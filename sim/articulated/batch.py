"""Whole-batch access to one articulated actor and its single-DoF drives: every world's pose and joint velocities
in one array, poses of many worlds set at once, and many drives' targets written in one call.

The reference's API reads and writes one world per call (``get_articulated_pose(world=...)``); an environment
stepping W worlds would loop over them in Python every step. These functions do the same work on (W, ...) arrays
and keep the scene's invariants as the per-world setters do (link rows synced, the written worlds' integrator
restarted), so W worlds written together equal the same worlds written one at a time, bit for bit.
"""

from __future__ import annotations

import numpy as np

from ..validation import real_array
from . import worlds as per_world


def joint_state(actor) -> tuple[np.ndarray, np.ndarray]:
    """Copies of every world's pose (W, D) and joint velocities (W, D)."""
    actor._check_alive()
    o = actor._oracle
    return o.q.copy(), o.joint_velocity.copy()


def set_poses_at_rest(actor, poses, worlds=None) -> None:
    """Poses (K, D) of ``worlds`` (K worlds; None: every world), joint velocities zero; those worlds' link velocities
    and integrator history restart, as `set_articulated_pose_from_joints` and `set_articulated_joint_velocities`."""
    actor._check_alive()
    scene = actor.get_scene()
    w = scene._worlds(worlds)
    q = real_array(poses, "poses")
    if q.shape != (len(w), actor.model.num_dofs) or not np.all(np.isfinite(q)):
        raise ValueError(f"poses must be ({len(w)}, {actor.model.num_dofs}) finite values (one row per world), got "
                         f"shape {q.shape}")
    sub = per_world.take(actor._oracle, w, 0)
    sub.q[:] = q
    sub.joint_velocity[:] = 0.0
    sub._velocities_from_joints()
    per_world.put(actor._oracle, w, sub)
    actor._num_history[w] = 0
    scene._articulations.sync(actor, w)


def set_dof_targets(constraints, targets, worlds=None, teleport: bool = False) -> None:
    """Targets (K, C) of C single-DoF target constraints of one articulated actor in ``worlds`` (K worlds; None:
    every world); ``teleport``: also make them the previous step's targets (`update_old_target`: no damping force
    from the jump)."""
    if not constraints:
        raise ValueError("constraints must list at least one single-DoF target constraint")
    actor = constraints[0]._actor
    records = [c._require("set_dof_targets", "single_dof_target") for c in constraints]
    if any(c._actor is not actor for c in constraints):
        raise ValueError("constraints must all belong to one articulated actor")
    w = actor.get_scene()._worlds(worlds)
    values = real_array(targets, "targets")
    if values.shape != (len(w), len(records)) or not np.all(np.isfinite(values)):
        raise ValueError(f"targets must be ({len(w)}, {len(records)}) finite values (one row per world, one column "
                         f"per constraint), got shape {values.shape}")
    slots = np.array([r.slot for r in records], dtype=np.int64)
    o = actor._oracle
    if worlds is None:
        o.constraint_target[:, slots] = values
        if teleport:
            o.constraint_target_old[:, slots] = values
        return
    o.constraint_target[np.ix_(w, slots)] = values
    if teleport:
        o.constraint_target_old[np.ix_(w, slots)] = values
