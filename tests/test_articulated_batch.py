"""sim/articulated/batch.py: whole-batch reads and writes of an articulated actor equal the reference API's
per-world calls bit for bit, and bad input is refused naming the argument with nothing changed."""

import numpy as np
import pytest

import superdex_gym.sim as mochi
from superdex_gym.envs.robots import panda_model as pm
from superdex_gym.sim.articulated import batch

W = 4


def _scene():
    scene = mochi.create_scene("batch")
    arm = scene.create_articulated_actor(pm.panda_actor_params())
    arm.set_articulated_pose_from_joints(pm.HOME)
    drives = [scene.create_articulated_single_dof_target_constraint(actor=arm, joint_index=j, dof_index=0,
                                                                    target_value=pm.HOME[d], stiffness=3e4,
                                                                    damping=30.0)
              for d, j in enumerate((1, 2, 3, 4, 5, 6, 7, 9, 10))]
    scene.set_num_worlds(W)
    return scene, arm, drives


def _poses(seed):
    rng = np.random.default_rng(seed)
    return np.clip(np.asarray(pm.HOME) + rng.uniform(-0.3, 0.3, (2, 9)), pm.LOWER, pm.UPPER)


def test_batched_writes_equal_per_world_writes_through_steps():
    """Poses at rest and drive targets written for worlds 1 and 3 at once, then 5 steps, equal the same written one
    world at a time with the reference's setters; joint_state equals the per-world getters."""
    poses, targets = _poses(0), _poses(1)
    a_scene, a_arm, a_drives = _scene()
    batch.set_poses_at_rest(a_arm, poses, worlds=[1, 3])
    batch.set_dof_targets(a_drives, targets, worlds=[1, 3], teleport=True)
    b_scene, b_arm, b_drives = _scene()
    for k, w in enumerate((1, 3)):
        b_arm.set_articulated_pose_from_joints(poses[k], world=w)
        b_arm.set_articulated_joint_velocities(np.zeros(9), world=w)
        for c, drive in enumerate(b_drives):
            drive.set_target_dof(targets[k, c], world=w)
            drive.update_old_target(world=w)
    for scene in (a_scene, b_scene):
        for _ in range(5):
            scene.step(0.02)
    q, qd = batch.joint_state(a_arm)
    for w in range(W):
        np.testing.assert_array_equal(q[w], b_arm.get_articulated_pose(world=w))
        np.testing.assert_array_equal(qd[w], b_arm.get_articulated_joint_velocities(world=w))
    links = [a_scene.get_actor(h) for h in a_arm.get_nested_link_actors()]
    b_links = [b_scene.get_actor(h) for h in b_arm.get_nested_link_actors()]
    np.testing.assert_array_equal(a_scene.get_actor_translations(links), b_scene.get_actor_translations(b_links))
    for c, drive in enumerate(a_drives):
        assert drive.get_target_dof(world=3) == targets[1, c]
    # targets for every world (worlds=None) and the drives' own setter agree
    batch.set_dof_targets(a_drives, np.tile(targets[0], (W, 1)))
    for drive, value in zip(a_drives, targets[0]):
        assert [drive.get_target_dof(world=w) for w in range(W)] == [value] * W


def test_bad_input_is_refused_and_changes_nothing():
    scene, arm, drives = _scene()
    before = batch.joint_state(arm)[0]
    with pytest.raises(ValueError, match=r"poses must be \(2, 9\)"):
        batch.set_poses_at_rest(arm, np.zeros((3, 9)), worlds=[0, 1])
    with pytest.raises(ValueError, match="poses must be"):
        batch.set_poses_at_rest(arm, np.full((W, 9), np.nan))
    with pytest.raises(ValueError, match=r"targets must be \(4, 9\)"):
        batch.set_dof_targets(drives, np.zeros((W, 8)))
    with pytest.raises(ValueError, match="at least one"):
        batch.set_dof_targets([], np.zeros((W, 0)))
    np.testing.assert_array_equal(batch.joint_state(arm)[0], before)
    assert drives[0].get_target_dof(world=0) == pm.HOME[0]
