"""Long soaks of the registered environments (issue 16; figures in docs/reliability.md).

``python -m superdex_gym.soak --world-steps 1000000`` steps every table row (Push with the fingers blocked and
free, Reach) with random and adversarial actions on a native vector env and counts what must never happen: NaN or
inf, observations outside the observation space, a body outside the arena (its centre beyond the walls' inner
faces or under the floor) or inside static
geometry (its centre inside a static collider: more of it in than out, past what penalty contact at rest, in an
impact or under the gripper's drive holds; the deepest vertex is reported too), exceptions. It also reports the
solver's STOPPED / DIVERGED substeps, the truncations for diverged or undone steps (``physics_diverged``), the
largest tunnelling ratio and the fastest body.

Actions, by world (index mod 4), each episode: uniform random; a constant corner of the action box (e.g.
(-1, -1, -1, -1): pushes into the table and a wall); toward the object with the finger command flipping every
step (fingers opening and closing on the object); random signs at full magnitude (bang-bang).
"""

from __future__ import annotations

import argparse
import json
import time

import gymnasium as gym
import numpy as np

import superdex_gym  # noqa: F401  (registers the ids)
import superdex_gym.sim as mochi

CONFIGS = {  # name -> (env id, gym.make kwargs)
    "Push": ("SuperDex/Push-v0", {}),
    "Push, block_gripper=False": ("SuperDex/Push-v0", {"block_gripper": False}),
    "Reach": ("SuperDex/Reach-v0", {}),
}
POLICIES = ("random", "corner", "grasp_toggle", "bang_bang")


class StaticGeometry:
    """The scene's static colliders as oriented boxes and planes, and the dynamic bodies' box corners, to measure
    how deep any corner is inside static geometry (vectorized over worlds)."""

    def __init__(self, scene):
        self.scene = scene
        self.boxes, self.planes, self.dynamic, self.corners = [], [], [], []
        for actor in scene.get_actors():
            if actor.get_type() == mochi.ActorType.ARTICULATED:
                continue  # its links are listed as actors of their own
            record = actor._record
            shape = record.shape
            if actor.is_static():
                if shape.kind == "plane":
                    self.planes.append((np.asarray(shape.normal), float(shape.distance)))
                else:
                    lo, hi = shape.aabb()
                    self.boxes.append((actor, 0.5 * (lo + hi), 0.5 * (hi - lo)))
            elif getattr(shape, "vertices", None) is not None:
                self.dynamic.append(actor)
                self.corners.append(np.asarray(shape.vertices))

    def body_points(self) -> np.ndarray:
        """(W, P, 3) every vertex of every dynamic body, in the world."""
        t, _ = self.scene.get_actor_poses(self.dynamic)
        rot = self.scene.get_actor_rotations(self.dynamic)
        return np.concatenate([t[:, k, None] + v @ rot[:, k].transpose(0, 2, 1)
                               for k, v in enumerate(self.corners)], axis=1)

    def depths(self, points: np.ndarray) -> np.ndarray:
        """(W, P) how deep each point is inside any static collider [m] (0 outside)."""
        depth = np.zeros(points.shape[:2])
        for actor, centre, half in self.boxes:
            t, _ = self.scene.get_actor_poses([actor])
            rot = self.scene.get_actor_rotations([actor])[:, 0]
            local = np.einsum("wji,wpj->wpi", rot, points - t[:, 0, None]) - centre
            q = np.abs(local) - half
            inside = np.all(q < 0, axis=-1)
            depth = np.maximum(depth, np.where(inside, -q.max(axis=-1), 0.0))
        for normal, distance in self.planes:
            depth = np.maximum(depth, np.maximum(distance - points @ normal, 0.0))
        return depth


def policy_actions(policy: str, obs: dict, rng: np.random.Generator, corner: np.ndarray, step: int) -> np.ndarray:
    """(K, 4) actions of one policy for the K worlds that follow it."""
    k = obs["observation"].shape[0]
    if policy == "random":
        return rng.uniform(-1, 1, size=(k, 4))
    if policy == "corner":
        return corner
    if policy == "bang_bang":
        return rng.choice([-1.0, 1.0], size=(k, 4))
    # grasp_toggle: toward the object (the achieved goal; for Reach the grip point itself, so random), fingers
    # flipping open / closed every step
    towards = (obs["achieved_goal"][:, :3] - obs["observation"][:, :3]) / 0.05
    a = np.clip(towards + rng.normal(0, 0.3, size=(k, 3)), -1, 1)
    finger = np.full((k, 1), 1.0 if step % 2 else -1.0)
    return np.concatenate([a, finger], axis=1)


def soak(env_id: str, make_kwargs: dict | None = None, world_steps: int = 20_000, num_worlds: int = 64,
         seed: int = 0) -> dict:
    """Counts of one soak (module docstring) over at least ``world_steps`` world steps."""
    venv = gym.make_vec(env_id, num_envs=num_worlds, **(make_kwargs or {}))
    space = venv.single_observation_space
    geometry = StaticGeometry(venv.worlds.scene)
    task_config = venv.worlds.task.config
    arena = getattr(task_config, "arena_half_m", None)
    floor = getattr(task_config, "floor_depth_m", None)
    rng = np.random.default_rng(seed)
    policy_of = np.arange(num_worlds) % len(POLICIES)
    corners = rng.choice([-1.0, 1.0], size=(num_worlds, 4))
    counts = {"world_steps": 0, "nan": 0, "obs_outside_space": 0, "outside_arena": 0, "inside_static": 0,
              "exceptions": 0, "stopped_substeps": 0, "diverged_substeps": 0, "physics_diverged": 0,
              "max_tunnelling_ratio": 0.0, "max_object_speed": 0.0, "max_depth_m": 0.0, "substeps": 0}
    substeps = venv.worlds.config.substeps
    obs, _ = venv.reset(seed=seed)
    start = time.perf_counter()
    step = 0
    while counts["world_steps"] < world_steps:
        actions = np.zeros((num_worlds, 4))
        for p, name in enumerate(POLICIES):
            rows = np.flatnonzero(policy_of == p)
            sub = {k: v[rows] for k, v in obs.items()}
            actions[rows] = policy_actions(name, sub, rng, corners[rows], step)
        try:
            obs, _, terminated, truncated, infos = venv.step(actions)
        except Exception:  # counted, then the soak goes on from fresh episodes
            counts["exceptions"] += 1
            obs, _ = venv.reset()
            continue
        step += 1
        done = terminated | truncated
        corners[done] = rng.choice([-1.0, 1.0], size=(int(done.sum()), 4))  # a new corner each episode
        finite = np.all(np.concatenate([np.isfinite(v).reshape(num_worlds, -1) for v in obs.values()], axis=1), axis=1)
        counts["nan"] += int((~finite).sum())
        outside = np.zeros(num_worlds, dtype=bool)
        for key, box in space.spaces.items():
            outside |= np.any((obs[key] < box.low) | (obs[key] > box.high), axis=1)
        counts["obs_outside_space"] += int(outside.sum())
        centres = venv.worlds.scene.get_actor_translations(geometry.dynamic)  # box centres: the root frames
        counts["inside_static"] += int(np.any(geometry.depths(centres) > 0.0, axis=1).sum())
        counts["max_depth_m"] = max(counts["max_depth_m"], float(geometry.depths(geometry.body_points()).max()))
        if arena is not None:
            out = np.any(np.abs(centres[..., :2]) > arena, axis=(1, 2)) | np.any(centres[..., 2] < -floor, axis=1)
            counts["outside_arena"] += int(out.sum())
        counts["stopped_substeps"] += int(infos["stopped_substeps"].sum())
        counts["diverged_substeps"] += int(infos["diverged_substeps"].sum())
        counts["physics_diverged"] += int(infos["physics_diverged"].sum())
        counts["max_tunnelling_ratio"] = max(counts["max_tunnelling_ratio"], float(infos["tunnelling_ratio"].max()))
        lin, _ = venv.worlds.scene.get_actor_velocities(geometry.dynamic)
        counts["max_object_speed"] = max(counts["max_object_speed"], float(np.linalg.norm(lin, axis=-1).max()))
        counts["world_steps"] += num_worlds
        counts["substeps"] += num_worlds * substeps
    counts["seconds"] = time.perf_counter() - start
    return counts


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--world-steps", type=float, default=1e6, help="world steps per configuration")
    parser.add_argument("--num-worlds", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--config", choices=list(CONFIGS), action="append", help="default: every configuration")
    parser.add_argument("--json", help="write the counts to this file")
    args = parser.parse_args(argv)
    results = {}
    for name in args.config or list(CONFIGS):
        env_id, kwargs = CONFIGS[name]
        results[name] = c = soak(env_id, kwargs, int(args.world_steps), args.num_worlds, args.seed)
        print(f"{name}: {c['world_steps']} world steps in {c['seconds']:.0f} s | NaN {c['nan']} | obs outside space "
              f"{c['obs_outside_space']} | outside arena {c['outside_arena']} | inside static {c['inside_static']} "
              f"(deepest {1e3 * c['max_depth_m']:.1f} mm) | exceptions {c['exceptions']} | STOPPED "
              f"{100 * c['stopped_substeps'] / c['substeps']:.2f}% of substeps | DIVERGED {c['diverged_substeps']} | "
              f"truncated for physics {c['physics_diverged']} | max tunnelling ratio {c['max_tunnelling_ratio']:.2f} "
              f"| fastest body {c['max_object_speed']:.2f} m/s", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
