"""Joint trajectories of articulated actors from the released engine (documentation only).

Run with the reference engine's venv (see tests/reference_data/README.md), fp64 build:

    SUPERDEX_PRECISION=fp64 PYTHONPATH=/work/ref312-fp64 /work/ref312/bin/python \
        tools/reference_runs/articulated_runs.py > tests/reference_data/articulated_runs.json

Scenes (links are boxes of half extents LINK_HALF, density 1000, centred on their link frame; gravity default;
BACKWARD_EULER; dt = DT; "tight" solver = abs_tol = rel_tol = 1e-12, max_iter 100):

* ``hanging_chain``: 3 revolute joints about z, root at (0, 2, 0), each joint 0.4 m below the previous link's
  joint, link frame 0.2 m below its joint; started from pose Q0_CHAIN at rest; STEPS steps.
* ``free_spherical``: a FREE root (world_from_root rotated by ROOT_QUAT_XYZW, at ROOT_TRANSLATION), a SPHERICAL
  joint and a REVOLUTE about (1, 0, 1); started from Q0_FREE_SPHERICAL with joint velocities QD0_FREE_SPHERICAL,
  falling freely; ``free_spherical_friction_inertia`` adds spherical joint friction (viscous 0.3, coulomb 0.05)
  and rotor inertia 0.02.
* ``spherical_limits``: a SPHERICAL root joint limited to [-0.2, 0.25] x [-0.3, 0.2] x [-0.1, 0.1] (stiffness
  300, damping 2) and a REVOLUTE; started past the x limit with joint velocities QD0_SPHERICAL_LIMITS.
* ``mixed_limit_damping_hard_tip``: ``mixed`` with the revolute's upper limit at 0.1 (started past it), limit
  damping 5, and a fourth link welded by a HARD joint.
* ``loads_and_range``: SPHERICAL root, REVOLUTE (z), PRISMATIC (x); constant generalized forces LOAD_VALUES on
  every DoF (set_external_forces_on_dofs) and a single-DoF range constraint [-0.1, 0.1] on the revolute (stiffness
  500, damping 3); started from Q0_LOADS at rest.
* ``cycle_chain``: the hanging chain with a cycle joint tying link 2 to link 0 (joint_from_child_link translation
  CYCLE_PIVOT, stiffness CYCLE_STIFFNESS), started from Q0_CYCLE.
* ``free_spherical_com_offsets``: ``free_spherical`` with user centres of mass LINK_COMS (link frames).
* ``pose_controller``: SPHERICAL root, REVOLUTE (z), REVOLUTE (x); a pose controller with joint tracking on every
  joint (stiffness 50, damping 2), link position tracking on link 2 (200, 10) and link rotation tracking on link 1
  (5, 0.5); set_articulated_target_pose(controller_target(k)) before every step k, except
  reset_articulated_target_pose at step 50.
* ``mixed``: prismatic rail along x (drive: single-DoF target constraint to 0.3 m, stiffness 200, damping 5;
  joint friction viscous 0.5, coulomb 0.2), then a revolute about z with a limit [-0.3, 0.3] rad (stiffness 100,
  damping 0) and joint friction (viscous 0.05, coulomb 0.02), then a revolute about z with rotor inertia 0.01;
  started from Q0_MIXED at rest.

Each other integration method (``bdf2``, ``bdf3``, ``dirk22``, ``dirk23``, ``dirk33``, ``symplectic_dirk12``,
``symplectic_dirk22``) holds ``hanging_chain`` and ``free_spherical_friction_inertia`` (and ``mixed`` for BDF2 and
SYMPLECTIC_DIRK12) over METHOD_STEPS steps; multistep methods start up with the lower BDFs.

Each records ``pose`` and ``joint_velocities`` after every step, the solver stats, and each link's mass, CoM
(link frame) and Real6 moment of inertia.
"""

from __future__ import annotations

import json
import math
import sys

import numpy as np

from _common import box_mesh, init, mesh_shape, precision, reals, solver_params, solver_stats, vec

sdp = init()
JT = sdp.ArticulatedJointType
LINK_HALF = (0.05, 0.2, 0.05)
DT = 0.01
STEPS = 100
METHOD_STEPS = 40  # the other integration methods' runs
Q0_CONTROLLER = [0.2, -0.1, 0.3, 0.4, -0.2]
CONTROLLER_HOLD = [0.0, 0.1, -0.2, 0.3, 0.1]
LINK_COMS = [(0.03, -0.05, 0.01), (-0.02, 0.04, 0.02), (0.01, 0.0, -0.03)]  # user CoMs, MoI computed about them
Q0_CHAIN = [0.5, -0.3, 0.2]
Q0_MIXED = [0.05, 0.2, -0.4]
TIGHT = {"abs_tol": 1e-12, "rel_tol": 1e-12, "max_iter": 100}
ROOT_QUAT_XYZW = (0.1, -0.2, 0.3, 0.9273618495495703)  # a unit quaternion: world_from_root is rotated
ROOT_TRANSLATION = (0.3, 2.0, -0.1)
Q0_FREE_SPHERICAL = [0.1, 0.0, -0.2, 0.3, -0.1, 0.2, 0.4, -0.3, 0.2, 0.5]
QD0_FREE_SPHERICAL = [0.5, 1.0, -0.3, 0.2, 1.5, -0.4, 2.0, -1.0, 0.5, -1.0]
Q0_SPHERICAL_LIMITS = [0.3, -0.1, 0.05, 0.2]  # starts past the x limit
QD0_SPHERICAL_LIMITS = [0.0, 2.0, 1.0, 0.0]
Q0_LOADS = [0.1, -0.2, 0.05, 0.0, 0.02]
Q0_CYCLE = [0.3, -0.2, 0.1]
CYCLE_PIVOT = (0.05, -0.2, 0.0)
CYCLE_STIFFNESS = 2000.0
LOAD_DOFS = (0, 1, 2, 3, 4)
LOAD_VALUES = (0.05, -0.03, 0.02, 0.3, -0.5)  # N m on the spherical and revolute DoFs, N on the prismatic


def link(shape, parent, com=None):
    kw = {} if com is None else {"center_of_mass": list(com)}
    return sdp.ArticulatedLinkParams(parent_link=parent, shape=shape, density=1000.0,
                                     parent_joint_from_link=sdp.TransformRT(translation=[0, -0.2, 0]), **kw)


def tight_scene(name, world_from_root=None, method=None):
    """A scene with the tight solver (BACKWARD_EULER unless given) and empty actor params rooted at (0, 2, 0)."""
    scene = sdp.create_scene(name)
    scene.set_solver_params(solver_params(method or sdp.IntegrationMethod.BACKWARD_EULER, **TIGHT))
    root = world_from_root or sdp.TransformRT(translation=[0, 2, 0])
    return scene, sdp.ArticulatedActorParams(name=name, world_from_root=root)


def run(scene, actor, q0, steps, before_step=None) -> dict:
    n = actor.get_num_dofs()
    actor.set_articulated_pose_from_joints(reals(q0))
    pose, vel = reals(np.zeros(n)), reals(np.zeros(n))
    poses, vels, stats = [], [], []
    for k in range(steps):
        if before_step is not None:
            before_step(k)
        scene.step(DT)
        actor.get_articulated_pose(pose)
        actor.get_articulated_joint_velocities(vel)
        poses.append(pose.tolist())
        vels.append(vel.tolist())
        stats.append(solver_stats(scene))
    links = []
    for h in actor.get_nested_link_actors():
        lk = scene.get_actor(h)
        links.append({"mass": lk.get_mass(), "com_local": vec(lk.get_rigid_center_of_mass_local()),
                      "moment_of_inertia_real6": vec(lk.get_rigid_moment_of_inertia_local())})
    return {"q0": list(q0), "dt": DT, "steps": steps, "pose": poses, "joint_velocities": vels, "stats": stats,
            "links": links, "max_newton_iters": max(s["max_non_linear_iters"] for s in stats)}


def hanging_chain(shape, method=None, steps=STEPS) -> dict:
    scene, p = tight_scene("chain", method=method)
    p.joints = [sdp.ArticulatedJointParams(type=JT.REVOLUTE, axis=[0, 0, 1],
                                           parent_link_from_joint=sdp.TransformRT(translation=[0, -0.2 if i else 0, 0]))
                for i in range(3)]
    p.links = [link(shape, i - 1) for i in range(3)]
    return run(scene, scene.create_articulated_actor(p), Q0_CHAIN, steps)


def mixed(shape, limit_damping=0.0, hard_tip=False, upper=0.3, method=None, steps=STEPS) -> dict:
    scene, p = tight_scene("mixed", method=method)
    fr = sdp.ArticulatedJointFrictionParams
    p.joints = [
        sdp.ArticulatedJointParams(type=JT.PRISMATIC, axis=[1, 0, 0], friction=fr(viscous=0.5, coulomb=0.2)),
        sdp.ArticulatedJointParams(type=JT.REVOLUTE, axis=[0, 0, 1],
                                   parent_link_from_joint=sdp.TransformRT(translation=[0, -0.2, 0]),
                                   min_limit=[0, 0, -0.3], max_limit=[0, 0, upper], limit_damping=limit_damping,
                                   friction=fr(viscous=0.05, coulomb=0.02)),
        sdp.ArticulatedJointParams(type=JT.REVOLUTE, axis=[0, 0, 1], inertia=0.01,
                                   parent_link_from_joint=sdp.TransformRT(translation=[0, -0.2, 0])),
    ]
    p.links = [link(shape, i - 1) for i in range(3)]
    if hard_tip:
        p.joints = list(p.joints) + [sdp.ArticulatedJointParams(
            type=JT.HARD, parent_link_from_joint=sdp.TransformRT(translation=[0.1, -0.2, 0]))]
        p.links = list(p.links) + [link(shape, 2)]
    actor = scene.create_articulated_actor(p)
    drive = sdp.ArticulatedSingleDofTargetConstraintParams(actor=actor.get_handle(), joint_index=0, dof_index=0,
                                                           target_value=0.3, stiffness=200.0, damping=5.0)
    scene.create_articulated_single_dof_target_constraint(drive)
    out = run(scene, actor, Q0_MIXED, steps)
    out["drive"] = {"joint_index": 0, "dof_index": 0, "target_value": 0.3, "stiffness": 200.0, "damping": 5.0}
    return out


def free_spherical(shape, spherical_friction=None, spherical_inertia=None, method=None, steps=STEPS,
                   coms=None) -> dict:
    scene, p = tight_scene("free_spherical", sdp.TransformRT(sdp.Quaternion(*ROOT_QUAT_XYZW), ROOT_TRANSLATION),
                           method)
    sph = {} if spherical_friction is None else {"friction": sdp.ArticulatedJointFrictionParams(**spherical_friction)}
    if spherical_inertia is not None:
        sph["inertia"] = spherical_inertia
    p.joints = [
        sdp.ArticulatedJointParams(type=JT.FREE),
        sdp.ArticulatedJointParams(type=JT.SPHERICAL, parent_link_from_joint=sdp.TransformRT(translation=[0.05, -0.2, 0]),
                                   **sph),
        sdp.ArticulatedJointParams(type=JT.REVOLUTE, axis=[1, 0, 1],
                                   parent_link_from_joint=sdp.TransformRT(translation=[0, -0.2, 0.02])),
    ]
    p.links = [link(shape, i - 1, None if coms is None else coms[i]) for i in range(3)]
    p.joint_velocities = list(QD0_FREE_SPHERICAL)
    return run(scene, scene.create_articulated_actor(p), Q0_FREE_SPHERICAL, steps)


def spherical_limits(shape) -> dict:
    scene, p = tight_scene("spherical_limits")
    p.joints = [sdp.ArticulatedJointParams(type=JT.SPHERICAL, min_limit=[-0.2, -0.3, -0.1], max_limit=[0.25, 0.2, 0.1],
                                           limit_stiffness=300.0, limit_damping=2.0),
                sdp.ArticulatedJointParams(type=JT.REVOLUTE, axis=[0, 0, 1],
                                           parent_link_from_joint=sdp.TransformRT(translation=[0, -0.2, 0]))]
    p.links = [link(shape, i - 1) for i in range(2)]
    p.joint_velocities = list(QD0_SPHERICAL_LIMITS)
    return run(scene, scene.create_articulated_actor(p), Q0_SPHERICAL_LIMITS, STEPS)


def spherical_chain(shape, name, third_type, third_axis):
    """A tight scene with a SPHERICAL root, a REVOLUTE about z, then ``third_type`` about / along ``third_axis``."""
    scene, p = tight_scene(name)
    below = sdp.TransformRT(translation=[0, -0.2, 0])
    p.joints = [sdp.ArticulatedJointParams(type=JT.SPHERICAL),
                sdp.ArticulatedJointParams(type=JT.REVOLUTE, axis=[0, 0, 1], parent_link_from_joint=below),
                sdp.ArticulatedJointParams(type=third_type, axis=third_axis, parent_link_from_joint=below)]
    p.links = [link(shape, i - 1) for i in range(3)]
    return scene, scene.create_articulated_actor(p)


def loads_and_range(shape) -> dict:
    scene, actor = spherical_chain(shape, "loads_and_range", JT.PRISMATIC, [1, 0, 0])
    actor.set_external_forces_on_dofs(list(LOAD_DOFS), reals(LOAD_VALUES))
    rng = sdp.ArticulatedSingleDofRangeConstraintParams(actor=actor.get_handle(), joint_index=1, dof_index=0,
                                                        min_value=-0.1, max_value=0.1, stiffness=500.0, damping=3.0)
    scene.create_articulated_single_dof_range_constraint(rng)
    out = run(scene, actor, Q0_LOADS, STEPS)
    out["loads"] = {"dofs": list(LOAD_DOFS), "values": list(LOAD_VALUES)}
    out["range"] = {"joint_index": 1, "dof_index": 0, "min_value": -0.1, "max_value": 0.1, "stiffness": 500.0,
                    "damping": 3.0}
    return out


def cycle_chain(shape) -> dict:
    scene, p = tight_scene("cycle_chain")
    p.joints = [sdp.ArticulatedJointParams(type=JT.REVOLUTE, axis=[0, 0, 1],
                                           parent_link_from_joint=sdp.TransformRT(translation=[0, -0.2 if i else 0, 0]))
                for i in range(3)]
    p.links = [link(shape, i - 1) for i in range(3)]
    p.cycles = [sdp.ArticulatedCycleJointParams(parent_link=0, child_link=2, stiffness=CYCLE_STIFFNESS,
                                                joint_from_child_link=sdp.TransformRT(translation=list(CYCLE_PIVOT)))]
    return run(scene, scene.create_articulated_actor(p), Q0_CYCLE, STEPS)


def controller_target(k: int) -> list:
    """The pose controller's target pose before step k (0-based): a slow wave, then a fixed pose from step 50."""
    if k >= 50:
        return list(CONTROLLER_HOLD)
    return [q + 0.3 * math.sin(0.2 * k + i) for i, q in enumerate(Q0_CONTROLLER)]


def controller_params(saturations=(-1.0, -1.0, -1.0)):
    """Joint tracking 50 / 2 on every joint, link position tracking 200 / 10 on link 2, link rotation tracking
    5 / 0.5 on link 1, with the given saturations (joint, link position, link rotation)."""
    track = sdp.PoseTrackingParams
    params = sdp.PoseControllerParams(3)
    for i in range(3):
        params.joint_tracking[i] = track(stiffness=50.0, damping=2.0, saturation=saturations[0])
    params.link_pos_tracking[2] = track(stiffness=200.0, damping=10.0, saturation=saturations[1])
    params.link_rot_tracking[1] = track(stiffness=5.0, damping=0.5, saturation=saturations[2])
    return params


def pose_controller(shape) -> dict:
    scene, actor = spherical_chain(shape, "pose_controller", JT.REVOLUTE, [1, 0, 0])
    actor.set_articulated_pose_from_joints(reals(Q0_CONTROLLER))
    actor.add_articulated_pose_controller(controller_params())

    def retarget(k):
        target = reals(controller_target(k))
        if k == 50:
            actor.reset_articulated_target_pose(target)
        else:
            actor.set_articulated_target_pose(target)

    out = run(scene, actor, Q0_CONTROLLER, STEPS, retarget)
    out.update({"targets": [controller_target(k) for k in range(STEPS)], "reset_at": 50,
                "joint_tracking": [50.0, 2.0], "link_pos_tracking": {"2": [200.0, 10.0]},
                "link_rot_tracking": {"1": [5.0, 0.5]}})
    return out


def main() -> None:
    shape = mesh_shape(*box_mesh(LINK_HALF))
    out = {"build": precision(), "script": "tools/reference_runs/articulated_runs.py",
           "how": "superdex-physics(-fp64)==1.0.1, Python 3.12.1, initialize(num_worker_threads=0); BACKWARD_EULER, "
                  "abs_tol = rel_tol = 1e-12, max_iter 100; pose and joint velocities after every step",
           "link_half_extents": list(LINK_HALF), "density": 1000.0,
           "hanging_chain": hanging_chain(shape), "mixed": mixed(shape), "free_spherical": free_spherical(shape),
           "free_spherical_friction_inertia": free_spherical(
               shape, spherical_friction={"viscous": 0.3, "coulomb": 0.05}, spherical_inertia=0.02),
           "mixed_limit_damping_hard_tip": mixed(shape, limit_damping=5.0, hard_tip=True, upper=0.1),
           "spherical_limits": spherical_limits(shape), "loads_and_range": loads_and_range(shape),
           "cycle_chain": cycle_chain(shape), "pose_controller": pose_controller(shape),
           "free_spherical_com_offsets": free_spherical(shape, coms=LINK_COMS)}
    fi = {"spherical_friction": {"viscous": 0.3, "coulomb": 0.05}, "spherical_inertia": 0.02}
    im = sdp.IntegrationMethod
    for method in (im.BDF2, im.BDF3, im.DIRK22, im.DIRK23, im.DIRK33, im.SYMPLECTIC_DIRK12, im.SYMPLECTIC_DIRK22):
        runs = {"hanging_chain": hanging_chain(shape, method, METHOD_STEPS),
                "free_spherical_friction_inertia": free_spherical(shape, method=method, steps=METHOD_STEPS, **fi)}
        if method in (im.BDF2, im.SYMPLECTIC_DIRK12):
            runs["mixed"] = mixed(shape, method=method, steps=METHOD_STEPS)
        out[str(method).split(".")[-1].lower()] = runs
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
