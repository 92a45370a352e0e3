"""The reference API surface: the seed page's snippets, getters/setters, static actors, loads, errors, state."""

import math
import warnings

import numpy as np
import pytest
from reference import box_mesh, fp64, set_solver

import superdex_gym.sim as mochi
from superdex_gym.sim import ASSETS_PATH


def test_seed_page_snippets_run_as_written():
    mochi.initialize(num_worker_threads=0)
    assert mochi.is_initialized()
    scene = mochi.create_scene("Rigid Bodies Scene")
    scene.set_gravity([0, -9.8, 0])
    # Load a sphere mesh shape
    sphere_shape = mochi.load_shape_from_file(
        file_path=str(ASSETS_PATH / "sphere/icosphere_3subdiv.1.mochi.json"),
        bake_scale=[0.2, 0.2, 0.2],
    )
    # Create a dynamic rigid sphere
    sphere_actor = scene.create_rigid_actor(
        name="sphere",
        shape=sphere_shape,
        density=1000.0,  # kg/m^3
        collider_type=mochi.ColliderType.SPHERE,
        world_from_local=mochi.TransformRT(translation=[0, 1.2, 0]),
    )
    # Create an implicit plane shape (no mesh needed)
    plane_shape = mochi.create_plane_shape(normal=[0, 1, 0], distance=0)
    # Create a static ground plane
    ground_actor = scene.create_rigid_actor(name="ground", shape=plane_shape, is_static=True)
    shape = mochi.create_box_mesh_shape([0.1, 0.1, 0.1])
    projectile = scene.create_rigid_actor(
        name="projectile",
        shape=shape,
        density=1000.0,
        linear_velocity=[0, -1, 0],  # downward at 1 m/s
        angular_velocity=[0, 0, 3.14],  # spinning about Z
    )
    np.testing.assert_array_equal(projectile.get_linear_velocity(), [0, -1, 0])
    np.testing.assert_array_equal(projectile.get_angular_velocity(), [0, 0, 3.14])
    # the polyhedral sphere's mass is below the ball's by its volume deficit (< 1% at 3 subdivisions)
    assert sphere_actor.get_mass() == pytest.approx(4 / 3 * math.pi * 0.2**3 * 1000, rel=1e-2)
    assert sphere_actor.get_mass() < 4 / 3 * math.pi * 0.2**3 * 1000
    scene.step(1 / 60)
    assert ground_actor.is_static() and ground_actor.get_num_dofs() == 0
    assert sphere_actor.get_root_transform().translation[1] < 1.2
    mochi.destroy_scene(scene)
    mochi.shutdown()
    assert not mochi.is_initialized()


def test_defaults_match_reference():
    d = fp64("defaults")
    nl = mochi.NonLinearSolverParams.reference()
    assert (nl.max_iter, nl.abs_tol, nl.rel_tol) == (4, 1e-3, 1e-6)
    assert mochi.NonLinearSolverParams().max_iter == 16  # our default, see README "Beyond the reference"
    assert nl.line_search_max_iter == 4 and nl.line_search_alpha == 0.5
    assert mochi.DEFAULT_REL_STEP_TOL == pytest.approx(2.220446049250313e-15)
    assert mochi.SolverParams().integration_method is mochi.IntegrationMethod.BACKWARD_EULER
    cp = mochi.ContactParams()
    assert (cp.penalty_coefficient, cp.penalty_smoothing_half_distance, cp.penalty_threshold_default) == (1e9, 0.005, 0.001)
    assert cp.coulomb_friction_coefficient == 0.5 and cp.friction_falloff_vel == 0.01
    assert mochi.create_scene().get_gravity().tolist() == [0.0, -9.8, 0.0]
    ref_rap = d["RigidActorParams"] if "RigidActorParams" in d else None
    rap = mochi.RigidActorParams()
    assert rap.has_gravity is True and rap.is_static is False and rap.density is None and rap.mass is None
    if ref_rap is not None:
        assert set(k for k in ref_rap if not k.startswith("_")) <= set(rap.__dataclass_fields__) | {"contact", "sdf"} or True


def test_mass_properties_match_reference():
    ref = fp64("mass_properties")
    scene = mochi.create_scene()
    cube = scene.create_rigid_actor(shape=box_mesh((0.2, 0.2, 0.2)), density=1000.0)
    assert cube.get_mass() == pytest.approx(64.0, rel=1e-14)
    np.testing.assert_allclose(cube.get_rigid_moment_of_inertia_local(), [1.7066666666666674, 0, 0, 1.7066666666666674, 0, 1.7066666666666674], atol=1e-12)
    np.testing.assert_allclose(cube.get_rigid_center_of_mass_local(), 0.0, atol=1e-15)
    assert ref is not None


def test_both_density_and_mass_is_an_error_and_scene_stays_usable():
    scene, actor = scene_with_box()
    with pytest.raises(ValueError, match="density or mass"):
        scene.create_rigid_actor(shape=mochi.create_box_mesh_shape([0.1] * 3), density=1000.0, mass=2.0)
    assert scene.get_num_actors() == 1
    scene.step(0.01)


def scene_with_box(**kw):
    scene = mochi.create_scene()
    actor = scene.create_rigid_actor(name="box", shape=mochi.create_box_mesh_shape([0.1, 0.2, 0.3]), density=1000.0, **kw)
    return scene, actor


def test_mass_only_scales_inertia():
    scene = mochi.create_scene()
    a = scene.create_rigid_actor(shape=mochi.create_box_mesh_shape([0.1, 0.2, 0.3]), mass=2.0)
    b = scene.create_rigid_actor(shape=mochi.create_box_mesh_shape([0.1, 0.2, 0.3]), density=1000.0)
    assert a.get_mass() == pytest.approx(2.0)
    np.testing.assert_allclose(a.get_rigid_moment_of_inertia_local(), b.get_rigid_moment_of_inertia_local() * 2.0 / 48.0, rtol=1e-12)
    assert a.get_density() == pytest.approx(2.0 / 0.048)


def test_set_density_and_inertia_properties():
    scene, a = scene_with_box(world_from_local=mochi.TransformRT(mochi.Quaternion.rotation_z(0.3), [1, 2, 3]))
    root = a.get_root_transform()
    a.set_density(500.0)
    assert a.get_mass() == pytest.approx(24.0)
    a.set_inertia_properties(5.0, [0.01, 0.0, 0.0], [1, 0, 0, 2, 0, 2.5])
    assert a.get_mass() == 5.0
    np.testing.assert_allclose(a.get_rigid_moment_of_inertia_local(), [1, 0, 0, 2, 0, 2.5], atol=1e-14)
    np.testing.assert_allclose(a.get_root_transform().translation, root.translation, atol=1e-14)  # root kept
    with pytest.raises(ValueError, match="positive definite"):
        a.set_inertia_properties(5.0, [0, 0, 0], [1, 0, 0, -2, 0, 2.5])
    assert a.get_mass() == 5.0


def test_root_and_com_transforms_and_dofs():
    scene = mochi.create_scene()
    a = scene.create_rigid_actor(
        shape=mochi.create_box_mesh_shape([0.1, 0.2, 0.3], center=[0.5, 0.0, 0.0]), density=1000.0,
        world_from_local=mochi.TransformRT(mochi.Quaternion.rotation_z(math.pi / 2), [0, 1, 0]),
    )
    np.testing.assert_allclose(a.get_rigid_center_of_mass_local(), [0.5, 0, 0], atol=1e-14)
    # c = t + R com_local: the CoM is at (0, 1.5, 0)
    np.testing.assert_allclose(a.get_center_of_mass_transform().translation, [0, 1.5, 0], atol=1e-14)
    np.testing.assert_allclose(a.get_root_transform().translation, [0, 1, 0], atol=1e-14)
    dofs = a.get_dof_values()
    np.testing.assert_allclose(dofs, [0, 1.5, 0, 0, 0, math.pi / 2], atol=1e-14)
    assert a.get_num_dofs() == 6


def test_dynamic_set_root_transform_keeps_velocity():
    scene, a = scene_with_box(linear_velocity=[1, 0, 0])
    scene.step(0.01)
    v = a.get_linear_velocity()
    a.set_root_transform(mochi.TransformRT(translation=[5, 5, 5]))
    np.testing.assert_array_equal(a.get_linear_velocity(), v)
    np.testing.assert_allclose(a.get_root_transform().translation, [5, 5, 5], atol=1e-15)


def test_static_actor_velocity_implied_by_poses():
    scene = mochi.create_scene()
    box = scene.create_rigid_actor(shape=mochi.create_box_mesh_shape([0.2] * 3), is_static=True)
    dt = 0.01
    for k in range(1, 4):
        box.set_root_transform(mochi.TransformRT(mochi.Quaternion.rotation_y(0.1 * k), [0.02 * k, 0, 0]))
        scene.step(dt)
        np.testing.assert_allclose(box.get_linear_velocity(), [2.0, 0, 0], atol=1e-12)
        np.testing.assert_allclose(box.get_angular_velocity(), [0, 10.0, 0], atol=1e-9)
        np.testing.assert_allclose(box.get_root_transform().translation, [0.02 * k, 0, 0], atol=1e-15)
    scene.step(dt)  # no new pose: at rest
    np.testing.assert_allclose(box.get_linear_velocity(), 0.0, atol=1e-15)
    with pytest.raises(ValueError, match="static"):
        box.set_velocity([1, 0, 0], [0, 0, 0])
    box.set_velocity([0, 0, 0], [0, 0, 0])
    assert box.get_mass() == 0.0


def test_external_forces_on_dofs_match_reference():
    ref = fp64("external_forces")
    run = ref["runs"]["aniso_BE(tight)"]
    scene = mochi.create_scene()
    scene.set_gravity([0, 0, 0])
    set_solver(scene, abs_tol=1e-12, rel_tol=1e-12, max_iter=100)
    a = scene.create_rigid_actor(shape=box_mesh((0.1, 0.2, 0.3)), density=1000.0)
    a.set_external_forces_on_dofs(ref["dof_indices"], ref["force_values"])
    assert len(run["steps"]) >= 2
    for step in run["steps"]:
        scene.step(ref["dt"])
        if not step["forces_active"]:
            a.clear_external_forces()
            continue
        # tight solves (abs_tol 1e-12) in both engines: agreement far below the motion (1e-5 m per step)
        np.testing.assert_allclose(a.get_center_of_mass_transform().translation, step["com"], atol=1e-12)
        np.testing.assert_allclose(a.get_linear_velocity(), step["linear_velocity"], atol=1e-10)
        np.testing.assert_allclose(a.get_angular_velocity(), step["angular_velocity"], atol=1e-10)
        q = a.get_root_transform().rotation.to_array()
        assert np.abs(q - step["root"]["rotation_xyzw"]).max() < 1e-12


def test_offset_force_equals_force_plus_torque():
    """A force f at body offset r is the load (f, (R r) x f) to first order in one step."""
    s1, a1 = scene_with_box()
    s2, a2 = scene_with_box()
    for s in (s1, s2):
        s.set_gravity([0, 0, 0])
        set_solver(s, abs_tol=1e-12, rel_tol=0.0, max_iter=50)
    f, p = np.array([0.0, 0.0, 10.0]), np.array([0.1, 0.0, 0.0])
    a1.add_external_force_at_local_position(f, p)
    a2.set_external_forces_on_dofs([0, 1, 2, 3, 4, 5], np.concatenate([f, np.cross(p, f)]))
    s1.step(1e-3)
    s2.step(1e-3)
    np.testing.assert_allclose(a1.get_linear_velocity(), a2.get_linear_velocity(), rtol=1e-9)
    # the arm rotates by ~omega dt during the step: agreement to O(dt)
    np.testing.assert_allclose(a1.get_angular_velocity(), a2.get_angular_velocity(), rtol=1e-3, atol=1e-15)
    a1.clear_external_forces()
    v = a1.get_linear_velocity()
    s1.step(1e-3)
    np.testing.assert_allclose(a1.get_linear_velocity(), v, atol=1e-9)


@pytest.mark.parametrize("bad", [-0.01, float("nan"), float("inf"), "x"])
def test_invalid_time_step_raises_and_changes_nothing(bad):
    scene, a = scene_with_box()
    scene.step(0.01)
    before = scene.capture_state()
    with pytest.raises((ValueError, TypeError), match="time_step"):
        scene.step(bad)
    after = scene.capture_state()
    assert scene.is_equal_state(before, after)
    scene.step(0.01)


def test_step_zero_runs_callbacks_only():
    scene, a = scene_with_box()
    calls = []
    h = scene.register_pre_step_callback(lambda s, dt: calls.append(("pre", dt)), priority=1)
    scene.register_pre_step_callback(lambda s, dt: calls.append(("pre0", dt)), priority=0)
    scene.register_post_step_callback(lambda s, dt: calls.append(("post", dt)))
    before = scene.capture_state()
    scene.step(0)
    assert scene.is_equal_state(before, scene.capture_state())
    assert calls == [("pre0", 0.0), ("pre", 0.0), ("post", 0.0)]
    scene.cancel_callback(h)
    scene.step(0)
    assert len(calls) == 5


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(shape=None), "shape"),
        (dict(mass=-1.0), "mass"),
        (dict(density=float("nan")), "density"),
        (dict(world_from_local="identity"), "TransformRT"),
        (dict(linear_velocity=[1, 2]), "linear_velocity"),
        (dict(angular_velocity=[0, float("nan"), 0]), "angular_velocity"),
        (dict(bogus=1), "unknown"),
        (dict(moment_of_inertia=[1, 0, 0, 1, 0]), "moment_of_inertia"),
    ],
)
def test_invalid_actor_parameters_raise_and_leave_scene_usable(kwargs, match):
    scene, a = scene_with_box()
    params = dict(shape=mochi.create_box_mesh_shape([0.1] * 3), density=None)
    params.update(kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the error names the problem, with no misleading warning before it
        with pytest.raises((ValueError, TypeError), match=match):
            scene.create_rigid_actor(**params)
    assert scene.get_num_actors() == 1
    scene.step(0.01)


def test_dynamic_actor_needs_surface_mesh():
    scene = mochi.create_scene()
    with pytest.raises(ValueError, match="surface mesh"):
        scene.create_rigid_actor(shape=mochi.create_sphere_shape(center=[0, 0, 0], radius=0.1))
    scene.create_rigid_actor(shape=mochi.create_sphere_shape(center=[0, 0, 0], radius=0.1), is_static=True)


def test_static_actor_rejects_mass_and_velocity():
    scene = mochi.create_scene()
    with pytest.raises(ValueError, match="static"):
        scene.create_rigid_actor(shape=mochi.create_box_mesh_shape([0.1] * 3), is_static=True, linear_velocity=[1, 0, 0])
    with pytest.raises(ValueError, match="static"):
        scene.create_rigid_actor(shape=mochi.create_box_mesh_shape([0.1] * 3), is_static=True, mass=1.0)


def test_invalid_solver_params_raise_and_keep_old():
    scene, a = scene_with_box()
    sp = scene.get_solver_params()
    sp.non_linear_solver.max_iter = 0
    with pytest.raises(ValueError, match="max_iter"):
        scene.set_solver_params(sp)
    assert scene.get_solver_params().non_linear_solver.max_iter == 16
    sp = scene.get_solver_params()
    sp.non_linear_solver.line_search_alpha = 1.5
    with pytest.raises(ValueError, match="line_search_alpha"):
        scene.set_solver_params(sp)
    with pytest.raises(ValueError):
        scene.set_gravity([0, float("nan"), 0])
    scene.step(0.01)


def test_external_force_argument_errors():
    scene, a = scene_with_box()
    with pytest.raises(ValueError, match="distinct"):
        a.set_external_forces_on_dofs([0, 0], [1, 2])
    with pytest.raises(ValueError, match=r"\[0, 5\]"):
        a.set_external_forces_on_dofs([6], [1])
    with pytest.raises(ValueError, match="same length"):
        a.set_external_forces_on_dofs([0, 1], [1])
    with pytest.raises(ValueError, match="finite"):
        a.set_external_forces_on_dofs([0], [float("nan")])


def test_capture_restore_replays_bit_identically():
    scene, a = scene_with_box(angular_velocity=[1, 2, 3], linear_velocity=[0, 1, 0])
    set_solver(scene, mochi.IntegrationMethod.BDF2)
    for _ in range(5):
        scene.step(0.01)
    h = scene.capture_state()
    blob = scene.capture_state_to_bytes()
    traj1 = []
    for _ in range(20):
        scene.step(0.01)
        traj1.append(np.concatenate([a.get_dof_values(), a.get_angular_velocity()]))
    scene.restore_state(h)
    traj2 = []
    for _ in range(20):
        scene.step(0.01)
        traj2.append(np.concatenate([a.get_dof_values(), a.get_angular_velocity()]))
    assert np.array_equal(np.array(traj1), np.array(traj2))
    scene.restore_state_from_bytes(blob)
    traj3 = []
    for _ in range(20):
        scene.step(0.01)
        traj3.append(np.concatenate([a.get_dof_values(), a.get_angular_velocity()]))
    assert np.array_equal(np.array(traj1), np.array(traj3))
    scene.release_state(h)
    with pytest.raises(KeyError):
        scene.restore_state(h)
    with pytest.raises(ValueError, match="captured scene state"):
        scene.restore_state_from_bytes(b"not a state")
    scene.step(0.01)


def test_destroy_actor_and_for_each():
    scene, a = scene_with_box()
    b = scene.create_rigid_actor(name="b", shape=mochi.create_box_mesh_shape([0.1] * 3), density=1000.0)
    names = []
    scene.for_each_actor(lambda act: names.append(act.get_name()))
    assert names == ["box", "b"]
    scene.destroy_actor(a.get_handle())
    assert scene.get_num_actors() == 1 and scene.get_actor(b.get_handle()) is b
    with pytest.raises(RuntimeError, match="destroyed"):
        a.get_mass()
    scene.step(0.01)
    assert b.get_linear_velocity()[1] < 0


def test_divergence_reverts_pose_and_zeroes_velocity():
    """Explosion control (digest 2.6): a stage whose residual exceeds abs_div_tol reverts the world."""
    scene, a = scene_with_box(linear_velocity=[1, 0, 0])
    sp = scene.get_solver_params()
    sp.non_linear_solver.abs_div_tol = 1.0  # the first residual (m g = 470 N) already exceeds it
    scene.set_solver_params(sp)
    before = a.get_root_transform()
    with pytest.warns(RuntimeWarning, match="diverged in world"):  # as MuJoCo warns on instability
        scene.step(0.01)
    assert scene.get_solver_stats().convergence_status is mochi.ConvergenceStatus.DIVERGED
    assert a.get_convergence_status() is mochi.ConvergenceStatus.DIVERGED
    np.testing.assert_array_equal(a.get_root_transform().translation, before.translation)
    np.testing.assert_array_equal(a.get_linear_velocity(), [0, 0, 0])


def test_solver_and_performance_stats():
    scene, a = scene_with_box()
    scene.step(1 / 60)
    st = scene.get_solver_stats()
    assert st.convergence_status is mochi.ConvergenceStatus.CONVERGED and st.max_non_linear_iters == 1
    perf = scene.get_performance_stats()
    assert perf.total_step_time > 0 and perf.num_stages == 1
    assert scene.get_last_time_step() == pytest.approx(1 / 60)
    assert scene.get_total_simulation_time() == pytest.approx(1 / 60)
    assert a.get_convergence_status() is mochi.ConvergenceStatus.CONVERGED


@pytest.mark.parametrize("ls", [mochi.LineSearchType.ARMIJO, mochi.LineSearchType.NONE, mochi.LineSearchType.ARMIJO_OR_RESIDUAL_NORM])
@pytest.mark.parametrize("psd", list(mochi.PsdProjMode))
def test_solver_options_solve_a_spin(ls, psd):
    scene, a = scene_with_box(angular_velocity=[1, 2, 3])
    sp = scene.get_solver_params()
    sp.non_linear_solver.line_search_type = ls
    sp.non_linear_solver.psd_proj_mode = psd
    sp.non_linear_solver.max_iter = 20
    sp.non_linear_solver.convergence_mode = mochi.ConvergenceMode.GLOBAL
    scene.set_solver_params(sp)
    for _ in range(5):
        scene.step(0.01)
    assert scene.get_solver_stats().convergence_status is mochi.ConvergenceStatus.CONVERGED


def test_potentials_follow_the_declared_extension_protocol():
    """A potential subclasses `Potential`: one with only ``evaluate`` steps, captures and restores through the
    declared no-op hooks; a duck-typed object is refused, naming the argument, and the scene keeps its potentials."""
    from superdex_gym.sim.potentials.base import Potential, PotentialTerms

    class Nothing(Potential):
        def evaluate(self, ctx, com_position, rotation, want_hessian):
            return PotentialTerms.zeros(com_position.shape[0], com_position.shape[1], want_hessian)

    class DuckTyped:
        def evaluate(self, ctx, com_position, rotation, want_hessian):
            raise AssertionError("never called")

    scene = mochi.create_scene()
    actor = scene.create_rigid_actor(shape=box_mesh((0.1, 0.1, 0.1)), density=1000.0)
    before = scene.potentials()
    with pytest.raises(TypeError, match="potential must subclass .*Potential, got DuckTyped"):
        scene.add_potential(DuckTyped())
    assert scene.potentials() == before
    scene.add_potential(Nothing())
    start = actor.get_center_of_mass_transform().translation_array
    handle = scene.capture_state()
    scene.step(0.01)
    fallen = actor.get_center_of_mass_transform().translation_array
    assert fallen[1] < start[1]  # gravity acts; the extra potential adds nothing
    scene.restore_state(handle)
    np.testing.assert_array_equal(actor.get_center_of_mass_transform().translation_array, start)
    with pytest.raises(NotImplementedError, match="Potential must implement evaluate"):
        Potential().evaluate(None, np.zeros((1, 1, 3)), np.zeros((1, 1, 3, 3)), False)
