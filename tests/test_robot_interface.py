"""The Robot interface (envs/robots/base.py): tasks read a robot only through it, and a robot of another shape
changes what the tasks derive from it."""

import ast
import pathlib

import numpy as np
import pytest

from superdex_gym.envs.robots.base import Robot
from superdex_gym.envs.robots.floating_gripper import FloatingGripper
from superdex_gym.envs.tasks.push import PushTask as Push
from superdex_gym.envs.tasks.reach import ReachTask as Reach
from superdex_gym.envs.tasks.throw import ThrowTask as Throw

ROOT = pathlib.Path(__file__).resolve().parents[1]
DECLARED = {name for name in dir(Robot) if not name.startswith("_")} | set(Robot.__annotations__)


def _robot_reads(path: pathlib.Path):
    """(line, attribute) of every ``robot.X`` / ``self.robot.X`` in a module."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Attribute):
            base = node.value
            if (isinstance(base, ast.Name) and base.id == "robot") or (
                    isinstance(base, ast.Attribute) and base.attr == "robot"):
                yield node.lineno, node.attr


@pytest.mark.parametrize("folder", ["envs/tasks", "envs/core", "envs/scripted", "envs/rendering"])
def test_tasks_and_worlds_read_a_robot_only_through_the_interface(folder):
    bad = [f"{p.relative_to(ROOT)}:{line} robot.{attr}" for p in sorted((ROOT / folder).glob("*.py"))
           for line, attr in _robot_reads(p) if attr not in DECLARED - {"config"}]
    assert bad == []


def test_the_floating_gripper_implements_every_abstract_method():
    assert issubclass(FloatingGripper, Robot)
    assert not FloatingGripper.__abstractmethods__
    robot = FloatingGripper(FloatingGripper.make_config())
    lo, hi = robot.workspace()
    lo[:] = 99.0  # a copy: the robot's envelope is its own
    assert np.all(robot.workspace()[0] < 1.0) and np.all(hi > robot.workspace()[0])
    assert robot.clone().config == robot.config and robot.clone() is not robot


class _WideGripper(FloatingGripper):
    """The floating gripper with a narrower reach envelope and a wider hand: what the tasks derive must follow."""

    def workspace(self):
        return np.array([-0.1, -0.1, 0.005]), np.array([0.1, 0.1, 0.2])

    @property
    def max_opening_m(self):
        return 0.03

    def reach_margin_m(self):
        return 0.2


def test_tasks_follow_the_robot_they_are_given():
    robot = _WideGripper(FloatingGripper.make_config())
    with pytest.raises(ValueError, match="gripper's opening 0.03 m"):
        Push(Push.make_config(), robot)  # the default 4 cm cube no longer fits the hand
    push = Push(Push.make_config(cube_size=0.02), robot)
    lo, hi = push.goal_region()
    assert lo[0] == -0.1 and hi[1] == 0.1
    assert push.escape_speed_m_s() > Push(Push.make_config(), FloatingGripper(FloatingGripper.make_config())
                                          ).escape_speed_m_s()  # a lower workspace top: more room to the walls
    throw = Throw(Throw.make_config(cube_size=0.02), robot)
    assert throw.reach_margin_m == 0.2 and throw.reach_m == pytest.approx(0.3)
    with pytest.raises(ValueError, match="must lie in the workspace"):
        Reach(Reach.make_config(goal_range=0.3), robot)
