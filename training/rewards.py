"""Training-side rewards: an SB3 ``VecEnvWrapper`` that replaces the env's reward with a shaped one computed from
the raw observation, selected by a config's ``train.reward`` (``"env"``: the env's own reward, unchanged).

``"push_staged"`` (``PushStagedReward``): Push shaped for an on-policy learner without hindsight relabelling, in
the spirit of ManiSkill's PushCube dense reward. Per step, in [0, 1]:

* reach: ``1 - tanh(k_reach * d(grip, push pose))``, the push pose being behind the cube on the goal -> cube line
  (``push_offset_m`` from the cube's centre, the closed fingers' half depth plus a few mm past the cube's face) at
  ``push_height_m`` above the table, so it follows the goal's direction (ours lie all around the cube);
* place, once reached (grip within ``reached_tol_m`` of the push pose): ``1 - tanh(k_place * d(cube, goal))``;
  with ``k_gate`` > 0, weighted by a sharper reach kernel ``1 - tanh(k_gate * d(grip, push pose))`` instead;
* success (the task's: the cube within its success radius): the step's reward is the maximum, ``1``.

reward = (reach + reached * place) / 2, or 1 on success; the terms go in ``info`` (``reward_reach``,
``reward_place``, ``reward_reached``, ``reward_env``: the env's own reward).

``"pick_and_place_staged"`` (``PickAndPlaceStagedReward``): PickAndPlace shaped the same way (ManiSkill PickCube's
stages), per step in [0, 1], each stage paying only once the one before it is done:

* reach: ``1 - tanh(k_reach * d(grip, grasp pose))``, the grasp pose ``grasp_depth_m`` below the cube's centre;
* close, once reached (grip within ``reached_tol_m`` of the grasp pose): the fingers' closing from fully open
  (``max_opening_m`` between their inner faces, 0) to the cube's width (1);
* grasped (1 or 0): reached and the fingers' gap at most the cube's width + ``grasp_gap_tol_m``;
* lift, while grasped: the cube's bottom face's height above the table over ``lift_m``, at most 1;
* carry, while grasped: ``1 - tanh(k_carry * d(cube, goal))``;
* success (the task's: the cube within its success radius): the step's reward is the maximum, ``1``.

reward = (reach + reached * close + grasped * (1 + lift + carry)) / 5 x (1 - success_bonus), or 1 on success: any
grasped state pays more than any state not grasped (at most 2 / 5 of the stages' share), and success at least
``success_bonus`` more than any other state (ManiSkill's PickCube pays 5 on success against at most 3 before). Terms in ``info``: ``reward_reach``, ``reward_close``,
``reward_grasped``, ``reward_lift``, ``reward_carry``, ``reward_env``.

``"throw_staged"`` (``ThrowStagedReward``): Throw shaped the same way, per step in [0, 1]: PickAndPlace's first
stages, then an aim term that reads where the cube is going, so the throw pays the step it is made and not only
the ~12 control steps later when the cube lands (a horizon gamma 0.9 barely sees):

* reach, close, grasped: as ``pick_and_place_staged``; lift, while grasped: the cube's bottom over ``lift_m``;
* loose (1 or 0): the cube not grasped and either higher than ``lift_m`` above the table (thrown up or let go
  high) or aimed within ``aimed_m`` of the bin's centre (below): the four stages above count as done, so letting
  go of a lifted cube pays what holding it did while it flies, and keeps paying it if it goes toward the bin. A
  cube knocked off the table is not loose unless it flies at the bin (a first recipe, loose = not held and faster
  than 0.5 m/s, was learned as batting the cube off the table);
* aim: ``1 - tanh(k_aim * d)``, d the horizontal distance from the bin's centre of the point where the cube's free
  flight from its current position and velocity (the engine's discrete flight, ``discrete_flight_crossing``) comes
  down through the bin's rim height (the cube's own position once it is below that height), paid in proportion to
  ``grasped * lift`` while held and in full while loose: a cube pushed or batted about the table pays no aim, so
  the grasp is the way to it (paid always, the aim was learned as flinging the cube without a grasp: 0.36 success
  at 1.4M, seed 0);
* success (the task's: the cube inside the bin): the step's reward is the maximum, ``1``.

reward = (stage_share * (reach + reached * close + grasped * (1 + lift)) / 4, or stage_share when loose,
+ (1 - stage_share) * aim * (grasped * lift, or 1 when loose)) x (1 - success_bonus), or 1 on success. Terms in
``info``: ``reward_reach``, ``reward_close``, ``reward_grasped``, ``reward_lift``, ``reward_loose``, ``reward_aim``,
``reward_env``.

``"stack_staged"`` (``StackStagedReward``, Stack2 and Stack3): the tower built bottom first, per step in [0, 1]. A
cube is *placed* when it is within ``placed_tol_m`` of its target (tighter than the task's 5 cm success radius: a
cube 4 cm off is no base for the next one); the cube worked on is the first one from the bottom that is not. Its
``pick_and_place_staged`` stages toward its own target (reach, close, grasped, lift, carry; (their sum) / 5 in
[0, 1]) add to the count of cubes placed below it:

reward = (placed + stages of the cube worked on) / cubes x (1 - success_bonus), or 1 on success. Terms in
``info``: ``reward_placed`` (the count), ``reward_working`` (the cube's index) and that cube's ``reward_reach``,
``reward_close``, ``reward_grasped``, ``reward_lift``, ``reward_carry``.

They live here, not in registered ids, because they need the gripper's state, which the observation has: the env's
ids and their ``compute_reward`` (the goal-only reward HER relabels with) stay as they are, and no id exists whose
``compute_reward`` would not match its ``step`` reward.
"""

from __future__ import annotations

import numpy as np
from stable_baselines3.common.vec_env import VecEnvWrapper

from ..envs.scripted.throw import discrete_flight_crossing

# Push's observation layout (envs/tasks/push.py): the grip point first, then the cube (a robot's own parts, the
# Panda's joint positions and velocities, come after the task's)
GRIP, CUBE, FINGERS, CUBE_VELOCITY = slice(0, 3), slice(3, 6), slice(9, 11), slice(14, 17)
# Stack's (envs/tasks/stack.py): the grip point, the finger offsets, ...; the cubes are the achieved goal
STACK_FINGERS = slice(3, 5)


def push_staged_reward(grip, cube, goal, success, *, cube_half_m=0.02, push_offset_m=0.035, push_height_m=0.01,
                       reached_tol_m=0.015, k_reach=5.0, k_place=5.0, k_gate=0.0) -> dict:
    """The staged reward's terms for batches (W, 3) of grip point, cube and goal positions and (W,) success; the
    ``reward`` term is their normalized sum. Pure numpy, so tests check it on hand-made positions."""
    grip, cube, goal = (np.asarray(a, dtype=np.float64) for a in (grip, cube, goal))
    to_goal = goal[:, :2] - cube[:, :2]
    direction = to_goal / np.maximum(np.linalg.norm(to_goal, axis=1), 1e-9)[:, None]
    pose = np.empty_like(cube)
    pose[:, :2] = cube[:, :2] - push_offset_m * direction
    # a height above the cube's bottom face (the scripted push's 1 cm: the fingers hit the cube's lower half and do
    # not tip it), so a cube knocked off the table pulls the pose down with it
    pose[:, 2] = cube[:, 2] - cube_half_m + push_height_m
    d_reach = np.linalg.norm(grip - pose, axis=1)
    reach = 1.0 - np.tanh(k_reach * d_reach)
    # k_gate > 0: the place term weighted by a sharp kernel of the same distance instead of switched on at
    # reached_tol_m, so a push slightly off the line already pays a little, and one on it pays more
    if k_gate > 0:
        reached = 1.0 - np.tanh(k_gate * d_reach)
    else:
        reached = (d_reach < reached_tol_m).astype(np.float64)
    place = 1.0 - np.tanh(k_place * np.linalg.norm(goal - cube, axis=1))
    success = np.asarray(success, dtype=bool)
    reward = np.where(success, 1.0, 0.5 * (reach + reached * place))
    return {"reward": reward, "reach": reach, "place": place, "reached": reached}


def pick_and_place_staged_reward(grip, cube, fingers, goal, success, *, cube_half_m=0.02, finger_half_m=0.006,
                                 max_opening_m=0.08, grasp_depth_m=0.01, reached_tol_m=0.015, grasp_gap_tol_m=0.004,
                                 lift_m=0.03, k_reach=5.0, k_carry=5.0, success_bonus=0.0) -> dict:
    """The staged PickAndPlace reward's terms for batches (W, 3) of grip point, cube and goal positions, (W, 2)
    finger offsets and (W,) success; the ``reward`` term is their normalized sum. Pure numpy, so tests check it on
    hand-made states. The table's top is at z = 0."""
    grip, cube, goal = (np.asarray(a, dtype=np.float64) for a in (grip, cube, goal))
    fingers = np.asarray(fingers, dtype=np.float64)
    pose = cube.copy()
    pose[:, 2] -= grasp_depth_m  # the scripted grasp: finger tips below the cube's centre, so both faces are held
    d_reach = np.linalg.norm(grip - pose, axis=1)
    reach = 1.0 - np.tanh(k_reach * d_reach)
    reached = (d_reach < reached_tol_m).astype(np.float64)
    gap = np.abs(fingers[:, 0] - fingers[:, 1]) - 2.0 * finger_half_m  # between the fingers' inner faces
    width = 2.0 * cube_half_m
    if not max_opening_m > width:
        raise ValueError(f"max_opening_m {max_opening_m} must exceed the cube's width {width}")
    close = np.clip((max_opening_m - gap) / (max_opening_m - width), 0.0, 1.0)
    # the scripted policy's "holding" test: at the grasp pose with the fingers no wider than the cube and a margin
    grasped = reached * (gap < width + grasp_gap_tol_m)
    lift = np.clip((cube[:, 2] - cube_half_m) / lift_m, 0.0, 1.0) if lift_m > 0 else np.ones(len(cube))
    carry = 1.0 - np.tanh(k_carry * np.linalg.norm(goal - cube, axis=1))
    success = np.asarray(success, dtype=bool)
    if not success_bonus < 1:
        raise ValueError(f"success_bonus {success_bonus} must be < 1: the stages would pay nothing")
    # the stages share 1 - success_bonus, so the last few cm to the goal pay at least success_bonus more at once
    stages = (reach + reached * close + grasped * (1.0 + lift + carry)) / 5.0 * (1.0 - success_bonus)
    reward = np.where(success, 1.0, stages)
    return {"reward": reward, "reach": reach, "reached": reached, "close": close, "grasped": grasped, "lift": lift,
            "carry": carry}


def throw_staged_reward(grip, cube, cube_velocity, fingers, goal, success, *, cube_half_m=0.02, finger_half_m=0.006,
                        max_opening_m=0.08, grasp_depth_m=0.01, reached_tol_m=0.015, grasp_gap_tol_m=0.004,
                        lift_m=0.05, aimed_m=0.15, bin_height_m=0.36, physics_dt=0.02, k_reach=5.0,
                        k_aim=2.0, stage_share=0.4, success_bonus=0.3) -> dict:
    """The staged Throw reward's terms for batches (W, 3) of grip point, cube position and velocity and goal (the
    bin's target point: its floor centre at the cube's resting height), (W, 2) finger offsets and (W,) success;
    the ``reward`` term is their weighted sum. Pure numpy, so tests check it on hand-made states. The table's top is
    at z = 0."""
    if not 0 <= stage_share <= 1:
        raise ValueError(f"stage_share {stage_share} must be in [0, 1]: the stages' share of the aim's")
    if not success_bonus < 1:
        raise ValueError(f"success_bonus {success_bonus} must be < 1: the stages and the aim would pay nothing")
    picked = pick_and_place_staged_reward(grip, cube, fingers, goal, np.zeros(len(np.atleast_2d(cube)), bool),
                                          cube_half_m=cube_half_m, finger_half_m=finger_half_m,
                                          max_opening_m=max_opening_m, grasp_depth_m=grasp_depth_m,
                                          reached_tol_m=reached_tol_m, grasp_gap_tol_m=grasp_gap_tol_m,
                                          lift_m=lift_m, k_reach=k_reach)
    cube, velocity, goal = (np.asarray(a, dtype=np.float64) for a in (cube, cube_velocity, goal))
    reach, reached, close, grasped, lift = (picked[k] for k in ("reach", "reached", "close", "grasped", "lift"))
    rim = goal[:, 2] + bin_height_m  # the cube's centre when its bottom face passes the bin's rim
    crossing, _ = discrete_flight_crossing(cube, velocity, rim, physics_dt)
    above = cube[:, 2] > rim
    landing = np.where(above[:, None], crossing, cube)
    miss = np.linalg.norm(landing[:, :2] - goal[:, :2], axis=1)
    aim = 1.0 - np.tanh(k_aim * miss)
    high = cube[:, 2] - cube_half_m > lift_m
    loose = ((grasped == 0) & (high | (miss < aimed_m))).astype(np.float64)
    stages = np.where(loose == 1, 1.0, (reach + reached * close + grasped * (1.0 + lift)) / 4.0)
    credited = np.where(loose == 1, 1.0, grasped * lift)
    shaped = (stage_share * stages + (1.0 - stage_share) * aim * credited) * (1.0 - success_bonus)
    reward = np.where(np.asarray(success, dtype=bool), 1.0, shaped)
    return {"reward": reward, "reach": reach, "reached": reached, "close": close, "grasped": grasped, "lift": lift,
            "loose": loose, "aim": aim}


def stack_staged_reward(grip, fingers, cubes, targets, success, *, placed_tol_m=0.02, cube_half_m=0.02,
                        finger_half_m=0.006, max_opening_m=0.08, grasp_depth_m=0.01, reached_tol_m=0.015,
                        grasp_gap_tol_m=0.004, lift_m=0.03, k_reach=5.0, k_carry=5.0, success_bonus=0.3) -> dict:
    """The staged Stack reward's terms for batches (W, 3) of grip points, (W, 2) finger offsets, (W, n, 3) cube
    positions and their targets (bottom first) and (W,) success; the ``reward`` term is their normalized sum. Pure
    numpy, so tests check it on hand-made states. The table's top is at z = 0."""
    if not success_bonus < 1:
        raise ValueError(f"success_bonus {success_bonus} must be < 1: the stages would pay nothing")
    cubes, targets = np.asarray(cubes, dtype=np.float64), np.asarray(targets, dtype=np.float64)
    w, n = cubes.shape[:2]
    rows = np.arange(w)
    close_enough = np.linalg.norm(cubes - targets, axis=-1) < placed_tol_m  # (W, n)
    placed = np.cumprod(close_enough, axis=1).sum(axis=1)  # the tower from the bottom up
    working = np.minimum(placed, n - 1)
    picked = pick_and_place_staged_reward(grip, cubes[rows, working], fingers, targets[rows, working],
                                          np.zeros(w, bool), cube_half_m=cube_half_m, finger_half_m=finger_half_m,
                                          max_opening_m=max_opening_m, grasp_depth_m=grasp_depth_m,
                                          reached_tol_m=reached_tol_m, grasp_gap_tol_m=grasp_gap_tol_m,
                                          lift_m=lift_m, k_reach=k_reach, k_carry=k_carry)
    stages = np.where(placed == n, 0.0, picked["reward"])  # the tower done: the count alone (n) is the most
    shaped = (placed + stages) / n * (1.0 - success_bonus)
    reward = np.where(np.asarray(success, dtype=bool), 1.0, shaped)
    out = {"reward": reward, "placed": placed.astype(np.float64), "working": working.astype(np.float64)}
    out.update({k: picked[k] for k in ("reach", "close", "grasped", "lift", "carry")})
    return out


class StagedReward(VecEnvWrapper):
    """A staged reward (``reward_fn``) over a Push-layout VecEnv with SB3's auto-reset (a world that ended is scored on
    its ``terminal_observation``, not on the next episode's first observation). Wrap the raw env, inside
    ``VecMonitor`` / ``VecNormalize``, so episode returns are the shaped ones and positions are in metres."""

    name = ""
    env_ids: tuple = ()  # the ids whose observation it reads
    terms: tuple = ()  # the reward_fn terms copied into info as reward_<term>
    probe_widths: tuple = (25, 3)  # an observation's and a goal's width, to try the constants on

    def __init__(self, venv, **params):
        self.check_params(params)  # a misspelt constant fails before training, not at the first step
        super().__init__(venv)
        self.params = params

    @staticmethod
    def reward_fn(ob, goal, success, **params) -> dict:
        raise NotImplementedError

    @classmethod
    def check_params(cls, params: dict) -> None:
        """ValueError naming a ``[reward]`` key that ``reward_fn`` does not take, or a negative value."""
        try:
            cls.reward_fn(np.ones((1, cls.probe_widths[0])), np.ones((1, cls.probe_widths[1])), [False], **params)
        except TypeError as e:
            raise ValueError(f"[reward] for {cls.name!r}: {e}") from e
        negative = sorted(k for k, v in params.items() if not float(v) >= 0)
        if negative:
            raise ValueError(f"[reward] {negative} must be >= 0 (distances and tanh scales)")

    def reset(self):
        return self.venv.reset()

    def step_wait(self):
        obs, env_rewards, dones, infos = self.venv.step_wait()
        ob, goal = np.array(obs["observation"], dtype=np.float64), np.array(obs["desired_goal"], dtype=np.float64)
        success = np.array([bool(info.get("is_success", False)) for info in infos])
        for i in np.nonzero(dones)[0]:  # the new episode's first observation is in obs: score the one that ended
            last = infos[i]["terminal_observation"]
            ob[i], goal[i] = last["observation"], last["desired_goal"]
        terms = self.reward_fn(ob, goal, success, **self.params)
        for i, info in enumerate(infos):
            info["reward_env"] = float(env_rewards[i])
            for name in self.terms:
                info[f"reward_{name}"] = float(terms[name][i])
        return obs, terms["reward"].astype(np.float32), dones, infos


class PushStagedReward(StagedReward):
    """``push_staged_reward`` on Push's observation."""

    name = "push_staged"
    env_ids = ("SuperDex/Push-v0", "SuperDex/PushDense-v0", "SuperDex/PandaPush-v0", "SuperDex/PandaPushDense-v0")
    terms = ("reach", "place", "reached")

    @staticmethod
    def reward_fn(ob, goal, success, **params) -> dict:
        return push_staged_reward(ob[:, GRIP], ob[:, CUBE], goal, success, **params)


class PickAndPlaceStagedReward(StagedReward):
    """``pick_and_place_staged_reward`` on PickAndPlace's observation (Push's layout)."""

    name = "pick_and_place_staged"
    env_ids = ("SuperDex/PickAndPlace-v0", "SuperDex/PandaPickAndPlace-v0")
    terms = ("reach", "close", "grasped", "lift", "carry")

    @staticmethod
    def reward_fn(ob, goal, success, **params) -> dict:
        return pick_and_place_staged_reward(ob[:, GRIP], ob[:, CUBE], ob[:, FINGERS], goal, success, **params)


class ThrowStagedReward(StagedReward):
    """``throw_staged_reward`` on Throw's observation (Push's layout; the bin's target point is the goal)."""

    name = "throw_staged"
    env_ids = ("SuperDex/Throw-v0",)
    terms = ("reach", "close", "grasped", "lift", "loose", "aim")

    @staticmethod
    def reward_fn(ob, goal, success, **params) -> dict:
        return throw_staged_reward(ob[:, GRIP], ob[:, CUBE], ob[:, CUBE_VELOCITY], ob[:, FINGERS], goal, success,
                                   **params)


class StackStagedReward(StagedReward):
    """``stack_staged_reward`` on Stack's observation (the cubes and their targets are the goals)."""

    name = "stack_staged"
    env_ids = ("SuperDex/Stack2-v0", "SuperDex/Stack3-v0")
    terms = ("placed", "working", "reach", "close", "grasped", "lift", "carry")
    probe_widths = (40, 6)

    @staticmethod
    def reward_fn(ob, goal, success, **params) -> dict:
        n = goal.shape[1] // 3
        cubes = ob[:, 10:10 + 15 * n].reshape(len(ob), n, 15)[:, :, :3]  # each cube's block starts at its position
        return stack_staged_reward(ob[:, GRIP], ob[:, STACK_FINGERS], cubes, goal.reshape(len(goal), n, 3), success,
                                   **params)


REWARDS = {c.name: c for c in (PushStagedReward, PickAndPlaceStagedReward, ThrowStagedReward, StackStagedReward)}


def wrap_reward(venv, name: str, params: dict | None = None):
    """``venv`` with the training reward ``name`` (``"env"``: unchanged; else a key of ``REWARDS``; train.py's
    ``check_reward`` validated both names and constants with the config)."""
    if name == "env":
        return venv
    return REWARDS[name](venv, **(params or {}))
