"""Each numba kernel against its numpy oracle (the implementation it replaced), on random states.

Tolerance: the kernels sum the same products in another order (plain loops instead of einsum / matmul), and
each output is a sum of at most 27 products of O(1) factors, so they differ by a few dozen ulps of the largest
term: 1e-13 relative to the array's largest entry. Derivatives of the kernels themselves are checked against
finite differences in tests/test_potentials_fd.py (the potentials evaluate through the kernels).
"""

import os
import subprocess
import sys
from types import SimpleNamespace

import numba
import numpy as np
import pytest

from superdex_gym.sim import lie
from superdex_gym.sim.jit import kernel_array
from superdex_gym.sim.kernels import contact as contact_kernels
from superdex_gym.sim.kernels import contact_geometry
from superdex_gym.sim.model import compile_bodies
from superdex_gym.sim.potentials.base import StageContext
from superdex_gym.sim.potentials.external import DofLoads, Gravity, OffsetForces
from superdex_gym.sim.potentials.inertia import NewtonEulerInertia, RotationalInertia, TranslationalInertia

ROUND_OFF = 1e-13  # relative to the largest entry: summation-order round-off (module docstring)


def random_context(rng, num_worlds=4, num_bodies=5):
    records = []
    for k in range(num_bodies):
        a = rng.normal(size=(3, 3))
        records.append(SimpleNamespace(
            mass=1.0 + k, second_moment=a @ a.T + 0.1 * np.eye(3), com_local=np.zeros(3), is_static=k == 1,
            has_gravity=k != 2, newton_euler=k == 3, static_pivot=np.zeros(3)))
    bodies = compile_bodies(records)
    shape = (num_worlds, num_bodies)
    ctx = StageContext(
        model=SimpleNamespace(bodies=bodies), stage_dt=0.05, stage_time=0.0,
        com_position0=rng.normal(size=shape + (3,)), rotation0=lie.exp_so3(rng.normal(size=shape + (3,))),
        linear_velocity0=rng.normal(size=shape + (3,)), angular_velocity0=5.0 * rng.normal(size=shape + (3,)),
        velocity_sym0=lie.sym(rng.normal(size=shape + (3, 3))),
        gravity=np.broadcast_to(np.array([0.0, -9.81, 0.5]), (num_worlds, 3)),  # read-only, as the pipeline's
        external_force=rng.normal(size=shape + (6,)),
        offset_force=rng.normal(size=shape + (2, 3)), offset_local=rng.normal(size=(num_bodies, 2, 3)),
    )
    c = ctx.com_position0 + 0.1 * rng.normal(size=shape + (3,))
    rot = lie.exp_so3(0.8 * rng.normal(size=shape + (3,))) @ ctx.rotation0
    return ctx, c, rot


def assert_close(kernel, oracle):
    scale = max(float(np.max(np.abs(oracle))), 1e-300)
    np.testing.assert_allclose(kernel, oracle, rtol=0, atol=ROUND_OFF * scale)


@pytest.mark.parametrize("potential", [TranslationalInertia(), RotationalInertia(), NewtonEulerInertia(), Gravity(),
                                       DofLoads(), OffsetForces()], ids=lambda p: type(p).__name__)
@pytest.mark.parametrize("psd_project", [False, True])
@pytest.mark.parametrize("want_hessian", [False, True])
def test_kernel_equals_numpy_oracle(potential, psd_project, want_hessian):
    rng = np.random.default_rng(12)
    ctx, c, rot = random_context(rng)
    ctx.psd_project = psd_project
    got = potential.evaluate(ctx, c, rot, want_hessian)
    ref = potential.evaluate_numpy(ctx, c, rot, want_hessian)
    assert np.any(ref.gradient != 0.0)  # so zeros cannot pass
    assert_close(got.energy, ref.energy)
    assert_close(got.gradient, ref.gradient)
    if want_hessian:
        assert_close(got.hessian_diag, ref.hessian_diag)
        if isinstance(potential, (RotationalInertia, OffsetForces)) and psd_project:
            # the spins make some rotational blocks indefinite: the projection path ran
            raw = potential.evaluate_numpy(ctx.__class__(**{**vars(ctx), "psd_project": False}), c, rot, True)
            assert np.any(np.linalg.eigvalsh(raw.hessian_diag[..., 3:, 3:]) < -1e-6)
    else:
        assert got.hessian_diag is None


def test_kernel_arrays_are_contiguous_writable_copies_only_when_needed():
    a = np.zeros((3, 4))
    assert kernel_array(a) is a
    ro = np.broadcast_to(np.ones(3), (2, 3))
    out = kernel_array(ro)
    assert out.flags.c_contiguous and out.flags.writeable and out is not ro
    strided = np.zeros((4, 6))[:, ::2]
    assert kernel_array(strided).flags.c_contiguous
    assert kernel_array(np.zeros(3, dtype=np.float32)).dtype == np.float64


def test_kernels_compile_from_a_cold_cache(tmp_path):
    """A fresh NUMBA_CACHE_DIR (cold cache): `compile_kernels` compiles every kernel a default-path step calls from
    Python and writes its cache there, and a scene stepped after it gives the right numbers. The compiled Newton's
    callees are compiled by child processes (`compile_callees_elsewhere`) while this one compiles newton_stage:
    this process loads them from the cache, which `jit.in_disk_cache` did not hold before."""
    code = (
        "from superdex_gym.sim.jit import in_disk_cache\n"
        "from superdex_gym.sim.kernels import newton as nk\n"
        "fn, sig = nk._BY_ADDRESS[nk._CONTACT]\n"
        "before = in_disk_cache(fn, sig.args)\n"
        "from superdex_gym.sim.warmup import compile_kernels\n"
        "compile_kernels()\n"
        "print(before, in_disk_cache(fn, sig.args), sum(fn.stats.cache_hits.values()),"
        " sum(fn.stats.cache_misses.values()))\n"
        "import superdex_gym.sim as mochi\n"
        "s = mochi.create_scene(); s.create_rigid_actor(shape=mochi.create_box_mesh_shape([0.1, 0.1, 0.1]),"
        " density=1000.0, angular_velocity=[1, 2, 3])\n"
        "s.step(0.01); print(float(s.get_actors()[0].get_linear_velocity()[1]), float(s.get_gravity()[1]))\n"
    )
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache")}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].split() == ["False", "True", "1", "0"]  # cold, then cached; loaded here, not compiled here
    velocity, g = map(float, lines[1].split())
    assert velocity == pytest.approx(g * 0.01, rel=1e-12)  # one backward-Euler step of free fall: v = g dt
    cached = {p.name.split("-")[0] for p in (tmp_path / "cache").rglob("*.nbi")}  # "<module>.<kernel>-<line>..."
    entry_points = ["newton.newton_stage", "newton._newton_direction", "contact.contact_rows",
                    "contact.contact_hessian_from_rows", "depth.contact_depth",
                    "constraints.point_pivot_values", "constraints.rotation_pivot_values_into",
                    "constraints.one_actor_compliance", "inertia.translational_inertia",
                    "inertia.rotational_inertia_into",
                    "inertia.gravity", "loads.dof_loads", "loads.offset_forces", "loads.newton_euler_inertia",
                    "step.tunnelling_worst", "step.log_so3_batch", "step.exp_so3_parts", "step.exp_so3_finish",
                    "step.torque_weights", "step.select_static"]
    assert [k for k in entry_points if k not in cached] == [], sorted(cached)


def test_cache_directory_falls_back_to_a_temporary_one_when_nothing_is_writable(monkeypatch):
    from superdex_gym.sim import jit

    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    monkeypatch.setattr(jit, "_writable_dir", lambda path: False)
    chosen = jit._choose_cache_dir()
    assert chosen is not None and chosen.startswith(jit.tempfile.gettempdir())
    monkeypatch.setenv("NUMBA_CACHE_DIR", "/somewhere/chosen")
    assert jit._choose_cache_dir() is None  # the user's choice wins
    monkeypatch.delenv("NUMBA_CACHE_DIR")
    monkeypatch.setattr(jit, "_writable_dir", lambda path: True)
    assert jit._choose_cache_dir() is None  # numba's own locations work


# --- pivot constraints -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["pivot_position", "pivot_to_rigid_target", "pivot_rotation"])
@pytest.mark.parametrize("saturation", [-1.0, 1.0])
@pytest.mark.parametrize("damping", [0.0, 4.0])
@pytest.mark.parametrize("want_hessian", [False, True])
def test_pivot_kernels_equal_numpy_oracle(kind, saturation, damping, want_hessian):
    """The kernel path of a constraint set (Gauss-Newton Hessian) against `evaluate_numpy`; the targets move after
    the old ones were taken (so damping sees both), and a world subset reads its own targets."""
    from test_constraint_fixtures import build_scenario, make_ctx
    from superdex_gym.sim.potentials.base import PotentialTerms

    sc = build_scenario(kind, seed=3, saturation=saturation, exact_hessian=False, damping=damping)
    cs = sc.constraints
    for i in range(len(cs)):  # new targets: current != old
        if kind == "pivot_position":
            cs.set_target_position(i, cs.target_position(i) + sc.rng.normal(scale=0.05, size=(cs.num_worlds, 3)))
        elif kind == "pivot_to_rigid_target":
            turn = lie.exp_so3(sc.rng.normal(scale=0.05, size=(cs.num_worlds, 3)))
            shift = sc.rng.normal(scale=0.05, size=(cs.num_worlds, 3))
            cs.set_target_transform(i, turn @ cs._targets["rotation"][:, i], cs._targets["translation"][:, i] + shift)
        else:
            cs.set_target_rotation(i, lie.exp_so3(sc.rng.normal(scale=0.05, size=(cs.num_worlds, 3)))
                                   @ cs._targets["rotation"][:, i])
    for worlds in (None, np.array([2, 0])):
        ctx = sc.ctx if worlds is None else make_ctx(sc.pos_start[worlds], sc.rot_start[worlds])
        ctx.world_index = worlds
        pos, rot = (sc.pos, sc.rot) if worlds is None else (sc.pos[worlds], sc.rot[worlds])
        shape = pos.shape[:2]
        got = cs.evaluate(ctx, pos, rot, want_hessian, out=PotentialTerms.zeros(*shape, want_hessian))
        ref = cs.evaluate_numpy(ctx, pos, rot, want_hessian, PotentialTerms.zeros(*shape, want_hessian))
        assert np.any(ref.gradient != 0.0)
        assert_close(got.energy, ref.energy)
        assert_close(got.gradient, ref.gradient)
        if want_hessian:
            assert_close(got.hessian_diag, ref.hessian_diag)
    if saturation > 0:  # the fixture puts deviations on both sides of the ramp width
        norms = np.linalg.norm(cs.deviation(sc.pos, sc.rot), axis=-1)
        assert np.any(norms < cs.saturation) and np.any(norms > cs.saturation)


@pytest.mark.parametrize("com_frame", [False, True], ids=["local_frame", "com_frame"])
def test_target_pivot_values_kernel_against_its_numpy_kinematics(com_frame):
    """RigidPivotToRigidTarget's kernel path: the point pivots' kernel on the target points t_hat + R_hat x_t
    (`_target_points`, the numpy expression of `_kinematics`). g = c + R r - p: the arm R r is summed in another
    order than `_kinematics`' einsum, so g differs by round-off of the sum's largest term; measured over 25 seeds
    of the fixture: at most 3.2 eps of max |g| (2.6 with the CoM-frame target), ~1 entry in 8 not bit-equal; the
    Jacobian [1, -skew(R r)] within 0.5 eps of its largest entry. Allowed: 8 eps."""
    from test_constraint_fixtures import build_scenario

    eps = np.finfo(np.float64).eps
    for seed in range(5):
        sc = build_scenario("pivot_to_rigid_target", seed=seed, exact_hessian=False)
        cs = sc.constraints
        cs.target_transform_is_com_frame = com_frame
        assert np.abs(cs.com_local).max() > 0  # the two target frames differ
        rows = np.array([2, 0, 1])  # the worlds in another order: each reads its own targets
        g, jac = cs._values_kernel(kernel_array(sc.pos[rows]), kernel_array(sc.rot[rows]), rows, cs._targets, True)
        ref = cs._kinematics(sc.pos[rows], sc.rot[rows], {k: v[rows] for k, v in cs._targets.items()}, {}, True)
        np.testing.assert_allclose(g, ref.value, rtol=0, atol=8 * eps * np.abs(ref.value).max())
        np.testing.assert_allclose(jac, ref.jacobian[:, :, 0], rtol=0, atol=8 * eps * np.abs(ref.jacobian).max())
        assert np.abs(ref.value).max() > 1e-2


@pytest.mark.parametrize("com_frame", [False, True], ids=["local_frame", "com_frame"])
@pytest.mark.parametrize("saturation", [-1.0, 0.05], ids=["quadratic", "saturated"])
def test_target_pivot_kernel_gradient_matches_fd_of_kernel_energy(com_frame, saturation):
    """The kernel path's gradient (damped: the fixture's old targets differ from the current ones) against central
    differences of its own energy (tests/test_constraint_potentials.py's step and tolerance)."""
    from test_constraint_fixtures import build_scenario
    from test_constraint_potentials import assert_gradient_is_fd_of_energy

    sc = build_scenario("pivot_to_rigid_target", seed=3, saturation=saturation, exact_hessian=False, damping=4.0)
    cs = sc.constraints
    cs.target_transform_is_com_frame = com_frame
    assert np.abs(cs._old_targets["translation"] - cs._targets["translation"]).max() == 0  # advanced in the fixture
    cs.set_target_transform(0, cs._targets["rotation"][:, 0], cs._targets["translation"][:, 0] + 0.05)  # moved
    terms = cs.evaluate(sc.ctx, sc.pos, sc.rot, want_hessian=False)
    assert np.all(np.abs(terms.gradient).max(axis=(1, 2)) > 0)
    assert_gradient_is_fd_of_energy(cs, sc.ctx, sc.pos, sc.rot, terms)


def test_target_pivot_kernel_worlds_together_equal_each_world_alone():
    from test_constraint_fixtures import assert_worlds_alone_equal_together, build_scenario

    assert_worlds_alone_equal_together(build_scenario("pivot_to_rigid_target", seed=3, exact_hessian=False,
                                                      damping=4.0))


def test_rotation_log_kernels_equal_numpy_on_small_mid_and_near_pi_angles():
    from superdex_gym.sim.constraints.rotation_log import log_and_inverse_jacobian
    from superdex_gym.sim.kernels.constraints import log_inverse_jacobian
    from superdex_gym.sim.kernels.so3 import so3_log

    rng = np.random.default_rng(5)
    axes = rng.normal(size=(60, 3))
    axes /= np.linalg.norm(axes, axis=1, keepdims=True)
    angles = np.concatenate([[0.0, 1e-9, 5e-5, 2e-4, 0.29, 0.31], rng.uniform(0, np.pi, 48),
                             [np.pi - 2e-2, np.pi - 5e-3, np.pi - 1e-7, np.pi, np.pi, np.pi]])
    rots = lie.exp_so3(axes * angles[:, None])
    phi_ref, jinv_ref = log_and_inverse_jacobian(rots)

    @numba.njit(cache=False)  # both are kernel-only helpers, without a Python wrapper of their own
    def log_then_jacobian(m, phi, jinv):
        so3_log(m, phi)
        log_inverse_jacobian(phi, jinv)

    for k in range(len(rots)):
        phi, jinv = np.empty(3), np.empty((3, 3))
        log_then_jacobian(kernel_array(rots[k]), phi, jinv)
        np.testing.assert_allclose(phi, phi_ref[k], rtol=0, atol=ROUND_OFF * max(1.0, np.abs(phi_ref[k]).max()))
        np.testing.assert_allclose(jinv, jinv_ref[k], rtol=0, atol=ROUND_OFF * np.abs(jinv_ref[k]).max())


# --- contact -----------------------------------------------------------------------------------------------------


def _contact_cases():
    from superdex_gym.sim.contact.colliders import BoxCollider, MeshCollider, PlaneCollider, SphereCollider

    from superdex_gym.sim.contact.grid_sdf import build_grid_sdf
    from helpers import box_arrays

    turned = lie.exp_so3(np.array([0.2, -0.4, 0.1]))
    return {
        "grid": (build_grid_sdf(*box_arrays([1.0, 0.3, 1.0]), padding=0.01), -0.3),
        "plane": (PlaneCollider([0, 1, 0], 0.0), 0.0),
        # radius 1 m: |y - c| - r loses log10(r / |phi|) digits, 3 of them at r = 10 m and 1 cm depth
        "sphere": (SphereCollider([0.0, 0.0, 0.0], 1.0), -1.0),
        "box": (BoxCollider([0.0, 0.0, 0.0], [1.0, 0.3, 1.0]), -0.3),
        "rotated box": (BoxCollider([0.05, 0.0, -0.02], [0.2, 0.3, 0.25], turned), -0.3),
        "mesh": (MeshCollider(*box_arrays([1.0, 0.3, 1.0])), -0.3),
    }


@pytest.mark.parametrize("collider", ["plane", "sphere", "box", "rotated box", "grid", "mesh"])
@pytest.mark.parametrize("static_collider", [True, False], ids=["static", "dynamic"])
@pytest.mark.parametrize("mode", ["default", "implicit load", "explicit normals", "explicit, no fade", "no fade",
                                  "cinf", "exact coulomb", "frictionless"])
def test_contact_kernel_equals_numpy_oracle(collider, static_collider, mode):
    """The contact kernel (every sample, pair and world in one call) against the numpy evaluation, in the slip,
    ramp and deep regimes at once (random small rotations, 2 mm stage motion, 4 worlds, one of them apart so the
    broad phase drops it); coupling blocks too when both bodies are dynamic."""
    from test_contact_potential import FRICTION, FRICTIONLESS, two_body_setup
    from superdex_gym.sim.contact.params import ContactEvalConfig

    config = {
        "default": ContactEvalConfig(), "implicit load": ContactEvalConfig(implicit_normal_force_for_dissipation=True),
        "explicit normals": ContactEvalConfig(explicit_normals=True),
        "explicit, no fade": ContactEvalConfig(explicit_normals=True, fade_friction=False),
        "no fade": ContactEvalConfig(fade_friction=False), "cinf": ContactEvalConfig(friction_model="CINF_REGULARIZED"),
        "exact coulomb": ContactEvalConfig(fitted_friction_hessian=False), "frictionless": ContactEvalConfig(),
    }[mode]
    params = FRICTIONLESS if mode == "frictionless" else FRICTION
    pot, ctx, com, rot = two_body_setup(_contact_cases()[collider], params, static_collider,
                                        np.random.default_rng(4), config=config, gap=-0.01, stage_motion=2e-3,
                                        worlds=4)
    assert pot.uses_kernel
    com[3, 0, 1] += 5.0  # world 3: far above, no contact (at the stage start too, for explicit normals)
    ctx.com_position0[3, 0, 1] += 5.0
    assert_contact_kernel_equals_oracle(pot, ctx, com, rot, static_collider)


def assert_contact_kernel_equals_oracle(pot, ctx, com, rot, static_collider):
    """The contact potential's kernel path against `evaluate_numpy` (energy, gradient, Hessian and coupling count),
    for the two-body setups whose worlds 0-2 touch and world 3 does not."""
    from helpers import dense_hessian

    for want_hessian in (False, True):
        got = pot.evaluate(ctx, com, rot, want_hessian)
        ref = pot.evaluate_numpy(ctx, com, rot, want_hessian)
        assert np.all(ref.energy[:3] > 0) and ref.energy[3] == 0.0
        assert_close(got.energy, ref.energy)
        assert_close(got.gradient, ref.gradient)
        if want_hessian:
            assert len(got.couplings) == len(ref.couplings) == (0 if static_collider else 1)
            assert_close(dense_hessian(got), dense_hessian(ref))


@numba.njit(cache=True)
def _contact_rows_then_hessian(model, com, rot, com0, rot0, stage_dt, friction_model, fade, load_mode, fitted,
                               energy, grad, hess, coupling, row_body, rows, num_rows, reach):
    """One world through the compiled Newton's pair of contact kernels (kernel-only: no Python wrappers); ``reach``
    the broad phase's (state, reference, pairs, moves)."""
    contact_kernels.contact_rows(*model, (friction_model, fade, load_mode, fitted), com, rot, com0, rot0, stage_dt,
                                 True, energy, grad, (row_body, rows, num_rows),
                                 (np.empty((3, 3)), np.empty((3, 3)), np.empty((8, 3)), np.empty(contact_kernels._CP_SIZE)),
                                 reach)
    return contact_kernels.contact_hessian_from_rows(row_body, rows, num_rows, model[1][19], model[1][20], hess,
                                                     coupling, np.empty((1, 1, 6, 6)), np.empty((3, 6)))


def _reach_arrays(model, num_bodies, state):
    """The broad phase's work arrays of `contact_rows` for ``model``'s pairs, with reach_state ``state``."""
    num_pairs = model[1][0].shape[0]  # p_colliding
    return (np.full(1, state, np.int64), np.empty((num_bodies, 12)),
            np.empty((num_pairs, contact_kernels._RP_SIZE)), np.empty((num_bodies, 2)))


@pytest.mark.parametrize("collider", ["plane", "sphere", "box", "rotated box", "grid"])
@pytest.mark.parametrize("static_collider", [True, False], ids=["static", "dynamic"])
@pytest.mark.parametrize("mode", ["default", "implicit load", "explicit normals", "cinf", "exact coulomb"])
def test_contact_rows_and_hessian_from_rows_equal_contact_terms_bit_for_bit(collider, static_collider, mode):
    """The compiled Newton's contact evaluation, `contact_rows` (energy, gradient, rows) and later
    `contact_hessian_from_rows` (Hessian and coupling blocks assembled from those rows), world by world, against
    `contact_terms` over all worlds: the same numbers to the bit, coupling blocks and the coupled flag included."""
    from test_contact_potential import FRICTION, two_body_setup
    from superdex_gym.sim.contact.params import ContactEvalConfig
    from superdex_gym.sim.contact.potential import _FRICTION_MODEL_CODE

    config = {
        "default": ContactEvalConfig(), "implicit load": ContactEvalConfig(implicit_normal_force_for_dissipation=True),
        "explicit normals": ContactEvalConfig(explicit_normals=True),
        "cinf": ContactEvalConfig(friction_model="CINF_REGULARIZED"),
        "exact coulomb": ContactEvalConfig(fitted_friction_hessian=False),
    }[mode]
    pot, ctx, com, rot = two_body_setup(_contact_cases()[collider], FRICTION, static_collider,
                                        np.random.default_rng(4), config=config, gap=-0.01, stage_motion=2e-3,
                                        worlds=4)
    assert pot.uses_kernel
    com[3, 0, 1] += 5.0  # world 3: far above, no contact (at the stage start too, for explicit normals)
    ctx.com_position0[3, 0, 1] += 5.0
    model = (tuple(pot._kernel_samples), tuple(pot._kernel_pairs), tuple(pot._kernel_colliders))
    com, rot = kernel_array(com), kernel_array(rot)
    com0, rot0 = kernel_array(ctx.com_position0), kernel_array(ctx.rotation0)
    settings = (float(ctx.stage_dt), _FRICTION_MODEL_CODE[config.friction_model], bool(config.fade_friction),
                contact_kernels.load_mode(config), bool(config.fitted_friction_hessian))
    num_worlds, num_bodies = com.shape[:2]
    num_slots = max(int(pot._kernel_pairs.slot.max()) + 1, 0)
    ref = (np.zeros(num_worlds), np.zeros((num_worlds, num_bodies, 6)), np.zeros((num_worlds, num_bodies, 6, 6)),
           np.zeros((num_worlds, num_slots, 6, 6)))
    ref_coupled = contact_kernels.contact_terms(*model, settings[1:], com, rot, com0, rot0, settings[0], True, *ref)
    max_rows = int(pot._kernel_samples.count[pot._kernel_pairs.colliding].sum())  # contact_max_rows
    for w in range(num_worlds):
        got = tuple(np.zeros((1,) + a.shape[1:]) for a in ref)
        row_body, rows, num_rows = np.empty((max_rows, 3), np.int64), np.empty((max_rows, 18)), np.zeros(1, np.int64)
        world = slice(w, w + 1)
        reach = _reach_arrays(model, num_bodies, contact_kernels.REACH_RECORD)
        coupled = _contact_rows_then_hessian(model, com[world], rot[world], com0[world], rot0[world], *settings, *got,
                                             row_body, rows, num_rows, reach)
        assert (num_rows[0] > 0) == (w != 3)
        # recorded; explicit normals test every pair each time (the stage-start poses keep pairs in reach)
        assert reach[0][0] == (contact_kernels.REACH_RECORD if config.explicit_normals else contact_kernels.REACH_USE)
        for g, r in zip(got, ref):
            np.testing.assert_array_equal(g[0], r[w])
        assert coupled == (ref_coupled and w != 3 and not static_collider)
    assert np.all(ref[0][:3] > 0) and np.linalg.norm(ref[1][:3]) > 0 and np.linalg.norm(ref[2][:3]) > 0
    assert (np.linalg.norm(ref[3]) > 0) == (not static_collider)


def test_contact_configurations_outside_the_kernel_take_the_numpy_path_by_construction():
    from test_contact_potential import EXACT, FRICTION, ground_colliders, two_body_setup
    from superdex_gym.sim.contact.params import ContactEvalConfig

    rng = np.random.default_rng(0)
    assert not two_body_setup(ground_colliders()["plane"], FRICTION, True, rng, config=EXACT)[0].uses_kernel
    explicit = ContactEvalConfig(explicit_normals=True)  # the reference's option: in the kernel since 2026-12-05
    assert two_body_setup(ground_colliders()["plane"], FRICTION, True, rng, config=explicit)[0].uses_kernel
    mesh = ground_colliders()["mesh"]
    assert two_body_setup(mesh, FRICTION, True, rng, config=ContactEvalConfig())[0].uses_kernel
    assert not two_body_setup(mesh, FRICTION, True, rng, config=EXACT)[0].uses_kernel
    grid = ground_colliders()["sdf"]
    assert two_body_setup(grid, FRICTION, True, rng, config=ContactEvalConfig())[0].uses_kernel

    class UserField(type(mesh[0])):  # a user field: any other type, a subclass of a kernel collider's too
        pass

    user = (UserField(mesh[0].vertices, mesh[0].triangles), mesh[1])
    assert not two_body_setup(user, FRICTION, True, rng, config=ContactEvalConfig())[0].uses_kernel


@pytest.mark.parametrize("collider", ["plane", "sphere", "box", "rotated box", "grid"])
@pytest.mark.parametrize("static_collider", [True, False], ids=["static", "dynamic"])
def test_contact_depth_kernel_equals_numpy_oracle(collider, static_collider):
    """`penetration_depth` (the kernel, one call over worlds x pairs x samples) against its numpy oracle, bit for
    bit (same broad phase, same SDF arithmetic and grouping), in the ramp and deep regimes with one world apart."""
    from test_contact_potential import FRICTION, two_body_setup
    from superdex_gym.sim.contact.params import ContactEvalConfig

    pot, _, com, rot = two_body_setup(_contact_cases()[collider], FRICTION, static_collider,
                                      np.random.default_rng(7), config=ContactEvalConfig(), gap=-0.01,
                                      stage_motion=2e-3, worlds=4)
    assert pot.uses_kernel
    com[3, 0, 1] += 5.0  # world 3: far above, no contact
    got = pot.penetration_depth(com, rot)
    ref = pot.penetration_depth_numpy(com, rot)
    assert np.all(ref[:3] > 0.0) and np.all(ref[3] == 0.0)  # in contact (0.1-4.6 ramp widths) in the three
    np.testing.assert_array_equal(got, ref)


@numba.njit(cache=False)
def _skipped_pairs(reach):
    state, ref, pairs, moves = reach
    count = 0
    for p in range(pairs.shape[0]):
        if contact_geometry._out_of_reach_since(p, 0, 1, pairs, moves) or \
                contact_geometry._out_of_reach_since(p, 1, 0, pairs, moves):
            count += 1
    return count


@pytest.mark.parametrize("collider", ["plane", "sphere", "box", "rotated box", "grid"])
@pytest.mark.parametrize("static_collider", [True, False], ids=["static", "dynamic"])
def test_contact_rows_broad_phase_reference_skips_only_pairs_out_of_reach(collider, static_collider):
    """`contact_rows` after a recorded first evaluation (REACH_USE: pairs skipped when the bodies have provably not
    moved enough to reach) against the exact broad phase (REACH_OFF) at poses moved from the reference by a little
    (the far world's pairs are skipped) and by a lot (world 3 brought back into contact, world 0 lifted 5 m): the
    same rows and terms to the bit."""
    from test_contact_potential import FRICTION, two_body_setup
    from superdex_gym.sim.contact.params import ContactEvalConfig

    pot, ctx, com, rot = two_body_setup(_contact_cases()[collider], FRICTION, static_collider,
                                        np.random.default_rng(5), config=ContactEvalConfig(), gap=-0.01,
                                        stage_motion=2e-3, worlds=4)
    assert pot.uses_kernel
    far = com.copy()
    far[3, 0, 1] += 5.0  # world 3: far above, no contact
    model = (tuple(pot._kernel_samples), tuple(pot._kernel_pairs), tuple(pot._kernel_colliders))
    com0, rot0 = kernel_array(ctx.com_position0), kernel_array(ctx.rotation0)
    settings = (float(ctx.stage_dt), 0, True, contact_kernels.LOAD_RECONSTRUCTED, True)
    num_worlds, num_bodies = com.shape[:2]
    num_slots = max(int(pot._kernel_pairs.slot.max()) + 1, 0)
    max_rows = int(pot._kernel_samples.count[pot._kernel_pairs.colliding].sum())
    rng = np.random.default_rng(6)

    def evaluate(c, r, w, reach):
        out = (np.zeros(1), np.zeros((1, num_bodies, 6)), np.zeros((1, num_bodies, 6, 6)),
               np.zeros((1, num_slots, 6, 6)))
        row_body, rows, num_rows = np.empty((max_rows, 3), np.int64), np.empty((max_rows, 18)), np.zeros(1, np.int64)
        world = slice(w, w + 1)
        coupled = _contact_rows_then_hessian(model, kernel_array(c[world]), kernel_array(r[world]), com0[world],
                                             rot0[world], *settings, *out, row_body, rows, num_rows, reach)
        return out, coupled, num_rows[0], rows[:num_rows[0]].copy()

    skipped = 0
    for w in range(num_worlds):
        reach = _reach_arrays(model, num_bodies, contact_kernels.REACH_RECORD)
        evaluate(far, rot, w, reach)
        small = far + rng.normal(scale=1e-3, size=far.shape)
        turned = lie.exp_so3(rng.normal(scale=1e-3, size=far.shape)) @ rot
        large = far.copy()
        large[3, 0, 1] -= 5.0
        large[0, 0, 1] += 5.0
        for c, r in ((small, turned), (large, rot), (far, rot)):
            used = evaluate(c, r, w, reach)
            if c is small:
                skipped += _skipped_pairs(reach)
            exact = evaluate(c, r, w, _reach_arrays(model, num_bodies, contact_kernels.REACH_OFF))
            for got, ref in zip(used[0], exact[0]):
                np.testing.assert_array_equal(got, ref)
            assert used[1:3] == exact[1:3]
            np.testing.assert_array_equal(used[3], exact[3])
        assert reach[0][0] == contact_kernels.REACH_USE
    assert skipped >= 1  # the far world's pair, after the small move


@pytest.mark.parametrize("collider", ["plane", "sphere", "box", "rotated box", "grid", "mesh"])
@pytest.mark.parametrize("static_collider", [True, False], ids=["static", "dynamic"])
def test_contact_kernel_with_explicit_normals_is_an_exact_potential(collider, static_collider):
    """With explicit normals the contact is an exact incremental potential (stage-start normals, load and friction
    plane held fixed): the kernel path's gradient is the central difference of its energy, in the slip and ramp
    regimes (its Hessian stays the reference's Gauss-Newton one, so only the gradient is checked)."""
    from test_contact_potential import FRICTION, fd_check, two_body_setup
    from superdex_gym.sim.contact.params import ContactEvalConfig

    pot, ctx, com, rot = two_body_setup(_contact_cases()[collider], FRICTION, static_collider,
                                        np.random.default_rng(11), config=ContactEvalConfig(explicit_normals=True),
                                        gap=-0.01, stage_motion=2e-3, worlds=3)
    assert pot.uses_kernel
    fd_check(pot, ctx, com, rot, bodies=[0] if static_collider else [0, 1], check_hessian=False)
