"""Small value types of the reference API that rigid-body scripts construct or get back (issue 18).

`Real3` / `Real6` are float64 numpy arrays (a reference ``Real3`` has ``tolist``; so has an ndarray), `Aabb`,
`Obb`, `Box`, `Plane`, `Sphere` are bounding volumes and primitives, `MeshData` / `MeshDataView` hold flat
coordinates and connectivity as the reference does, `SdfDistances` the results of ``QueryType.SDF_DISTANCES``,
`QueryHandle` / `SceneHandle` the reference's handle objects, `ActorType` / `FileFormat` its enums (same values),
`GridSdfData` a grid SDF record and `Error` the exception the per-actor query API raises (a RuntimeError, so
code catching either works).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

import numpy as np

from .transforms import Quaternion, TransformRT, as_quaternion, as_vector3


class Error(RuntimeError):
    """The reference's ``Error``: raised where the released engine raises its ``Error`` (queries, sleep params)."""


class InvalidArgumentError(Error, ValueError):
    """Bad input to an API whose reference raises `Error`: caught by ``except mochi.Error`` and ``except ValueError``."""


class ActorType(enum.Enum):
    NONE = 0
    RIGID = 1
    SOFT = 2
    ARTICULATED = 3
    SHELL = 4
    ROD = 5
    COUNT = 6


class FileFormat(enum.Enum):
    JSON = 0
    H5 = 1
    COUNT = 2


def _fixed(values, size: int, name: str) -> np.ndarray:
    if len(values) == 1 and np.ndim(values[0]) == 1:  # Real3([x, y, z]) as well as Real3(x, y, z)
        values = values[0]
    arr = np.array(values, dtype=np.float64)
    if arr.shape != (size,):
        raise ValueError(f"{name} needs {size} numbers, got shape {arr.shape}")
    return arr


class Real3(np.ndarray):
    """A (3,) float64 array: ``Real3(x, y, z)``, ``Real3([x, y, z])`` or ``Real3()`` (zeros)."""

    def __new__(cls, *values):
        return _fixed(values or (0.0, 0.0, 0.0), 3, "Real3").view(cls)


class Real6(np.ndarray):
    """A (6,) float64 array, e.g. inertia ``(ixx, ixy, ixz, iyy, iyz, izz)``."""

    def __new__(cls, *values):
        return _fixed(values or (0.0,) * 6, 6, "Real6").view(cls)


class Aabb:
    """Axis-aligned box ``[min, max]`` [m]. Unbounded directions hold +-inf (a plane's box)."""

    def __init__(self, min=None, max=None):  # noqa: A002 (the reference's argument names)
        lo = np.zeros(3) if min is None else np.asarray(min, dtype=np.float64)
        hi = np.zeros(3) if max is None else np.asarray(max, dtype=np.float64)
        for name, v in (("min", lo), ("max", hi)):
            if v.shape != (3,) or np.any(np.isnan(v)):
                raise ValueError(f"Aabb {name} must be 3 numbers (inf allowed, not NaN), got {v.tolist()}")
        if np.any(lo > hi):
            raise ValueError(f"Aabb min must be <= max componentwise, got min {lo.tolist()} max {hi.tolist()}")
        self.min = lo.view(Real3)
        self.max = hi.view(Real3)

    def get_center(self) -> Real3:
        with np.errstate(invalid="ignore"):  # -inf + inf: the centre of an unbounded axis is NaN, as in the reference
            return ((self.min + self.max) / 2).view(Real3)

    def get_size(self) -> Real3:
        return (self.max - self.min).view(Real3)

    def __repr__(self) -> str:
        return f"Aabb(min={self.min.tolist()}, max={self.max.tolist()})"


def transformed_aabb(lo: np.ndarray, hi: np.ndarray, rotation: np.ndarray, translation: np.ndarray) -> Aabb:
    """World box of the local box ``[lo, hi]`` under ``x -> R x + t`` (interval arithmetic: exact for the corners,
    and an infinite extent times a zero rotation entry counts as 0, so a plane's box stays as the reference's)."""
    with np.errstate(invalid="ignore"):
        a, b = rotation * lo[None, :], rotation * hi[None, :]
    a = np.where(rotation == 0.0, 0.0, a)
    b = np.where(rotation == 0.0, 0.0, b)
    return Aabb(np.minimum(a, b).sum(axis=1) + translation, np.maximum(a, b).sum(axis=1) + translation)


class Obb:
    """Oriented box: ``Obb(transform, half_extents)``; the box is ``transform`` applied to ``[-h, h]``."""

    def __init__(self, transform: TransformRT | None = None, half_extents=None):
        self._transform = TransformRT() if transform is None else transform
        if not isinstance(self._transform, TransformRT):
            raise TypeError(f"transform must be a TransformRT, got {type(transform).__name__}")
        h = np.zeros(3) if half_extents is None else as_vector3(half_extents, "half_extents")
        if np.any(h < 0):
            raise ValueError(f"half_extents must be >= 0, got {h.tolist()}")
        self._half = h

    def get_center(self) -> Real3:
        return self._transform.translation_array.view(Real3)

    def get_half_extents(self) -> Real3:
        return self._half.copy().view(Real3)

    def get_size(self) -> Real3:
        return (2.0 * self._half).view(Real3)


@dataclass
class Box:
    """Oriented box primitive: centre [m], half extents [m], rotation of its local frame."""

    center: np.ndarray = field(default_factory=lambda: np.zeros(3))
    half_extents: np.ndarray = field(default_factory=lambda: np.zeros(3))
    rotation: Quaternion = field(default_factory=Quaternion)

    def __post_init__(self):
        self.center = as_vector3(self.center, "center")
        self.half_extents = as_vector3(self.half_extents, "half_extents")
        self.rotation = as_quaternion(self.rotation, "rotation")


@dataclass
class Plane:
    """Plane ``normal . x = distance`` with a unit normal."""

    normal: np.ndarray = field(default_factory=lambda: np.array([0.0, 1.0, 0.0]))
    distance: float = 0.0

    def __post_init__(self):
        self.normal = as_vector3(self.normal, "normal")
        self.distance = float(self.distance)


@dataclass
class Sphere:
    center: np.ndarray = field(default_factory=lambda: np.zeros(3))
    radius: float = 0.0

    def __post_init__(self):
        self.center = as_vector3(self.center, "center")
        self.radius = float(self.radius)


class MeshData:
    """Flat mesh arrays as in the reference: ``coordinates`` (3 V,) [m], ``connectivity`` (k E,) node indices,
    ``nodes_per_element`` k (3 triangles, 4 tetrahedra; 0 for an empty mesh)."""

    def __init__(self, nodes_per_element: int = 0, coordinates=(), connectivity=(), skinning=None):
        coords = np.array(coordinates, dtype=np.float64).ravel()
        conn = np.array(connectivity, dtype=np.int64).ravel()
        if isinstance(nodes_per_element, bool) or not isinstance(nodes_per_element, (int, np.integer)) \
                or nodes_per_element < 0:
            raise ValueError(f"nodes_per_element must be an integer >= 0, got {nodes_per_element!r}")
        if coords.size % 3:
            raise ValueError(f"coordinates must hold 3 numbers per node, got {coords.size} numbers")
        if conn.size and (nodes_per_element == 0 or conn.size % nodes_per_element):
            raise ValueError(f"connectivity length {conn.size} is not a multiple of nodes_per_element "
                             f"{nodes_per_element}")
        self.nodes_per_element = int(nodes_per_element)
        self.coordinates = coords
        self.connectivity = conn
        self.skinning = skinning

    def get_num_nodes(self) -> int:
        return self.coordinates.size // 3

    def get_num_elements(self) -> int:
        return self.connectivity.size // self.nodes_per_element if self.nodes_per_element else 0

    def is_empty(self) -> bool:
        return self.coordinates.size == 0

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(nodes_per_element={self.nodes_per_element}, "
                f"num_nodes={self.get_num_nodes()}, num_elements={self.get_num_elements()})")


class MeshDataView(MeshData):
    """A read-only `MeshData` (what the actor mesh getters return); ``MeshData(view)`` is not needed: copy the
    arrays to change them."""

    def __init__(self, nodes_per_element: int = 0, coordinates=(), connectivity=(), skinning=None):
        super().__init__(nodes_per_element, coordinates, connectivity, skinning)
        self.coordinates.setflags(write=False)
        self.connectivity.setflags(write=False)


@dataclass
class SdfDistances:
    """``QueryType.SDF_DISTANCES`` results: the actor's active contact samples in the last step, one row per
    (sample, collider): world positions (K, 3) [m], signed distances (K,) [m] (negative inside), the collider
    field's unit gradient (K, 3) in world frame, and each sample's index among the actor's contact samples."""

    sample_indices: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    world_positions: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    distances: np.ndarray = field(default_factory=lambda: np.zeros(0))
    distance_grads: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    max_sdf_far_distance_evaluation: float = 0.0


@dataclass
class GridSdfData:
    """A precomputed grid SDF: ``values`` (dims[0] dims[1] dims[2],) [m] over ``bounds`` (an `Aabb`)."""

    dims: tuple = (0, 0, 0)
    values: np.ndarray = field(default_factory=lambda: np.zeros(0))
    bounds: Aabb = field(default_factory=Aabb)
    negative_value_bounds: Aabb = field(default_factory=Aabb)
    scale: np.ndarray | None = None
    rotation: Quaternion | None = None
    translation: np.ndarray | None = None


class _Handle:
    """A reference-style handle: ``value`` (0 = invalid), ``is_valid()``, ``get_hash()``; equal by value."""

    ValueType = int
    ValueTypeLike = int

    def __init__(self, value: int = 0):
        self.value = int(value)

    def is_valid(self) -> bool:
        return self.value != 0

    def get_hash(self) -> int:
        return hash((type(self).__name__, self.value))

    def __eq__(self, other) -> bool:
        return type(other) is type(self) and other.value == self.value

    def __hash__(self) -> int:
        return self.get_hash()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.value})"


class QueryHandle(_Handle):
    """Identifies one query registration on an actor (``RigidActor.register_query``)."""


class SceneHandle(_Handle):
    """Identifies a scene (``Scene.get_handle``)."""
