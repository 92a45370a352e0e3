"""The scripted Throw policy: pick the cube up, carry it to a run-up point, swing it toward the bin and open the
fingers at the control step whose release the engine's discrete free flight puts into the bin.

Stateless and batched (a per-world phase machine read from each observation, Push's layout: grip 0:3, cube 3:6,
fingers 9:11, cube velocity 14:17, grip velocity 20:23; the bin's target point is ``desired_goal``):

1. thrown: the cube is not held and is off the table or moving -> keep moving along the throw line while the cube
   is still between the fingers, then stop, fingers open;
2. swing: held, at the run-up point or moving along the throw line -> open the fingers when a release now enters
   the bin within ``release_tol_m`` of its centre or past it (or nearer than a release a step later); else move
   along the line at the speed, re-planned every step, whose release 1..``run_up_steps`` steps ahead enters the
   bin at its centre (the one nearest the current speed). The line runs from the workspace centre toward the bin,
   ``launch_deg`` above the horizontal for bins 0.9 m away and beyond, up to 20 deg steeper for near bins (a flat,
   slow throw clips the table's edge);
3. carry: held -> lift, then go to the run-up point (at most ``carry_step_m`` per step);
4. pick: PickAndPlace's approach, descend and close (closing to a 24 mm command: an 8 N squeeze per finger, so
   the fingers let go within one control step of opening).

Ballistics (docs/environments.md, Throwing): the engine's backward Euler free flight from (x0, v0) at step h is
``v_n = v0 + n h g``, ``x_n = x0 + n h v0 + h^2 g n (n + 1) / 2``: the exact parabola plus ``g h t / 2``.
"""

from __future__ import annotations

import numpy as np

from .reach import grip_and_goal

G = np.array([0.0, 0.0, -9.8])
FINGERS = slice(9, 11)
CUBE_VEL = slice(14, 17)
HOLD_ACTION = -0.4  # commanded opening 0.5 (1 - 0.4) x 8 cm = 24 mm: an 8 mm squeeze per finger on the 4 cm cube


def discrete_flight_crossing(position, velocity, z_cross, h: float = 0.02) -> tuple[np.ndarray, np.ndarray]:
    """Where (..., 3) and after how many physics steps (...) (fractional: the step polynomial's root) a body in the
    engine's discrete free flight from ``position``, ``velocity`` (..., 3) comes down through height ``z_cross``
    (NaN steps if it never does)."""
    p, v = np.asarray(position, dtype=np.float64), np.asarray(velocity, dtype=np.float64)
    g = G[2]
    # z_n = z0 + n h vz + h^2 g n (n + 1) / 2 = z_cross, a quadratic in n; the descending root is the larger one
    a, b, c = 0.5 * g * h * h, h * v[..., 2] + 0.5 * g * h * h, p[..., 2] - z_cross
    disc = b * b - 4 * a * c
    n = np.where(disc >= 0, (-b - np.sqrt(np.maximum(disc, 0.0))) / (2 * a), np.nan)
    point = p + n[..., None] * h * v
    point[..., 2] = z_cross
    return point, n


def scripted_throw_action(obs: dict, max_step_m: float = 0.12, control_dt: float = 0.04, physics_dt: float = 0.02,
                          cube_half_m: float = 0.02, finger_half_m: float = 0.006, grasp_depth_m: float = 0.01,
                          bin_height_m: float = 0.36, launch_deg: float = 30.0, release_radius_m: float = 0.15,
                          release_height_m: float = 0.2, run_up_steps: int = 3,
                          release_lag_steps: float = 1.0, release_tol_m: float = 0.01, carry_step_m: float = 0.06,
                          lift_height_m: float = 0.07) -> np.ndarray:
    """Actions (W, 4) or (4,). ``max_step_m``: the grip displacement at |action| = 1 (Throw-v0: 3 m/s x 0.04 s);
    ``release_radius_m``, ``release_height_m``: where along the bearing the planned release happens;
    ``release_lag_steps``: control steps the cube still moves with the gripper after the open command."""
    single, grip, goal = grip_and_goal(obs)
    o = np.atleast_2d(obs["observation"]).astype(np.float64)
    cube = np.atleast_2d(obs["achieved_goal"]).astype(np.float64)
    cube_vel = o[:, CUBE_VEL]
    n = len(grip)
    rel = cube - grip
    gap = o[:, FINGERS][:, 0] - o[:, FINGERS][:, 1] - 2 * finger_half_m
    holding = (np.linalg.norm(rel - [0.0, 0.0, grasp_depth_m], axis=1) < 0.015) & (gap < 2 * cube_half_m + 0.004)

    # the throw's plane: from the workspace centre toward the bin, launched launch_deg above the horizontal
    bearing = goal[:, :2] / np.linalg.norm(goal[:, :2], axis=1, keepdims=True)
    # steeper for near bins, whose slow, flat throws would clip the table's edge
    dist = np.linalg.norm(goal[:, :2], axis=1)
    phi = np.radians(np.clip(launch_deg + (0.9 - dist) / 0.4 * 20.0, launch_deg, launch_deg + 20.0))[:, None]
    u = np.concatenate([np.cos(phi) * bearing, np.full((n, 1), np.sin(phi))], axis=1)
    release = np.concatenate([release_radius_m * bearing, np.full((n, 1), release_height_m)], axis=1)
    z_entry = goal[:, 2] - cube_half_m + bin_height_m + cube_half_m  # cube centre when its bottom passes the rim
    speed = plan_speed(release, u, goal, z_entry, physics_dt)
    start = release - u * (run_up_steps * speed * control_dt)[:, None]  # the cube's run-up point

    target, fingers = grip.copy(), np.ones(n)
    swing_step = u * (speed * control_dt)[:, None]
    # 1. thrown
    on_table = (cube[:, 2] > -0.005) & (np.linalg.norm(cube_vel, axis=1) < 0.3)
    thrown = ~holding & ~on_table
    near = np.linalg.norm(rel, axis=1) < 0.06
    target[thrown & near] = grip[thrown & near] + swing_step[thrown & near]
    # 2. swing / 3. carry
    along = np.sum(o[:, 20:23] * u, axis=1)
    at_start = np.linalg.norm(cube - start, axis=1) < 0.01
    off = cube - start
    across = cube_vel - np.sum(cube_vel * u, axis=1)[:, None] * u
    on_line = ((np.linalg.norm(off - np.sum(off * u, axis=1)[:, None] * u, axis=1) < 0.01)
               & (np.linalg.norm(across, axis=1) < 0.1 * speed))
    swing = holding & (at_start | (on_line & (along > 0.3 * speed)))
    carry = holding & ~swing
    # lift straight up first and carry at most carry_step_m per step: the squeeze builds while the cube is lifted
    step = start - rel - grip
    step *= np.minimum(1.0, carry_step_m / np.maximum(np.linalg.norm(step, axis=1), 1e-12))[:, None]
    low = cube[:, 2] < lift_height_m - 0.005
    step[low] = 0.0
    step[low, 2] = np.minimum(lift_height_m - cube[low, 2], 0.5 * carry_step_m)
    target[carry] = grip[carry] + step[carry]
    target[swing] = grip[swing] + swing_step[swing]
    fingers[holding] = HOLD_ACTION
    # release: open now if the engine's flight from the release state (the cube moves on with the gripper for
    # release_lag_steps) enters the bin within release_tol_m of its centre, or has gone past it; else re-plan the
    # speed whose release 1..run_up_steps steps ahead lands on the centre, keeping the nearest to the current one
    lag = release_lag_steps * control_dt
    now, _ = discrete_flight_crossing(cube + cube_vel * lag, cube_vel, z_entry, physics_dt)
    later, _ = discrete_flight_crossing(cube + cube_vel * (lag + control_dt), cube_vel, z_entry, physics_dt)
    e_now = np.sum((now[:, :2] - goal[:, :2]) * bearing, axis=1)
    e_later = np.sum((later[:, :2] - goal[:, :2]) * bearing, axis=1)
    open_now = swing & (along > 0.5 * speed) & ((e_now > -release_tol_m) | (np.abs(e_now) <= np.abs(e_later)))
    fingers[open_now] = 1.0
    speeds = np.stack([plan_speed(cube, u, goal, z_entry, physics_dt,
                                  ahead=(m + release_lag_steps) * control_dt)
                       for m in range(1, run_up_steps + 1)], axis=1)
    best = speeds[np.arange(n), np.argmin(np.abs(speeds - along[:, None]), axis=1)]
    replan = swing & ~open_now
    target[replan] = grip[replan] + u[replan] * (best[replan] * control_dt)[:, None]
    # 4. pick
    pick = ~holding & ~thrown
    centred = np.linalg.norm(rel[:, :2], axis=1) < 0.006
    at_grasp_height = np.abs(rel[:, 2] - grasp_depth_m) < 0.006
    close = pick & centred & at_grasp_height
    fingers[close] = HOLD_ACTION
    descend = pick & ~close & centred
    target[descend, 2] = cube[descend, 2] - grasp_depth_m
    approach = pick & ~close & ~descend
    safe_z = cube[:, 2] + cube_half_m + 0.03
    high = grip[:, 2] > safe_z - 0.01
    target[approach, 2] = safe_z[approach]
    target[approach & high, :2] = cube[approach & high, :2]

    action = np.zeros((n, 4))
    action[:, :3] = np.clip((target - grip) / max_step_m, -1.0, 1.0)
    action[:, 3] = fingers
    return action[0] if single else action


def plan_speed(release, u, goal, z_entry, physics_dt: float, ahead: float = 0.0, low: float = 0.3,
               high: float = 5.0) -> np.ndarray:
    """The speed v (W,) along ``u`` whose discrete flight from ``release`` + ``ahead`` x v x u enters the bin
    (height ``z_entry``) at its centre, along the bearing: bisection (the range grows with the speed)."""
    lo, hi = np.full(len(release), low), np.full(len(release), high)
    bearing = u[:, :2] / np.linalg.norm(u[:, :2], axis=1, keepdims=True)
    for _ in range(30):
        mid = 0.5 * (lo + hi)
        point, _ = discrete_flight_crossing(release + u * (ahead * mid)[:, None], u * mid[:, None], z_entry,
                                            physics_dt)
        short = np.sum((point[:, :2] - goal[:, :2]) * bearing, axis=1) < 0
        lo, hi = np.where(short, mid, lo), np.where(short, hi, mid)
    return 0.5 * (lo + hi)
