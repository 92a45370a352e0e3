"""The numpy oracle of articulated actors (sim/articulated/oracle.py) against the released engine's fp64 joint
trajectories at tight solver tolerances (reference_data/articulated_runs.json, made by
tools/reference_runs/articulated_runs.py; its header says how). No contact, so the issue's target is 1e-6.

Measured here: one step from the reference's own state agrees to ~2e-12 (both Newtons stop near a 1e-11 residual);
over 100 steps the pose gap grows to 5e-11 (hanging chain), 6e-11 (mixed), 7e-10 (free root + spherical, which
tumbles) and 5e-10 (the same with spherical friction and rotor inertia); the other integration methods' 40-step
runs (BDF2, BDF3, DIRK22, DIRK23, DIRK33, SYMPLECTIC_DIRK12, SYMPLECTIC_DIRK22) agree within 5.6e-10; joint
velocities follow as gap / dt.
ACHIEVED bounds these with a margin for other BLAS / libm round-off; TARGET is the issue's.
"""

import json
from pathlib import Path

import numpy as np
import pytest

import superdex_gym.sim as mochi
from superdex_gym.sim import articulated as art
from superdex_gym.sim.params import IntegrationMethod
from superdex_gym.sim.articulated.oracle import ArticulatedOracle

RUNS = json.loads((Path(__file__).parent / "reference_data" / "articulated_runs.json").read_text())
JT = art.ArticulatedJointType
FR = art.ArticulatedJointFrictionParams
SHAPE = mochi.create_box_mesh_shape(RUNS["link_half_extents"])
TARGET = 1e-6  # issue 33: joint trajectories within 1e-6 without contact
FIRST_STEP = 1e-10  # one converged step: only the two solvers' stopping points differ
ACHIEVED = 1e-8  # 100 steps, see the module docstring


def _link(i, com=None):
    return art.ArticulatedLinkParams(parent_link=i - 1, shape=SHAPE, density=RUNS["density"], center_of_mass=com,
                                     parent_joint_from_link=mochi.TransformRT(translation=[0, -0.2, 0]))


def _below(i):
    return mochi.TransformRT(translation=[0, -0.2 if i else 0, 0])


def hanging_chain():
    p = art.ArticulatedActorParams(name="chain", world_from_root=mochi.TransformRT(translation=[0, 2, 0]))
    p.joints = [art.ArticulatedJointParams(type=JT.REVOLUTE, axis=[0, 0, 1], parent_link_from_joint=_below(i))
                for i in range(3)]
    p.links = [_link(i) for i in range(3)]
    return ArticulatedOracle(art.build_model(p))


def mixed(limit_damping=0.0, hard_tip=False, upper=0.3):
    p = art.ArticulatedActorParams(name="mixed", world_from_root=mochi.TransformRT(translation=[0, 2, 0]))
    p.joints = [
        art.ArticulatedJointParams(type=JT.PRISMATIC, axis=[1, 0, 0], friction=FR(viscous=0.5, coulomb=0.2)),
        art.ArticulatedJointParams(type=JT.REVOLUTE, axis=[0, 0, 1], parent_link_from_joint=_below(1),
                                   min_limit=[0, 0, -0.3], max_limit=[0, 0, upper], limit_damping=limit_damping,
                                   friction=FR(viscous=0.05, coulomb=0.02)),
        art.ArticulatedJointParams(type=JT.REVOLUTE, axis=[0, 0, 1], inertia=0.01, parent_link_from_joint=_below(2)),
    ]
    p.links = [_link(i) for i in range(3)]
    if hard_tip:
        p.joints.append(art.ArticulatedJointParams(type=JT.HARD,
                                                   parent_link_from_joint=mochi.TransformRT(translation=[0.1, -0.2, 0])))
        p.links.append(_link(3))
    oracle = ArticulatedOracle(art.build_model(p))
    d = RUNS["mixed"]["drive"]
    oracle.add_single_dof_target(d["joint_index"], d["dof_index"], d["target_value"], d["stiffness"], d["damping"])
    return oracle


def free_spherical(friction=None, inertia=None, coms=(None, None, None)):
    """FREE root under a rotated world_from_root, a SPHERICAL joint, a REVOLUTE; initial joint velocities."""
    root = mochi.TransformRT(mochi.Quaternion(0.1, -0.2, 0.3, 0.9273618495495703), [0.3, 2.0, -0.1])
    p = art.ArticulatedActorParams(name="fs", world_from_root=root,
                                   joint_velocities=[0.5, 1.0, -0.3, 0.2, 1.5, -0.4, 2.0, -1.0, 0.5, -1.0])
    sph = {} if friction is None else {"friction": FR(**friction), "inertia": inertia}
    p.joints = [
        art.ArticulatedJointParams(type=JT.FREE),
        art.ArticulatedJointParams(type=JT.SPHERICAL, parent_link_from_joint=mochi.TransformRT(translation=[0.05, -0.2, 0]),
                                   **sph),
        art.ArticulatedJointParams(type=JT.REVOLUTE, axis=[1, 0, 1],
                                   parent_link_from_joint=mochi.TransformRT(translation=[0, -0.2, 0.02])),
    ]
    p.links = [_link(i, coms[i]) for i in range(3)]
    return ArticulatedOracle(art.build_model(p))


def spherical_limits():
    p = art.ArticulatedActorParams(name="sl", world_from_root=mochi.TransformRT(translation=[0, 2, 0]),
                                   joint_velocities=[0.0, 2.0, 1.0, 0.0])
    p.joints = [art.ArticulatedJointParams(type=JT.SPHERICAL, min_limit=[-0.2, -0.3, -0.1], max_limit=[0.25, 0.2, 0.1],
                                           limit_stiffness=300.0, limit_damping=2.0),
                art.ArticulatedJointParams(type=JT.REVOLUTE, axis=[0, 0, 1], parent_link_from_joint=_below(1))]
    p.links = [_link(i) for i in range(2)]
    return ArticulatedOracle(art.build_model(p))


def _spherical_chain(third_type, third_axis):
    """SPHERICAL root, REVOLUTE about z, then ``third_type`` about / along ``third_axis``."""
    p = art.ArticulatedActorParams(name="sc", world_from_root=mochi.TransformRT(translation=[0, 2, 0]))
    p.joints = [art.ArticulatedJointParams(type=JT.SPHERICAL),
                art.ArticulatedJointParams(type=JT.REVOLUTE, axis=[0, 0, 1], parent_link_from_joint=_below(1)),
                art.ArticulatedJointParams(type=third_type, axis=third_axis, parent_link_from_joint=_below(2))]
    p.links = [_link(i) for i in range(3)]
    return ArticulatedOracle(art.build_model(p))


def loads_and_range():
    oracle = _spherical_chain(JT.PRISMATIC, [1, 0, 0])
    run = RUNS["loads_and_range"]
    oracle.set_external_forces_on_dofs(run["loads"]["dofs"], run["loads"]["values"])
    r = run["range"]
    oracle.add_single_dof_range(r["joint_index"], r["dof_index"], r["min_value"], r["max_value"], r["stiffness"],
                                r["damping"])
    return oracle


def cycle_chain():
    p = art.ArticulatedActorParams(name="cy", world_from_root=mochi.TransformRT(translation=[0, 2, 0]))
    p.joints = [art.ArticulatedJointParams(type=JT.REVOLUTE, axis=[0, 0, 1], parent_link_from_joint=_below(i))
                for i in range(3)]
    p.links = [_link(i) for i in range(3)]
    p.cycles = [art.ArticulatedCycleJointParams(parent_link=0, child_link=2, stiffness=2000.0,
                                                joint_from_child_link=mochi.TransformRT(translation=[0.05, -0.2, 0]))]
    return ArticulatedOracle(art.build_model(p))


def pose_controller():
    return _spherical_chain(JT.REVOLUTE, [1, 0, 0])


LINK_COMS = [(0.03, -0.05, 0.01), (-0.02, 0.04, 0.02), (0.01, 0.0, -0.03)]


SCENES = {
    "hanging_chain": hanging_chain,
    "mixed": mixed,
    "free_spherical": free_spherical,
    "free_spherical_friction_inertia": lambda: free_spherical({"viscous": 0.3, "coulomb": 0.05}, 0.02),
    "mixed_limit_damping_hard_tip": lambda: mixed(limit_damping=5.0, hard_tip=True, upper=0.1),
    "spherical_limits": spherical_limits,
    "loads_and_range": loads_and_range,
    "cycle_chain": cycle_chain,
    "free_spherical_com_offsets": lambda: free_spherical(coms=LINK_COMS),
}


def test_pose_controller_trajectory_matches_the_released_engine():
    """Joint tracking on every joint, link position and rotation tracking, a moving target, then a reset."""
    run = RUNS["pose_controller"]
    oracle = pose_controller()
    oracle.set_pose(run["q0"])
    params = art.PoseControllerParams(3)
    for i in range(3):
        params.joint_tracking[i] = art.PoseTrackingParams(*run["joint_tracking"])
    for slice_name in ("link_pos_tracking", "link_rot_tracking"):
        for link, (k, d) in run[slice_name].items():
            getattr(params, slice_name)[int(link)] = art.PoseTrackingParams(stiffness=k, damping=d)
    oracle.add_pose_controller(params)
    err = []
    for k, target in enumerate(run["targets"]):
        if k == run["reset_at"]:
            oracle.reset_target_pose(target)
        else:
            oracle.set_target_pose(target)
        oracle.step(run["dt"])
        err.append(np.abs(oracle.q[0] - run["pose"][k]).max())
    assert err[0] < FIRST_STEP
    assert max(err) < min(TARGET, ACHIEVED), max(err)


METHODS = ("bdf2", "bdf3", "dirk22", "dirk23", "dirk33", "symplectic_dirk12", "symplectic_dirk22")


# Backward Euler's runs in the default lane; the other integrators' in the slow lane (pytest -m slow, run by CI).
@pytest.mark.parametrize("scene", sorted(SCENES) + [pytest.param(f"{m}/{s}", marks=pytest.mark.slow)
                                                    for m in METHODS for s in sorted(RUNS[m])])
def test_joint_trajectory_matches_the_released_engine(scene):
    method_name, _, scene = scene.rpartition("/")
    run = RUNS[method_name][scene] if method_name else RUNS[scene]
    method = IntegrationMethod[method_name.upper()] if method_name else IntegrationMethod.BACKWARD_EULER
    oracle = SCENES[scene]()
    for link, ref in zip(range(oracle.model.num_links), run["links"]):
        assert oracle.model.mass[link] == pytest.approx(ref["mass"], rel=1e-14)
    oracle.set_pose(run["q0"])
    pose_err, vel_err = [], []
    for k in range(run["steps"]):
        oracle.step(run["dt"], method)
        pose_err.append(np.abs(oracle.q[0] - run["pose"][k]).max())
        vel_err.append(np.abs(oracle.joint_velocity[0] - run["joint_velocities"][k]).max())
    assert pose_err[0] < FIRST_STEP
    assert max(pose_err) < min(TARGET, ACHIEVED), max(pose_err)
    # velocities are pose differences over dt, so their gap is the pose gap times 2/dt at most
    assert max(vel_err) < 2 * ACHIEVED / run["dt"], max(vel_err)
    # the limits are exercised: the soft limits are violated in the reference's BACKWARD_EULER runs
    upper = {"mixed": 0.3, "mixed_limit_damping_hard_tip": 0.1}
    if method_name:
        return
    if scene in upper:
        assert max(p[1] for p in run["pose"]) > upper[scene]
    if scene == "loads_and_range":
        assert min(p[3] for p in run["pose"]) < -0.1
    if scene == "spherical_limits":
        assert max(p[0] for p in run["pose"]) > 0.25 and min(p[2] for p in run["pose"]) < -0.1


def test_two_worlds_stepped_together_equal_each_alone():
    together = hanging_chain()
    together.__init__(together.model, num_worlds=2)
    starts = np.array([RUNS["hanging_chain"]["q0"], [0.1, 0.2, -0.3]])
    together.set_pose(starts)
    for _ in range(3):
        together.step(0.01)
    for w in range(2):
        alone = hanging_chain()
        alone.set_pose(starts[w])
        for _ in range(3):
            alone.step(0.01)
        assert np.array_equal(alone.q[0], together.q[w])


@pytest.mark.parametrize("call, match", [
    (lambda o: o.step(0.0), "dt must be a finite number in"),
    (lambda o: o.step(float("nan")), "dt must be a finite number in"),
    (lambda o: o.set_pose([0.1, np.nan, 0.0]), "pose must be finite"),
    (lambda o: o.set_pose([0.1, 0.2]), "could not be broadcast|shape"),
    (lambda o: o.add_single_dof_target(3, 0, 0.1), "joint_index must be in"),
    (lambda o: o.add_single_dof_target(0, 1, 0.1), "dof_index must be in"),
    (lambda o: o.add_single_dof_range(0, 0, 0.2, 0.1), "min_value must be <= max_value"),
    (lambda o: o.set_external_forces_on_dofs([5], [1.0]), r"dof_indices must be in \[0, 2\]"),
    (lambda o: o.set_external_forces_on_dofs([0], [np.inf]), "forces finite"),
])
def test_bad_input_is_refused_and_leaves_the_state_as_it_was(call, match):
    oracle = hanging_chain()
    oracle.set_pose([0.1, 0.2, 0.3])
    oracle.step(0.01)
    before = (oracle.q.copy(), oracle.joint_velocity.copy(), oracle.link_velocity.copy(), len(oracle.drives),
              len(oracle.ranges), oracle.dof_loads.copy())
    with pytest.raises((ValueError, TypeError), match=match):
        call(oracle)
    after = (oracle.q, oracle.joint_velocity, oracle.link_velocity, len(oracle.drives), len(oracle.ranges),
             oracle.dof_loads)
    for a, b in zip(before, after):
        assert np.array_equal(a, b)
