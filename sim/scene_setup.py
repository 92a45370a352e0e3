"""Turning a `RigidActorParams` into an actor record and its initial state row, with every check done first.

Validation happens here, before the scene changes, so a rejected actor leaves the scene as it was.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field, replace

import numpy as np

from .contact.colliders import ColliderType, resolve_collider_type
from .contact.params import ContactParams, GridSdfParams
from .mass_properties import compute_mass_properties
from .params import RigidActorParams
from .quadrature import ActorBoundaryElementType, BoundarySubsamplingParams
from .shapes import Shape
from .transforms import TransformRT, as_vector3
from .validation import as_bool, check_mass

@dataclass
class ActorRecord:
    """Everything the scene knows about one actor that is not per-world state."""

    handle: int
    name: str
    layer: str
    shape: Shape
    is_static: bool
    has_gravity: bool
    collider_type: ColliderType
    contact: ContactParams
    sdf: GridSdfParams
    boundary_element_type: ActorBoundaryElementType
    boundary_subsampling: BoundarySubsamplingParams | None
    mass: float  # kg (0 for static actors)
    density: float  # kg/m^3
    volume: float  # m^3 (0 for implicit shapes)
    com_local: np.ndarray  # (3,) m, local frame
    second_moment: np.ndarray  # (3, 3) kg m^2 about the CoM, local axes
    static_pivot: np.ndarray = field(default_factory=lambda: np.zeros(3))  # m, bounding-box centre (local)
    newton_euler: bool = False
    alive: bool = True
    params: RigidActorParams | None = field(default=None, repr=False)


def _optional_vector(value, name):
    return None if value is None else as_vector3(value, name)


def build_actor_record(params: RigidActorParams, handle: int):
    """Validate ``params`` and return (record, (com, rotation, linear_velocity, angular_velocity, spin_set)) with
    ``handle`` (handles count per scene, so a state restores into any scene built the same way)."""
    # Copy the mutable parts; shapes are immutable and shared.
    p = replace(params, contact=copy.deepcopy(params.contact), sdf=copy.deepcopy(params.sdf))
    if not isinstance(p.name, str):
        raise TypeError(f"name must be a string, got {p.name!r}")
    if not isinstance(p.layer, str):
        raise TypeError(f"layer must be a string, got {p.layer!r}")
    if not isinstance(p.shape, Shape):
        raise ValueError(f"actor {p.name!r}: shape must be a Shape (create_* or load_shape_from_file), got {p.shape!r}")
    transform = TransformRT() if p.world_from_local is None else p.world_from_local
    if not isinstance(transform, TransformRT):
        raise TypeError(f"world_from_local must be a TransformRT, got {type(transform).__name__}")
    is_static = as_bool(p.is_static, "is_static")
    has_gravity = as_bool(p.has_gravity, "has_gravity")
    if p.collider_type is ColliderType.COUNT:
        raise ValueError("collider_type COUNT is the number of collider types, not a collider type")
    collider = resolve_collider_type(p.collider_type, p.shape.kind, is_static)
    if not isinstance(p.contact, ContactParams):
        raise TypeError(f"contact must be ContactParams, got {type(p.contact).__name__}")
    p.contact.validate()
    if not isinstance(p.sdf, GridSdfParams):
        raise TypeError(f"sdf must be GridSdfParams, got {type(p.sdf).__name__}")
    p.sdf.validate()
    element = ActorBoundaryElementType.DEFAULT if p.boundary_element_type is None else p.boundary_element_type
    if not isinstance(element, ActorBoundaryElementType):
        raise TypeError(f"boundary_element_type must be an ActorBoundaryElementType, got {element!r}")
    if p.boundary_subsampling is not None:
        if not isinstance(p.boundary_subsampling, BoundarySubsamplingParams):
            raise TypeError("boundary_subsampling must be BoundarySubsamplingParams or None")
    lin = _optional_vector(p.linear_velocity, "linear_velocity")
    ang = _optional_vector(p.angular_velocity, "angular_velocity")
    rot = transform.rotation_matrix

    if is_static:
        for name in ("density", "mass", "center_of_mass", "moment_of_inertia"):
            if getattr(p, name) is not None:
                raise ValueError(f"static actor {p.name!r}: {name} does not apply (static actors have infinite mass)")
        if (lin is not None and np.any(lin != 0)) or (ang is not None and np.any(ang != 0)):
            raise ValueError(
                f"static actor {p.name!r}: linear_velocity/angular_velocity are invalid for static actors "
                "(their velocity is implied by consecutive root transforms)"
            )
        mass, density, volume, com, second = 0.0, 0.0, 0.0, np.zeros(3), np.zeros((3, 3))
        lo, hi = p.shape.aabb()
        bounded = np.isfinite(lo) & np.isfinite(hi)  # a plane is unbounded along its tangents
        pivot = np.where(bounded, 0.5 * (np.where(bounded, lo, 0.0) + np.where(bounded, hi, 0.0)), 0.0)
    else:
        if not p.shape.has_surface_mesh:
            raise ValueError(
                f"Unable to create dynamic rigid actor {p.name!r}. The shape must have a surface mesh "
                f"(a {p.shape.kind!r} shape can only be a static collider)."
            )
        props = compute_mass_properties(
            p.shape.vertices,
            p.shape.triangles,
            element,
            density=p.density,
            mass=p.mass,
            center_of_mass=_optional_vector(p.center_of_mass, "center_of_mass"),
            moment_of_inertia=p.moment_of_inertia,
        )
        mass, density, volume = props.mass, props.density, props.volume
        com, second = np.array(props.center_of_mass), np.array(props.second_moment)
        pivot = np.zeros(3)
        check_mass(mass, f"actor {p.name!r}: mass")
    record = ActorRecord(
        handle=handle,
        name=p.name,
        layer=p.layer,
        shape=p.shape,
        is_static=is_static,
        has_gravity=has_gravity,
        collider_type=collider,
        contact=p.contact,
        sdf=p.sdf,
        boundary_element_type=element,
        boundary_subsampling=p.boundary_subsampling,
        mass=mass,
        density=density,
        volume=volume,
        com_local=com,
        second_moment=second,
        static_pivot=pivot,
        params=p,
    )
    pose = (
        transform.translation_array + rot @ com,
        rot,
        np.zeros(3) if lin is None else lin,
        np.zeros(3) if ang is None else ang,
        ang is not None and not is_static,
    )
    return record, pose
