"""The frozen model of one articulated actor, built from ``ArticulatedActorParams`` after validating all of it.

Validation happens before anything is built, so a rejected actor leaves the caller's scene as it was. Every error
names the link or joint (index and name) and the field. Where the released engine accepts input that it cannot
honour (min_limit > max_limit, a limit across the axis of a 1-DoF joint) we refuse it; see docs/engine.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from ..params import RigidActorParams
from ..scene_setup import build_actor_record
from ..transforms import TransformRT, as_vector3
from ..validation import as_int, as_real, real_array
from .kinematics import forward_kinematics
from .params import (
    ArticulatedActorParams,
    ArticulatedCycleJointParams,
    ArticulatedDofInfo,
    ArticulatedJointFrictionParams,
    ArticulatedJointParams,
    ArticulatedJointType,
    ArticulatedLinkParams,
    ArticulatedShapeInfo,
)

JT = ArticulatedJointType
# (translation DoFs, rotation DoFs) of each joint type; CYCLE joints are declared in `cycles`.
DOF_SIZES = {JT.FREE: (3, 3), JT.PRISMATIC: (1, 0), JT.REVOLUTE: (0, 1), JT.SPHERICAL: (0, 3), JT.HARD: (0, 0)}
# A limit component across a 1-DoF joint's axis above this (relative to the limit's size) is a limit on a DoF the
# joint does not have; below it, it is round-off of scalar * axis.
_OFF_AXIS_TOL = 1e-9


@dataclass(frozen=True)
class ArticulationModel:
    """Arrays of one articulation, link-indexed (L links) or DoF-indexed (D DoFs)."""

    name: str
    link_names: tuple
    joint_names: tuple
    parent: np.ndarray  # (L,) int, -1 for the root
    joint_type: tuple  # (L,) ArticulatedJointType
    axis: np.ndarray  # (L, 3) unit axis in the joint frame (zeros where unused)
    parent_rotation: np.ndarray  # (L, 3, 3) rotation of parent_link_from_joint
    parent_translation: np.ndarray  # (L, 3)
    joint_to_link: np.ndarray  # (L, 3) translation of parent_joint_from_link
    root_rotation: np.ndarray  # (3, 3) world_from_root
    root_translation: np.ndarray  # (3,)
    mass: np.ndarray  # (L,) kg
    com_local: np.ndarray  # (L, 3) m, link frame
    second_moment: np.ndarray  # (L, 3, 3) kg m^2 about the CoM, link axes
    has_gravity: np.ndarray  # (L,) bool
    dof_info: tuple  # (L,) ArticulatedDofInfo
    num_dofs: int
    dof_joint: np.ndarray  # (D,) joint of each DoF
    friction: tuple  # (L,) ArticulatedJointFrictionParams
    rotor_inertia: np.ndarray  # (L,)
    dof_lower: np.ndarray  # (D,) -inf where unlimited
    dof_upper: np.ndarray  # (D,) +inf where unlimited
    dof_limit_stiffness: np.ndarray  # (D,)
    dof_limit_damping: np.ndarray  # (D,)
    joint_velocities: np.ndarray  # (D,) initial
    cycle_parent: np.ndarray  # (C,) int, link holding the anchor
    cycle_child: np.ndarray  # (C,) int, link holding the pivot
    cycle_child_point: np.ndarray  # (C, 3) pivot in the child link frame (the inverse of joint_from_child_link)
    cycle_parent_point: np.ndarray  # (C, 3) anchor in the parent link frame: where the pivot is at the zero pose
    cycle_stiffness: np.ndarray  # (C,) N/m
    link_records: tuple = ()  # (L,) the links' rigid actor records (scene_setup.ActorRecord, handle -1)

    @property
    def num_links(self) -> int:
        return len(self.link_names)


def _where(kind: str, index: int, name: str) -> str:
    return f"{kind} {index}" + (f" ({name!r})" if name else "")


def _check_tree(links) -> np.ndarray:
    parents = []
    for i, lk in enumerate(links):
        where = _where("link", i, getattr(lk, "name", ""))
        parents.append(as_int(lk.parent_link, f"{where}: parent_link", -1, len(links) - 1,
                              "a parent is -1 (the root) or the index of another link of this actor"))
    # A loop among parents is a cycle in the tree; report it before the ordering rule it also breaks.
    for start in range(len(parents)):
        seen, node = set(), start
        while node >= 0:
            if node in seen:
                raise ValueError(f"{_where('link', start, links[start].name)}: parent_link chain loops back on itself "
                                 f"(a cycle in the tree; close loops with ArticulatedActorParams.cycles instead)")
            seen.add(node)
            node = parents[node]
    for i, p in enumerate(parents):
        if i == 0 and p != -1:
            raise ValueError(f"{_where('link', 0, links[0].name)}: the root link must have parent_link -1, got {p}")
        if i > 0 and not 0 <= p < i:
            raise ValueError(f"{_where('link', i, links[i].name)}: parent_link must be in [0, {i - 1}] (links are "
                             f"listed parent-first and only the root has -1), got {p}")
    return np.array(parents, dtype=np.int64)


def _check_cycles(cycles, links, parent):
    """(parent, child, child point, stiffness) per cycle joint, validated."""
    out = []
    for c, cy in enumerate(cycles):
        where = f"cycle {c}"
        if not isinstance(cy, ArticulatedCycleJointParams):
            raise TypeError(f"{where}: expected ArticulatedCycleJointParams, got {type(cy).__name__}")
        n = len(links)
        pa = as_int(cy.parent_link, f"{where}: parent_link", 0, n - 1, "a link index of this actor")
        ch = as_int(cy.child_link, f"{where}: child_link", 0, n - 1, "a link index of this actor")
        if pa == ch or parent[ch] == pa or parent[pa] == ch:
            raise ValueError(f"{where}: parent_link {pa} and child_link {ch} must be two links that the tree does not "
                             f"already join directly")
        if not isinstance(cy.joint_from_child_link, TransformRT):
            raise TypeError(f"{where}: joint_from_child_link must be a TransformRT")
        k = as_real(cy.stiffness, f"{where}: stiffness")
        if not (math.isfinite(k) and k >= 0):
            raise ValueError(f"{where}: stiffness must be finite and >= 0, got {k}")
        # joint_from_child_link places the child link in the cycle joint's frame, so the pivot (the joint's origin)
        # sits at -R^T t in the child link frame (measured on the reference: the other sign is off by 5e-2 in a step).
        t = cy.joint_from_child_link
        out.append((pa, ch, -t.rotation_matrix.T @ t.translation_array, k))
    return out


def check_friction(f, where: str) -> ArticulatedJointFrictionParams:
    if not isinstance(f, ArticulatedJointFrictionParams):
        raise TypeError(f"{where}: friction must be ArticulatedJointFrictionParams, got {type(f).__name__}")
    vals = {n: as_real(getattr(f, n), f"{where}: friction.{n}") for n in
            ("viscous", "coulomb", "falloff_vel", "stiction_extra", "stribeck_vel")}
    for n, v in vals.items():
        if not math.isfinite(v) or v < 0:
            raise ValueError(f"{where}: friction.{n} must be finite and >= 0, got {v}")
    if vals["falloff_vel"] <= 0:
        raise ValueError(f"{where}: friction.falloff_vel must be > 0 (the dry-friction smoothing width), got "
                         f"{vals['falloff_vel']}")
    return ArticulatedJointFrictionParams(**vals)


def _joint_limits(j: ArticulatedJointParams, jtype, axis, where: str):
    """(lower, upper) per DoF of the joint, or None when the joint has no limits."""
    if j.min_limit is None and j.max_limit is None:
        return None
    if j.min_limit is None or j.max_limit is None:
        raise ValueError(f"{where}: give both min_limit and max_limit, or neither")
    lo = as_vector3(real_array(j.min_limit, f"{where}: min_limit"), f"{where}: min_limit")
    hi = as_vector3(real_array(j.max_limit, f"{where}: max_limit"), f"{where}: max_limit")
    for name, v in (("min_limit", lo), ("max_limit", hi)):
        if np.any(np.isnan(v)):
            raise ValueError(f"{where}: {name} must not be NaN, got {v.tolist()}")
    if jtype in (JT.REVOLUTE, JT.PRISMATIC):
        pairs = []
        for name, v in (("min_limit", lo), ("max_limit", hi)):
            along = float(v @ axis)
            across = v - along * axis
            if np.linalg.norm(across) > _OFF_AXIS_TOL * max(1.0, abs(along)):
                raise ValueError(f"{where}: {name} {v.tolist()} has a component across the axis {axis.tolist()}: a "
                                 f"{jtype.name} joint has one DoF, so its limit is scalar * axis")
            pairs.append(along)
        lo_d, hi_d = np.array([pairs[0]]), np.array([pairs[1]])
    elif jtype == JT.SPHERICAL:
        lo_d, hi_d = lo, hi
    else:
        raise ValueError(f"{where}: a {jtype.name} joint takes no min_limit / max_limit (it has "
                         f"{'no DoFs' if jtype == JT.HARD else 'six DoFs, which a Real3 cannot limit'})")
    bad = np.flatnonzero(lo_d > hi_d)
    if bad.size:
        raise ValueError(f"{where}: min_limit > max_limit on DoF {int(bad[0])} ({lo_d[bad[0]]} > {hi_d[bad[0]]})")
    return lo_d, hi_d


def _link_record(lk: ArticulatedLinkParams, where: str):
    if not isinstance(lk, ArticulatedLinkParams):
        raise TypeError(f"{where}: expected ArticulatedLinkParams, got {type(lk).__name__}")
    t = lk.parent_joint_from_link
    if not isinstance(t, TransformRT):
        raise TypeError(f"{where}: parent_joint_from_link must be a TransformRT, got {type(t).__name__}")
    if not np.allclose(t.rotation_matrix, np.eye(3), rtol=0.0, atol=1e-12):
        raise ValueError(f"{where}: parent_joint_from_link must have an identity rotation (put the rotation in the "
                         f"joint's parent_link_from_joint)")
    rigid = RigidActorParams(name=lk.name, layer=lk.layer, shape=lk.shape, collider_type=lk.collider_type,
                             contact=lk.contact, has_gravity=lk.has_gravity, density=lk.density, mass=lk.mass,
                             center_of_mass=lk.center_of_mass, moment_of_inertia=lk.moment_of_inertia,
                             boundary_element_type=lk.boundary_element_type,
                             boundary_subsampling=lk.boundary_subsampling)
    try:
        record, _ = build_actor_record(rigid, -1)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"{where}: {exc}") from exc
    return record


def build_model(params: ArticulatedActorParams) -> ArticulationModel:
    """Validate ``params`` whole and return the frozen model; raises TypeError / ValueError naming the link or joint."""
    if not isinstance(params, ArticulatedActorParams):
        raise TypeError(f"expected ArticulatedActorParams, got {type(params).__name__}")
    if not isinstance(params.name, str):
        raise TypeError(f"name must be a string, got {params.name!r}")
    if params.skin is not None:
        raise ValueError("skin: skinned surfaces are not supported; leave skin None")
    if not isinstance(params.world_from_root, TransformRT):
        raise TypeError(f"world_from_root must be a TransformRT, got {type(params.world_from_root).__name__}")
    links, joints = list(params.links), list(params.joints)
    if not links:
        raise ValueError("links: an articulated actor needs at least one link")
    if len(joints) != len(links):
        raise ValueError(f"joints: expected one joint per link ({len(links)} links), got {len(joints)} joints")
    parent = _check_tree(links)
    cycles = _check_cycles(list(params.cycles), links, parent)

    link_names, joint_names, types, axes, prot, ptrans, j2l = [], [], [], [], [], [], []
    records, infos, frictions, rotor = [], [], [], []
    lower, upper, lk_stiff, lk_damp, dof_joint = [], [], [], [], []
    offset = 0
    for i, (lk, j) in enumerate(zip(links, joints)):
        lwhere = _where("link", i, getattr(lk, "name", ""))
        jwhere = _where("joint", i, getattr(j, "name", ""))
        if not isinstance(j, ArticulatedJointParams):
            raise TypeError(f"{jwhere}: expected ArticulatedJointParams, got {type(j).__name__}")
        if not isinstance(j.type, ArticulatedJointType) or j.type not in DOF_SIZES:
            raise ValueError(f"{jwhere}: type must be FREE, PRISMATIC, REVOLUTE, SPHERICAL or HARD (CYCLE joints go "
                             f"in cycles), got {j.type!r}")
        if j.type == JT.FREE and i != 0:
            raise ValueError(f"{jwhere}: only the root link's joint may be FREE (a floating base)")
        axis = np.zeros(3)
        if j.type in (JT.REVOLUTE, JT.PRISMATIC):
            raw = as_vector3(real_array(j.axis, f"{jwhere}: axis"), f"{jwhere}: axis")
            norm = float(np.linalg.norm(raw))
            if not (np.all(np.isfinite(raw)) and norm > 0):
                raise ValueError(f"{jwhere}: axis must be non-zero and finite, got {raw.tolist()}")
            axis = raw / norm
        if not isinstance(j.parent_link_from_joint, TransformRT):
            raise TypeError(f"{jwhere}: parent_link_from_joint must be a TransformRT")
        fr = check_friction(j.friction, jwhere)
        inertia = 0.0 if j.inertia is None else as_real(j.inertia, f"{jwhere}: inertia")
        if not (math.isfinite(inertia) and inertia >= 0):
            raise ValueError(f"{jwhere}: inertia must be finite and >= 0, got {inertia}")
        if j.type in (JT.FREE, JT.HARD) and (fr.viscous or fr.coulomb or fr.stiction_extra or inertia):
            # The released engine ignores both on these joints (measured for FREE); refusing says so.
            raise ValueError(f"{jwhere}: a {j.type.name} joint takes no joint friction and no rotor inertia (the "
                             f"reference engine ignores them); leave friction at its defaults and inertia None")
        k_lim = as_real(j.limit_stiffness, f"{jwhere}: limit_stiffness")
        d_lim = as_real(j.limit_damping, f"{jwhere}: limit_damping")
        for n, v in (("limit_stiffness", k_lim), ("limit_damping", d_lim)):
            if not (math.isfinite(v) and v >= 0):
                raise ValueError(f"{jwhere}: {n} must be finite and >= 0, got {v}")
        limits = _joint_limits(j, j.type, axis, jwhere)
        nt, nr = DOF_SIZES[j.type]
        n = nt + nr
        lo, hi = limits if limits is not None else (np.full(n, -np.inf), np.full(n, np.inf))
        records.append(_link_record(lk, lwhere))
        link_names.append(lk.name or f"link_{i}")
        joint_names.append(j.name or f"joint_{i}")
        types.append(j.type)
        axes.append(axis)
        prot.append(j.parent_link_from_joint.rotation_matrix)
        ptrans.append(j.parent_link_from_joint.translation_array)
        j2l.append(lk.parent_joint_from_link.translation_array)
        infos.append(ArticulatedDofInfo(offset=offset, trans_size=nt, rot_size=nr))
        frictions.append(fr)
        rotor.append(inertia)
        lower.extend(lo)
        upper.extend(hi)
        lk_stiff.extend([k_lim] * n)
        lk_damp.extend([d_lim] * n)
        dof_joint.extend([i] * n)
        offset += n
    for names, kind in ((link_names, "link"), (joint_names, "joint")):
        dup = {x for x in names if names.count(x) > 1}
        if dup:
            raise ValueError(f"{kind} names must be unique within the actor, repeated: {sorted(dup)}")
    velocities = np.zeros(offset)
    if params.joint_velocities is not None and len(params.joint_velocities):
        velocities = real_array(params.joint_velocities, "joint_velocities").reshape(-1)
        if velocities.shape != (offset,) or not np.all(np.isfinite(velocities)):
            raise ValueError(f"joint_velocities must be {offset} finite values (one per DoF), got "
                             f"{np.asarray(params.joint_velocities).tolist()}")
    model = ArticulationModel(
        name=params.name, link_names=tuple(link_names), joint_names=tuple(joint_names), parent=parent,
        joint_type=tuple(types), axis=np.array(axes), parent_rotation=np.array(prot),
        parent_translation=np.array(ptrans), joint_to_link=np.array(j2l),
        root_rotation=params.world_from_root.rotation_matrix, root_translation=params.world_from_root.translation_array,
        mass=np.array([r.mass for r in records]), com_local=np.array([r.com_local for r in records]),
        second_moment=np.array([r.second_moment for r in records]),
        has_gravity=np.array([r.has_gravity for r in records]), dof_info=tuple(infos), num_dofs=offset,
        dof_joint=np.array(dof_joint, dtype=np.int64), friction=tuple(frictions), rotor_inertia=np.array(rotor),
        dof_lower=np.array(lower, dtype=float), dof_upper=np.array(upper, dtype=float),
        dof_limit_stiffness=np.array(lk_stiff, dtype=float), dof_limit_damping=np.array(lk_damp, dtype=float),
        joint_velocities=velocities, cycle_parent=np.array([c[0] for c in cycles], dtype=np.int64),
        cycle_child=np.array([c[1] for c in cycles], dtype=np.int64),
        cycle_child_point=np.array([c[2] for c in cycles]).reshape(-1, 3),
        cycle_parent_point=np.zeros((len(cycles), 3)), cycle_stiffness=np.array([c[3] for c in cycles], dtype=float),
        link_records=tuple(records))
    if not cycles:
        return model
    # The anchor is the pivot's place in the parent link at the zero pose (the tree's rest configuration).
    rot, origin, _ = forward_kinematics(model, np.zeros((1, model.num_dofs)))
    pivot = origin[0, model.cycle_child] + np.einsum("cij,cj->ci", rot[0, model.cycle_child], model.cycle_child_point)
    anchor = np.einsum("cji,cj->ci", rot[0, model.cycle_parent], pivot - origin[0, model.cycle_parent])
    return replace(model, cycle_parent_point=anchor)


def shape_info(model: ArticulationModel) -> ArticulatedShapeInfo:
    """The reference's ArticulatedShapeInfo of a model (rest = zero pose, root frame)."""
    rest_model = replace(model, root_rotation=np.eye(3), root_translation=np.zeros(3))
    rot, origin, _ = forward_kinematics(rest_model, np.zeros((1, model.num_dofs)))
    lo, hi = [], []
    for i, info in enumerate(model.dof_info):
        sl = slice(info.offset, info.offset + info.get_size())
        if model.joint_type[i] in (JT.REVOLUTE, JT.PRISMATIC) and np.isfinite(model.dof_lower[sl][0]):
            lo.append(model.dof_lower[sl][0] * model.axis[i])
            hi.append(model.dof_upper[sl][0] * model.axis[i])
        elif model.joint_type[i] == JT.SPHERICAL:
            lo.append(model.dof_lower[sl].copy())
            hi.append(model.dof_upper[sl].copy())
        else:
            lo.append(np.full(3, -np.inf))
            hi.append(np.full(3, np.inf))
    return ArticulatedShapeInfo(
        link_names=list(model.link_names), joint_names=list(model.joint_names), parents=model.parent.tolist(),
        joint_types=list(model.joint_type), joint_axes=[a.copy() for a in model.axis],
        dof_info=[replace(d) for d in model.dof_info],
        parent_link_from_joint=[TransformRT.from_matrix(r, t) for r, t in zip(model.parent_rotation,
                                                                               model.parent_translation)],
        joint_from_child_link=[TransformRT(translation=t) for t in model.joint_to_link],
        joint_min_limits=lo, joint_max_limits=hi,
        root_from_links_at_rest=[TransformRT.from_matrix(r, t) for r, t in zip(rot[0], origin[0])])


def get_articulated_shape_info(actor_or_params) -> ArticulatedShapeInfo:
    """Topology of an articulated actor, from its params (validated) or from anything with a ``model``."""
    model = actor_or_params.model if hasattr(actor_or_params, "model") else build_model(actor_or_params)
    return shape_info(model)
