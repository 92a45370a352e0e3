"""A scene's compiled model: what its steps read that only its composition and settings decide, converted once.

A scene builds it the first time it steps after a change of its composition or settings (actors and their mass
properties, contact layers, disabled pairs and overrides, constraints added or removed, potentials, solver
parameters, gravity, world count) and drops it on every such change (`Scene.composition_changed`): rebuilding is
the only invalidation. It holds the step's solver path (`pipeline.solver_path`), the compiled Newton's frozen
groups (`compiled_newton.NewtonModel`) and, per (history count, step length), the fused step's stage heads and
working arrays (`fused.StepHeads`). A step reads from outside it only per-step data: the state, the loads, the
constraints' targets, stiffness, damping and saturation (written in place by their setters) and the kernel terms'
packs.
"""

from __future__ import annotations

import numpy as np

from ..solver.compiled_newton import NewtonModel
from .integration import effective_tableau
from . import fused


class CompiledModel:
    """One scene composition and its settings, compiled for stepping ``num_worlds`` worlds."""

    def __init__(self, model, solver, gravity, potentials, num_worlds: int, path: tuple, switches: tuple):
        # path: (name, KernelPlan or None, fused: bool, the name `Scene.solver_path` reports)
        self.model, self.solver, self.gravity = model, solver, np.array(gravity, dtype=np.float64)
        self.potentials = tuple(potentials)  # the core potentials, then the scene's extra ones
        self.num_worlds, self.num_bodies = int(num_worlds), model.bodies.num
        self.switches = switches  # the module switches the path was decided under
        _, kplan, self.fuse, self.path_name = path
        self.newton = NewtonModel(kplan, model, solver.non_linear_solver, num_worlds) if kplan is not None else None
        self._heads: dict = {}  # (history count, dt) -> fused.StepHeads of the all-worlds group
        method = solver.integration_method
        self.longest_history = effective_tableau(method, 3).num_history  # the most completed states a step uses
        self.tableaus = {count: effective_tableau(method, count) for count in range(self.longest_history + 1)}

    def step_heads(self, count: int, tab, dt: float, worlds) -> "fused.StepHeads":
        """The fused step's heads of the all-worlds group for a history count and a step length (an env steps with
        one or two lengths; a refined substep adds halves)."""
        key = (int(count), float(dt))
        heads = self._heads.get(key)
        if heads is None:
            if len(self._heads) >= 8:
                self._heads.clear()
            heads = self._heads[key] = fused.StepHeads(self, tab, dt, worlds, self.num_worlds)
        return heads
