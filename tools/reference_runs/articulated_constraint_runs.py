"""Joint trajectories under articulated constraints and the pose controller's link targets, from the released engine
(documentation only).

Run with the reference engine's venv (see tests/reference_data/README.md), fp64 build:

    cd tools/reference_runs && SUPERDEX_PRECISION=fp64 PYTHONPATH=/work/ref312-fp64 /work/ref312/bin/python \
        articulated_constraint_runs.py > ../../tests/reference_data/articulated_constraint_runs.json

Every scene is articulated_runs.spherical_chain with a REVOLUTE (x) third joint (SPHERICAL root, REVOLUTE z,
REVOLUTE x; links of half extents LINK_HALF, density 1000), BACKWARD_EULER, dt = articulated_runs.DT, the "tight" solver:

* ``rotation_target``: a 3D rotation target on the SPHERICAL joint (TARGET_A, stiffness 300, damping 2), moved to
  TARGET_B with set_target_rotation before step MOVE_AT; started from Q0 at rest.
* ``rotation_range``: a 3D rotation range on the SPHERICAL joint [RANGE_MIN, RANGE_MAX] (stiffness 400, damping
  3), started from Q0_PAST (outside it), joint velocities QD0 set before step 0.
* ``saturated``: saturated constraints: a 3D target (TARGET_A, stiffness 1000, damping 2, saturation 0.05) on
  joint 0, a single-DoF target on joint 1 (0.5, stiffness 2000, damping 5, saturation 0.05; set_target_dof(0.0)
  before step MOVE_AT), a single-DoF range on joint 2 ([-0.1, 0.1], stiffness 3000, damping 1, saturation 0.02);
  started from Q0 at rest.
* ``target_links``: a pose controller (joint tracking 50 / 2 on every joint, link position tracking 200 / 10 on
  link 2, link rotation tracking 5 / 0.5 on link 1) whose targets are set with set_articulated_target_link_transforms
  (LINK_TARGETS: the links of TARGET_POSE, link 2 shifted by LINK_SHIFT) before step 0 and reset with
  reset_articulated_target_link_transforms to the links of Q0 before step MOVE_AT; QueryType
  ARTICULATED_CONTROLLER_FORCE registered; records get_articulated_controller_force after every step too.
* ``saturated_tracking``: the same gains with saturations (joint tracking 0.05, link position 0.02, link rotation
  0.1); set_articulated_target_pose(TARGET_POSE) before step 0; started from Q0 at rest.
"""

from __future__ import annotations

import json
import sys

import numpy as np

from _common import box_mesh, mesh_shape, precision, reals, vec
from articulated_runs import LINK_HALF, STEPS, controller_params, run, sdp, spherical_chain

JT = sdp.ArticulatedJointType
Q0 = [0.2, -0.1, 0.3, 0.4, -0.2]
Q0_PAST = [0.3, -0.3, 0.1, 0.4, -0.2]
QD0 = [0.5, -1.0, 0.8, 0.0, 0.0]
TARGET_A = (0.1, -0.2, 0.15, 0.9630680142129111)  # unit (x, y, z, w)
TARGET_B = (-0.2, 0.1, 0.0, 0.9746794344808963)
RANGE_MIN = (-0.1, -0.2, -0.05)
RANGE_MAX = (0.1, 0.15, 0.05)
MOVE_AT = 50
TARGET_POSE = [0.1, 0.2, -0.1, 0.3, 0.2]
LINK_SHIFT = (0.03, 0.0, 0.02)


def chain(shape, name):
    return spherical_chain(shape, name, JT.REVOLUTE, [1, 0, 0])


def rotation_target(shape) -> dict:
    scene, actor = chain(shape, "rotation_target")
    c = scene.create_articulated3d_rotation_target_constraint(sdp.Articulated3dRotationTargetConstraintParams(
        actor=actor.get_handle(), joint_index=0, target=sdp.Quaternion(*TARGET_A), stiffness=300.0, damping=2.0))

    def move(k):
        if k == MOVE_AT:
            c.set_target_rotation(sdp.Quaternion(*TARGET_B))

    return run(scene, actor, Q0, STEPS, move)


def rotation_range(shape) -> dict:
    scene, actor = chain(shape, "rotation_range")
    scene.create_articulated3d_rotation_range_constraint(sdp.Articulated3dRotationRangeConstraintParams(
        actor=actor.get_handle(), joint_index=0, min_values=list(RANGE_MIN), max_values=list(RANGE_MAX),
        stiffness=400.0, damping=3.0))

    def kick(k):  # run() sets the pose first
        if k == 0:
            actor.set_articulated_joint_velocities(reals(QD0))

    return run(scene, actor, Q0_PAST, STEPS, kick)


def saturated(shape) -> dict:
    scene, actor = chain(shape, "saturated")
    h = actor.get_handle()
    scene.create_articulated3d_rotation_target_constraint(sdp.Articulated3dRotationTargetConstraintParams(
        actor=h, joint_index=0, target=sdp.Quaternion(*TARGET_A), stiffness=1000.0, damping=2.0, saturation=0.05))
    drive = scene.create_articulated_single_dof_target_constraint(sdp.ArticulatedSingleDofTargetConstraintParams(
        actor=h, joint_index=1, target_value=0.5, stiffness=2000.0, damping=5.0, saturation=0.05))
    scene.create_articulated_single_dof_range_constraint(sdp.ArticulatedSingleDofRangeConstraintParams(
        actor=h, joint_index=2, min_value=-0.1, max_value=0.1, stiffness=3000.0, damping=1.0, saturation=0.02))

    def move(k):
        if k == MOVE_AT:
            drive.set_target_dof(0.0)

    return run(scene, actor, Q0, STEPS, move)


def link_targets(actor, pose, shift):
    """The links' world transforms at ``pose`` (the actor is put back where it was), link 2 shifted."""
    n = actor.get_num_dofs()
    keep = reals(np.zeros(n))
    actor.get_articulated_pose(keep)
    actor.set_articulated_pose_from_joints(reals(pose))
    out = sdp.DynamicArrayTransformRT(3)
    actor.get_articulated_link_transforms(out)
    actor.set_articulated_pose_from_joints(keep)
    t = out[2]
    out[2] = sdp.TransformRT(t.rotation, [a + b for a, b in zip(vec(t.translation), shift)])
    return out, [{"rotation": vec(x.rotation), "translation": vec(x.translation)} for x in out]


def target_links(shape) -> dict:
    scene, actor = chain(shape, "target_links")
    actor.set_articulated_pose_from_joints(reals(Q0))
    actor.add_articulated_pose_controller(controller_params())
    actor.register_query(sdp.QueryType.ARTICULATED_CONTROLLER_FORCE)
    first, first_json = link_targets(actor, TARGET_POSE, LINK_SHIFT)
    second, second_json = link_targets(actor, Q0, (0.0, 0.0, 0.0))
    forces, target_poses = [], []

    def retarget(k):
        if k == 0:
            actor.set_articulated_target_link_transforms(first)
        elif k == MOVE_AT:
            actor.reset_articulated_target_link_transforms(second)
        tp = reals(np.zeros(actor.get_num_dofs()))
        actor.get_articulated_target_pose(tp)
        target_poses.append(tp.tolist())
        if k:
            forces.append(list(actor.get_articulated_controller_force()))

    out = run(scene, actor, Q0, STEPS, retarget)
    forces.append(list(actor.get_articulated_controller_force()))
    out.update({"link_targets": first_json, "reset_link_targets": second_json, "controller_force": forces,
                "target_pose": target_poses})
    return out


def saturated_tracking(shape) -> dict:
    scene, actor = chain(shape, "saturated_tracking")
    actor.set_articulated_pose_from_joints(reals(Q0))
    actor.add_articulated_pose_controller(controller_params((0.05, 0.02, 0.1)))

    def retarget(k):
        if k == 0:
            actor.set_articulated_target_pose(reals(TARGET_POSE))

    return run(scene, actor, Q0, STEPS, retarget)


def main() -> None:
    shape = mesh_shape(*box_mesh(LINK_HALF))
    out = {"build": precision(), "script": "tools/reference_runs/articulated_constraint_runs.py",
           "how": "superdex-physics(-fp64)==1.0.1, Python 3.12.1, initialize(num_worker_threads=0); BACKWARD_EULER, "
                  "abs_tol = rel_tol = 1e-12, max_iter 100; pose and joint velocities after every step",
           "q0": Q0, "q0_past": Q0_PAST, "qd0": QD0, "target_a": list(TARGET_A), "target_b": list(TARGET_B),
           "range_min": list(RANGE_MIN), "range_max": list(RANGE_MAX), "move_at": MOVE_AT,
           "target_pose": TARGET_POSE, "link_shift": list(LINK_SHIFT),
           "rotation_target": rotation_target(shape), "rotation_range": rotation_range(shape),
           "saturated": saturated(shape), "target_links": target_links(shape),
           "saturated_tracking": saturated_tracking(shape)}
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
