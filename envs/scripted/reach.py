"""The scripted Reach policy: move the grip point straight at the goal."""

from __future__ import annotations

import numpy as np

MAX_STEP_M = 0.05  # the robot's grip displacement at |action| = 1
GRIP = slice(0, 3)  # every task's observation starts with the grip point


def grip_and_goal(obs: dict) -> tuple[bool, np.ndarray, np.ndarray]:
    """(single observation?, grip points (W, 3), desired goals (W, 3)) of an observation dict."""
    single = np.ndim(obs["observation"]) == 1
    grip = np.atleast_2d(obs["observation"]).astype(np.float64)[:, GRIP]
    return single, grip, np.atleast_2d(obs["desired_goal"]).astype(np.float64)


def scripted_reach_action(obs: dict) -> np.ndarray:
    """Reach: move the grip point straight at the goal (full speed until within one step of it)."""
    single, grip, goal = grip_and_goal(obs)
    action = np.zeros((grip.shape[0], 4))
    action[:, :3] = np.clip((goal - grip) / MAX_STEP_M, -1.0, 1.0)
    action[:, 3] = -1.0
    return action[0] if single else action
