"""Item 4: linear/angular velocity at creation, set_velocity mid-run, set_root_transform and the BDF2 history.

Body: the 0.4 m cube (box_mesh((0.2,0.2,0.2)), density 1000 -> 64 kg), default gravity unless stated,
world_from_local translation (0,5,0), dt = 1/60.
"""

from __future__ import annotations

from _common import (ANISO_HALF, CUBE_HALF, box_mesh, emit, init, ints, mesh_shape, quat_axis_angle, reals,
                     solver_params, solver_stats, take_logs, tf, try_call, vec)

sdp = init()
cube = mesh_shape(*box_mesh(CUBE_HALF))
aniso = mesh_shape(*box_mesh(ANISO_HALF))
DT = 1.0 / 60.0
Y0 = 5.0


def state(a) -> dict:
    return {"com": vec(a.get_center_of_mass_transform().translation),
            "root": tf(a.get_root_transform()),
            "linear_velocity": vec(a.get_linear_velocity()),
            "angular_velocity": vec(a.get_angular_velocity())}


def dofs(a) -> list[float]:
    out = reals([0.0] * a.get_num_dofs())
    a.get_dof_values(ints([]), out)
    return [float(x) for x in out]


out: dict = {"dt": DT}

# --- getters right after creation -----------------------------------------------------------------
scene = sdp.create_scene("creation")
a = scene.create_rigid_actor(shape=cube, density=1000.0,
                             world_from_local=sdp.TransformRT(translation=sdp.Real3(0.0, Y0, 0.0)),
                             linear_velocity=sdp.Real3(1.0, 2.0, 3.0), angular_velocity=sdp.Real3(0.1, 0.2, 0.3))
rot = quat_axis_angle((0.0, 0.0, 1.0), 0.5)
b = scene.create_rigid_actor(shape=aniso, density=1000.0,
                             world_from_local=sdp.TransformRT(sdp.Quaternion(*rot), sdp.Real3(1.0, 2.0, 3.0)))
out["creation"] = {
    "cube_with_lin(1,2,3)_ang(0.1,0.2,0.3)": {**state(a), "dofs": dofs(a)},
    "aniso_rotated_0.5rad_about_z_at_(1,2,3)_no_velocity": {**state(b), "dofs": dofs(b),
                                                            "rotation_vector_expected": [0.0, 0.0, 0.5]},
    "logs": take_logs(),
}
# one BE step with default gravity from that initial state
scene.step(DT)
out["creation"]["cube_after_1_BE_step"] = state(a)
sdp.destroy_scene(scene)

# --- set_velocity mid run (BE, gravity) -------------------------------------------------------------
scene = sdp.create_scene("set_velocity")
a = scene.create_rigid_actor(shape=cube, density=1000.0,
                             world_from_local=sdp.TransformRT(translation=sdp.Real3(0.0, Y0, 0.0)))
traj = []
for i in range(6):
    if i == 3:
        before = state(a)
        a.set_velocity(sdp.Real3(1.0, 0.0, 0.0), sdp.Real3(0.0, 0.0, 0.5))
        out["set_velocity_mid_run"] = {"scenario": "BE, gravity, set_velocity((1,0,0),(0,0,0.5)) after step 3",
                                       "state_before_set": before, "state_right_after_set": state(a)}
    scene.step(DT)
    traj.append(state(a))
out["set_velocity_mid_run"]["trajectory_steps_1_to_6"] = traj
sdp.destroy_scene(scene)


# --- BDF2 history reset --------------------------------------------------------------------------
def bdf2_run(action: str, method="BDF2", n=8, at=3):
    scene = sdp.create_scene("bdf2")
    scene.set_solver_params(solver_params(getattr(sdp.IntegrationMethod, method)))
    a = scene.create_rigid_actor(shape=cube, density=1000.0,
                                 world_from_local=sdp.TransformRT(translation=sdp.Real3(0.0, Y0, 0.0)))
    ys, vs = [], []
    info = {}
    for i in range(n):
        if i == at:
            t = a.get_root_transform()
            if action == "set_root_transform_same_pose":
                a.set_root_transform(t)
            elif action == "set_root_transform_plus_1y":
                a.set_root_transform(sdp.TransformRT(t.rotation, sdp.Real3(*[t.translation[0], t.translation[1] + 1.0,
                                                                           t.translation[2]])))
            elif action == "set_velocity_same_velocity":
                a.set_velocity(a.get_linear_velocity(), a.get_angular_velocity())
            elif action == "set_center_of_mass_transform_same":
                a.set_center_of_mass_transform(a.get_center_of_mass_transform())
            info["state_right_after_action"] = state(a)
        scene.step(DT)
        ys.append(vec(a.get_center_of_mass_transform().translation)[1])
        vs.append(vec(a.get_linear_velocity())[1])
    sdp.destroy_scene(scene)
    return {"method": method, "action": action, "action_before_step": at + 1, "com_y": ys, "vel_y": vs, **info,
            "logs": take_logs()}


out["multistep_reset"] = {
    "description": "free fall y0=5, dt=1/60, 8 steps; the action happens after step 3 (before step 4)",
    "BE_baseline": bdf2_run("none", method="BACKWARD_EULER"),
    "BDF2_baseline": bdf2_run("none"),
    "BDF2_set_root_transform_same_pose": bdf2_run("set_root_transform_same_pose"),
    "BDF2_set_root_transform_plus_1y": bdf2_run("set_root_transform_plus_1y"),
    "BDF2_set_velocity_same_velocity": bdf2_run("set_velocity_same_velocity"),
    "BDF2_set_center_of_mass_transform_same": bdf2_run("set_center_of_mass_transform_same"),
    "BDF3_baseline": bdf2_run("none", method="BDF3"),
    "BDF3_set_root_transform_same_pose": bdf2_run("set_root_transform_same_pose", method="BDF3"),
}

# --- set_root_transform keeps velocity of a dynamic actor; rotation of a spinning actor -------------
scene = sdp.create_scene("spin_teleport")
scene.set_gravity(sdp.Real3(0.0, 0.0, 0.0))
a = scene.create_rigid_actor(shape=aniso, density=1000.0, angular_velocity=sdp.Real3(0.0, 0.0, 3.0),
                             linear_velocity=sdp.Real3(1.0, 0.0, 0.0))
scene.step(0.1)
s1 = state(a)
a.set_root_transform(sdp.TransformRT(translation=sdp.Real3(0.0, 0.0, 0.0)))
s_after = state(a)
scene.step(0.1)
s2 = state(a)
out["dynamic_set_root_transform_keeps_velocity"] = {
    "scenario": "aniso box, no gravity, BE dt 0.1, lin (1,0,0), ang (0,0,3); after step 1 teleport to identity",
    "after_step_1": s1, "right_after_set_root_transform": s_after, "after_step_2": s2}
sdp.destroy_scene(scene)

# --- set_velocity with |omega| >= 1/dt (S-term initialisation limit) ------------------------------------
res = {}
for w in [5.0, 9.9, 10.0, 20.0]:
    scene = sdp.create_scene("big_omega")
    scene.set_gravity(sdp.Real3(0.0, 0.0, 0.0))
    scene.set_solver_params(solver_params(abs_tol=1e-12, rel_tol=1e-12, max_iter=100))
    a = scene.create_rigid_actor(shape=aniso, density=1000.0, angular_velocity=sdp.Real3(0.0, 0.0, w))
    take_logs()
    oz, rv = [], []
    for _ in range(3):
        scene.step(0.1)
        oz.append(vec(a.get_angular_velocity())[2])
        rv.append(vec(a.get_root_transform().rotation.to_rotation_vector())[2])
    res[str(w)] = {"omega_z": oz, "rotation_vector_z": rv, "stats_last": solver_stats(scene), "logs": take_logs()}
    sdp.destroy_scene(scene)
out["large_initial_omega_BE_dt0.1_tight"] = {
    "scenario": "aniso box, no gravity, BE dt 0.1, nl abs_tol=rel_tol=1e-12 max_iter=100, omega0=(0,0,w); 3 steps",
    "runs": res}

# --- static actors: set_velocity non-zero ------------------------------------------------------------
scene = sdp.create_scene("static")
s = scene.create_rigid_actor(shape=cube, is_static=True)
out["static_set_velocity_nonzero"] = try_call(s.set_velocity, sdp.Real3(1.0, 0.0, 0.0), sdp.Real3(0.0, 0.0, 0.0))
out["static_set_velocity_zero"] = try_call(s.set_velocity, sdp.Real3(0.0, 0.0, 0.0), sdp.Real3(0.0, 0.0, 0.0))
out["static_create_with_linear_velocity"] = try_call(
    scene.create_rigid_actor, shape=cube, is_static=True, linear_velocity=sdp.Real3(1.0, 0.0, 0.0))
out["static_num_dofs"] = s.get_num_dofs()
emit(out)
