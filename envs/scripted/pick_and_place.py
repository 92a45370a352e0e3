"""The scripted PickAndPlace policy: open above the cube, descend, close, carry the cube to the goal and hold it.

Stateless and batched, from the observation (Push's layout: grip 0:3, cube 3:6, finger offsets 9:11):

1. carry: the fingers are closed on the cube (their gap between the cube's width and the open width, the cube at
   the grip) -> move so that the cube goes to the goal, fingers closed;
2. close: the grip point is at grasp height over the cube -> close the fingers where it is;
3. descend: above the cube -> go down to grasp height (finger tips 1 cm below the cube's centre), fingers open;
4. approach: otherwise rise to a safe height over the cube with the fingers open, then move over it.
"""

from __future__ import annotations

import numpy as np

from .reach import MAX_STEP_M, grip_and_goal

FINGERS = slice(9, 11)


def scripted_pick_and_place_action(obs: dict, cube_half_m: float = 0.02, finger_half_m: float = 0.006,
                                   grasp_depth_m: float = 0.01, carry_action_max: float = 1.0) -> np.ndarray:
    """``carry_action_max``: the largest |action| component while carrying (1: the full 5 cm per step); a grip whose
    fingers give along the jaw (the Panda's) carries slower so the cube does not slide out."""
    single, grip, goal = grip_and_goal(obs)
    o = np.atleast_2d(obs["observation"]).astype(np.float64)
    cube = np.atleast_2d(obs["achieved_goal"]).astype(np.float64)
    gap = o[:, FINGERS][:, 0] - o[:, FINGERS][:, 1] - 2 * finger_half_m  # between the fingers' inner faces
    rel = cube - grip
    centred = np.linalg.norm(rel[:, :2], axis=1) < 0.006
    at_grasp_height = np.abs(rel[:, 2] - grasp_depth_m) < 0.006
    holding = (np.linalg.norm(rel - [0.0, 0.0, grasp_depth_m], axis=1) < 0.015) & (gap < 2 * cube_half_m + 0.004)
    safe_z = cube[:, 2] + cube_half_m + 0.03

    target, fingers = grip.copy(), np.ones(len(grip))
    carry = holding
    target[carry] = goal[carry] - rel[carry]  # the grip moves so that the cube lands on the goal
    fingers[carry] = -1.0
    close = ~carry & centred & at_grasp_height
    fingers[close] = -1.0
    descend = ~carry & ~close & centred
    target[descend, 2] = cube[descend, 2] - grasp_depth_m
    approach = ~carry & ~close & ~descend
    high = grip[:, 2] > safe_z - 0.01
    target[approach, 2] = safe_z[approach]
    target[approach & high, :2] = cube[approach & high, :2]
    action = np.zeros((len(grip), 4))
    action[:, :3] = np.clip((target - grip) / MAX_STEP_M, -1.0, 1.0)
    if carry_action_max < 1.0:
        action[carry, :3] = np.clip(action[carry, :3], -carry_action_max, carry_action_max)
    action[:, 3] = fingers
    return action[0] if single else action
