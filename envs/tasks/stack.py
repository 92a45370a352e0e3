"""Stack (panda-gym's PandaStack): put ``cubes`` 4 cm cubes (2: Stack2, 3: Stack3) into a tower at a goal on the
table; the fingers are free (action: dx, dy, dz, finger opening).

* goal (3 x cubes,): the target of each cube, bottom first: the bottom one resting on the table at a sampled
  point, each next one a cube's height above it. Achieved goal: the cubes' positions in the same order.
* success: EACH cube within ``distance_threshold`` = 5 cm of its own target (not panda-gym's one norm over the
  stacked goal, which passes with one cube 9.9 cm off).
* observation (10 + 15 x cubes,): grip point (3), finger offsets (2), grip velocity (3), finger velocities (2),
  then per cube: position (3), position - grip (3), rotation vector (3), linear (3) and angular velocity (3).
* reset: the cubes rest on the table (never mid-air), unyawed, every cube centre at least ``cube_min_distance`` =
  the cube's diagonal + 2 cm from every other cube and from the goal (an open finger fits between them, and the
  tower's spot is free), and ``cube_gripper_min_distance`` = 0.1 m from the gripper's home; so the first cube is
  never within the success radius at reset. ``options``: ``goal`` (3 x cubes,) and ``object_poses`` (cubes, 3)
  or (cubes, 7) (each cube's position, or position + quaternion x, y, z, w): each in the arena, not inside the
  table or the gripper, no two overlapping (axis-aligned boxes of the rotated cubes), else ValueError.
* contact: PickAndPlace's (``GRASP_CONTACT`` on cubes and table, 16 quadrature points per cube face), which is
  what makes towers stand (docs/environments.md, Stacking).
* dense reward, staged per cube, a function of the goals alone (so HER relabelling recomputes it exactly; the
  gripper's reach and grasp stages would need the gripper's state, which the goals do not carry):
  ``place_i`` = -|cube_i - target_i|, ``lift_i`` = -max(0, target_i z - cube_i z) (a cube below its level pays
  twice for the height it lacks), ``stage`` = -0.25 x (cubes not yet in the tower, counted from the bottom: the
  tower is the longest run of cubes from the bottom each within the success radius).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import superdex_gym.sim as mochi
from superdex_gym.sim.validation import as_int, as_real

from ..core.config import GRASP_CONTACT, V_MAX, clip
from .arena import check_clear_of_boxes
from .push import PushConfig, PushTask

STAGE_PENALTY = 0.25  # dense reward per cube not yet in the tower


@dataclass(frozen=True)
class StackConfig(PushConfig):
    cubes: int = 2
    cube_min_distance_m: float = 0.04 * np.sqrt(2) + 0.02  # cube diagonal + an open finger's thickness and slack

    def validate(self) -> "StackConfig":
        super().validate()
        as_int(self.cubes, "cubes", 2, 3, "Stack2 and Stack3 are the towers the spawn area fits")
        diagonal = self.cube_size_m * np.sqrt(2)
        if not (np.isfinite(self.cube_min_distance_m) and diagonal < self.cube_min_distance_m
                <= self.goal_range_m / 3):
            raise ValueError(f"cube_min_distance must exceed the cube's diagonal {diagonal:.4f} m (no overlap at any "
                             f"yaw) and be at most goal_range / 3 = {self.goal_range_m / 3:.4f} m (room for the cubes "
                             f"and the goal), got {self.cube_min_distance_m!r}")
        return self


class StackTask(PushTask):
    name = "Stack"
    reset_options = ("goal", "object_poses")
    cube_actor_kwargs = {"boundary_element_type": mochi.ActorBoundaryElementType.P1Q16}
    goals_in_air = True
    colors = {"cube0": (0.85, 0.2, 0.15), "cube1": (0.2, 0.45, 0.85), "cube2": (0.95, 0.75, 0.1)}

    @staticmethod
    def make_config(cubes=2, cube_size=0.04, cube_mass=0.064, friction=0.5, goal_range=0.3, distance_threshold=0.05,
                    cube_gripper_min_distance=0.1, cube_min_distance=0.04 * np.sqrt(2) + 0.02) -> StackConfig:
        push = PushTask.make_config(cube_size, cube_mass, friction, goal_range, distance_threshold, 0.0,
                                    cube_gripper_min_distance)
        return StackConfig(**vars(push), cubes=as_int(cubes, "cubes", 2, 3, "Stack2 and Stack3"),
                           cube_min_distance_m=as_real(cube_min_distance, "cube_min_distance")).validate()

    def __init__(self, config: StackConfig, robot):
        super().__init__(config, robot)
        self.objects = config.cubes
        self.names = [f"cube{i}" for i in range(self.objects)]
        per_cube = ("", "_rel_grip", "_rotation", "_velocity", "_spin")
        self.observation_layout = ("grip", "fingers", "grip_velocity", "finger_velocity",
                                   *(f"{name}{part}" for name in self.names for part in per_cube))
        self.achieved_goal_parts = tuple(self.names)

    def surface_contact(self):
        return mochi.ContactParams(coulomb_friction_coefficient=self.config.friction, **GRASP_CONTACT)

    def build(self, scene) -> None:
        c = self.config
        contact = self.build_arena(scene)
        self.cubes = [
            scene.create_rigid_actor(
                name=name, shape=mochi.create_box_mesh_shape([self.half] * 3), mass=c.cube_mass_kg, contact=contact,
                collider_type=mochi.ColliderType.BOX,
                world_from_local=mochi.TransformRT(translation=[0.1 * i, 0.3, self.half]), **self.cube_actor_kwargs,
            )
            for i, name in enumerate(self.names)
        ]

    # --- episodes ------------------------------------------------------------------------------------------------
    def tower(self, base_xy) -> np.ndarray:
        """Targets (cubes, 3) of a tower standing on the table at ``base_xy``."""
        z = self.half * (1 + 2 * np.arange(self.objects))
        return np.column_stack([np.tile(base_xy, (self.objects, 1)), z])

    def sample_episode(self, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """The tower's spot, then each cube in turn, by rejection (as FetchPush samples): uniform in the
        ``goal_range`` square, ``cube_min_distance`` from the spot and the cubes placed so far,
        ``cube_gripper_min_distance`` from the gripper's home."""
        c = self.config
        h, home_xy = c.goal_range_m / 2, self.robot_home()[:2]
        spot = rng.uniform(-h, h, size=2)
        taken = [spot]
        for _ in range(self.objects):
            while True:
                xy = rng.uniform(-h, h, size=2)
                if (np.linalg.norm(xy - home_xy) >= c.cube_gripper_min_distance_m
                        and min(np.linalg.norm(xy - t) for t in taken) >= c.cube_min_distance_m):
                    break
            taken.append(xy)
        cubes = np.column_stack([np.array(taken[1:]), np.full(self.objects, self.half)])
        return self.tower(spot).ravel(), cubes

    def parse_options(self, options: dict) -> dict:
        if "goal" in options:
            self.check_goal(options["goal"])
        if "object_poses" in options:
            what = "options['object_poses']"
            value = options["object_poses"]
            if isinstance(value, (str, bytes, dict)) or not hasattr(value, "__len__") or len(value) != self.objects:
                raise ValueError(f"{what} must hold {self.objects} poses (cubes, 3) or (cubes, 7): each cube's "
                                 f"position, or position + quaternion x, y, z, w; got {value!r}")
            poses, extents = [], []
            for i, row in enumerate(value):
                try:
                    row = np.asarray(row, dtype=np.float64)
                except (TypeError, ValueError) as exc:
                    raise ValueError(f"{what}[{i}] must be numbers: {exc}") from None
                position, quat, extent = self.parse_cube_pose(row, f"{what}[{i}]", f"cube {i}")
                for j, ((other, _), other_extent) in enumerate(zip(poses, extents)):
                    check_clear_of_boxes(position, extent, other[None], other_extent[None],
                                         f"{what} puts cubes {j} and {i} inside each other (their rotated boxes "
                                         "overlap)")
                poses.append((position, quat))
                extents.append(extent)
            options["object_poses"] = poses
        return options

    def apply_options(self, options, goal, positions, quats) -> None:
        if "goal" in options:
            goal[:] = options["goal"]
        for i, (position, quat) in enumerate(options.get("object_poses", ())):
            positions[i], quats[i] = position, quat

    def place_objects(self, scene, positions, quats, worlds) -> None:
        scene.set_actor_poses(self.cubes, positions, quats, worlds=worlds)

    # --- observation ---------------------------------------------------------------------------------------------
    def observation(self, scene, robot: dict) -> dict:
        pos = scene.get_actor_translations(self.cubes)
        lin, ang = scene.get_actor_velocities(self.cubes)
        rot = scene.get_actor_rotations(self.cubes)
        spin = V_MAX / self.half
        parts = {}
        for i, name in enumerate(self.names):
            parts.update({name: pos[:, i], f"{name}_rel_grip": pos[:, i] - robot["grip"],
                          f"{name}_rotation": mochi.lie.log_so3(rot[:, i]),
                          f"{name}_velocity": clip(lin[:, i], -V_MAX, V_MAX),
                          f"{name}_spin": clip(ang[:, i], -spin, spin)})
        return parts

    def observed_objects(self):
        return [(name, cube, V_MAX / self.half) for name, cube in zip(self.names, self.cubes)]

    def observation_bounds(self, robot: dict) -> dict:
        one = super().observation_bounds(robot)
        return {f"{name}{part[4:]}": bounds for name in self.names for part, bounds in one.items()}

    # --- reward ----------------------------------------------------------------------------------------------------
    def reward_terms(self, achieved_goal, desired_goal, dense: bool) -> dict:
        if not dense:
            return super().reward_terms(achieved_goal, desired_goal, dense)
        a = np.asarray(achieved_goal).reshape(*np.shape(achieved_goal)[:-1], self.objects, 3)
        d = np.asarray(desired_goal).reshape(a.shape)
        dist = np.linalg.norm(a - d, axis=-1)
        placed = np.cumprod(dist < self.config.distance_threshold_m, axis=-1)  # the tower from the bottom up
        terms = {}
        for i in range(self.objects):
            terms[f"place_{i}"] = -dist[..., i]
            terms[f"lift_{i}"] = -np.maximum(0.0, d[..., i, 2] - a[..., i, 2])
        terms["stage"] = -STAGE_PENALTY * (self.objects - placed.sum(axis=-1))
        return terms
