"""Joint trajectories of articulated actors in scenes with rigid actors, from the released engine (documentation
only).

Run with the reference engine's venv (see tests/reference_data/README.md), fp64 build:

    cd tools/reference_runs && SUPERDEX_PRECISION=fp64 PYTHONPATH=/work/ref312-fp64 /work/ref312/bin/python \
        articulated_scene_runs.py > ../../tests/reference_data/articulated_scene_runs.json

Links and boxes are 12-triangle box meshes (_common.box_mesh); links of half extents LINK_HALF, density 1000,
centred 0.2 m below their joint; BACKWARD_EULER, dt = DT, "tight" solver (abs_tol = rel_tol = 1e-12, max_iter 100);
default contact parameters and gravity.

* ``chain_into_box``: 3 revolute joints about z rooted at (0, 2, 0), each 0.4 m below the previous, started at
  Q0_BOX at rest: the chain falls onto a static box of half extents BOX_HALF centred at BOX_CENTER; STEPS steps.
* ``chain_into_box_<method>``: the same with BDF2, DIRK22 and SYMPLECTIC_DIRK12 (BDF2 starts with BACKWARD_EULER).
* ``folded_chain``: 4 revolute joints about z rooted at (0, 2, 0), no gravity, started at Q0_FOLDED: link 2 folds
  back along link 1 and link 3 lies inside link 0, so only non-adjacent links touch (self-contact); STEPS steps.
* ``arm_holding_pose``: an arm-like chain rooted at (0, 1, 0): revolute z, revolute x, revolute z, revolute x,
  prismatic y (a finger), each with a single-DoF target constraint (ARM_TARGETS, stiffness ARM_STIFFNESS, damping
  ARM_DAMPING), started at Q0_ARM at rest; STEPS steps.
"""

from __future__ import annotations

import json
import sys

from _common import box_mesh, init, mesh_shape, precision, solver_params
from articulated_runs import DT, TIGHT, run

sdp = init()
JT = sdp.ArticulatedJointType
LINK_HALF = (0.05, 0.2, 0.05)
BOX_HALF = (0.6, 0.2, 0.2)
BOX_CENTER = (0.9, 1.2, 0.0)
STEPS = 60
Q0_BOX = [1.2, 0.0, 0.0]
Q0_FOLDED = [0.0, 0.0, 3.1, 0.0]
ARM_TYPES = [(JT.REVOLUTE, [0, 0, 1]), (JT.REVOLUTE, [1, 0, 0]), (JT.REVOLUTE, [0, 0, 1]), (JT.REVOLUTE, [1, 0, 0]),
             (JT.PRISMATIC, [0, 1, 0])]
ARM_TARGETS = [0.3, -0.5, 0.2, 0.8, 0.05]
Q0_ARM = [0.0, 0.0, 0.0, 0.0, 0.0]
ARM_STIFFNESS = 2000.0
ARM_DAMPING = 20.0


def scene_and_params(name, root, method=None):
    scene = sdp.create_scene(name)
    scene.set_solver_params(solver_params(method or sdp.IntegrationMethod.BACKWARD_EULER, **TIGHT))
    return scene, sdp.ArticulatedActorParams(name=name, world_from_root=sdp.TransformRT(translation=root))


def chain(p, shape, types):
    p.joints = [sdp.ArticulatedJointParams(type=t, axis=ax,
                                           parent_link_from_joint=sdp.TransformRT(translation=[0, -0.2 if i else 0, 0]))
                for i, (t, ax) in enumerate(types)]
    p.links = [sdp.ArticulatedLinkParams(parent_link=i - 1, shape=shape, density=1000.0,
                                         parent_joint_from_link=sdp.TransformRT(translation=[0, -0.2, 0]))
               for i in range(len(types))]


def chain_into_box(shape, method=None) -> dict:
    scene, p = scene_and_params("chain", [0, 2, 0], method)
    chain(p, shape, [(JT.REVOLUTE, [0, 0, 1])] * 3)
    actor = scene.create_articulated_actor(p)
    scene.create_rigid_actor(sdp.RigidActorParams(name="box", shape=mesh_shape(*box_mesh(BOX_HALF)), is_static=True,
                                                  world_from_local=sdp.TransformRT(translation=list(BOX_CENTER))))
    return run(scene, actor, Q0_BOX, STEPS)


def folded_chain(shape) -> dict:
    scene, p = scene_and_params("folded", [0, 2, 0])
    scene.set_gravity([0.0, 0.0, 0.0])
    chain(p, shape, [(JT.REVOLUTE, [0, 0, 1])] * 4)
    return run(scene, scene.create_articulated_actor(p), Q0_FOLDED, STEPS)


def arm_holding_pose(shape) -> dict:
    scene, p = scene_and_params("arm", [0, 1, 0])
    chain(p, shape, ARM_TYPES)
    actor = scene.create_articulated_actor(p)
    for j, target in enumerate(ARM_TARGETS):
        scene.create_articulated_single_dof_target_constraint(sdp.ArticulatedSingleDofTargetConstraintParams(
            actor=actor.get_handle(), joint_index=j, dof_index=0, target_value=target, stiffness=ARM_STIFFNESS,
            damping=ARM_DAMPING))
    return run(scene, actor, Q0_ARM, STEPS)


def main() -> None:
    shape = mesh_shape(*box_mesh(LINK_HALF))
    out = {"build": precision(), "script": "tools/reference_runs/articulated_scene_runs.py",
           "how": "superdex-physics(-fp64)==1.0.1, Python 3.12, initialize(num_worker_threads=0); BACKWARD_EULER, "
                  "abs_tol = rel_tol = 1e-12, max_iter 100; pose and joint velocities after every step",
           "link_half_extents": list(LINK_HALF), "box_half_extents": list(BOX_HALF), "box_center": list(BOX_CENTER),
           "arm": {"targets": ARM_TARGETS, "stiffness": ARM_STIFFNESS, "damping": ARM_DAMPING},
           "chain_into_box": chain_into_box(shape), "arm_holding_pose": arm_holding_pose(shape),
           "folded_chain": folded_chain(shape)}
    im = sdp.IntegrationMethod
    for method in (im.BDF2, im.DIRK22, im.SYMPLECTIC_DIRK12):
        out[f"chain_into_box_{str(method).split('.')[-1].lower()}"] = chain_into_box(shape, method)
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
