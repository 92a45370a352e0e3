"""`ArticulatedActor` and its nested link actors: the handles a user holds, with the released engine's method names.

The articulation's state (pose q and joint velocities per world, the integrator's velocity states and history)
lives in an `ArticulatedOracle` the scene steps (sim/articulated/system.py). Getters read world ``world``
(default 0); setters write every world unless ``world`` is given. Methods with the reference's out-spans take an
optional preallocated numpy array, fill it and return it; without one they return a new array.
"""

from __future__ import annotations

import copy
from dataclasses import replace

import numpy as np

from .. import lie
from ..actor import RigidActor
from ..geometry_types import ActorType
from ..params import QueryType
from ..transforms import TransformRT
from ..validation import real_array
from . import worlds as per_world
from .kinematics import add_delta, forward_kinematics, joint_transforms, link_jacobians, pose_delta
from .model import check_friction, shape_info
from .oracle import ArticulatedOracle
from .params import ArticulatedJointFrictionParams, ArticulatedJointType as JT, PoseControllerParams


def _out(out, value: np.ndarray, name: str) -> np.ndarray:
    """Fill the caller's preallocated ``out`` (same shape, float) with ``value`` and return it, or return value."""
    if out is None:
        return value
    if not isinstance(out, np.ndarray) or out.shape != value.shape or not np.issubdtype(out.dtype, np.floating):
        raise ValueError(f"{name} must be a float numpy array of shape {value.shape}, got "
                         f"{getattr(out, 'shape', type(out).__name__)}")
    out[...] = value
    return out


def _out_list(out, value: list, name: str) -> list:
    """Fill the caller's list ``out`` (one entry per link) with ``value`` and return it, or return value."""
    if out is None:
        return value
    if not isinstance(out, list) or len(out) != len(value):
        raise ValueError(f"{name} must be a list of {len(value)} entries (one per link)")
    out[:] = value
    return out


class ArticulatedActor:
    """One articulated actor (``Scene.create_articulated_actor``)."""

    def __init__(self, scene, handle: int, oracle: ArticulatedOracle, link_handles: tuple):
        self._scene = scene
        self._handle = handle
        self._oracle = oracle
        self._link_handles = link_handles
        self._num_history = np.zeros(oracle.num_worlds, dtype=np.int64)  # worlds.py: 0 = restart
        self._pending_velocity = self._pending_set = None  # the controller's target velocity for the next step
        self._controller_params = None
        self.alive = True

    # --- identity -------------------------------------------------------------------------------------------------
    @property
    def model(self):
        return self._oracle.model

    def get_name(self) -> str:
        return self.model.name

    def get_handle(self) -> int:
        return self._handle

    def get_type(self) -> ActorType:
        return ActorType.ARTICULATED

    def get_scene(self):
        return self._scene

    def is_valid(self) -> bool:
        return self.alive

    def is_static(self) -> bool:
        return False

    def is_nested_link_actor(self) -> bool:
        return False

    def get_num_dofs(self) -> int:
        return self.model.num_dofs

    def get_nested_link_actors(self) -> list:
        """Handles of the link actors, in link order (``scene.get_actor(handle)`` gives each)."""
        return list(self._link_handles)

    def get_articulated_shape_info(self):
        return shape_info(self.model)

    def __repr__(self) -> str:
        return f"ArticulatedActor({self.get_name()!r}, handle={self._handle}, dofs={self.get_num_dofs()})"

    # --- helpers ----------------------------------------------------------------------------------------------------
    def _check_alive(self) -> None:
        if not self.alive:
            raise RuntimeError(f"articulated actor {self.get_name()!r} was destroyed")

    def _world(self, world) -> int:
        self._check_alive()
        return self._scene._check_world(world)

    def _dof_vector(self, value, name: str) -> np.ndarray:
        arr = real_array(value, name).reshape(-1)
        if arr.shape != (self.model.num_dofs,):
            raise ValueError(f"{name} must hold {self.model.num_dofs} values (one per DoF), got {arr.size}")
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{name} must be finite, got {arr.tolist()}")
        return arr

    def _write(self, world, q=None, qdot=None) -> None:
        """New pose and / or joint velocities in ``world`` (None: all); the link velocities follow as J(q) qdot and
        those worlds' integrator restarts (BACKWARD_EULER next), as in the engine."""
        self._check_alive()
        worlds = self._scene._worlds(world)
        sub = per_world.take(self._oracle, worlds, 0)
        if q is not None:
            sub.q[:] = q
        if qdot is not None:
            sub.joint_velocity[:] = qdot
        sub._velocities_from_joints()
        per_world.put(self._oracle, worlds, sub)
        self._num_history[worlds] = 0
        self._scene._articulations.sync(self, worlds)

    # --- pose and velocities ----------------------------------------------------------------------------------
    def get_articulated_pose(self, out_pose=None, world: int = 0) -> np.ndarray:
        """The pose (one value per DoF: angles, travels, rotation vectors)."""
        return _out(out_pose, self._oracle.q[self._world(world)].copy(), "out_pose")

    def set_articulated_pose_from_joints(self, pose, world: int | None = None) -> None:
        self._write(world, q=self._dof_vector(pose, "pose"))

    def set_articulated_pose_from_links(self, world_from_links, world: int | None = None) -> None:
        """The pose whose links best match ``world_from_links`` (one TransformRT per link): each joint's motion is
        read from its link's frame relative to the parent's, projected on the joint's DoFs."""
        self._write(world, q=self._pose_from_links(world_from_links))

    def _pose_from_links(self, world_from_links) -> np.ndarray:
        m = self.model
        links = list(world_from_links)
        if len(links) != m.num_links or not all(isinstance(t, TransformRT) for t in links):
            raise ValueError(f"world_from_links must be {m.num_links} TransformRT (one per link)")
        rot = np.array([t.rotation_matrix for t in links])
        origin = np.array([t.translation_array for t in links])
        root = m.parent < 0
        up = np.maximum(m.parent, 0)
        prot = np.where(root[:, None, None], m.root_rotation, rot[up])
        pori = np.where(root[:, None], m.root_translation, origin[up])
        frame = prot @ m.parent_rotation  # each joint's frame in the world
        jrot = np.swapaxes(frame, -1, -2) @ rot  # the joint's rotation in its frame
        base = pori + np.einsum("lij,lj->li", prot, m.parent_translation)
        jtrans = np.einsum("lji,lj->li", frame, origin - np.einsum("lij,lj->li", rot, m.joint_to_link) - base)
        logs = lie.log_so3(jrot)
        q = np.zeros(m.num_dofs)
        offset = np.array([info.offset for info in m.dof_info], dtype=np.int64)
        kind = np.array([t.value for t in m.joint_type])
        rev, pri = kind == JT.REVOLUTE.value, kind == JT.PRISMATIC.value
        q[offset[rev]] = np.einsum("li,li->l", logs[rev], m.axis[rev])
        q[offset[pri]] = np.einsum("li,li->l", jtrans[pri], m.axis[pri])
        sph, free = offset[kind == JT.SPHERICAL.value], offset[kind == JT.FREE.value]
        q[sph[:, None] + np.arange(3)] = logs[kind == JT.SPHERICAL.value]
        q[free[:, None] + np.arange(3)] = jtrans[kind == JT.FREE.value]
        q[free[:, None] + np.arange(3, 6)] = logs[kind == JT.FREE.value]
        if not np.all(np.isfinite(q)):
            raise ValueError("world_from_links must be finite")
        return q

    def get_articulated_joint_velocities(self, out_velocities=None, world: int = 0) -> np.ndarray:
        return _out(out_velocities, self._oracle.joint_velocity[self._world(world)].copy(), "out_velocities")

    def set_articulated_joint_velocities(self, velocities, world: int | None = None) -> None:
        self._write(world, qdot=self._dof_vector(velocities, "velocities"))

    def get_articulated_link_transforms(self, out_world_from_links=None, world: int = 0) -> list:
        """World transforms of the link frames (a list of TransformRT; a given list is filled in place)."""
        rot, origin, _ = forward_kinematics(self.model, self._oracle.q[self._world(world)][None])
        value = [TransformRT.from_matrix(r, t) for r, t in zip(rot[0], origin[0])]
        return _out_list(out_world_from_links, value, "out_world_from_links")

    def link_jacobian(self, link: int, world: int = 0) -> np.ndarray:
        """(6, D): the link's (CoM velocity, angular velocity) per unit joint velocity, world frame."""
        _, _, _, jac = link_jacobians(self.model, self._oracle.q[self._world(world)][None])
        return jac[0, link]

    # --- joint data ---------------------------------------------------------------------------------------------
    def get_articulated_dof_limits(self, out_dof_limits=None) -> np.ndarray:
        """(D, 2) [min, max] per DoF; +-inf where unlimited."""
        self._check_alive()
        return _out(out_dof_limits, np.stack([self.model.dof_lower, self.model.dof_upper], axis=1), "out_dof_limits")

    def get_articulated_joint_friction_params(self) -> list:
        return [copy.deepcopy(f) for f in self.model.friction]

    def set_articulated_joint_friction_params(self, friction) -> None:
        self._check_alive()
        entries = list(friction)
        if len(entries) != self.model.num_links:
            raise ValueError(f"friction must hold {self.model.num_links} entries (one per joint), got {len(entries)}")
        checked = [check_friction(f, f"joint {i}") for i, f in enumerate(entries)]
        for i, f in enumerate(checked):
            if self.model.joint_type[i] in (JT.FREE, JT.HARD) and f != ArticulatedJointFrictionParams(
                    falloff_vel=f.falloff_vel, stribeck_vel=f.stribeck_vel):
                raise ValueError(f"joint {i}: a {self.model.joint_type[i].name} joint takes no joint friction")
        self._oracle.model = replace(self.model, friction=tuple(checked))

    def get_articulated_joint_inertia_params(self) -> np.ndarray:
        return self.model.rotor_inertia.copy()

    def set_articulated_joint_inertia_params(self, inertia) -> None:
        self._check_alive()
        values = real_array(inertia, "inertia").reshape(-1)
        if values.shape != (self.model.num_links,) or not np.all(np.isfinite(values) & (values >= 0)):
            raise ValueError(f"inertia must be {self.model.num_links} finite values >= 0 (one per joint), got "
                             f"{values.tolist()}")
        fixed = [i for i, t in enumerate(self.model.joint_type) if t in (JT.FREE, JT.HARD) and values[i] != 0]
        if fixed:
            raise ValueError(f"joint {fixed[0]}: a {self.model.joint_type[fixed[0]].name} joint takes no rotor inertia")
        self._oracle.model = replace(self.model, rotor_inertia=values.copy())

    def set_external_forces_on_dofs(self, dof_indices, force_values, world: int | None = None) -> None:
        """Generalized forces (N or N m) on the listed DoFs, replacing earlier ones, held until changed."""
        self._check_alive()
        worlds = self._scene._worlds(world)
        idx = np.asarray(dof_indices)
        vals = real_array(force_values, "force_values").reshape(-1)
        if idx.ndim != 1 or idx.dtype.kind not in "iu" or idx.shape != vals.shape:
            raise ValueError("dof_indices must be integers, one per value of force_values")
        if np.any((idx < 0) | (idx >= self.model.num_dofs)):
            raise ValueError(f"dof_indices must lie in [0, {self.model.num_dofs - 1}], got {idx.tolist()}")
        if not np.all(np.isfinite(vals)):
            raise ValueError(f"force_values must be finite, got {vals.tolist()}")
        loads = np.zeros(self.model.num_dofs)
        loads[idx] = vals
        self._oracle.dof_loads[worlds] = loads

    # --- boundary conditions (sim/articulated/boundary.py) ---------------------------------------------------------
    def add_boundary_condition_dofs_world(self, dof_indices, dof_values_world) -> None:
        """Hold DoFs at values (m or rad; a SPHERICAL / FREE rotation as its rotation vector, all 3 or none) from
        the next step on, in every world; indices strictly increasing within a call; adds to earlier entries (the
        most recently added entry of a DoF is its value)."""
        self._check_alive()
        self._oracle.boundary.add(dof_indices, dof_values_world, permanent=False)

    def add_boundary_condition_dofs_world_permanent(self, dof_indices, dof_values_world) -> None:
        """As add_boundary_condition_dofs_world, but clear_boundary_conditions keeps these."""
        self._check_alive()
        self._oracle.boundary.add(dof_indices, dof_values_world, permanent=True)

    def clear_boundary_conditions(self) -> None:
        """Remove every clearable entry; permanent ones stay."""
        self._check_alive()
        self._oracle.boundary.clear()

    def get_boundary_condition_dof_indices(self) -> np.ndarray:
        """Every live entry's DoF, in the order added (repeats included)."""
        self._check_alive()
        return self._oracle.boundary.dofs.copy()

    def get_boundary_condition_dof_values_world(self) -> np.ndarray:
        """Every live entry's value, one per get_boundary_condition_dof_indices entry."""
        self._check_alive()
        return self._oracle.boundary.values.copy()

    # --- pose arithmetic ---------------------------------------------------------------------------------------
    def add_articulated_delta_to_pose(self, pose, delta_dofs, out_pose=None) -> np.ndarray:
        q = self._dof_vector(pose, "pose")[None]
        return _out(out_pose, add_delta(self.model, q, self._dof_vector(delta_dofs, "delta_dofs")[None])[0], "out_pose")

    def compute_articulated_pose_delta(self, pose_base, pose_target, out_delta_dofs=None) -> np.ndarray:
        base = self._dof_vector(pose_base, "pose_base")[None]
        target = self._dof_vector(pose_target, "pose_target")[None]
        return _out(out_delta_dofs, pose_delta(self.model, base, target)[0], "out_delta_dofs")

    def get_articulated_pose_distance(self, pose_a, pose_b, out_trans_distances=None, out_rot_distances=None):
        """Per joint: the distance of its translation DoFs and the angle of its relative rotation between two
        poses (the engine's layout: one value per joint). Returns (trans, rot)."""
        m = self.model
        a = self._dof_vector(pose_a, "pose_a")[None]
        b = self._dof_vector(pose_b, "pose_b")[None]
        ra, ta = joint_transforms(m, a)
        rb, tb = joint_transforms(m, b)
        trans = np.linalg.norm(tb[0] - ta[0], axis=1)
        rot = np.linalg.norm(lie.log_so3(rb[0] @ np.swapaxes(ra[0], -1, -2)), axis=1)
        return (_out(out_trans_distances, trans, "out_trans_distances"),
                _out(out_rot_distances, rot, "out_rot_distances"))

    # --- pose controller ---------------------------------------------------------------------------------------
    def has_articulated_pose_controller(self) -> bool:
        return self._oracle.controller is not None

    def add_articulated_pose_controller(self, params: PoseControllerParams) -> None:
        self._check_alive()
        o = self._oracle
        o.add_pose_controller(params)
        self._controller_params = copy.deepcopy(params)
        # The engine starts the target's velocity at the joints' velocity (oracle.add_pose_controller); kept here
        # per world, so that a world's own override leaves the others' alone.
        self._pending_velocity, o._target_velocity = o._target_velocity, None
        self._pending_set = np.ones(o.num_worlds, dtype=bool)

    def remove_articulated_pose_controller(self) -> None:
        self._require_controller()
        o = self._oracle
        o.controller = o.target_pose = o.target_pose_old = o._target_velocity = None
        o.link_offset_com = o.link_offset_rot = o.link_offset_com_old = o.link_offset_rot_old = None
        self._pending_velocity = self._pending_set = None

    def get_articulated_pose_controller_params(self, out_params: PoseControllerParams | None = None):
        """The controller's gains (``out_params``, a PoseControllerParams, is filled too)."""
        self._require_controller()
        value = copy.deepcopy(self._controller_params)
        if out_params is None:
            return value
        if not isinstance(out_params, PoseControllerParams):
            raise TypeError(f"out_params must be a PoseControllerParams, got {type(out_params).__name__}")
        out_params.__dict__.update(value.__dict__)
        return out_params

    def set_articulated_pose_controller_params(self, params: PoseControllerParams) -> None:
        """New gains for the existing controller; its targets stay (checked whole first: on error nothing changes)."""
        self._require_controller()
        o = self._oracle
        kept = (o.controller, o.target_pose, o.target_pose_old, o._target_velocity)
        offsets = (o.link_offset_com, o.link_offset_rot, o.link_offset_com_old, o.link_offset_rot_old)
        o.controller = None
        try:
            o.add_pose_controller(params)
        except (TypeError, ValueError):
            o.controller = kept[0]
            raise
        finally:
            o.target_pose, o.target_pose_old, o._target_velocity = kept[1], kept[2], kept[3]
            o.link_offset_com, o.link_offset_rot, o.link_offset_com_old, o.link_offset_rot_old = offsets
        self._controller_params = copy.deepcopy(params)

    def get_articulated_target_link_transforms(self, out_world_from_targets=None, world: int = 0) -> list:
        """World transforms of the link targets: the links of the target pose, or the transforms given to
        set_articulated_target_link_transforms."""
        self._require_controller()
        o, w = self._oracle, self._world(world)
        rot, _, com = forward_kinematics(self.model, o.target_pose[w][None])
        rot = o.link_offset_rot[w] @ rot[0]
        origin = com[0] + o.link_offset_com[w] - np.einsum("lij,lj->li", rot, self.model.com_local)
        value = [TransformRT.from_matrix(r, t) for r, t in zip(rot, origin)]
        return _out_list(out_world_from_targets, value, "out_world_from_targets")

    def get_dof_values(self, dof_indices, out_dof_values=None, world: int = 0) -> np.ndarray:
        """Pose values of the listed DoFs."""
        idx = np.asarray(dof_indices)
        if idx.ndim != 1 or idx.dtype.kind not in "iu" or np.any((idx < 0) | (idx >= self.model.num_dofs)):
            raise ValueError(f"dof_indices must be integers in [0, {self.model.num_dofs - 1}], got {dof_indices!r}")
        return _out(out_dof_values, self._oracle.q[self._world(world), idx], "out_dof_values")

    def _require_controller(self) -> None:
        self._check_alive()
        if self._oracle.controller is None:
            raise ValueError(f"articulated actor {self.get_name()!r} has no pose controller "
                             f"(add_articulated_pose_controller first)")

    def set_articulated_target_pose(self, pose, world: int | None = None) -> None:
        """The controller's target; its change since the previous step acts as the target's velocity."""
        self._require_controller()
        self._set_target(self._scene._worlds(world), self._dof_vector(pose, "pose"))

    def _set_target(self, worlds, pose, world_from_targets=None) -> None:
        """Target pose of ``worlds``, and the link targets' offsets from its links (none without transforms)."""
        o = self._oracle
        o.target_pose[worlds] = pose
        o.link_offset_com[worlds] = 0.0
        o.link_offset_rot[worlds] = np.eye(3)
        if world_from_targets is None:
            return
        rot, _, com = forward_kinematics(self.model, pose[None])
        given_rot = np.array([t.rotation_matrix for t in world_from_targets])
        given_com = np.einsum("lij,lj->li", given_rot, self.model.com_local) + np.array(
            [t.translation_array for t in world_from_targets])
        o.link_offset_com[worlds] = given_com - com[0]
        o.link_offset_rot[worlds] = given_rot @ np.swapaxes(rot[0], -1, -2)

    def reset_articulated_target_pose(self, pose, world: int | None = None) -> None:
        """The controller's target with zero target velocity for the next step."""
        self._require_controller()
        self._reset_target(world, self._dof_vector(pose, "pose"))

    def _reset_target(self, world, pose, world_from_targets=None) -> None:
        self._require_controller()
        worlds = self._scene._worlds(world)
        self._set_target(worlds, pose, world_from_targets)
        self._pending_velocity[worlds] = 0.0
        self._pending_set[worlds] = True

    def set_articulated_target_velocity(self, velocity, world: int | None = None) -> None:
        """The target's velocity for the next step only (one value per DoF)."""
        self._require_controller()
        worlds = self._scene._worlds(world)
        self._pending_velocity[worlds] = self._dof_vector(velocity, "velocity")
        self._pending_set[worlds] = True

    def set_articulated_target_link_transforms(self, world_from_targets, world: int | None = None) -> None:
        """The controller's target as link transforms (one TransformRT per link): the target pose is the pose whose
        links best match them (as set_articulated_pose_from_links); its change acts as the target's velocity."""
        self._require_controller()
        self._set_target(self._scene._worlds(world), self._pose_from_links(world_from_targets), world_from_targets)

    def reset_articulated_target_link_transforms(self, world_from_targets, world: int | None = None) -> None:
        """As set_articulated_target_link_transforms, with zero target velocity for the next step."""
        self._reset_target(world, self._pose_from_links(world_from_targets), world_from_targets)

    # --- queries ------------------------------------------------------------------------------------------------
    def is_query_supported(self, type) -> bool:  # noqa: A002 (the reference's argument name)
        return QueryType(type) == QueryType.ARTICULATED_CONTROLLER_FORCE

    def register_query(self, type) -> QueryType:  # noqa: A002
        """ARTICULATED_CONTROLLER_FORCE only: the controller's force is kept from the next step on."""
        self._check_alive()
        query = QueryType(type)
        if query != QueryType.ARTICULATED_CONTROLLER_FORCE:
            raise ValueError(f"type: an articulated actor supports QueryType.ARTICULATED_CONTROLLER_FORCE only, got "
                             f"{query!r}")
        self._oracle.want_controller_force = True
        return query

    def cancel_query(self, handle) -> None:
        self._check_alive()
        if QueryType(handle) == QueryType.ARTICULATED_CONTROLLER_FORCE:
            self._oracle.want_controller_force = False
            self._oracle.controller_force = None

    def get_articulated_controller_force(self, out_forces=None, world: int = 0) -> np.ndarray:
        """The pose controller's generalized force on each DoF (N or N m) at the end of the last step: minus the
        gradient of its constraints' energy there (zeros without a controller). Needs
        register_query(QueryType.ARTICULATED_CONTROLLER_FORCE) before that step."""
        w = self._world(world)
        if not self._oracle.want_controller_force:
            raise RuntimeError(f"articulated actor {self.get_name()!r}: register_query(QueryType."
                               f"ARTICULATED_CONTROLLER_FORCE) first; the force comes with the next step")
        if self._oracle.controller_force is None:
            raise RuntimeError(f"articulated actor {self.get_name()!r}: the controller force is available after the "
                               f"next step")
        return _out(out_forces, self._oracle.controller_force[w].copy(), "out_forces")

    def get_articulated_target_pose(self, out_pose=None, world: int = 0) -> np.ndarray:
        self._require_controller()
        return _out(out_pose, self._oracle.target_pose[self._world(world)].copy(), "out_pose")

    # --- scene hooks (sim/articulated/system.py) ----------------------------------------------------------------
    def _apply_pending(self, sub, worlds: np.ndarray, dt: float) -> None:
        """In the step's sub-oracle of ``worlds``: the old target of a world given a target velocity is
        target (-) dt v (then the override is used up)."""
        if sub.controller is None or not np.any(self._pending_set[worlds]):
            return
        w = np.flatnonzero(self._pending_set[worlds])
        sub.target_pose_old[w] = add_delta(self.model, sub.target_pose[w], -dt * self._pending_velocity[worlds[w]])
        sub.link_offset_com_old[w], sub.link_offset_rot_old[w] = sub.link_offset_com[w], sub.link_offset_rot[w]
        self._pending_set[worlds] = False


class ArticulatedLinkActor(RigidActor):
    """A link of an articulated actor as an actor of the scene (its name ``<actor>/<link>``): a row of the model
    like a rigid actor (contact, layers, pair filters, queries), whose pose and velocity follow the articulation.
    It owns no DoFs, so pose, velocity, load and mass setters are refused."""

    def __init__(self, scene, record, articulation: ArticulatedActor, link: int):
        super().__init__(scene, record)
        self._articulation = articulation
        self._link = link

    def is_valid(self) -> bool:
        return self._articulation.alive and super().is_valid()

    def is_nested_link_actor(self) -> bool:
        return True

    def get_articulated_actor(self) -> int:
        return self._articulation.get_handle()

    def get_articulated_jacobian(self, world: int = 0) -> np.ndarray:
        """The (6, D) Jacobian flattened row-major as the engine's span: rows (CoM velocity, angular velocity)."""
        return self._articulation.link_jacobian(self._link, world).reshape(-1)

    def _refuse(self, *args, **kwargs):
        raise TypeError(f"link actor {self.get_name()!r} has no DoFs of its own: set the articulated actor's pose, "
                        f"joint velocities or DoF forces instead")

    set_root_transform = set_center_of_mass_transform = set_velocity = _refuse
    set_external_forces_on_dofs = add_external_force_at_local_position = _refuse
    set_density = set_inertia_properties = _refuse
