"""`GripperConfig`: the floating gripper's geometry, drives and limits, checked (the robot's ``gym.make`` kwargs
become one in `FloatingGripper.make_config`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from superdex_gym.sim.validation import bounded_real

# m/s: twice this stays below the envs' 6.1 m/s escape speed; measured over 19 200 adversarial world steps (soak
# policies): 68 (Throw) and 277 (PickAndPlace) escape truncations at 5 m/s, 0 and 1 at 3 m/s.
MAX_SPEED_M_S = 3.0


@dataclass(frozen=True)
class GripperConfig:
    palm_half_extents: tuple = (0.012, 0.05, 0.01)  # m
    finger_half_extents: tuple = (0.01, 0.006, 0.025)  # m (x, y thickness, z length)
    max_opening_m: float = 0.08  # distance between the fingers' inner faces when fully open
    density: float = 1000.0  # kg/m^3
    drive_stiffness: float = 1e6  # N/m, pivot-position constraints toward the targets
    # Free fingers are compliant: a squeeze stores force / k of travel, so the pair centres itself on the object and
    # Newton's guess does not start a closing finger inside it (docs/environments.md, Grasping).
    finger_drive_stiffness: float = 1e3  # N/m, used when the fingers are free (not block_gripper)
    finger_step_m: float = 0.016  # most the commanded opening changes per control step (0.2 s from closed to open)
    drive_damping: float = 0.0  # N s/m
    # Capped so a gripper commanded into the cube presses on it instead of launching it (docs/envs_notes.md).
    drive_max_force: float | None = 50.0  # N; None: uncapped
    rotation_stiffness: float = 1e3  # N m/rad, keeps the fingers pointing down
    finger_friction: float = 1.0  # Coulomb coefficient of the fingers (combined with the object's by geometric mean)
    max_step_m: float = 0.05  # grip point displacement per control step at |action| = 1
    # A Cartesian speed limit [m/s] (None: none, |action| = 1 moves max_step_m per axis): with it |action| = 1 moves
    # the grip point max_speed x control_dt per axis and the displacement's norm is capped there (a real arm's limit).
    max_speed_m_s: float | None = None
    block_gripper: bool = True
    workspace_low: tuple = (-0.3, -0.3, 0.005)  # m, grip point limits (z above the table top at 0)
    workspace_high: tuple = (0.3, 0.3, 0.3)

    @property
    def finger_reach_m(self) -> float:
        """Grip point below the palm centre: palm half height + finger length."""
        return self.palm_half_extents[2] + 2 * self.finger_half_extents[2]

    def validate(self) -> "GripperConfig":
        if self.max_speed_m_s is not None:
            bounded_real(self.max_speed_m_s, "gripper_max_speed", 0.0, MAX_SPEED_M_S, "a struck cube leaves at up to "
                         "twice the striker's speed, and the envs' escape-speed guard truncates an episode whose "
                         "bodies pass 6.1 m/s (a UR5's end effector tops out near 3 m/s)", low_open=True)
        for name in ("max_step_m", "finger_drive_stiffness", "finger_step_m"):
            value = getattr(self, name)
            if not (np.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be finite and > 0, got {value!r}")
        lo, hi = np.asarray(self.workspace_low, float), np.asarray(self.workspace_high, float)
        if lo.shape != (3,) or hi.shape != (3,) or np.any(lo >= hi):
            raise ValueError(f"workspace_low must be below workspace_high in every axis, got {lo}, {hi}")
        if lo[2] < 0:
            raise ValueError("workspace_low z must keep the grip point above the table top (z >= 0)")
        if not self.block_gripper and self.drive_max_force is None:
            raise ValueError("free fingers (block_gripper=False) need a drive force cap (gripper_max_force): an "
                             "uncapped compliant finger has no bound on how far an object pushes it")
        return self

    @property
    def finger_stiffness(self) -> float:
        """The fingers' drive stiffness [N/m]: blocked fingers are as stiff as the palm (one rigid pusher)."""
        return self.drive_stiffness if self.block_gripper else self.finger_drive_stiffness

    @property
    def finger_compliance_m(self) -> float:
        """How far the capped drive lets a free finger be pushed off its target [m]; blocked fingers are stiff
        (sub-millimetre, inside the bounds' 1 cm margin)."""
        return 0.0 if self.block_gripper else self.drive_max_force / self.finger_stiffness
