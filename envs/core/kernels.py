"""The worlds' per-step work as compiled calls (`RobotTaskWorlds`, `FloatingGripper`): the guard's verdict after a
substep, the observation, an action's drive targets. Each replaces dozens of small numpy operations, which cost more
than their arithmetic on a few numbers per world; each does that numpy code's operations in its order, and the
numpy code stays as its oracle (tests/test_env_kernels.py) and as the path of robots and tasks it does not cover."""

from __future__ import annotations

import math

import numpy as np

from superdex_gym.sim.jit import inner_kernel, kernel
from superdex_gym.sim.kernels.step import _log_row


@kernel
def guard_substep(status, ratio, linear_velocity, escape_speed, stopped_code, diverged_code, stopped, diverged,
                  undo, physics_diverged):
    """The guard's verdict on one substep, per world w: ``undo[w]`` when the tunnelling ratio reached 1 or the
    fastest of the bodies (``linear_velocity`` (W, D, 3), the dynamic ones) is faster than ``escape_speed``;
    ``stopped[w]`` / ``diverged[w]`` 1 where the status is ``stopped_code`` / ``diverged_code``, else 0;
    ``physics_diverged[w]`` = diverged or undone. Returns whether any world is undone.

    The fastest body's speed is the square root of the largest squared speed (summed as the numpy guard's
    np.einsum sums three terms), a NaN propagating as numpy's maximum does (then no comparison holds)."""
    any_undo = False
    for w in range(status.shape[0]):
        fastest = -1.0
        for k in range(linear_velocity.shape[1]):
            v0, v1, v2 = linear_velocity[w, k, 0], linear_velocity[w, k, 1], linear_velocity[w, k, 2]
            sq = (v0 * v0 + v2 * v2) + v1 * v1  # np.einsum's order for three terms
            if k == 0 or sq > fastest or sq != sq:
                if not fastest != fastest:  # once NaN, it stays NaN
                    fastest = sq
        too_fast = linear_velocity.shape[1] > 0 and math.sqrt(fastest) > escape_speed
        u = ratio[w] >= 1.0 or too_fast
        s = status[w]
        stopped[w] = 1 if s == stopped_code else 0
        diverged[w] = 1 if s == diverged_code else 0
        undo[w] = u
        physics_diverged[w] = u or s == diverged_code
        any_undo = any_undo or u
    return any_undo


# Observation parts the compiled observation writes (`observe_gripper_objects`'s layout codes).
GRIP, FINGERS, GRIP_VELOCITY, FINGER_VELOCITY, OBJECT, OBJECT_REL_GRIP, OBJECT_ROTATION, OBJECT_VELOCITY, \
    OBJECT_SPIN = range(9)
# Each part's suffix after an object's name (the tasks' naming: "cube", "cube_rel_grip", ...) and its width.
OBJECT_PARTS = {"": OBJECT, "_rel_grip": OBJECT_REL_GRIP, "_rotation": OBJECT_ROTATION, "_velocity": OBJECT_VELOCITY,
                "_spin": OBJECT_SPIN}
ROBOT_PARTS = {"grip": GRIP, "fingers": FINGERS, "grip_velocity": GRIP_VELOCITY, "finger_velocity": FINGER_VELOCITY}
PART_WIDTH = {GRIP: 3, FINGERS: 2, GRIP_VELOCITY: 3, FINGER_VELOCITY: 2, OBJECT: 3, OBJECT_REL_GRIP: 3,
              OBJECT_ROTATION: 3, OBJECT_VELOCITY: 3, OBJECT_SPIN: 3}


@inner_kernel
def _clip(x, low, high):
    """np.minimum(np.maximum(x, low), high) of a scalar (`config.clip`), NaN passed through."""
    if x != x:
        return x
    if x < low:
        x = low
    if x > high:
        x = high
    return x


@inner_kernel
def _root_translation(com, rot, w, row, com_local, k, i):
    """Component i of a body's root translation c - R com_local (`Scene.get_actor_translations`), its product
    summed as np.einsum adds three terms: (j0 + j2) + j1."""
    return com[w, row, i] - ((rot[w, row, i, 0] * com_local[k, 0] + rot[w, row, i, 2] * com_local[k, 2])
                             + rot[w, row, i, 1] * com_local[k, 1])


@kernel
def observe_gripper_objects(com, rot, lin, ang, fingers, finger_com_local, tip, v_max, objects, object_com_local,
                            spin_max, layout, goal_layout, obs, goal, rotvec, near_pi):
    """The floating gripper's and its objects' observation (`FloatingGripper.observation` and
    `PushTask.observation`, per object) of every world, written as float32 into ``obs`` (W, D) at ``layout``'s rows
    (code, object, first column) and into ``goal`` (W, G) at ``goal_layout``'s, with the same float64 arithmetic
    as the numpy parts (then rounded to float32 as ``astype`` does). ``com``, ``rot``, ``lin``, ``ang``: the scene's
    current state (W, N, ...); ``fingers`` / ``objects``: model rows; ``rotvec`` (W, K, 3) / ``near_pi`` (W, K):
    scratch for the objects' rotation vectors, marked where the angle is near pi (`lie.log_so3` takes the
    quaternion route there: the caller then computes the observation in numpy). Returns how many were marked."""
    count = 0
    grip = np.empty(3)
    finger_pos = np.empty((2, 3))
    pos = np.empty(3)
    n = com.shape[1]
    flat = rot.reshape(rot.shape[0] * n, 3, 3)
    for w in range(com.shape[0]):
        for f in range(2):
            for i in range(3):
                finger_pos[f, i] = _root_translation(com, rot, w, fingers[f], finger_com_local, f, i)
        for i in range(3):
            grip[i] = ((0.0 + finger_pos[0, i]) + finger_pos[1, i]) / 2.0 + tip[i]
        for k in range(objects.shape[0]):
            near_pi[w, k] = _log_row(flat, w * n + objects[k], rotvec[w], k)
            if near_pi[w, k]:
                count += 1
        _write_parts(layout, obs, w, grip, finger_pos, pos, com, rot, lin, ang, fingers, v_max, objects,
                     object_com_local, spin_max, rotvec)
        _write_parts(goal_layout, goal, w, grip, finger_pos, pos, com, rot, lin, ang, fingers, v_max, objects,
                     object_com_local, spin_max, rotvec)
    return count


@inner_kernel
def _write_parts(table, out, w, grip, finger_pos, pos, com, rot, lin, ang, fingers, v_max, objects, object_com_local,
                 spin_max, rotvec):
    """World w's parts listed in ``table`` (code, object, first column) into ``out`` (`observe_gripper_objects`)."""
    for p in range(table.shape[0]):
        code, k, col = table[p, 0], table[p, 1], table[p, 2]
        if code == GRIP:
            for i in range(3):
                out[w, col + i] = grip[i]
        elif code == FINGERS:
            mean = ((0.0 + finger_pos[0, 1]) + finger_pos[1, 1]) / 2.0
            for f in range(2):
                out[w, col + f] = finger_pos[f, 1] - mean
        elif code == GRIP_VELOCITY:
            for i in range(3):
                v = ((0.0 + lin[w, fingers[0], i]) + lin[w, fingers[1], i]) / 2.0
                out[w, col + i] = _clip(v, -v_max, v_max)
        elif code == FINGER_VELOCITY:
            mean = ((0.0 + lin[w, fingers[0], 1]) + lin[w, fingers[1], 1]) / 2.0
            for f in range(2):
                out[w, col + f] = _clip(lin[w, fingers[f], 1] - mean, -v_max, v_max)
        else:
            row = objects[k]
            for i in range(3):
                pos[i] = _root_translation(com, rot, w, row, object_com_local, k, i)
            for i in range(3):
                if code == OBJECT:
                    value = pos[i]
                elif code == OBJECT_REL_GRIP:
                    value = pos[i] - grip[i]
                elif code == OBJECT_ROTATION:
                    value = rotvec[w, k, i]
                elif code == OBJECT_VELOCITY:
                    value = _clip(lin[w, row, i], -v_max, v_max)
                else:
                    value = _clip(ang[w, row, i], -spin_max[k], spin_max[k])
                out[w, col + i] = value


@kernel
def plan_action(actions, com, rot, fingers, finger_com_local, tip, target, opening, block_gripper, max_opening,
                finger_step, max_step, workspace_low, workspace_high, fractions, reach, palm_half_z, finger_half_z,
                finger_half_y, end_target, end_opening, planned):
    """`FloatingGripper.begin_action` without a speed cap, every world at once: the control step's end commands
    (``end_target`` (W, 3), ``end_opening`` (W,)) from finite float64 ``actions`` (W, 4) and the measured grip
    point, and the palm's and fingers' targets (``planned`` (F, W, 3, 3), `FloatingGripper.body_targets`) at each
    of ``fractions`` (F,) of the way from the start commands (``target``, ``opening``) to the end ones. The same
    operations in the same order as the numpy code, so the same values."""
    for w in range(actions.shape[0]):
        for i in range(3):
            a = _clip(actions[w, i], -1.0, 1.0)
            grip = ((0.0 + _root_translation(com, rot, w, fingers[0], finger_com_local, 0, i))
                    + _root_translation(com, rot, w, fingers[1], finger_com_local, 1, i)) / 2.0 + tip[i]
            end_target[w, i] = _clip(grip + a * max_step, workspace_low[i], workspace_high[i])
        if block_gripper:
            end_opening[w] = 0.0
        else:
            wanted = 0.5 * (_clip(actions[w, 3], -1.0, 1.0) + 1.0) * max_opening
            end_opening[w] = opening[w] + _clip(wanted - opening[w], -finger_step, finger_step)
        for j in range(fractions.shape[0]):
            f = fractions[j]
            t0 = target[w, 0] + f * (end_target[w, 0] - target[w, 0])
            t1 = target[w, 1] + f * (end_target[w, 1] - target[w, 1])
            t2 = target[w, 2] + f * (end_target[w, 2] - target[w, 2])
            o = opening[w] + f * (end_opening[w] - opening[w])
            out = planned[j, w]
            out[0, 0] = t0 + reach[0]
            out[0, 1] = t1 + reach[1]
            out[0, 2] = t2 + reach[2]
            finger_z = out[0, 2] - palm_half_z - finger_half_z
            offset = 0.5 * o + finger_half_y
            out[1, 0] = t0
            out[2, 0] = t0
            out[1, 1] = t1 + offset
            out[2, 1] = t1 - offset
            out[1, 2] = finger_z
            out[2, 2] = finger_z
