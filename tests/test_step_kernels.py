"""The step's own kernels (sim/kernels/step.py), and the helpers that replaced numpy calls on the per-step path,
against the numpy code they replaced: bit for bit, not within a tolerance (they do the same operations in the same
order), on random states that reach every branch. One exception: numpy's own SIMD inverse trig on AVX-512 hosts
(`_assert_log_so3_matches`)."""

import math

import numpy as np
import pytest

from superdex_gym.sim import lie
from superdex_gym.sim.tunnelling import tunnelling_ratio, tunnelling_ratio_numpy


def _tunnelling_case(rng, num_worlds, num_bodies, num_static, step_scale):
    """Random poses at step start / end and a geometry of ``num_static`` non-plane colliders."""
    com0 = rng.normal(size=(num_worlds, num_bodies, 3))
    rot0 = lie.exp_so3(rng.normal(size=(num_worlds, num_bodies, 3)))
    com1 = com0 + step_scale * rng.normal(size=com0.shape)
    rot1 = lie.exp_so3(step_scale * rng.normal(size=com0.shape)) @ rot0
    static = np.sort(rng.choice(num_bodies, size=num_static, replace=False)).astype(np.int64)
    dynamic = np.ones(num_bodies, dtype=bool)
    dynamic[static] = False
    half_extents = rng.uniform(0.05, 1.5, (num_static, 3))
    counts = np.where(dynamic, rng.integers(1, 9, num_bodies), 0)  # samples per body (8: a box's corners)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    points = rng.uniform(-0.3, 0.3, (offsets[-1], 3))
    reach = np.array([np.max(np.linalg.norm(points[offsets[k]:offsets[k + 1]], axis=1), initial=0.0)
                      for k in range(num_bodies)])
    geometry = {"reach": reach, "static": static, "half_extents": half_extents, "half": half_extents.min(axis=1),
                "centre": rng.normal(size=(num_static, 3)), "radius": np.linalg.norm(half_extents, axis=1),
                "names": [f"c{k}" for k in range(num_static)], "points": points, "offsets": offsets}
    return com0, rot0, com1, rot1, geometry, dynamic


def test_tunnelling_ratio_equals_numpy_bit_for_bit(rng):
    reached = {"near": 0, "far": 0, "none": 0}
    for num_worlds, num_bodies, num_static, scale in ((1, 10, 5, 0.01), (7, 6, 2, 0.3), (64, 4, 1, 1.0),
                                                      (3, 5, 3, 0.0), (5, 9, 4, 3.0)):
        case = _tunnelling_case(rng, num_worlds, num_bodies, num_static, scale)
        ratio, which = tunnelling_ratio(*case)
        ref_ratio, ref_which = tunnelling_ratio_numpy(*case)
        assert ratio.dtype == ref_ratio.dtype and which.dtype == ref_which.dtype
        np.testing.assert_array_equal(ratio, ref_ratio)
        np.testing.assert_array_equal(which, ref_which)
        reached["near"] += int(np.sum(ratio > 0))
        reached["none"] += int(np.sum(which == -1))
    assert reached["near"] > 10 and reached["none"] > 0  # both branches of the reach test were taken


def test_tunnelling_ratio_nan_and_empty_cases(rng):
    com0, rot0, com1, rot1, geometry, dynamic = _tunnelling_case(rng, 4, 6, 2, 0.5)
    com1[2, np.flatnonzero(dynamic)[1], 0] = np.nan  # a NaN pose fails every reach test: that body is skipped
    ratio, which = tunnelling_ratio(com0, rot0, com1, rot1, geometry, dynamic)
    ref_ratio, ref_which = tunnelling_ratio_numpy(com0, rot0, com1, rot1, geometry, dynamic)
    np.testing.assert_array_equal(ratio, ref_ratio)
    np.testing.assert_array_equal(which, ref_which)
    assert np.all(np.isfinite(ratio))
    for geo, dyn in ((dict(geometry, static=np.zeros(0, dtype=np.int64)), dynamic), (geometry, np.zeros(6, bool))):
        ratio, which = tunnelling_ratio(com0, rot0, com1, rot1, geo, dyn)
        np.testing.assert_array_equal(ratio, np.zeros(4))
        np.testing.assert_array_equal(which, np.full(4, -1))


def _rotation_vectors(rng, count):
    """Rotation vectors over every branch: zero, tiny (series), ordinary, within 1e-2 of pi, exactly pi."""
    axes = rng.normal(size=(count, 3))
    axes /= np.linalg.norm(axes, axis=1, keepdims=True)
    angles = np.concatenate([np.zeros(3), rng.uniform(0.0, 2e-4, count // 4), rng.uniform(0.0, np.pi, count // 4),
                             np.pi - rng.uniform(0.0, 2e-2, count // 4), np.full(count - 3 - 3 * (count // 4), np.pi)])
    return axes * angles[:, None]


def test_exp_so3_equals_numpy_bit_for_bit(rng):
    theta = _rotation_vectors(rng, 400)
    theta[::7] *= 3.0  # beyond pi too: exp takes any vector
    np.testing.assert_array_equal(lie.exp_so3(theta), lie.exp_so3_numpy(theta))
    for shaped in (theta[5], theta[:24].reshape(2, 3, 4, 3), theta[:0], theta[:, ::-1], theta.T.copy().T):
        out = lie.exp_so3(shaped)
        assert out.shape == shaped.shape[:-1] + (3, 3)
        np.testing.assert_array_equal(out, lie.exp_so3_numpy(shaped))
    bad = theta[:4].copy()
    bad[1, 2] = np.nan
    np.testing.assert_array_equal(lie.exp_so3(bad), lie.exp_so3_numpy(bad))  # NaN where numpy has NaN
    assert np.isnan(lie.exp_so3(bad)[1]).all() and np.isfinite(lie.exp_so3(bad)[[0, 2, 3]]).all()


def _numpy_inverse_trig_is_libm() -> bool:
    """Whether this host's numpy computes arctan2 and arccos as libm does (numba's kernels call libm). On hosts
    with AVX-512 numpy dispatches them to its own SIMD routines, which differ from libm by an ULP or two on ~8% of
    inputs (measured on such a host); elsewhere both are libm."""
    x = np.linspace(-1.0, 1.0, 2001)
    return (np.array_equal(np.arctan2(x, x[::-1] + 0.5), [math.atan2(a, b) for a, b in zip(x, x[::-1] + 0.5)])
            and np.array_equal(np.arccos(x), [math.acos(a) for a in x]))


def _assert_log_so3_matches(out, ref):
    """Bit for bit where numpy's inverse trig is libm's; elsewhere within 6 ULP: the rotation angle's arctan2 is
    within 4 ULP of libm's (numpy's documented bound for its SIMD float64 routines) and reaches the result
    through one division and one product (+1 ULP each). Measured on an AVX-512 host: at most 4 ULP."""
    if _numpy_inverse_trig_is_libm():
        np.testing.assert_array_equal(out, ref)
    else:
        np.testing.assert_array_equal(np.isnan(out), np.isnan(ref))
        np.testing.assert_array_max_ulp(np.nan_to_num(out), np.nan_to_num(ref), maxulp=6)


def test_log_so3_equals_numpy(rng):
    rot = lie.exp_so3_numpy(_rotation_vectors(rng, 400))
    rot[10] = np.eye(3)
    rot[11] = np.diag([1.0, -1.0, -1.0])  # exactly pi: the quaternion route
    rot[12] += 1e-9 * rng.normal(size=(3, 3))  # not quite orthogonal, as Newton's iterates are
    out = lie.log_so3(rot)
    _assert_log_so3_matches(out, lie.log_so3_numpy(rot))
    angles = np.linalg.norm(out, axis=1)
    assert np.sum(angles < 1e-4) > 50 and np.sum(angles > np.pi - 1e-2) > 50  # both special branches taken
    for shaped in (rot[5], rot[:24].reshape(2, 3, 4, 3, 3), rot[:0], np.swapaxes(rot, -1, -2)):
        result = lie.log_so3(shaped)
        assert result.shape == shaped.shape[:-2] + (3,)
        _assert_log_so3_matches(result, lie.log_so3_numpy(shaped))
    bad = rot[:3].copy()
    bad[2, 0, 1] = np.nan
    np.testing.assert_array_equal(lie.log_so3(bad), lie.log_so3_numpy(bad))
    assert np.isnan(lie.log_so3(bad)[2]).any() and np.isfinite(lie.log_so3(bad)[:2]).all()


def test_convergence_weights_equal_numpy_bit_for_bit(rng):
    from types import SimpleNamespace

    from superdex_gym.sim.model import compile_bodies, convergence_weights, convergence_weights_numpy

    records = []
    for k in range(6):
        a = rng.normal(size=(3, 3))
        records.append(SimpleNamespace(mass=0.5 + k, second_moment=a @ a.T + 0.01 * np.eye(3), com_local=np.zeros(3),
                                       is_static=k in (1, 4), has_gravity=True, newton_euler=False,
                                       static_pivot=np.zeros(3)))
    bodies = compile_bodies(records)
    for num_worlds, gravity in ((1, np.array([0.0, 0.0, -9.81])), (33, np.zeros(3)), (4, np.array([3.0, 40.0, 0.0]))):
        rotation = lie.exp_so3(rng.normal(size=(num_worlds, 6, 3)))
        force, torque = convergence_weights(bodies, rotation, gravity)
        ref_force, ref_torque = convergence_weights_numpy(bodies, rotation, gravity)
        np.testing.assert_array_equal(force, ref_force)
        np.testing.assert_array_equal(torque, ref_torque)
        assert np.all(torque[:, [1, 4]] == 1.0) and np.all(torque[:, [0, 2, 3, 5]] != 1.0)  # statics: weight 1


def test_select_static_equals_where(rng):
    from superdex_gym.sim.kernels.step import select_static

    num_worlds, num_bodies = 5, 7
    is_static = rng.uniform(size=num_bodies) < 0.4
    is_static[:2] = (True, False)
    vec = lambda: rng.normal(size=(num_worlds, num_bodies, 3))  # noqa: E731
    mat = lambda: rng.normal(size=(num_worlds, num_bodies, 3, 3))  # noqa: E731
    dyn = (vec(), mat(), vec(), vec(), mat())
    st = (vec(), mat(), vec(), vec())
    out = tuple(np.empty_like(a) for a in dyn)
    select_static(is_static, *dyn, *st, *out)
    sel = is_static[None, :, None]
    want = (np.where(sel, st[0], dyn[0]), np.where(sel[..., None], st[1], dyn[1]), np.where(sel, st[2], dyn[2]),
            np.where(sel, st[3], dyn[3]), np.where(sel[..., None], 0.0, dyn[4]))
    for got, ref in zip(out, want):
        np.testing.assert_array_equal(got, ref)


def test_a_half_turn_in_the_tunnelling_ratio(rng):
    com0, rot0, com1, rot1, geometry, dynamic = _tunnelling_case(rng, 3, 6, 2, 0.2)
    row = np.flatnonzero(dynamic)[0]
    for angle in (np.pi - 1e-3, np.pi - 2e-2):  # log_so3's quaternion route (the numpy code), and just outside it
        rot1[1, row] = lie.exp_so3_numpy(np.array([0.0, 0.0, angle])) @ rot0[1, row]
        for got, ref in zip(tunnelling_ratio(com0, rot0, com1, rot1, geometry, dynamic),
                            tunnelling_ratio_numpy(com0, rot0, com1, rot1, geometry, dynamic)):
            np.testing.assert_array_equal(got, ref)

def test_gripper_observation_helpers_equal_np_mean_and_clip():
    import itertools

    from superdex_gym.envs.core.config import clip as _clip
    from superdex_gym.envs.robots.floating_gripper import _mean_of_two

    values = [0.0, -0.0, 1.5, -2.25, 1e-300, -1e-300, np.nan, 7.0, -7.0]
    for a, b in itertools.product(values, values):  # signed zeros included: np.mean of (-0.0, -0.0) is +0.0
        pair = np.zeros((1, 2, 3))
        pair[0, :, 1] = a, b
        assert _mean_of_two(pair).tobytes() == pair.mean(axis=1).tobytes()
        assert _mean_of_two(pair[:, :, 1])[:, None].tobytes() == pair[:, :, 1].mean(axis=1, keepdims=True).tobytes()
        assert _clip(np.array([a, b]), -3.0, 3.0).tobytes() == np.clip(np.array([a, b]), -3.0, 3.0).tobytes()
        low, high = np.array([-1.0, 0.5]), np.array([2.0, 0.75])  # per-axis bounds, as the workspace's
        assert _clip(np.array([a, b]), low, high).tobytes() == np.clip(np.array([a, b]), low, high).tobytes()
        single = np.array([a, b], dtype=np.float32)  # actions arrive as float32: the dtype is kept
        assert _clip(single, -1.0, 1.0).tobytes() == np.clip(single, -1.0, 1.0).tobytes()



def test_state_copy_copies_every_field(rng):
    """State.copy is written out field by field (the env guard copies the state every substep): every dataclass
    field must be in it, equal and unshared, so a field added later cannot be silently aliased."""
    from dataclasses import fields

    from superdex_gym.sim.model import Kinematics, State

    def kin():
        return Kinematics(rng.normal(size=(2, 3, 3)), rng.normal(size=(2, 3, 3, 3)), rng.normal(size=(2, 3, 3)),
                          rng.normal(size=(2, 3, 3)), rng.normal(size=(2, 3, 3, 3)))

    state = State(history=[kin(), kin()], num_history=np.array([1, 2]), sym_dirty=rng.uniform(size=(2, 3)) < 0.5,
                  static_previous_com=rng.normal(size=(2, 3, 3)), static_previous_rotation=rng.normal(size=(2, 3, 3, 3)),
                  external_force=rng.normal(size=(2, 3, 6)), offset_force=rng.normal(size=(2, 3, 1, 3)),
                  offset_local=rng.normal(size=(3, 1, 3)), status=np.array([1, 2]), time=0.25, last_dt=0.01)
    copied = state.copy()
    for f in fields(State):
        value, other = getattr(state, f.name), getattr(copied, f.name)
        if f.name == "history":
            assert len(other) == len(value)
            for a, b in zip(value, other):
                for g in fields(Kinematics):
                    assert not np.shares_memory(getattr(a, g.name), getattr(b, g.name))
                    np.testing.assert_array_equal(getattr(a, g.name), getattr(b, g.name))
        elif isinstance(value, np.ndarray):
            assert not np.shares_memory(value, other)
            np.testing.assert_array_equal(value, other)
        else:
            assert other == value


def test_sample_depth_measures_along_the_entry_face_normal():
    """A 2 cm x 1 m x 1 m box (half extents 0.01, 0.5, 0.5): the depth past the face a path entered through, over
    the thinnest half thickness; paths along the wall, missing it or bouncing back count 0."""
    from superdex_gym.sim.tunnelling import sample_depth

    half = np.array([0.01, 0.5, 0.5])
    cases = [  # (start, end, expected)
        ([-0.02, 0.0, 0.0], [-0.005, 0.0, 0.0], 0.5),  # 5 mm into the -x face: half way to the middle
        ([-0.02, 0.0, 0.0], [0.03, 0.0, 0.0], 4.0),  # through: 4 cm past the -x face
        ([-0.011, -0.4, 0.0], [-0.011, 0.4, 0.0], 0.0),  # sliding 0.8 m along the wall, 1 mm beside it
        ([0.0, 0.0, 0.6], [0.0, 0.0, 0.45], 5.0),  # onto the top, 5 cm deep: past the sides' distance (1 cm)
        ([-0.02, 0.0, 0.0], [-0.015, 0.0, 0.0], 0.0),  # stops short of the wall
        ([-0.0099, 0.0, 0.0], [-0.0095, 0.0, 0.0], 0.05),  # resting 0.1 mm inside, pressed 0.4 mm more
        ([0.5, 0.0, 0.0], [0.5, 0.0, 0.0], 0.0),  # no step, outside: misses
    ]
    for start, end, expected in cases:
        got = sample_depth(np.array(start), np.array(end), half)
        assert got == pytest.approx(expected, rel=1e-12, abs=1e-12), (start, end)
