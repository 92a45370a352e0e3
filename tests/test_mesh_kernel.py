"""The exact mesh collider (ColliderType.MESH) in the contact kernels (sim/kernels/mesh.py) against its numpy
oracle (`MeshCollider.evaluate`, sim/contact/mesh_distance.py), per sample and in scenes.

Agreement: the kernel computes the closest points, distances and gradients with the oracle's operations in its
order, so they are equal to the bit. Only the winding number (the sign) is summed in another order (triangle
order, where ``np.sum`` is pairwise), so the two differ by at most (kernels/mesh.py)
    bound = (2 gamma(T - 1) + 8 u) sum_i |t_i| / (4 pi),   t_i = 2 atan2(...) the oracle's terms, u = 2^-53,
and a sign can differ only where |w - 1/2| <= bound (points on the surface to round-off); the per-sample test
checks that bound per point and that its random points stay clear of it.
"""

import math

import numba
import numpy as np
import pytest
import trimesh

import superdex_gym.sim as mochi
from superdex_gym.sim.step import pipeline
from superdex_gym.sim import shapes
from superdex_gym.sim.contact.colliders import ColliderType, MeshCollider
from superdex_gym.sim.contact.mesh_distance import signed_distance_to_mesh, winding_number
from superdex_gym.sim.jit import kernel_array
from superdex_gym.sim.kernels import contact as contact_kernels
from superdex_gym.sim.kernels import contact_geometry
from superdex_gym.sim.kernels.mesh import MESH, MESH_ROW, mesh_sdf_address, pack_mesh

from helpers import assert_worker_threads_give_the_serial_bits, box_arrays

U = 2.0 ** -53  # unit round-off of float64


def _l_shape():
    """A non-convex closed mesh: an L-shaped prism (20 triangles), outward oriented."""
    outline = np.array([[0, 0], [2, 0], [2, 1], [1, 1], [1, 2], [0, 2]], float) * 0.05
    fan = np.array([[0, 1, 2], [0, 2, 3], [0, 3, 4], [0, 4, 5]])
    m = trimesh.creation.extrude_triangulation(outline, fan, 0.04)
    assert m.is_watertight and m.volume > 0
    return np.asarray(m.vertices, float) - [0.05, 0.05, 0.02], np.asarray(m.faces, np.int64)


def _torus():
    m = trimesh.creation.torus(major_radius=0.1, minor_radius=0.03, major_sections=24, minor_sections=12)
    assert m.is_watertight and m.volume > 0
    return np.asarray(m.vertices, float), np.asarray(m.faces, np.int64)


def _icosphere():
    v, t = shapes.icosphere_mesh(2)  # 320 triangles: more than one of np.sum's 128-term blocks
    return 0.1 * v, t


MESHES = {"box": lambda: box_arrays([0.1, 0.05, 0.08]), "icosphere": _icosphere, "l_shape": _l_shape,
          "torus": _torus}


def _kernel_sdf(points, values, num_triangles, want_grad):
    return _kernel_sdf_at(points, values, num_triangles, want_grad, mesh_sdf_address())


@numba.njit(cache=False)
def _kernel_sdf_at(points, values, num_triangles, want_grad, address):
    """`contact_geometry._sdf_of` (kind MESH, as the contact kernels dispatch it) at every point."""
    cp = np.zeros(contact_kernels._CP_SIZE)
    cp[0], cp[1], cp[2] = 0.0, num_triangles, address
    phi, grad = np.empty(points.shape[0]), np.empty(points.shape)
    for i in range(points.shape[0]):
        phi[i], grad[i, 0], grad[i, 1], grad[i, 2] = contact_geometry._sdf_of(
            MESH, points[i, 0], points[i, 1], points[i, 2], want_grad, cp, values)
    return phi, grad


def _query_points(v, t, rng):
    """Random points: in and around the AABB, near vertices, near edges and near faces (offsets 1e-6 .. 1e-2 m
    both ways)."""
    lo, hi = v.min(axis=0), v.max(axis=0)
    box = rng.uniform(lo - 0.3 * (hi - lo), hi + 0.3 * (hi - lo), size=(300, 3))

    def scale(n):
        return 10.0 ** rng.uniform(-6, -2, size=(n, 1))

    def direction(n):
        d = rng.normal(size=(n, 3))
        return d / np.linalg.norm(d, axis=1, keepdims=True)

    near_vertex = v[rng.integers(0, v.shape[0], 150)] + scale(150) * direction(150)
    tri = t[rng.integers(0, t.shape[0], 150)]
    s = rng.uniform(size=(150, 1))
    on_edge = v[tri[:, 0]] * s + v[tri[:, 1]] * (1 - s)
    near_edge = on_edge + scale(150) * direction(150)
    tri = t[rng.integers(0, t.shape[0], 150)]
    bary = rng.dirichlet([1, 1, 1], 150)
    corners = v[tri]
    on_face = np.einsum("ki,kij->kj", bary, corners)
    normal = np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
    normal /= np.linalg.norm(normal, axis=1, keepdims=True)
    near_face = on_face + scale(150) * rng.choice([-1.0, 1.0], size=(150, 1)) * normal
    return np.ascontiguousarray(np.concatenate([box, near_vertex, near_edge, near_face]))


def _winding_bound(points, v, t):
    """Per point (the oracle's winding number, the bound on the kernel's difference from it (module docstring))."""
    a, b, c = (v[t[:, i]] for i in range(3))
    w = winding_number(points, a, b, c)
    pa, pb, pc = a - points[:, None], b - points[:, None], c - points[:, None]
    la, lb, lc = (np.linalg.norm(q, axis=-1) for q in (pa, pb, pc))
    num = np.einsum("...i,...i->...", pa, np.cross(pb, pc))
    den = la * lb * lc + np.einsum("...i,...i->...", pa, pb) * lc + np.einsum("...i,...i->...", pb, pc) * la \
        + np.einsum("...i,...i->...", pc, pa) * lb
    terms = np.abs(2.0 * np.arctan2(num, den)).sum(axis=1)
    n = t.shape[0] - 1
    gamma = n * U / (1 - n * U)
    return w, (2 * gamma + 8 * U) * terms / (4 * math.pi)


@pytest.mark.parametrize("mesh", sorted(MESHES))
def test_mesh_sdf_kernel_equals_the_numpy_mesh_distance(mesh):
    v, t = MESHES[mesh]()
    collider = MeshCollider(v, t)
    points = _query_points(v, t, np.random.default_rng(sorted(MESHES).index(mesh)))
    values = kernel_array(pack_mesh(v, t, collider.face_normals))
    assert values.shape == (MESH_ROW * t.shape[0],)
    phi, grad = _kernel_sdf(points, values, t.shape[0], True)
    phi_only, zero = _kernel_sdf(points, values, t.shape[0], False)
    ref = collider.evaluate(points)
    w, bound = _winding_bound(points, v, t)
    clear = np.abs(w - 0.5) > bound
    assert clear.all(), f"{np.count_nonzero(~clear)} points within the winding-number bound of the surface"
    assert np.all(bound < 1e-12)  # the bound itself: ~T^2 u at worst
    assert (phi < 0).any() and (phi > 0).any()
    # Same operations in the same order: the same bits (only the sign could differ, and it cannot here).
    np.testing.assert_array_equal(phi, ref.phi)
    np.testing.assert_array_equal(grad, ref.grad)
    np.testing.assert_array_equal(phi_only, phi)
    assert not zero.any()
    assert np.all(np.abs(np.linalg.norm(grad, axis=1) - 1.0) < 1e-12)
    # On the surface (the vertices themselves): phi = 0 whatever the sign, G the first closest triangle's normal.
    on = kernel_array(v)
    phi, grad = _kernel_sdf(on, values, t.shape[0], True)
    assert np.all(phi == 0.0)
    np.testing.assert_array_equal(grad, collider.evaluate(on).grad)


@pytest.mark.parametrize("mesh", sorted(MESHES))
def test_mesh_sdf_gradient_is_the_finite_difference_of_its_distance(mesh):
    """Central differences, h = 1e-6 m, at points whose whole stencil keeps the same closest triangle and region
    (phi is smooth there): truncation error h^2 |phi'''| / 6 <= h^2 / (6 d^2) with d >= 1e-4 m the distance to the
    feature (~2e-5), round-off 1e-16 / h (~1e-10)."""
    v, t = MESHES[mesh]()
    collider = MeshCollider(v, t)
    values = kernel_array(pack_mesh(v, t, collider.face_normals))
    rng = np.random.default_rng(10 + sorted(MESHES).index(mesh))
    points = _query_points(v, t, rng)
    h = 1e-6
    offsets = h * np.eye(3)[:, None]
    stencil = np.concatenate([points[None], points[None] + offsets, points[None] - offsets])
    flat = stencil.reshape(-1, 3)
    ref = signed_distance_to_mesh(flat, v, t)
    same = ((ref.triangle.reshape(7, -1) == ref.triangle.reshape(7, -1)[0]).all(axis=0)
            & (ref.region.reshape(7, -1) == ref.region.reshape(7, -1)[0]).all(axis=0)
            & (np.abs(ref.signed_distance.reshape(7, -1)[0]) > 1e-4))
    assert same.sum() > 300
    phi, grad = _kernel_sdf(kernel_array(flat), values, t.shape[0], True)
    phi = phi.reshape(7, -1)[:, same]
    fd = (phi[1:4] - phi[4:7]).T / (2 * h)
    g = grad.reshape(7, -1, 3)[0, same]
    assert np.all(np.linalg.norm(g, axis=1) > 0.5)
    np.testing.assert_allclose(g, fd, rtol=0, atol=3e-5)


# --- the contact potential ---------------------------------------------------------------------------------------


def _mesh_cases():
    from test_contact_potential import ground_colliders

    torus_v, torus_t = _torus()
    return {
        "slab": ground_colliders()["mesh"],  # the top face of a 2 x 0.6 x 2 m box mesh at y = 0
        # the torus lying flat (axis y), its top at y = 0 under the cube's centre: a curved, non-convex surface
        "torus": (MeshCollider(torus_v[:, [0, 2, 1]], torus_t[:, [0, 2, 1]]), -0.03),
    }


@pytest.mark.parametrize("case", ["slab", "torus"])
@pytest.mark.parametrize("static_collider", [True, False], ids=["static", "dynamic"])
@pytest.mark.parametrize("mode", ["default", "implicit load", "cinf"])
def test_contact_kernel_with_a_mesh_collider_equals_the_numpy_potential(case, static_collider, mode):
    """`ContactPotential.evaluate` (the contact kernel) against `evaluate_numpy` on a MESH collider: energies,
    gradients and Hessian blocks (couplings too when both bodies are dynamic) to the round-off of the other
    colliders (test_kernels.ROUND_OFF: the mesh distances are equal to the bit, the sums after them are ordered
    differently); the compiled Newton's pair `contact_rows` / `contact_hessian_from_rows` equal `contact_terms`
    bit for bit; `penetration_depth` equals its numpy oracle bit for bit."""
    from test_contact_potential import FRICTION, two_body_setup
    from test_kernels import _contact_rows_then_hessian, _reach_arrays, assert_contact_kernel_equals_oracle
    from superdex_gym.sim.contact.params import ContactEvalConfig
    from superdex_gym.sim.contact.potential import _FRICTION_MODEL_CODE

    config = {"default": ContactEvalConfig(),
              "implicit load": ContactEvalConfig(implicit_normal_force_for_dissipation=True),
              "cinf": ContactEvalConfig(friction_model="CINF_REGULARIZED")}[mode]
    pot, ctx, com, rot = two_body_setup(_mesh_cases()[case], FRICTION, static_collider, np.random.default_rng(4),
                                        config=config, gap=-0.01, stage_motion=2e-3, worlds=4)
    assert pot.uses_kernel and pot._kernel_colliders.kind[0] == MESH
    com[3, 0, 1] += 5.0  # world 3: far above, no contact (the broad phase drops it)
    assert_contact_kernel_equals_oracle(pot, ctx, com, rot, static_collider)
    np.testing.assert_array_equal(pot.penetration_depth(com, rot), pot.penetration_depth_numpy(com, rot))

    model = (tuple(pot._kernel_samples), tuple(pot._kernel_pairs), tuple(pot._kernel_colliders))
    com, rot = kernel_array(com), kernel_array(rot)
    com0, rot0 = kernel_array(ctx.com_position0), kernel_array(ctx.rotation0)
    settings = (float(ctx.stage_dt), _FRICTION_MODEL_CODE[config.friction_model], bool(config.fade_friction),
                contact_kernels.load_mode(config), bool(config.fitted_friction_hessian))
    num_worlds, num_bodies = com.shape[:2]
    num_slots = max(int(pot._kernel_pairs.slot.max()) + 1, 0)
    ref = (np.zeros(num_worlds), np.zeros((num_worlds, num_bodies, 6)), np.zeros((num_worlds, num_bodies, 6, 6)),
           np.zeros((num_worlds, num_slots, 6, 6)))
    contact_kernels.contact_terms(*model, settings[1:], com, rot, com0, rot0, settings[0], True, *ref)
    max_rows = int(pot._kernel_samples.count[pot._kernel_pairs.colliding].sum())
    for w in range(num_worlds):
        got = tuple(np.zeros((1,) + a.shape[1:]) for a in ref)
        row_body, rows, num_rows = np.empty((max_rows, 3), np.int64), np.empty((max_rows, 18)), np.zeros(1, np.int64)
        world = slice(w, w + 1)
        _contact_rows_then_hessian(model, com[world], rot[world], com0[world], rot0[world], *settings, *got,
                                   row_body, rows, num_rows, _reach_arrays(model, num_bodies,
                                                                           contact_kernels.REACH_RECORD))
        assert (num_rows[0] > 0) == (w != 3)
        for g, r in zip(got, ref):
            np.testing.assert_array_equal(g[0], r[w])


# --- scenes ------------------------------------------------------------------------------------------------------


def _mesh_scene(num_worlds):
    """A static MESH slab (box mesh, top at y = 0) and two dynamic boxes with MESH colliders, one falling on the other
    (mesh-vs-mesh pairs both ways between them), each world kicked differently."""
    scene = mochi.create_scene("mesh")
    scene.create_rigid_actor(name="ground", shape=mochi.create_box_mesh_shape([0.5, 0.1, 0.5]), is_static=True,
                             collider_type=ColliderType.MESH,
                             world_from_local=mochi.TransformRT(translation=[0, -0.1, 0]))
    boxes = [scene.create_rigid_actor(name=f"box{k}", shape=mochi.create_box_mesh_shape([0.05, 0.04, 0.06]),
                                      density=1000.0, collider_type=ColliderType.MESH,
                                      world_from_local=mochi.TransformRT(translation=[0.01 * k, 0.045 + 0.1 * k, 0]))
             for k in range(2)]
    scene.set_num_worlds(num_worlds)
    for w in range(num_worlds):
        _kick(boxes, w)
    return scene, boxes


def _kick(boxes, world, scene_world=None):
    rng = np.random.default_rng(world)
    for a in boxes:
        a.set_velocity(rng.normal(scale=0.3, size=3).tolist(), rng.normal(scale=2.0, size=3).tolist(),
                       world=world if scene_world is None else scene_world)


def _run(path, monkeypatch, num_worlds, steps=20):
    """Step a `_mesh_scene`: ``path`` "compiled" (the compiled Newton and contact kernel) or "numpy" (the numpy
    Newton and the numpy contact potential, main's path before MESH had a kernel: `_kernel_kind` gives -1)."""
    from superdex_gym.sim.contact import potential

    monkeypatch.setattr(pipeline, "COMPILED_NEWTON", path == "compiled")
    if path == "numpy":
        kernel_kind = potential._kernel_kind
        monkeypatch.setattr(potential, "_kernel_kind",
                            lambda c: -1 if type(c) is MeshCollider else kernel_kind(c))
    scene, _ = _mesh_scene(num_worlds)
    stats = []
    for _ in range(steps):
        scene.step(0.01)
        s = scene.get_solver_stats()
        stats.append((tuple(scene.get_world_status()), s.max_non_linear_iters, s.max_line_search_iters))
    monkeypatch.undo()
    cur = scene._state.current
    return scene.solver_path(), cur.com_position.copy(), cur.rotation.copy(), stats


@pytest.mark.parametrize("num_worlds", [2, pytest.param(64, marks=pytest.mark.slow)])
def test_a_mesh_scene_takes_the_compiled_path_and_follows_the_numpy_one(num_worlds, monkeypatch):
    path_n, c_n, r_n, stats_n = _run("numpy", monkeypatch, num_worlds)
    path_c, c_c, r_c, stats_c = _run("compiled", monkeypatch, num_worlds)
    assert path_n.startswith("numpy")
    assert path_c == "compiled (fused step)", path_c
    assert stats_c == stats_n
    # Measured (20 steps, tumbling boxes, up to 16 Newton iterations a stage): 3.3e-15 m / 1.1e-13 at W = 2,
    # 5.4e-12 m / 1.2e-10 at W = 64 (round-off of the Newton's own arithmetic, amplified by the contacts).
    np.testing.assert_allclose(c_c, c_n, rtol=0, atol=1e-8)
    np.testing.assert_allclose(r_c, r_n, rtol=0, atol=1e-8)
    assert np.abs(c_c[1] - c_c[0]).max() > 1e-3  # the worlds really differ (kicked apart)
    assert np.all(c_c[:, 1:, 1] > 0.02)  # resting on the slab and on each other, not fallen through


def test_mesh_scene_worlds_stepped_together_equal_worlds_stepped_alone(monkeypatch):
    monkeypatch.setattr(pipeline, "COMPILED_NEWTON", True)
    num = 3
    scene, _ = _mesh_scene(num)
    for _ in range(10):
        scene.step(0.01)
    together = scene._state.current.com_position.copy(), scene._state.current.rotation.copy()
    for w in range(num):
        alone, boxes = _mesh_scene(1)
        _kick(boxes, w, scene_world=0)
        for _ in range(10):
            alone.step(0.01)
        np.testing.assert_array_equal(alone._state.current.com_position[0], together[0][w])
        np.testing.assert_array_equal(alone._state.current.rotation[0], together[1][w])


def test_an_unpickled_potential_calls_this_processs_mesh_kernel():
    """The mesh kernel's address lives in the potential's frozen arrays: unpickled (in another process, here
    simulated by a foreign address), the potential writes this process's address back."""
    import pickle

    from test_contact_potential import FRICTION, two_body_setup
    from superdex_gym.sim.contact.params import ContactEvalConfig

    pot, ctx, com, rot = two_body_setup(_mesh_cases()["slab"], FRICTION, True, np.random.default_rng(0),
                                        config=ContactEvalConfig(), gap=-0.01)
    assert pot._kernel_colliders.grid_dims[0, 1] == mesh_sdf_address()
    expected = pot.evaluate(ctx, com, rot, True)
    pot._kernel_colliders.grid_dims[0, 1] = 0x1234  # another process's address: calling it would crash
    copy = pickle.loads(pickle.dumps(pot))
    assert copy._kernel_colliders.grid_dims[0, 1] == mesh_sdf_address()
    got = copy.evaluate(ctx, com, rot, True)
    assert got.energy[0] > 0
    np.testing.assert_array_equal(got.gradient, expected.gradient)


def test_a_mesh_scene_on_worker_threads_gives_the_serial_bits(monkeypatch):
    """The mesh kernel called by address from newton_stage on 2 threads (its scratch is each slice's own)."""
    monkeypatch.setattr(pipeline, "COMPILED_NEWTON", True)

    def run():
        scene, _ = _mesh_scene(5)
        for _ in range(8):
            scene.step(0.01)
        assert scene.solver_path() == "compiled (fused step)"
        return scene._state.current.com_position.copy(), scene._state.current.rotation.copy()

    assert_worker_threads_give_the_serial_bits(run)
