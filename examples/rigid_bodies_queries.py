"""The reference's rigid-bodies example scene with per-actor queries, bounding boxes and island sleeping.

Runs unchanged on the released engine: replace the import below by ``import superdex.physics as mochi`` (the
only difference). A sphere (from a mesh file, SPHERE collider) and a cube (a triangle mesh built here, BOX
collider) fall 1.2 m onto a static ground plane at y = -1 and come to rest; every half second it prints their
heights, the contact force each gets from the ground, the cube's world AABB and its active SDF samples.

    python examples/rigid_bodies_queries.py
"""

from pathlib import Path

import numpy as np

import superdex_gym.sim as mochi

TIME_STEP = 1.0 / 60.0
NUM_STEPS = 120
SPHERE_FILE = Path(__file__).resolve().parents[1] / "sim" / "assets" / "sphere" / "icosphere_3subdiv.1.mochi.json"


def cube_shape(half: float):
    """A cube as a triangle mesh: 8 corners, 12 counter-clockwise (outward) triangles."""
    corners = [[half * (1 if (i >> k) & 1 else -1) for k in range(3)] for i in range(8)]
    triangles = [[0, 2, 3], [0, 3, 1], [4, 5, 7], [4, 7, 6], [0, 1, 5], [0, 5, 4],
                 [2, 6, 7], [2, 7, 3], [0, 4, 6], [0, 6, 2], [1, 3, 7], [1, 7, 5]]
    return mochi.create_tri_mesh_shape(coordinates=np.array(corners, dtype=np.float32).ravel(),
                                       connectivity=np.array(triangles, dtype=np.int32).ravel())


def main(num_steps: int = NUM_STEPS, verbose: bool = True) -> dict:
    mochi.initialize(num_worker_threads=0)
    scene = mochi.create_scene("Rigid Bodies Scene")
    scene.set_gravity([0, -9.8, 0])

    ground = scene.create_rigid_actor(name="ground", shape=mochi.create_plane_shape(normal=[0, 1, 0], distance=-1.0),
                                      is_static=True)
    sphere = scene.create_rigid_actor(
        name="sphere",
        shape=mochi.load_shape_from_file(file_path=str(SPHERE_FILE), bake_scale=[0.2, 0.2, 0.2]),
        density=1000.0,
        world_from_local=mochi.TransformRT(translation=[-0.5, 0.2, 0]),
        collider_type=mochi.ColliderType.SPHERE,
    )
    cube = scene.create_rigid_actor(name="cube", shape=cube_shape(0.2), density=1000.0,
                                    world_from_local=mochi.TransformRT(translation=[0.5, 0.2, 0]),
                                    collider_type=mochi.ColliderType.BOX)

    # Per-actor queries: registered before stepping, results after each step.
    queries = [sphere.register_query(mochi.QueryType.TOTAL_CONTACT_FORCE),
               cube.register_query(mochi.QueryType.TOTAL_CONTACT_FORCE),
               cube.register_query(mochi.QueryType.SDF_DISTANCES)]

    # Island sleeping (experimental): a resting island stops being solved until something wakes it.
    sleep = mochi.experimental.SleepParams()
    sleep.can_sleep = True
    mochi.experimental.set_sleep_params(scene, sleep)

    for step in range(1, num_steps + 1):
        scene.step(TIME_STEP)
        if verbose and step % 30 == 0:
            box = cube.get_aabb_world()
            print(f"t = {step * TIME_STEP:4.2f} s  sphere y {sphere.get_root_transform().translation[1]:+.4f}  "
                  f"cube y {cube.get_root_transform().translation[1]:+.4f}  "
                  f"ground force on sphere {sphere.get_contact_force_from_actor_world(ground).tolist()[1]:7.1f} N, "
                  f"on cube {cube.get_contact_force_from_actor_world(ground).tolist()[1]:7.1f} N  "
                  f"cube AABB y [{box.min.tolist()[1]:+.4f}, {box.max.tolist()[1]:+.4f}]  "
                  f"cube SDF samples {len(cube.get_sdf_distances().distances)}  "
                  f"cube status {cube.get_convergence_status().name}")

    result = {
        "sphere_weight": sphere.get_mass() * 9.8,
        "cube_weight": cube.get_mass() * 9.8,
        "sphere_force": sphere.get_contact_force_from_actor_world(ground).tolist(),
        "cube_force": cube.get_contact_force_world().tolist(),
        "cube_aabb": [cube.get_aabb_world().min.tolist(), cube.get_aabb_world().max.tolist()],
        "cube_sdf_distances": list(cube.get_sdf_distances().distances),
        "sphere_y": float(sphere.get_root_transform().translation[1]),
        "cube_y": float(cube.get_root_transform().translation[1]),
    }
    actors = [(sphere, queries[0]), (cube, queries[1]), (cube, queries[2])]
    for actor, handle in actors:
        actor.cancel_query(handle)
    for actor in (cube, sphere, ground):
        scene.destroy_actor(actor)
    mochi.destroy_scene(scene)
    mochi.shutdown()
    return result


if __name__ == "__main__":
    main()
