"""The scripted Stack policy: pick the cubes bottom first and put each on its target, one after the other.

Stateless and batched (whole-array numpy over worlds): each step it reads the phase of every world from the
observation (Stack's layout: grip 0:3, finger offsets 3:5; the cubes are the achieved goal, their targets the
desired goal). A cube is *placed* when it sits on its target (xy within 1 cm, height within 5 mm); the cube to
work on is the first one, from the bottom, that is not. In priority order:

1. release: the grip is on a placed cube and the fingers are still closed -> stay and open;
2. carry: the fingers hold the working cube -> rise until it clears the tower and the other cubes, fly it over its
   target, lower it onto the target (at 0.5 m/s, the last centimetre at 0.1 m/s);
3. close: over the working cube at grasp height with open fingers -> close them;
4. open: the fingers are not open wide enough to go down around a cube -> stay and open;
5. descend: over the working cube -> go down to grasp height (finger tips 1 cm below the cube's centre);
6. approach: rise to a height clear of every cube, then fly over the working cube; when every cube is placed, rise
   above the tower and stay there, fingers open.
"""

from __future__ import annotations

import numpy as np

from .reach import MAX_STEP_M, grip_and_goal

FINGERS = slice(3, 5)
OPEN = 0.5  # finger command of a 6 cm opening: room around a 4 cm cube, and a finger fits between spawned cubes


def scripted_stack_action(obs: dict, cube_half_m: float = 0.02, finger_half_m: float = 0.006,
                          grasp_depth_m: float = 0.01, carry_action_max: float = 1.0) -> np.ndarray:
    """``carry_action_max``: the largest |action| component while holding a cube (1: the full 5 cm per step), as in
    the PickAndPlace policy."""
    single, grip, goal = grip_and_goal(obs)
    o = np.atleast_2d(obs["observation"]).astype(np.float64)
    w = len(grip)
    cubes = np.atleast_2d(obs["achieved_goal"]).astype(np.float64).reshape(w, -1, 3)
    targets = goal.reshape(w, -1, 3)
    n, rows = cubes.shape[1], np.arange(w)
    gap = o[:, FINGERS][:, 0] - o[:, FINGERS][:, 1] - 2 * finger_half_m  # between the fingers' inner faces
    err = targets - cubes
    placed = (np.linalg.norm(err[..., :2], axis=-1) < 0.01) & (np.abs(err[..., 2]) < 0.005)  # (W, n)
    done = placed.all(axis=1)
    k = np.where(done, n - 1, np.argmin(placed, axis=1))  # the first cube not placed
    cube, target_k = cubes[rows, k], targets[rows, k]
    rel = cube - grip
    grasp_rel = rel - [0.0, 0.0, grasp_depth_m]
    near = np.linalg.norm(cubes - grip[:, None] - [0.0, 0.0, grasp_depth_m], axis=-1) < 0.015  # (W, n)
    top = cubes[..., 2].max(axis=1) + cube_half_m  # the highest cube top

    release = np.any(placed & near, axis=1) & (gap < 2 * cube_half_m + 0.01)
    holding = ~release & ~done & (np.linalg.norm(grasp_rel, axis=1) < 0.015) & (gap < 2 * cube_half_m + 0.004)
    centred = np.linalg.norm(rel[:, :2], axis=1) < 0.006
    at_grasp_height = np.abs(grasp_rel[:, 2]) < 0.006
    free = ~release & ~holding & ~done
    close = free & centred & at_grasp_height
    opening = free & ~close & (gap < 2 * cube_half_m + 0.015)
    descend = free & ~close & ~opening & centred
    approach = free & ~close & ~opening & ~descend

    target, fingers = grip.copy(), np.full(w, OPEN)
    # carry: the held cube's centre flies at carry_z (its bottom 1 cm above the tower and the cubes on the table)
    carry_z = np.maximum(target_k[:, 2], 3 * cube_half_m) + 2 * cube_half_m + 0.01
    far = np.linalg.norm(target_k[:, :2] - cube[:, :2], axis=1) > 0.006
    low = cube[:, 2] < carry_z - 0.01
    rise = holding & far & low
    target[rise, 2] += (carry_z - cube[:, 2])[rise]
    fly = holding & far & ~low
    target[fly] += (target_k - cube)[fly] * [1.0, 1.0, 0.0]
    target[fly, 2] += (carry_z - cube[:, 2])[fly]
    lower = holding & ~far
    # down at 2 cm per step to 1 cm above the target, then 4 mm per step: a held cube stopped from 1.25 m/s, or set
    # down fast, knocks the tower over
    dz = target_k[:, 2] - cube[:, 2]
    dz = np.maximum(dz, -np.clip(-dz - 0.01, 0.004, 0.02))
    target[lower] += np.column_stack([(target_k - cube)[:, :2], dz])[lower]
    fingers[holding | close] = -1.0
    target[descend, 2] = cube[descend, 2] - grasp_depth_m
    safe_z = top + 0.02  # finger tips 2 cm above every cube
    high = grip[:, 2] > safe_z - 0.01
    target[approach, 2] = safe_z[approach]
    target[approach & high, :2] = cube[approach & high, :2]
    target[done & ~release, 2] = (top + 0.05)[done & ~release]
    action = np.zeros((w, 4))
    action[:, :3] = np.clip((target - grip) / MAX_STEP_M, -1.0, 1.0)
    if carry_action_max < 1.0:
        action[holding, :3] = np.clip(action[holding, :3], -carry_action_max, carry_action_max)
    action[:, 3] = fingers
    return action[0] if single else action
