"""The stage Newton solve as one kernel: every world's whole Newton loop (potentials, PSD-projected Hessian blocks
in each psd_proj_mode, the IF_FAIL modes' retry included, the small dense solve, line search, stopping tests, best
iterate on stop) in one call per stage.

sim/solver/numpy_newton.py (`_NewtonRun`) is the numpy formulation and the oracle; this kernel follows it step by step for
one world at a time, so a world's result never depends on the others in the batch (stepped together == alone,
bit for bit). The potentials are the kernels of sim/kernels/ called on one world's buffers (leading axis 1), in
the order and with the summation of `newton.evaluate_potentials`. What differs from numpy by round-off: the
6x6 / 6D x 6D solves (LU with partial pivoting written out here instead of LAPACK's), the rotation update
exp(skew(-lam dx)) R, the norms of the stopping tests (sequential sums instead of numpy's einsum), and the
minimum-norm solution of an exactly singular system (a one-sided Jacobi SVD instead of LAPACK's gelsd).

Compile cost shapes this module (docs/engine.md, "Solver paths"): numba links every callee's LLVM IR into its
caller and optimizes the result again, so the potential kernels are called by address (`jit.address_call`, the
addresses from `callee_addresses`) and stay out of this module; the helpers are small, called without array
expressions or literal arguments (each literal type is one more specialization), and the helpers only kernels
call have no Python wrappers (`inner_kernel`).

Which scenes take this path is decided in sim/solver/compiled_newton.py (`plan`), once per step from the scene's
composition, never by a run-time failure.
"""

from __future__ import annotations

import math

import numpy as np

from numba import types

from ..jit import address_call, compile_in_processes, in_disk_cache, inner_kernel, kernel, wrapper_address
from .constraints import one_actor_compliance, point_pivot_values, rotation_pivot_values_into
from .contact import _CP_SIZE, contact_hessian_from_rows, contact_max_rows, contact_rows
from .contact_geometry import _RP_SIZE, REACH_RECORD
from .inertia import gravity, rotational_inertia_into, translational_inertia
from .joints import joint_set_terms
from ..potentials.kernel_term import TERM_SIGNATURE, term_kernel
from .loads import dof_loads, newton_euler_inertia, offset_forces

NOT_STARTED, CONVERGED, STOPPED, DIVERGED = 0, 1, 2, 3  # params.ConvergenceStatus values
PSD_ALWAYS, PSD_NEVER, PSD_IF_FAIL_RETRY, PSD_IF_FAIL_ALWAYS = 0, 1, 2, 3  # params.PsdProjMode values
LS_NONE, LS_SIMPLE, LS_ARMIJO, LS_RESIDUAL_NORM, LS_ARMIJO_OR_RESIDUAL_NORM = 0, 1, 2, 5, 6  # LineSearchType
_SMALL_ANGLE = 1e-4  # lie._SMALL_ANGLE


@inner_kernel
def lu_solve(a, b, x, n, perm):
    """Solve a[:n, :n] x = b[:n] by LU with partial pivoting (a is overwritten); False when a pivot is exactly
    zero (LAPACK gesv's singular case). ``perm`` (n,) int scratch."""
    for i in range(n):
        perm[i] = i
        x[i] = b[i]
    for k in range(n):
        p = k
        best = abs(a[k, k])
        for i in range(k + 1, n):
            v = abs(a[i, k])
            if v > best:
                best, p = v, i
        if best == 0.0:
            return False
        if p != k:
            for j in range(n):
                t = a[k, j]
                a[k, j] = a[p, j]
                a[p, j] = t
            t = x[k]
            x[k] = x[p]
            x[p] = t
        piv = a[k, k]
        for i in range(k + 1, n):
            f = a[i, k] / piv
            a[i, k] = f
            if f != 0.0:
                for j in range(k + 1, n):
                    a[i, j] -= f * a[k, j]
                x[i] -= f * x[k]
    for i in range(n - 1, -1, -1):
        s = x[i]
        for j in range(i + 1, n):
            s -= a[i, j] * x[j]
        x[i] = s / a[i, i]
    return True


@inner_kernel  # called from kernels only (the tests call it through a jitted shim)
def _solve_system(mat, rhs, sol, n, work, perm):
    """sol = mat^-1 rhs for the n x n system (mat kept); the minimum-norm least-squares solution when the LU
    fails or is not finite and the system is (newton.batched_solve's rare path). False: no finite solution."""
    for i in range(n):
        for j in range(n):
            work[i, j] = mat[i, j]
    ok = lu_solve(work, rhs, sol, n, perm)
    if ok:
        for i in range(n):
            if not np.isfinite(sol[i]):
                ok = False
                break
    if ok:
        return True
    for i in range(n):
        if not np.isfinite(rhs[i]):
            return False
        for j in range(n):
            if not np.isfinite(mat[i, j]):
                return False
    min_norm_solve(mat, rhs, sol, n)
    for i in range(n):
        if not np.isfinite(sol[i]):
            return False
    return True


@inner_kernel  # called from kernels only (the tests call it through a jitted shim)
def min_norm_solve(mat, rhs, sol, n):
    """sol = the minimum-norm least-squares solution of mat[:n, :n] x = rhs[:n], as np.linalg.lstsq with its
    default rcond (singular values at or below eps n times the largest count as zero).

    One-sided Jacobi SVD (Hestenes): rotate column pairs of U = A until all are orthogonal (A V = U, V
    orthogonal), so s_j = |u_j| and x = sum_j v_j (u_j . b) / s_j^2. Backward stable like LAPACK's gelsd, which
    numpy calls, so the two agree to round-off. Written out because numba's lstsq, compiled and linked into the
    Newton kernel, cost about 9 s of its cold compile, for a path taken about once in 10^4 Push steps."""
    eps = np.finfo(np.float64).eps
    u = np.empty((n, n))
    v = np.empty((n, n))
    norms = np.empty(n)
    for i in range(n):
        for j in range(n):
            u[i, j] = mat[i, j]
            v[i, j] = 1.0 if i == j else 0.0
    for _ in range(64):  # quadratic convergence: a handful of sweeps in practice
        rotated = False
        for p in range(n - 1):
            for q in range(p + 1, n):
                alpha = 0.0
                beta = 0.0
                gamma = 0.0
                for i in range(n):
                    alpha += u[i, p] * u[i, p]
                    beta += u[i, q] * u[i, q]
                    gamma += u[i, p] * u[i, q]
                if abs(gamma) <= eps * np.sqrt(alpha) * np.sqrt(beta):
                    continue
                rotated = True
                # The rotation that zeroes u_p . u_q: t = tan(angle), the root of t^2 + 2 zeta t - 1 of least size.
                zeta = (beta - alpha) / (2.0 * gamma)
                t = 1.0 / (abs(zeta) + math.hypot(1.0, zeta))
                if zeta < 0.0:
                    t = -t
                c = 1.0 / math.hypot(1.0, t)
                sn = c * t
                for i in range(n):
                    up, uq = u[i, p], u[i, q]
                    u[i, p] = c * up - sn * uq
                    u[i, q] = sn * up + c * uq
                for i in range(n):
                    vp, vq = v[i, p], v[i, q]
                    v[i, p] = c * vp - sn * vq
                    v[i, q] = sn * vp + c * vq
        if not rotated:
            break
    largest = 0.0
    for j in range(n):
        s2 = 0.0
        for i in range(n):
            s2 += u[i, j] * u[i, j]
        norms[j] = np.sqrt(s2)
        largest = max(largest, norms[j])
    cutoff = eps * n * largest
    for i in range(n):
        sol[i] = 0.0
    for j in range(n):
        if not norms[j] > cutoff:
            continue
        ub = 0.0
        for i in range(n):
            ub += u[i, j] * rhs[i]
        coef = ub / (norms[j] * norms[j])
        for i in range(n):
            sol[i] += coef * v[i, j]


@kernel(no_cpython_wrapper=True)  # called by address from newton_stage (its C wrapper), never from Python
def _newton_direction(grad, hess, coupling, slot_a, slot_b, slot_groups, has_coupling, is_static, dyn_index, dx,
                      dense, rhs, sol, work, perm, local):
    """dx (N, 6) solving K dx = r over the dynamic bodies of one world (newton._solve): one 6x6 solve per body
    unless a coupling block (contact's, a two-actor constraint's) between two dynamic bodies is non-zero, then one
    dense 6D x 6D solve. The slots come in groups (``slot_groups`` (G + 1,) offsets: the contact potential's, then
    one per two-actor constraint set), each one `Coupling` of the numpy Newton, added as newton._solve adds it:
    the group's (a, b) blocks, then their transposes at (b, a). ``local`` (N,) int scratch."""
    num_dyn = dyn_index.shape[0]
    for b in range(is_static.shape[0]):
        local[b] = -1
    for d in range(num_dyn):
        local[dyn_index[d]] = d
    coupled = False
    if has_coupling:
        for s in range(coupling.shape[0]):
            if local[slot_a[s]] < 0 or local[slot_b[s]] < 0:  # newton._solve drops blocks touching a static body
                continue
            for i in range(6):
                for j in range(6):
                    if coupling[s, i, j] != 0.0:
                        coupled = True
    for n in range(dx.shape[0]):
        for i in range(6):
            dx[n, i] = 0.0
    ok = True
    # One call site of the solve (numba links its IR, with the LU and the minimum-norm fallback, once per site):
    # uncoupled, one 6x6 system per dynamic body; coupled, one dense 6D x 6D system.
    size = 6 if not coupled else 6 * num_dyn
    for system in range(num_dyn if not coupled else 1):
        for i in range(size):
            for j in range(size):
                dense[i, j] = 0.0
        for d in range(num_dyn):
            if not coupled and d != system:
                continue
            n = dyn_index[d]
            at = 0 if not coupled else 6 * d
            for i in range(6):
                rhs[at + i] = grad[n, i]
                for j in range(6):
                    dense[at + i, at + j] = hess[n, i, j]
        if coupled:
            for group in range(slot_groups.shape[0] - 1):
                for transpose in range(2):
                    for s in range(slot_groups[group], slot_groups[group + 1]):
                        la, lb = local[slot_a[s]], local[slot_b[s]]
                        if la < 0 or lb < 0:
                            continue
                        if transpose == 0:
                            for i in range(6):
                                for j in range(6):
                                    dense[6 * la + i, 6 * lb + j] += coupling[s, i, j]
                        else:
                            for i in range(6):
                                for j in range(6):
                                    dense[6 * lb + j, 6 * la + i] += coupling[s, i, j]
        if not _solve_system(dense, rhs, sol, size, work, perm):
            ok = False
        for d in range(num_dyn):
            if not coupled and d != system:
                continue
            at = 0 if not coupled else 6 * d
            for i in range(6):
                dx[dyn_index[d], i] = sol[at + i]
    if not ok:
        for n in range(dx.shape[0]):
            for i in range(6):
                dx[n, i] = 0.0
    return ok


# The helpers below move buffers element by element on flat (1-D) aliases that newton_stage takes once per call:
# numba's slice assignment and in-place array operators compile a broadcasting implementation with shape-mismatch
# error formatting (10 s of LLVM time for a three-line helper, and more again in every kernel it was linked into),
# and a view or a ravel per call costs reference-count updates and a reshape call (with the views, a third of a
# Push world's Newton time). They allocate nothing, so they are compiled without NRT: no reference counting of
# their array arguments either.
@inner_kernel(_nrt=False)
def _copy(dst, dst_at, src, src_at, count):
    """dst[dst_at:dst_at + count] = src[src_at:src_at + count] (1-D arrays)."""
    for i in range(count):
        dst[dst_at + i] = src[src_at + i]


@inner_kernel(_nrt=False)
def _fill_zero(dst):
    for i in range(dst.shape[0]):
        dst[i] = 0.0


@inner_kernel(_nrt=False)
def _accumulate(total, terms):
    """total += terms (1-D, same size)."""
    for i in range(total.shape[0]):
        total[i] = total[i] + terms[i]


@inner_kernel(_nrt=False)
def _zero(e, g, h):
    e[0] = 0.0
    _fill_zero(g)
    _fill_zero(h)


@inner_kernel(_nrt=False)
def _add_terms(total_e, total_g, total_h, e, g, h):
    """total += terms (energies (1,), flat gradients and Hessians)."""
    total_e[0] = total_e[0] + e[0]
    _accumulate(total_g, g)
    _accumulate(total_h, h)


# The kernels newton_stage calls by address, with their signatures as it calls them (C-contiguous writable arrays,
# as jit.kernel_array makes them, so the numpy Newton's calls from Python reuse the same compiled potentials).
_F1, _F2, _F3, _F4 = (types.Array(types.float64, d, "C") for d in (1, 2, 3, 4))
_I1, _I2 = types.Array(types.int64, 1, "C"), types.Array(types.int64, 2, "C")
_B1 = types.Array(types.boolean, 1, "C")
_f8, _i8, _b = types.float64, types.int64, types.boolean
_TERMS = (_F1, _F3, _F4)  # energy (W,), gradient (W, N, 6), Hessian (W, N, 6, 6) outputs
_CONTACT_MODEL = (types.Tuple((_F2, _F2, _F1, _I1, _I1)),  # ContactSampleArrays
                  types.Tuple((_I1, _I1, _I1, _F1, _F1, _F1, _F1, _F1, _F1, _F1, _F1, _B1, _B1, _F1, _F2, _F1, _B1, _F2,
                               _F1, _I1, _B1)),  # ContactPairArrays
                  # ContactColliderArrays
                  types.Tuple((_I1, _F2, _F2, _F3, _F1, _F2, _F1, _F1, _I1, _I2, _F2, _F2, _F2)),
                  types.Tuple((_i8, _b, _i8, _b)))  # friction model, fade_friction, load mode, fitted Hessian
_BY_ADDRESS = (  # (kernel, signature), in the order of callee_addresses
    (translational_inertia, types.none(_F1, _B1, _f8, _F3, _F3, _F3, _b, *_TERMS)),
    (rotational_inertia_into, types.none(_F3, _B1, _f8, _F4, _F4, _F3, _F4, _b, _b, *_TERMS, _F3)),
    (newton_euler_inertia, types.none(_F3, _B1, _f8, _F4, _F4, _F3, _b, *_TERMS)),
    (gravity, types.none(_F1, _B1, _B1, _F2, _F3, _F1, _F3)),
    (dof_loads, types.none(_B1, _F3, _F3, _F4, _F4, _F1, _F3)),
    (offset_forces, types.none(_B1, _F4, _F3, _F3, _F4, _b, _b, *_TERMS)),
    (contact_rows, types.none(*_CONTACT_MODEL, _F3, _F4, _F3, _F4, _f8, _b, _F1, _F3, types.Tuple((_I2, _F2, _I1)),
                              types.Tuple((_F2, _F2, _F2, _F1)), types.Tuple((_I1, _F2, _F2, _F2)))),
    (contact_hessian_from_rows, _b(_I2, _F2, _I1, _I1, _B1, _F4, _F4, _F4, _F2)),
    (point_pivot_values, types.none(_F3, _F4, _I1, _I1, _F2, _F3, _b, _F3, _F4)),
    (rotation_pivot_values_into, types.none(_F4, _I1, _I1, _F3, _F4, _b, _F3, _F4, _F3)),
    (one_actor_compliance, types.none(_F3, _F3, _F4, _I1, _F1, _F1, _F1, _b, _b, *_TERMS)),
    (_newton_direction, _b(_F2, _F3, _F3, _I1, _I1, _I1, _b, _B1, _I1, _F2, _F2, _F1, _F1, _F2, _I1, _I1)),
    (joint_set_terms, types.none(_i8, _F3, _F4, _I1, _b, _F1, _I1, _F1, _F1, *_TERMS)),
)
_call_term = address_call(term_kernel, TERM_SIGNATURE)  # any kernel term (potentials/kernel_term.py)
(_call_translational_inertia, _call_rotational_inertia, _call_newton_euler_inertia, _call_gravity, _call_dof_loads,
 _call_offset_forces, _call_contact_rows, _call_contact_hessian, _call_point_pivot_values, _call_rotation_pivot_values,
 _call_one_actor_compliance, _call_newton_direction, _call_joint_set) = (address_call(fn, sig)
                                                                        for fn, sig in _BY_ADDRESS)
(_TRANSLATIONAL, _ROTATIONAL, _NEWTON_EULER, _GRAVITY, _DOF_LOADS, _OFFSET_FORCES, _CONTACT, _CONTACT_HESSIAN,
 _POINT_PIVOTS, _ROTATION_PIVOTS, _COMPLIANCE, _DIRECTION, _JOINT_SETS) = range(len(_BY_ADDRESS))
# The constraint set kinds of newton_stage's ``set_order`` (the constraint system's order of its non-empty sets).
# (The joint kinds' codes are fixed in kernels/joints.py; RigidPivotToRigidTarget came later, hence its 6.)
(SET_POINT_PIVOTS, SET_ROTATION_PIVOTS, SET_SPHERICAL, SET_PRISMATIC, SET_RANGE, SET_TRACKING,
 SET_TARGET_PIVOTS) = range(7)
JOINT_KINDS = {"RigidSphericalJoint": SET_SPHERICAL, "RigidPrismaticJoint": SET_PRISMATIC,
               "JointRotationRange": SET_RANGE, "JointRotationTracking": SET_TRACKING}
_addresses = np.zeros(len(_BY_ADDRESS), dtype=np.int64)  # 0 until a stage first needs the kernel


def needed_callees(newton_euler, loads, offset_forces, contact, point_pivots, rotation_pivots,
                   joints=False) -> list[int]:
    """The `_BY_ADDRESS` indices of the kernels a stage with these optional terms calls (``point_pivots``: a
    RigidPivotPosition or RigidPivotToRigidTarget set, both evaluated by the point pivots' kernel)."""
    needed = [_TRANSLATIONAL, _ROTATIONAL, _GRAVITY, _DIRECTION]
    for flag, indices in ((newton_euler, (_NEWTON_EULER,)), (loads, (_DOF_LOADS,)), (offset_forces, (_OFFSET_FORCES,)),
                          (contact, (_CONTACT, _CONTACT_HESSIAN)), (point_pivots, (_POINT_PIVOTS, _COMPLIANCE)),
                          (rotation_pivots, (_ROTATION_PIVOTS, _COMPLIANCE)), (joints, (_JOINT_SETS,))):
        if flag:
            needed.extend(indices)
    return needed


def no_addresses() -> np.ndarray:
    """Callee addresses all 0: for a call on no worlds (it compiles newton_stage and calls no callee)."""
    return np.zeros(len(_BY_ADDRESS), dtype=np.int64)


def callee_addresses(needed: list[int]) -> np.ndarray:
    """The addresses of the kernels newton_stage calls by address (int64, `_BY_ADDRESS` order), with the
    ``needed`` ones (`needed_callees`) set. A kernel is compiled (or loaded from the cache) when a stage first
    needs it, so a scene compiles only the potential kernels it uses; the others stay 0, and newton_stage calls
    each optional kernel only under the flag that made it needed (its any_newton_euler, any_load,
    has_offset_forces, has_contact, pp_count or pt_count, pr_count)."""
    for index in needed:
        if _addresses[index] == 0:
            _addresses[index] = wrapper_address(*_BY_ADDRESS[index])
    return _addresses


def compile_callees(indices) -> None:
    """Compile the `_BY_ADDRESS` kernels ``indices`` into the on-disk cache (a child process's work in
    `compile_callees_elsewhere`)."""
    for index in indices:
        wrapper_address(*_BY_ADDRESS[index])


def cold_cache() -> bool:
    """True when numba's disk cache does not hold the Newton direction kernel (every stage's callee) and this
    process has not compiled newton_stage: the first step of a process on a cold cache."""
    fn, sig = _BY_ADDRESS[_DIRECTION]
    return not newton_stage.overloads and in_disk_cache(fn, sig.args) is False


def compile_callees_elsewhere(needed: list[int]) -> list:
    """On a cold cache, start child processes that compile the ``needed`` callees not yet loaded here (contact in
    one, the rest in another: ~8 and ~10 s of compiling on these machines), so that this process can compile
    newton_stage meanwhile; [] when they are cached or already loaded (nothing to gain), or caching is off."""
    todo = [i for i in needed if _addresses[i] == 0]
    fn, sig = _BY_ADDRESS[_DIRECTION]
    if not todo or in_disk_cache(fn, sig.args) is not False:
        return []
    contact = (_CONTACT, _CONTACT_HESSIAN)
    groups = [[i for i in todo if i in contact], [i for i in todo if i not in contact]]
    return compile_in_processes([f"from {__name__} import compile_callees; compile_callees({group})"
                                 for group in groups if group])


# newton_stage's inputs come in groups (tuples typed once per stage layout, so the call stays cheap and an added
# array changes one group, not a long argument list):
#   bodies  (mass, second_moment, is_static, has_gravity, rot_active, inertia, ne_active, any_newton_euler,
#            dyn_index): model.bodies' kernel arrays and the flags of the optional core potentials
#   stage   (stage_dt, com0, rot0, vel0, omega0, sym0, gravity_w, external_force, offset_force, offset_local,
#            has_offset_forces, force_weight, torque_weight): the stage start and loads, leading axis W
#   contact (has_contact, samples, pairs, colliders, config, slot_a, slot_b): ContactPotential's frozen arrays
#            (ContactSampleArrays, ContactPairArrays, ContactColliderArrays), its configuration (friction model,
#            fade_friction, load mode, fitted Hessian) and the coupling slots of every pair (contact's, then joints')
#   sets    (has_constraints, set_order, world_index, pp, pr, pt, joints, slot_groups): the constraint sets in the
#            order ``set_order`` (SET_* kinds): position pivots pp and rotation pivots pr (count, actors, geometry,
#            target, g_old, stiffness, damp, saturation, damped), RigidPivotToRigidTarget pt (actors, arms, target
#            points, g_old, (3, C) parameters), the joint sets packed (joints.joint_set_terms: floats, ints,
#            g_old (W, 3 Cj)), `_newton_direction`'s coupling groups
#   terms   (has_terms, addresses, floats, ints, header, num_slots): the kernel terms (potentials/kernel_term.py):
#            their kernels' addresses (T,), packed floats and ints, per term (T, 5) its float and int slices and
#            first coupling slot; their coupling slots come last, after the joints'
#   solver  (max_iter, global_convergence, abs_tol, rel_tol, rel_step_tol, psd_mode, explosion_control,
#            abs_div_tol, rel_div_tol, ls_type, ls_max_iter, ls_alpha, ls_wolfe1, ls_max_rel_increase,
#            best_iterate_on_stop)
#   io      (guess_c, guess_r, out_c, out_r, out_grad, status, iterations, ls_iterations): Newton's start (W, N, ...)
#            and the outputs
# and the worlds [first_world, end_world) to solve: threads get contiguous ranges of one call's arrays.
# One world's buffers are allocated once per call and grouped the same way (`_world_buffers`). The stage functions
# below allocate nothing and are compiled without NRT: with it, every array taken out of a group or passed on is
# reference-counted (an atomic increment and decrement each, per call of every function, per Newton iteration).
# (With NRT, newton_stage took 2.5x the flat kernel's time per call; without, ~1.3x: each call still passes its
# groups as flattened array structs. Inlining them with numba's inline="always" measured slower still.)


@kernel(no_cfunc_wrapper=True)  # called from Python only: no C-callable wrapper to build
def newton_stage(addresses, bodies, stage, contact, sets, terms, solver, io, first_world, end_world):
    """Every world's Newton solve of one stage (worlds first_world .. end_world - 1), each world alone."""
    buffers = _world_buffers(bodies, stage, contact, sets, terms, io)
    for w in range(first_world, end_world):
        any_load = _load_world(w, stage, sets, io, buffers)
        _solve_world(w, addresses, bodies, stage, contact, sets, terms, solver, io, buffers, any_load)


@inner_kernel
def _world_buffers(bodies, stage, contact, sets, terms, io):
    """One world's work buffers (leading axis 1: the potential kernels loop over worlds) with their flat aliases,
    grouped as (iterate, start, terms, contact work, best iterate, linear solve, set work, kernel-term work)."""
    dyn_index = bodies[8]
    offset_force = stage[8]
    has_contact, pairs = contact[0], contact[2]
    slot_a = contact[5]
    pp, pr, pt, joints = sets[3], sets[4], sets[5], sets[6]
    n = io[0].shape[1]
    n3, n9 = 3 * n, 9 * n
    num_slots = slot_a.shape[0]
    c, r, c_try, r_try = np.empty((1, n, 3)), np.empty((1, n, 3, 3)), np.empty((1, n, 3)), np.empty((1, n, 3, 3))
    iterate = (c, r, c_try, r_try, c.reshape(n3), r.reshape(n9), c_try.reshape(n3), r_try.reshape(n9))
    c0, r0, v0, om0, s0 = (np.empty((1, n, 3)), np.empty((1, n, 3, 3)), np.empty((1, n, 3)), np.empty((1, n, 3)),
                           np.empty((1, n, 3, 3)))
    grav, load = np.empty((1, 3)), np.empty((1, n, 6))
    off_f = np.empty((1,) + offset_force.shape[1:])
    start = (c0, r0, v0, om0, s0, grav, load, off_f)
    e_tot, g_tot, h_tot = np.empty(1), np.empty((1, n, 6)), np.empty((1, n, 6, 6))
    e_try, g_try, h_try = np.empty(1), np.empty((1, n, 6)), np.empty((1, n, 6, 6))
    e_one, g_one, h_one = np.empty(1), np.empty((1, n, 6)), np.empty((1, n, 6, 6))
    k_tot, h_contact = np.zeros((1, num_slots, 6, 6)), np.empty((1, n, 6, 6))
    terms_ = (e_tot, g_tot, h_tot, e_try, g_try, h_try, e_one, g_one, h_one, k_tot, h_contact, g_tot.reshape(6 * n),
             h_tot.reshape(36 * n), g_try.reshape(6 * n), h_try.reshape(36 * n), g_one.reshape(6 * n),
             h_one.reshape(36 * n), k_tot.reshape(k_tot.size), h_contact.reshape(36 * n))
    # The contact rows of the latest evaluation (contact_rows), assembled into the Hessian where Newton takes a step;
    # reach_state: the broad phase's reference, recorded at each world's first evaluation (contact_geometry.REACH_*).
    max_rows = contact_max_rows(pairs[0], contact[1][4]) if has_contact else 0
    reach_state = np.empty(1, np.int64)
    contact_work = ((np.empty((max_rows, 3), np.int64), np.empty((max_rows, 18)), np.zeros(1, np.int64)),
                    (np.empty((3, 3)), np.empty((3, 3)), np.empty((8, 3)), np.empty(_CP_SIZE)),
                    (reach_state, np.empty((n, 12)), np.empty((pairs[0].shape[0], _RP_SIZE)), np.empty((n, 2))),
                    (np.empty((1, 1, 6, 6)), np.empty((3, 6))))
    best = (np.empty(n3), np.empty(n9), np.empty(6 * n))
    size = max(6 * dyn_index.shape[0], 6)
    linear = (np.empty((n, 6)), np.empty((size, size)), np.empty(size), np.empty(size), np.empty((size, size)),
              np.empty(size, np.int64), np.empty(n, np.int64))
    # RigidPivotToRigidTarget is damped when any damping is (as the set's Python side decides).
    pt_count = pt[0].shape[0]
    pt_damped = False
    for i in range(pt_count):
        if pt[4][1, i] != 0.0:
            pt_damped = True
    pp_count, pr_count, num_joint_slots = pp[0], pr[0], joints[1][1]
    set_work = (np.empty(1, np.int64), np.empty((9, 3, 3)), np.empty((4, 3, 3)),
                np.empty((1, pp_count, 3)), np.empty((1, pp_count, 3, 6)), np.empty((1, pp_count, 3)),
                np.empty((1, pr_count, 3)), np.empty((1, pr_count, 3, 6)), np.empty((1, pr_count, 3)),
                np.empty((1, pt_count, 3)), np.empty((1, pt_count, 3, 6)), np.empty((1, pt_count, 3)), pt_damped,
                np.empty(3 * num_joint_slots), np.empty(75 * num_joint_slots + 51), np.empty(n))  # joint_work_size
    # The kernel terms' coupling blocks of the latest evaluation, copied into their slots where a step is taken.
    term_work = (np.zeros((terms[5], 6, 6)),)
    return iterate, start, terms_, contact_work, best, linear, set_work, term_work


@inner_kernel(_nrt=False)
def _load_world(w, stage, sets, io, buffers):
    """World w's stage start, gravity, loads, offset forces, the damped sets' stage-start values and Newton's start
    into its buffers; True when the world has a DoF load."""
    iterate, start, _, contact_work, _, _, set_work, _ = buffers
    c0, r0, v0, om0, s0, grav, load, off_f = start
    n = io[0].shape[1]
    _copy_world(c0, stage[1], w)
    _copy_world(r0, stage[2], w)
    _copy_world(v0, stage[3], w)
    _copy_world(om0, stage[4], w)
    _copy_world(s0, stage[5], w)
    for i in range(3):
        grav[0, i] = stage[6][w, i]
    _copy_world(load, stage[7], w)
    any_load = False
    for b in range(n):
        for i in range(6):
            if load[0, b, i] != 0.0:
                any_load = True
    if stage[10]:
        _copy_world(off_f, stage[8], w)
    pp, pr, pt, joints = sets[3], sets[4], sets[5], sets[6]
    if pp[0]:
        _copy_world(set_work[5], pp[4], w)
    if pr[0]:
        _copy_world(set_work[8], pr[4], w)
    if pt[0].shape[0] and set_work[12]:
        _copy_world(set_work[11], pt[3], w)
    if joints[1][1]:
        _copy_world(set_work[13], joints[2], w)
    set_work[0][0] = sets[2][w]
    contact_work[2][0][0] = REACH_RECORD
    _copy_world(iterate[2], io[0], w)
    _copy_world(iterate[3], io[1], w)
    return any_load


@inner_kernel(_nrt=False)
def _copy_world(dst, src, w):
    """World w's block of src (leading axis W) into the buffer dst of one world's size (dst.size values)."""
    size = dst.size
    _copy(dst.reshape(size), 0, src.reshape(src.size), w * size, size)


@inner_kernel(_nrt=False)
def _evaluate(addresses, bodies, stage, contact, sets, terms, buffers, any_load, project):
    """Every potential's terms at the trial iterate into (e_try, g_try, h_try), summed in
    newton.evaluate_potentials' order (core potentials, then contact, then constraints), static rows of the
    gradient zeroed. The contact and constraint Hessians stay in the rows and h_one until a step is taken from
    this iterate (`_direction`). One call site per potential kernel: each costs newton_stage's compile."""
    mass, second_moment, is_static, has_gravity, rot_active, inertia, ne_active, any_newton_euler, _ = bodies
    stage_dt, offset_local, has_offset_forces = stage[0], stage[9], stage[10]
    iterate, start, sums, contact_work, _, _, set_work, term_work = buffers
    c_try, r_try = iterate[2], iterate[3]
    c0, r0, v0, om0, s0, grav, load, off_f = start[0], start[1], start[2], start[3], start[4], start[5], start[6], \
        start[7]
    e_try, g_try, h_try, e_one, g_one, h_one = sums[3], sums[4], sums[5], sums[6], sums[7], sums[8]
    g_try_f, h_try_f, g_one_f, h_one_f = sums[13], sums[14], sums[15], sums[16]
    # np.bool_(True), not the literal True: a literal argument compiles a second specialization of every potential
    # kernel beside the one the numpy Newton calls from Python.
    hessian = np.bool_(True)
    # The sum starts from the first potential's terms, as in evaluate_potentials: written in place.
    _zero(e_try, g_try_f, h_try_f)
    _call_translational_inertia(addresses[_TRANSLATIONAL], mass, is_static, stage_dt, c_try, c0, v0, hessian, e_try,
                                g_try, h_try)
    _zero(e_one, g_one_f, h_one_f)
    _call_rotational_inertia(addresses[_ROTATIONAL], second_moment, rot_active, stage_dt, r_try, r0, om0, s0, hessian,
                             project, e_one, g_one, h_one, set_work[1])
    _add_terms(e_try, g_try_f, h_try_f, e_one, g_one_f, h_one_f)
    if any_newton_euler:
        _zero(e_one, g_one_f, h_one_f)
        _call_newton_euler_inertia(addresses[_NEWTON_EULER], inertia, ne_active, stage_dt, r_try, r0, om0, hessian,
                                   e_one, g_one, h_one)
        _add_terms(e_try, g_try_f, h_try_f, e_one, g_one_f, h_one_f)
    e_one[0] = 0.0
    _fill_zero(g_one_f)
    _call_gravity(addresses[_GRAVITY], mass, is_static, has_gravity, grav, c_try, e_one, g_one)
    e_try[0] = e_try[0] + e_one[0]
    _accumulate(g_try_f, g_one_f)
    if any_load:
        e_one[0] = 0.0
        _fill_zero(g_one_f)
        _call_dof_loads(addresses[_DOF_LOADS], is_static, load, c_try, r_try, r0, e_one, g_one)
        e_try[0] = e_try[0] + e_one[0]
        _accumulate(g_try_f, g_one_f)
    if has_offset_forces:
        _zero(e_one, g_one_f, h_one_f)
        _call_offset_forces(addresses[_OFFSET_FORCES], is_static, off_f, offset_local, c_try, r_try, hessian,
                            project, e_one, g_one, h_one)
        _add_terms(e_try, g_try_f, h_try_f, e_one, g_one_f, h_one_f)
    if contact[0]:  # energy and gradient; its Hessian from the rows where a step is taken
        e_one[0] = 0.0
        _fill_zero(g_one_f)
        _call_contact_rows(addresses[_CONTACT], contact[1], contact[2], contact[3], contact[4], c_try, r_try, c0, r0,
                           stage_dt, hessian, e_one, g_one, contact_work[0], contact_work[1], contact_work[2])
        e_try[0] = e_try[0] + e_one[0]
        _accumulate(g_try_f, g_one_f)
    if sets[0] or terms[0]:
        _zero(e_one, g_one_f, h_one_f)
        if sets[0]:
            _evaluate_sets(addresses, sets, c_try, r_try, set_work, hessian, e_one, g_one, h_one)
        if terms[0]:
            _evaluate_terms(terms, set_work[0][0], iterate, start, stage[0], hessian, project, e_one, g_one, h_one,
                            term_work[0])
        # Energy and gradient now; the Hessian stays in h_one until a step is taken from this iterate.
        e_try[0] = e_try[0] + e_one[0]
        _accumulate(g_try_f, g_one_f)
    for b in range(is_static.shape[0]):
        if is_static[b]:
            for i in range(6):
                g_try[0, b, i] = 0.0


@inner_kernel(_nrt=False)
def _evaluate_sets(addresses, sets, c_try, r_try, set_work, hessian, e_one, g_one, h_one):
    """The constraint sets' terms at the trial iterate, added into (e_one, g_one, h_one) in ``set_order`` (each set
    as ConstraintSet._evaluate_kernel)."""
    set_order, pp, pr, pt, joints = sets[1], sets[3], sets[4], sets[5], sets[6]
    rows, pivot_work = set_work[0], set_work[2]
    joint_set = 0
    for step in range(set_order.shape[0]):
        kind = set_order[step]
        if kind == SET_POINT_PIVOTS or kind == SET_TARGET_PIVOTS:
            # The two point-pivot kinds share their call sites (each site costs newton_stage's compile).
            if kind == SET_POINT_PIVOTS:
                s_actors, s_arm, s_target, s_g, s_jac, s_gold = pp[1], pp[2], pp[3], set_work[3], set_work[4], \
                    set_work[5]
                s_stiffness, s_damp, s_saturation, s_damped = pp[5], pp[6], pp[7], pp[8]
            else:
                s_actors, s_arm, s_target, s_g, s_jac, s_gold = pt[0], pt[1], pt[2], set_work[9], set_work[10], \
                    set_work[11]
                s_stiffness, s_damp, s_saturation, s_damped = pt[4][0], pt[4][1], pt[4][2], set_work[12]
            if s_actors.shape[0]:
                _call_point_pivot_values(addresses[_POINT_PIVOTS], c_try, r_try, s_actors, rows, s_arm, s_target,
                                         hessian, s_g, s_jac)
                _call_one_actor_compliance(addresses[_COMPLIANCE], s_g, s_gold if s_damped else s_g, s_jac, s_actors,
                                           s_stiffness, s_damp, s_saturation, s_damped, hessian, e_one, g_one, h_one)
        elif kind == SET_ROTATION_PIVOTS and pr[0]:
            pr_g, pr_jac, pr_gold = set_work[6], set_work[7], set_work[8]
            _call_rotation_pivot_values(addresses[_ROTATION_PIVOTS], r_try, pr[1], rows, pr[2], pr[3], hessian, pr_g,
                                        pr_jac, pivot_work)
            _call_one_actor_compliance(addresses[_COMPLIANCE], pr_g, pr_gold if pr[8] else pr_g, pr_jac, pr[1], pr[5],
                                       pr[6], pr[7], pr[8], hessian, e_one, g_one, h_one)
        elif SET_SPHERICAL <= kind <= SET_TRACKING:
            _call_joint_set(addresses[_JOINT_SETS], joint_set, c_try, r_try, rows, hessian, joints[0], joints[1],
                            set_work[13], set_work[14], e_one, g_one, h_one)
            joint_set += 1


@inner_kernel(_nrt=False)
def _evaluate_terms(terms, row, iterate, start, stage_dt, hessian, project, e_one, g_one, h_one, coupling):
    """The kernel terms at the trial iterate, added into (e_one, g_one, h_one) in the scene's order, each calling
    its kernel by address with its slices of the packed floats and ints (kernel_term.TERM_SIGNATURE); their
    coupling blocks into ``coupling`` (K, 6, 6), each term's from its first slot."""
    addresses, floats, ints, header, num_slots = terms[1], terms[2], terms[3], terms[4], terms[5]
    for i in range(num_slots):
        for a in range(6):
            for b in range(6):
                coupling[i, a, b] = 0.0
    for t in range(addresses.shape[0]):
        k0 = header[t, 4]
        k1 = header[t + 1, 4] if t + 1 < addresses.shape[0] else num_slots
        _call_term(addresses[t], floats[header[t, 0]:header[t, 1]], ints[header[t, 2]:header[t, 3]], row,
                   iterate[2], iterate[3], start[0], start[1], start[2], start[3], stage_dt, hessian, project, e_one,
                   g_one, h_one, coupling[k0:k1].reshape((1, k1 - k0, 6, 6)))


@inner_kernel(_nrt=False, inline="always")
def _solve_world(w, addresses, bodies, stage, contact, sets, terms, solver, io, buffers, any_load):
    """World w's Newton loop from its loaded start (newton._NewtonRun): evaluate, line-search test, stopping
    tests, direction with the psd_mode's projection, relative step test, next trial; status and counts into io."""
    (max_iter, global_convergence, abs_tol, rel_tol, rel_step_tol, psd_mode, explosion_control, abs_div_tol,
     rel_div_tol, ls_type, ls_max_iter, ls_alpha, ls_wolfe1, ls_max_rel_increase, best_iterate_on_stop) = solver
    is_static, dyn_index = bodies[2], bodies[8]
    iterate, _, sums, _, best, linear, set_work, _ = buffers
    c, r, c_f, r_f, c_try_f, r_try_f = iterate[0], iterate[1], iterate[4], iterate[5], iterate[6], iterate[7]
    e_tot, g_tot, e_try, g_tot_f, g_try_f = sums[0], sums[1], sums[3], sums[11], sums[13]
    dx = linear[0]
    n = c.shape[1]
    # One evaluation point (one call site per potential kernel): the first pass evaluates the start iterate, every
    # later pass a line-search trial.
    if_fail = psd_mode == PSD_IF_FAIL_RETRY or psd_mode == PSD_IF_FAIL_ALWAYS
    started = False
    retrying = False
    project_always = psd_mode == PSD_ALWAYS  # per world: IF_FAIL_ALWAYS turns it on at its first retry
    project = project_always  # the PSD projection of this evaluation's blocks
    stop_next = False
    best_energy = np.inf
    st = NOT_STARTED
    iters = 0
    ls_used_max = 0
    it = 0
    k = 0
    lam = 1.0
    max_tries = 1 if ls_type == LS_NONE else ls_max_iter
    norm0 = 0.0
    norm_start = 0.0
    slope = 0.0
    e_start = 0.0
    while True:
        _evaluate(addresses, bodies, stage, contact, sets, terms, buffers, any_load, project)
        # A retry's evaluation (psd_mode IF_FAIL_*, below) is of the current iterate with projected blocks: only its
        # Hessian is new (projection leaves energy and gradient alone), so the iterate's bookkeeping is done.
        if not retrying:
            if not started:
                started = True
            elif k == max_tries - 1 or _trial_accepted(solver, g_try_f, e_try[0], norm_start, e_start, lam, slope):
                ls_used_max = max(ls_used_max, k)
                it += 1
            else:
                k += 1
                lam *= ls_alpha
                _trial(c_f, r_f, dx, lam, dyn_index, c_try_f, r_try_f)
                continue
            _copy(c_f, 0, c_try_f, 0, 3 * n)
            _copy(r_f, 0, r_try_f, 0, 9 * n)
            e_tot[0] = e_try[0]
            _copy(g_tot_f, 0, g_try_f, 0, 6 * n)
            if it == 0:
                norm0 = _norm(g_tot_f)
            # Newton iteration ``it``: best iterate, finishing status, direction, step test, line search start.
            if best_iterate_on_stop and e_tot[0] < best_energy:
                best_energy = e_tot[0]
                _copy(best[0], 0, c_f, 0, 3 * n)
                _copy(best[1], 0, r_f, 0, 9 * n)
                _copy(best[2], 0, g_tot_f, 0, 6 * n)
            fin, capped = _finish_status(w, solver, bodies, stage, g_tot_f, it, norm0, stop_next, set_work[15])
            if fin != NOT_STARTED:
                st = fin
                if capped and best_iterate_on_stop:
                    _write_out(w, io, best[0], best[1], best[2])
                else:
                    _write_out(w, io, c_f, r_f, g_tot_f)
                break
        ok = _direction(addresses, contact, sets, terms, is_static, dyn_index, buffers)
        # g . dx: the descent test of the IF_FAIL modes and the line search's slope (-dPhi/dlambda at 0).
        slope = 0.0
        for b in range(n):
            for i in range(6):
                slope += g_tot[0, b, i] * dx[b, i]
        if if_fail and not project_always and not retrying:
            # newton_direction's retry: a failed solve or no descent (g . dx <= 0; dx = 0 when the solve failed)
            # re-evaluates this iterate with PSD-projected blocks and solves again; IF_FAIL_ALWAYS keeps the
            # projection for the rest of the stage, IF_FAIL_RETRY for this iteration only.
            if not (ok and slope > 0.0):
                retrying = True
                project = True
                _copy(c_try_f, 0, c_f, 0, 3 * n)
                _copy(r_try_f, 0, r_f, 0, 9 * n)
                continue
        if retrying:
            retrying = False
            project_always = psd_mode == PSD_IF_FAIL_ALWAYS
            project = project_always
        if not ok:
            st = DIVERGED
            _write_out(w, io, c_f, r_f, g_tot_f)
            break
        iters += 1
        stop_next = _small_step(c, r, dx, dyn_index, rel_step_tol)
        # Line search on lambda = 1, alpha, alpha^2, ... from here (newton._line_search).
        norm_start = _norm(g_tot_f)
        e_start = e_tot[0]
        k = 0
        lam = 1.0
        _trial(c_f, r_f, dx, lam, dyn_index, c_try_f, r_try_f)
    io[5][w] = st
    io[6][w] = iters
    io[7][w] = ls_used_max


@inner_kernel(_nrt=False)
def _trial_accepted(solver, g_try_f, e_try, norm_start, e_start, lam, slope):
    """The line search's test of a trial that is not the last (newton._line_search)."""
    ls_type, ls_wolfe1, ls_max_rel_increase = solver[9], solver[12], solver[13]
    if ls_type == LS_NONE:
        return True
    norm_ok = _norm(g_try_f) <= norm_start
    armijo_ok = e_try <= e_start - ls_wolfe1 * lam * slope
    if ls_type == LS_RESIDUAL_NORM:
        return norm_ok
    if ls_type == LS_ARMIJO:
        return armijo_ok
    if ls_type == LS_ARMIJO_OR_RESIDUAL_NORM:
        return norm_ok or armijo_ok
    return e_try <= e_start + ls_max_rel_increase * abs(e_start)  # SIMPLE


@inner_kernel(_nrt=False)
def _finish_status(w, solver, bodies, stage, g_tot_f, it, norm0, stop_next, rho0):
    """(status, capped) of Newton iteration ``it``: NOT_STARTED to go on, else how the solve ends (the step test
    of the previous iteration, convergence, divergence, the iteration cap)."""
    (max_iter, global_convergence, abs_tol, rel_tol, _, _, explosion_control, abs_div_tol, rel_div_tol) = solver[:9]
    fin = NOT_STARTED
    if stop_next:
        fin = STOPPED
    if _converged(g_tot_f, it, global_convergence, abs_tol, rel_tol, norm0, rho0, bodies[2], stage[11], stage[12],
                  w):
        fin = CONVERGED
    if explosion_control and fin == NOT_STARTED:
        nrm = _norm(g_tot_f)
        if not np.isfinite(nrm) or nrm > abs_div_tol or nrm > rel_div_tol * max(norm0, 1e-300):
            fin = DIVERGED
    capped = False
    if it == max_iter and fin == NOT_STARTED:
        capped = True
        fin = STOPPED
    return fin, capped


@inner_kernel(_nrt=False)
def _write_out(w, io, c_f, r_f, g_f):
    """World w's final iterate and gradient into the outputs."""
    n3, n9 = c_f.shape[0], r_f.shape[0]
    _copy(io[2].reshape(io[2].size), w * n3, c_f, 0, n3)
    _copy(io[3].reshape(io[3].size), w * n9, r_f, 0, n9)
    _copy(io[4].reshape(io[4].size), w * g_f.shape[0], g_f, 0, g_f.shape[0])


@inner_kernel(_nrt=False)
def _direction(addresses, contact, sets, terms, is_static, dyn_index, buffers):
    """The Newton direction dx at the current iterate: its Hessian summed in newton.evaluate_potentials' order as
    the energy and gradient were ((core potentials + contact) + constraints), from the latest evaluation's terms
    (the core potentials' in h_try, the contact rows, the sets' in h_one and the joints' A-B blocks), then the
    block solve. Only here, where a step is taken: the iterate a solve stops on and rejected trials never need it.
    False when the solve failed (dx = 0)."""
    _, _, sums, contact_work, _, linear, set_work, term_work = buffers
    g_tot, h_tot, k_tot, h_contact = sums[1], sums[2], sums[9], sums[10]
    h_tot_f, h_try_f, h_one_f, k_tot_f, h_contact_f = sums[12], sums[14], sums[16], sums[17], sums[18]
    slot_a, slot_b = contact[5], contact[6]
    num_slots = slot_a.shape[0]
    n = g_tot.shape[1]
    _copy(h_tot_f, 0, h_try_f, 0, 36 * n)
    if contact[0]:
        _fill_zero(h_contact_f)
        _fill_zero(k_tot_f)
        pairs = contact[2]
        row_body, rows, num_rows = contact_work[0]
        blk, hj = contact_work[3]
        _call_contact_hessian(addresses[_CONTACT_HESSIAN], row_body, rows, num_rows, pairs[19], pairs[20], h_contact,
                              k_tot, blk, hj)
        _accumulate(h_tot_f, h_contact_f)
    if sets[0] or terms[0]:
        _accumulate(h_tot_f, h_one_f)
    num_joint_slots, num_term_slots = sets[6][1][1], terms[5]
    if num_joint_slots:  # the joints' A-B blocks of this iterate, into their slots after the contact ones
        _copy(k_tot_f, 36 * (num_slots - num_term_slots - num_joint_slots), set_work[14], 0, 36 * num_joint_slots)
    if num_term_slots:  # the kernel terms' blocks, into the last slots
        _copy(k_tot_f, 36 * (num_slots - num_term_slots), term_work[0].reshape(36 * num_term_slots), 0,
              36 * num_term_slots)
    dx, dense, rhs, sol, work, perm, local = linear
    return _call_newton_direction(addresses[_DIRECTION], g_tot[0], h_tot[0], k_tot[0], slot_a, slot_b, sets[7],
                                  num_slots > 0, is_static, dyn_index, dx, dense, rhs, sol, work, perm, local)


@inner_kernel(_nrt=False)
def _small_step(c, r, dx, dyn_index, rel_step_tol):
    """The relative step test on the raw increment: |dx| <= rel_step_tol |x| (positions and rotation angles)."""
    x2 = 0.0
    a2 = 0.0
    dx2 = 0.0
    for d in range(dyn_index.shape[0]):
        b = dyn_index[d]
        for i in range(3):
            x2 += c[0, b, i] * c[0, b, i]
        cos_a = 0.5 * ((r[0, b, 0, 0] + r[0, b, 1, 1]) + r[0, b, 2, 2] - 1.0)
        ang = np.arccos(min(max(cos_a, -1.0), 1.0))
        a2 += ang * ang
    for b in range(dx.shape[0]):
        for i in range(6):
            dx2 += dx[b, i] * dx[b, i]
    return np.sqrt(dx2) <= rel_step_tol * np.sqrt(x2 + a2)


@inner_kernel(_nrt=False)
def _trial(c, r, dx, lam, dyn_index, c_try, r_try):
    """The iterate x (+) (-lam dx) on the dynamic bodies (newton._apply), on flat buffers (c (3N,), r (9N,), rows
    of R at 9 b + 3 i): c - lam dx_c and exp(skew(theta)) R with theta = -lam dx_R (lie.exp_so3 with its
    small-angle series), written out here (one helper less to compile)."""
    _copy(c_try, 0, c, 0, c.shape[0])
    _copy(r_try, 0, r, 0, r.shape[0])
    for d in range(dyn_index.shape[0]):
        b = dyn_index[d]
        for i in range(3):
            c_try[3 * b + i] = c[3 * b + i] + (-lam * dx[b, i])
        x, y, z = -lam * dx[b, 3], -lam * dx[b, 4], -lam * dx[b, 5]
        angle_sq = (x * x + y * y) + z * z
        angle = np.sqrt(angle_sq)
        if angle < _SMALL_ANGLE:
            ca = 1.0 - angle_sq / 6.0 + angle_sq * angle_sq / 120.0
            cb = 0.5 - angle_sq / 24.0 + angle_sq * angle_sq / 720.0
        else:
            ca = np.sin(angle) / angle
            cb = (1.0 - np.cos(angle)) / (angle * angle)
        # K = [[0, -z, y], [z, 0, -x], [-y, x, 0]], K^2 = theta theta^T - |theta|^2 1
        e00 = 1.0 + cb * (-(y * y) - z * z)
        e11 = 1.0 + cb * (-(x * x) - z * z)
        e22 = 1.0 + cb * (-(x * x) - y * y)
        e01 = -ca * z + cb * (x * y)
        e02 = ca * y + cb * (x * z)
        e10 = ca * z + cb * (x * y)
        e12 = -ca * x + cb * (y * z)
        e20 = -ca * y + cb * (x * z)
        e21 = ca * x + cb * (y * z)
        at = 9 * b
        for j in range(3):
            r0, r1, r2 = r[at + j], r[at + 3 + j], r[at + 6 + j]
            r_try[at + j] = (e00 * r0 + e01 * r1) + e02 * r2
            r_try[at + 3 + j] = (e10 * r0 + e11 * r1) + e12 * r2
            r_try[at + 6 + j] = (e20 * r0 + e21 * r1) + e22 * r2


@inner_kernel(_nrt=False)
def _norm(g):
    """|g| of a flat gradient, summed in order."""
    s = 0.0
    for i in range(g.shape[0]):
        s += g[i] * g[i]
    return np.sqrt(s)


@inner_kernel(_nrt=False)
def _converged(g, it, global_convergence, abs_tol, rel_tol, norm0, rho0, is_static, force_weight, torque_weight, w):
    """The stopping test of newton._converged on the flat gradient g (6N,). Per-actor mode: rho_a = sqrt(w_f |f_a|^2
    + sum_j w_tj tau_aj^2) (newton._actor_residuals, torque weights of world w) against abs_tol or rel_tol rho0_a;
    at iteration 0 it stores them into rho0 (N,) (0 on static rows), which later iterations compare with."""
    if global_convergence:
        nrm = _norm(g)
        return nrm <= abs_tol or (it > 0 and nrm <= rel_tol * norm0)
    converged = True
    for b in range(is_static.shape[0]):
        if is_static[b]:
            if it == 0:
                rho0[b] = 0.0
            continue
        g0, g1, g2, g3, g4, g5 = g[6 * b], g[6 * b + 1], g[6 * b + 2], g[6 * b + 3], g[6 * b + 4], g[6 * b + 5]
        f2 = (g0 * g0 + g1 * g1) + g2 * g2
        t2 = (torque_weight[w, b, 0] * (g3 * g3) + torque_weight[w, b, 1] * (g4 * g4)) \
            + torque_weight[w, b, 2] * (g5 * g5)
        rho = np.sqrt(force_weight[b] * f2 + t2)
        if it == 0:
            rho0[b] = rho
        if not (rho <= abs_tol or (it > 0 and rho <= rel_tol * rho0[b])):
            if it > 0:
                return False
            converged = False
    return converged
