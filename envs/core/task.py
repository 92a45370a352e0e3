"""The Task interface (panda-gym's ``Task``): what differs between tasks on one robot and one shared scene.

A task is built from its config and the robot (it may check the robot's geometry) and then:

* ``build(scene)``: creates the scene contents beyond the robot (table, objects, walls), before the robot;
* ``robot_home()``: where the robot's grip point starts every episode;
* ``sample_episode(rng)``: a goal and the objects' start positions from one world's generator; ``reset_options``
  names the ``reset(options=...)`` keys it takes (``"goal"`` is checked by the worlds against the goal bounds;
  the others by ``parse_options``, before anything changes);
* ``observation_layout``: the observation as named parts, the robot's and the task's (``observation`` computes
  the task's from the scene, ``observation_bounds`` gives real bounds for them); ``achieved_goal_parts`` the
  parts whose concatenation is the achieved goal (so the goal bounds are theirs);
* goals of any shape: ``objects`` goal blocks of 3 (positions), success per object (each within
  ``distance_threshold_m`` of its goal), ``reward_terms`` whose sum is the reward (vectorized over leading axes);
* ``goal_markers(goal)`` for pictures, ``colors`` (actor name -> RGB) for the actors it creates.

Episode length is the registration table's (``envs/__init__.py``): ``gym.register`` needs it without importing
the engine.
"""

from __future__ import annotations

import numpy as np

from superdex_gym.sim.validation import real_array


class Task:
    name = "task"
    objects = 1  # goal blocks of 3: one position per object
    reset_options = ("goal",)
    observation_layout: tuple = ()
    achieved_goal_parts: tuple = ()
    colors: dict = {}
    camera: dict = {}  # `default_camera` keyword overrides for this task's pictures (a wider view, another target)

    def __init__(self, config, robot):
        self.config = config.validate()
        self.robot = robot

    @property
    def goal_shape(self) -> tuple:
        return (3 * self.objects,)

    # --- scene and episodes (each task defines them) ---------------------------------------------------------------
    def build(self, scene) -> None:
        raise NotImplementedError

    def robot_home(self) -> np.ndarray:
        raise NotImplementedError

    def escape_speed_m_s(self) -> float:
        """The speed [m/s] above which a body could leave the arena (inf: the task has nothing that can); the
        worlds undo a substep that leaves a body faster and truncate that episode."""
        return float("inf")

    def sample_episode(self, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """(goal ``goal_shape``, object positions (objects, 3)); objects start upright (identity rotation)."""
        raise NotImplementedError

    def parse_options(self, options: dict) -> dict:
        """Task-specific reset options, validated (ValueError names the option); ``"goal"`` is already checked."""
        return options

    def apply_options(self, options: dict, goal: np.ndarray, positions: np.ndarray, quats: np.ndarray) -> None:
        """Write parsed options over one sampled episode (arrays of one world, edited in place)."""
        if "goal" in options:
            goal[:] = options["goal"]

    def place_objects(self, scene, positions: np.ndarray, quats: np.ndarray, worlds: np.ndarray) -> None:
        """Object poses (K, objects, 3) / (K, objects, 4) in ``worlds``; a task without objects has none to place."""

    def place_scenery(self, scene, goals: np.ndarray, worlds: np.ndarray) -> None:
        """Move goal-dependent static actors (a bin) to the episode's goals (K, goal) in ``worlds``; most have none."""

    # --- observation -------------------------------------------------------------------------------------------------
    def observation(self, scene, robot: dict) -> dict:
        """The task's observation parts (W, n) from the scene, given the robot's parts ``robot``."""
        return {}

    def observation_bounds(self, robot: dict) -> dict:
        """Real bounds (low, high) of the task's observation parts, given the robot's."""
        return {}

    def observed_objects(self):
        """[(name, actor, spin bound [rad/s])] when `observation` is the objects' standard parts (per object
        ``name``, ``name_rel_grip``, ``name_rotation``, ``name_velocity``, ``name_spin``, as `PushTask`'s), which
        the worlds then compute in one compiled call (envs/core/kernels.py); None: only ``observation`` knows them.
        A class that redefines ``observation`` must redefine this too, or its ``observation`` is what runs."""
        return None

    def step_infos(self, scene) -> dict:
        """Task-specific info entries: name -> (W,) array of scalars per world (e.g. a landing point)."""
        return {}

    # --- goals, success, reward (vectorized over leading batch axes) ----------------------------------------------------
    def distances(self, achieved_goal, desired_goal) -> np.ndarray:
        """Distance [m] of each object to its goal: (..., objects)."""
        a, d = np.asarray(achieved_goal), np.asarray(desired_goal)
        diff = (a - d).reshape(*a.shape[:-1], self.objects, 3)
        return np.sqrt(np.add.reduce(diff * diff, axis=-1))  # np.linalg.norm's arithmetic, without its wrapper

    def distance(self, achieved_goal, desired_goal) -> np.ndarray:
        """The farthest object's distance [m] (...): the one success waits for."""
        return self.distances(achieved_goal, desired_goal).max(axis=-1)

    def is_success(self, achieved_goal, desired_goal) -> np.ndarray:
        """Every object within ``distance_threshold_m`` of its goal (not one norm over the stacked goal)."""
        return self._success_of(self.distances(achieved_goal, desired_goal))

    def _success_of(self, distances: np.ndarray) -> np.ndarray:
        return np.logical_and.reduce(distances < self.config.distance_threshold_m, axis=-1)

    def reward_terms(self, achieved_goal, desired_goal, dense: bool) -> dict:
        """Named reward terms (...) whose sum is the reward. Sparse: ``success`` -1 until every object is within the
        success radius, then 0; dense: ``distance`` -(sum of the objects' distances) [m]."""
        if dense:
            return _dense_terms(self.distances(achieved_goal, desired_goal))
        return _sparse_terms(self.is_success(achieved_goal, desired_goal))

    def step_evaluation(self, achieved_goal, desired_goal, dense: bool) -> tuple[dict, np.ndarray, np.ndarray]:
        """(`reward_terms`, `is_success`, `distance`) of a step's goals. With this class's definitions of the three,
        from one `distances` (the same operations, so the same values); a task that redefines any of them gets
        them called."""
        cls = type(self)
        if not (cls.reward_terms is Task.reward_terms and cls.is_success is Task.is_success
                and cls.distance is Task.distance):
            return (self.reward_terms(achieved_goal, desired_goal, dense), self.is_success(achieved_goal, desired_goal),
                    self.distance(achieved_goal, desired_goal))
        d = self.distances(achieved_goal, desired_goal)
        success = self._success_of(d)
        return _dense_terms(d) if dense else _sparse_terms(success), success, np.maximum.reduce(d, axis=-1)

    def compute_reward(self, achieved_goal, desired_goal, dense: bool) -> np.ndarray:
        achieved_goal = self.checked_goals(achieved_goal, "achieved_goal")
        desired_goal = self.checked_goals(desired_goal, "desired_goal")
        try:
            np.broadcast_shapes(np.shape(achieved_goal), np.shape(desired_goal))
        except ValueError:
            raise ValueError(f"achieved_goal and desired_goal batches do not match (one desired goal per achieved "
                             f"one, or one for all): {np.shape(achieved_goal)} and {np.shape(desired_goal)}") from None
        terms = list(self.reward_terms(achieved_goal, desired_goal, dense).values())
        return np.sum(terms, axis=0).astype(np.float32)

    def checked_goals(self, goals, name: str) -> np.ndarray:
        """(..., goal) finite real goals (a NaN goal would read as -1 or 0 with no success to match)."""
        arr = real_array(goals, name)
        if arr.ndim == 0 or arr.shape[-1] != self.goal_shape[0]:
            raise ValueError(f"{name} must have shape (..., {self.goal_shape[0]}), got {arr.shape}")
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{name} contains NaN or inf")
        return np.asarray(goals)  # its own dtype: rewards of float32 goals are computed in float32, as in step()

    def goal_markers(self, goal: np.ndarray) -> list:
        """(position (3,), radius [m]) of each goal's marker sphere in pictures."""
        return [(g, self.marker_radius_m) for g in np.asarray(goal).reshape(self.objects, 3)]


def _dense_terms(distances: np.ndarray) -> dict:
    return {"distance": -distances.sum(axis=-1)}


def _sparse_terms(success: np.ndarray) -> dict:
    return {"success": -(~success).astype(np.float64)}


def check_goals_reachable(config) -> None:
    """Sampled goals must be able to lie outside the success radius: goal_range_m >= 2 x distance_threshold_m."""
    if config.goal_range_m < 2 * config.distance_threshold_m:
        raise ValueError("goal_range_m must be at least twice distance_threshold_m (goals must be reachable "
                         "outside the success radius)")
