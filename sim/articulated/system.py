"""The scene's articulated actors as one engine system: creation, stepping, world count and state capture.

It is registered with the scene's potentials only once an articulation exists, so a scene without articulations
keeps its exact solver path and bits. It contributes nothing to the rigid Newton (``is_active`` is False): the
articulations are stepped by their own Newton over joint coordinates (sim/articulated/oracle.py, one per world
group, whole-array over worlds). Contact on links is not modelled yet, so the scene refuses to step
articulations together with rigid actors rather than letting them pass through each other.
"""

from __future__ import annotations

import numpy as np

from ..potentials.base import Potential
from . import worlds as per_world
from .actor import ArticulatedActor, ArticulatedLinkActor
from .model import build_model
from .oracle import ArticulatedOracle


class ArticulationSystem(Potential):
    def __init__(self, scene):
        self._scene = scene
        self.actors: list[ArticulatedActor] = []

    def create(self, params, first_handle: int) -> tuple:
        """Validate ``params`` whole and build the actor and its link actors with consecutive handles from
        ``first_handle``; the scene is not touched here (the caller registers them)."""
        model = build_model(params)
        scene = self._scene
        oracle = ArticulatedOracle(model, scene.num_worlds, scene.get_gravity())
        links = tuple(range(first_handle + 1, first_handle + 1 + model.num_links))
        actor = ArticulatedActor(scene, first_handle, oracle, links)
        actor._num_history[:] = 0
        link_actors = [ArticulatedLinkActor(actor, i, h) for i, h in enumerate(links)]
        return actor, link_actors

    def add(self, actor: ArticulatedActor) -> None:
        self.actors.append(actor)

    def remove(self, actor: ArticulatedActor) -> None:
        self.actors.remove(actor)
        actor.alive = False

    def step(self, dt: float, method) -> None:
        for actor in self.actors:
            actor._step(dt, method)

    # --- Potential hooks ------------------------------------------------------------------------------------------
    def is_active(self, ctx) -> bool:
        return False

    def on_num_worlds_changed(self, num_worlds: int) -> None:
        for actor in self.actors:
            per_world.replicate(actor._oracle, 0, num_worlds)
            actor._num_history = np.repeat(actor._num_history[:1], num_worlds)
            if actor._pending_set is not None:
                actor._pending_set = np.repeat(actor._pending_set[:1], num_worlds)
                actor._pending_velocity = np.repeat(actor._pending_velocity[:1], num_worlds, axis=0)

    def capture(self):
        out = []
        for actor in self.actors:
            data = per_world.capture(actor._oracle, actor._num_history)
            if actor._pending_set is not None:
                data["pending_set"] = actor._pending_set.copy()
                data["pending_velocity"] = actor._pending_velocity.copy()
            out.append(data)
        return out

    def restore(self, data, worlds=None, source_worlds=None) -> None:
        if len(data) != len(self.actors):
            raise ValueError("the captured state holds another set of articulated actors")
        for actor, d in zip(self.actors, data):
            hist = per_world.restore(actor._oracle, d, worlds, source_worlds)
            if worlds is None:
                actor._num_history = hist
            else:
                actor._num_history[np.asarray(worlds)] = hist
            if "pending_set" in d and actor._pending_set is not None:
                if worlds is None:
                    actor._pending_set = np.array(d["pending_set"])
                    actor._pending_velocity = np.array(d["pending_velocity"])
                else:
                    src = np.asarray(source_worlds)
                    actor._pending_set[np.asarray(worlds)] = np.asarray(d["pending_set"])[src]
                    actor._pending_velocity[np.asarray(worlds)] = np.asarray(d["pending_velocity"])[src]
