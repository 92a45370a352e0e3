"""The scene's compiled model (sim/step/compiled_model.py): built once per composition and settings, dropped by
every change of them and by nothing else, and the compliance parameters it holds follow their setters.

Compiled vs numpy Newton: the same bound as tests/test_newton_modes.py (1e-9 after the steps; measured there at
~1e-13, round-off of the two paths' own LU solves and norms amplified by stiff drives and contact).
"""

import numpy as np
import pytest

import superdex_gym.sim as mochi
from superdex_gym.sim.step import pipeline

BOUND = 1e-9


def _scene(num_worlds=2):
    """A box on a ground plane held by a damped position pivot, a second box by a rotation pivot and a third by a
    RigidPivotToRigidTarget constraint: every pivot kind whose compliance the compiled model holds."""
    scene = mochi.create_scene("compiled")
    scene.create_rigid_actor(name="ground", shape=mochi.create_plane_shape(normal=[0, 1, 0], distance=0.0),
                             is_static=True)
    box = mochi.create_box_mesh_shape([0.05, 0.05, 0.05])
    boxes = [scene.create_rigid_actor(name=f"box{k}", shape=box, density=500.0,
                                      world_from_local=mochi.TransformRT(translation=[0.3 * k, 0.1, 0]))
             for k in range(3)]
    pivots = [
        scene.create_rigid_pivot_position_constraint(actor=boxes[0], local_position=[0, 0.05, 0],
                                                     target_position=[0.0, 0.25, 0.0], stiffness=800.0,
                                                     damping=2.0),
        scene.create_rigid_pivot_rotation_constraint(actor=boxes[1], stiffness=20.0),
        scene.create_rigid_pivot_to_rigid_target_constraint(
            actor=boxes[2], local_position=[0.05, 0.05, 0.0], stiffness=1500.0,
            target_transform=mochi.TransformRT(translation=[0.6, 0.2, 0])),
    ]
    scene.set_num_worlds(num_worlds)
    return scene, boxes, pivots


def _builds(monkeypatch):
    """A list that grows by one entry per compiled model built."""
    built = []
    original = pipeline.compile_model

    def counting(*args, **kwargs):
        built.append(args)
        return original(*args, **kwargs)

    monkeypatch.setattr(pipeline, "compile_model", counting)
    return built


def test_one_build_per_composition_and_one_per_change(monkeypatch):
    built = _builds(monkeypatch)
    scene, boxes, pivots = _scene()
    for _ in range(4):
        scene.step(0.01)
    assert len(built) == 1  # four steps, one model
    box = mochi.create_box_mesh_shape([0.02, 0.02, 0.02])
    extra = []
    changes = {
        "set_gravity": lambda: scene.set_gravity([0.0, -9.0, 0.0]),
        "set_solver_params": lambda: scene.set_solver_params(scene.get_solver_params()),
        "set_stiffness": lambda: pivots[0].set_stiffness(900.0),
        "set_damping": lambda: pivots[2].set_damping(1.0),
        "set_saturation": lambda: pivots[1].set_saturation(0.5),
        "create_rigid_actor": lambda: extra.append(scene.create_rigid_actor(
            name="small", shape=box, density=500.0, world_from_local=mochi.TransformRT(translation=[1.0, 0.1, 0]))),
        "create_constraint": lambda: extra.append(scene.create_rigid_pivot_rotation_constraint(actor=boxes[0],
                                                                                               stiffness=5.0)),
        "destroy_constraint": lambda: scene.destroy_constraint(extra.pop()),
        "enable_actor_contact": lambda: scene.enable_actor_contact_symmetric(boxes[0], boxes[1], False),
        "set_num_worlds": lambda: scene.set_num_worlds(3),
        "destroy_actor": lambda: scene.destroy_actor(extra.pop()),
    }
    for name, change in changes.items():
        before = len(built)
        change()
        scene.step(0.01)
        scene.step(0.01)
        assert len(built) == before + 1, name
    # target setters are per-step data: no rebuild
    before = len(built)
    pivots[0].set_target_position([0.1, 0.3, 0.0])
    scene.step(0.01)
    assert len(built) == before


def _run(compiled, monkeypatch, change):
    """Six steps of `_scene`, ``change(pivots)`` applied after the third; the end poses."""
    monkeypatch.setattr(pipeline, "COMPILED_NEWTON", compiled)
    scene, _, pivots = _scene()
    for k in range(6):
        if k == 3:
            change(pivots)
        scene.step(0.01)
    assert scene.solver_path() == ("compiled (fused step)" if compiled else
                                   "numpy: the compiled Newton is off (SUPERDEX_COMPILED_NEWTON=0 or "
                                   "pipeline.COMPILED_NEWTON = False)")
    cur = scene._state.current
    return cur.com_position.copy(), cur.rotation.copy()


def _change_all(pivots):
    pivots[0].set_stiffness(3000.0)
    pivots[0].set_damping(0.0)  # undamped now: the position pivots' targets guess takes it
    pivots[1].set_stiffness(80.0)
    pivots[1].set_saturation(0.05)
    pivots[2].set_damping(4.0)


def test_compliance_setters_reach_the_compiled_step(monkeypatch):
    """Stiffness, damping and saturation changed between steps: the compiled step (which holds them) follows them as
    the numpy Newton (which reads them every evaluation) does, and the change moved the bodies."""
    c_n, r_n = _run(False, monkeypatch, _change_all)
    c_c, r_c = _run(True, monkeypatch, _change_all)
    np.testing.assert_allclose(c_c, c_n, rtol=0, atol=BOUND)
    np.testing.assert_allclose(r_c, r_n, rtol=0, atol=BOUND)
    c_0, _ = _run(True, monkeypatch, lambda pivots: None)
    assert np.abs(c_c - c_0).max() > 1e-4  # the setters changed the motion


@pytest.mark.parametrize("switch", ["COMPILED_NEWTON"])
def test_a_module_switch_flipped_between_steps_rebuilds(switch, monkeypatch):
    built = _builds(monkeypatch)
    scene, _, _ = _scene(1)
    scene.step(0.01)
    monkeypatch.setattr(pipeline, switch, False)
    scene.step(0.01)
    assert len(built) == 2
    assert scene._last_report.solver_path.startswith("numpy: the compiled Newton is off")
