"""Item 7: error behaviour and messages (exception types / log messages), or acceptance.

Unless stated: the 0.4 m cube (box_mesh((0.2,0.2,0.2))), density 1000, default gravity, BE, identity pose.
"""

from __future__ import annotations

import math

from _common import CUBE_HALF, box_mesh, emit, init, mesh_shape, take_logs, tf, try_call, vec

sdp = init()
cv, ct = box_mesh(CUBE_HALF)
cube = mesh_shape(cv, ct)
flat = lambda v: [c for p in v for c in p]  # noqa: E731
flati = lambda t: [i for tri in t for i in tri]  # noqa: E731


def snapshot(scene, a) -> dict:
    return {"com": vec(a.get_center_of_mass_transform().translation),
            "linear_velocity": vec(a.get_linear_velocity()),
            "total_simulation_time": scene.get_total_simulation_time(),
            "last_time_step": scene.get_last_time_step()}


out: dict = {}

# --- step() arguments ---------------------------------------------------------------------------
steps = {}
for label, dt in [("0.01_first", 0.01), ("-0.01", -0.01), ("nan", math.nan), ("0", 0.0), ("inf", math.inf),
                  ("0.01_after", 0.01)]:
    scene = sdp.create_scene("step_args") if label == "0.01_first" else scene  # noqa: F821 - reuse one scene
    if label == "0.01_first":
        a = scene.create_rigid_actor(shape=cube, density=1000.0)
        calls = {"pre": 0, "post": 0}
        seen_dt = []

        def _pre(info):
            calls["pre"] += 1
            seen_dt.append(info.time_step_sec)

        def _post(info):
            calls["post"] += 1

        h_pre = scene.register_pre_step_callback("pre", _pre)
        h_post = scene.register_post_step_callback("post", _post)
        take_logs()
    before = dict(calls)
    seen_dt.clear()
    r = try_call(scene.step, dt)
    r["pre_callback_time_step_sec"] = list(seen_dt)
    r["state_after"] = snapshot(scene, a)
    r["callbacks_called"] = {k: calls[k] - before[k] for k in calls}
    steps[label] = r
out["step_arguments"] = {"sequence": "one scene, calls in this order, cube free fall", "calls": steps}
sdp.destroy_scene(scene)

# --- shapes ------------------------------------------------------------------------------------------
shapes = {}


def shape_case(name, coords, conn, dynamic=True):
    scene = sdp.create_scene("shape_case")  # one scene per case: the actors must not touch each other
    take_logs()
    try:
        sh = sdp.create_tri_mesh_shape(coords, conn)
        res = {"create_tri_mesh_shape": {"raised": False, "logs": take_logs()}}
    except Exception as e:  # noqa: BLE001
        shapes[name] = {"create_tri_mesh_shape": {"raised": True, "exception_type": type(e).__name__,
                                                  "message": str(e), "logs": take_logs()}}
        return
    if dynamic:
        try:
            a = scene.create_rigid_actor(shape=sh, density=1000.0)
            res["create_rigid_actor_dynamic"] = {
                "raised": False, "logs": take_logs(), "mass": a.get_mass(),
                "center_of_mass_local": vec(a.get_rigid_center_of_mass_local()),
                "moment_of_inertia_local_real6": vec(a.get_rigid_moment_of_inertia_local())}
            try:
                scene.step(1.0 / 60.0)
                res["after_one_step"] = {"com": vec(a.get_center_of_mass_transform().translation),
                                         "linear_velocity": vec(a.get_linear_velocity()),
                                         "status": str(scene.get_solver_stats().convergence_status),
                                         "logs": take_logs()}
            except Exception as e:  # noqa: BLE001
                res["after_one_step"] = {"raised": True, "message": str(e), "logs": take_logs()}
        except Exception as e:  # noqa: BLE001
            res["create_rigid_actor_dynamic"] = {"raised": True, "exception_type": type(e).__name__,
                                                 "message": str(e), "logs": take_logs()}
        sdp.destroy_scene(scene)
        scene = sdp.create_scene("shape_case_static")
        res["create_rigid_actor_static"] = try_call(scene.create_rigid_actor, shape=sh, is_static=True)
    sdp.destroy_scene(scene)
    shapes[name] = res


shape_case("closed_cube_reference", flat(cv), flati(ct))
shape_case("open_mesh_top_face_removed(triangles 6,7 dropped)", flat(cv), flati([t for i, t in enumerate(ct)
                                                                                   if i not in (6, 7)]))
shape_case("inverted_mesh_all_triangles_reversed", flat(cv), flati([t[::-1] for t in ct]))
shape_case("one_triangle_flipped(tri 0 reversed)", flat(cv), flati([t[::-1] if i == 0 else t for i, t in
                                                                    enumerate(ct)]))
shape_case("index_out_of_range(8)", flat(cv), flati(ct[:-1] + [[1, 7, 8]]))
shape_case("negative_index(-1)", flat(cv), flati(ct[:-1] + [[1, 7, -1]]))
shape_case("coords_len_not_multiple_of_3", flat(cv)[:-1], flati(ct))
shape_case("connectivity_len_not_multiple_of_3", flat(cv), flati(ct)[:-1])
shape_case("empty_mesh", [], [])
shape_case("degenerate_triangle(0,0,1) appended", flat(cv), flati(ct + [[0, 0, 1]]))
shape_case("nan_vertex", [math.nan] + flat(cv)[1:], flati(ct))
shape_case("unused_extra_vertex", flat(cv) + [5.0, 5.0, 5.0], flati(ct))
out["tri_mesh_shapes"] = shapes

# --- implicit shapes as dynamic actors ----------------------------------------------------------------
scene = sdp.create_scene("misc")
sph = sdp.create_sphere_shape(sdp.Real3(0.0, 0.0, 0.0), 0.1)
pl = sdp.create_plane_shape(sdp.Real3(0.0, 1.0, 0.0), 0.0)
out["implicit_shapes"] = {
    "dynamic_from_create_sphere_shape": try_call(scene.create_rigid_actor, shape=sph, density=1000.0),
    "static_from_create_sphere_shape": try_call(scene.create_rigid_actor, shape=sph, is_static=True),
    "dynamic_from_create_plane_shape": try_call(scene.create_rigid_actor, shape=pl, density=1000.0),
    "static_from_create_plane_shape": try_call(scene.create_rigid_actor, shape=pl, is_static=True),
    "create_sphere_shape_radius_0": try_call(sdp.create_sphere_shape, sdp.Real3(0.0, 0.0, 0.0), 0.0),
    "create_sphere_shape_radius_-1": try_call(sdp.create_sphere_shape, sdp.Real3(0.0, 0.0, 0.0), -1.0),
    "create_plane_shape_zero_normal": try_call(sdp.create_plane_shape, sdp.Real3(0.0, 0.0, 0.0), 0.0),
    "no_shape_dynamic": try_call(scene.create_rigid_actor, density=1000.0),
    "no_shape_static": try_call(scene.create_rigid_actor, is_static=True),
}

# --- mass / density values ---------------------------------------------------------------------------
md = {}
for label, kw in [("mass_0", {"mass": 0.0}), ("mass_-1", {"mass": -1.0}), ("mass_nan", {"mass": math.nan}),
                  ("density_0", {"density": 0.0}), ("density_-1000", {"density": -1000.0}),
                  ("density_nan", {"density": math.nan}), ("mass_inf", {"mass": math.inf})]:
    take_logs()
    try:
        a = scene.create_rigid_actor(shape=cube, **kw)
        md[label] = {"raised": False, "logs": take_logs(), "mass": a.get_mass(), "density": a.get_density(),
                     "moment_of_inertia_local_real6": vec(a.get_rigid_moment_of_inertia_local())}
    except Exception as e:  # noqa: BLE001
        md[label] = {"raised": True, "exception_type": type(e).__name__, "message": str(e), "logs": take_logs()}
a = scene.create_rigid_actor(shape=cube, density=1000.0)
md["set_density_0"] = try_call(a.set_density, 0.0)
md["set_density_-1"] = try_call(a.set_density, -1.0)
md["set_inertia_properties_mass_0"] = try_call(a.set_inertia_properties, 0.0, sdp.Real3(0.0, 0.0, 0.0),
                                               sdp.Real6(1.0, 0.0, 0.0, 1.0, 0.0, 1.0))
md["mass_after_failed_calls"] = a.get_mass()
out["mass_density_values"] = md

# --- world_from_local values ----------------------------------------------------------------------------
wl = {}
for label, q, t in [
    ("nan_translation", (0.0, 0.0, 0.0, 1.0), (math.nan, 0.0, 0.0)),
    ("nan_rotation", (math.nan, 0.0, 0.0, 1.0), (0.0, 0.0, 0.0)),
    ("inf_translation", (0.0, 0.0, 0.0, 1.0), (math.inf, 0.0, 0.0)),
    ("non_unit_quaternion_(0,0,0,2)", (0.0, 0.0, 0.0, 2.0), (0.0, 0.0, 0.0)),
    ("non_unit_quaternion_(0,0,1,1)", (0.0, 0.0, 1.0, 1.0), (0.0, 0.0, 0.0)),
    ("zero_quaternion", (0.0, 0.0, 0.0, 0.0), (0.0, 0.0, 0.0)),
]:
    take_logs()
    T = sdp.TransformRT(sdp.Quaternion(*q), sdp.Real3(*t))
    entry = {"quaternion_xyzw": list(q), "translation": list(t)}
    for kind, kw in [("dynamic", {"density": 1000.0}), ("static", {"is_static": True})]:
        sc = sdp.create_scene("wfl")  # alone in its scene, default gravity, BE
        try:
            a = sc.create_rigid_actor(shape=cube, world_from_local=T, **kw)
            entry[kind] = {"raised": False, "logs": take_logs(), "root": tf(a.get_root_transform())}
            entry[kind]["set_root_transform_same"] = try_call(a.set_root_transform, T)
            step = try_call(sc.step, 1.0 / 60.0)
            step["root_after_step"] = tf(a.get_root_transform())
            if kind == "dynamic":
                step["com_after_step"] = vec(a.get_center_of_mass_transform().translation)
                step["linear_velocity_after_step"] = vec(a.get_linear_velocity())
                step["angular_velocity_after_step"] = vec(a.get_angular_velocity())
                step["status"] = str(sc.get_solver_stats().convergence_status)
            entry[kind]["one_step_1/60"] = step
        except Exception as e:  # noqa: BLE001
            entry[kind] = {"raised": True, "exception_type": type(e).__name__, "message": str(e),
                           "logs": take_logs()}
        sdp.destroy_scene(sc)
    wl[label] = entry
out["world_from_local_values"] = wl

# --- velocities ---------------------------------------------------------------------------------------------
a = scene.create_rigid_actor(shape=cube, density=1000.0)
out["velocity_values"] = {
    "set_velocity_nan": try_call(a.set_velocity, sdp.Real3(math.nan, 0.0, 0.0), sdp.Real3(0.0, 0.0, 0.0)),
    "velocity_after": vec(a.get_linear_velocity()),
    "create_with_nan_linear_velocity": try_call(scene.create_rigid_actor, shape=cube, density=1000.0,
                                                linear_velocity=sdp.Real3(math.nan, 0.0, 0.0)),
}
emit(out)
