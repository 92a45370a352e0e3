"""The seed page's example scene (the engine alone): stepped for 2 s at 60 Hz, printing the final poses.

The scene is the reference's ``example_rigid_bodies.py``: a 0.2 m icosphere and a 0.4 m cube dropped above a
ground plane at y = -1 (the prefab table is left out). Run: ``python -m superdex_gym.demo``.
"""

from __future__ import annotations

import argparse

import superdex_gym.sim as mochi


def build_scene():
    scene = mochi.create_scene("Rigid Bodies Scene")
    scene.set_gravity([0, -9.8, 0])
    plane = mochi.create_plane_shape(normal=[0, 1, 0], distance=-1.0)
    sphere = mochi.load_shape_from_file(
        file_path=str(mochi.ASSETS_PATH / "sphere/icosphere_3subdiv.1.mochi.json"), bake_scale=[0.2, 0.2, 0.2]
    )
    half = 0.2
    corners = [[sx * half, sy * half, sz * half] for sz in (-1, 1) for sy in (-1, 1) for sx in (-1, 1)]
    cube = mochi.create_tri_mesh_shape(
        coordinates=[c for p in corners for c in p],
        connectivity=[0, 2, 3, 0, 3, 1, 4, 5, 7, 4, 7, 6, 0, 1, 5, 0, 5, 4, 2, 6, 7, 2, 7, 3, 0, 4, 6, 0, 6, 2,
                      1, 3, 7, 1, 7, 5],
    )
    scene.create_rigid_actor(name="sphere", shape=sphere, is_static=False, density=1000.0,
                             world_from_local=mochi.TransformRT(translation=[-0.5, 0.2, 0]),
                             collider_type=mochi.ColliderType.SPHERE)
    scene.create_rigid_actor(name="cube", shape=cube, is_static=False, density=1000.0,
                             world_from_local=mochi.TransformRT(translation=[0.5, 0.2, 0]),
                             collider_type=mochi.ColliderType.BOX)
    scene.create_rigid_actor(name="ground", shape=plane, is_static=True)
    return scene


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=2.0, help="simulated time [s]")
    parser.add_argument("--dt", type=float, default=1 / 60, help="time step [s]")
    args = parser.parse_args(argv)
    mochi.initialize(num_worker_threads=0)
    scene = build_scene()
    steps = int(round(args.seconds / args.dt))
    for _ in range(steps):
        scene.step(args.dt)
    print(f"after {steps} steps of {args.dt:.6g} s ({scene.get_solver_stats().convergence_status.name}):")
    for actor in scene.get_actors():
        t = actor.get_root_transform()
        print(f"  {actor.get_name():8s} translation {[round(v, 6) for v in t.translation]} "
              f"rotation (x,y,z,w) {[round(v, 6) for v in t.rotation]} "
              f"velocity {[round(float(v), 6) for v in actor.get_linear_velocity()]}")
    mochi.destroy_scene(scene)
    mochi.shutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
