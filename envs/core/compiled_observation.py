"""The observation dict of `RobotTaskWorlds` in one compiled call, for the floating gripper and the objects'
standard parts (`Task.observed_objects`): the same float32 values as the robot's and task's numpy parts."""

from __future__ import annotations

import numpy as np

import superdex_gym.sim as mochi
from superdex_gym.sim.jit import kernel_array

from . import kernels as obs_kernels
from .config import V_MAX


def _defined_in(cls, name):
    return next(c for c in cls.__mro__ if name in c.__dict__)


def _compiled_observation(robot, task):
    """A `_CompiledObservation` when the robot's parts are two fingers' (`Robot.observed_fingers`: the floating
    gripper's) and the task's parts are the objects' standard ones (`Task.observed_objects`, declared where
    ``observation`` is defined or below), else None."""
    finger_spec = robot.observed_fingers()
    objects = task.observed_objects()
    if finger_spec is None or objects is None or robot.appended_observation_parts:
        return None
    if not issubclass(_defined_in(type(task), "observed_objects"), _defined_in(type(task), "observation")):
        return None  # a subclass redefined observation only: its own parts
    codes = {**obs_kernels.ROBOT_PARTS}
    for k, (name, _, _) in enumerate(objects):
        codes.update({(name + suffix): (code, k) for suffix, code in obs_kernels.OBJECT_PARTS.items()})

    def table(names):
        rows, col = [], 0
        for part in names:
            code = codes.get(part)
            if code is None:
                return None, 0
            code, k = code if isinstance(code, tuple) else (code, 0)
            rows.append((code, k, col))
            col += obs_kernels.PART_WIDTH[code]
        return np.array(rows, dtype=np.int64).reshape(-1, 3), col

    layout, width = table(task.observation_layout)
    goal_layout, goal_width = table(task.achieved_goal_parts)
    if layout is None or goal_layout is None:
        return None
    return _CompiledObservation(finger_spec, objects, layout, width, goal_layout, goal_width)


class _CompiledObservation:
    """The observation dict in one kernel call (`kernels.observe_gripper_objects`): the same float32 values as the
    robot's and task's ``observation`` parts (tests/test_env_kernels.py); rotations near pi (the rotation vector's
    quaternion route) are redone in numpy for the worlds that have them."""

    def __init__(self, finger_spec, objects, layout, width, goal_layout, goal_width):
        self.fingers, tip = finger_spec
        self.tip = np.asarray(tip, dtype=np.float64)
        self.objects = [actor for _, actor, _ in objects]
        self.spin = np.array([spin for _, _, spin in objects], dtype=np.float64)
        self.layout, self.width, self.goal_layout, self.goal_width = layout, width, goal_layout, goal_width
        self._model = None  # the scene's model the rows below are of

    def observe(self, scene, goal) -> dict:
        model = scene.get_model()
        if model is not self._model:
            com_local = model.bodies.com_local
            self.finger_rows = scene.get_actor_rows(self.fingers)
            self.object_rows = scene.get_actor_rows(self.objects)
            self.finger_com_local = kernel_array(com_local[self.finger_rows])
            self.object_com_local = kernel_array(com_local[self.object_rows].reshape(-1, 3))
            self._model = model
        cur = scene.current_kinematics()  # read only
        com, rot, lin, ang = (kernel_array(a) for a in (cur.com_position, cur.rotation, cur.linear_velocity,
                                                          cur.angular_velocity))
        num_worlds = com.shape[0]
        obs = np.empty((num_worlds, self.width), dtype=np.float32)
        achieved = np.empty((num_worlds, self.goal_width), dtype=np.float32)
        k = len(self.objects)
        near_pi = np.empty((num_worlds, k), dtype=bool)
        if obs_kernels.observe_gripper_objects(
                com, rot, lin, ang, self.finger_rows, self.finger_com_local, self.tip, V_MAX, self.object_rows,
                self.object_com_local, self.spin, self.layout, self.goal_layout, obs, achieved,
                np.empty((num_worlds, k, 3)), near_pi):
            self._near_pi_rotations(rot, near_pi, obs, achieved)
        return {"observation": obs, "achieved_goal": achieved, "desired_goal": goal.astype(np.float32)}

    def _near_pi_rotations(self, rot, near_pi, obs, achieved) -> None:
        """The rotation vectors the kernel marked (angle near pi) by `lie.log_so3`'s quaternion route, as the
        task's numpy part computes them, into their columns."""
        for table, out in ((self.layout, obs), (self.goal_layout, achieved)):
            for code, k, col in table:
                if code == obs_kernels.OBJECT_ROTATION and near_pi[:, k].any():
                    worlds = np.flatnonzero(near_pi[:, k])
                    out[worlds, col:col + 3] = mochi.lie.log_so3(rot[worlds, self.object_rows[k]])
