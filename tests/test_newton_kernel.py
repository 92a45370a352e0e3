"""The compiled per-world Newton (sim/kernels/newton.py, sim/solver/compiled_newton.py) against the numpy Newton (sim/solver/numpy_newton.py).

Both run the same potential kernels in the same order; they differ by round-off only where the compiled one
does its own arithmetic: the LU solves (partial pivoting written out, LAPACK's gesv in numpy), the rotation
update, the norms of the stopping tests and the minimum-norm fallback. Measured on this host: Push-v0 over the
trajectory-hash run of test_trajectory_hash.py (seed 7, 200 steps, three resets) first differs at step 33, by at
most 6e-14 in the observation; 64 worlds within 5e-14 in positions over 60 steps; the bounds below leave room for
another host's LAPACK.
"""

import numba
import numpy as np
import pytest

import superdex_gym.sim as mochi
from superdex_gym.sim.step import pipeline
from superdex_gym.sim.kernels import newton as newton_kernels
from superdex_gym.sim.params import LineSearchType, PsdProjMode


@pytest.fixture
def compiled_newton(monkeypatch):
    monkeypatch.setattr(pipeline, "COMPILED_NEWTON", True)


def _stack(num_worlds):
    scene = mochi.create_scene("stack")
    scene.create_rigid_actor(name="ground", shape=mochi.create_plane_shape(normal=[0, 1, 0], distance=0.0),
                             is_static=True)
    box = mochi.create_box_mesh_shape([0.1, 0.1, 0.1])
    actors = [scene.create_rigid_actor(name=f"box{k}", shape=box, density=1000.0,
                                       world_from_local=mochi.TransformRT(translation=[0, 0.0993 + 0.1993 * k, 0]))
              for k in range(3)]
    scene.set_num_worlds(num_worlds)
    return scene, actors


# Kernel-only helpers (no Python wrapper of their own), called from the tests through these shims.
@numba.njit(cache=False)
def _solve_system(a, b, sol, n, work, perm):
    return newton_kernels._solve_system(a, b, sol, n, work, perm)


@numba.njit(cache=False)
def _min_norm_solve(a, b, sol, n):
    newton_kernels.min_norm_solve(a, b, sol, n)


def _kick(actors, world, scene_world=None):
    """A different start per world: world ``world``'s velocities, written into ``scene_world`` (default: same)."""
    rng = np.random.default_rng(world)
    for a in actors:
        a.set_velocity(rng.normal(scale=0.5, size=3).tolist(), rng.normal(scale=2.0, size=3).tolist(),
                       world=world if scene_world is None else scene_world)


def test_lu_solve_matches_numpy_and_singular_systems_get_min_norm():
    rng = np.random.default_rng(0)
    work, perm = np.empty((12, 12)), np.empty(12, np.int64)
    sol = np.empty(12)
    for n in (6, 12):
        for _ in range(20):
            a = rng.normal(size=(n, n))
            a = a @ a.T + 0.1 * np.eye(n)  # SPD, as a projected Hessian
            b = rng.normal(size=n)
            assert _solve_system(a, b, sol, n, work, perm)
            # Backward-stable LU: relative error ~ cond(a) * eps.
            cond = np.linalg.cond(a)
            ref = np.linalg.solve(a, b)
            assert np.linalg.norm(sol[:n] - ref) <= 10 * cond * np.finfo(float).eps * np.linalg.norm(ref)
    # An exactly singular block (a projected zero-eigenvalue direction): the minimum-norm least-squares solution.
    a = np.diag([2.0, 0.0, 1.0, 4.0, 1.0, 1.0])
    b = np.array([2.0, 3.0, 1.0, 4.0, 1.0, 1.0])
    assert _solve_system(a, b, sol, 6, work, perm)
    np.testing.assert_allclose(sol[:6], [1.0, 0.0, 1.0, 1.0, 1.0, 1.0], atol=1e-15)
    a[0, 0] = np.nan
    assert not _solve_system(a, b, sol, 6, work, perm)


def test_min_norm_solve_matches_numpy_lstsq_on_rank_deficient_systems():
    """The LU's fallback (one-sided Jacobi SVD) against np.linalg.lstsq, symmetric and general, ranks n-1 .. 1."""
    rng = np.random.default_rng(1)
    sol = np.empty(18)
    for n in (6, 12, 18):
        for rank in (n - 1, n // 2, 1):
            for symmetric in (True, False):
                basis = rng.normal(size=(n, rank))
                a = basis @ (basis.T if symmetric else rng.normal(size=(rank, n)))
                a *= 10.0 ** rng.uniform(-3, 3)
                b = rng.normal(size=n)
                _min_norm_solve(a, b, sol, n)
                ref = np.linalg.lstsq(a, b, rcond=None)[0]
                s = np.linalg.svd(a, compute_uv=False)
                k = s[0] / s[rank - 1]
                # Both backward stable: the least-squares perturbation bound eps (k^2 |x| + k |b| / s_1), with a
                # factor 10 over the worst ratio measured (2.0 over 360 such systems).
                bound = 10 * np.finfo(float).eps * (k ** 2 * np.linalg.norm(ref) + k * np.linalg.norm(b) / s[0])
                assert np.linalg.norm(ref) > 0
                assert np.linalg.norm(sol[:n] - ref) <= bound


def test_solver_path_names_why_a_scene_stays_on_numpy(compiled_newton):
    scene, _ = _stack(1)
    assert scene.solver_path() == "compiled (fused step)"
    params = scene.get_solver_params()
    for mode in PsdProjMode:  # every PSD projection mode is compiled (tests/test_newton_modes.py)
        params.non_linear_solver.psd_proj_mode = mode
        scene.set_solver_params(params)
        assert scene.solver_path() == "compiled (fused step)", mode
    params.non_linear_solver.max_elapsed_time_seconds = 1.0
    scene.set_solver_params(params)
    assert scene.solver_path().startswith("numpy: max_elapsed_time_seconds > 0")

    from superdex_gym.sim.potentials.base import Potential, PotentialTerms

    class Spring(Potential):
        def evaluate(self, ctx, com_position, rotation, want_hessian):
            return PotentialTerms.zeros(com_position.shape[0], com_position.shape[1], want_hessian)

    scene2, _ = _stack(1)
    scene2.add_potential(Spring())
    assert scene2.solver_path() == "numpy: potential Spring has no per-world kernel"
    pipeline.COMPILED_NEWTON = False  # the fixture's monkeypatch restores the default
    assert scene2.solver_path().startswith("numpy: the compiled Newton is off")


@pytest.mark.slow  # compiles both Newton paths
@pytest.mark.parametrize("ls_type", [LineSearchType.RESIDUAL_NORM, LineSearchType.ARMIJO])
def test_compiled_newton_matches_numpy_newton_on_a_stack(ls_type, monkeypatch):
    ends = {}
    for compiled in (False, True):
        monkeypatch.setattr(pipeline, "COMPILED_NEWTON", compiled)
        scene, actors = _stack(2)
        params = scene.get_solver_params()
        params.non_linear_solver.line_search_type = ls_type
        scene.set_solver_params(params)
        _kick(actors, 1)
        for _ in range(15):
            scene.step(0.01)
        ends[compiled] = (scene._state.current.com_position.copy(), scene._state.current.rotation.copy())
    # Round-off per solve ~1e-16 m; 15 contact steps amplify it by far less than 1e6.
    np.testing.assert_allclose(ends[True][0], ends[False][0], rtol=0, atol=1e-10)
    np.testing.assert_allclose(ends[True][1], ends[False][1], rtol=0, atol=1e-10)


def test_explicit_normals_take_the_compiled_path_and_match_the_numpy_newton(monkeypatch):
    """The reference's ExperimentalEvalParams.explicit_normals (stage-start normals, load and friction plane): the
    stack takes the compiled path and follows the numpy Newton (same statuses and iteration counts, states within
    round-off as in the test above), and its worlds stepped together equal each stepped alone, bit for bit."""
    def scene_of(num_worlds, kicks):
        scene, actors = _stack(num_worlds)
        params = scene.get_solver_params()
        params.experimental_eval.explicit_normals = True
        scene.set_solver_params(params)
        for world, kick in enumerate(kicks):
            _kick(actors, kick, scene_world=world)
        return scene

    ends = {}
    for compiled in (False, True):
        monkeypatch.setattr(pipeline, "COMPILED_NEWTON", compiled)
        scene = scene_of(2, [1, 2])
        assert scene.solver_path().startswith("compiled" if compiled else "numpy: the compiled Newton is off")
        stats = []
        for _ in range(10):
            scene.step(0.01)
            report = scene.get_solver_stats()
            stats.append((report.convergence_status, report.max_non_linear_iters, report.max_line_search_iters))
        ends[compiled] = (scene._state.current.com_position.copy(), scene._state.current.rotation.copy(), stats)
    assert str(ends[True][2]) == str(ends[False][2])
    np.testing.assert_allclose(ends[True][0], ends[False][0], rtol=0, atol=1e-10)
    np.testing.assert_allclose(ends[True][1], ends[False][1], rtol=0, atol=1e-10)
    for world, kick in enumerate([1, 2]):
        alone = scene_of(1, [kick])
        for _ in range(10):
            alone.step(0.01)
        assert np.array_equal(alone._state.current.com_position[0], ends[True][0][world])
        assert np.array_equal(alone._state.current.rotation[0], ends[True][1][world])


@pytest.mark.slow  # compiles both Newton paths
def test_worlds_stepped_together_equal_worlds_stepped_alone(compiled_newton):
    num = 3
    scene, actors = _stack(num)
    for w in range(num):
        _kick(actors, w)
    for _ in range(8):
        scene.step(0.01)
    together = scene._state.current.com_position.copy(), scene._state.current.rotation.copy()
    for w in range(num):
        alone, alone_actors = _stack(1)
        _kick(alone_actors, w, scene_world=0)
        for _ in range(8):
            alone.step(0.01)
        assert np.array_equal(alone._state.current.com_position[0], together[0][w])
        assert np.array_equal(alone._state.current.rotation[0], together[1][w])


@pytest.mark.slow  # compiles both Newton paths
@pytest.mark.parametrize("threads", [2, 3])
def test_worker_threads_give_the_serial_results_bit_for_bit(compiled_newton, monkeypatch, threads):
    """``initialize(num_worker_threads=N)`` splits the worlds into N contiguous slices on N threads (5 worlds: 3+2
    and 2+1+2 split), each world computed as alone: the same bits as the serial step."""
    from superdex_gym.sim import threads as sim_threads

    def run():
        scene, actors = _stack(5)
        for w in range(5):
            _kick(actors, w)
        for _ in range(8):
            scene.step(0.01)
        assert scene.solver_path() == "compiled (fused step)"
        return scene._state.current.com_position.copy(), scene._state.current.rotation.copy()

    serial_c, serial_r = run()
    submitted = []
    real_pool = sim_threads._pool

    class Recording:  # the real pool, recording which slices of worlds each step hands out
        def __init__(self, n):
            self.pool = real_pool(n)

        def submit(self, fn, worlds):
            submitted.append((worlds.start, worlds.stop))
            return self.pool.submit(fn, worlds)

    monkeypatch.setattr(sim_threads, "_pool", Recording)
    try:
        mochi.initialize(num_worker_threads=threads)
        threaded_c, threaded_r = run()
    finally:
        mochi.shutdown()
    assert mochi.context.worker_threads() == 1
    expected = {2: [(0, 2), (2, 5)], 3: [(0, 2), (2, 3), (3, 5)]}[threads]
    assert submitted[:threads] == expected and len(submitted) == 8 * threads  # every step, every slice
    np.testing.assert_array_equal(threaded_c, serial_c)
    np.testing.assert_array_equal(threaded_r, serial_r)
    assert np.abs(serial_c[:, 1:] - serial_c[0, 1:]).max() > 1e-3  # the worlds really differ (kicked apart)


@pytest.mark.slow  # compiles both Newton paths
def test_push_env_on_the_compiled_newton_follows_the_numpy_one(monkeypatch):
    import gymnasium as gym

    import superdex_gym  # noqa: F401

    actions = np.random.default_rng(3).uniform(-1, 1, (30, 4)).astype(np.float32)
    obs = {}
    for compiled in (False, True):
        monkeypatch.setattr(pipeline, "COMPILED_NEWTON", compiled)
        env = gym.make("SuperDex/Push-v0")
        env.reset(seed=5)
        if compiled:
            assert env.unwrapped.worlds.scene.solver_path() == "compiled (fused step)"
        obs[compiled] = np.array([env.step(a)[0]["observation"] for a in actions])
        env.close()
    # float32 observations; bit-identical on the development host, round-off elsewhere.
    np.testing.assert_allclose(obs[True], obs[False], rtol=0, atol=1e-6)


def test_a_kernel_called_by_address_computes_as_called_by_name_and_wrong_types_fail_to_compile():
    """jit.address_call, the way newton_stage calls the potential kernels: the same result as the direct call,
    and a call whose argument types differ from the declared signature is refused when the caller compiles
    (machine code compiled for other types would read the arguments wrongly)."""
    import numba
    from numba import types

    from superdex_gym.sim.jit import address_call, kernel, wrapper_address

    @kernel(cache=False)
    def scaled_sum(x, scale, out):
        for i in range(x.shape[0]):
            out[i] += scale * x[i]
        return x.shape[0]

    signature = types.int64(types.float64[::1], types.float64, types.float64[::1])
    call = address_call(scaled_sum, signature)

    @numba.njit(cache=False)
    def caller(address, x, out):
        return call(address, x, 2.0, out) + call(address, x, 0.5, out)

    x, out = np.array([1.0, -3.0, 0.25]), np.zeros(3)
    address = wrapper_address(scaled_sum, signature)
    assert address > 0
    assert caller(np.int64(address), x, out) == 6
    np.testing.assert_array_equal(out, 2.5 * x)
    expected = np.zeros(3)
    scaled_sum(x, 2.5, expected)
    np.testing.assert_array_equal(out, expected)
    with pytest.raises(numba.core.errors.TypingError, match="scaled_sum called by address"):
        caller(np.int64(address), x.astype(np.float32), out)
