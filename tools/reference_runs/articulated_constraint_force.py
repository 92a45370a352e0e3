"""Articulated constraints' forces (``Constraint.get_force`` with QueryType.CONSTRAINT_FORCE registered on each
constraint) from the released engine (documentation only).

Run with the reference engine's venv (see tests/reference_data/README.md), fp64 build:

    cd tools/reference_runs && SUPERDEX_PRECISION=fp64 PYTHONPATH=/work/ref312-fp64 /work/ref312/bin/python \
        articulated_constraint_force.py > ../../tests/reference_data/articulated_constraint_force.json

The scene is articulated_constraint_runs.chain (SPHERICAL root, REVOLUTE z, REVOLUTE x), BACKWARD_EULER, dt =
articulated_runs.DT, the "tight" solver, started from Q0 at rest, with a 3D rotation target on joint 0 (TARGET_A,
stiffness 300, damping 2), a saturated single-DoF target on joint 1 (0.5, stiffness 2000, damping 5, saturation
0.05; set_target_dof(0.0) before step MOVE_AT) and a single-DoF range on joint 2 ([-0.1, 0.1], stiffness 3000,
damping 1). Records the pose and each constraint's get_force after every step.
"""

from __future__ import annotations

import json
import sys

import numpy as np

from _common import box_mesh, mesh_shape, precision
from articulated_constraint_runs import Q0, TARGET_A, chain
from articulated_runs import LINK_HALF, run, sdp

STEPS = 40
MOVE_AT = 20


def main() -> None:
    scene, actor = chain(mesh_shape(*box_mesh(LINK_HALF)), "constraint_force")
    h = actor.get_handle()
    constraints = [
        scene.create_articulated3d_rotation_target_constraint(sdp.Articulated3dRotationTargetConstraintParams(
            actor=h, joint_index=0, target=sdp.Quaternion(*TARGET_A), stiffness=300.0, damping=2.0)),
        scene.create_articulated_single_dof_target_constraint(sdp.ArticulatedSingleDofTargetConstraintParams(
            actor=h, joint_index=1, target_value=0.5, stiffness=2000.0, damping=5.0, saturation=0.05)),
        scene.create_articulated_single_dof_range_constraint(sdp.ArticulatedSingleDofRangeConstraintParams(
            actor=h, joint_index=2, min_value=-0.1, max_value=0.1, stiffness=3000.0, damping=1.0)),
    ]
    supported = [c.is_query_supported(sdp.QueryType.CONSTRAINT_FORCE) for c in constraints]
    for c in constraints:
        c.register_query(sdp.QueryType.CONSTRAINT_FORCE)
    forces = []

    def before(k):
        if k:
            forces.append([list(c.get_force()) for c in constraints])
        if k == MOVE_AT:
            constraints[1].set_target_dof(0.0)

    out = run(scene, actor, Q0, STEPS, before)
    forces.append([list(c.get_force()) for c in constraints])
    out.update({"build": precision(), "script": "tools/reference_runs/articulated_constraint_force.py",
                "how": "superdex-physics(-fp64)==1.0.1, Python 3.12.1, initialize(num_worker_threads=0); "
                       "BACKWARD_EULER, abs_tol = rel_tol = 1e-12, max_iter 100; get_force of each constraint after "
                       "every step", "move_at": MOVE_AT, "query_supported": supported, "force": forces,
                "dof_indices": [list(c.get_dof_indices_for_actor(0)) for c in constraints]})
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
