"""The Robot interface: what a task may ask of a robot, and what the worlds (envs/core/worlds.py) drive it through.

A robot is built from its config (``make_config`` maps its ``gym.make`` kwargs); tasks receive the robot and read
only what this interface declares (its reach envelope, its grasp, the room its bodies take around the grip point,
its drive force), never its config or private fields, so a task runs unchanged on any robot that implements it
(tests/test_robot_interface.py checks both: every task module's reads of a robot, and a robot of another shape).
All arrays have a leading world axis W.

The *grip point* is the point between the closed finger tips; actions move it, observations report it and the
tasks' success and rewards are measured from it.
"""

from __future__ import annotations

import abc

import numpy as np


class Robot(abc.ABC):
    """A robot of a task's worlds. Subclasses set ``action_dim`` (the action is ``Box(-1, 1, (action_dim,))``),
    ``observation_parts`` (the names of ``observation``'s parts, in order) and ``appended_observation_parts`` (those
    of its parts the worlds append to every task's observation: the robot's own state no task lays out, such as an
    arm's joints); ``build`` sets ``colors`` (actor name -> RGB, for pictures). ``render_camera``: `default_camera`
    keyword overrides of ``render()``'s view, over the task's, for a robot its framing does not show whole (camera
    observations keep the task's view)."""

    action_dim: int
    observation_parts: tuple
    appended_observation_parts: tuple = ()
    render_camera: dict = {}
    colors: dict

    def __init__(self, config):
        self.config = config

    @staticmethod
    @abc.abstractmethod
    def make_config(**kwargs):
        """The robot's config from its ``gym.make`` kwargs (a clear error naming a bad one)."""

    def clone(self) -> "Robot":
        """A new, unbuilt robot of the same class and config (the worlds build copies of themselves with it)."""
        return type(self)(self.config)

    def configuration(self) -> tuple:
        """What this robot is, for the worlds' state checks: its class name and config."""
        return type(self).__name__, self.config

    def wrist_camera(self):
        """A camera the robot carries, per world: (eye (W, 3), target (W, 3), up (W, 3)) [m] in the world, or None
        (no wrist camera: ``camera="wrist"`` is refused)."""
        return None

    # --- what a task may read --------------------------------------------------------------------------------------
    @abc.abstractmethod
    def workspace(self) -> tuple[np.ndarray, np.ndarray]:
        """The grip point's reach envelope: (low (3,), high (3,)) [m], z above the table top at 0. Commands are
        clipped to it; a task's goals and homes must lie inside it."""

    @property
    @abc.abstractmethod
    def max_opening_m(self) -> float:
        """The widest object the fingers close on [m]."""

    @property
    @abc.abstractmethod
    def drive_max_force_n(self) -> float | None:
        """The most force [N] the robot's drives push an object with (None: uncapped)."""

    @abc.abstractmethod
    def footprint_m(self) -> float:
        """The horizontal radius [m] around the grip point that the closed hand's bodies cover at the table."""

    @abc.abstractmethod
    def reach_margin_m(self) -> float:
        """How far [m] the robot's bodies reach horizontally beyond the grip point, open or closed."""

    @abc.abstractmethod
    def boxes_at(self, grip_point: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The closed hand's bodies with the grip point at ``grip_point`` (3,), as axis-aligned boxes: centres (B, 3)
        and half extents (B, 3) [m] (tasks check that objects do not start inside them)."""

    @abc.abstractmethod
    def check_home(self, home: np.ndarray) -> None:
        """Refuse (ValueError) a home grip point the robot cannot hold."""

    # --- scene ----------------------------------------------------------------------------------------------------
    @abc.abstractmethod
    def build(self, scene, layer: str = "gripper") -> None:
        """Create the robot's actors and drives in ``scene`` (after the task's contents)."""

    @abc.abstractmethod
    def place(self, grip_point: np.ndarray, opening: np.ndarray, worlds: np.ndarray) -> None:
        """Teleport the robot at rest with its grip point at ``grip_point`` (K, 3), fingers ``opening`` (K,) [m],
        in ``worlds``, its drive targets with it."""

    # --- commands (the robot's part of the state) -----------------------------------------------------------------
    @abc.abstractmethod
    def start_commands(self, num_worlds: int, home: np.ndarray, control_dt: float = 0.04) -> None:
        """Commands for ``num_worlds`` worlds at ``home``; ``control_dt``: the control step [s]."""

    @abc.abstractmethod
    def reset_commands(self, worlds: np.ndarray) -> None:
        """The commands of ``worlds`` back to home, fingers closed."""

    @abc.abstractmethod
    def begin_action(self, actions: np.ndarray, fractions=()) -> None:
        """The control step's commands from finite (W, action_dim) actions; ``fractions``: the substeps' ends."""

    @abc.abstractmethod
    def drive(self, fraction: float) -> None:
        """Set the drive targets ``fraction`` of the way through the control step (before each substep)."""

    @abc.abstractmethod
    def end_action(self) -> None:
        """The control step's end commands become the current ones."""

    @abc.abstractmethod
    def step_commands(self, worlds: np.ndarray) -> tuple:
        """The current control step's commands of ``worlds`` (copies), for `set_step_commands`."""

    @abc.abstractmethod
    def set_step_commands(self, commands: tuple) -> None:
        """Make a `step_commands` this robot's control step."""

    @abc.abstractmethod
    def get_state(self) -> dict:
        """The commands (copies), the robot's part of the worlds' state."""

    @abc.abstractmethod
    def check_state(self, state) -> dict:
        """A `get_state` checked against these worlds (ValueError naming the part that does not fit)."""

    @abc.abstractmethod
    def set_state(self, state: dict) -> None:
        """Restore a checked `get_state`."""

    # --- observation ----------------------------------------------------------------------------------------------
    @abc.abstractmethod
    def grip_point(self) -> tuple[np.ndarray, np.ndarray]:
        """Measured grip point (W, 3) [m] and its velocity (W, 3) [m/s]."""

    @abc.abstractmethod
    def observation(self) -> dict:
        """The robot's observation parts, ``observation_parts`` in order, each (W, n)."""

    @abc.abstractmethod
    def observation_bounds(self) -> dict:
        """Real bounds (low, high) of each observation part."""

    def observed_fingers(self):
        """(finger actors, the grip point's offset from their mean root translation (3,)) when the worlds may
        compute `observation` compiled (envs/core/kernels.py); None (the default) keeps the numpy ``observation``."""
        return None
