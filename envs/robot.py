"""The floating parallel-jaw gripper (DESIGN section 3): a palm and two fingers, dynamic rigid actors without
gravity, each driven toward a commanded world target by compliant pivot-position and pivot-rotation constraints,
the way Fetch's mocap weld drives its gripper.

Frames: Z up, the fingers hang below the palm along -Z and close along the world Y axis. The *grip point* is the
point between the finger tips; actions move it. All arrays have a leading world axis W.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import superdex_gym.sim as mochi


@dataclass(frozen=True)
class GripperConfig:
    palm_half_extents: tuple = (0.012, 0.05, 0.01)  # m
    finger_half_extents: tuple = (0.01, 0.006, 0.025)  # m (x, y thickness, z length)
    max_opening_m: float = 0.08  # distance between the fingers' inner faces when fully open
    density: float = 1000.0  # kg/m^3
    drive_stiffness: float = 1e6  # N/m, pivot-position constraints toward the targets
    drive_damping: float = 0.0  # N s/m
    # Each body's drive force is capped (constraint saturation = max force / stiffness): a gripper commanded into
    # the cube presses with at most this force instead of k times the overlap. Uncapped, a finger driven 3.5 cm
    # down into the cube squeezed it against the table with ~3.5e4 N and launched it at > 10 m/s out of the arena
    # (about once per 10^5 random-action world steps, measured). A 500 N cap still shot a cube at 4.8 m/s
    # through a wall (seed 7) and flung a 10 g cube out of the arena; 50 N: 0 out-of-bounds observations in
    # 2 x 1.28e5 world steps and with the 10 g cube (the energy a squeeze can store scales with the force).
    # Free motion needs < 5 N; pushing the cube 0.3 N.
    drive_max_force: float | None = 50.0  # N; None: uncapped
    rotation_stiffness: float = 1e3  # N m/rad, keeps the fingers pointing down
    finger_friction: float = 1.0  # Coulomb coefficient of the fingers (combined with the object's by geometric mean)

    @property
    def finger_reach_m(self) -> float:
        """Grip point below the palm centre: palm half height + finger length."""
        return self.palm_half_extents[2] + 2 * self.finger_half_extents[2]


class FloatingGripper:
    """Creates the gripper's actors and constraints in ``scene`` and drives them."""

    def __init__(self, scene, config: GripperConfig, layer: str = "gripper"):
        self.config = config
        self.scene = scene
        contact = mochi.ContactParams(coulomb_friction_coefficient=config.finger_friction)
        self.palm = scene.create_rigid_actor(
            name="palm", shape=mochi.create_box_mesh_shape(list(config.palm_half_extents)), density=config.density,
            has_gravity=False, layer=layer, contact=contact, collider_type=mochi.ColliderType.BOX,
        )
        self.fingers = [
            scene.create_rigid_actor(
                name=f"finger_{side}", shape=mochi.create_box_mesh_shape(list(config.finger_half_extents)),
                density=config.density, has_gravity=False, layer=layer, contact=contact,
                collider_type=mochi.ColliderType.BOX,
            )
            for side in ("left", "right")
        ]
        self.actors = [self.palm, *self.fingers]
        # The gripper's own bodies overlap at the joints: no contact among them (its layer against itself).
        scene.enable_layer_contact_symmetric(layer, layer, False)
        self._position = [
            scene.create_rigid_pivot_position_constraint(
                actor=a, local_position=[0.0, 0.0, 0.0], target_position=[0.0, 0.0, 0.0],
                stiffness=config.drive_stiffness, damping=config.drive_damping,
                saturation=-1.0 if config.drive_max_force is None else config.drive_max_force / config.drive_stiffness,
            )
            for a in self.actors
        ]
        self._rotation = [
            scene.create_rigid_pivot_rotation_constraint(
                actor=a, local_rotation=[0.0, 0.0, 0.0], target_rotation=[0.0, 0.0, 0.0],
                stiffness=config.rotation_stiffness,
            )
            for a in self.actors
        ]

    # --- geometry -------------------------------------------------------------------------------------------------
    def body_targets(self, grip_point: np.ndarray, opening: np.ndarray) -> np.ndarray:
        """Centres (W, 3 bodies, 3) of palm, left and right finger for a grip point (W, 3) and opening (W,) [m]."""
        c = self.config
        palm = grip_point + np.array([0.0, 0.0, c.finger_reach_m])
        finger_z = palm[:, 2] - c.palm_half_extents[2] - c.finger_half_extents[2]
        offset = 0.5 * opening + c.finger_half_extents[1]  # finger centre from the grip axis
        left = np.stack([grip_point[:, 0], grip_point[:, 1] + offset, finger_z], axis=1)
        right = np.stack([grip_point[:, 0], grip_point[:, 1] - offset, finger_z], axis=1)
        return np.stack([palm, left, right], axis=1)

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
        for k, constraint in enumerate(self._position):
            constraint.set_target_position(centres[:, k], world=worlds)
            if teleport:
                constraint.update_old_target(world=worlds)

    # --- state ----------------------------------------------------------------------------------------------------
    def grip_point(self) -> tuple[np.ndarray, np.ndarray]:
        """Measured grip point (W, 3) [m] and its velocity (W, 3) [m/s]: between the finger tips."""
        pos = self.scene.get_actor_translations(self.fingers)
        lin, _ = self.scene.get_actor_velocities(self.fingers)
        tip = np.array([0.0, 0.0, -self.config.finger_half_extents[2]])
        return pos.mean(axis=1) + tip, lin.mean(axis=1)

    def finger_state(self) -> tuple[np.ndarray, np.ndarray]:
        """Finger offsets from the grip axis along Y (W, 2) [m] and their velocities (W, 2) [m/s]."""
        pos = self.scene.get_actor_translations(self.fingers)
        lin, _ = self.scene.get_actor_velocities(self.fingers)
        centre = pos[:, :, 1].mean(axis=1, keepdims=True)
        return pos[:, :, 1] - centre, lin[:, :, 1] - lin[:, :, 1].mean(axis=1, keepdims=True)
