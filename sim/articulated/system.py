"""The scene's articulated actors as one engine system: creation, the link rows' state, world count and capture.

It is registered with the scene's potentials only once an articulation exists, so a scene without articulations
keeps its exact solver path and bits. It contributes nothing to a Newton itself (``is_active`` is False): a scene
holding articulations is stepped by sim/articulated/coupled.py, which finds it among the potentials.

Each link is a row of the scene's model (an `ArticulatedLinkActor`, a rigid actor without DoFs of its own) so
that contact, layers, pair filters and queries treat it as any actor; its row in the scene's state always holds
the forward kinematics of the articulation's pose and the link velocities (`sync`).
"""

from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np

from .. import lie
from ..params import QueryType
from ..potentials.base import Potential
from . import worlds as per_world
from .actor import ArticulatedActor, ArticulatedLinkActor
from .kinematics import forward_kinematics
from .model import build_model
from .oracle import ArticulatedOracle


class ArticulationSystem(Potential):
    def __init__(self, scene):
        self._scene = scene
        self.actors: list[ArticulatedActor] = []
        # Handles count per scene: a later system of the same scene (after its last articulation went) goes on.
        self._constraint_handles = scene.__dict__.setdefault("_articulated_constraint_handles", itertools.count(1))
        self.constraints: dict = {}  # handle -> ArticulatedConstraint, live ones, in creation order

    def create(self, params, first_handle: int):
        """Validate ``params`` whole and build (actor, link records, link initial rows) with consecutive handles
        from ``first_handle``; the scene is not touched here (the caller registers them)."""
        model = build_model(params)
        scene = self._scene
        oracle = ArticulatedOracle(model, scene.num_worlds, scene.get_gravity())
        handles = tuple(range(first_handle + 1, first_handle + 1 + model.num_links))
        actor = ArticulatedActor(scene, first_handle, oracle, handles)
        records = [replace(r, handle=h, name=f"{model.name}/{n}", params=None)
                   for r, h, n in zip(model.link_records, handles, model.link_names)]
        rot, _, com = forward_kinematics(model, oracle.q[:1])
        rows = [(com[0, i], rot[0, i], oracle.link_velocity[0, i], oracle.link_omega[0, i], False)
                for i in range(model.num_links)]
        return actor, records, rows

    def add(self, actor: ArticulatedActor, link_actors: list) -> None:
        self.actors.append(actor)
        actor._link_actors = list(link_actors)

    def remove(self, actor: ArticulatedActor) -> None:
        self.actors.remove(actor)
        actor.alive = False
        for h, c in self.constraints.items():
            if c._actor is actor:
                self._scene._constraint_queries.forget(("articulated", h))
        self.constraints = {h: c for h, c in self.constraints.items() if c._actor is not actor}

    def add_constraint(self, actor: ArticulatedActor, record, type_name: str):
        from .constraints import ArticulatedConstraint  # the handle module imports this one's actor types

        handle = next(self._constraint_handles)
        self.constraints[handle] = ArticulatedConstraint(actor, record, handle, type_name)
        return self.constraints[handle]

    def destroy_constraint(self, constraint) -> None:
        """Remove a live articulated constraint (RuntimeError if destroyed, ValueError if of another scene)."""
        if constraint._actor.get_scene() is not self._scene:
            raise ValueError(f"{constraint!r} belongs to another scene")
        constraint._live()
        constraint._actor._oracle.remove_constraint(constraint._record)
        del self.constraints[constraint.get_handle()]
        self._scene._constraint_queries.forget(("articulated", constraint.get_handle()))

    def link_rows(self, actor: ArticulatedActor) -> np.ndarray:
        return np.array([la._row() for la in actor._link_actors], dtype=np.int64)

    def sync(self, actor: ArticulatedActor, worlds=None) -> None:
        """Write the links' poses and velocities (all worlds, or ``worlds``) into the scene's current state."""
        o = actor._oracle
        w = np.arange(o.num_worlds) if worlds is None else np.asarray(worlds)
        rot, _, com = forward_kinematics(actor.model, o.q[w])
        cur = self._scene.current_kinematics()
        rows = self.link_rows(actor)
        idx = np.ix_(w, rows)
        cur.com_position[idx] = com
        cur.rotation[idx] = rot
        cur.linear_velocity[idx] = o.link_velocity[w]
        cur.angular_velocity[idx] = o.link_omega[w]
        link_f = getattr(o, "link_f", None)
        cur.velocity_sym[idx] = 0.0 if link_f is None else lie.sym(link_f[w])

    # --- Potential hooks ------------------------------------------------------------------------------------------
    def is_active(self, ctx) -> bool:
        return False

    def before_step(self, scene) -> None:
        want = scene.has_registered_queries() and scene.is_query_registered(QueryType.CONSTRAINT_FORCE)
        for actor in self.actors:
            actor._oracle.want_constraint_force = want

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
            if np.shape(d["constraint_target"])[1] != actor._oracle.constraint_target.shape[1]:
                raise ValueError(f"the captured state holds another set of constraints on articulated actor "
                                 f"{actor.get_name()!r}")
        for actor, d in zip(self.actors, data):
            hist = per_world.restore(actor._oracle, d, worlds, source_worlds)
            target = slice(None) if worlds is None else np.asarray(worlds)
            src = slice(None) if worlds is None else np.asarray(source_worlds)
            if worlds is None:
                actor._num_history = hist
            else:
                actor._num_history[target] = hist
            if "pending_set" in d and actor._pending_set is not None:
                if worlds is None:
                    actor._pending_set = np.array(d["pending_set"])
                    actor._pending_velocity = np.array(d["pending_velocity"])
                else:
                    actor._pending_set[target] = np.asarray(d["pending_set"])[src]
                    actor._pending_velocity[target] = np.asarray(d["pending_velocity"])[src]
