"""Item 2: free fall (no contact, default gravity) for every IntegrationMethod.

Scene: the 0.4 m cube (box_mesh((0.2,0.2,0.2)), density 1000 -> 64 kg), world_from_local translation (0,5,0),
default gravity, default SolverParams except integration_method, dt = 1/60, 10 steps.
"""

from __future__ import annotations

from _common import CUBE_HALF, box_mesh, emit, init, mesh_shape, solver_params, solver_stats, take_logs, vec

sdp = init()
verts, tris = box_mesh(CUBE_HALF)
shape = mesh_shape(verts, tris)

DT = 1.0 / 60.0
N = 10
out: dict = {"dt": DT, "steps": N, "y0": 5.0}

probe = sdp.create_scene("probe")
out["default_gravity"] = vec(probe.get_gravity())
out["DEFAULT_GRAVITY"] = vec(sdp.DEFAULT_GRAVITY)
sdp.destroy_scene(probe)

methods = [m.name for m in sdp.IntegrationMethod if m.name != "COUNT"]  # DEFAULT is an alias of BACKWARD_EULER
out["methods"] = methods
runs = {}
for name in methods:
    scene = sdp.create_scene(f"ff_{name}")
    scene.set_solver_params(solver_params(getattr(sdp.IntegrationMethod, name)))
    a = scene.create_rigid_actor(shape=shape, density=1000.0,
                                 world_from_local=sdp.TransformRT(translation=sdp.Real3(0.0, 5.0, 0.0)))
    take_logs()
    r = {"com_y": [], "vel_y": [], "root_y": [], "stats": [], "total_time": []}
    for i in range(N):
        scene.step(DT)
        r["com_y"].append(vec(a.get_center_of_mass_transform().translation)[1])
        r["root_y"].append(vec(a.get_root_transform().translation)[1])
        r["vel_y"].append(vec(a.get_linear_velocity())[1])
        r["stats"].append(solver_stats(scene))
        r["total_time"].append(scene.get_total_simulation_time())
    r["stats_after_step_1"] = r["stats"][0]
    r["final_linear_velocity"] = vec(a.get_linear_velocity())
    r["final_angular_velocity"] = vec(a.get_angular_velocity())
    r["final_rotation_xyzw"] = vec(a.get_root_transform().rotation)
    r["last_time_step"] = scene.get_last_time_step()
    r["logs"] = take_logs()
    runs[name] = r
    sdp.destroy_scene(scene)
out["runs"] = runs
emit(out)
