"""Numbers taken from the released reference engine (fp64 build); see tests/reference_data/README.md for the
script, build and scene behind each number. The product never imports the reference engine."""

import functools
import json
from pathlib import Path

import numpy as np

import superdex_gym.sim as mochi

_PATH = Path(__file__).parent / "reference_data" / "reference_runs.json"


@functools.lru_cache(maxsize=1)
def reference_runs() -> dict:
    return json.loads(_PATH.read_text())


def fp64(section: str) -> dict:
    return reference_runs()[section]["fp64"]


# The reference's tight-solver settings (reference_data/README.md): converged discrete solutions.
TIGHT = {"abs_tol": 1e-12, "rel_tol": 1e-12, "max_iter": 100}
# The reference's default solver (our default max_iter is larger; see NonLinearSolverParams).
REFERENCE = {"max_iter": mochi.REFERENCE_MAX_ITER}


# The released engine's articulated reference runs converge every step (abs_tol = rel_tol = 1e-12, max_iter 100:
# tools/reference_runs/articulated_runs.py); a scene compared with them takes the same settings.
CONVERGED = {"abs_tol": 1e-12, "rel_tol": 1e-12, "max_iter": 100}


def set_solver(scene, method=mochi.IntegrationMethod.BACKWARD_EULER, **nonlinear):
    sp = scene.get_solver_params()
    sp.integration_method = method
    for k, v in nonlinear.items():
        setattr(sp.non_linear_solver, k, v)
    scene.set_solver_params(sp)


def box_mesh(h, offset=(0.0, 0.0, 0.0), rotation=None):
    """The reference scripts' box: vertex i = offset + R (s0 h0, s1 h1, s2 h2), s_k = +1 if bit k of i is set."""
    h = np.asarray(h, dtype=float)
    signs = np.array([[1 if (i >> k) & 1 else -1 for k in range(3)] for i in range(8)], dtype=float)
    rot = np.eye(3) if rotation is None else rotation
    verts = (signs * h) @ rot.T + np.asarray(offset)
    tris = np.array([(0, 2, 3), (0, 3, 1), (4, 5, 7), (4, 7, 6), (0, 1, 5), (0, 5, 4), (2, 6, 7), (2, 7, 3),
                     (0, 4, 6), (0, 6, 2), (1, 3, 7), (1, 7, 5)])
    return mochi.create_tri_mesh_shape(verts.ravel().tolist(), tris.ravel().tolist())
