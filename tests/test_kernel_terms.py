"""Kernel terms (sim/potentials/kernel_term.py): a user-written potential with a numba kernel on the compiled
Newton, with examples/spring_potential.py's springs between actors as the example.

The kernel against its numpy oracle (round-off: both sum the same products, in other orders); its gradient and
Hessian against central finite differences of its energy on the Lie algebra, F(xi) = E(c + xi_t,
exp(skew(xi_r)) R), over every body at once (the couplings included); a scene with springs on the compiled path
against the numpy Newton; its worlds stepped together == each alone and threads == serial, bit for bit."""

import importlib.util
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from helpers import assert_worker_threads_give_the_serial_bits, dense_hessian

import superdex_gym.sim as mochi
from superdex_gym.sim import lie
from superdex_gym.sim.step import pipeline
from superdex_gym.sim.potentials.base import StageContext



def _import_example(name: str):
    """examples/<name>.py as the module ``name``, registered in sys.modules: numba's disk cache records a kernel's
    module and imports it by name when it loads the kernel (a runpy namespace would be '<dynamic>', which fails on
    the second run over the same cache)."""
    spec = importlib.util.spec_from_file_location(name, Path(__file__).resolve().parents[1] / "examples" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


EXAMPLE = vars(_import_example("spring_potential"))
SpringTerm = EXAMPLE["SpringTerm"]


def _chain(num_worlds=1, stiffness=(300.0, 150.0)):
    """A static anchor, two boxes hung below it by springs (anchor-box0, box0-box1), offset so they swing."""
    scene = mochi.create_scene("springs")
    anchor = scene.create_rigid_actor(name="anchor", shape=mochi.create_icosphere_shape(0.01, 1), is_static=True,
                                      world_from_local=mochi.TransformRT(translation=[0.0, 1.0, 0.0]))
    box = mochi.create_box_mesh_shape([0.1, 0.06, 0.08])
    boxes = [scene.create_rigid_actor(name=f"box{k}", shape=box, density=700.0,
                                      world_from_local=mochi.TransformRT(translation=[0.08 * (k + 1), 0.85 - 0.2 * k,
                                                                                      0.02 * k]))
             for k in range(2)]
    spring = SpringTerm(scene, [(boxes[0], anchor), (boxes[1], boxes[0])], stiffness,
                        [[0.0, 0.03, 0.02], [0.01, 0.03, 0.0]], [[0.0, 0.0, 0.0], [0.0, -0.03, 0.01]])
    scene.add_potential(spring)
    scene.set_num_worlds(num_worlds)
    return scene, boxes, spring


def _context(rng, scene, num_worlds, psd_project):
    shape = (num_worlds, 3)
    return StageContext(model=SimpleNamespace(), stage_dt=0.01, stage_time=0.0,
                        com_position0=rng.normal(size=shape + (3,)),
                        rotation0=lie.exp_so3(rng.normal(size=shape + (3,))),
                        linear_velocity0=rng.normal(size=shape + (3,)),
                        angular_velocity0=rng.normal(size=shape + (3,)),
                        velocity_sym0=np.zeros(shape + (3, 3)), gravity=np.zeros((num_worlds, 3)),
                        external_force=np.zeros(shape + (6,)), psd_project=psd_project)


def _random_pose(rng, num_worlds):
    return rng.normal(scale=0.3, size=(num_worlds, 3, 3)), lie.exp_so3(rng.normal(size=(num_worlds, 3, 3)))


@pytest.mark.parametrize("project", [False, True])
def test_the_spring_kernel_equals_its_numpy_oracle(rng, project):
    scene, _, spring = _chain()
    ctx = _context(rng, scene, 3, project)
    c, r = _random_pose(rng, 3)
    want = spring.evaluate(ctx, c, r, True)
    got = spring.evaluate_kernel(ctx, c, r, True)
    assert np.abs(want.gradient).max() > 1.0  # stretched springs: nothing here is zero
    np.testing.assert_allclose(got.energy, want.energy, rtol=1e-13)
    scale = np.abs(want.hessian_diag).max()
    np.testing.assert_allclose(got.gradient, want.gradient, rtol=0, atol=1e-13 * np.abs(want.gradient).max())
    np.testing.assert_allclose(dense_hessian(got), dense_hessian(want), rtol=0, atol=1e-13 * scale)
    no_hessian = spring.evaluate_kernel(ctx, c, r, False)
    assert no_hessian.hessian_diag is None and np.array_equal(no_hessian.gradient, got.gradient)


def _energy(spring, ctx, c, r, xi):
    """E at the iterate moved by xi (W, 3 bodies, 6): c + xi_t, exp(skew(xi_r)) R."""
    return spring.evaluate_kernel(ctx, c + xi[..., :3], lie.exp_so3(xi[..., 3:]) @ r, False).energy


def test_the_spring_kernel_is_the_derivative_of_its_energy(rng):
    """Gradient: central differences, h = 1e-6 (truncation ~h^2 |E'''| ~ 1e-10, round-off ~eps |E| / h ~ 1e-9).
    Exact Hessian (project=False), couplings included: second differences, h = 1e-4 (truncation ~1e-8 |E''''|,
    round-off ~eps |E| / h^2 ~ 1e-8 |E|). With project=True the Gauss-Newton part is returned: PSD."""
    scene, _, spring = _chain()
    ctx = _context(rng, scene, 2, False)
    c, r = _random_pose(rng, 2)
    terms = spring.evaluate_kernel(ctx, c, r, True)
    dense = dense_hessian(terms)
    eye = np.eye(9 * 2).reshape(18, 3, 6)  # unit steps over (body, DoF); body 0 (the static anchor) included
    h = 1e-6
    fd = np.stack([(_energy(spring, ctx, c, r, h * e) - _energy(spring, ctx, c, r, -h * e)) / (2 * h) for e in eye],
                  axis=1)  # (W, 18)
    assert np.abs(terms.gradient).max() > 1.0
    np.testing.assert_allclose(terms.gradient.reshape(2, 18), fd, rtol=0, atol=1e-7 * np.abs(fd).max())
    h = 1e-4
    fdh = np.zeros((2, 18, 18))
    for i, ei in enumerate(eye):
        for j, ej in enumerate(eye):
            fdh[:, i, j] = (_energy(spring, ctx, c, r, h * (ei + ej)) - _energy(spring, ctx, c, r, h * (ei - ej))
                            - _energy(spring, ctx, c, r, h * (ej - ei)) + _energy(spring, ctx, c, r, -h * (ei + ej))
                            ) / (4 * h * h)
    assert np.abs(dense[:, :6, 6:]).max() > 1.0  # the couplings are in the comparison
    np.testing.assert_allclose(dense, fdh, rtol=0, atol=1e-6 * max(np.abs(dense).max(), terms.energy.max()))
    projected = dense_hessian(spring.evaluate_kernel(_context(rng, scene, 2, True), c, r, True))
    assert np.linalg.eigvalsh(projected).min() > -1e-9 * np.abs(projected).max()
    assert np.abs(projected - dense).max() > 1e-3  # the second-order rotation term is really left out


def _swing(num_worlds, steps=40, kicks=None):
    scene, boxes, _ = _chain(num_worlds)
    for w, kick in enumerate(kicks if kicks is not None else range(num_worlds)):
        boxes[1].set_velocity([0.3 * kick, 0.0, -0.2 * kick], [0.0, 1.0 * kick, 0.5], w)
    for _ in range(steps):
        scene.step(0.01)
    state = scene.current_kinematics()
    return scene, state.com_position.copy(), state.rotation.copy()


def test_a_scene_with_springs_takes_the_compiled_path_and_follows_the_numpy_newton(monkeypatch):
    """The same swing on both paths: states within round-off (per solve ~1e-16 m; 40 smooth steps amplify it
    little), the same statuses; the boxes really move."""
    ends = {}
    for compiled in (False, True):
        monkeypatch.setattr(pipeline, "COMPILED_NEWTON", compiled)
        scene, c, r = _swing(2)
        assert scene.solver_path() == ("compiled (fused step)" if compiled else
                                       "numpy: the compiled Newton is off (SUPERDEX_COMPILED_NEWTON=0 or "
                                       "pipeline.COMPILED_NEWTON = False)")
        ends[compiled] = (c, r, [a.get_convergence_status(w) for a in scene.get_actors() for w in range(2)])
    assert np.abs(ends[True][0][:, 1:] - _chain()[0].current_kinematics().com_position[0, 1:]).max() > 0.01
    np.testing.assert_allclose(ends[True][0], ends[False][0], rtol=0, atol=1e-11)
    np.testing.assert_allclose(ends[True][1], ends[False][1], rtol=0, atol=1e-11)
    assert ends[True][2] == ends[False][2]


def test_spring_worlds_stepped_together_equal_each_alone_and_threads_equal_serial():
    _, c, r = _swing(3)
    for w in range(3):
        _, c1, r1 = _swing(1, kicks=[w])
        np.testing.assert_array_equal(c1[0], c[w])
        np.testing.assert_array_equal(r1[0], r[w])
    assert_worker_threads_give_the_serial_bits(lambda: _swing(3, steps=10)[1:])


def test_the_example_runs_on_the_compiled_path(capsys):
    box = EXAMPLE["main"](steps=30)
    assert "solver path: compiled (fused step)" in capsys.readouterr().out
    assert box.get_center_of_mass_transform().translation_array[1] < 0.8  # it fell, held by the spring


def test_a_term_without_a_kernel_is_a_clear_error():
    class NoKernel(SpringTerm):
        kernel = None

    scene, _, spring = _chain()
    with pytest.raises(TypeError, match="NoKernel.kernel is not set"):
        NoKernel(scene, spring.pairs, 1.0, np.zeros((2, 3)), np.zeros((2, 3))).kernel_address()
