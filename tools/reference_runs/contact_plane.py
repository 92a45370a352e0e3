"""Item 9: the 0.4 m cube on a static implicit plane.

Ground: static rigid actor, shape create_plane_shape(normal=(0,1,0), distance=0), collider AUTO (-> PLANE),
default ContactParams.  Cube: box_mesh((0.2,0.2,0.2)), density 1000 (64 kg), collider AUTO (-> SDF), default
ContactParams (mu 0.5, k 1e9, eps 0.005, delta 0.001, V_f 0.01), boundary P1Q3.  Default gravity, BE,
default solver params.  Queries TOTAL_CONTACT_FORCE (and CONTACT_POINTS where noted) on the cube.

Scenarios
  resting:   cube CoM starts at y = 0.2 (bottom face on the plane), zero velocity, dt = 1/60, 120 steps.
  sliding:   settle 1 s at rest (from y = 0.2), then set_velocity((2,0,0),(0,0,0)) and run 1 s; dt = 0.01 and 0.001.
  pushed:    settle 1 s, then set_external_forces_on_dofs([0], [F]) with F = c*mu*m*g (c = 1.3 and 0.7),
             run 1 s; dt = 0.01 and 0.001.
Solver variants: "default" = SolverParams() (Newton max_iter 4, abs_tol 1e-3, rel_tol 1e-6);
                 "tight" = non_linear_solver abs_tol = rel_tol = 1e-9, max_iter = 50.
Mesh variants: "box12" = box_mesh((0.2,0.2,0.2)) (12 triangles); "sub4" = box_mesh_subdivided((0.2,0.2,0.2), 4)
               (192 triangles, 98 vertices; written to the JSON).
"""

from __future__ import annotations

import math

import numpy as np

from _common import (CUBE_HALF, box_mesh, box_mesh_subdivided, emit, init, ints, mesh_json, mesh_shape, reals,
                     solver_params, solver_stats, take_logs, vec)

sdp = init()
SUB4 = box_mesh_subdivided(CUBE_HALF, 4)
MESHES = {"box12": mesh_shape(*box_mesh(CUBE_HALF)), "sub4": mesh_shape(*SUB4)}
SOLVERS = {"default": {}, "tight": {"abs_tol": 1e-9, "rel_tol": 1e-9, "max_iter": 50}}
plane_shape = sdp.create_plane_shape(sdp.Real3(0.0, 1.0, 0.0), 0.0)
MU = 0.5
M = 64.0
G = 9.8


def make_scene(y0=0.2, contact_points=False, mesh="box12", solver="default"):
    scene = sdp.create_scene("contact")
    scene.set_solver_params(solver_params(**SOLVERS[solver]))
    ground = scene.create_rigid_actor(name="ground", shape=plane_shape, is_static=True)
    cube = scene.create_rigid_actor(name="cube", shape=MESHES[mesh], density=1000.0,
                                    world_from_local=sdp.TransformRT(translation=sdp.Real3(0.0, y0, 0.0)))
    handles = [cube.register_query(sdp.QueryType.TOTAL_CONTACT_FORCE)]
    if contact_points:
        handles.append(cube.register_query(sdp.QueryType.CONTACT_POINTS))
    return scene, ground, cube, handles


def row(scene, cube, t):
    return {"t": t, "com": vec(cube.get_center_of_mass_transform().translation),
            "rotation_xyzw": vec(cube.get_root_transform().rotation),
            "linear_velocity": vec(cube.get_linear_velocity()), "angular_velocity": vec(cube.get_angular_velocity()),
            "contact_force": vec(cube.get_contact_force_world()), "contact_torque": vec(cube.get_contact_torque_world()),
            "stats": solver_stats(scene)}


def contact_points(cube):
    pts = []
    for p in cube.get_contact_points_world():
        pts.append({"element_index": int(p.element_index), "sample_index": int(p.sample_index),
                    "distance": float(p.distance), "int_weight": float(p.int_weight), "pos_a": vec(p.pos_a),
                    "pos_b": vec(p.pos_b), "normal": vec(p.normal), "force": vec(p.force),
                    "parametric_coords": vec(p.parametric_coords)})
    return pts


out: dict = {"mu": MU, "mass": M, "g": G, "solver_variants": SOLVERS, "mesh_sub4": mesh_json(*SUB4)}

# --- resting -----------------------------------------------------------------------------------------
resting = {}
for solver in SOLVERS:
    scene, ground, cube, hs = make_scene(contact_points=True, solver=solver)
    out["collider_types"] = {"ground": str(ground.get_collider_type()), "cube": str(cube.get_collider_type())}
    take_logs()
    dt = 1.0 / 60.0
    rows = []
    for i in range(120):
        scene.step(dt)
        rows.append(row(scene, cube, (i + 1) * dt))
        if i == 0:
            cp_first = contact_points(cube)
    cp_last = contact_points(cube)
    resting[f"box12,{solver}"] = {
        "mesh": "box12", "solver": solver, "dt": dt, "steps": 120, "y0": 0.2, "rows": rows,
        "com_y": [r["com"][1] for r in rows], "contact_force_y": [r["contact_force"][1] for r in rows],
        "contact_points_after_step_1": cp_first, "contact_points_after_step_120": cp_last,
        "num_contact_points_after_step_120": len(cp_last), "logs": take_logs()}
    sdp.destroy_scene(scene)
out["resting"] = resting


# --- contact samples per boundary_element_type (1 resting step at dt 1/60 from y = 0.2) -------------------
bet = {}
for name in ["P1Q1", "P1Q3", "P1Q6", "EXPERIMENTAL_P1Q7", "EXPERIMENTAL_P1Q12", "EXPERIMENTAL_P1Q16"]:
    scene = sdp.create_scene("bet")
    scene.create_rigid_actor(shape=plane_shape, is_static=True)
    cube = scene.create_rigid_actor(shape=MESHES["box12"], density=1000.0,
                                    boundary_element_type=getattr(sdp.ActorBoundaryElementType, name),
                                    world_from_local=sdp.TransformRT(translation=sdp.Real3(0.0, 0.2, 0.0)))
    hs = [cube.register_query(sdp.QueryType.CONTACT_POINTS), cube.register_query(sdp.QueryType.TOTAL_CONTACT_FORCE)]
    scene.step(1.0 / 60.0)
    pts = contact_points(cube)
    bet[name] = {"num_contact_points": len(pts), "sum_int_weight": sum(p["int_weight"] for p in pts),
                 "com_y": vec(cube.get_center_of_mass_transform().translation)[1],
                 "contact_force": vec(cube.get_contact_force_world()),
                 "moment_of_inertia_local_real6": vec(cube.get_rigid_moment_of_inertia_local()),
                 "contact_points": pts, "logs": take_logs()}
    sdp.destroy_scene(scene)
out["boundary_element_type_resting_step1"] = bet

# --- sliding -----------------------------------------------------------------------------------------
def settle(scene, cube, dt, n):
    for _ in range(n):
        scene.step(dt)
    return {"com": vec(cube.get_center_of_mass_transform().translation),
            "linear_velocity": vec(cube.get_linear_velocity()), "contact_force": vec(cube.get_contact_force_world())}


def summary(rows, dt):
    vx = [r["linear_velocity"][0] for r in rows]
    # average deceleration while 0.2 < vx < 1.8 (least-squares slope of vx(t))
    sel = [(r["t"], r["linear_velocity"][0]) for r in rows if 0.2 < r["linear_velocity"][0] < 1.8]
    slope = None
    if len(sel) >= 2:
        ts, vs = np.array([s[0] for s in sel]), np.array([s[1] for s in sel])
        slope = float(np.polyfit(ts, vs, 1)[0])
    stop = next((r["t"] for r in rows if r["linear_velocity"][0] < 1e-3), None)
    tilt = max(abs(2 * math.asin(min(1.0, math.sqrt(sum(c * c for c in r["rotation_xyzw"][:3]))))) for r in rows)
    return {"vx_fit_slope_between_0.2_and_1.8": slope, "first_time_vx_below_1e-3": stop,
            "max_newton_iters": max(r["stats"]["max_non_linear_iters"] for r in rows),
            "num_steps_not_converged": sum(r["stats"]["convergence_status"] != "ConvergenceStatus.CONVERGED"
                                           for r in rows),
            "final_x": rows[-1]["com"][0], "final_vx": vx[-1], "max_tilt_angle_rad": tilt,
            "min_com_y": min(r["com"][1] for r in rows), "max_com_y": max(r["com"][1] for r in rows)}


sliding = {}
for mesh, dt, solver in [("box12", 0.01, "default"), ("box12", 0.001, "default"), ("box12", 0.01, "tight"),
                         ("box12", 0.001, "tight"), ("box12", 1.0 / 60.0, "default"), ("box12", 1.0 / 60.0, "tight"),
                         ("sub4", 0.01, "default"), ("sub4", 0.01, "tight")]:
    scene, ground, cube, hs = make_scene(mesh=mesh, solver=solver)
    n = int(round(1.0 / dt))
    st = settle(scene, cube, dt, n)
    cube.set_velocity(sdp.Real3(2.0, 0.0, 0.0), sdp.Real3(0.0, 0.0, 0.0))
    rows = []
    for i in range(n):
        scene.step(dt)
        rows.append(row(scene, cube, (i + 1) * dt))
    every = max(1, n // 100)
    sliding[f"{mesh},dt={dt},{solver}"] = {"mesh": mesh, "solver": solver, "dt": dt, "settle_steps": n, "state_after_settle": st, "steps_after_kick": n,
                           "summary": summary(rows, dt),
                           "rows_every": every, "rows": rows[every - 1::every] if every > 1 else rows,
                           "logs": take_logs()}
    sdp.destroy_scene(scene)
out["sliding_v0_2"] = sliding

# --- pushed ----------------------------------------------------------------------------------------------
pushed = {}
for c, dt, solver in [(c, dt, solver) for c in [1.3, 0.7] for dt in [0.01, 0.001] for solver in SOLVERS]:
    if True:
        scene, ground, cube, hs = make_scene(solver=solver)
        n = int(round(1.0 / dt))
        st = settle(scene, cube, dt, n)
        F = c * MU * M * G
        cube.set_external_forces_on_dofs(ints([0]), reals([F]))
        rows = []
        for i in range(n):
            scene.step(dt)
            rows.append(row(scene, cube, (i + 1) * dt))
        every = max(1, n // 100)
        sm = summary(rows, dt)
        pushed[f"box12,c={c},dt={dt},{solver}"] = {
            "mesh": "box12", "solver": solver, "factor_c": c, "force_x": F, "dt": dt, "settle_steps": n, "state_after_settle": st, "steps_pushed": n,
            "vx_after_1s": rows[-1]["linear_velocity"][0], "x_after_1s": rows[-1]["com"][0],
            "x_at_push_start": st["com"][0],
            "vx_expected_coulomb_(c-1)*mu*g*t": max(0.0, (c - 1.0) * MU * G * 1.0),
            "max_tilt_angle_rad": sm["max_tilt_angle_rad"], "max_newton_iters": sm["max_newton_iters"],
            "num_steps_not_converged": sm["num_steps_not_converged"],
            "rows_every": every, "rows": rows[every - 1::every] if every > 1 else rows, "logs": take_logs()}
        sdp.destroy_scene(scene)
out["pushed"] = pushed
emit(out)
