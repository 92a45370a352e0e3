"""`RobotTaskWorlds`: W worlds of one robot + task in one engine scene, advanced by one engine call per substep.

This is the core of the single environment (W = 1), the native vector environment and the SB3 VecEnv: every
per-world operation (reset, action, observation, reward) is written once, vectorized over worlds, so a batch of N
worlds behaves exactly like N single environments with the same seeds and actions. It owns the scene and its
solver settings, the template every reset starts from, the substep loop, the goals and the state; the robot
(``robots/``) and the task (``tasks/``) say what is in the scene and how it is observed.
"""

from __future__ import annotations

import numpy as np

import superdex_gym.sim as mochi
from superdex_gym.sim.validation import real_array

from .compiled_observation import _compiled_observation
from .config import V_MAX, WorldConfig, finite_array
from .state_checks import check_memory, configuration_difference
from .kernels import guard_substep


ARTICULATED = mochi.ActorType.ARTICULATED
_STOPPED = mochi.ConvergenceStatus.STOPPED.value
_DIVERGED = mochi.ConvergenceStatus.DIVERGED.value


class RobotTaskWorlds:
    def __init__(self, num_worlds: int, config: WorldConfig, robot, task):
        self.config = config.validate()
        self.num_worlds = int(num_worlds)
        self.robot, self.task = robot, task
        home = np.asarray(task.robot_home(), dtype=np.float64)
        robot.check_home(home)
        scene = mochi.create_scene(f"SuperDex {task.name}")
        scene.set_step_warnings(False)  # a diverged or tunnelled world is reported in info and truncated instead
        config.apply(scene)
        self.scene = scene
        task.build(scene)  # the task's actors first: their order in the scene is part of the seeded trajectories
        robot.build(scene)
        # One world at rest at home: the template every reset starts from.
        robot.place(home[None], np.zeros(1), np.arange(1))
        self._template = scene.snapshot()
        check_memory(self.num_worlds, self._template)
        scene.set_num_worlds(self.num_worlds)
        robot.start_commands(self.num_worlds, home, self.config.control_dt)
        self._home = home
        self.goal = np.zeros((self.num_worlds, *task.goal_shape))
        self.physics = physics_report(self.num_worlds)
        self._shadow = None  # `_refinement_worlds`, built at the first refinement
        # the bodies with rows in the scene's state: an articulated actor's links are listed, the actor holds none
        self.bodies = [a for a in scene.get_actors() if a.get_type() != ARTICULATED]
        self._dynamic = [a for a in self.bodies if not a.is_static()]
        self._escape_speed = task.escape_speed_m_s()
        robot_bounds = robot.observation_bounds()
        self._bounds = {**robot_bounds, **task.observation_bounds(robot_bounds)}
        # the task's parts, then the robot's own state that no task lays out (an arm's joints)
        self.observation_layout = tuple(task.observation_layout) + tuple(robot.appended_observation_parts)
        missing = set(self.observation_layout) - set(self._bounds)
        if missing:
            raise ValueError(f"task {task.name!r} lays out observation parts nobody provides: {sorted(missing)}")
        self._compiled_obs = _compiled_observation(robot, task)

    # --- reset ---------------------------------------------------------------------------------------------------
    def reset_worlds(self, worlds: np.ndarray, rngs: list, options: dict | None = None) -> None:
        """Fresh episodes in ``worlds`` (K,), each sampled from its own generator ``rngs[k]``.

        ``options`` (single-world resets; the task's ``reset_options``) override the sampled values. Every option
        is checked (`check_options`) before anything changes (a bad one raises ValueError and leaves the world and
        its generator as they were; the env checks them before it seeds, too); the episode is always sampled, so
        an option leaves the generator's stream as it is."""
        worlds = np.asarray(worlds, dtype=np.int64)
        if worlds.size == 0:
            return
        options = self.check_options(worlds, options)
        n = self.task.objects
        positions, quats = np.zeros((worlds.size, n, 3)), np.tile([0.0, 0.0, 0.0, 1.0], (worlds.size, n, 1))
        for k, rng in enumerate(rngs):
            self.goal[worlds[k]], positions[k] = self.task.sample_episode(rng)
        if options:
            self.task.apply_options(options, self.goal[worlds[0]], positions[0], quats[0])
        self.scene.restore_snapshot(self._template, worlds=worlds)
        for value in self.physics.values():
            value[worlds] = 0  # nothing stepped yet in the new episode
        self.robot.reset_commands(worlds)
        self.task.place_objects(self.scene, positions, quats, worlds)
        self.task.place_scenery(self.scene, self.goal[worlds], worlds)

    def check_options(self, worlds: np.ndarray, options: dict | None) -> dict:
        """Reset ``options`` validated and parsed for `reset_worlds` (ValueError names the option)."""
        if options is not None and not isinstance(options, dict):
            raise TypeError(f"options must be a dict or None, got {type(options).__name__}")
        options = dict(options or {})
        supported = self.task.reset_options
        unknown = set(options) - set(supported)
        if unknown:
            raise ValueError(f"unknown reset options {sorted(unknown)}; supported: {', '.join(map(repr, supported))}")
        if options and worlds.size != 1:
            raise ValueError("reset options apply to one world at a time")
        if "goal" in options:
            goal = finite_array(options["goal"], self.task.goal_shape, "options['goal']")
            low, high = self.goal_bounds_float32()
            if np.any(goal < low) or np.any(goal > high):
                raise ValueError(f"options['goal'] {goal.tolist()} lies outside the desired_goal bounds "
                                 f"{low.tolist()} .. {high.tolist()}")
            options["goal"] = goal
        return self.task.parse_options(options)

    # --- actions -------------------------------------------------------------------------------------------------
    def apply_actions(self, actions: np.ndarray) -> None:
        """Validate and apply (W, action_dim) actions, then advance every world by one control step."""
        actions = real_array(actions, "actions")
        if actions.shape != (self.num_worlds, self.robot.action_dim):
            raise ValueError(f"actions must have shape ({self.num_worlds}, {self.robot.action_dim}), "
                             f"got {actions.shape}")
        if not np.logical_and.reduce(np.isfinite(actions), axis=None):
            bad = np.argwhere(~np.isfinite(actions))[0]
            raise ValueError(f"action contains NaN or inf (world {bad[0]}, component {bad[1]}); nothing was stepped")
        n, dt = self.config.substeps, self.config.physics_dt
        self.robot.begin_action(actions, tuple(j / n for j in range(1, n + 1)))  # the substeps' ends, as below
        splits = (self.config.substep_refinement, self.config.tunnelling_refinement)
        report = self._refined_step(dt, 0.0, 1.0 / n, splits)  # fresh arrays: kept as is
        for j in range(2, n + 1):
            merge_reports(report, self._refined_step(dt, (j - 1) / n, j / n, splits))
        self.robot.end_action()
        self.physics = report

    def _refined_step(self, dt: float, start: float, end: float, splits: tuple) -> dict:
        """One guarded substep of ``dt`` with the drive targets at ``end`` of the control step; a world whose
        Newton solve stopped at its cap, or whose step the guard undid for tunnelling (ratio >= 1), is then redone
        from the substep's start as two guarded half substeps (targets at the midpoint, then at ``end``), nested
        ``splits`` = (stopped, tunnelled) times. Only those worlds are redone (in `_refinement_worlds`, a copy of
        these worlds' scene sized to them), so every world's result depends on that world alone and a batch pays
        for its refined worlds only. Returns the substep's `physics_report`."""
        self.robot.drive(end)
        before = self.scene.step_snapshot()  # the undo point; the halves start from it too
        record = self._guarded_step(dt, before)
        stopped, tunnelled = splits
        refine = np.zeros(self.num_worlds, dtype=bool)
        if stopped:
            refine |= record["stopped_substeps"] > 0
        if tunnelled:
            refine |= record["tunnelling_ratio"] >= 1.0
        refine = np.flatnonzero(refine)
        if len(refine) == 0:
            return record
        splits = (max(stopped - 1, 0), max(tunnelled - 1, 0))
        shadow = self._refinement_worlds(len(refine))
        local = np.arange(len(refine))
        shadow.scene.restore_snapshot(before, worlds=local, source_worlds=refine)
        shadow.robot.set_step_commands(self.robot.step_commands(refine))
        middle = 0.5 * (start + end)
        halves = physics_report(len(refine))
        merge_reports(halves, shadow._refined_step(0.5 * dt, start, middle, splits))
        merge_reports(halves, shadow._refined_step(0.5 * dt, middle, end, splits))
        self.scene.restore_snapshot(shadow.scene.snapshot(), worlds=refine, source_worlds=local)
        halves["refined_substeps"] += 1
        for key, value in record.items():
            value[refine] = halves[key]
        return record

    def _refinement_worlds(self, num_worlds: int) -> "RobotTaskWorlds":
        """Worlds of the same robot, task and settings (built once, resized to ``num_worlds``) in which stopped
        substeps are redone: the engine steps whole scenes, and this one holds only the worlds being refined."""
        shadow = self._shadow
        if shadow is None:
            robot = self.robot.clone()
            task = type(self.task)(self.task.config, robot)
            shadow = self._shadow = RobotTaskWorlds(num_worlds, self.config, robot, task)
        elif shadow.num_worlds != num_worlds:
            shadow._resize(num_worlds)
        return shadow

    def _resize(self, num_worlds: int) -> None:
        """``num_worlds`` worlds, each a copy of world 0, with every per-world array of these worlds (goals,
        commands, physics report) at the new size (a refinement copy's worlds are restored from a snapshot and
        given their commands before they step)."""
        self.scene.set_num_worlds(num_worlds)
        self.num_worlds = int(num_worlds)
        self.goal = np.repeat(self.goal[:1], num_worlds, axis=0)
        self.robot.start_commands(num_worlds, self._home, self.config.control_dt)
        self.physics = physics_report(num_worlds)

    def _guarded_step(self, dt: float, before=None) -> dict:
        """One engine step; a world whose step moved a body past the middle of a static collider (tunnelling ratio
        >= 1, sim/tunnelling.py) or left one faster than the task's escape speed (it could clear the walls) is put
        back where the step started, so nothing passes through or over a wall, the table or the floor. Returns the
        step's `physics_report` (status, ratio, undone); ``before``: a snapshot of the scene as it is, if the caller
        took one."""
        scene, num_worlds = self.scene, self.num_worlds
        before = scene.step_snapshot() if before is None else before
        scene.step(dt)  # its warnings are off (set_step_warnings): reported per world in info instead
        status = scene.get_world_status()  # copies: the record owns them
        ratio = scene.get_tunnelling_ratio()
        stopped, diverged = np.empty(num_worlds, dtype=np.int64), np.empty(num_worlds, dtype=np.int64)
        undo, physics_diverged = np.empty(num_worlds, dtype=bool), np.empty(num_worlds, dtype=bool)
        if guard_substep(status, ratio, scene.get_actor_velocities(self._dynamic)[0], self._escape_speed, _STOPPED,
                         _DIVERGED, stopped, diverged, undo, physics_diverged):
            scene.restore_snapshot(before, worlds=np.flatnonzero(undo))
        return physics_report(num_worlds, solver_status=status, stopped_substeps=stopped, diverged_substeps=diverged,
                              tunnelling_ratio=ratio, physics_diverged=physics_diverged)

    def physics_infos(self) -> dict:
        """The last control step's `physics_report` (copies; zeros for worlds reset since)."""
        return {k: v.copy() for k, v in self.physics.items()}

    # --- observations --------------------------------------------------------------------------------------------
    def observations(self) -> dict:
        """Goal-conditioned observation dict of float32 arrays with a leading world axis."""
        if self._compiled_obs is not None:
            return self._compiled_obs.observe(self.scene, self.goal)
        return self.numpy_observations()

    def numpy_observations(self) -> dict:
        """`observations` from the robot's and the task's ``observation`` parts (the compiled one's oracle)."""
        parts = self.robot.observation()
        parts.update(self.task.observation(self.scene, parts))
        obs = np.concatenate([parts[k] for k in self.observation_layout], axis=1)
        achieved = np.concatenate([parts[k] for k in self.task.achieved_goal_parts], axis=1)
        return {
            "observation": obs.astype(np.float32),
            "achieved_goal": achieved.astype(np.float32),
            "desired_goal": self.goal.astype(np.float32),
        }

    def observation_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Real bounds of the ``observation`` vector (float32): its parts' bounds in the task's layout."""
        return self._concatenated_bounds(self.observation_layout)

    def goal_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Real bounds of the achieved and desired goals (float32): those of the achieved goal's parts."""
        return self._concatenated_bounds(self.task.achieved_goal_parts)

    def goal_bounds_float32(self) -> tuple[np.ndarray, np.ndarray]:
        """``goal_bounds`` as the observation space holds them, in float64."""
        return tuple(b.astype(np.float64) for b in self.goal_bounds())

    def _concatenated_bounds(self, names) -> tuple[np.ndarray, np.ndarray]:
        low = np.concatenate([self._bounds[k][0] for k in names])
        high = np.concatenate([self._bounds[k][1] for k in names])
        return low.astype(np.float32), high.astype(np.float32)

    # --- state ---------------------------------------------------------------------------------------------------
    def get_state(self) -> dict:
        return {"scene": self.scene.snapshot(), "goal": self.goal.copy(), "robot": self.robot.get_state(),
                "config": self.configuration()}

    def configuration(self) -> tuple:
        """What a state is a state of: the task and robot (classes and configs, e.g. ``cube_mass``) and the physics
        settings; `check_state` refuses a state of another configuration even where the actors are the same."""
        return (type(self.task).__name__, self.task.config, *self.robot.configuration(), self.config)

    def check_state(self, state) -> dict:
        """A `get_state` checked against these worlds (ValueError naming the part that does not fit)."""
        keys = {"scene", "goal", "robot", "config"}
        if not isinstance(state, dict) or set(state) != keys:
            got = sorted(state) if isinstance(state, dict) else type(state).__name__
            raise ValueError(f"state['worlds'] must have keys {sorted(keys)}, got {got}")
        if state["config"] != self.configuration():
            raise ValueError(f"state['worlds'] is a state of another configuration: "
                             f"{configuration_difference(state['config'], self.configuration())}")
        goal = real_array(state["goal"], "state['worlds']['goal']")
        if goal.shape != self.goal.shape or not np.all(np.isfinite(goal)):
            raise ValueError(f"state['worlds']['goal'] must be {self.goal.shape} finite numbers, got shape {goal.shape}")
        self.scene.check_snapshot(state["scene"])
        self._check_speeds(state["scene"])
        robot = self.robot.check_state(state["robot"])
        return {"scene": state["scene"], "goal": goal, "robot": robot}

    def _check_speeds(self, snapshot) -> None:
        """No dynamic body of a snapshot faster than the worlds let one be: the escape speed (a substep leaving one
        faster is undone) or, where the task has none, ``V_MAX``; and none spinning its surface faster than
        ``V_MAX`` (the bound of every velocity in an observation)."""
        rows = self.scene.get_actor_rows(self._dynamic)
        reach = np.array([np.linalg.norm(a.get_shape().vertices - a.get_rigid_center_of_mass_local(), axis=1).max()
                          for a in self._dynamic])
        bound = min(self._escape_speed, V_MAX)
        for i, kin in enumerate(snapshot[1].history):
            for what, speed, limit in (("moves", kin.linear_velocity[:, rows], bound),
                                       ("spins the surface of", kin.angular_velocity[:, rows] * reach[:, None], V_MAX)):
                speed = np.sqrt(np.add.reduce(speed ** 2, axis=-1))
                if speed.size and speed.max() > limit:
                    w, k = np.unravel_index(np.argmax(speed), speed.shape)
                    raise ValueError(f"state['worlds']['scene'] {what} {self._dynamic[k].get_name()!r} (world {w}, "
                                     f"history {i}) at {speed[w, k]:.4g} m/s, above the {limit:.3g} m/s no step "
                                     "reaches")

    def set_state(self, state: dict) -> None:
        """Restore a state that passed `check_state`."""
        self.scene.restore_snapshot(state["scene"])
        self.goal = state["goal"].copy()
        self.robot.set_state(state["robot"])


def physics_report(num_worlds: int, **values) -> dict:
    """Per-world physics of one control step, the env's info keys (zeros before the first step of an episode):

    * ``solver_status``: the worst ``ConvergenceStatus`` value of its substeps (1 CONVERGED, 2 STOPPED: Newton hit
      its iteration cap, 3 DIVERGED: the engine put the world's bodies back at the step start, at rest);
    * ``stopped_substeps`` / ``diverged_substeps``: how many substeps ended STOPPED / DIVERGED (a refined substep
      counts its halves, ``substep_refinement``);
    * ``refined_substeps``: how many substeps stopped and were redone as two halves (nested ones counted too);
    * ``tunnelling_ratio``: the largest of its substeps (sim/tunnelling.py); a substep reaching 1 is undone, and
      so is one that leaves a body faster than the task's escape speed;
    * ``physics_diverged``: a substep diverged or was undone: the step's physics cannot be trusted, and the env
      truncates the episode (instead of carrying on with a frozen world).

    ``values``: arrays (owned, of the key's dtype) to take as they are for some keys; the rest are zeros.
    """
    return {key: values[key] if key in values else np.zeros(num_worlds, dtype=dtype)
            for key, dtype in _REPORT_DTYPES.items()}


_REPORT_DTYPES = {"solver_status": np.int64, "stopped_substeps": np.int64, "diverged_substeps": np.int64,
                  "refined_substeps": np.int64, "tunnelling_ratio": np.float64, "physics_diverged": bool}


def merge_reports(report: dict, step: dict) -> None:
    """Add one substep's `physics_report` ``step`` into ``report``: worst status, counts summed, largest ratio."""
    report["solver_status"] = np.maximum(report["solver_status"], step["solver_status"])
    for key in ("stopped_substeps", "diverged_substeps", "refined_substeps"):
        report[key] += step[key]
    report["tunnelling_ratio"] = np.maximum(report["tunnelling_ratio"], step["tunnelling_ratio"])
    report["physics_diverged"] |= step["physics_diverged"]
