"""Boundary (surface) quadrature on triangle meshes: the sample set used by contact and by mass properties.

A rigid actor's surface is discretized into samples: on every boundary triangle, the points of a symmetric
triangle rule (`ActorBoundaryElementType`, digest section 5.5), each with an area-scaled weight and the face's
unit outward normal. The same samples integrate the mass properties (digest 2.2, `mass_properties.py`) and are
the colliding points of the contact potential (digest 5.3).

Rules (barycentric points, weights normalized to sum to 1; a sample's weight is ``rule_weight * face_area``):

=========  ======  ======  ==================================================================================
member     points  degree  source
=========  ======  ======  ==================================================================================
``P1Q1``   1       1       centroid rule; Dunavant (1985), degree-1 entry
``P1Q3``   3       2       interior points (2/3, 1/6, 1/6); Dunavant (1985), degree-2 entry. The default.
``P1Q6``   6       4       Dunavant (1985), degree-4 entry (15-digit published values)
``P1Q7``   7       5       Radon (1948) 7-point rule, listed by Lyness & Jespersen (1975); closed form in
                           sqrt(15): a = (6 -+ sqrt 15)/21, w = (155 -+ sqrt 15)/1200, centroid w = 9/40
``P1Q12``  12      6       Dunavant (1985), degree-6 entry (15-digit published values)
``P1Q16``  16      8       Lyness & Jespersen (1975) 16-point degree-8 rule (also Dunavant's degree-8 entry;
                           15-digit published values)
=========  ======  ======  ==================================================================================

The point and weight sets are the ones the reference engine lists in
``mochi_core/elements/triangular/simplex_quadrature.h`` (same rules, same point counts); the digits here are the
published ones. A rule of degree p integrates every polynomial of total degree <= p over a flat triangle
exactly (to float64 round-off; the 15-digit rules to ~1e-15 relative).

References:
    D. A. Dunavant, "High degree efficient symmetrical Gaussian quadrature rules for the triangle",
    Int. J. Numer. Methods Eng. 21(6):1129-1148, 1985.
    J. N. Lyness and D. Jespersen, "Moderate degree symmetric quadrature rules for the triangle",
    IMA J. Appl. Math. 15(1):19-32, 1975.
    J. Radon, "Zur mechanischen Kubatur", Monatsh. Math. 52:286-300, 1948.

Subsampling (`BoundarySubsamplingParams`, digest 5.5) keeps a subset of whole faces when
``subsampling_density < 1``; the number of kept faces is ``ceil(F * density)`` as in the reference
(``SelectActiveBoundaryFaceIndices``). Weight rule (our decision): the kept samples' weights are multiplied by
``total_area / kept_area`` so that the subsampled set still integrates constants exactly (sum of weights =
surface area). The reference instead keeps the unscaled weights of the active faces, which under-reports
contact force by the kept-area fraction; we rescale so that a uniform pressure still produces the right total
force. Mass properties never use subsampling.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass

import numpy as np

__all__ = [
    "ActorBoundaryElementType",
    "SubsamplingStrategy",
    "BoundarySubsamplingParams",
    "BoundarySamples",
    "TriangleRule",
    "triangle_rule",
    "boundary_samples",
    "select_subsampled_faces",
]


# The reference seeds its weighted reservoir sampling with this constant (SelectActiveBoundaryFaceIndices);
# a fixed seed makes AREA_PROPORTIONAL deterministic.
_AREA_PROPORTIONAL_SEED = 21


class ActorBoundaryElementType(enum.Enum):
    """Triangle quadrature rule per boundary face. The value is the number of points per face.

    ``DEFAULT`` is an alias of ``P1Q3`` (``ActorBoundaryElementType.DEFAULT is ActorBoundaryElementType.P1Q3``).
    """

    P1Q1 = 1
    P1Q3 = 3
    P1Q6 = 6
    P1Q7 = 7
    P1Q12 = 12
    P1Q16 = 16
    DEFAULT = 3  # alias of P1Q3 (same value)

    @property
    def num_points(self) -> int:
        """Quadrature points per triangle."""
        return int(self.value)

    @property
    def degree(self) -> int:
        """Polynomial degree integrated exactly on a flat triangle."""
        return triangle_rule(self).degree


class SubsamplingStrategy(enum.Enum):
    """How `BoundarySubsamplingParams` chooses the active boundary faces."""

    UNIFORM_PROBABILITY = 0  # uniformly spaced face indices floor(i F / K), i = 0..K-1
    AREA_PROPORTIONAL = 1  # weighted sampling without replacement, probability ~ face area (fixed seed)


@dataclass(frozen=True)
class BoundarySubsamplingParams:
    """Keep only a fraction of the boundary faces as contact samples (reference: best with P1Q1).

    Attributes:
        subsampling_density: fraction of faces kept, in [0, 1]; 1 keeps every face (no subsampling).
        strategy: which faces are kept (`SubsamplingStrategy`).
    """

    subsampling_density: float = 1.0
    strategy: SubsamplingStrategy = SubsamplingStrategy.UNIFORM_PROBABILITY

    def __post_init__(self):
        density = self.subsampling_density
        if isinstance(density, bool) or not isinstance(density, (int, float, np.integer, np.floating)):
            raise TypeError(f"subsampling_density must be a number in [0, 1], got {density!r}")
        density = float(density)
        if not (0.0 <= density <= 1.0):  # also rejects NaN
            raise ValueError(f"subsampling_density must be in [0, 1], got {density}")
        if not isinstance(self.strategy, SubsamplingStrategy):
            raise TypeError(f"strategy must be a SubsamplingStrategy, got {self.strategy!r}")
        object.__setattr__(self, "subsampling_density", density)


@dataclass(frozen=True)
class TriangleRule:
    """A symmetric triangle rule: barycentric points (n, 3) and weights (n,) summing to 1."""

    barycentric: np.ndarray
    weights: np.ndarray
    degree: int
    source: str


def _orbit_points(orbits) -> tuple[np.ndarray, np.ndarray]:
    """Expand symmetry orbits into points.

    Each orbit is ``("S3", w)`` (centroid), ``("S21", a, w)`` (the 3 permutations of (a, a, 1 - 2a)) or
    ``("S111", a, b, w)`` (the 6 permutations of (a, b, 1 - a - b)).
    """
    points, weights = [], []
    for kind, *values in orbits:
        if kind == "S3":
            (w,) = values
            perms = [(1.0 / 3.0, 1.0 / 3.0, 1.0 / 3.0)]
        elif kind == "S21":
            a, w = values
            b = 1.0 - 2.0 * a
            perms = [(a, a, b), (a, b, a), (b, a, a)]
        else:
            a, b, w = values
            c = 1.0 - a - b
            perms = [(a, b, c), (a, c, b), (b, a, c), (b, c, a), (c, a, b), (c, b, a)]
        points.extend(perms)
        weights.extend([w] * len(perms))
    return np.array(points, dtype=np.float64), np.array(weights, dtype=np.float64)


def _build_rules() -> dict:
    sqrt15 = math.sqrt(15.0)
    table = {
        ActorBoundaryElementType.P1Q1: (1, "Dunavant 1985, degree 1", [("S3", 1.0)]),
        ActorBoundaryElementType.P1Q3: (2, "Dunavant 1985, degree 2", [("S21", 1.0 / 6.0, 1.0 / 3.0)]),
        ActorBoundaryElementType.P1Q6: (
            4,
            "Dunavant 1985, degree 4",
            [("S21", 0.445948490915965, 0.223381589678011), ("S21", 0.091576213509771, 0.109951743655322)],
        ),
        ActorBoundaryElementType.P1Q7: (
            5,
            "Radon 1948 / Lyness-Jespersen 1975, degree 5",
            [
                ("S3", 9.0 / 40.0),
                ("S21", (6.0 - sqrt15) / 21.0, (155.0 - sqrt15) / 1200.0),
                ("S21", (6.0 + sqrt15) / 21.0, (155.0 + sqrt15) / 1200.0),
            ],
        ),
        ActorBoundaryElementType.P1Q12: (
            6,
            "Dunavant 1985, degree 6",
            [
                ("S21", 0.249286745170910, 0.116786275726379),
                ("S21", 0.063089014491502, 0.050844906370207),
                ("S111", 0.053145049844817, 0.310352451033784, 0.082851075618374),
            ],
        ),
        ActorBoundaryElementType.P1Q16: (
            8,
            "Lyness-Jespersen 1975 / Dunavant 1985, degree 8",
            [
                ("S3", 0.144315607677787),
                ("S21", 0.459292588292723, 0.095091634267285),
                ("S21", 0.170569307751760, 0.103217370534718),
                ("S21", 0.050547228317031, 0.032458497623198),
                ("S111", 0.008394777409958, 0.263112829634638, 0.027230314174435),
            ],
        ),
    }
    rules = {}
    for member, (degree, source, orbits) in table.items():
        bary, weights = _orbit_points(orbits)
        assert bary.shape[0] == member.num_points
        # The 15-digit published weights sum to 1 within ~2e-15; normalizing (a change below the published
        # precision) makes constants, and so the surface area, integrate exactly.
        weights = weights / weights.sum()
        for arr in (bary, weights):
            arr.setflags(write=False)
        rules[member] = TriangleRule(barycentric=bary, weights=weights, degree=degree, source=source)
    return rules


_RULES = _build_rules()


def _as_element_type(element_type) -> ActorBoundaryElementType:
    if isinstance(element_type, ActorBoundaryElementType):
        return element_type
    if isinstance(element_type, str) and element_type.upper() in ActorBoundaryElementType.__members__:
        return ActorBoundaryElementType[element_type.upper()]
    names = ", ".join(ActorBoundaryElementType.__members__)
    raise TypeError(f"element_type must be an ActorBoundaryElementType ({names}), got {element_type!r}")


def triangle_rule(element_type) -> TriangleRule:
    """The `TriangleRule` of an `ActorBoundaryElementType` (or its name, e.g. ``"P1Q6"``)."""
    return _RULES[_as_element_type(element_type)]


@dataclass(frozen=True)
class BoundarySamples:
    """Surface quadrature samples of a triangle mesh, in the mesh's local frame.

    Attributes:
        points: (Q, 3) sample positions [m].
        weights: (Q,) area-scaled weights [m^2]; they sum to the (kept) surface area.
        normals: (Q, 3) unit outward normal of the sample's face (CCW winding = outward).
        face_index: (Q,) int64 index of the sample's triangle in the input mesh.
        barycentric: (Q, 3) barycentric coordinates of the sample in its triangle.
    """

    points: np.ndarray
    weights: np.ndarray
    normals: np.ndarray
    face_index: np.ndarray
    barycentric: np.ndarray

    @property
    def num_samples(self) -> int:
        return int(self.weights.shape[0])


def _check_mesh_arrays(vertices, triangles) -> tuple[np.ndarray, np.ndarray]:
    """Light validation for quadrature: shapes, finiteness, index range (topology is checked by shapes.py)."""
    v = np.asarray(vertices, dtype=np.float64)
    if v.ndim != 2 or v.shape[1] != 3:
        raise ValueError(f"vertices must have shape (V, 3), got {v.shape}")
    if not np.all(np.isfinite(v)):
        raise ValueError("vertices contain NaN or infinite coordinates")
    t = np.asarray(triangles)
    if t.ndim != 2 or t.shape[1] != 3:
        raise ValueError(f"triangles must have shape (F, 3), got {t.shape}")
    if t.shape[0] == 0:
        raise ValueError("triangles is empty: a boundary needs at least one face")
    if not np.issubdtype(t.dtype, np.integer):
        raise TypeError(f"triangles must hold integer vertex indices, got dtype {t.dtype}")
    t = t.astype(np.int64)
    if t.min() < 0 or t.max() >= v.shape[0]:
        raise ValueError(f"triangle indices must be in [0, {v.shape[0] - 1}], got range [{t.min()}, {t.max()}]")
    return v, t


def _face_geometry(v: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Corners (F, 3, 3), areas (F,) [m^2] and unit normals (F, 3); zero-area faces are an error."""
    corners = v[t]
    cross = np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
    twice_area = np.linalg.norm(cross, axis=1)
    degenerate = np.flatnonzero(twice_area <= 0.0)
    if degenerate.size:
        raise ValueError(
            f"{degenerate.size} triangle(s) have zero area (first: face {degenerate[0]}); "
            "their normal is undefined"
        )
    return corners, 0.5 * twice_area, cross / twice_area[:, None]


def select_subsampled_faces(face_areas, params: BoundarySubsamplingParams) -> np.ndarray:
    """Indices (K,) of the faces kept by `params`, sorted ascending; K = ceil(F * density).

    UNIFORM_PROBABILITY takes ``floor(i F / K)`` for i = 0..K-1. AREA_PROPORTIONAL draws K faces without
    replacement with probability proportional to area (Efraimidis & Spirakis 2006 A-Res keys
    ``log(u) / area``, top K), from a fixed seed so the choice is deterministic.
    """
    areas = np.asarray(face_areas, dtype=np.float64)
    if areas.ndim != 1:
        raise ValueError(f"face_areas must have shape (F,), got {areas.shape}")
    if not isinstance(params, BoundarySubsamplingParams):
        raise TypeError(f"params must be a BoundarySubsamplingParams, got {params!r}")
    num_faces = areas.shape[0]
    num_kept = int(math.ceil(num_faces * params.subsampling_density))
    if num_kept >= num_faces:
        return np.arange(num_faces, dtype=np.int64)
    if params.strategy is SubsamplingStrategy.UNIFORM_PROBABILITY:
        return (np.arange(num_kept, dtype=np.int64) * num_faces) // max(num_kept, 1)
    rng = np.random.default_rng(_AREA_PROPORTIONAL_SEED)
    keys = np.log(rng.uniform(size=num_faces)) / areas
    kept = np.argsort(-keys, kind="stable")[:num_kept]
    return np.sort(kept).astype(np.int64)


def boundary_samples(vertices, triangles, element_type=ActorBoundaryElementType.DEFAULT, subsampling=None):
    """Quadrature samples of every (or every kept) boundary face.

    Args:
        vertices: (V, 3) vertex positions [m].
        triangles: (F, 3) integer vertex indices, CCW seen from outside (outward normals).
        element_type: `ActorBoundaryElementType` (or its name); default P1Q3.
        subsampling: optional `BoundarySubsamplingParams`; applied only when its density is < 1. Kept weights
            are rescaled by ``total_area / kept_area`` (see module docstring). Density 0 keeps no face and
            returns empty arrays.

    Returns:
        `BoundarySamples` with Q = (kept faces) * (points per face), ordered face by face.
    """
    rule = triangle_rule(element_type)
    v, t = _check_mesh_arrays(vertices, triangles)
    if subsampling is not None and not isinstance(subsampling, BoundarySubsamplingParams):
        raise TypeError(f"subsampling must be a BoundarySubsamplingParams or None, got {subsampling!r}")
    corners, areas, normals = _face_geometry(v, t)

    faces = np.arange(t.shape[0], dtype=np.int64)
    area_scale = 1.0
    if subsampling is not None and subsampling.subsampling_density < 1.0:
        faces = select_subsampled_faces(areas, subsampling)
        kept_area = areas[faces].sum()
        area_scale = areas.sum() / kept_area if faces.size else 1.0
        corners, areas, normals = corners[faces], areas[faces], normals[faces]

    num_points = rule.weights.shape[0]
    # x_q = sum_k lambda_qk * corner_k, for every face f and rule point q.
    points = np.einsum("qk,fkd->fqd", rule.barycentric, corners).reshape(-1, 3)
    weights = (areas[:, None] * rule.weights[None, :] * area_scale).reshape(-1)
    return BoundarySamples(
        points=points,
        weights=weights,
        normals=np.repeat(normals, num_points, axis=0),
        face_index=np.repeat(faces, num_points),
        barycentric=np.tile(rule.barycentric, (faces.shape[0], 1)),
    )
