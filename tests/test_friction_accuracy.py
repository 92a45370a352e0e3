"""Beyond the reference (issue 3): with our default settings, friction follows Coulomb's law within 5% at dt 0.01
(sliding deceleration and the stick/slip threshold); with the reference's settings chosen explicitly
(NonLinearSolverParams.reference(): 4 iterations) we reproduce the reference's too-strong friction."""

import numpy as np
import pytest
from reference import REFERENCE, box_mesh, fp64, set_solver

import superdex_gym.sim as mochi

G, MU, DT = 9.8, 0.5, 0.01


def settled_cube(**solver):
    scene = mochi.create_scene()
    if solver:
        set_solver(scene, **solver)
    scene.create_rigid_actor(name="ground", shape=mochi.create_plane_shape(normal=[0, 1, 0], distance=0.0),
                             is_static=True)
    cube = scene.create_rigid_actor(shape=box_mesh((0.2, 0.2, 0.2)), density=1000.0,
                                    world_from_local=mochi.TransformRT(translation=[0, 0.2, 0]))
    for _ in range(30):
        scene.step(DT)
    return scene, cube


def sliding_deceleration(**solver):
    scene, cube = settled_cube(**solver)
    cube.set_velocity([2.0, 0, 0], [0, 0, 0])
    v = []
    for _ in range(25):
        scene.step(DT)
        v.append(cube.get_linear_velocity()[0])
    t = DT * np.arange(1, 26)
    keep = (t > 0.04) & (t < 0.24)  # after the kick's transient, while sliding
    return -np.polyfit(t[keep], np.array(v)[keep], 1)[0], cube


def test_default_sliding_deceleration_is_coulomb():
    decel, cube = sliding_deceleration()
    assert decel == pytest.approx(MU * G, rel=0.05)
    assert np.abs(cube.get_angular_velocity()).max() < 0.05  # slides flat, does not tip


def pushed_speed(fraction, **solver):
    """Speed after 1 s under a constant horizontal force fraction * mu m g from rest."""
    scene, cube = settled_cube(**solver)
    cube.set_external_forces_on_dofs([0], [fraction * MU * cube.get_mass() * G])
    for _ in range(100):
        scene.step(DT)
    return cube.get_linear_velocity()[0]


def test_default_stick_slip_threshold_is_coulomb():
    # 5% above the threshold: slides with a = 0.05 mu g (v(1 s) = 0.245 m/s); 5% below: only the regularized
    # creep (|v| below V_f = 1 cm/s).
    above = pushed_speed(1.05)
    below = pushed_speed(0.95)
    assert above == pytest.approx(0.05 * MU * G * 1.0, rel=0.25)  # within 5% of the force: +-25% of the speed
    assert 0 <= below < 0.01
    assert pushed_speed(1.3) == pytest.approx(0.3 * MU * G, rel=0.05)


def test_reference_settings_reproduce_the_reference_friction():
    """With the reference's 4 iterations the friction is too strong, as the released engine's (issue 3), and we
    follow the released engine's own trajectory (reference_data: contact_plane.sliding_v0_2, default solver,
    dt 0.01: settle 100 steps, kick to 2 m/s): the same Newton iterates, step by step, while it tips."""
    decel, _ = sliding_deceleration(**REFERENCE)
    assert decel > 1.1 * MU * G  # measured 5.8 m/s^2 (+18%)
    ref = fp64("contact_plane")["sliding_v0_2"]["box12,dt=0.01,default"]
    scene = mochi.create_scene()
    set_solver(scene, **REFERENCE)
    scene.create_rigid_actor(name="ground", shape=mochi.create_plane_shape(normal=[0, 1, 0], distance=0.0),
                             is_static=True)
    cube = scene.create_rigid_actor(shape=box_mesh((0.2, 0.2, 0.2)), density=1000.0,
                                    world_from_local=mochi.TransformRT(translation=[0, 0.2, 0]))
    for _ in range(ref["settle_steps"]):
        scene.step(ref["dt"])
    assert cube.get_center_of_mass_transform().translation[1] == pytest.approx(ref["state_after_settle"]["com"][1], abs=1e-12)
    cube.set_velocity([2.0, 0, 0], [0, 0, 0])
    for row in ref["rows"][:10]:
        scene.step(ref["dt"])
        # unconverged (STOPPED) solves amplify round-off step by step; 1e-6 m/s over 10 steps
        np.testing.assert_allclose(cube.get_linear_velocity(), row["linear_velocity"], atol=1e-6)
        np.testing.assert_allclose(cube.get_angular_velocity(), row["angular_velocity"], atol=1e-5)
