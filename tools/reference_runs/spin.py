"""Item 3: free rotation of the anisotropic box (no gravity).

Body: box_mesh((0.1,0.2,0.3)) centred & axis aligned, density 1000 -> m = 48 kg,
I = diag(2.08, 1.6, 0.8) kg m^2 (principal axes = local axes), identity initial pose.
Gravity: scene.set_gravity((0,0,0)) (plus one has_gravity=False check).
Default solver parameters except integration_method; runs tagged "(tight)" also set
non_linear_solver abs_tol = rel_tol = 1e-12, max_iter = 100 (the converged discrete solution).
"""

from __future__ import annotations

from _common import ANISO_HALF, box_mesh, emit, init, mesh_shape, solver_params, solver_stats, take_logs, vec

sdp = init()
verts, tris = box_mesh(ANISO_HALF)
shape = mesh_shape(verts, tris)


TIGHT = {"abs_tol": 1e-12, "rel_tol": 1e-12, "max_iter": 100}


def run(method, dt, n, omega0, newton_euler=False, gravity_off="scene", tight=False):
    scene = sdp.create_scene("spin")
    scene.set_solver_params(solver_params(getattr(sdp.IntegrationMethod, method), **(TIGHT if tight else {})))
    if gravity_off == "scene":
        scene.set_gravity(sdp.Real3(0.0, 0.0, 0.0))
        a = scene.create_rigid_actor(shape=shape, density=1000.0, angular_velocity=sdp.Real3(*omega0))
    else:
        a = scene.create_rigid_actor(shape=shape, density=1000.0, angular_velocity=sdp.Real3(*omega0),
                                     has_gravity=False)
    if newton_euler:
        sdp.experimental.enable_newton_euler_inertia(a, True)
    take_logs()
    r = {"method": method, "dt": dt, "steps": n, "omega0": list(omega0), "newton_euler_inertia": newton_euler,
         "non_linear_solver_overrides": TIGHT if tight else {},
         "newton_euler_enabled_query": bool(sdp.experimental.is_newton_euler_inertia_enabled(a)),
         "gravity_disabled_by": "scene.set_gravity((0,0,0))" if gravity_off == "scene" else "has_gravity=False",
         "angular_velocity_before_step": vec(a.get_angular_velocity()),
         "angular_velocity": [], "rotation_xyzw": [], "com": [], "linear_velocity": [], "stats": []}
    for _ in range(n):
        scene.step(dt)
        r["angular_velocity"].append(vec(a.get_angular_velocity()))
        r["rotation_xyzw"].append(vec(a.get_root_transform().rotation))
        r["com"].append(vec(a.get_center_of_mass_transform().translation))
        r["linear_velocity"].append(vec(a.get_linear_velocity()))
        r["stats"].append(solver_stats(scene))
    r["omega_z"] = [w[2] for w in r["angular_velocity"]]
    r["logs"] = take_logs()
    sdp.destroy_scene(scene)
    return r


out: dict = {"body": {"half_extents": list(ANISO_HALF), "density": 1000.0}}
principal = {}
for m in ["BACKWARD_EULER", "BDF2", "SYMPLECTIC_DIRK12"]:
    principal[m] = run(m, 0.1, 20, (0.0, 0.0, 3.0))
    principal[m + "+newton_euler"] = run(m, 0.1, 20, (0.0, 0.0, 3.0), newton_euler=True)
for m in ["BACKWARD_EULER", "BDF2", "SYMPLECTIC_DIRK12"]:
    principal[m + "(tight)"] = run(m, 0.1, 20, (0.0, 0.0, 3.0), tight=True)
    principal[m + "+newton_euler(tight)"] = run(m, 0.1, 20, (0.0, 0.0, 3.0), newton_euler=True, tight=True)
principal["BACKWARD_EULER(has_gravity=False)"] = run("BACKWARD_EULER", 0.1, 20, (0.0, 0.0, 3.0), gravity_off="actor")
# the other principal axes (x: largest I, y: middle I -> unstable axis)
principal["BACKWARD_EULER_axis_x"] = run("BACKWARD_EULER", 0.1, 20, (3.0, 0.0, 0.0))
principal["BACKWARD_EULER_axis_y"] = run("BACKWARD_EULER", 0.1, 20, (0.0, 3.0, 0.0))
out["principal_axis_spin"] = principal

nonp = {}
nonp["BACKWARD_EULER"] = run("BACKWARD_EULER", 0.01, 50, (1.0, 2.0, 3.0))
nonp["BACKWARD_EULER+newton_euler"] = run("BACKWARD_EULER", 0.01, 50, (1.0, 2.0, 3.0), newton_euler=True)
nonp["BDF2"] = run("BDF2", 0.01, 50, (1.0, 2.0, 3.0))
nonp["SYMPLECTIC_DIRK12"] = run("SYMPLECTIC_DIRK12", 0.01, 50, (1.0, 2.0, 3.0))
nonp["BACKWARD_EULER(tight)"] = run("BACKWARD_EULER", 0.01, 50, (1.0, 2.0, 3.0), tight=True)
nonp["BACKWARD_EULER+newton_euler(tight)"] = run("BACKWARD_EULER", 0.01, 50, (1.0, 2.0, 3.0), newton_euler=True,
                                                  tight=True)
out["non_principal_spin"] = nonp
emit(out)
