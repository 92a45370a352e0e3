"""`RigidActor`: the handle a user holds for one rigid actor, with the reference engine's accessor names.

An actor's data lives in the scene (its row of the compiled model and of the batched state); the actor object only
knows its scene and row. Getters read world ``world`` (default 0); setters write every world unless ``world`` is
given, so a W = 1 scene behaves exactly like the reference.
"""

from __future__ import annotations

import numpy as np

from . import actor_queries, lie
from .geometry_types import Aabb, ActorType, Error, MeshDataView, QueryHandle, SdfDistances, transformed_aabb
from .mass_properties import inertia_from_real6, real6_from_inertia, second_moment_from_inertia
from .params import ContactParams, ConvergenceStatus, QueryType
from .transforms import Quaternion, TransformRT, as_vector3


class RigidActor:
    def __init__(self, scene, record):
        self._scene = scene
        self._record = record

    # --- identity ---------------------------------------------------------------------------------------------
    def get_name(self) -> str:
        return self._record.name

    def get_handle(self) -> int:
        return self._record.handle

    def is_static(self) -> bool:
        return self._record.is_static

    def is_valid(self) -> bool:
        return self._record.alive

    def get_shape(self):
        return self._record.shape

    def get_layer(self) -> str:
        return self._record.layer

    def get_contact_layer(self) -> str:
        """The contact layer's name ("" if none), as ``get_layer``."""
        return self._record.layer

    def get_type(self) -> ActorType:
        return ActorType.RIGID

    def get_scene(self):
        return self._scene

    def has_root_transform(self) -> bool:
        return True

    def get_reference_shape(self):
        """The shape this actor was created from (our shapes are immutable objects, so no new handle is needed)."""
        return self._record.shape

    def set_contact_layer(self, layer: str) -> None:
        if not isinstance(layer, str):
            raise TypeError(f"layer must be a string, got {layer!r}")
        self._row()
        self._record.layer = layer
        self._scene._contact.edited()  # the contact pairs follow the layers

    def get_collider_type(self):
        return self._record.collider_type

    def get_contact_params(self):
        import copy

        return copy.deepcopy(self._record.contact)

    def set_contact_params(self, params) -> None:
        import copy

        if not isinstance(params, ContactParams):
            raise TypeError(f"params must be a ContactParams, got {type(params).__name__}")
        params = copy.deepcopy(params).validate()
        self._row()
        self._record.contact = params
        self._scene._mark_dirty()

    def get_num_dofs(self) -> int:
        return 0 if self._record.is_static else 6

    def __repr__(self) -> str:
        kind = "static" if self._record.is_static else "dynamic"
        return f"RigidActor(name={self._record.name!r}, handle={self._record.handle}, {kind})"

    def __eq__(self, other) -> bool:
        return isinstance(other, RigidActor) and other._record is self._record

    def __hash__(self) -> int:
        return hash(self._record.handle)

    # --- internal ---------------------------------------------------------------------------------------------
    def _row(self) -> int:
        if not self._record.alive:
            raise RuntimeError(f"actor {self._record.name!r} (handle {self._record.handle}) was destroyed")
        return self._scene._row_of(self._record)

    # --- pose ---------------------------------------------------------------------------------------------------
    def get_root_transform(self, world: int = 0) -> TransformRT:
        """world_from_local: rotation R, translation c - R com_local (digest 2.2)."""
        row, w = self._row(), self._scene._check_world(world)
        cur = self._scene._state.current
        rot = cur.rotation[w, row]
        return TransformRT.from_matrix(rot, cur.com_position[w, row] - rot @ self._record.com_local)

    def set_root_transform(self, world_from_local: TransformRT, world: int | None = None) -> None:
        """Teleport. Dynamic: velocity unchanged, integrator history reset. Static: the new pose is reached at the
        end of the next step, and the implied velocity is (new - previous) / dt (digest 1)."""
        if not isinstance(world_from_local, TransformRT):
            raise TypeError(f"world_from_local must be a TransformRT, got {type(world_from_local).__name__}")
        rot = world_from_local.rotation_matrix
        self._scene._set_pose(self._row(), rot, world_from_local.translation_array + rot @ self._record.com_local, world)

    def get_center_of_mass_transform(self, world: int = 0) -> TransformRT:
        row, w = self._row(), self._scene._check_world(world)
        cur = self._scene._state.current
        return TransformRT.from_matrix(cur.rotation[w, row], cur.com_position[w, row])

    def set_center_of_mass_transform(self, world_from_com: TransformRT, world: int | None = None) -> None:
        if not isinstance(world_from_com, TransformRT):
            raise TypeError(f"world_from_com must be a TransformRT, got {type(world_from_com).__name__}")
        self._scene._set_pose(self._row(), world_from_com.rotation_matrix, world_from_com.translation_array, world)

    def get_dof_values(self, dof_indices=None, out_dof_values=None, world: int = 0) -> np.ndarray:
        """[0:3] world CoM position, [3:6] world-from-local rotation vector; empty for static actors.

        ``dof_indices`` None or empty: every DoF (the reference's empty span); else those DoFs. With
        ``out_dof_values`` (a float array of the result's length) the values are written there too."""
        row, w = self._row(), self._scene._check_world(world)
        if self._record.is_static:
            values = np.zeros(0)
        else:
            cur = self._scene._state.current
            values = np.concatenate([cur.com_position[w, row], lie.log_so3(cur.rotation[w, row])])
        if dof_indices is not None and len(dof_indices):
            idx = np.asarray(dof_indices)
            if idx.ndim != 1 or not np.issubdtype(idx.dtype, np.integer) or np.any((idx < 0) | (idx >= values.size)):
                raise ValueError(f"dof_indices must be integers in [0, {values.size - 1}], got {dof_indices!r}")
            values = values[idx]
        if out_dof_values is not None:
            if not isinstance(out_dof_values, np.ndarray) or out_dof_values.shape != values.shape:
                raise ValueError(f"out_dof_values must be a numpy array of shape {values.shape}")
            out_dof_values[...] = values
        return values

    # --- velocity -------------------------------------------------------------------------------------------------
    def get_linear_velocity(self, world: int = 0) -> np.ndarray:
        row, w = self._row(), self._scene._check_world(world)
        return self._scene._state.current.linear_velocity[w, row].copy()

    def get_angular_velocity(self, world: int = 0) -> np.ndarray:
        row, w = self._row(), self._scene._check_world(world)
        return self._scene._state.current.angular_velocity[w, row].copy()

    def set_velocity(self, linear_vel, angular_vel, world: int | None = None) -> None:
        """World CoM velocity [m/s] and angular velocity [rad/s]. Resets multistep history. A static actor only
        accepts zeros (its velocity is implied by its poses; zeros cancel a pending implied velocity)."""
        lin = as_vector3(linear_vel, "linear_vel")
        ang = as_vector3(angular_vel, "angular_vel")
        self._scene._set_velocity(self._row(), lin, ang, world)

    # --- mass properties ----------------------------------------------------------------------------------------
    def get_mass(self) -> float:
        self._row()
        return 0.0 if self._record.is_static else float(self._record.mass)

    def get_density(self) -> float:
        self._row()  # a destroyed actor raises
        return float(self._record.density)

    def set_density(self, density: float) -> None:
        """Rescale mass and inertia to a new density, keeping the centre of mass."""
        self._require_dynamic("set_density")
        density = float(density)
        if not np.isfinite(density) or density <= 0:
            raise ValueError(f"density must be finite and > 0, got {density}")
        factor = density / self._record.density
        self._scene._set_mass_properties(
            self._record, self._record.mass * factor, self._record.com_local, self._record.second_moment * factor
        )
        self._record.density = density

    def get_rigid_center_of_mass_local(self) -> np.ndarray:
        return self._record.com_local.copy()

    def get_rigid_moment_of_inertia_local(self) -> np.ndarray:
        """Real6 (ixx, ixy, ixz, iyy, iyz, izz) about the CoM, local axes, negative tensor notation."""
        j = self._record.second_moment
        return real6_from_inertia(np.trace(j) * np.eye(3) - j)

    def set_inertia_properties(self, mass: float, center_of_mass, moment_of_inertia) -> None:
        """Explicit mass [kg], CoM (local frame) and Real6 inertia about the CoM. The root transform is kept."""
        self._require_dynamic("set_inertia_properties")
        mass = float(mass)
        if not np.isfinite(mass) or mass <= 0:
            raise ValueError(f"mass must be finite and > 0, got {mass}")
        com = as_vector3(center_of_mass, "center_of_mass")
        inertia = inertia_from_real6(moment_of_inertia)
        vals = np.linalg.eigvalsh(inertia)
        if vals.min() <= 0:
            raise ValueError(f"moment_of_inertia must be positive definite, got principal moments {vals.tolist()}")
        self._scene._set_mass_properties(self._record, mass, com, second_moment_from_inertia(inertia))
        self._record.density = mass / self._record.volume if self._record.volume else self._record.density

    def _require_dynamic(self, what: str) -> None:
        self._row()
        if self._record.is_static:
            raise ValueError(f"{what} is not allowed on static actor {self._record.name!r}")

    # --- loads -------------------------------------------------------------------------------------------------
    def set_external_forces_on_dofs(self, dof_indices, force_values, world: int | None = None) -> None:
        """World force [N] on DoFs 0-2 and torque [N m] on DoFs 3-5; replaces all previous DoF loads."""
        self._require_dynamic("set_external_forces_on_dofs")
        idx = np.asarray(dof_indices)
        vals = np.asarray(force_values, dtype=np.float64)
        if idx.ndim != 1 or not np.issubdtype(idx.dtype, np.integer):
            raise TypeError(f"dof_indices must be a 1-D sequence of integers, got {dof_indices!r}")
        if vals.shape != idx.shape:
            raise ValueError(f"force_values must have the same length as dof_indices ({idx.shape[0]}), got shape {vals.shape}")
        if np.any((idx < 0) | (idx > 5)) or len(np.unique(idx)) != len(idx):
            raise ValueError(f"dof_indices must be distinct integers in [0, 5], got {idx.tolist()}")
        if not np.all(np.isfinite(vals)):
            raise ValueError(f"force_values must be finite, got {vals.tolist()}")
        load = np.zeros(6)
        load[idx] = vals
        self._scene._state.external_force[self._scene._worlds(world), self._row()] = load

    def add_external_force_at_local_position(self, force, local_position, world: int | None = None) -> None:
        """A constant world force [N] applied at a point given in the actor's local frame [m].

        Potential U = -f.c - f.R r, r = local_position - com_local (seed page, "Continuous Model"). Accumulates
        until ``clear_external_forces``.
        """
        self._require_dynamic("add_external_force_at_local_position")
        f = as_vector3(force, "force")
        p = as_vector3(local_position, "local_position")
        self._scene._add_offset_force(self._row(), f, p - self._record.com_local, world)

    def get_external_forces(self, out_forces, world: int = 0) -> None:
        """Write the DoF loads set by ``set_external_forces_on_dofs`` into ``out_forces`` (one float per DoF:
        force [N] on 0-2, torque [N m] on 3-5; empty for static actors). Forces added at local positions are not
        DoF loads and are not included, as in the released engine."""
        row, w = self._row(), self._scene._check_world(world)
        if not isinstance(out_forces, np.ndarray) or not np.issubdtype(out_forces.dtype, np.floating):
            raise TypeError(f"out_forces must be a float numpy array, got {type(out_forces).__name__}")
        n = self.get_num_dofs()
        if out_forces.shape != (n,):
            raise ValueError(f"out_forces must have shape ({n},) (get_num_dofs()), got {out_forces.shape}")
        if n:
            out_forces[...] = self._scene._state.external_force[w, row]

    def clear_external_forces(self, world: int | None = None) -> None:
        row = self._row()
        worlds = self._scene._worlds(world)
        self._scene._state.external_force[worlds, row] = 0.0
        self._scene._state.offset_force[worlds, row] = 0.0

    # --- queries (sim/actor_queries.py) ---------------------------------------------------------------------------
    def register_query(self, type: QueryType) -> QueryHandle:  # noqa: A002 (the reference's argument name)
        """Compute ``type`` (a QueryType or its value) for this actor from the next step on; cancel the returned
        handle when no longer needed. Raises `Error` for a type this actor does not support."""
        return self._scene._actor_queries.register(self, type, compute_now=False)

    def register_query_and_compute(self, type: QueryType) -> QueryHandle:  # noqa: A002
        """As ``register_query``; the rigid query types cannot be computed immediately (as in the released
        engine): a warning says so and the results come with the next step."""
        return self._scene._actor_queries.register(self, type, compute_now=True)

    def cancel_query(self, handle: QueryHandle) -> None:
        self._row()
        self._scene._actor_queries.cancel(self, handle)

    def is_query_supported(self, type: QueryType) -> bool:  # noqa: A002
        """True if ``register_query(type)`` would succeed on this actor."""
        self._row()
        return actor_queries.unsupported_reason(self._record, actor_queries.as_query_type(type)) is None

    def _require(self, query_type: QueryType, what: str) -> int:
        row = self._row()
        if query_type in self._scene._queries:  # registered on the scene: every actor's results, as before
            return row
        reason = actor_queries.unsupported_reason(self._record, query_type)
        if reason is not None:
            raise Error(f"{what} on actor {self._record.name!r}: {reason}")
        self._scene._actor_queries.require(self, query_type, what)
        return row

    def get_contact_force_world(self, world: int = 0) -> np.ndarray:
        """Total contact force [N] on this actor in the last step (needs QueryType.TOTAL_CONTACT_FORCE)."""
        row = self._require(QueryType.TOTAL_CONTACT_FORCE, "get_contact_force_world")
        return self._scene._contact.contact_force(row, self._scene._check_world(world))[0]

    def get_contact_torque_world(self, world: int = 0) -> np.ndarray:
        """Total contact torque [N m] about the CoM in the last step (needs QueryType.TOTAL_CONTACT_FORCE)."""
        row = self._require(QueryType.TOTAL_CONTACT_FORCE, "get_contact_torque_world")
        return self._scene._contact.contact_force(row, self._scene._check_world(world))[1]

    def get_contact_force_from_actor_world(self, other, world: int = 0) -> np.ndarray:
        """Contact force [N] on this actor from ``other`` alone in the last step, world frame (needs
        QueryType.TOTAL_CONTACT_FORCE); summed over every other actor it gives ``get_contact_force_world``."""
        if not isinstance(other, RigidActor):
            raise Error(f"other must be an actor of this scene, got {other!r}")
        if other._scene is not self._scene:
            raise Error(f"other ({other.get_name()!r}) belongs to another scene")
        other._row()
        self._require(QueryType.TOTAL_CONTACT_FORCE, "get_contact_force_from_actor_world")
        return actor_queries.force_from_actor(self._scene, self, other, self._scene._check_world(world))

    def get_contact_points_world(self, world: int = 0) -> list:
        """Active contact samples involving this actor in the last step (needs QueryType.CONTACT_POINTS)."""
        self._require(QueryType.CONTACT_POINTS, "get_contact_points_world")
        return self._scene._contact.contact_points(self._record.handle, self._scene._check_world(world))

    def get_sdf_distances(self, world: int = 0) -> SdfDistances:
        """This actor's active contact samples in the last step with their signed distances to the colliders
        (needs QueryType.SDF_DISTANCES; empty for actors without contact samples, e.g. static ones)."""
        try:
            self._require(QueryType.SDF_DISTANCES, "get_sdf_distances")
        except actor_queries.ResultsPendingError:  # the released engine returns empty distances until a step ran
            return SdfDistances()
        return actor_queries.sdf_distances(self._scene, self, self._scene._check_world(world))

    def get_points_distance_to_surface(self, points_world, out_distances=None, world: int = 0) -> np.ndarray:
        """Signed distance [m] (negative inside) of world points (K, 3) to this actor's collider."""
        pts = np.asarray(points_world, dtype=np.float64)
        if pts.ndim != 2 or pts.shape[1] != 3 or not np.all(np.isfinite(pts)):
            raise ValueError(f"points_world must be a finite (K, 3) array, got shape {pts.shape}")
        dist = self._scene._contact.distance_to_surface(self._record, self._row(), pts, self._scene._check_world(world))
        if out_distances is not None:
            out_distances[...] = dist
            return out_distances
        return dist

    # --- bounding boxes and meshes --------------------------------------------------------------------------------
    def get_aabb_local(self) -> Aabb:
        """Box [m] containing the actor's shape in its local frame (a plane's is unbounded, +-inf)."""
        self._row()
        lo, hi = self._record.shape.aabb()
        return Aabb(lo, hi)

    def get_aabb_world(self, world: int = 0) -> Aabb:
        """World box [m] of the local box under the root transform (the box of the rotated local box, as the
        released engine: a rotated sphere mesh's box is larger than the sphere's)."""
        root = self.get_root_transform(world)
        lo, hi = self._record.shape.aabb()
        return transformed_aabb(lo, hi, root.rotation_matrix, root.translation_array)

    def get_mesh(self) -> MeshDataView:
        """The surface mesh of a mesh actor (a tet mesh's boundary), local frame; empty for implicit shapes."""
        return self.get_surface_mesh()

    def get_surface_mesh(self) -> MeshDataView:
        self._row()
        shape = self._record.shape
        if not shape.has_surface_mesh:
            return MeshDataView()
        return MeshDataView(3, shape.vertices, shape.triangles)

    def get_visual_mesh(self) -> MeshDataView:
        """Empty: shapes here carry no visual mesh (a file's visualMesh is read past, sim/mesh_io.py)."""
        self._row()
        return MeshDataView()

    # --- status -------------------------------------------------------------------------------------------------
    def get_convergence_status(self, world: int = 0):
        row, w = self._row(), self._scene._check_world(world)
        return ConvergenceStatus(int(self._scene._actor_status[w, row]))
