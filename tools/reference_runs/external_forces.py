"""Item 6: external forces/torques on the 6 rigid DoFs (world frame), no gravity.

Bodies: the 0.4 m cube (64 kg, I = 1.70667 * 1) and the centred anisotropic box
(box_mesh((0.1,0.2,0.3)), 48 kg, I = diag(2.08,1.6,0.8)), density 1000, identity pose, zero initial velocity.
scene.set_gravity((0,0,0)); BE; dt = 0.01; set_external_forces_on_dofs([0..5], F) once before step 1;
5 steps; then clear_external_forces() and 3 more steps.
"""

from __future__ import annotations

from _common import (ANISO_HALF, CUBE_HALF, box_mesh, emit, init, ints, mesh_shape, reals, solver_params,
                     solver_stats, take_logs, tf, try_call, vec)

sdp = init()
shapes = {"cube": mesh_shape(*box_mesh(CUBE_HALF)), "aniso": mesh_shape(*box_mesh(ANISO_HALF))}
DT = 0.01
F = [10.0, 20.0, -5.0, 0.5, -1.0, 2.0]
IDX = [0, 1, 2, 3, 4, 5]


def ext(a):
    o = reals([0.0] * a.get_num_dofs())
    a.get_external_forces(o)
    return [float(x) for x in o]


def run(body, tight=False, method="BACKWARD_EULER"):
    scene = sdp.create_scene("ext")
    scene.set_gravity(sdp.Real3(0.0, 0.0, 0.0))
    nl = {"abs_tol": 1e-12, "rel_tol": 1e-12, "max_iter": 100} if tight else {}
    scene.set_solver_params(solver_params(getattr(sdp.IntegrationMethod, method), **nl))
    a = scene.create_rigid_actor(shape=shapes[body], density=1000.0)
    take_logs()
    a.set_external_forces_on_dofs(ints(IDX), reals(F))
    r = {"body": body, "method": method, "non_linear_solver_overrides": nl, "forces": F,
         "external_forces_after_set": ext(a), "steps": []}
    for i in range(8):
        if i == 5:
            a.clear_external_forces()
            r["external_forces_after_clear"] = ext(a)
        scene.step(DT)
        r["steps"].append({"step": i + 1, "forces_active": i < 5, "root": tf(a.get_root_transform()),
                           "com": vec(a.get_center_of_mass_transform().translation),
                           "linear_velocity": vec(a.get_linear_velocity()),
                           "angular_velocity": vec(a.get_angular_velocity()),
                           "external_forces_after_step": ext(a), "stats": solver_stats(scene)})
    r["logs"] = take_logs()
    sdp.destroy_scene(scene)
    return r


out = {"dt": DT, "dof_indices": IDX, "force_values": F, "runs": {
    "cube_BE": run("cube"), "cube_BE(tight)": run("cube", tight=True),
    "aniso_BE": run("aniso"), "aniso_BE(tight)": run("aniso", tight=True),
}}

# replacement semantics / argument errors
scene = sdp.create_scene("ext_sem")
a = scene.create_rigid_actor(shape=shapes["cube"], density=1000.0)
sem = {}
a.set_external_forces_on_dofs(ints([0]), reals([1.0]))
sem["after_set_dof0_1"] = ext(a)
a.set_external_forces_on_dofs(ints([4]), reals([2.0]))
sem["after_then_set_dof4_2"] = ext(a)
a.set_external_forces_on_dofs(ints([]), reals([]))
sem["after_empty_set"] = ext(a)
sem["duplicate_indices"] = try_call(a.set_external_forces_on_dofs, ints([1, 1]),
                                    reals([1.0, 2.0]))
sem["index_out_of_range_6"] = try_call(a.set_external_forces_on_dofs, ints([6]), reals([1.0]))
sem["length_mismatch"] = try_call(a.set_external_forces_on_dofs, ints([0, 1]), reals([1.0]))
sem["unsorted_indices_[2,0]"] = try_call(a.set_external_forces_on_dofs, ints([2, 0]),
                                         reals([3.0, 1.0]))
sem["after_unsorted_[2,0]_values_[3,1]"] = ext(a)
s = scene.create_rigid_actor(shape=shapes["cube"], is_static=True)
sem["static_actor_set_external_forces"] = try_call(s.set_external_forces_on_dofs, ints([0]),
                                                   reals([1.0]))
out["semantics"] = sem
emit(out)
