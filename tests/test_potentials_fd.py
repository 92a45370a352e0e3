"""Every core potential's gradient and Hessian against central finite differences, on random states.

Rotational derivatives are taken on the Lie algebra: F(xi) = E(c + xi_t, exp(skew(xi_r)) R); the gradient is
dF/dxi at 0 and the Hessian d^2F/dxi^2 at 0 (second differences of F, which are symmetric by construction).
"""

from types import SimpleNamespace

import numpy as np
import pytest

from superdex_gym.sim import lie
from superdex_gym.sim.model import compile_bodies
from superdex_gym.sim.potentials.base import StageContext
from superdex_gym.sim.potentials.external import DofLoads, Gravity, OffsetForces
from superdex_gym.sim.potentials.inertia import NewtonEulerInertia, RotationalInertia, TranslationalInertia

H = 1e-5  # FD step: central differences have O(h^2) = 1e-10 truncation; round-off ~ eps * |E| / h


def random_context(rng, num_worlds=2, num_bodies=3):
    records = []
    for k in range(num_bodies):
        a = rng.normal(size=(3, 3))
        second = a @ a.T + 0.1 * np.eye(3)
        records.append(SimpleNamespace(mass=1.0 + k, second_moment=second, com_local=np.zeros(3), is_static=False,
                                       has_gravity=True, newton_euler=False, static_pivot=np.zeros(3)))
    bodies = compile_bodies(records)
    shape = (num_worlds, num_bodies)
    ctx = StageContext(
        model=SimpleNamespace(bodies=bodies),
        stage_dt=0.05,
        stage_time=0.0,
        com_position0=rng.normal(size=shape + (3,)),
        rotation0=lie.exp_so3(rng.normal(size=shape + (3,))),
        linear_velocity0=rng.normal(size=shape + (3,)),
        angular_velocity0=rng.normal(size=shape + (3,)),
        velocity_sym0=lie.sym(rng.normal(size=shape + (3, 3))),
        gravity=np.tile([0.0, -9.8, 0.0], (num_worlds, 1)),
        external_force=rng.normal(size=shape + (6,)),
        psd_project=False,
        offset_force=rng.normal(size=shape + (2, 3)),
        offset_local=rng.normal(size=(num_bodies, 2, 3)),
    )
    c = ctx.com_position0 + 0.1 * rng.normal(size=shape + (3,))
    rot = lie.exp_so3(0.3 * rng.normal(size=shape + (3,))) @ ctx.rotation0
    return ctx, c, rot


def perturbed_energy(pot, ctx, c, rot, world, body, xi):
    c2, r2 = c.copy(), rot.copy()
    c2[world, body] += xi[:3]
    r2[world, body] = lie.exp_so3(xi[3:]) @ rot[world, body]
    return pot.evaluate(ctx, c2, r2, False).energy[world]


def fd_gradient(pot, ctx, c, rot, world, body):
    g = np.zeros(6)
    for i in range(6):
        e = np.zeros(6)
        e[i] = H
        g[i] = (perturbed_energy(pot, ctx, c, rot, world, body, e) - perturbed_energy(pot, ctx, c, rot, world, body, -e)) / (2 * H)
    return g


def fd_hessian(pot, ctx, c, rot, world, body, h=1e-4):
    hess = np.zeros((6, 6))
    f = lambda xi: perturbed_energy(pot, ctx, c, rot, world, body, xi)  # noqa: E731
    for i in range(6):
        for j in range(6):
            ei, ej = np.eye(6)[i] * h, np.eye(6)[j] * h
            hess[i, j] = (f(ei + ej) - f(ei - ej) - f(-ei + ej) + f(-ei - ej)) / (4 * h * h)
    return hess


POTENTIALS = {
    "translational_inertia": TranslationalInertia(),
    "rotational_inertia": RotationalInertia(),
    "gravity": Gravity(),
    "offset_forces": OffsetForces(),
}


@pytest.mark.parametrize("name", list(POTENTIALS))
def test_gradient_and_hessian_match_finite_differences(name, rng):
    pot = POTENTIALS[name]
    ctx, c, rot = random_context(rng)
    terms = pot.evaluate(ctx, c, rot, True)
    for world in range(c.shape[0]):
        for body in range(c.shape[1]):
            grad = terms.gradient[world, body]
            assert np.linalg.norm(grad) > 1e-3  # a zero gradient cannot pass
            fd = fd_gradient(pot, ctx, c, rot, world, body)
            scale = max(1.0, np.abs(grad).max())
            np.testing.assert_allclose(grad, fd, atol=1e-6 * scale)
            fdh = fd_hessian(pot, ctx, c, rot, world, body)
            # second differences with h = 1e-4: truncation O(h^2) ~ 1e-8, round-off ~ eps |E| / h^2 ~ 1e-8 |E|
            tol = 1e-6 * max(1.0, np.abs(terms.hessian_diag[world, body]).max(), abs(terms.energy[world]))
            np.testing.assert_allclose(terms.hessian_diag[world, body], fdh, atol=tol)


def test_psd_projection_gives_psd_blocks(rng):
    ctx, c, rot = random_context(rng)
    ctx.psd_project = True
    for pot in (RotationalInertia(), OffsetForces()):
        blocks = pot.evaluate(ctx, c, rot, True).hessian_diag
        assert np.linalg.eigvalsh(blocks[..., 3:, 3:]).min() >= -1e-9


def test_rotational_inertia_zero_at_predictor_rotation(rng):
    """Phi = 1/2 tr((R - R~) W (R - R~)^T) vanishes, with zero gradient, when R~ is a rotation and R = R~."""
    ctx, c, rot = random_context(rng)
    ctx.velocity_sym0 = np.zeros_like(ctx.velocity_sym0)
    ctx.angular_velocity0 = np.zeros_like(ctx.angular_velocity0)  # R~ = R0
    terms = RotationalInertia().evaluate(ctx, c, ctx.rotation0, False)
    # the energy is a difference of terms of size tr(J)/dt^2: float64 round-off relative to that
    scale = np.trace(ctx.model.bodies.second_moment, axis1=1, axis2=2).sum() / ctx.stage_dt**2
    assert np.allclose(terms.energy, 0.0, atol=1e-14 * scale)
    assert np.allclose(terms.gradient[..., 3:], 0.0, atol=1e-14 * scale)


def test_dof_loads_are_generalized_forces(rng):
    """set_external_forces_on_dofs enters the residual as -f and -tau exactly (a generalized force); its energy
    -f.c - tau.log(R R0^T) has that gradient at the stage-start rotation."""
    ctx, c, rot = random_context(rng)
    pot = DofLoads()
    terms = pot.evaluate(ctx, c, rot, False)
    np.testing.assert_array_equal(terms.gradient, -ctx.external_force)
    fd = fd_gradient(pot, ctx, c, ctx.rotation0.copy(), 0, 1)
    np.testing.assert_allclose(fd, -ctx.external_force[0, 1], atol=1e-6)


def test_newton_euler_residual_formula(rng):
    """r = M (omega - omega0)/dt + omega x (M omega), M = R I R^T, omega = axial((R - R0)/dt R^T) (digest 2.5)."""
    ctx, c, rot = random_context(rng)
    bodies = ctx.model.bodies
    ctx.model = SimpleNamespace(bodies=type(bodies)(**{**bodies.__dict__, "newton_euler": np.ones(3, dtype=bool)}))
    terms = NewtonEulerInertia().evaluate(ctx, c, rot, True)
    w, b = 1, 2
    r, r0 = rot[w, b], ctx.rotation0[w, b]
    m = r @ bodies.inertia[b] @ r.T
    omega = lie.axial((r - r0) / ctx.stage_dt @ r.T)
    expected = m @ (omega - ctx.angular_velocity0[w, b]) / ctx.stage_dt + np.cross(omega, m @ omega)
    np.testing.assert_allclose(terms.gradient[w, b, 3:], expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(terms.hessian_diag[w, b, 3:, 3:], m / ctx.stage_dt**2, rtol=1e-12)
    assert np.all(RotationalInertia().evaluate(ctx, c, rot, False).gradient == 0.0)  # the IP skips these bodies
