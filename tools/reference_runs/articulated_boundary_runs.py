"""Joint trajectories under DoF boundary conditions (``add_boundary_condition_dofs_world`` and ``_permanent``,
``clear_boundary_conditions``) from the released engine (documentation only).

Run with the reference engine's venv (see tests/reference_data/README.md), fp64 build:

    cd tools/reference_runs && SUPERDEX_PRECISION=fp64 PYTHONPATH=/work/ref312-fp64 /work/ref312/bin/python \
        articulated_boundary_runs.py > ../../tests/reference_data/articulated_boundary_runs.json

The scene is articulated_constraint_runs.chain (SPHERICAL root, REVOLUTE z, REVOLUTE x), the "tight" solver, started
from Q0 at rest, 30 steps of articulated_runs.DT, with BACKWARD_EULER and with BDF2. Before step 0: a permanent
entry holding DoF 4 at -0.1 and a clearable one holding DoF 3 at 0.7; before step 10: clearable entries holding the
SPHERICAL rotation (DoFs 0-2) at (0.1, 0.2, 0.3) and DoF 4 at 0.2; before step 20: clear_boundary_conditions. The
entries (indices, values) are recorded after each change.
"""

from __future__ import annotations

import json
import sys

from _common import box_mesh, mesh_shape, precision, reals
from articulated_constraint_runs import Q0, chain
from articulated_runs import LINK_HALF, run, sdp

STEPS = 30
CHANGES = {0: [("permanent", [4], [-0.1]), ("clearable", [3], [0.7])],
           10: [("clearable", [0, 1, 2], [0.1, 0.2, 0.3]), ("clearable", [4], [0.2])],
           20: [("clear", None, None)]}


def scene_run(method) -> dict:
    scene, actor = chain(mesh_shape(*box_mesh(LINK_HALF)), "boundary")
    p = scene.get_solver_params()
    p.integration_method = method
    scene.set_solver_params(p)
    entries = {}

    def before(k):
        for what, dofs, values in CHANGES.get(k, []):
            if what == "permanent":
                actor.add_boundary_condition_dofs_world_permanent(dofs, reals(values))
            elif what == "clearable":
                actor.add_boundary_condition_dofs_world(dofs, reals(values))
            else:
                actor.clear_boundary_conditions()
        if k in CHANGES:
            entries[k] = {"indices": list(actor.get_boundary_condition_dof_indices()),
                          "values": list(actor.get_boundary_condition_dof_values_world())}

    out = run(scene, actor, Q0, STEPS, before)
    out["entries"] = entries
    return out


def main() -> None:
    out = {"build": precision(), "script": "tools/reference_runs/articulated_boundary_runs.py",
           "how": "superdex-physics(-fp64)==1.0.1, Python 3.12.1, initialize(num_worker_threads=0); abs_tol = rel_tol "
                  "= 1e-12, max_iter 100; pose and joint velocities after every step",
           "changes": {str(k): v for k, v in CHANGES.items()},
           "backward_euler": scene_run(sdp.IntegrationMethod.BACKWARD_EULER),
           "bdf2": scene_run(sdp.IntegrationMethod.BDF2)}
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
