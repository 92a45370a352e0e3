"""Record the released engine's articulated API facts: struct fields and defaults, enum values, the DoF layout of
a sample actor, pose and Jacobian conventions, and what it does with bad input (documentation only).

Run with the reference engine's venv (see tests/reference_data/README.md), fp64 build:

    SUPERDEX_PRECISION=fp64 PYTHONPATH=/work/ref312-fp64 /work/ref312/bin/python \
        tools/reference_runs/articulated_api.py > tests/reference_data/articulated_api.json

``tests/test_articulated_api.py`` checks ``superdex_gym.sim.articulated`` against this data.
"""

from __future__ import annotations

import enum
import json
import sys

import numpy as np

from _common import box_mesh, init, mesh_shape, precision, reals, vec

sdp = init()
JT = sdp.ArticulatedJointType

STRUCTS = ["ArticulatedActorParams", "ArticulatedLinkParams", "ArticulatedJointParams",
           "ArticulatedJointFrictionParams", "ArticulatedCycleJointParams", "ArticulatedDofInfo",
           "PoseControllerParams", "PoseTrackingParams", "ArticulatedSingleDofTargetConstraintParams",
           "ArticulatedSingleDofRangeConstraintParams", "Articulated3dRotationTargetConstraintParams",
           "Articulated3dRotationRangeConstraintParams"]


def ser(v):
    if isinstance(v, enum.Enum):
        return str(v).split(".")[-1]
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    name = type(v).__name__
    if name == "TransformRT":
        return {"rotation": vec(v.rotation), "translation": vec(v.translation)}
    if name == "Quaternion":
        return vec(v)
    if name.startswith("DynamicArray"):
        return [ser(x) for x in v]
    if hasattr(v, "tolist"):
        return v.tolist()
    if name in ("ContactParams", "ShapeHandle", "ActorHandle"):
        return f"<{name}>"
    return {n: ser(getattr(v, n)) for n in dir(v) if not n.startswith("_") and not callable(getattr(v, n))}


def defaults(cls) -> dict:
    o = cls()
    return {n: ser(getattr(o, n)) for n in dir(o) if not n.startswith("_") and not callable(getattr(o, n))}


def chain(shape, types_axes, offsets, joint_kw=None):
    joint_kw = joint_kw or {}
    p = sdp.ArticulatedActorParams(name="a")
    p.world_from_root = sdp.TransformRT(translation=[0, 2, 0])
    p.joints = [sdp.ArticulatedJointParams(type=t, axis=ax, parent_link_from_joint=sdp.TransformRT(translation=o),
                                           **joint_kw.get(i, {}))
                for i, ((t, ax), o) in enumerate(zip(types_axes, offsets))]
    p.links = [sdp.ArticulatedLinkParams(parent_link=i - 1, shape=shape, density=1000.0,
                                         parent_joint_from_link=sdp.TransformRT(translation=[0, -0.2, 0]))
               for i in range(len(types_axes))]
    return p


def attempt(scene, params) -> dict:
    before = scene.get_num_actors()
    try:
        scene.create_articulated_actor(params)
        out = {"raised": False}
    except Exception as e:  # noqa: BLE001 - we record whatever the engine raises
        out = {"raised": True, "type": type(e).__name__, "message": str(e)}
    out["actors_after_minus_before"] = scene.get_num_actors() - before
    return out


def main() -> None:
    out = {"build": precision(), "structs": {n: defaults(getattr(sdp, n)) for n in STRUCTS},
           "ArticulatedJointType": {k: int(v.value) for k, v in JT.__members__.items()},
           "PoseControllerParams(3)": ser(sdp.PoseControllerParams(3))}
    shape = mesh_shape(*box_mesh((0.05, 0.2, 0.05)))
    scene = sdp.create_scene("api")
    z = [0, 0, 1]
    # DoF layout of FREE, SPHERICAL, PRISMATIC, REVOLUTE, HARD in that order.
    p = chain(shape, [(JT.FREE, z), (JT.SPHERICAL, z), (JT.PRISMATIC, [1, 0, 0]), (JT.REVOLUTE, z), (JT.HARD, z)],
              [[0, 0, 0], [0.1, -0.3, 0.05], [0, -0.3, 0], [0, -0.3, 0], [0, -0.3, 0]])
    a = scene.create_articulated_actor(p)
    n = a.get_num_dofs()
    info = a.get_articulated_shape_info()
    layout = {"num_dofs": n, "dof_info": [[d.offset, d.trans_size, d.rot_size, d.get_trans_offset(), d.get_rot_offset(),
                                           d.get_size()] for d in info.dof_info],
              "joint_names": list(info.joint_names), "link_names": list(info.link_names),
              "nested_link_names": [scene.get_actor(h).get_name() for h in a.get_nested_link_actors()],
              "parents": list(info.parents)}
    q = reals([0.1, 0.2, 0.3, 0.3, -0.2, 0.5, 0.4, 0.1, -0.3, 0.05, 0.7])
    a.set_articulated_pose_from_joints(q)
    tr = sdp.DynamicArrayTransformRT(len(p.links))
    a.get_articulated_link_transforms(tr)
    layout["pose"] = q.tolist()
    layout["link_transforms"] = [{"rotation": vec(x.rotation), "translation": vec(x.translation)} for x in tr]
    layout["link_com"] = [vec(scene.get_actor(h).get_center_of_mass_transform().translation)
                          for h in a.get_nested_link_actors()]
    layout["jacobians_6_by_ndofs"] = [np.asarray(scene.get_actor(h).get_articulated_jacobian()).reshape(6, -1).tolist()
                                      for h in a.get_nested_link_actors()]
    delta = reals(np.zeros(n))
    delta[[3, 7]] = [1e-2, 2e-2]
    added = reals(np.zeros(n))
    a.add_articulated_delta_to_pose(q, delta, added)
    layout["add_delta"] = {"delta": delta.tolist(), "result": added.tolist()}
    out["layout"] = layout

    bad = {}
    ok_types = [(JT.REVOLUTE, z)] * 3
    offs = [[0, 0, 0], [0, -0.4, 0], [0, -0.4, 0]]
    p = chain(shape, ok_types, offs)
    p.links[2].parent_link = 5
    bad["parent_out_of_range"] = attempt(scene, p)
    p = chain(shape, ok_types, offs)
    p.links[1].parent_link = 2
    bad["parent_not_before_child"] = attempt(scene, p)
    p = chain(shape, ok_types, offs)
    p.links[1].parent_link = 1
    bad["parent_is_self"] = attempt(scene, p)
    p = chain(shape, [(JT.REVOLUTE, [0, 0, 0])] * 3, offs)
    bad["zero_axis"] = attempt(scene, p)
    p = chain(shape, [(JT.REVOLUTE, [0, 0, 2.0])] * 3, offs)
    bad["axis_not_unit_is_normalized"] = attempt(scene, p)
    p = chain(shape, ok_types, offs, {1: {"min_limit": [0, 0, 1.0], "max_limit": [0, 0, -1.0]}})
    bad["min_above_max"] = attempt(scene, p)
    p = chain(shape, ok_types, offs, {1: {"min_limit": [0.5, 0, -1.0], "max_limit": [0, 0, 1.0]}})
    bad["limit_off_axis"] = attempt(scene, p)
    p = chain(shape, ok_types, offs)
    p.joints = list(p.joints)[:2]
    bad["joint_count_mismatch"] = attempt(scene, p)
    p = chain(shape, ok_types, offs)
    p.links[0].parent_link = 0
    bad["root_parent_not_minus_one"] = attempt(scene, p)
    out["bad_input"] = bad
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
