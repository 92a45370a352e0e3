"""Boundary conditions on an articulation's DoFs: the reference's ``add_boundary_condition_dofs_world`` (and
``_permanent``), ``clear_boundary_conditions``, ``get_boundary_condition_dof_indices`` / ``_values_world``.

Entries are kept in the order they were added; the effective value of a DoF is its most recently added live entry
(a clearable entry added after a permanent one wins until cleared, then the permanent one holds again, as in 1.0.1).
A step holds each constrained DoF at its value: every stage's Newton starts there and the DoF leaves the solve (its
gradient entry is zeroed, its Newton-matrix row and column become the identity's), so the stage ends exactly at the
value and the DoF's velocity is the stage's finite difference, as the released engine reports it. Values are the
same in every world and are parameters of the actor (not part of ``capture_state``).
"""

from __future__ import annotations

import numpy as np

from ..validation import real_array
from .params import ArticulatedJointType as JT


class BoundaryConditions:
    """The entries of one articulation (dofs (K,), values (K,), permanent (K,)), in the order added."""

    def __init__(self, model):
        self._model = model
        self.dofs = np.zeros(0, dtype=np.int64)
        self.values = np.zeros(0)
        self.permanent = np.zeros(0, dtype=bool)

    def __bool__(self) -> bool:
        return bool(self.dofs.size)

    def add(self, dof_indices, dof_values_world, permanent: bool) -> None:
        """Append entries after checking the whole call (nothing is added on error)."""
        m = self._model
        raw = np.asarray(dof_indices)
        if raw.ndim != 1 or (raw.size and raw.dtype.kind not in "iu"):
            raise ValueError(f"dof_indices must be a 1-D sequence of integers, got {dof_indices!r}")
        idx = raw.astype(np.int64)
        values = real_array(dof_values_world, "dof_values_world").reshape(-1)
        if values.shape != idx.shape:
            raise ValueError(f"dof_values_world must hold one value per DoF index ({idx.size}), got {values.size}")
        if not np.all(np.isfinite(values)):
            raise ValueError(f"dof_values_world must be finite, got {values.tolist()}")
        if np.any((idx < 0) | (idx >= m.num_dofs)):
            raise ValueError(f"dof_indices must be in [0, {m.num_dofs - 1}] (the actor's DoFs), got {idx.tolist()}")
        if np.any(np.diff(idx) <= 0):
            raise ValueError(f"dof_indices must be sorted in strictly increasing order, got {idx.tolist()}")
        for j, info in enumerate(m.dof_info):
            if m.joint_type[j] in (JT.SPHERICAL, JT.FREE):
                block = np.arange(info.get_rot_offset(), info.get_rot_offset() + 3)
                count = np.isin(block, idx).sum()
                if count not in (0, 3):
                    raise ValueError(f"dof_indices: the rotation DoFs {block.tolist()} of joint {j} "
                                     f"({m.joint_type[j].name}) must be constrained all or none, got {idx.tolist()}")
        self.dofs = np.concatenate([self.dofs, idx])
        self.values = np.concatenate([self.values, values])
        self.permanent = np.concatenate([self.permanent, np.full(idx.size, bool(permanent))])

    def clear(self) -> None:
        """Drop the clearable entries; the permanent ones stay, in their order."""
        keep = self.permanent
        self.dofs, self.values, self.permanent = self.dofs[keep], self.values[keep], self.permanent[keep]

    def effective(self) -> tuple[np.ndarray, np.ndarray]:
        """(DoFs (K,) ascending, their values (K,)): each constrained DoF's most recently added entry."""
        last = {int(d): float(v) for d, v in zip(self.dofs, self.values)}  # later entries overwrite earlier ones
        dofs = np.array(sorted(last), dtype=np.int64)
        return dofs, np.array([last[d] for d in dofs.tolist()])

    def hold(self, q: np.ndarray) -> np.ndarray:
        """q (W, D) with the constrained DoFs at their values (a copy)."""
        dofs, values = self.effective()
        q = q.copy()
        q[:, dofs] = values
        return q


def eliminate(grad: np.ndarray, hess: np.ndarray, columns: np.ndarray) -> None:
    """Take the generalized DoFs ``columns`` out of a Newton system in place: gradient entries 0, rows and columns of
    the matrix those of the identity, so the Newton direction is 0 there and the rest solves with them fixed."""
    if columns.size:
        grad[:, columns] = 0.0
        hess[:, columns, :] = 0.0
        hess[:, :, columns] = 0.0
        hess[:, columns, columns] = 1.0
