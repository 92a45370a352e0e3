"""The Franka Panda (envs/robots/panda_model.py) as an articulated actor: held by single-DoF drives with its hand
low over the table, its first joint's drive target turned by 0.9 rad, it sweeps a cube across the table (a soft,
overdamped drive on that joint); the links collide with the cube (and not with each other where they are
adjacent). Writes a GIF of the collision boxes the engine simulates.

    python examples/panda_sweep.py [OUT.gif]
"""

import sys

import numpy as np

import superdex_gym.sim as mochi
from superdex_gym.envs.robots import panda_model as pm

TIME_STEP = 0.01
SWEEP_STEPS = 60
SWEEP_RAD = 0.9  # joint 1's drive target, this far from the start pose
SWEEP_STIFFNESS, SWEEP_DAMPING = 300.0, 60.0  # N m/rad, N m s/rad: an overdamped swing over ~0.5 s
ARM_DOF_JOINTS = (1, 2, 3, 4, 5, 6, 7, 9, 10)  # the joint of each DoF (0: the base weld, 8: the hand weld)
BASE = (-0.45, 0.0, 0.0)
# the hand pointing down, its origin 0.5 m in front of the base and 13.5 cm over the table (the finger tips ~3 cm)
POSE = np.array([0.0, 0.4547, 0.0, -2.3664, 0.0, 2.8195, 0.7854, 0.04, 0.04])


def build():
    """A table, a 5 cm cube on the hand's arc (0.5 m around the base, 0.4 rad along) and the Panda at the table's edge at POSE, its drives' targets
    POSE with joint 1 turned by SWEEP_RAD."""
    scene = mochi.create_scene("panda_sweep")
    scene.set_gravity([0.0, 0.0, -9.81])  # z up here (the engine's default gravity is -y, the reference's)
    scene.create_rigid_actor(name="table", shape=mochi.create_plane_shape(normal=[0, 0, 1], distance=0.0),
                             is_static=True)
    cube = scene.create_rigid_actor(name="cube", shape=mochi.create_box_mesh_shape([0.025, 0.025, 0.025]),
                                    density=500.0, world_from_local=mochi.TransformRT(translation=[0.01, 0.19, 0.025]))
    arm = scene.create_articulated_actor(pm.panda_actor_params(world_from_base=mochi.TransformRT(translation=BASE)))
    arm.set_articulated_pose_from_joints(POSE)
    target = POSE + np.eye(9)[0] * SWEEP_RAD
    for d, j in enumerate(ARM_DOF_JOINTS):
        stiffness, damping = (SWEEP_STIFFNESS, SWEEP_DAMPING) if d == 0 else (3e4, 30.0) if d < 7 else (1e3, 1.0)
        scene.create_articulated_single_dof_target_constraint(actor=arm, joint_index=j, dof_index=0,
                                                              target_value=float(target[d]), stiffness=stiffness,
                                                              damping=damping)
    return scene, arm, cube


def run(frames=None):
    """Step the sweep; returns the cube's start and end positions (and appends frames when a list is given)."""
    scene, arm, cube = build()
    start = cube.get_center_of_mass_transform().translation_array.copy()
    links = [scene.get_actor(h) for h in arm.get_nested_link_actors()]  # the reference returns handles
    view = _view(scene, [cube] + links) if frames is not None else None
    for k in range(SWEEP_STEPS):
        scene.step(TIME_STEP)
        if view is not None and k % 2 == 0:
            frames.append(view())
    return start, cube.get_center_of_mass_transform().translation_array.copy()


def _view(scene, actors):
    """A function that renders ``actors`` (the cube and the links' collision boxes) over the table as they are."""
    from superdex_gym.envs.rendering.renderer import Camera, CheckerPattern, Renderer, RenderMesh
    from superdex_gym.sim import lie

    renderer = Renderer(camera=Camera.orbit(target=(-0.1, 0.2, 0.15), distance_m=1.5, azimuth_deg=25,
                                            elevation_deg=30, width=320, height=320))
    table = RenderMesh(np.array([[-0.8, -0.6, 0], [0.5, -0.6, 0], [0.5, 0.7, 0], [-0.8, 0.7, 0.0]]),
                       np.array([[0, 1, 2], [0, 2, 3]]), pattern=CheckerPattern(cell_size_m=0.1))

    def frame():
        pos, quat = scene.get_actor_poses(actors)
        rot = lie.quat_to_matrix(quat[0])
        meshes = [table]
        for k, actor in enumerate(actors):
            shape = actor.get_shape()
            color = (0.85, 0.3, 0.2) if actor.get_name() == "cube" else (0.9, 0.9, 0.92)
            meshes.append(RenderMesh(shape.vertices @ rot[k].T + pos[0, k], shape.triangles, color=color))
        return renderer.render(meshes)[0]
    return frame


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else "panda_sweep.gif"
    frames = []
    start, end = run(frames)
    print(f"cube moved {np.linalg.norm(end[:2] - start[:2]) * 100:.1f} cm: {start.round(3)} -> {end.round(3)}")
    import imageio.v2 as imageio

    imageio.mimsave(out, frames, duration=0.04, loop=0)
    print(f"wrote {out} ({len(frames)} frames)")
