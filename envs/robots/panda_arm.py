"""The Franka Panda arm (envs/robots/panda_model.py) as a robot of the tasks: one articulated actor with a fixed
base, its 7 arm joints and two fingers held by single-DoF drives whose targets the actions set.

* **Base** at ``BASE_POSITION`` = (-0.5, 0, 0) m: behind the tasks' table centre, link0's front face 3 cm behind
  the 0.8 m table's edge (x = -0.4), so that the default workspace (-0.2 .. 0.2, -0.2 .. 0.2, 0.005 .. 0.3) m lies
  0.3-0.73 m from the base, where the hand reaches pointing down (nearer than 0.25 m it cannot: joint 4's limit).
* **Gravity compensation**: the links feel no gravity (``panda_actor_params(gravity_compensated=True)``), as the
  released engine's FR3 example runs its arm; Franka's controller compensates gravity exactly, so this is the
  real arm's behaviour with no compensating term to tune.
* **Drives**: per arm joint k = 3e4 N m/rad, d = 30 N m s/rad, uncapped: a position-controlled arm, whose joints
  follow their targets within ~3 mrad under saturated random actions. Capped at Franka's torque limits (87 / 12
  N m, the drives' saturation) the joints lag by up to 0.06 rad and the saturated drives' energy stopped the
  articulated Newton at its 100-iteration cap on 33% of substeps, each step 13x the cost (8 worlds, saturated
  random actions). Per finger k = 500 N/m capped at Franka's 20 N. The two fingers are driven as one (Franka's
  mimic joint): both drives get the same target, half the commanded opening. Closed on the 4 cm cube each finger
  squeezes with 10 N, under the cap: at k = 1e3 N/m both drives sat at their 20 N cap, where a capped drive has no
  stiffness left, so cube and fingers slid together along the jaw (the mimic's coupling gone) and the scripted
  PickAndPlace dropped 11 of 100 cubes against 2 at 500 N/m.
* **No self-contact**: the arm's links sit on their own contact layer with contact off within it (the joint
  limits keep the links apart, as pybullet's default for panda-gym; it also spares 28 link pairs per step); the
  links collide with everything else (table, objects).

Control (``control=`` kwarg), each control step (25 Hz by default):

* ``"ee"`` (default), action (4,): dx, dy, dz x 5 cm from the measured grip point (clipped to the workspace, as the
  floating gripper's), the finger command; the hand is kept pointing down at yaw 0.
* ``"ee_yaw"``, action (5,): as ``"ee"`` plus a yaw rate: the hand's commanded yaw moves by action[3] x 0.1 rad
  (clipped to +-pi/2: the parallel jaw is symmetric under a half turn); action[4] is the finger command.
* ``"joints"``, action (8,): a delta per arm joint x 0.05 rad from the measured joint positions, the finger.

**End-effector targets by damped least squares**: each control step the grip point target and the hand's
orientation (pointing down, yaw) become joint targets by ``IK_ITERATIONS`` = 2 Gauss-Newton steps on the 6 x 7
link Jacobian of the hand (damping lambda = 0.05, a null-space pull toward ``home_joints``), started from the
previous step's joint targets; the result is scaled so no joint moves faster than Franka's velocity limit and
clipped to the joint limits, then interpolated linearly over the substeps as drive targets. Chosen over the
engine's pose controller because the pose controller tracks a joint or link target pose, so a Cartesian target
needs this IK in front of it anyway. Its cost per control step: two batched forward kinematics + Jacobian
evaluations and two batched 6 x 6 solves, 3% of a single env's step (2.1 of 67 ms) and 1.5% at W = 16 (1.5 of
98 ms), measured in one process on the loaded 2 cores; the articulated physics is the rest.

**Joint limits**: every arm joint target (from IK or from ``"joints"`` actions) is clipped to Franka's position
limits, so the drives never aim past a limit; the engine's soft limits (stiffness 100) are the backstop.

Observation parts: ``grip`` (3), ``fingers`` (2: each finger's travel, the left positive, the right negative),
``grip_velocity`` (3), ``finger_velocity`` (2), then the arm's own ``joint_positions`` (7) and
``joint_velocities`` (7), which the worlds append to every task's observation.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

import superdex_gym.sim as mochi
from superdex_gym.sim import lie
from superdex_gym.sim.articulated import batch
from superdex_gym.sim.articulated.kinematics import forward_kinematics, link_jacobians
from superdex_gym.sim.articulated.model import build_model
from superdex_gym.sim.validation import as_bool, as_real, real_array

from ..core.config import GRASP_CONTACT, V_MAX, clip
from . import panda_model as pm
from .base import Robot

CONTROL_MODES = ("ee", "ee_yaw", "joints")
ACTION_DIMS = {"ee": 4, "ee_yaw": 5, "joints": 8}
BASE_POSITION = (-0.5, 0.0, 0.0)  # m
WORKSPACE = ((-0.2, -0.2, 0.005), (0.2, 0.2, 0.3))  # m, the grip point's targets in "ee" modes
HOME_JOINTS = pm.HOME[:7]  # rad: the rest posture the IK starts from and pulls toward in its null space
ARM = pm.ARM_JOINTS
LOWER, UPPER = np.array(pm.LOWER[:ARM]), np.array(pm.UPPER[:ARM])
MAX_VELOCITY = np.array(pm.MAX_VELOCITY[:ARM])
MAX_EFFORT = np.array(pm.MAX_EFFORT[:ARM])
FINGER_TRAVEL_M = pm.UPPER[ARM]  # each finger's travel; the opening is twice it
HAND = [k[0] for k in pm.KINEMATICS].index("hand")
FINGERS = ([k[0] for k in pm.KINEMATICS].index("left_finger"), [k[0] for k in pm.KINEMATICS].index("right_finger"))
DOF_JOINTS = (1, 2, 3, 4, 5, 6, 7) + FINGERS  # the joint (link) of each DoF
R_DOWN = np.diag([1.0, -1.0, -1.0])  # the hand pointing down at yaw 0: its x along world x, fingers along world y
JOINT_SPEED_BOUND = 10.0  # rad/s, joint velocities in observations are clipped to it (4.6x the fastest limit)
LIMIT_STIFFNESS = 100.0  # N m/rad, the engine's default soft joint limits (panda_actor_params)
IK_ITERATIONS = 2
IK_DAMPING = 0.05
IK_NULL_GAIN = 0.1
# Reachability checks (`check_home`, the workspace) solve to this residual [m, rad] from home_joints.
IK_CHECK_ITERATIONS = 100
IK_CHECK_TOL = 1e-6
COLOR = (0.92, 0.92, 0.94)
FINGER_COLOR = (0.25, 0.25, 0.28)


@dataclass(frozen=True)
class PandaArmConfig:
    control: str = "ee"
    block_gripper: bool = True
    home_joints: tuple = HOME_JOINTS
    workspace_low: tuple = WORKSPACE[0]
    workspace_high: tuple = WORKSPACE[1]
    base_position: tuple = BASE_POSITION
    max_step_m: float = 0.05  # grip point displacement per control step at |action| = 1 ("ee" modes)
    joint_step_rad: float = 0.05  # joint displacement per control step at |action| = 1 ("joints")
    yaw_step_rad: float = 0.1  # hand yaw per control step at |action| = 1 ("ee_yaw")
    yaw_limit_rad: float = np.pi / 2
    max_opening_m: float = 2 * FINGER_TRAVEL_M
    finger_step_m: float = 0.016  # most the commanded opening changes per control step (as the floating gripper)
    arm_stiffness: float = 3e4  # N m/rad
    arm_damping: float = 30.0  # N m s/rad
    finger_stiffness: float = 5e2  # N/m: a grasp squeezes under the cap (module docstring)
    finger_damping: float = 1.0  # N s/m
    finger_max_force: float = pm.MAX_EFFORT[ARM]  # N per finger
    finger_friction: float = 1.0

    def validate(self) -> "PandaArmConfig":
        if self.control not in CONTROL_MODES:
            raise ValueError(f"control must be one of {list(CONTROL_MODES)}, got {self.control!r}")
        home = np.asarray(self.home_joints, dtype=np.float64)
        if home.shape != (ARM,) or not np.all(np.isfinite(home)):
            raise ValueError(f"home_joints must be {ARM} finite joint angles [rad], got {self.home_joints!r}")
        outside = np.flatnonzero((home < LOWER) | (home > UPPER))
        if outside.size:
            j = int(outside[0])
            raise ValueError(f"home_joints[{j}] = {home[j]} rad lies outside joint {j + 1}'s limits "
                             f"[{LOWER[j]}, {UPPER[j]}] rad")
        lo, hi = np.asarray(self.workspace_low, float), np.asarray(self.workspace_high, float)
        if lo.shape != (3,) or hi.shape != (3,) or not np.all(np.isfinite(lo) & np.isfinite(hi)) or np.any(lo >= hi):
            raise ValueError(f"workspace must be (low (3,), high (3,)) finite with low < high in every axis, got "
                             f"{lo.tolist()}, {hi.tolist()}")
        if lo[2] < 0:
            raise ValueError("workspace low z must keep the grip point above the table top (z >= 0)")
        far = unreachable_points(self)
        if far is not None:
            point, residual = far
            raise ValueError(f"workspace {lo.tolist()} .. {hi.tolist()} is beyond the arm's reach with the hand "
                             f"pointing down: the grip point misses {point.round(4).tolist()} by {residual:.3g} m "
                             f"(base at {list(self.base_position)}; checked on a 5 x 5 x 4 grid)")
        return self


def arm_model(base_position=BASE_POSITION):
    """The arm's kinematic model (the engine's articulated model of `panda_actor_params`)."""
    return _model(tuple(float(v) for v in base_position))


@functools.lru_cache(maxsize=8)
def _model(base_position: tuple):
    return build_model(pm.panda_actor_params(world_from_base=mochi.TransformRT(translation=list(base_position))))


@functools.lru_cache(maxsize=1)
def grip_offset() -> np.ndarray:
    """The grip point in the hand frame (3,): on the hand's axis at the finger boxes' far end (the closed tips)."""
    finger = pm.collision_shape("left_finger").vertices
    origin = np.array(pm.KINEMATICS[FINGERS[0]][3])
    return np.array([0.0, 0.0, origin[2] + finger[:, 2].max()])


def _skew(v: np.ndarray) -> np.ndarray:
    out = np.zeros(v.shape + (3,))
    out[..., 0, 1], out[..., 0, 2], out[..., 1, 2] = -v[..., 2], v[..., 1], -v[..., 0]
    out[..., 1, 0], out[..., 2, 0], out[..., 2, 1] = v[..., 2], -v[..., 1], v[..., 0]
    return out


def yaw_rotation(yaw: np.ndarray) -> np.ndarray:
    """The hand pointing down turned by ``yaw`` (W,) about world z: (W, 3, 3)."""
    c, s = np.cos(yaw), np.sin(yaw)
    rz = np.zeros(yaw.shape + (3, 3))
    rz[..., 0, 0], rz[..., 0, 1], rz[..., 1, 0], rz[..., 1, 1], rz[..., 2, 2] = c, -s, s, c, 1.0
    return rz @ R_DOWN


def hand_grip(model, q: np.ndarray):
    """The grip point (W, 3) and hand rotation (W, 3, 3) of poses q (W, D)."""
    rot, origin, _ = forward_kinematics(model, q)
    return origin[:, HAND] + rot[:, HAND] @ grip_offset(), rot[:, HAND]


def solve_ik(model, q_seed: np.ndarray, grip_target: np.ndarray, rot_target: np.ndarray, iterations: int,
             home: np.ndarray, damping: float = IK_DAMPING, null_gain: float = IK_NULL_GAIN):
    """Damped-least-squares IK of the arm joints, batched over worlds: ``iterations`` Gauss-Newton steps from
    ``q_seed`` (W, D) toward the grip point (W, 3) and hand rotation (W, 3, 3) targets, each step
    dq = J^T (J J^T + lambda^2 I)^-1 e plus the pull null_gain (home - q) projected on J's null space, clipped to
    the joint limits. Returns (arm joints (W, 7), position residual (W,) [m], rotation residual (W,) [rad]) of the
    last step's start."""
    q = np.array(q_seed, dtype=np.float64)
    tip = grip_offset()
    eye = np.eye(6)
    for _ in range(iterations):  # a fixed count: every world does the same arithmetic
        rot, origin, com, jac = link_jacobians(model, q)
        hand_rot = rot[:, HAND]
        grip = origin[:, HAND] + hand_rot @ tip
        jv, jw = jac[:, HAND, :3, :ARM], jac[:, HAND, 3:, :ARM]
        j = np.concatenate([jv - _skew(grip - com[:, HAND]) @ jw, jw], axis=1)  # the grip point's velocity rows
        jt = np.swapaxes(j, -1, -2)
        err = np.concatenate([grip_target - grip, lie.log_so3(rot_target @ np.swapaxes(hand_rot, -1, -2))], axis=1)
        gram = j @ jt
        step = (jt @ np.linalg.solve(gram + damping ** 2 * eye, err[..., None]))[..., 0]
        pull = null_gain * (home - q[:, :ARM])
        pull = pull - (jt @ np.linalg.solve(gram + 1e-9 * eye, (j @ pull[..., None])))[..., 0]
        q[:, :ARM] = clip(q[:, :ARM] + step + pull, LOWER, UPPER)
    return q[:, :ARM], np.sqrt(np.add.reduce(err[:, :3] ** 2, axis=1)), np.sqrt(np.add.reduce(err[:, 3:] ** 2, axis=1))


def reach_pose(model, grips: np.ndarray, home_joints, yaw=None):
    """Full poses (K, D) with the grip point at ``grips`` (K, 3), the hand pointing down (at ``yaw``), fingers
    closed, solved from ``home_joints``; and the position residual (K,) [m]."""
    grips = np.atleast_2d(np.asarray(grips, dtype=np.float64))
    home = np.asarray(home_joints, dtype=np.float64)
    q = np.zeros((len(grips), model.num_dofs))
    q[:, :ARM] = home
    rot = yaw_rotation(np.zeros(len(grips)) if yaw is None else np.asarray(yaw, dtype=np.float64))
    q[:, :ARM], pos_res, rot_res = solve_ik(model, q, grips, rot, IK_CHECK_ITERATIONS, home)
    grip, hand_rot = hand_grip(model, q)  # the residual of the returned pose itself
    residual = np.sqrt(np.add.reduce((grip - grips) ** 2, axis=1))
    rot_residual = np.linalg.norm(lie.log_so3(rot @ np.swapaxes(hand_rot, -1, -2)), axis=1)
    return q, np.maximum(residual, rot_residual)


def unreachable_points(config: PandaArmConfig):
    """(a point, its residual) of the workspace grid the hand cannot reach pointing down, or None."""
    return _unreachable(tuple(config.workspace_low), tuple(config.workspace_high), tuple(config.base_position),
                        tuple(config.home_joints))


@functools.lru_cache(maxsize=16)
def _unreachable(low, high, base, home):
    axes = [np.linspace(lo, hi, n) for lo, hi, n in zip(low, high, (5, 5, 4))]
    grid = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, 3)
    _, residual = reach_pose(arm_model(base), grid, home)
    worst = int(np.argmax(residual))
    return None if residual[worst] <= IK_CHECK_TOL else (grid[worst], float(residual[worst]))


class PandaArm(Robot):
    """The Panda as a `Robot` (envs/robots/base.py): ``build`` creates the articulated actor and its drives; then
    it maps actions to joint drive targets, reports its observation parts and their real bounds, and keeps its
    commands (the joint targets, opening and yaw: part of the state)."""

    observation_parts = ("grip", "fingers", "grip_velocity", "finger_velocity", "joint_positions",
                         "joint_velocities")
    appended_observation_parts = ("joint_positions", "joint_velocities")
    # the whole arm from the front right, above its base at the table's edge (the tasks' 0.9 m view shows the hand)
    render_camera = {"distance_m": 1.7, "azimuth_deg": -50.0, "elevation_deg": 25.0, "target": (-0.15, 0.0, 0.25)}

    def __init__(self, config: PandaArmConfig):
        self.config = config.validate()
        self.action_dim = ACTION_DIMS[config.control]
        self.model = arm_model(config.base_position)
        self._workspace_low = np.asarray(config.workspace_low, dtype=np.float64)
        self._workspace_high = np.asarray(config.workspace_high, dtype=np.float64)
        self._home_joints = np.asarray(config.home_joints, dtype=np.float64)
        self._tip = grip_offset()
        self._planned = {}
        self._bounds = self.observation_bounds()

    @staticmethod
    def make_config(control="ee", block_gripper=True, home_joints=None, workspace=None, max_step=0.05) -> PandaArmConfig:
        """The arm's ``gym.make`` kwargs: ``control`` ("ee", "ee_yaw" or "joints"), ``block_gripper`` (the finger
        command is ignored, fingers closed), ``home_joints`` (7 angles [rad] inside the joint limits: the posture
        the IK starts from and keeps in its null space) and ``workspace`` ((low (3,), high (3,)) [m]: the box the
        "ee" targets are clipped to; every point of it must be reachable pointing down) and ``max_step`` (the grip
        point's target displacement per control step at |action| = 1 in the "ee" modes [m]; the joints still move
        at most at Franka's velocity limits)."""
        if not isinstance(control, str) or control not in CONTROL_MODES:
            raise ValueError(f"control must be one of {list(CONTROL_MODES)}, got {control!r}")
        if home_joints is None:
            home_joints = HOME_JOINTS
        else:
            home = real_array(home_joints, "home_joints")
            if home.shape != (ARM,) or not np.all(np.isfinite(home)):
                raise ValueError(f"home_joints must be {ARM} finite joint angles [rad], got {home_joints!r}")
            home_joints = tuple(float(v) for v in home)
        if workspace is None:
            workspace = WORKSPACE
        else:
            bounds = real_array(workspace, "workspace")
            if bounds.shape != (2, 3) or not np.all(np.isfinite(bounds)):
                raise ValueError(f"workspace must be (low (3,), high (3,)) finite [m], got {workspace!r}")
            workspace = tuple(tuple(float(v) for v in row) for row in bounds)
        max_step = as_real(max_step, "max_step")
        if not 0.0 < max_step <= 0.5:
            raise ValueError(f"max_step must be in (0, 0.5] m per control step, got {max_step!r}")
        return PandaArmConfig(control=control, block_gripper=as_bool(block_gripper, "block_gripper"),
                              home_joints=home_joints, workspace_low=workspace[0], workspace_high=workspace[1],
                              max_step_m=max_step).validate()

    # --- what a task may read (envs/robots/base.py) ----------------------------------------------------------------
    def workspace(self) -> tuple[np.ndarray, np.ndarray]:
        return self._workspace_low.copy(), self._workspace_high.copy()

    @property
    def max_opening_m(self) -> float:
        return self.config.max_opening_m

    @property
    def drive_max_force_n(self) -> float | None:
        return None  # the arm's drives are uncapped (module docstring)

    def footprint_m(self) -> float:
        corners = self._hand_corners(np.zeros(1))[0][1:]  # the closed fingers' boxes
        return float(np.max(np.hypot(corners[..., 0], corners[..., 1])))

    def reach_margin_m(self) -> float:
        corners = self._hand_corners(np.full(1, self.config.max_opening_m))[0]
        return float(np.max(np.hypot(corners[..., 0], corners[..., 1])))

    def _hand_corners(self, opening: np.ndarray) -> np.ndarray:
        """Box corners (K, 3 bodies: hand, left, right finger, 8, 3) relative to the grip point, the hand pointing
        down at yaw 0, for openings (K,) [m]."""
        q = np.zeros((len(opening), self.model.num_dofs))
        q[:, :ARM] = self._home_joints
        q[:, ARM:] = 0.5 * opening[:, None]
        rot, origin, _ = forward_kinematics(self.model, q)
        # each body's frame relative to the hand's, then placed with the hand pointing down at the grip point
        rel_rot = np.swapaxes(rot[:, HAND:HAND + 1], -1, -2) @ rot[:, HAND:]
        rel_org = np.einsum("wji,wlj->wli", rot[:, HAND], origin[:, HAND:] - origin[:, HAND:HAND + 1]) - self._tip
        out = []
        for k, link in enumerate(("hand", "left_finger", "right_finger")):
            v = pm.collision_shape(link).vertices
            lo, hi = v.min(axis=0), v.max(axis=0)
            box = np.array([[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])])
            local = np.einsum("wij,bj->wbi", rel_rot[:, k], box) + rel_org[:, k, None]
            out.append(local @ R_DOWN.T)
        return np.stack(out, axis=1)

    def boxes_at(self, grip_point: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        corners = self._hand_corners(np.zeros(1))[0] + np.asarray(grip_point, dtype=np.float64)
        lo, hi = corners.min(axis=1), corners.max(axis=1)
        return 0.5 * (lo + hi), 0.5 * (hi - lo)

    def check_home(self, home: np.ndarray) -> None:
        lo, hi = self._workspace_low, self._workspace_high
        if np.any(home < lo) or np.any(home > hi):
            raise ValueError(f"the arm's home grip point {home.tolist()} must lie inside the workspace {lo.tolist()} "
                             f".. {hi.tolist()}")
        _, residual = reach_pose(self.model, home[None], self._home_joints)
        if residual[0] > IK_CHECK_TOL:
            raise ValueError(f"the arm cannot put its grip point at the home {home.tolist()} pointing down (misses "
                             f"by {residual[0]:.3g} m from home_joints {self._home_joints.tolist()})")

    # --- scene ----------------------------------------------------------------------------------------------------
    def build(self, scene, layer: str = "gripper") -> None:
        c = self.config
        self.scene = scene
        params = pm.panda_actor_params(world_from_base=mochi.TransformRT(translation=list(c.base_position)))
        # Free fingers grasp with the floating gripper's sharp contact (1/20 of the default ramp, friction falloff
        # 1e-4 m/s): on the default one a carried cube creeps out of the 20 N grip.
        finger_contact = mochi.ContactParams(coulomb_friction_coefficient=c.finger_friction,
                                             **({} if c.block_gripper else GRASP_CONTACT))
        for link in params.links:
            link.layer = layer
            link.collider_type = mochi.ColliderType.BOX
            if link.name.endswith("finger"):
                link.contact = finger_contact
        self.arm = scene.create_articulated_actor(params)
        self.links = [scene.get_actor(h) for h in self.arm.get_nested_link_actors()]
        self.hand = self.links[HAND]
        self.colors = {a.get_name(): FINGER_COLOR if a.get_name().endswith("finger") else COLOR for a in self.links}
        # The arm's own links do not touch each other (module docstring); link0 never moves, so it skips the table.
        scene.enable_layer_contact_symmetric(layer, layer, False)
        self.drives = []
        for d, joint in enumerate(DOF_JOINTS):
            arm_joint = d < ARM
            k = c.arm_stiffness if arm_joint else c.finger_stiffness
            self.drives.append(scene.create_articulated_single_dof_target_constraint(
                actor=self.arm, joint_index=joint, dof_index=0, target_value=0.0, stiffness=k,
                damping=c.arm_damping if arm_joint else c.finger_damping,
                saturation=-1.0 if arm_joint else c.finger_max_force / k))

    def place(self, grip_point: np.ndarray, opening: np.ndarray, worlds: np.ndarray) -> None:
        """Teleport the arm at rest with its grip point at ``grip_point`` (K, 3) pointing down, fingers at
        ``opening`` (K,) [m], in ``worlds``; the drive targets with it."""
        q, residual = reach_pose(self.model, grip_point, self._home_joints)
        if np.any(residual > IK_CHECK_TOL):
            raise ValueError(f"the arm cannot place its grip point at {np.asarray(grip_point).tolist()}")
        q[:, ARM:] = 0.5 * np.asarray(opening, dtype=np.float64)[:, None]
        batch.set_poses_at_rest(self.arm, q, worlds)
        batch.set_dof_targets(self.drives, q, worlds, teleport=True)

    # --- commands (the robot's part of the state) -----------------------------------------------------------------
    def start_commands(self, num_worlds: int, home: np.ndarray, control_dt: float = 0.04) -> None:
        self.home = np.asarray(home, dtype=np.float64)
        q, _ = reach_pose(self.model, self.home[None], self._home_joints)
        self._home_q = q[0, :ARM]
        self._max_joint_step = MAX_VELOCITY * control_dt  # rad per control step at Franka's velocity limits
        self._target = np.repeat(self._home_q[None], num_worlds, axis=0)  # commanded arm joints (W, 7)
        self._opening = np.zeros(num_worlds)  # commanded finger opening (W,) m
        self._yaw = np.zeros(num_worlds)  # commanded hand yaw (W,) rad ("ee" keeps 0)

    def reset_commands(self, worlds: np.ndarray) -> None:
        self._target[worlds] = self._home_q
        self._opening[worlds] = 0.0
        self._yaw[worlds] = 0.0

    def begin_action(self, actions: np.ndarray, fractions=()) -> None:
        """Joint targets of one control step from finite (W, action_dim) actions (clipped to [-1, 1]); the drive
        targets at ``fractions`` of the step are computed here at once, for `drive`."""
        c = self.config
        actions = clip(actions, -1.0, 1.0)
        self._start = self._target.copy(), self._opening.copy(), self._yaw.copy()
        q, _ = batch.joint_state(self.arm)
        if c.control == "joints":
            target = clip(q[:, :ARM] + actions[:, :ARM] * c.joint_step_rad, LOWER, UPPER)
            yaw = self._yaw
        else:
            grip, _ = self._grip_from_scene()
            goal = clip(grip + actions[:, :3] * c.max_step_m, self._workspace_low, self._workspace_high)
            yaw = self._yaw
            if c.control == "ee_yaw":
                yaw = clip(self._yaw + actions[:, 3] * c.yaw_step_rad, -c.yaw_limit_rad, c.yaw_limit_rad)
            seed = q.copy()
            seed[:, :ARM] = self._target
            solved, _, _ = solve_ik(self.model, seed, goal, yaw_rotation(yaw), IK_ITERATIONS, self._home_joints)
            # Franka's joint velocity limits: the whole step scaled down so its direction is kept
            move = solved - self._target
            scale = np.minimum(1.0, np.min(self._max_joint_step / np.maximum(np.abs(move), 1e-12), axis=1))
            target = clip(self._target + move * scale[:, None], LOWER, UPPER)
        if c.block_gripper:
            opening = np.zeros(len(actions))
        else:  # rate-limited, as the floating gripper's
            wanted = 0.5 * (actions[:, -1] + 1.0) * c.max_opening_m
            opening = self._opening + clip(wanted - self._opening, -c.finger_step_m, c.finger_step_m)
        self._end = target, opening, yaw
        self._planned = {}
        if fractions:
            (t0, o0, _), (t1, o1, _) = self._start, self._end
            for f in fractions:
                self._planned[f] = self._drive_targets(t0 + f * (t1 - t0), o0 + f * (o1 - o0))

    @staticmethod
    def _drive_targets(joints: np.ndarray, opening: np.ndarray) -> np.ndarray:
        out = np.empty((len(joints), ARM + 2))
        out[:, :ARM] = joints
        out[:, ARM:] = 0.5 * opening[:, None]
        return out

    def drive(self, fraction: float) -> None:
        targets = self._planned.get(fraction)
        if targets is None:
            (t0, o0, _), (t1, o1, _) = self._start, self._end
            targets = self._drive_targets(t0 + fraction * (t1 - t0), o0 + fraction * (o1 - o0))
        batch.set_dof_targets(self.drives, targets)

    def end_action(self) -> None:
        self._target, self._opening, self._yaw = self._end

    def step_commands(self, worlds: np.ndarray) -> tuple:
        return tuple(tuple(part[worlds] for part in commands) for commands in (self._start, self._end))

    def set_step_commands(self, commands: tuple) -> None:
        self._start, self._end = commands
        self._planned = {}

    def get_state(self) -> dict:
        return {"target": self._target.copy(), "opening": self._opening.copy(), "yaw": self._yaw.copy()}

    def check_state(self, state) -> dict:
        keys = ("opening", "target", "yaw")
        if not isinstance(state, dict) or set(state) != set(keys):
            raise ValueError(f"state['worlds']['robot'] must have keys {list(keys)}")
        out = {}
        for key, ref in (("target", self._target), ("opening", self._opening), ("yaw", self._yaw)):
            value = real_array(state[key], f"state['worlds']['robot']['{key}']")
            if value.shape != ref.shape or not np.all(np.isfinite(value)):
                raise ValueError(f"state['worlds']['robot']['{key}'] must be {ref.shape} finite numbers, got shape "
                                 f"{value.shape}")
            out[key] = value
        if np.any(out["target"] < LOWER) or np.any(out["target"] > UPPER):
            raise ValueError("state['worlds']['robot']['target'] must lie inside the joint limits")
        return out

    def set_state(self, state: dict) -> None:
        self._target, self._opening, self._yaw = (state[k].copy() for k in ("target", "opening", "yaw"))

    # --- observation ----------------------------------------------------------------------------------------------
    def _hand_frame(self) -> tuple[np.ndarray, np.ndarray]:
        """The hand's rotation (W, 3, 3) and the grip point (W, 3) [m] from the hand link's row of the scene."""
        rot = self.scene.get_actor_rotations([self.hand])[:, 0]
        return rot, self.scene.get_actor_translations([self.hand])[:, 0] + rot @ self._tip

    def _grip_from_scene(self) -> tuple[np.ndarray, np.ndarray]:
        """The grip point (W, 3) [m] and its velocity (W, 3) [m/s] from the hand link's row of the scene."""
        scene = self.scene
        _, grip = self._hand_frame()
        lin, ang = scene.get_actor_velocities([self.hand])
        centre = scene.current_kinematics().com_position[:, scene.get_actor_rows([self.hand])[0]]
        velocity = lin[:, 0] + np.cross(ang[:, 0], grip - centre)
        return grip, velocity

    def grip_point(self) -> tuple[np.ndarray, np.ndarray]:
        return self._grip_from_scene()

    def wrist_camera(self):
        """On the hand where Franka setups mount a RealSense: 10 cm above the closed finger tips along the hand's
        axis and 9 cm off it along the hand's x, looking at a point 4 cm past the tips and 2 cm along x, image up along
        the hand's x (away from the base at yaw 0), so the fingers and what they reach for stay in view."""
        rot, tip = self._hand_frame()
        axis, x = rot[:, :, 2], rot[:, :, 0]  # the hand's z runs from the wrist to the finger tips
        return tip - 0.10 * axis + 0.09 * x, tip + 0.04 * axis + 0.02 * x, x

    def observation(self) -> dict:
        """The parts of `observation_bounds`, each clipped to its bounds there (only a hand jammed into the table
        by "joints" actions reaches the position bounds: the table then pushes the 20 N-capped fingers open)."""
        grip, grip_vel = self._grip_from_scene()
        q, qd = batch.joint_state(self.arm)
        bounds = self._bounds
        parts = {"grip": grip, "fingers": q[:, ARM:] * [1.0, -1.0], "grip_velocity": grip_vel,
                 "finger_velocity": qd[:, ARM:] * [1.0, -1.0], "joint_positions": q[:, :ARM],
                 "joint_velocities": qd[:, :ARM]}
        return {k: clip(v, *bounds[k]) for k, v in parts.items()}

    @staticmethod
    def _joint_bounds() -> tuple[np.ndarray, np.ndarray]:
        """The joints' limits widened by the travel at which the soft limit alone holds the joint's full torque."""
        margin = MAX_EFFORT / LIMIT_STIFFNESS
        return LOWER - margin, UPPER + margin

    def observation_bounds(self) -> dict:
        """Real bounds of the parts, which `observation` clips to. ``grip``: in the "ee" modes the workspace plus 2 cm
        (the targets are clipped to it; the hand strayed 2.6 mm past it under saturated random actions); with
        "joints" control the box around the shoulder of the chain's summed link lengths (1.1 m). ``fingers``: the
        travel plus the 20 N cap's 4 cm compliance (500 N/m). Velocities: V_MAX (m/s), JOINT_SPEED_BOUND (rad/s);
        joint positions: `_joint_bounds`."""
        c = self.config
        if c.control == "joints":
            shoulder = np.asarray(c.base_position) + [0.0, 0.0, 0.333]
            reach = 0.316 + 0.0825 + np.hypot(0.0825, 0.384) + 0.088 + 0.107 + self._tip[2]  # link by link
            grip = (shoulder - reach, shoulder + reach)
        else:
            grip = (self._workspace_low - 0.02, self._workspace_high + 0.02)
        finger = FINGER_TRAVEL_M + c.finger_max_force / c.finger_stiffness
        low, high = self._joint_bounds()
        return {"grip": grip, "fingers": (np.array([-finger, -finger]), np.array([finger, finger])),
                "grip_velocity": (np.full(3, -V_MAX), np.full(3, V_MAX)),
                "finger_velocity": (np.full(2, -V_MAX), np.full(2, V_MAX)),
                "joint_positions": (low, high),
                "joint_velocities": (np.full(ARM, -JOINT_SPEED_BOUND), np.full(ARM, JOINT_SPEED_BOUND))}

