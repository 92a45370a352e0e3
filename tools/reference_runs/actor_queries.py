"""Per-actor queries, bounding boxes, sleep parameters and helpers of the released engine (issue 18).

Documentation only: run by run_all.py (or alone, printing JSON) with the reference engine's venv.

* A resting stack of three 0.4 m cubes (64 kg each) on the plane y = 0, backward Euler, dt 1/60, 60 steps, the
  default solver: per-actor TOTAL_CONTACT_FORCE, the force from each other actor, the experimental batch sum.
* Which query types each kind of rigid actor supports, and the errors for the unsupported ones.
* Local and world AABBs of a rotated cube and a rotated 0.2 m icosphere, a plane and a sphere.
* SleepParams defaults and validation; what apply_improved_convergence_settings changes; the ground plane made by
  utils.scene_helpers.create_ground_plane; restore_state_from_scene between two identical scenes.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

from _common import box_mesh, init, ints, precision, reals, vec

sdp = init()
ex = sdp.experimental
from superdex.physics.utils import scene_helpers  # noqa: E402

DT = 1.0 / 60.0
H = 0.2
SPHERE_ASSET = Path(__file__).resolve().parents[2] / "sim" / "assets" / "sphere" / "icosphere_3subdiv.1.mochi.json"


def box_shape(h=H):
    v, t = box_mesh((h, h, h))
    return sdp.create_tri_mesh_shape(coordinates=reals([c for p in v for c in p]),
                                     connectivity=ints([i for tri in t for i in tri]))


def stack_scene(name="stack", n=3):
    scene = sdp.create_scene(name)
    ground = scene.create_rigid_actor(name="ground", shape=sdp.create_plane_shape(normal=[0, 1, 0], distance=0),
                                      is_static=True)
    shape = box_shape()
    cubes = [scene.create_rigid_actor(name=f"cube{i}", shape=shape, density=1000.0,
                                      world_from_local=sdp.TransformRT(translation=[0, H + 2 * H * i, 0]))
             for i in range(n)]
    return scene, ground, cubes


def error_of(fn) -> str | None:
    try:
        fn()
    except Exception as exc:  # the released engine raises sdp.Error
        return f"{type(exc).__name__}: {str(exc).split(': ', 1)[-1] if '.cpp' in str(exc) else exc}"
    return None


def stack_forces() -> dict:
    scene, ground, cubes = stack_scene()
    before = error_of(lambda: cubes[0].get_contact_force_world())
    handles = [c.register_query(sdp.QueryType.TOTAL_CONTACT_FORCE) for c in cubes]
    after_register = error_of(lambda: cubes[0].get_contact_force_world())
    for _ in range(60):
        scene.step(DT)
    actors = [ground] + cubes
    out = {
        "error_unregistered": before,
        "error_registered_before_step": after_register,
        "total": [vec(c.get_contact_force_world()) for c in cubes],
        "from": {c.get_name(): {a.get_name(): vec(c.get_contact_force_from_actor_world(a)) for a in actors}
                 for c in cubes},
        "com_y": [float(c.get_center_of_mass_transform().translation[1]) for c in cubes],
        "batch_cubes_ground": ex.get_contact_force_world_batch(cubes, [ground]),
        "batch_cubes_cubes": ex.get_contact_force_world_batch(cubes, cubes),
        "batch_first_second": ex.get_contact_force_world_batch(cubes[:1], cubes[1:2]),
        "batch_empty": ex.get_contact_force_world_batch([], [ground]),
        "error_from_none": error_of(lambda: cubes[0].get_contact_force_from_actor_world(None)),
    }
    cubes[0].cancel_query(handles[0])
    cubes[0].cancel_query(handles[0])  # cancelling twice has no effect
    scene.step(DT)
    out["error_after_cancel"] = error_of(lambda: cubes[0].get_contact_force_world())
    return out


def supported() -> dict:
    scene = sdp.create_scene("supported")
    shape = box_shape()
    actors = {
        "dynamic_mesh": scene.create_rigid_actor(name="dyn", shape=shape, density=1000.0),
        "dynamic_mesh_no_collider": scene.create_rigid_actor(name="nc", shape=shape, density=1000.0,
                                                             collider_type=sdp.ColliderType.NONE),
        "static_mesh": scene.create_rigid_actor(name="sm", shape=shape, is_static=True),
        "static_plane": scene.create_rigid_actor(name="pl", shape=sdp.create_plane_shape(normal=[0, 1, 0], distance=0),
                                                 is_static=True),
        "static_sphere": scene.create_rigid_actor(name="sp", shape=sdp.create_sphere_shape(center=[1, 0, 0], radius=0.5),
                                                  is_static=True),
    }
    types = [q for name, q in sdp.QueryType.__members__.items() if name != "COUNT"]
    return {key: {q.name: a.is_query_supported(q) for q in types} for key, a in actors.items()}


def aabbs() -> dict:
    scene = sdp.create_scene("aabb")
    rot = sdp.Quaternion.rotation_z(0.7) * sdp.Quaternion.rotation_x(0.4)
    sphere = sdp.load_shape_from_file(file_path=str(SPHERE_ASSET), bake_scale=[0.2, 0.2, 0.2])
    actors = {
        "cube": scene.create_rigid_actor(name="cube", shape=box_shape(), density=1000.0,
                                         world_from_local=sdp.TransformRT(rotation=sdp.Quaternion.rotation_y(0.5),
                                                                          translation=[0.1, 0.3, 0.0])),
        "icosphere": scene.create_rigid_actor(name="ico", shape=sphere, density=1000.0,
                                              collider_type=sdp.ColliderType.SPHERE,
                                              world_from_local=sdp.TransformRT(rotation=rot, translation=[3, 1, 0])),
        "plane": scene.create_rigid_actor(name="pl", shape=sdp.create_plane_shape(normal=[0, 1, 0], distance=0),
                                          is_static=True),
        "sphere": scene.create_rigid_actor(name="sp", shape=sdp.create_sphere_shape(center=[1, 0, 0], radius=0.5),
                                           is_static=True),
    }
    out = {}
    for key, a in actors.items():
        lo, wo = a.get_aabb_local(), a.get_aabb_world()
        mesh = a.get_mesh()
        out[key] = {"local": [vec(lo.min), vec(lo.max)], "world": [vec(wo.min), vec(wo.max)],
                    "world_center": vec(wo.get_center()), "world_size": vec(wo.get_size()),
                    "mesh": [mesh.nodes_per_element, mesh.get_num_nodes(), mesh.get_num_elements()],
                    "visual_mesh_empty": a.get_visual_mesh().is_empty(), "type": a.get_type().name,
                    "has_root_transform": a.has_root_transform()}
    return out


def sleep_params() -> dict:
    scene = sdp.create_scene("sleep")
    d = ex.get_sleep_params(scene)
    out = {"defaults": [d.can_sleep, d.min_steps_before_sleep, d.sleep_threshold], "errors": {}}
    for field, value in (("min_steps_before_sleep", 1), ("sleep_threshold", 0.0), ("sleep_threshold", 1.5)):
        p = ex.SleepParams()
        setattr(p, field, value)
        out["errors"][f"{field}={value}"] = error_of(lambda: ex.set_sleep_params(scene, p))
    p = ex.SleepParams()
    p.sleep_threshold = 1.0
    p.min_steps_before_sleep = 2
    out["accepted_bounds"] = error_of(lambda: ex.set_sleep_params(scene, p)) is None
    return out


def improved_convergence() -> dict:
    scene = sdp.create_scene("improved")
    ex.apply_improved_convergence_settings(scene)
    sp = scene.get_solver_params()
    return {"explicit_normals": sp.experimental_eval.explicit_normals,
            "implicit_normal_force_for_dissipation": sp.experimental_eval.implicit_normal_force_for_dissipation,
            "line_search_type": sp.non_linear_solver.line_search_type.name,
            "max_iter": sp.non_linear_solver.max_iter}


def helpers() -> dict:
    scene = sdp.create_scene("helpers")
    plane = scene_helpers.create_ground_plane(scene)
    scene.create_rigid_actor(name="box_a", shape=box_shape(), density=1000.0)
    scene.create_rigid_actor(name="box_b", shape=box_shape(), density=1000.0)
    return {"ground": [plane.get_name(), plane.get_contact_layer(), plane.get_collider_type().name, plane.is_static()],
            "find_one": scene_helpers.find_actor(scene, "box_a").get_name(),
            "find_many": error_of(lambda: scene_helpers.find_actor(scene, "box_*")),
            "find_none": error_of(lambda: scene_helpers.find_actor(scene, "nothing"))}


def restore_from_scene() -> dict:
    scene_a, _, cubes_a = stack_scene("A")
    scene_b, _, cubes_b = stack_scene("B")
    for _ in range(10):
        scene_a.step(DT)
    handle = scene_a.capture_state()
    ex.restore_state_from_scene(scene_b, scene_a, handle)
    scene_c, _, _ = stack_scene("C", n=2)
    return {"restored_equal": vec(cubes_b[2].get_root_transform().translation) ==
            vec(cubes_a[2].get_root_transform().translation),
            "time": [scene_a.get_total_simulation_time(), scene_b.get_total_simulation_time()],
            "error_other_composition": error_of(lambda: ex.restore_state_from_scene(scene_c, scene_a, handle))}


def main() -> None:
    out = {"build": precision(), "dt": DT, "stack": stack_forces(), "supported": supported(), "aabb": aabbs(),
           "sleep_params": sleep_params(), "improved_convergence": improved_convergence(), "helpers": helpers(),
           "restore_state_from_scene": restore_from_scene(), "gravity": 9.8, "cube_mass": 1000.0 * (2 * H) ** 3}
    json.dump(out, sys.stdout, indent=1, default=float)
    sys.stdout.write("\n")


if __name__ == "__main__":
    assert math.isfinite(DT)
    main()
