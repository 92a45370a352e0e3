"""Item 5: static actors moved by set_root_transform every step -> implicit velocity getters.

Each scenario: create a static actor (is_static=True), then for step i = 1..N: set_root_transform(T(t_i)) with
t_i = i*dt, scene.step(dt), read get_linear_velocity()/get_angular_velocity() (also read right after the
set_root_transform, before the step).  Default gravity (irrelevant for statics), default solver params, dt = 0.01.
"""

from __future__ import annotations

import math

from _common import (ANISO_HALF, CUBE_HALF, box_mesh, emit, init, mesh_shape, quat_axis_angle, take_logs, tf,
                     try_call, vec)

sdp = init()
DT = 0.01
N = 5
cube_v, cube_t = box_mesh(CUBE_HALF)
cube = mesh_shape(cube_v, cube_t)
off_v, off_t = box_mesh(ANISO_HALF, offset=(0.5, -0.2, 0.1))
offbox = mesh_shape(off_v, off_t)


def pose(t, lin_rate, ang_rate_z, t0):
    q = quat_axis_angle((0.0, 0.0, 1.0), ang_rate_z * t) if ang_rate_z else [0.0, 0.0, 0.0, 1.0]
    p = [t0[k] + lin_rate[k] * t for k in range(3)]
    return sdp.TransformRT(sdp.Quaternion(*q), sdp.Real3(*p))


def scenario(shape, lin_rate, ang_rate_z, t0=(0.0, 0.0, 0.0), zero_vel_after_set=False, skip_set_at=None):
    scene = sdp.create_scene("static")
    a = scene.create_rigid_actor(shape=shape, is_static=True, world_from_local=pose(0.0, lin_rate, ang_rate_z, t0))
    rows = []
    take_logs()
    for i in range(1, N + 1):
        row = {"step": i}
        if i != skip_set_at:
            a.set_root_transform(pose(i * DT, lin_rate, ang_rate_z, t0))
            if zero_vel_after_set:
                a.set_velocity(sdp.Real3(0.0, 0.0, 0.0), sdp.Real3(0.0, 0.0, 0.0))
        row["before_step_linear_velocity"] = vec(a.get_linear_velocity())
        row["before_step_angular_velocity"] = vec(a.get_angular_velocity())
        scene.step(DT)
        row["linear_velocity"] = vec(a.get_linear_velocity())
        row["angular_velocity"] = vec(a.get_angular_velocity())
        row["root"] = tf(a.get_root_transform())
        rows.append(row)
    res = {"rows": rows, "logs": take_logs(), "aabb_local": None}
    try:
        bb = a.get_aabb_local()
        res["aabb_local"] = {"min": vec(bb.min), "max": vec(bb.max)} if hasattr(bb, "min") else str(bb)
    except Exception as e:  # noqa: BLE001
        res["aabb_local"] = f"error: {e}"
    res["get_mass"] = try_call(a.get_mass)
    res["get_center_of_mass_transform"] = try_call(a.get_center_of_mass_transform)
    res["get_rigid_center_of_mass_local"] = try_call(a.get_rigid_center_of_mass_local)
    res["get_num_dofs"] = a.get_num_dofs()
    sdp.destroy_scene(scene)
    return res


out = {"dt": DT, "steps": N, "scenarios": {
    "cube_translate_v(0.5,0,0)": {"shape": "cube 0.4 m centred", "lin_rate": [0.5, 0.0, 0.0], "ang_rate_z": 0.0,
                                  **scenario(cube, (0.5, 0.0, 0.0), 0.0)},
    "cube_rotate_z_0.3rad_per_s": {"shape": "cube 0.4 m centred", "lin_rate": [0.0, 0.0, 0.0], "ang_rate_z": 0.3,
                                   **scenario(cube, (0.0, 0.0, 0.0), 0.3)},
    "cube_translate_and_rotate": {"shape": "cube 0.4 m centred", "lin_rate": [0.5, -0.2, 0.1], "ang_rate_z": 0.3,
                                  "t0": [1.0, 2.0, 3.0], **scenario(cube, (0.5, -0.2, 0.1), 0.3, t0=(1.0, 2.0, 3.0))},
    "offcentre_box_rotate_z_0.3rad_per_s": {
        "shape": "box_mesh((0.1,0.2,0.3), offset=(0.5,-0.2,0.1)) (mesh centre off the local origin)",
        "lin_rate": [0.0, 0.0, 0.0], "ang_rate_z": 0.3, **scenario(offbox, (0.0, 0.0, 0.0), 0.3)},
    "cube_translate_then_set_velocity_zero": {"shape": "cube", "lin_rate": [0.5, 0.0, 0.0], "ang_rate_z": 0.0,
                                              "note": "set_velocity(0,0) right after each set_root_transform",
                                              **scenario(cube, (0.5, 0.0, 0.0), 0.0, zero_vel_after_set=True)},
    "cube_translate_skip_set_at_step_3": {"shape": "cube", "lin_rate": [0.5, 0.0, 0.0], "ang_rate_z": 0.0,
                                          "note": "no set_root_transform before step 3 (pose held)",
                                          **scenario(cube, (0.5, 0.0, 0.0), 0.0, skip_set_at=3)},
}}
# implicit sphere as static actor, translated
sph = sdp.create_sphere_shape(sdp.Real3(0.0, 0.0, 0.0), 0.1)
out["scenarios"]["implicit_sphere_translate_v(0.5,0,0)"] = {
    "shape": "create_sphere_shape((0,0,0), 0.1)", "lin_rate": [0.5, 0.0, 0.0], "ang_rate_z": 0.0,
    **scenario(sph, (0.5, 0.0, 0.0), 0.0)}
emit(out)
