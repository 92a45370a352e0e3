"""Joint constraint sets (RigidSphericalJoint, RigidPrismaticJoint, JointRotationRange, JointRotationTracking) on the
compiled Newton (sim/kernels/newton.py) against the numpy Newton (sim/solver/numpy_newton.py).

Both paths call the same joint kernels (sim/kernels/joints.py) in the constraint system's set order and add the
A-B coupling blocks into the dense system in the numpy path's order (`_newton_direction`'s slot groups); they
differ by round-off only where the compiled Newton does its own arithmetic (its LU solves with partial pivoting
written out instead of LAPACK's gesv, the rotation update, the stopping-test norms), as on pivot scenes
(tests/test_newton_kernel.py). Required: the same per-world statuses and the same most Newton and line-search
iterations every step, states within 1e-9 after 20 steps. Measured on this host (2026-12-05, 20 steps of these
cases, one world re-kicked at step 5): at most 1.1e-13 m in positions and 6.3e-13 in rotation entries (DIRK33
with contact and BDF2 with world groups the largest; the single-stage cases 2.2e-14 m / 1.6e-13): round-off of
~1e-16 per solve, amplified by stiff joints and contact; the bound leaves a factor ~1e3 for another host's LAPACK,
as the pivot tests do.
"""

import numpy as np
import pytest

import superdex_gym.sim as mochi
from helpers import assert_worker_threads_give_the_serial_bits
from superdex_gym.sim.step import pipeline

# The kicked chains swing fast past the small static anchor sphere: the tunnelling diagnostic warns (harmless here).
pytestmark = pytest.mark.filterwarnings("ignore:a step of:RuntimeWarning")


def _chain(num_worlds, kinds=("spherical",), num_boxes=5, ground=False, damping=0.0, half=0.05, method=None):
    """A chain of boxes (half size ``half``) hanging from a static anchor (along -y, 0.25 m apart), the links joined
    by the joint ``kinds`` (cycled over the links); with ``ground``, a plane 1 mm under the last box. With
    ``half`` near 0.125 neighbouring boxes touch as the kicked chain swings (contact couplings beside the joints').
    ``method``: the integration method (default: the scene's)."""
    scene = mochi.create_scene("chain")
    anchor = scene.create_rigid_actor(name="anchor", shape=mochi.create_sphere_shape(radius=0.02), is_static=True,
                                      world_from_local=mochi.TransformRT(translation=[0, 2.0, 0]))
    if ground:
        y_last = 2.0 - 0.25 * num_boxes  # the last box's centre; the plane 1 mm under its bottom face
        scene.create_rigid_actor(name="ground", shape=mochi.create_plane_shape(normal=[0, 1, 0], distance=0.0),
                                 is_static=True,
                                 world_from_local=mochi.TransformRT(translation=[0, y_last - half - 0.001, 0]))
    box = mochi.create_box_mesh_shape([half, half, half])
    y0 = 2.0 - 0.25
    boxes = [scene.create_rigid_actor(name=f"box{k}", shape=box, density=1000.0,
                                      world_from_local=mochi.TransformRT(translation=[0.02 * k, y0 - 0.25 * k, 0]))
             for k in range(num_boxes)]
    scene.set_num_worlds(num_worlds)
    if method is not None:
        solver = scene.get_solver_params()
        solver.integration_method = method
        scene.set_solver_params(solver)
    links = [(anchor, boxes[0])] + list(zip(boxes[:-1], boxes[1:]))
    for i, (a, b) in enumerate(links):
        kind = kinds[i % len(kinds)]
        if kind == "spherical":
            scene.create_rigid_spherical_joint_constraint(actor_a=a, actor_b=b, local_pos_a=[0, -0.125, 0],
                                                          local_pos_b=[0, 0.125, 0], damping=damping)
        elif kind == "prismatic":
            scene.create_rigid_prismatic_joint_constraint(actor_a=a, actor_b=b, free_axis=[0, 1, 0], min=-0.05,
                                                          max=0.02, damping=damping)
        elif kind == "range":
            scene.create_rigid_spherical_joint_constraint(actor_a=a, actor_b=b, local_pos_a=[0, -0.125, 0],
                                                          local_pos_b=[0, 0.125, 0])
            scene.create_joint_rotation_range_constraint(actor_a=a, actor_b=b, angle_range_x=(-0.1, 0.1),
                                                         angle_range_z=(-0.05, 0.2), damping=damping)
        elif kind == "tracking":
            scene.create_rigid_spherical_joint_constraint(actor_a=a, actor_b=b, local_pos_a=[0, -0.125, 0],
                                                          local_pos_b=[0, 0.125, 0])
            c = scene.create_joint_rotation_tracking_constraint(actor_a=a, actor_b=b, stiffness=50.0,
                                                                damping=damping)
            c.set_target_rotation(mochi.Quaternion.rotation_y(0.3))
        elif kind == "pivot":
            scene.create_rigid_pivot_position_constraint(actor=b, target_position=[0.1, y0 - 0.25 * i, 0.0])
    return scene, boxes


def _kick(boxes, world, scene_world=None):
    """World ``world``'s start velocities, written into ``scene_world`` (default: the same world)."""
    rng = np.random.default_rng(world)
    for a in boxes:
        a.set_velocity(rng.normal(scale=0.5, size=3).tolist(), rng.normal(scale=2.0, size=3).tolist(),
                       world=world if scene_world is None else scene_world)


def _run(compiled, monkeypatch, num_worlds, steps=20, **kw):
    monkeypatch.setattr(pipeline, "COMPILED_NEWTON", compiled)
    scene, boxes = _chain(num_worlds, **kw)
    for w in range(num_worlds):
        _kick(boxes, w)
    stats = []
    for step in range(steps):
        if step == REKICK_STEP and num_worlds > 1:  # world 1 restarts its history: two world groups (world_index)
            _kick(boxes, REKICK_SEED, scene_world=1)
        scene.step(0.01)
        s = scene.get_solver_stats()
        stats.append((tuple(scene.get_world_status()), s.max_non_linear_iters, s.max_line_search_iters))
    cur = scene._state.current
    return scene.solver_path(), cur.com_position.copy(), cur.rotation.copy(), stats


REKICK_STEP, REKICK_SEED = 5, 101
CASES = {
    "spherical": dict(kinds=("spherical",)),
    "prismatic": dict(kinds=("prismatic",)),
    "range": dict(kinds=("range",), damping=2.0),
    "tracking": dict(kinds=("tracking",), damping=1.0),
    "mixed": dict(kinds=("spherical", "tracking", "prismatic", "range", "pivot"), damping=0.5),
    "contact": dict(kinds=("range", "spherical"), ground=True, half=0.12),
    # BDF2: the re-kicked world restarts its history, so the stages solve world groups (ctx.world_index rows of
    # the joints' per-world frames and targets); DIRK33: three stages per step.
    "mixed_bdf2": dict(kinds=("spherical", "tracking", "prismatic", "range", "pivot"), damping=0.5,
                       method=mochi.IntegrationMethod.BDF2),
    "contact_dirk33": dict(kinds=("tracking", "prismatic"), ground=True, half=0.12, damping=1.0,
                           method=mochi.IntegrationMethod.DIRK33),
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("num_worlds", [2, pytest.param(64, marks=pytest.mark.slow)])
def test_joint_scenes_take_the_compiled_newton_and_match_the_numpy_one(case, num_worlds, monkeypatch):
    path_n, c_n, r_n, stats_n = _run(False, monkeypatch, num_worlds, **CASES[case])
    path_c, c_c, r_c, stats_c = _run(True, monkeypatch, num_worlds, **CASES[case])
    assert path_n.startswith("numpy")
    assert path_c.startswith("compiled"), path_c
    assert stats_c == stats_n
    np.testing.assert_allclose(c_c, c_n, rtol=0, atol=1e-9)
    np.testing.assert_allclose(r_c, r_n, rtol=0, atol=1e-9)
    assert np.abs(c_c[1] - c_c[0]).max() > 1e-3  # the worlds really differ (kicked apart)


@pytest.mark.parametrize("case", ["mixed", "contact", "mixed_bdf2"])
def test_joint_worlds_stepped_together_equal_worlds_stepped_alone(case, monkeypatch):
    _, c_all, r_all, _ = _run(True, monkeypatch, 3, steps=10, **CASES[case])
    for w in range(3):
        monkeypatch.setattr(pipeline, "COMPILED_NEWTON", True)
        scene, boxes = _chain(1, **CASES[case])
        _kick(boxes, w, scene_world=0)
        for step in range(10):
            if step == REKICK_STEP and w == 1:
                _kick(boxes, REKICK_SEED, scene_world=0)
            scene.step(0.01)
        assert np.array_equal(scene._state.current.com_position[0], c_all[w])
        assert np.array_equal(scene._state.current.rotation[0], r_all[w])


@pytest.mark.slow
def test_joint_scenes_on_worker_threads_give_the_serial_bits(monkeypatch):
    """The threaded compiled Newton slices every per-world argument, the joint sets' g_old among them."""
    assert_worker_threads_give_the_serial_bits(lambda: _run(True, monkeypatch, 3, steps=8, **CASES["mixed"])[1:3])


def test_joint_types_take_the_compiled_path_unless_exact_hessian(monkeypatch):
    """`scene.solver_path()` of joint scenes (nothing is stepped, so nothing compiles here)."""
    from superdex_gym.sim.solver.compiled_newton import plan

    monkeypatch.setattr(pipeline, "COMPILED_NEWTON", True)
    for kinds in (("spherical",), ("prismatic",), ("range",), ("tracking",), ("spherical", "pivot")):
        scene, _ = _chain(1, kinds=kinds)
        assert scene.solver_path().startswith("compiled"), (kinds, scene.solver_path())
    scene, _ = _chain(1, kinds=("spherical",))
    scene._constraint_system._sets["RigidSphericalJoint"].exact_hessian = True  # the FD tests' exact curvature
    params = scene.get_solver_params().non_linear_solver
    kplan, reason = plan(pipeline.CORE_POTENTIALS + tuple(scene._extra_potentials), params)
    assert kplan is None and reason == "constraint type RigidSphericalJoint has no per-world kernel"
