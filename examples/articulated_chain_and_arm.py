"""Articulated actors: a 3-link chain falling onto a table and a 5-joint arm holding a pose under drives.

Runs unchanged on the released engine: replace the import below by ``import superdex.physics as mochi`` (the only
difference). Every 0.1 s it prints the chain's joint angles, the contact force the table puts on the chain's
links, and how far the arm's joints are from their drive targets.

    python examples/articulated_chain_and_arm.py
"""

import numpy as np

import superdex_gym.sim as mochi

TIME_STEP = 0.01
NUM_STEPS = 60
ARM_TARGETS = [0.3, -0.5, 0.2, 0.8, 0.05]  # 4 revolute joints (rad), then the prismatic finger (m)


def box_shape(half):
    """A box as a triangle mesh: 8 corners, 12 counter-clockwise (outward) triangles."""
    corners = [[half[k] * (1 if (i >> k) & 1 else -1) for k in range(3)] for i in range(8)]
    triangles = [[0, 2, 3], [0, 3, 1], [4, 5, 7], [4, 7, 6], [0, 1, 5], [0, 5, 4],
                 [2, 6, 7], [2, 7, 3], [0, 4, 6], [0, 6, 2], [1, 3, 7], [1, 7, 5]]
    return mochi.create_tri_mesh_shape(np.array(corners, dtype=np.float64).ravel(),
                                       np.array(triangles, dtype=np.int32).ravel())


def chain_params(name, root, joint_types_and_axes, link_shape):
    """Links 0.4 m long hanging below each other; joint i sits at the bottom of link i - 1."""
    p = mochi.ArticulatedActorParams(name=name, world_from_root=mochi.TransformRT(translation=root))
    p.joints = [mochi.ArticulatedJointParams(type=t, axis=axis,
                                             parent_link_from_joint=mochi.TransformRT(translation=[0, -0.2 if i else 0, 0]))
                for i, (t, axis) in enumerate(joint_types_and_axes)]
    p.links = [mochi.ArticulatedLinkParams(parent_link=i - 1, shape=link_shape, density=1000.0,
                                           parent_joint_from_link=mochi.TransformRT(translation=[0, -0.2, 0]))
               for i in range(len(joint_types_and_axes))]
    return p


def main(num_steps: int = NUM_STEPS, verbose: bool = True) -> dict:
    mochi.initialize(num_worker_threads=0)
    scene = mochi.create_scene("Articulated Scene")
    params = scene.get_solver_params()
    params.non_linear_solver.max_iter = 100  # converged steps, so both engines solve the same equations
    params.non_linear_solver.abs_tol = params.non_linear_solver.rel_tol = 1e-12
    scene.set_solver_params(params)
    link_shape = box_shape([0.05, 0.2, 0.05])
    jt = mochi.ArticulatedJointType

    chain = scene.create_articulated_actor(chain_params("chain", [0, 2, 0], [(jt.REVOLUTE, [0, 0, 1])] * 3, link_shape))
    scene.create_rigid_actor(name="table", shape=box_shape([0.6, 0.2, 0.2]), is_static=True,
                             world_from_local=mochi.TransformRT(translation=[0.9, 1.2, 0]))
    chain.set_articulated_pose_from_joints(np.array([1.2, 0.0, 0.0]))

    arm_joints = [(jt.REVOLUTE, [0, 0, 1]), (jt.REVOLUTE, [1, 0, 0]), (jt.REVOLUTE, [0, 0, 1]), (jt.REVOLUTE, [1, 0, 0]),
                  (jt.PRISMATIC, [0, 1, 0])]
    arm = scene.create_articulated_actor(chain_params("arm", [-2, 1, 0], arm_joints, link_shape))
    for joint, target in enumerate(ARM_TARGETS):
        scene.create_articulated_single_dof_target_constraint(mochi.ArticulatedSingleDofTargetConstraintParams(
            actor=arm.get_handle(), joint_index=joint, dof_index=0, target_value=target, stiffness=2000.0,
            damping=20.0))

    chain_pose, arm_pose = np.zeros(chain.get_num_dofs()), np.zeros(arm.get_num_dofs())
    links = [scene.get_actor(h) for h in chain.get_nested_link_actors()]
    for link in links:  # the link actors answer contact queries as rigid actors do
        link.register_query(mochi.QueryType.TOTAL_CONTACT_FORCE)
    for step in range(num_steps):
        scene.step(TIME_STEP)
        chain.get_articulated_pose(chain_pose)
        arm.get_articulated_pose(arm_pose)
        if verbose and (step + 1) % 10 == 0:
            force = sum(np.asarray(link.get_contact_force_world(), dtype=np.float64) for link in links)
            print(f"t = {(step + 1) * TIME_STEP:.2f} s: chain joints {np.round(chain_pose, 4)}, table force on the "
                  f"chain {np.round(force, 2)} N, arm off its targets by {np.abs(arm_pose - ARM_TARGETS).max():.4f}")
    return {"chain_pose": chain_pose.tolist(), "arm_pose": arm_pose.tolist(),
            "chain_contact_force": [float(x) for x in sum(np.asarray(link.get_contact_force_world(), dtype=np.float64)
                                                          for link in links)]}


if __name__ == "__main__":
    main()
