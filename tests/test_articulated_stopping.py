"""Scenes holding articulations stop their Newton by the scene's NonLinearSolverParams (sim/articulated/stopping.py):
the weights' closed forms, max_iter and the tolerances obeyed, GLOBAL mode, and the converged settings agreeing
with the oracle's run-to-convergence rule."""

import numpy as np
import pytest

import superdex_gym.sim as mochi
from superdex_gym.sim import articulated as art
from superdex_gym.sim.articulated.oracle import ArticulatedOracle
from superdex_gym.sim.articulated.stopping import Stopping, articulation_weights, from_solver
from superdex_gym.sim.params import ConvergenceMode, ConvergenceStatus

from reference import CONVERGED, box_mesh, set_solver
from test_articulated_scene import chain_params

JT = art.ArticulatedJointType
HALF = np.array([0.05, 0.1, 0.2])


def _one_link(joint_type, axis=(0, 1, 0)):
    p = art.ArticulatedActorParams(name="one", world_from_root=mochi.TransformRT(translation=[0, 1, 0]))
    p.joints = [art.ArticulatedJointParams(type=joint_type, axis=list(axis))]
    p.links = [art.ArticulatedLinkParams(parent_link=-1, shape=box_mesh(HALF), density=1000.0)]
    return art.build_model(p)


def test_a_free_link_is_weighted_by_the_rigid_rule():
    """One FREE link at the identity: force weight 1/(m a_ref)^2, torque weight 1/(a_ref^2 m I_ii), the rigid rule
    for a diagonal inertia (sim/model.py convergence_weights: tau_i = a_ref sqrt(m) sqrt(I)_ii)."""
    model = _one_link(JT.FREE)
    m = 1000.0 * np.prod(2 * HALF)
    size = 2 * HALF
    inertia = m / 12.0 * (np.sum(size**2) - size**2)  # a box's principal moments
    a_ref = 9.81
    w = articulation_weights(model, np.zeros((1, 6)), a_ref)[0]
    info = model.dof_info[0]
    t, r = info.get_trans_offset(), info.get_rot_offset()
    np.testing.assert_allclose(w[t:t + 3], 1.0 / (m * a_ref) ** 2, rtol=1e-12)
    np.testing.assert_allclose(w[r:r + 3], 1.0 / (a_ref**2 * m * inertia), rtol=1e-12)


def test_an_articulation_held_against_gravity_has_weighted_residual_one():
    """A vertical prismatic link at rest: the stage gradient at the start is its weight m g, and the weighted
    residual m g / (a_ref sqrt(M m_dd)) with M = m_dd = m and a_ref = |g| is exactly 1, as for a resting rigid actor."""
    scene = mochi.create_scene("rest")
    p = art.ArticulatedActorParams(name="slider", world_from_root=mochi.TransformRT(translation=[0, 1, 0]))
    p.joints = [art.ArticulatedJointParams(type=JT.PRISMATIC, axis=[0, 1, 0])]
    p.links = [art.ArticulatedLinkParams(parent_link=-1, shape=box_mesh(HALF), density=1000.0)]
    a = scene.create_articulated_actor(p)
    model = a.model
    m = float(model.mass[0])
    a_ref = float(np.linalg.norm(mochi.DEFAULT_GRAVITY))
    w = articulation_weights(model, np.zeros((1, 1)), a_ref)
    stop = from_solver(mochi.NonLinearSolverParams(), w, np.zeros(1, dtype=np.int64))
    gradient = np.array([[m * a_ref]])  # -m g . axis at the predictor of a body at rest (gravity -y)
    np.testing.assert_allclose(stop.residuals(gradient), [[1.0]], rtol=1e-12)


def _falling_chain(**nonlinear):
    scene = mochi.create_scene("stop")
    set_solver(scene, **nonlinear)
    a = scene.create_articulated_actor(chain_params())
    a.set_articulated_pose_from_joints([0.6, -0.4, 0.3])
    return scene, a


def test_max_iter_caps_the_newton_and_reports_stopped():
    scene, _ = _falling_chain(max_iter=1, abs_tol=1e-12, rel_tol=1e-12)
    scene.step(0.01)
    stats = scene.get_solver_stats()
    assert stats.max_non_linear_iters == 1
    assert stats.convergence_status is ConvergenceStatus.STOPPED
    scene, _ = _falling_chain(**CONVERGED)
    scene.step(0.01)
    stats = scene.get_solver_stats()
    assert 1 < stats.max_non_linear_iters < 100 and stats.convergence_status is ConvergenceStatus.CONVERGED


def test_a_looser_tolerance_takes_fewer_iterations_and_stays_within_it():
    loose, tight = _falling_chain(), _falling_chain(**CONVERGED)
    iterations = []
    for scene, _ in (loose, tight):
        total = 0
        for _ in range(10):
            scene.step(0.01)
            total += scene.get_solver_stats().max_non_linear_iters
        iterations.append(total)
    assert iterations[0] < iterations[1]
    # the loose run's poses: within what abs_tol 1e-3 of the weighted residual allows, far from round-off
    gap = np.abs(loose[1].get_articulated_pose() - tight[1].get_articulated_pose()).max()
    assert 0.0 < gap < 1e-3


def test_global_mode_uses_the_plain_norm():
    weights = np.array([[4.0, 9.0, 1.0]])
    params = mochi.NonLinearSolverParams(convergence_mode=ConvergenceMode.GLOBAL, abs_tol=1.0)
    stop = from_solver(params, weights, np.array([0, 2]))
    grad = np.array([[0.6, 0.8, 0.0]])
    np.testing.assert_allclose(stop.residuals(grad), [[1.0]])
    assert stop.converged(grad, stop.residuals(grad), 0).tolist() == [True]
    weighted = from_solver(mochi.NonLinearSolverParams(abs_tol=1.0), weights, np.array([0, 2]))
    np.testing.assert_allclose(weighted.residuals(grad), [[np.sqrt(4 * 0.36 + 9 * 0.64), 0.0]])
    assert weighted.converged(grad, weighted.residuals(grad), 0).tolist() == [False]


def test_rel_tol_counts_only_after_the_first_iteration():
    stop = Stopping(abs_tol=1e-12, rel_tol=0.5, weights=np.ones((1, 1)), segments=np.zeros(1, dtype=np.int64))
    rho0 = np.array([[1.0]])
    grad = np.array([[0.4]])
    assert stop.converged(grad, rho0, 0).tolist() == [False]
    assert stop.converged(grad, rho0, 1).tolist() == [True]


def test_the_oracle_given_the_scene_settings_steps_as_the_scene():
    """Bit for bit, at the default (loose) settings too: the scene and the oracle share the rule."""
    scene, a = _falling_chain()
    oracle = ArticulatedOracle(art.build_model(chain_params()))
    oracle.set_pose([0.6, -0.4, 0.3])
    for _ in range(5):
        scene.step(0.01)
        oracle.step(0.01, solver=mochi.NonLinearSolverParams())
        assert np.array_equal(a.get_articulated_pose(), oracle.q[0])


@pytest.mark.parametrize("bad", [{"max_iter": 0}, {"abs_tol": -1.0}])
def test_impossible_settings_are_refused_by_the_scene(bad):
    scene, a = _falling_chain()
    with pytest.raises(ValueError):
        set_solver(scene, **bad)
    before = a.get_articulated_pose()
    scene.step(0.01)  # the scene kept its settings and steps
    assert not np.array_equal(before, a.get_articulated_pose())
