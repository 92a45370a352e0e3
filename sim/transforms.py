"""`Quaternion` and `TransformRT`, the reference engine's pose value types (digest section 0).

Quaternions are stored (x, y, z, w); identity is (0, 0, 0, 1). `TransformRT` is rotation + translation, applied as
``x_world = R x_local + t``. Both are small immutable value objects; the engine's batched state stores rotation
matrices, and these types convert at the API boundary.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

import numpy as np

from . import lie


def as_vector3(value, name: str) -> np.ndarray:
    """Validate a finite 3-vector argument; the error names the argument."""
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be a sequence of 3 numbers, got {value!r}") from exc
    if arr.shape != (3,):
        raise ValueError(f"{name} must have shape (3,), got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite, got {arr.tolist()}")
    return arr


@dataclass(frozen=True, init=False)
class Quaternion:
    """Unit quaternion (x, y, z, w). ``Quaternion()`` is the identity."""

    x: float
    y: float
    z: float
    w: float

    def __init__(self, x: float = 0.0, y: float = 0.0, z: float = 0.0, w: float = 1.0):
        values = np.array([x, y, z, w], dtype=np.float64)
        if not np.all(np.isfinite(values)):
            raise ValueError(f"Quaternion components must be finite, got {values.tolist()}")
        norm = float(np.linalg.norm(values))
        if norm < 1e-12:
            raise ValueError("Quaternion must be non-zero")
        values = values / norm
        for name, v in zip("xyzw", values):
            object.__setattr__(self, name, float(v))

    # Construction helpers, as in the reference's Python API.
    @staticmethod
    def identity() -> "Quaternion":
        return Quaternion()

    @staticmethod
    def rotation_x(angle: float) -> "Quaternion":
        return Quaternion.from_rotation_vector([angle, 0.0, 0.0])

    @staticmethod
    def rotation_y(angle: float) -> "Quaternion":
        return Quaternion.from_rotation_vector([0.0, angle, 0.0])

    @staticmethod
    def rotation_z(angle: float) -> "Quaternion":
        return Quaternion.from_rotation_vector([0.0, 0.0, angle])

    @staticmethod
    def from_rotation_vector(rotation_vector: Iterable[float]) -> "Quaternion":
        return Quaternion(*lie.rotvec_to_quat(as_vector3(rotation_vector, "rotation_vector")))

    @staticmethod
    def from_axis_angle(axis: Iterable[float], angle: float) -> "Quaternion":
        axis = as_vector3(axis, "axis")
        n = np.linalg.norm(axis)
        if n < 1e-12:
            raise ValueError("axis must be non-zero")
        return Quaternion.from_rotation_vector(axis / n * float(angle))

    @staticmethod
    def from_matrix(matrix) -> "Quaternion":
        m = np.asarray(matrix, dtype=np.float64)
        if m.shape != (3, 3):
            raise ValueError(f"rotation matrix must have shape (3, 3), got {m.shape}")
        return Quaternion(*lie.matrix_to_quat(m))

    def to_array(self) -> np.ndarray:
        """(4,) array (x, y, z, w)."""
        return np.array([self.x, self.y, self.z, self.w])

    def to_matrix(self) -> np.ndarray:
        return lie.quat_to_matrix(self.to_array())

    def to_rotation_vector(self) -> np.ndarray:
        return lie.quat_to_rotvec(self.to_array())

    def rotate(self, v) -> np.ndarray:
        return self.to_matrix() @ as_vector3(v, "v")

    @staticmethod
    def zero() -> "Quaternion":
        """The all-zero quaternion (0, 0, 0, 0), as the reference's ``Quaternion.zero()``: an accumulator, not a
        rotation (a TransformRT refuses it)."""
        q = object.__new__(Quaternion)
        for name in "xyzw":
            object.__setattr__(q, name, 0.0)
        return q

    def is_zero(self) -> bool:
        return self.x == self.y == self.z == self.w == 0.0

    def tolist(self) -> list:
        """[x, y, z, w]."""
        return [self.x, self.y, self.z, self.w]

    def get_conjugate(self) -> "Quaternion":
        """(-x, -y, -z, w): the inverse rotation of a unit quaternion."""
        return Quaternion.zero() if self.is_zero() else self.inverse()

    def inverse(self) -> "Quaternion":
        return Quaternion(-self.x, -self.y, -self.z, self.w)

    def __mul__(self, other: "Quaternion") -> "Quaternion":
        return Quaternion(*lie.quat_multiply(self.to_array(), other.to_array()))

    def __iter__(self):
        return iter((self.x, self.y, self.z, self.w))

    def __len__(self) -> int:
        return 4

    def __getitem__(self, i: int) -> float:
        return (self.x, self.y, self.z, self.w)[i]


def as_quaternion(value, name: str = "rotation") -> Quaternion:
    if isinstance(value, Quaternion):
        if value.is_zero():
            raise ValueError(f"{name} must be a non-zero Quaternion (Quaternion.zero() is not a rotation)")
        return value
    arr = np.asarray(value, dtype=np.float64)
    if arr.shape != (4,):
        raise ValueError(f"{name} must be a Quaternion or 4 numbers (x, y, z, w), got shape {arr.shape}")
    return Quaternion(*arr)


@dataclass(frozen=True, init=False)
class TransformRT:
    """Rigid transform: ``x_world = rotation * x_local + translation``."""

    rotation: Quaternion = field(default_factory=Quaternion)
    translation: tuple = (0.0, 0.0, 0.0)

    def __init__(self, rotation=None, translation=None):
        # The reference accepts TransformRT(translation=[...]) and TransformRT(rotation, translation).
        rot = Quaternion() if rotation is None else as_quaternion(rotation, "rotation")
        trans = np.zeros(3) if translation is None else as_vector3(translation, "translation")
        object.__setattr__(self, "rotation", rot)
        object.__setattr__(self, "translation", tuple(float(v) for v in trans))

    @staticmethod
    def identity() -> "TransformRT":
        return TransformRT()

    @staticmethod
    def from_matrix(rotation_matrix, translation) -> "TransformRT":
        return TransformRT(Quaternion.from_matrix(rotation_matrix), translation)

    @property
    def rotation_matrix(self) -> np.ndarray:
        return self.rotation.to_matrix()

    @property
    def translation_array(self) -> np.ndarray:
        return np.array(self.translation)

    def transform_point(self, p) -> np.ndarray:
        return self.rotation_matrix @ as_vector3(p, "point") + self.translation_array

    def transform_point_inverse(self, point) -> np.ndarray:
        """The local point that this transform maps to ``point``: R^T (point - t)."""
        return self.rotation_matrix.T @ (as_vector3(point, "point") - self.translation_array)

    def transform_points(self, points) -> np.ndarray:
        pts = np.asarray(points, dtype=np.float64)
        return pts @ self.rotation_matrix.T + self.translation_array

    def transform_vector(self, v) -> np.ndarray:
        return self.rotation_matrix @ as_vector3(v, "vector")

    def inverse(self) -> "TransformRT":
        inv = self.rotation.inverse()
        return TransformRT(inv, -(inv.to_matrix() @ self.translation_array))

    def __mul__(self, other: "TransformRT") -> "TransformRT":
        """Composition: (self * other)(x) = self(other(x))."""
        return TransformRT(self.rotation * other.rotation, self.transform_point(other.translation))

    def to_matrix4(self) -> np.ndarray:
        m = np.eye(4)
        m[:3, :3] = self.rotation_matrix
        m[:3, 3] = self.translation
        return m
