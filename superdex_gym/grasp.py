"""Grasp figures of the floating gripper: seeded scripted picks of PickAndPlace's 4 cm cube, all worlds in one batch.

Each world: the cube at a random table position with random yaw (+-45 deg); the gripper flies above it with
open fingers, descends with a random grasp offset (+-5 mm in x and y), closes, lifts the cube 15 cm and holds it
2 s. Reported (issue 14's figures): lift-and-hold success, slip (change of the cube's offset from the grip point
over the hold), wander (its largest excursion from the hold's mean offset), the cube's largest speed relative to
the gripper during the hold, the share of hold substeps where Newton converged, and the cost of a hold step
against a free-motion step (every approach step and every fourth hold step replayed from saved states,
alternately: the mean of each step's wall-clock median).

    python -m superdex_gym.grasp --picks 100
    python -m superdex_gym.grasp --picks 100 --physics-dt 0.01 --substeps 4   # the same 25 Hz, half the substep
    python -m superdex_gym.grasp --picks 100 --substep-refinement 0           # stopped substeps not redone
"""

from __future__ import annotations

import argparse
import time

import numpy as np


# Phase lengths in control steps (25 Hz).
APPROACH, DESCEND, CLOSE, LIFT, HOLD = 12, 8, 8, 12, 50


def _controller(grip, cube, start, offset, step):
    """Actions (W, 4) of the pick script at control step ``step`` (one phase for every world)."""
    above = cube + offset + np.array([0.0, 0.0, 0.06])
    low = cube + offset - np.array([0.0, 0.0, 0.01])  # finger tips 1 cm below the cube's centre
    lifted = start + offset + np.array([0.0, 0.0, 0.15 - 0.01])
    if step < APPROACH:
        target, fingers = above, 1.0
    elif step < APPROACH + DESCEND:
        target, fingers = low, 1.0
    elif step < APPROACH + DESCEND + CLOSE:
        target, fingers = low, -1.0
    else:
        target, fingers = lifted, -1.0
    action = np.empty((len(grip), 4))
    action[:, :3] = np.clip((target - grip) / 0.05, -1.0, 1.0)
    action[:, 3] = fingers
    return action


def measure_picks(picks: int = 100, seed: int = 0, cost_repeats: int = 5, **env_kwargs) -> dict:
    """Run ``picks`` seeded picks in one batch through the env's own control step (substeps, guard, refinement);
    returns the figures (see the module doc)."""
    from .envs import ENVS
    from .envs.core.env import make_worlds
    from .sim import ConvergenceStatus

    rng = np.random.default_rng(seed)
    row = ENVS["SuperDex/PickAndPlace-v0"]  # the env's defaults (free fingers, their Newton start and refinement)
    worlds = make_worlds(picks, row.robot, row.task, {**dict(row.kwargs), **env_kwargs})
    scene, task, robot = worlds.scene, worlds.task, worlds.robot
    all_worlds = np.arange(picks)
    worlds.reset_worlds(all_worlds, [np.random.default_rng([seed, k]) for k in range(picks)])
    half = task.half
    yaw = rng.uniform(-np.pi / 4, np.pi / 4, picks)
    xy = rng.uniform(-0.1, 0.1, (picks, 2))
    xy[:, 0] += np.where(xy[:, 0] >= 0, 0.1, -0.1)  # clear of the gripper's home at the table centre
    start = np.column_stack([xy, np.full(picks, half)])
    quat = np.column_stack([np.zeros((picks, 2)), np.sin(yaw / 2), np.cos(yaw / 2)])
    task.place_objects(scene, start[:, None], quat[:, None], all_worlds)
    offset = np.column_stack([rng.uniform(-0.005, 0.005, (picks, 2)), np.zeros(picks)])

    hold_start = APPROACH + DESCEND + CLOSE + LIFT
    # The control steps replayed for the cost: every approach step (free motion) and every fourth of the hold.
    timed = {**{k: "free" for k in range(APPROACH)}, **{hold_start + k: "hold" for k in range(0, HOLD, 4)}}
    replays = {"free": [], "hold": []}
    rel, rel_speed = [], []
    leaf = converged = refined = 0
    for step in range(hold_start + HOLD):
        grip, _ = robot.grip_point()
        cube = scene.get_actor_translations([task.cube])[:, 0]
        action = _controller(grip, cube, start, offset, step)
        if step in timed:
            replays[timed[step]].append((worlds.get_state(), action))
        worlds.apply_actions(action)
        physics = worlds.physics
        refined += int(physics["refined_substeps"].sum())
        if step >= hold_start:
            substeps = worlds.config.substeps + physics["refined_substeps"]  # a refined substep is two halves
            leaf += int(substeps.sum())
            converged += int((substeps - physics["stopped_substeps"] - physics["diverged_substeps"]).sum())
            grip, grip_vel = robot.grip_point()
            cube = scene.get_actor_translations([task.cube])[:, 0]
            cube_vel = scene.get_actor_velocities([task.cube])[0][:, 0]
            rel.append(cube - grip)
            rel_speed.append(np.linalg.norm(cube_vel - grip_vel, axis=1))
    rel = np.array(rel)  # (HOLD, W, 3)
    cube_z = scene.get_actor_translations([task.cube])[:, 0, 2]
    held = (cube_z > half + 0.15 - 0.02) & (np.linalg.norm(rel[-1], axis=1) < 0.03)
    slip = np.linalg.norm(rel[-1] - rel[0], axis=1)
    wander = np.linalg.norm(rel - rel.mean(axis=0), axis=2).max(axis=0)
    return {
        "picks": picks, "held": int(held.sum()), "success_rate": float(held.mean()),
        "missed_yaw_deg": [round(float(np.degrees(y)), 1) for y in yaw[~held]],
        "slip_max_mm": 1e3 * float(slip[held].max(initial=0.0)),
        "wander_max_mm": 1e3 * float(wander[held].max(initial=0.0)),
        "relative_speed_max_m_s": float(np.max(rel_speed)),
        "hold_converged_share": converged / leaf,
        "refined_substeps": refined,
        "hold_over_free_cost": _replay_cost(worlds, replays, cost_repeats),
    }


def _replay_cost(worlds, replays: dict, repeats: int) -> float:
    """Mean hold control step over the mean free one, each step's wall-clock the median of ``repeats`` replays
    from its saved state (the same work every time: bit-identical steps); hold and free steps alternate, so both
    see the same machine load. ``repeats`` 0: not measured (nan)."""
    if repeats == 0:
        return float("nan")
    times = {name: np.zeros((repeats, len(steps))) for name, steps in replays.items()}
    for r in range(repeats):
        for k in range(max(len(steps) for steps in replays.values())):
            for name, steps in replays.items():
                if k < len(steps):
                    state, action = steps[k]
                    worlds.set_state(state)
                    t0 = time.perf_counter()
                    worlds.apply_actions(action)
                    times[name][r, k] = time.perf_counter() - t0
    return float(np.median(times["hold"], axis=0).mean() / np.median(times["free"], axis=0).mean())


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--picks", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--physics-dt", type=float, default=0.02, help="s per physics substep (the env's physics_dt)")
    parser.add_argument("--substeps", type=int, default=2, help="physics substeps per 25 Hz control step")
    parser.add_argument("--substep-refinement", type=int, default=None,
                        help="nesting of halving a stopped substep (default: PickAndPlace's)")
    parser.add_argument("--cost-repeats", type=int, default=5, help="replays of each timed control step")
    args = parser.parse_args(argv)
    kwargs = {"physics_dt": args.physics_dt, "substeps": args.substeps}
    if args.substep_refinement is not None:
        kwargs["substep_refinement"] = args.substep_refinement
    for key, value in measure_picks(args.picks, args.seed, args.cost_repeats, **kwargs).items():
        print(f"{key:>24}: {value:.4g}" if isinstance(value, float) else f"{key:>24}: {value}")


if __name__ == "__main__":
    main()
