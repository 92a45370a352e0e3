"""Creation parameters of articulated actors: the released engine's names, fields and defaults.

tests/test_articulated_api.py holds every default to the values recorded from superdex-physics 1.0.1
(tests/reference_data/articulated_api.json). Validation of a whole actor lives in sim/articulated/model.py.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Optional

from ..contact.params import ContactParams
from ..transforms import TransformRT


class ArticulatedJointType(enum.Enum):
    """Joint types with the reference's integer values (COUNT and INVALID are its sentinel, not joint types)."""

    FREE = 0  # 6 DoFs: 3 translations then a rotation vector (3), in the joint's parent frame
    PRISMATIC = 1  # 1 DoF: travel along the axis [m]
    REVOLUTE = 2  # 1 DoF: angle about the axis [rad]
    SPHERICAL = 3  # 3 DoFs: a rotation vector; increments are left (parent-frame) rotations
    HARD = 4  # 0 DoFs: welds the link to its parent
    CYCLE = 5  # declared in ArticulatedActorParams.cycles, never in joints
    COUNT = 6
    INVALID = 6  # alias of COUNT, as in the reference


@dataclass
class ArticulatedJointFrictionParams:
    viscous: float = 0.0  # N s/m or N m s/rad
    coulomb: float = 0.0  # N or N m
    falloff_vel: float = 1e-3  # m/s or rad/s, the dry-friction smoothing width
    stiction_extra: float = 0.0  # experimental: peak static minus dynamic friction
    stribeck_vel: float = 0.0  # experimental: Gaussian Stribeck width; 0 = no Stribeck decay


@dataclass
class ArticulatedJointParams:
    name: str = ""  # "" -> "joint_<i>"
    type: ArticulatedJointType = ArticulatedJointType.COUNT  # required; COUNT is rejected
    parent_link_from_joint: TransformRT = field(default_factory=TransformRT)
    axis: tuple = (0.0, 0.0, 0.0)  # REVOLUTE / PRISMATIC axis in the joint frame; normalized at creation
    friction: ArticulatedJointFrictionParams = field(default_factory=ArticulatedJointFrictionParams)
    inertia: Optional[float] = None  # rotor inertia, kg or kg m^2; None -> 0
    min_limit: Optional[tuple] = None  # Real3; a 1-DoF joint's limit is scalar * axis
    max_limit: Optional[tuple] = None
    limit_stiffness: float = 100.0
    limit_damping: float = 0.0


@dataclass
class ArticulatedLinkParams:
    """The rigid actor's creation fields (no is_static, sdf or velocities) plus the tree fields."""

    name: str = ""  # "" -> "link_<i>"; the nested actor is "<actor>/<link>"
    parent_link: int = -1
    parent_joint_from_link: TransformRT = field(default_factory=TransformRT)  # rotation must be identity
    shape: object = None
    layer: str = ""
    collider_type: object = None  # ColliderType; None -> AUTO
    contact: ContactParams = field(default_factory=ContactParams)
    has_gravity: bool = True
    density: Optional[float] = None
    mass: Optional[float] = None
    center_of_mass: Optional[tuple] = None
    moment_of_inertia: Optional[tuple] = None  # Real6
    boundary_element_type: object = None  # None -> P1Q3
    boundary_subsampling: object = None


@dataclass
class ArticulatedCycleJointParams:
    parent_link: int = -1
    child_link: int = -1
    joint_from_child_link: TransformRT = field(default_factory=TransformRT)  # the pivot in the child link frame
    stiffness: float = 5e4


@dataclass
class ArticulatedActorParams:
    name: str = ""
    world_from_root: TransformRT = field(default_factory=TransformRT)
    cycles: list = field(default_factory=list)
    joints: list = field(default_factory=list)  # joints[i] is the inbound joint of links[i]
    links: list = field(default_factory=list)  # parent-first: links[i].parent_link < i, root -1
    skin: object = None  # not supported here (a skinned surface); must stay None
    joint_velocities: Optional[list] = None  # one value per DoF; None -> zero


@dataclass
class ArticulatedDofInfo:
    """Where one joint's DoFs sit in the actor's DoF vector: translations first, then rotations."""

    offset: int = -1
    trans_size: int = 0
    rot_size: int = 0

    def get_trans_offset(self) -> int:
        return self.offset

    def get_rot_offset(self) -> int:
        return self.offset + self.trans_size

    def get_size(self) -> int:
        return self.trans_size + self.rot_size


@dataclass
class PoseTrackingParams:
    stiffness: float = 0.0
    damping: float = 0.0
    saturation: float = -1.0  # < 0: off


@dataclass
class PoseControllerParams:
    """Link-indexed tracking slices; ``PoseControllerParams(num_links)`` pre-sizes them with zero gains."""

    link_pos_tracking: list = field(default_factory=list)
    link_rot_tracking: list = field(default_factory=list)
    joint_tracking: list = field(default_factory=list)

    def __init__(self, num_links: int | None = None, *, link_pos_tracking=None, link_rot_tracking=None,
                 joint_tracking=None):
        n = 0 if num_links is None else int(num_links)
        if n < 0:
            raise ValueError(f"num_links must be >= 0, got {num_links}")

        def slice_(given):
            return list(given) if given is not None else [PoseTrackingParams() for _ in range(n)]

        self.link_pos_tracking = slice_(link_pos_tracking)
        self.link_rot_tracking = slice_(link_rot_tracking)
        self.joint_tracking = slice_(joint_tracking)


@dataclass
class ArticulatedShapeInfo:
    """The topology of an articulated actor (the reference's fields)."""

    link_names: list
    joint_names: list
    parents: list
    joint_types: list
    joint_axes: list
    dof_info: list
    parent_link_from_joint: list
    joint_from_child_link: list
    joint_min_limits: list
    joint_max_limits: list
    root_from_links_at_rest: list
    cycles: list = field(default_factory=list)


@dataclass
class _ArticulatedConstraintParams:
    """The fields every articulated constraint shares, in the reference's order (constraint formulation)."""

    stiffness: float = 1e6
    damping: float = 0.0
    saturation: float = -1.0  # < 0: off
    actor: object = None  # the articulated actor (or its handle)
    joint_index: int = 0


@dataclass
class ArticulatedSingleDofTargetConstraintParams(_ArticulatedConstraintParams):
    """A drive on one DoF: U = k/2 (q - target)^2 plus damping d/(2 dt) (dg)^2."""

    dof_index: int = 0  # within the joint
    target_value: float = 0.0


@dataclass
class ArticulatedSingleDofRangeConstraintParams(_ArticulatedConstraintParams):
    dof_index: int = 0
    min_value: float = 0.0
    max_value: float = 0.0


@dataclass
class Articulated3dRotationTargetConstraintParams(_ArticulatedConstraintParams):
    target: object = None  # Quaternion; None -> identity


@dataclass
class Articulated3dRotationRangeConstraintParams(_ArticulatedConstraintParams):
    min_values: tuple = (0.0, 0.0, 0.0)
    max_values: tuple = (0.0, 0.0, 0.0)
