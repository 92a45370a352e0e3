"""The Franka Emika Panda as data, and as the engine's articulated actor (`panda_actor_params`).

Sources (facts only): the kinematics (joint origins and axes), position limits, link masses, CoMs and inertias and
the joints' armature are MuJoCo Menagerie's ``franka_emika_panda/panda.xml`` (Apache-2.0), which match Franka's
URDF (``franka_description``, as pybullet_data ships it) joint for joint; velocity and torque limits are Franka's
published ones (the URDF's ``limit`` tags; Franka Control Interface documentation). The collision geometry is one
oriented box per link, the minimum-volume box around the link's collision mesh from ``franka_description``
(`tools/fit_panda_collision.py` fits and prints them; each box's volume is 1.3-2.0x its mesh's convex hull): boxes
are the engine's cheapest colliders besides spheres and planes, and one shape per link is what a link holds.

Frames: the base (link0) at ``world_from_base``, z up; every arm joint turns about its frame's z axis; the hand
is welded to link7's flange 0.107 m along z, turned -45 degrees about z; the fingers slide along +-y of the hand
(0..0.04 m each, Franka's hand: 8 cm opening).
"""

from __future__ import annotations

import numpy as np

import superdex_gym.sim as mochi
from superdex_gym.sim.articulated.params import (
    ArticulatedActorParams, ArticulatedJointParams, ArticulatedJointType, ArticulatedLinkParams,
)

JT = ArticulatedJointType
HALF_PI = np.pi / 2

# name, parent, joint type, parent-frame translation [m], parent-frame rotation (rotation vector) [rad], axis
KINEMATICS = (
    ("link0", -1, JT.HARD, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), (0.0, 0.0, 0.0)),
    ("link1", 0, JT.REVOLUTE, (0.0, 0.0, 0.333), (0.0, 0.0, 0.0), (0.0, 0.0, 1.0)),
    ("link2", 1, JT.REVOLUTE, (0.0, 0.0, 0.0), (-HALF_PI, 0.0, 0.0), (0.0, 0.0, 1.0)),
    ("link3", 2, JT.REVOLUTE, (0.0, -0.316, 0.0), (HALF_PI, 0.0, 0.0), (0.0, 0.0, 1.0)),
    ("link4", 3, JT.REVOLUTE, (0.0825, 0.0, 0.0), (HALF_PI, 0.0, 0.0), (0.0, 0.0, 1.0)),
    ("link5", 4, JT.REVOLUTE, (-0.0825, 0.384, 0.0), (-HALF_PI, 0.0, 0.0), (0.0, 0.0, 1.0)),
    ("link6", 5, JT.REVOLUTE, (0.0, 0.0, 0.0), (HALF_PI, 0.0, 0.0), (0.0, 0.0, 1.0)),
    ("link7", 6, JT.REVOLUTE, (0.088, 0.0, 0.0), (HALF_PI, 0.0, 0.0), (0.0, 0.0, 1.0)),
    ("hand", 7, JT.HARD, (0.0, 0.0, 0.107), (0.0, 0.0, -np.pi / 4), (0.0, 0.0, 0.0)),
    ("left_finger", 8, JT.PRISMATIC, (0.0, 0.0, 0.0584), (0.0, 0.0, 0.0), (0.0, 1.0, 0.0)),
    ("right_finger", 8, JT.PRISMATIC, (0.0, 0.0, 0.0584), (0.0, 0.0, np.pi), (0.0, 1.0, 0.0)),
)
ARM_JOINTS = 7
# position limits [rad] (fingers [m]), velocity limits [rad/s] ([m/s]), torque limits [N m] ([N]), per DoF
LOWER = (-2.8973, -1.7628, -2.8973, -3.0718, -2.8973, -0.0175, -2.8973, 0.0, 0.0)
UPPER = (2.8973, 1.7628, 2.8973, -0.0698, 2.8973, 3.7525, 2.8973, 0.04, 0.04)
MAX_VELOCITY = (2.175, 2.175, 2.175, 2.175, 2.61, 2.61, 2.61, 0.2, 0.2)
MAX_EFFORT = (87.0, 87.0, 87.0, 87.0, 12.0, 12.0, 12.0, 20.0, 20.0)
ARMATURE = 0.1  # kg m^2, the arm joints' reflected rotor inertia (Menagerie)
# a ready pose of the arm (the hand pointing down over the table in front of the base)
HOME = (0.0, -0.785398, 0.0, -2.356194, 0.0, 1.570796, 0.785398, 0.04, 0.04)

# mass [kg], CoM [m] and inertia about the CoM (ixx, iyy, izz, ixy, ixz, iyz) [kg m^2], link axes (Menagerie)
INERTIALS = {
    "link0": (0.629769, (-0.041018, -0.00014, 0.049974), (0.00315, 0.00388, 0.004285, 8.2904e-7, 0.00015, 8.2299e-6)),
    "link1": (4.970684, (0.003875, 0.002081, -0.04762), (0.70337, 0.70661, 0.009117, -0.000139, 0.006772, 0.019169)),
    "link2": (0.646926, (-0.003141, -0.02872, 0.003495), (0.007962, 0.02811, 0.025995, -0.003925, 0.010254, 0.000704)),
    "link3": (3.228604, (0.027518, 0.039252, -0.066502), (0.037242, 0.036155, 0.01083, -0.004761, -0.011396, -0.012805)),
    "link4": (3.587895, (-0.05317, 0.104419, 0.027454), (0.025853, 0.019552, 0.028323, 0.007796, -0.001332, 0.008641)),
    "link5": (1.225946, (-0.011953, 0.041065, -0.038437), (0.035549, 0.029474, 0.008627, -0.002117, -0.004037, 0.000229)),
    "link6": (1.666555, (0.060149, -0.014117, -0.010517), (0.001964, 0.004354, 0.005433, 0.000109, -0.001158, 0.000341)),
    "link7": (0.735522, (0.010517, -0.004252, 0.061597), (0.012516, 0.010027, 0.004815, -0.000428, -0.001196, -0.000741)),
    "hand": (0.73, (-0.01, 0.0, 0.03), (0.001, 0.0025, 0.0017, 0.0, 0.0, 0.0)),
    "left_finger": (0.015, (0.0, 0.0, 0.0), (2.375e-6, 2.375e-6, 7.5e-7, 0.0, 0.0, 0.0)),
    "right_finger": (0.015, (0.0, 0.0, 0.0), (2.375e-6, 2.375e-6, 7.5e-7, 0.0, 0.0, 0.0)),
}

# collision box per link: centre [m], rotation (x, y, z, w) and half extents [m] in the link frame
# (tools/fit_panda_collision.py; the comment is the box's volume over its mesh's convex hull volume)
COLLISION_BOXES = {
    "link0": ((-0.04077, -0.00811, 0.06999), (0.70378, 0.06871, -0.70376, 0.0686), (0.07001, 0.09305, 0.11294)),  # 1.96
    "link1": ((-1e-05, -0.03468, -0.07552), (-0.0006, -0.14864, 0.98889, -0.00065), (0.05505, 0.07105, 0.13776)),  # 1.45
    "link2": ((3e-05, -0.0764, 0.0345), (0.00105, 0.80402, -0.5946, 9e-05), (0.05504, 0.07106, 0.13869)),  # 1.44
    "link3": ((0.03334, 0.02694, -0.04147), (0.13048, 0.33348, 0.70785, 0.60886), (0.06267, 0.06586, 0.12412)),  # 1.76
    "link4": ((-0.04942, 0.04243, 0.02662), (0.27034, 0.51951, -0.34347, 0.73421), (0.06269, 0.06664, 0.12512)),  # 1.76
    "link5": ((-0.00304, 0.04262, -0.1089), (0.01763, 0.99191, -0.12506, 0.01298), (0.05496, 0.0648, 0.16973)),  # 1.41
    "link6": ((0.04192, 0.01477, 0.01065), (0.00464, -0.6255, -0.00021, 0.78021), (0.04412, 0.06668, 0.09125)),  # 1.49
    "link7": ((0.01202, 0.01205, 0.07942), (-0.65311, -0.27084, 0.65329, -0.27075), (0.02742, 0.04388, 0.07091)),  # 1.53
    "hand": ((-0.00426, -0.00177, 0.02049), (0.08713, 0.70206, -0.70127, 0.08797), (0.03125, 0.0462, 0.10224)),  # 1.67
    "finger": ((6e-05, 0.01269, 0.02687), (0.99937, 0.00177, -0.0026, -0.03522), (0.01049, 0.012, 0.02765)),  # 1.27
}


def collision_shape(link: str):
    """The link's collision box as an engine shape (both fingers use the finger's)."""
    centre, quat, half = COLLISION_BOXES["finger" if link.endswith("finger") else link]
    q = np.asarray(quat, dtype=np.float64)
    return mochi.create_box_mesh_shape(half, center=centre, rotation=tuple(q / np.linalg.norm(q)))


def panda_actor_params(name: str = "panda", world_from_base=None, gravity_compensated: bool = True,
                       limit_stiffness: float = 100.0) -> ArticulatedActorParams:
    """The Panda (7 revolute joints, the hand welded to the flange, two prismatic fingers) as one articulated
    actor with a fixed base. ``gravity_compensated``: the links feel no gravity (as the released engine's robot
    example runs its arm: the controller's gravity compensation, exact); ``limit_stiffness``: the soft position
    limits' stiffness (the reference's default 100)."""
    links, joints = [], []
    for k, (link, parent, jtype, translation, rotvec, axis) in enumerate(KINEMATICS):
        mass, com, (ixx, iyy, izz, ixy, ixz, iyz) = INERTIALS[link]
        links.append(ArticulatedLinkParams(
            name=link, parent_link=parent, shape=collision_shape(link), has_gravity=not gravity_compensated,
            mass=mass, center_of_mass=com, moment_of_inertia=(ixx, ixy, ixz, iyy, iyz, izz)))
        joint = ArticulatedJointParams(
            name=f"{link}_joint", type=jtype, axis=axis,
            parent_link_from_joint=mochi.TransformRT(mochi.Quaternion.from_rotation_vector(rotvec), translation))
        if jtype == JT.REVOLUTE:
            joint.inertia = ARMATURE
        if jtype in (JT.REVOLUTE, JT.PRISMATIC):
            dof = k - 1 if jtype == JT.REVOLUTE else (7 if link == "left_finger" else 8)  # link1..7: DoFs 0..6
            joint.min_limit = tuple(LOWER[dof] * np.asarray(axis))
            joint.max_limit = tuple(UPPER[dof] * np.asarray(axis))
            joint.limit_stiffness = limit_stiffness
        joints.append(joint)
    return ArticulatedActorParams(name=name, world_from_root=world_from_base or mochi.TransformRT(), links=links,
                                  joints=joints)
