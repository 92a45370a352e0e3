"""The floating parallel-jaw gripper (DESIGN section 3): a palm and two fingers, dynamic rigid actors without
gravity, each driven toward a commanded world target by compliant pivot-position and pivot-rotation constraints,
the way Fetch's mocap weld drives its gripper.

Frames: Z up, the fingers hang below the palm along -Z and close along the world Y axis. The *grip point* is the
point between the finger tips; actions move it. All arrays have a leading world axis W.

Action ``Box(-1, 1, (4,))``: the grip point target moves by ``action[:3] * max_step_m`` from the measured grip
point (clipped to the workspace); ``action[3]`` sets the finger opening unless the fingers are blocked. Targets
are interpolated linearly over the physics substeps of one control step.
"""

from __future__ import annotations

import numpy as np

import superdex_gym.sim as mochi
from superdex_gym.sim.jit import kernel_array
from superdex_gym.sim.validation import as_bool, as_real, real_array

from ..core.config import GRASP_CONTACT, V_MAX, clip
from ..core.kernels import plan_action
from .base import Robot
from .gripper_config import GripperConfig

COLOR = (0.55, 0.57, 0.62)


class FloatingGripper(Robot):
    """The robot: ``build`` creates its actors and drives in a scene; then it maps actions to drive targets,
    reports its observation parts and their real bounds, and keeps its commanded targets (part of the state)."""

    action_dim = 4
    observation_parts = ("grip", "fingers", "grip_velocity", "finger_velocity")

    def __init__(self, config: GripperConfig):
        self.config = config.validate()
        self._workspace_low = np.asarray(config.workspace_low, dtype=np.float64)
        self._workspace_high = np.asarray(config.workspace_high, dtype=np.float64)
        self._tip = np.array([0.0, 0.0, -self.config.finger_half_extents[2]])  # grip point from the fingers' mean
        self._reach = np.array([0.0, 0.0, self.config.finger_reach_m])  # palm centre from the grip point
        self._planned = {}  # fraction of the control step -> the bodies' targets there (`begin_action`)
        self._plan_inputs = None  # (model, fractions, finger rows, their com_local, fractions array): `_plan_compiled`

    @staticmethod
    def make_config(block_gripper=True, gripper_max_force=50.0, gripper_max_speed=None) -> GripperConfig:
        """The robot's ``gym.make`` kwargs: ``block_gripper`` (the finger command is ignored, as in Fetch),
        ``gripper_max_force``, the cap [N] on each body's drive force (None: uncapped), and ``gripper_max_speed``,
        a Cartesian speed limit [m/s] that also scales the action (None: 5 cm per control step per axis)."""
        if gripper_max_force is not None and (
                isinstance(gripper_max_force, (bool, np.bool_))
                or not (isinstance(gripper_max_force, (int, float, np.integer, np.floating))
                        and np.isfinite(gripper_max_force) and gripper_max_force > 0)):
            raise ValueError(f"gripper_max_force must be None or a finite force > 0 [N], got {gripper_max_force!r}")
        return GripperConfig(block_gripper=as_bool(block_gripper, "block_gripper"),
                             drive_max_force=None if gripper_max_force is None else float(gripper_max_force),
                             max_speed_m_s=None if gripper_max_speed is None
                             else as_real(gripper_max_speed, "gripper_max_speed"))

    # --- what a task may read (envs/robots/base.py) ----------------------------------------------------------------
    def workspace(self) -> tuple[np.ndarray, np.ndarray]:
        return self._workspace_low.copy(), self._workspace_high.copy()

    @property
    def max_opening_m(self) -> float:
        return self.config.max_opening_m

    @property
    def drive_max_force_n(self) -> float | None:
        return self.config.drive_max_force

    def footprint_m(self) -> float:
        f = self.config.finger_half_extents  # the closed fingers side by side, their corners
        return float(np.hypot(f[0], 2 * f[1]))

    def reach_margin_m(self) -> float:
        g = self.config  # the palm's half width, or the open fingers' outer faces
        return max(g.palm_half_extents[1], 0.5 * g.max_opening_m + 2 * g.finger_half_extents[1])

    def check_home(self, home: np.ndarray) -> None:
        lo, hi = self._workspace_low, self._workspace_high
        if np.any(home < lo) or np.any(home > hi):
            raise ValueError(f"the gripper's home {home.tolist()} must lie inside the workspace {lo.tolist()} .. "
                             f"{hi.tolist()}")

    def build(self, scene, layer: str = "gripper") -> None:
        c = self.config
        self.scene = scene
        contact = mochi.ContactParams(coulomb_friction_coefficient=c.finger_friction)
        finger_contact = contact if c.block_gripper else mochi.ContactParams(
            coulomb_friction_coefficient=c.finger_friction, **GRASP_CONTACT)
        self.palm = scene.create_rigid_actor(
            name="palm", shape=mochi.create_box_mesh_shape(list(c.palm_half_extents)), density=c.density,
            has_gravity=False, layer=layer, contact=contact, collider_type=mochi.ColliderType.BOX,
        )
        self.fingers = [
            scene.create_rigid_actor(
                name=f"finger_{side}", shape=mochi.create_box_mesh_shape(list(c.finger_half_extents)),
                density=c.density, has_gravity=False, layer=layer, contact=finger_contact,
                collider_type=mochi.ColliderType.BOX,
            )
            for side in ("left", "right")
        ]
        self.actors = [self.palm, *self.fingers]
        self.colors = {a.get_name(): COLOR for a in self.actors}
        # The gripper's own bodies overlap at the joints: no contact among them (its layer against itself).
        scene.enable_layer_contact_symmetric(layer, layer, False)
        stiffness = [c.drive_stiffness, c.finger_stiffness, c.finger_stiffness]
        self._position = [
            scene.create_rigid_pivot_position_constraint(
                actor=a, local_position=[0.0, 0.0, 0.0], target_position=[0.0, 0.0, 0.0],
                stiffness=k, damping=c.drive_damping, saturation=-1.0 if c.drive_max_force is None
                else c.drive_max_force / k,
            )
            for a, k in zip(self.actors, stiffness)
        ]
        for a in self.actors:
            scene.create_rigid_pivot_rotation_constraint(
                actor=a, local_rotation=[0.0, 0.0, 0.0], target_rotation=[0.0, 0.0, 0.0],
                stiffness=c.rotation_stiffness,
            )

    # --- geometry -------------------------------------------------------------------------------------------------
    def body_targets(self, grip_point: np.ndarray, opening: np.ndarray) -> np.ndarray:
        """Centres (W, 3 bodies, 3) of palm, left and right finger for a grip point (W, 3) and opening (W,) [m]."""
        c = self.config
        # Filled in place (the same operations as stacking the parts; this runs every substep).
        out = np.empty((grip_point.shape[0], 3, 3))
        out[:, 0] = grip_point + self._reach
        finger_z = out[:, 0, 2] - c.palm_half_extents[2] - c.finger_half_extents[2]
        offset = 0.5 * opening + c.finger_half_extents[1]  # finger centre from the grip axis
        out[:, 1:, 0] = grip_point[:, 0, None]
        out[:, 1, 1] = grip_point[:, 1] + offset
        out[:, 2, 1] = grip_point[:, 1] - offset
        out[:, 1:, 2] = finger_z[:, None]
        return out

    def boxes_at(self, grip_point: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The closed gripper's bodies with the grip point at ``grip_point`` (3,), as axis-aligned boxes: centres
        (3, 3) and half extents (3, 3) [m] (tasks check that objects do not start inside it)."""
        g = self.config
        centres = self.body_targets(np.asarray(grip_point)[None], np.zeros(1))[0]
        return centres, np.array([g.palm_half_extents, g.finger_half_extents, g.finger_half_extents])

    def place(self, grip_point: np.ndarray, opening: np.ndarray, worlds: np.ndarray) -> None:
        """Teleport the gripper (at rest) and its targets in ``worlds``; grip_point (K, 3), opening (K,)."""
        centres = self.body_targets(grip_point, opening)
        quat = np.zeros((len(worlds), 3, 4))
        quat[..., 3] = 1.0
        self.scene.set_actor_poses(self.actors, centres, quat, worlds=worlds)
        self.scene.set_actor_velocities(self.actors, np.zeros((len(worlds), 3, 3)), np.zeros((len(worlds), 3, 3)),
                                        worlds=worlds)
        self.set_targets(grip_point, opening, worlds, teleport=True)

    def set_targets(self, grip_point: np.ndarray, opening: np.ndarray, worlds=None, teleport: bool = False) -> None:
        """Commanded grip point (K, 3) and opening (K,) for ``worlds`` (None = all)."""
        centres = self.body_targets(grip_point, opening)
        self.scene.set_target_positions(self._position, centres, world=worlds)
        if teleport:
            for constraint in self._position:
                constraint.update_old_target(world=worlds)

    # --- commands (the robot's part of the state) -----------------------------------------------------------------
    def start_commands(self, num_worlds: int, home: np.ndarray, control_dt: float = 0.04) -> None:
        c = self.config
        # grip displacement at |action| = 1 per axis, and the cap on its norm (inf: per-axis limits only)
        self.max_step_m = c.max_step_m if c.max_speed_m_s is None else c.max_speed_m_s * control_dt
        self._max_travel_m = np.inf if c.max_speed_m_s is None else self.max_step_m
        self.home = np.asarray(home, dtype=np.float64)
        self._target = np.repeat(self.home[None], num_worlds, axis=0)  # commanded grip point (W, 3)
        self._opening = np.zeros(num_worlds)  # commanded finger opening (W,) m

    def reset_commands(self, worlds: np.ndarray) -> None:
        """The commands of a world restored to the template: grip point at home, fingers closed."""
        self._target[worlds] = self.home
        self._opening[worlds] = 0.0

    def begin_action(self, actions: np.ndarray, fractions=()) -> None:
        """Targets of one control step from finite (W, 4) actions (clipped to [-1, 1], as documented); the bodies'
        targets at ``fractions`` of the step (the substeps' ends) are computed here at once, for `drive`."""
        if fractions and not np.isfinite(self._max_travel_m) and actions.dtype == np.float64:
            self._plan_compiled(actions, fractions)  # the same values as below, in one call
            return
        actions = clip(actions, -1.0, 1.0)
        grip = _mean_of_two(self.scene.get_actor_translations(self.fingers)) + self._tip  # grip_point's, no velocity
        c = self.config
        self._start = self._target.copy(), self._opening.copy()
        if c.block_gripper:
            opening = np.zeros(len(actions))
        else:  # rate-limited: fingers closed in one control step slam into an object at ~1 m/s
            wanted = 0.5 * (actions[:, 3] + 1.0) * c.max_opening_m
            opening = self._opening + clip(wanted - self._opening, -c.finger_step_m, c.finger_step_m)
        move = actions[:, :3] * self.max_step_m
        if np.isfinite(self._max_travel_m):
            norm = np.linalg.norm(move, axis=1, keepdims=True)
            move = move * np.minimum(1.0, self._max_travel_m / np.maximum(norm, 1e-12))
        self._end = (clip(grip + move, self._workspace_low, self._workspace_high), opening)
        self._planned = {}
        if fractions:  # `drive`'s arithmetic with a fraction per row, so the same values
            (t0, o0), (t1, o1) = self._start, self._end
            f = np.array(fractions)
            num_worlds = len(o0)
            centres = self.body_targets((t0 + f[:, None, None] * (t1 - t0)).reshape(-1, 3),
                                        (o0 + f[:, None] * (o1 - o0)).reshape(-1))
            self._planned = dict(zip(fractions, centres.reshape(len(f), num_worlds, 3, 3)))

    def _plan_compiled(self, actions: np.ndarray, fractions) -> None:
        """`begin_action` without a speed cap in one kernel call (envs/core/kernels.py `plan_action`)."""
        scene, c = self.scene, self.config
        model = scene.get_model()
        cached = self._plan_inputs
        if cached is None or cached[0] is not model or cached[1] != fractions:
            rows = scene.get_actor_rows(self.fingers)
            cached = self._plan_inputs = (model, fractions, rows, kernel_array(model.bodies.com_local[rows]),
                                          np.array(fractions, dtype=np.float64))
        _, _, rows, com_local, f = cached
        cur = scene.current_kinematics()  # read only
        com, rot = kernel_array(cur.com_position), kernel_array(cur.rotation)
        num_worlds = len(actions)
        target, opening = kernel_array(self._target), kernel_array(self._opening)
        self._start = target.copy(), opening.copy()
        end_target, end_opening = np.empty((num_worlds, 3)), np.empty(num_worlds)
        planned = np.empty((len(f), num_worlds, 3, 3))
        plan_action(kernel_array(actions), com, rot, rows, com_local, self._tip, target, opening, bool(c.block_gripper),
                    float(c.max_opening_m), float(c.finger_step_m), float(self.max_step_m), self._workspace_low,
                    self._workspace_high, f, self._reach, float(c.palm_half_extents[2]), float(c.finger_half_extents[2]),
                    float(c.finger_half_extents[1]), end_target, end_opening, planned)
        self._end = (end_target, end_opening)
        self._planned = dict(zip(fractions, planned))

    def drive(self, fraction: float) -> None:
        """Drive targets ``fraction`` of the way from the step's start commands to its end ones."""
        planned = self._planned.get(fraction)
        if planned is not None:
            self.scene.set_target_positions(self._position, planned)
            return
        (t0, o0), (t1, o1) = self._start, self._end
        self.set_targets(t0 + fraction * (t1 - t0), o0 + fraction * (o1 - o0))

    def end_action(self) -> None:
        self._target, self._opening = self._end

    def step_commands(self, worlds: np.ndarray) -> tuple:
        """The current control step's start and end commands of ``worlds`` (copies), for `set_step_commands`."""
        (t0, o0), (t1, o1) = self._start, self._end
        return (t0[worlds], o0[worlds]), (t1[worlds], o1[worlds])

    def set_step_commands(self, commands: tuple) -> None:
        """Make a `step_commands` this robot's control step (its worlds are the ones the commands were taken of)."""
        self._start, self._end = commands
        self._planned = {}

    def get_state(self) -> dict:
        return {"target": self._target.copy(), "opening": self._opening.copy()}

    def check_state(self, state) -> dict:
        """The commanded targets of a `get_state`, checked against this robot's worlds (ValueError otherwise)."""
        if not isinstance(state, dict) or set(state) != {"target", "opening"}:
            raise ValueError("state['worlds']['robot'] must have keys ['opening', 'target']")
        out = {}
        for key, ref in (("target", self._target), ("opening", self._opening)):
            value = real_array(state[key], f"state['worlds']['robot']['{key}']")
            if value.shape != ref.shape or not np.all(np.isfinite(value)):
                raise ValueError(f"state['worlds']['robot']['{key}'] must be {ref.shape} finite numbers, got shape "
                                 f"{value.shape}")
            out[key] = value
        return out

    def set_state(self, state: dict) -> None:
        self._target, self._opening = state["target"].copy(), state["opening"].copy()

    # --- observation ----------------------------------------------------------------------------------------------
    def grip_point(self) -> tuple[np.ndarray, np.ndarray]:
        """Measured grip point (W, 3) [m] and its velocity (W, 3) [m/s]: between the finger tips."""
        return self._grip_point(*self._finger_motion())

    def _finger_motion(self) -> tuple[np.ndarray, np.ndarray]:
        """The fingers' root translations (W, 2, 3) [m] and linear velocities (W, 2, 3) [m/s]."""
        return self.scene.get_actor_translations(self.fingers), self.scene.get_actor_velocities(self.fingers)[0]

    def _grip_point(self, pos: np.ndarray, lin: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return _mean_of_two(pos) + self._tip, _mean_of_two(lin)

    def observation(self) -> dict:
        """Grip point (W, 3) [m], finger offsets from the grip axis along Y (W, 2) [m], grip velocity (W, 3) and
        finger velocities (W, 2) [m/s] (velocities clipped to +-V_MAX, see ``observation_bounds``)."""
        pos, lin = self._finger_motion()  # read once: the grip point and the finger parts share them
        grip, grip_vel = self._grip_point(pos, lin)
        fingers = pos[:, :, 1] - _mean_of_two(pos[:, :, 1])[:, None]
        finger_vel = lin[:, :, 1] - _mean_of_two(lin[:, :, 1])[:, None]
        return {"grip": grip, "fingers": fingers, "grip_velocity": clip(grip_vel, -V_MAX, V_MAX),
                "finger_velocity": clip(finger_vel, -V_MAX, V_MAX)}

    def observed_fingers(self):
        """(the two fingers, the grip point's offset from their mean root translation (3,)) when `observation` is
        this class's (the worlds compute it compiled then, envs/core/kernels.py); None otherwise."""
        if type(self).observation is not FloatingGripper.observation:
            return None
        return list(self.fingers), self._tip

    def observation_bounds(self) -> dict:
        """Real bounds of the observation parts, each a (low, high) pair.

        The grip point stays in the workspace, give or take how far a capped finger drive can be pushed off its
        target (``finger_compliance_m``: 50 mm for free fingers) plus a 1 cm margin; the
        fingers within half the maximum opening plus their thickness and that compliance; the gripper moves at
        most max_step / control_dt (1.25 m/s by default) < ``V_MAX``, to which velocities are clipped."""
        g = self.config
        margin = 0.01 + g.finger_compliance_m
        finger = 0.5 * g.max_opening_m + 2 * g.finger_half_extents[1] + margin
        return {
            "grip": (self._workspace_low - margin, self._workspace_high + margin),
            "fingers": (np.full(2, -finger), np.full(2, finger)),
            "grip_velocity": (np.full(3, -V_MAX), np.full(3, V_MAX)),
            "finger_velocity": (np.full(2, -V_MAX), np.full(2, V_MAX)),
        }


# Per-step helper without np.mean's Python wrapper (it costs more than the
# arithmetic on a few numbers); the same operations, so the same bits.
def _mean_of_two(parts: np.ndarray) -> np.ndarray:
    """parts.mean(axis=1) of the two fingers (W, 2, ...): ((0 + a) + b) / 2, as np.mean sums from its +0 identity
    (so two -0.0 give +0.0) and divides by the count."""
    return ((0.0 + parts[:, 0]) + parts[:, 1]) / 2.0

