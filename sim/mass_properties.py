"""Rigid-body mass properties from the boundary quadrature (digest section 2.2, seed "Mass and Inertia").

With the boundary samples ``(x_q, w_q, n_q)`` of `quadrature.boundary_samples` (the same samples contact uses),
the divergence theorem gives, for a closed outward (CCW) surface:

    V     = 1/3 sum_q w_q (x_q . n_q)                       (div x = 3)
    X_CoM = 1/(4V) sum_q w_q x_q (x_q . n_q)                (div(x_i x) = 4 x_i)
    J     = rho/5 sum_q w_q y_q y_q^T (y_q . n_q),  y_q = x_q - X_CoM    (div(y_i y_k y) = 5 y_i y_k)
    I     = tr(J) 1 - J,        J = 1/2 tr(I) 1 - I

Exactness: on a flat triangle ``x . n`` is constant (every point of the face lies on its plane), so the volume
integrand is constant and the CoM integrand linear: every rule, P1Q1 included, is exact for V and X_CoM. The
second-moment integrand ``y y^T (y . n)`` is cubic as a polynomial of R^3 but only quadratic on a face
(``y . n`` is again constant there), so J is exact (to round-off) with P1Q3, P1Q6, P1Q7, P1Q12 and P1Q16, and
only approximate with P1Q1 (degree 1).

Parameter rules (the product's issue overrides the reference where they differ):

* density and mass both given -> ValueError (the reference keeps the mass and warns);
* neither -> ``DEFAULT_DENSITY`` = 1000 kg/m^3; density -> ``m = rho V``; mass -> ``rho = m / V``, so the
  computed J scales with the mass;
* center_of_mass xor moment_of_inertia given -> the missing one is computed assuming uniform density, with
  a warning (as the reference). A computed J is taken about the CoM in use (user-given or computed);
* a user moment of inertia must be finite, symmetric and positive semi-definite (ValueError otherwise); one
  violating the triangle inequality ``I_a <= I_b + I_c`` is accepted with a warning (as the reference).

Inertia notation: ``Real6 = [ixx, ixy, ixz, iyy, iyz, izz]``, the upper triangle of I in negative tensor
notation (``ixy = -integral x y dm``), i.e. exactly the off-diagonal of ``I = tr(J) 1 - J`` (digest 0).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from .quadrature import ActorBoundaryElementType, boundary_samples
from .shapes import Shape, validate_surface_mesh

__all__ = [
    "DEFAULT_DENSITY",
    "MassProperties",
    "compute_mass_properties",
    "compute_shape_mass_properties",
    "real6_from_inertia",
    "inertia_from_real6",
    "second_moment_from_inertia",
    "inertia_from_second_moment",
]

DEFAULT_DENSITY = 1000.0  # kg/m^3, reference DEFAULT_DENSITY

# Relative tolerances on a user inertia tensor, measured against its largest principal moment.
_SYMMETRY_RTOL = 1e-9
_PSD_RTOL = 1e-12
_TRIANGLE_RTOL = 1e-9

_UPPER = (np.array([0, 0, 0, 1, 1, 2]), np.array([0, 1, 2, 1, 2, 2]))


@dataclass(frozen=True)
class MassProperties:
    """Mass properties of a rigid body, in its local (shape) frame.

    Attributes:
        mass: [kg].
        density: [kg/m^3] (uniform; ``mass / volume``).
        volume: [m^3].
        center_of_mass: (3,) [m], local frame.
        second_moment: (3, 3) [kg m^2] body-frame J = integral rho r r^T about the CoM, local axes.
        moment_of_inertia: (3, 3) [kg m^2] I = tr(J) 1 - J about the CoM, local axes.
    """

    mass: float
    density: float
    volume: float
    center_of_mass: np.ndarray
    second_moment: np.ndarray
    moment_of_inertia: np.ndarray

    @property
    def moment_of_inertia_real6(self) -> np.ndarray:
        """(6,) ``[ixx, ixy, ixz, iyy, iyz, izz]`` (negative tensor notation)."""
        return real6_from_inertia(self.moment_of_inertia)


def _as_matrix3(value, name: str) -> np.ndarray:
    arr = np.asarray(value, dtype=np.float64)
    if arr.shape[-2:] != (3, 3):
        raise ValueError(f"{name} must have shape (..., 3, 3), got {arr.shape}")
    return arr


def real6_from_inertia(inertia) -> np.ndarray:
    """(..., 3, 3) inertia -> (..., 6) ``[ixx, ixy, ixz, iyy, iyz, izz]`` (upper triangle of I)."""
    return _as_matrix3(inertia, "inertia")[..., _UPPER[0], _UPPER[1]]


def inertia_from_real6(real6) -> np.ndarray:
    """(..., 6) ``[ixx, ixy, ixz, iyy, iyz, izz]`` -> (..., 3, 3) symmetric inertia."""
    r6 = np.asarray(real6, dtype=np.float64)
    if r6.shape[-1:] != (6,):
        raise ValueError(f"a Real6 inertia must have shape (..., 6), got {r6.shape}")
    out = np.empty(r6.shape[:-1] + (3, 3))
    out[..., _UPPER[0], _UPPER[1]] = r6
    out[..., _UPPER[1], _UPPER[0]] = r6
    return out


def second_moment_from_inertia(inertia) -> np.ndarray:
    """J = 1/2 tr(I) 1 - I, (..., 3, 3) -> (..., 3, 3)."""
    i = _as_matrix3(inertia, "inertia")
    return 0.5 * np.trace(i, axis1=-2, axis2=-1)[..., None, None] * np.eye(3) - i


def inertia_from_second_moment(second_moment) -> np.ndarray:
    """I = tr(J) 1 - J, (..., 3, 3) -> (..., 3, 3)."""
    j = _as_matrix3(second_moment, "second_moment")
    return np.trace(j, axis1=-2, axis2=-1)[..., None, None] * np.eye(3) - j


def _positive_scalar(value, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a number, got {value!r}")
    value = float(value)
    if not (np.isfinite(value) and value > 0.0):
        raise ValueError(f"{name} must be positive and finite, got {value}")
    return value


def _user_inertia(moment_of_inertia) -> np.ndarray:
    """Validate a user inertia given as Real6 (6,) or (3, 3)."""
    arr = np.asarray(moment_of_inertia, dtype=np.float64)
    if arr.shape == (6,):
        inertia = inertia_from_real6(arr)
    elif arr.shape == (3, 3):
        inertia = arr
    else:
        raise ValueError(f"moment_of_inertia must be a Real6 (6,) or a (3, 3) matrix, got shape {arr.shape}")
    if not np.all(np.isfinite(inertia)):
        raise ValueError("moment_of_inertia must be finite")
    scale = max(float(np.max(np.abs(inertia))), np.finfo(np.float64).tiny)
    if np.max(np.abs(inertia - inertia.T)) > _SYMMETRY_RTOL * scale:
        raise ValueError(f"moment_of_inertia must be symmetric, got {inertia.tolist()}")
    inertia = 0.5 * (inertia + inertia.T)
    principal = np.linalg.eigvalsh(inertia)
    if principal[0] < -_PSD_RTOL * scale:
        raise ValueError(
            f"moment_of_inertia must be positive semi-definite, got principal moments {principal.tolist()}"
        )
    if principal[2] > (principal[0] + principal[1]) * (1.0 + _TRIANGLE_RTOL) + _PSD_RTOL * scale:
        warnings.warn(
            f"moment_of_inertia is not physically valid: principal moments {principal.tolist()} violate the "
            "triangle inequality (I_a <= I_b + I_c); using it as given",
            stacklevel=3,
        )
    return inertia


def compute_mass_properties(vertices, triangles, element_type=ActorBoundaryElementType.P1Q3, density=None,
                            mass=None, center_of_mass=None, moment_of_inertia=None) -> MassProperties:
    """Mass properties of the solid bounded by a closed triangle surface (see the module docstring).

    Args:
        vertices: (V, 3) [m]; triangles: (F, 3) CCW seen from outside, closed and consistently wound.
        element_type: boundary quadrature rule (the actor's ``boundary_element_type``).
        density: [kg/m^3] or None; mass: [kg] or None (not both).
        center_of_mass: optional (3,) [m] local-frame CoM.
        moment_of_inertia: optional Real6 (6,) or (3, 3) [kg m^2] about the CoM, local axes.

    Raises:
        ValueError: both density and mass, non-positive values, an open/inverted/flat surface, a bad inertia.
    """
    if density is not None and mass is not None:
        raise ValueError("set density or mass, not both")
    v, t = validate_surface_mesh(vertices, triangles)
    samples = boundary_samples(v, t, element_type)

    # Integrate about the vertex mean: the closed-surface integrals are translation invariant, and centring
    # keeps round-off small for shapes far from the origin.
    origin = v.mean(axis=0)
    x = samples.points - origin
    x_dot_n = np.einsum("qi,qi->q", x, samples.normals)
    volume = float(np.sum(samples.weights * x_dot_n) / 3.0)
    if not np.isfinite(volume) or volume <= 0.0:
        raise ValueError(f"the shape has no volume (computed {volume:.6g} m^3); is the surface closed and outward?")
    geometric_com = origin + np.einsum("q,qi->i", samples.weights * x_dot_n, x) / (4.0 * volume)

    if mass is not None:
        mass = _positive_scalar(mass, "mass")
        density = mass / volume
    else:
        density = DEFAULT_DENSITY if density is None else _positive_scalar(density, "density")
        mass = density * volume

    if center_of_mass is None:
        com = geometric_com
    else:
        com = np.asarray(center_of_mass, dtype=np.float64)
        if com.shape != (3,):
            raise ValueError(f"center_of_mass must have shape (3,), got {com.shape}")
        if not np.all(np.isfinite(com)):
            raise ValueError("center_of_mass must be finite")

    if moment_of_inertia is None:
        y = samples.points - com
        y_dot_n = np.einsum("qi,qi->q", y, samples.normals)
        second_moment = density / 5.0 * np.einsum("q,qi,qk->ik", samples.weights * y_dot_n, y, y)
        second_moment = 0.5 * (second_moment + second_moment.T)
        inertia = inertia_from_second_moment(second_moment)
    else:
        inertia = _user_inertia(moment_of_inertia)
        second_moment = second_moment_from_inertia(inertia)

    # warned once both are validated: a malformed value raises without a misleading warning first
    if (center_of_mass is None) != (moment_of_inertia is None):
        warnings.warn(
            "only one of center_of_mass / moment_of_inertia was given; the missing one is computed assuming "
            "uniform density, which may not be correct. Set both or neither.",
            stacklevel=2,
        )
    arrays = [np.array(a, dtype=np.float64) for a in (com, second_moment, inertia)]
    for a in arrays:
        a.setflags(write=False)
    return MassProperties(mass=float(mass), density=float(density), volume=volume, center_of_mass=arrays[0],
                          second_moment=arrays[1], moment_of_inertia=arrays[2])


def compute_shape_mass_properties(shape, element_type=ActorBoundaryElementType.P1Q3, **kwargs) -> MassProperties:
    """`compute_mass_properties` on a shape's surface mesh (keywords as there)."""
    if not isinstance(shape, Shape):
        raise TypeError(f"expected a Shape, got {type(shape).__name__}")
    if not shape.has_surface_mesh:
        raise ValueError(f"a {shape.kind!r} shape has no surface mesh, so it has no mass properties "
                         "(implicit shapes can only be static colliders)")
    return compute_mass_properties(shape.vertices, shape.triangles, element_type, **kwargs)
