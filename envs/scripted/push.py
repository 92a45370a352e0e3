"""The scripted Push policy (it proves the task and the physics): the gripper can push the cube where it must go.

Stateless and batched: from each observation it picks one of four moves.

1. push: the closed fingers are low, behind the cube on the cube-goal line -> move along the line by at most
   ``push_step_m`` per step (with a lateral correction back onto it), stopping when the cube is on the goal;
2. descend: above the approach point behind the cube -> go down to pushing height;
3. travel: at safe height -> fly to the approach point;
4. lift: low but not behind the cube -> rise to safe height first (never drag across the cube).

    from superdex_gym.envs.scripted import scripted_push_action
    action = scripted_push_action(obs)   # obs: the env's observation dict, single or batched (leading W)
"""

from __future__ import annotations

import numpy as np

from .reach import MAX_STEP_M, grip_and_goal


def scripted_push_action(obs: dict, cube_half_m: float = 0.02, finger_half_m=0.01,
                         clearance_m: float = 0.012, push_step_m: float = 0.012) -> np.ndarray:
    """``finger_half_m``: the closed fingers' half size, one number (the floating gripper's round footprint) or
    (along x, along y) for a hand at yaw 0 whose fingers are longer across the jaw (the Panda's): then the grip
    point-to-cube distance at touch is where the push line leaves the boxes' Minkowski sum, so a diagonal push
    does not land the fingers on the cube's corner."""
    single, grip, goal = grip_and_goal(obs)
    cube = np.atleast_2d(obs["achieved_goal"]).astype(np.float64)
    to_goal = goal[:, :2] - cube[:, :2]
    dist = np.linalg.norm(to_goal, axis=1)
    d = to_goal / np.maximum(dist, 1e-9)[:, None]
    n = np.stack([-d[:, 1], d[:, 0]], axis=1)  # in-plane normal of the push line
    rel = grip[:, :2] - cube[:, :2]
    along, lateral = np.sum(rel * d, axis=1), np.sum(rel * n, axis=1)
    touch_margin = 0.006  # how far inside contact_gap the grip point may come while pushing
    if np.ndim(finger_half_m) == 0:
        contact_gap = cube_half_m + finger_half_m  # grip point to cube centre when the fingers touch the cube
    else:
        touch_margin = 0.015  # the box pushing a box off its face normal turns it: the gap shrinks
        fx, fy = finger_half_m
        # where the line from the cube's centre leaves the two boxes' Minkowski sum (both unyawed)
        with np.errstate(divide="ignore"):
            contact_gap = np.minimum((cube_half_m + fx) / np.abs(d[:, 0]), (cube_half_m + fy) / np.abs(d[:, 1]))
    push_z = 0.5 * cube_half_m  # finger tips a centimetre above the table
    safe_z = cube[:, 2] + cube_half_m + 0.03
    approach = cube[:, :2] - d * np.asarray(contact_gap + clearance_m)[..., None]

    behind = (along < -contact_gap + touch_margin) & (np.abs(lateral) < 0.012)
    low = grip[:, 2] < cube[:, 2] + cube_half_m
    pushing = behind & low
    over_approach = np.linalg.norm(grip[:, :2] - approach, axis=1) < 0.008

    target = grip.copy()
    # 1. push along the line at <= push_speed per step (a faster cube slides on after contact: v^2 / (2 mu g)),
    #    never beyond the grip position that leaves the cube centre on the goal, correcting the lateral offset
    remaining = np.clip(dist - 0.004, 0.0, push_step_m)
    push_xy = grip[:, :2] + d * remaining[:, None] - n * lateral[:, None]
    target[pushing, :2] = push_xy[pushing]
    target[pushing, 2] = push_z
    # 2. descend
    descend = ~pushing & over_approach
    target[descend, :2] = approach[descend]
    target[descend, 2] = push_z
    # 3. travel at safe height / 4. lift first when low and not behind the cube
    travel = ~pushing & ~over_approach
    high_enough = grip[:, 2] > safe_z - 0.01
    target[travel & high_enough, :2] = approach[travel & high_enough]
    target[travel, 2] = safe_z[travel]
    action = np.zeros((grip.shape[0], 4))
    action[:, :3] = np.clip((target - grip) / MAX_STEP_M, -1.0, 1.0)
    action[:, 3] = -1.0
    return action[0] if single else action
