"""PER_ACTOR_WEIGHTED convergence weights of dynamic rigid actors, measured by bisection.

Method: one BACKWARD_EULER step of a single box that starts at rest.  The Newton residual at
iteration 0 is then known in closed form: r0_trans = -(m*g_actor) - f_ext, r0_rot = -tau_ext.
With rel_tol = rel_step_tol = 0 the solver reports max_non_linear_iters == 0 iff
rho_0 = sqrt(sum_j w_j r0_j^2) <= abs_tol.  Bisecting abs_tol gives rho_0 (and, in GLOBAL mode,
the plain |r0|_2, which checks the residual's units/scale).

Hypothesis checked (weights for a dynamic rigid actor, 6 DoFs):
  aRef    = max(1, |scene gravity|)                       (scene gravity, not the actor's has_gravity)
  w_trans = 1 / (m*aRef)^2                                (all 3 translational DoFs)
  w_rot_i = 1 / (aRef^2 * m * (sqrt(I_world))_ii^2)        (principal matrix square root,
                                                          I_world = R I_local R^T at step start)
Prints one JSON document.
"""

from __future__ import annotations

import math

import numpy as np

from _common import box_mesh, emit, init, ints, mesh_shape, quat_axis_angle, quat_to_matrix, reals, solver_params

sdp = init()


def inertia_local(a):
    ixx, ixy, ixz, iyy, iyz, izz = [float(v) for v in a.get_rigid_moment_of_inertia_local()]
    return np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])


def sqrtm_sym(A):
    lam, V = np.linalg.eigh(A)
    return V @ np.diag(np.sqrt(np.maximum(lam, 0.0))) @ V.T


def predicted_rho(m, I_world, g_scene, f_trans, tau):
    a_ref = max(1.0, float(np.linalg.norm(g_scene)))
    w_t = 1.0 / (m * a_ref) ** 2
    s = np.diag(sqrtm_sym(I_world))
    w_r = 1.0 / (a_ref ** 2 * m * s ** 2)
    return math.sqrt(w_t * float(np.dot(f_trans, f_trans)) + float(np.sum(w_r * np.asarray(tau) ** 2)))


def build(case, abs_tol, mode="PER_ACTOR_WEIGHTED"):
    scene = sdp.create_scene("cw")
    sp = solver_params(sdp.IntegrationMethod.BACKWARD_EULER, abs_tol=abs_tol, rel_tol=0.0, rel_step_tol=0.0,
                       max_iter=1)
    sp.non_linear_solver.convergence_mode = getattr(sdp.NonLinearSolverConvergenceMode, mode)
    scene.set_solver_params(sp)
    scene.set_gravity(sdp.Real3(*case["gravity"]))
    verts, tris = box_mesh(case["half"])
    q = case.get("rot", (0.0, 0.0, 0.0, 1.0))
    if case.get("prestep"):  # start at identity pose / zero gravity, step once, then change
        q = (0.0, 0.0, 0.0, 1.0)
        scene.set_gravity(sdp.Real3(0.0, 0.0, 0.0))
    wfl = sdp.TransformRT(sdp.Quaternion(*q), sdp.Real3(0.0, 0.0, 0.0))
    a = scene.create_rigid_actor(shape=mesh_shape(verts, tris), density=case["density"], world_from_local=wfl,
                                 has_gravity=case.get("has_gravity", True))
    if case.get("static"):
        sv, st = box_mesh((1.0, 1.0, 0.1))
        scene.create_rigid_actor(shape=mesh_shape(sv, st), is_static=True,
                                 world_from_local=sdp.TransformRT(sdp.Real3(0.0, 0.0, -50.0)))
    if case.get("prestep"):
        scene.step(case["dt"])  # weights computed here for identity pose and aRef = 1
        a.set_root_transform(sdp.TransformRT(sdp.Quaternion(*case.get("rot", (0.0, 0.0, 0.0, 1.0))),
                                             sdp.Real3(0.0, 0.0, 0.0)))
        a.set_velocity(sdp.Real3(0.0, 0.0, 0.0), sdp.Real3(0.0, 0.0, 0.0))
        scene.set_gravity(sdp.Real3(*case["gravity"]))
    f = list(case.get("force", (0, 0, 0))) + list(case.get("torque", (0, 0, 0)))
    if any(v != 0 for v in f):
        a.set_external_forces_on_dofs(ints([0, 1, 2, 3, 4, 5]), reals(f))
    return scene, a


def converged_at_0(case, tol, mode):
    scene, a = build(case, tol, mode)
    scene.step(case["dt"])
    it = int(scene.get_solver_stats().max_non_linear_iters)
    sdp.destroy_scene(scene)
    return it == 0


def bisect(case, mode="PER_ACTOR_WEIGHTED"):
    lo, hi = 1e-12, 1e12  # converged(hi) must be True, converged(lo) False
    if converged_at_0(case, lo, mode):
        return 0.0
    for _ in range(200):
        mid = math.sqrt(lo * hi)
        if converged_at_0(case, mid, mode):
            hi = mid
        else:
            lo = mid
        if hi / lo - 1 < 1e-10:
            break
    return hi


def run(case):
    scene, a = build(case, 1e-3)
    m = float(a.get_mass())
    R = np.array(quat_to_matrix(case.get("rot", (0.0, 0.0, 0.0, 1.0))))
    I_world = R @ inertia_local(a) @ R.T
    sdp.destroy_scene(scene)
    g = np.array(case["gravity"], dtype=float)
    g_actor = g if case.get("has_gravity", True) else np.zeros(3)
    f_trans = -(m * g_actor) - np.array(case.get("force", (0, 0, 0)), dtype=float)
    tau = -np.array(case.get("torque", (0, 0, 0)), dtype=float)
    rho_meas = bisect(case)
    r2_meas = bisect(case, "GLOBAL")
    r2_pred = math.sqrt(float(np.dot(f_trans, f_trans) + np.dot(tau, tau)))
    rho_pred = predicted_rho(m, I_world, g, f_trans, tau)
    # alternative hypothesis: sqrt of the diagonal entry instead of the diagonal of the matrix sqrt
    a_ref = max(1.0, float(np.linalg.norm(g)))
    alt = math.sqrt(float(np.dot(f_trans, f_trans)) / (m * a_ref) ** 2
                    + float(np.sum(tau ** 2 / (a_ref ** 2 * m * np.diag(I_world)))))
    return {"case": {k: v for k, v in case.items()}, "mass": m, "I_world_diag": np.diag(I_world).tolist(),
            "global_norm_measured": r2_meas, "global_norm_predicted": r2_pred,
            "rho0_measured": rho_meas, "rho0_predicted": rho_pred,
            "rel_err": abs(rho_meas - rho_pred) / rho_pred if rho_pred else abs(rho_meas),
            "rho0_alt_sqrt_of_diag": alt}


G = (0.0, 0.0, -9.8)
ROT = tuple(quat_axis_angle((1.0, 2.0, 3.0), 0.9))
CASES = [
    # translational: gravity only
    {"name": "g9.8 cube d1000 dt1/60", "half": (0.2, 0.2, 0.2), "density": 1000.0, "gravity": G, "dt": 1 / 60},
    {"name": "g9.8 cube d10 dt0.1", "half": (0.2, 0.2, 0.2), "density": 10.0, "gravity": G, "dt": 0.1},
    {"name": "g9.8 aniso d1000 dt0.01", "half": (0.1, 0.2, 0.3), "density": 1000.0, "gravity": G, "dt": 0.01},
    {"name": "g20 aniso d500", "half": (0.1, 0.2, 0.3), "density": 500.0, "gravity": (0.0, 0.0, -20.0),
     "dt": 0.01},
    {"name": "g0.5 (aRef clamp 1)", "half": (0.1, 0.2, 0.3), "density": 1000.0, "gravity": (0.0, 0.0, -0.5),
     "dt": 0.01},
    {"name": "g9.8 + static actor", "half": (0.1, 0.2, 0.3), "density": 1000.0, "gravity": G, "dt": 0.01,
     "static": True},
    # has_gravity False: residual only from external force; aRef still from scene gravity
    {"name": "has_gravity=False g9.8 force (0,0,5)", "half": (0.1, 0.2, 0.3), "density": 1000.0, "gravity": G,
     "dt": 0.01, "has_gravity": False, "force": (0.0, 0.0, 5.0)},
    {"name": "g0 force (3,-4,0)", "half": (0.1, 0.2, 0.3), "density": 1000.0, "gravity": (0, 0, 0),
     "dt": 0.01, "force": (3.0, -4.0, 0.0)},
    # rotational: torques, gravity 0 (aRef = 1)
    {"name": "g0 torque x", "half": (0.1, 0.2, 0.3), "density": 1000.0, "gravity": (0, 0, 0), "dt": 0.01,
     "torque": (2.0, 0.0, 0.0)},
    {"name": "g0 torque y", "half": (0.1, 0.2, 0.3), "density": 1000.0, "gravity": (0, 0, 0), "dt": 0.01,
     "torque": (0.0, 2.0, 0.0)},
    {"name": "g0 torque z dt0.1 d100", "half": (0.1, 0.2, 0.3), "density": 100.0, "gravity": (0, 0, 0),
     "dt": 0.1, "torque": (0.0, 0.0, 2.0)},
    {"name": "g0 torque xyz rotated box", "half": (0.1, 0.2, 0.3), "density": 1000.0, "gravity": (0, 0, 0),
     "dt": 0.01, "torque": (1.0, -2.0, 3.0), "rot": ROT},
    {"name": "g0 torque z rotated box", "half": (0.1, 0.2, 0.3), "density": 1000.0, "gravity": (0, 0, 0),
     "dt": 1 / 60, "torque": (0.0, 0.0, 3.0), "rot": ROT},
    # combined: gravity (aRef = 9.8 / 20) + torque
    {"name": "g9.8 + torque x", "half": (0.1, 0.2, 0.3), "density": 1000.0, "gravity": G, "dt": 0.01,
     "torque": (30.0, 0.0, 0.0)},
    {"name": "g20 + torque xyz rotated", "half": (0.1, 0.2, 0.3), "density": 1000.0,
     "gravity": (0.0, -20.0, 0.0), "dt": 0.01, "torque": (10.0, 20.0, -30.0), "rot": ROT},
    {"name": "has_gravity=False g9.8 torque y", "half": (0.1, 0.2, 0.3), "density": 1000.0, "gravity": G,
     "dt": 0.01, "has_gravity": False, "torque": (0.0, 15.0, 0.0)},
    # lifecycle: one step at identity pose with zero gravity, then set_root_transform(ROT) and
    # set_gravity(...) before the measured step -> weights follow the new pose and the new aRef
    {"name": "prestep, then rotate (g0) + torque", "half": (0.1, 0.2, 0.3), "density": 1000.0,
     "gravity": (0, 0, 0), "dt": 0.01, "torque": (1.0, -2.0, 3.0), "rot": ROT, "prestep": True},
    {"name": "prestep, then rotate + set_gravity(20)", "half": (0.1, 0.2, 0.3), "density": 1000.0,
     "gravity": (0.0, -20.0, 0.0), "dt": 0.01, "torque": (10.0, 20.0, -30.0), "rot": ROT, "prestep": True},
]

results = [run(c) for c in CASES]
emit({"results": results, "max_rel_err": max(r["rel_err"] for r in results)})
