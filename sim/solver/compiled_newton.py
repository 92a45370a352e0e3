"""Which Newton a stage takes, and the compiled one's Python side (docs/engine.md, "Solver paths").

A step's solves run on the compiled per-world Newton (sim/kernels/newton.py) when every potential of the scene
has a per-world kernel and the solver settings are ones it implements; otherwise on the numpy Newton
(sim/solver/numpy_newton.py). The choice is a function of the scene's composition and settings only (`plan`), made before a
step's solves and readable as ``Scene.solver_path()``; it never changes because a solve failed.
"""

from __future__ import annotations

import math

import numpy as np

from ..constraints.system import ConstraintSystem
from ..constraints.base import checked_stage_dt
from ..contact.potential import _FRICTION_MODEL_CODE
from ..contact.system import ContactSystem
from ..jit import kernel_array
from ..threads import run_world_slices, worker_threads
from ..kernels import contact as contact_kernels
from ..kernels import joints as joint_kernels
from ..kernels import newton as newton_kernels
from .numpy_newton import NewtonResult, _actor_residuals, _residual_norm
from ..params import ConvergenceMode, LineSearchType, NonLinearSolverParams, PsdProjMode, Verbosity
from ..potentials.base import StageContext
from ..potentials.external import DofLoads, Gravity, OffsetForces
from ..potentials.kernel_term import KernelTerm
from ..potentials.inertia import NewtonEulerInertia, RotationalInertia, TranslationalInertia

_CORE = (TranslationalInertia, RotationalInertia, NewtonEulerInertia, Gravity, DofLoads, OffsetForces)
_LS_CODE = {LineSearchType.NONE: newton_kernels.LS_NONE, LineSearchType.SIMPLE: newton_kernels.LS_SIMPLE,
            LineSearchType.ARMIJO: newton_kernels.LS_ARMIJO,
            LineSearchType.RESIDUAL_NORM: newton_kernels.LS_RESIDUAL_NORM,
            LineSearchType.ARMIJO_OR_RESIDUAL_NORM: newton_kernels.LS_ARMIJO_OR_RESIDUAL_NORM}
# The constraint types the compiled Newton evaluates (Gauss-Newton Hessian), with their newton_stage set kinds.
_SET_KINDS = {"RigidPivotPosition": newton_kernels.SET_POINT_PIVOTS,
              "RigidPivotRotation": newton_kernels.SET_ROTATION_PIVOTS,
              "RigidPivotToRigidTarget": newton_kernels.SET_TARGET_PIVOTS, **newton_kernels.JOINT_KINDS}
_JOINT_CODES = frozenset(newton_kernels.JOINT_KINDS.values())


class KernelPlan:
    """The compiled Newton's frozen inputs for one step: the contact potential (or None), the constraint sets
    (pivots, joints) in the constraint system's order and the kernel terms (potentials/kernel_term.py) in the
    scene's order."""

    def __init__(self, contact, constraint_system, sets, terms=()):
        self.contact, self.constraint_system, self.sets, self.terms = contact, constraint_system, sets, tuple(terms)


def plan(potentials, params: NonLinearSolverParams) -> tuple:
    """(`KernelPlan`, None) when the compiled Newton can solve this scene's stages, else (None, the reason)."""
    kplan = _plan(potentials, params)
    return (None, kplan) if isinstance(kplan, str) else (kplan, None)


def _plan(potentials, params: NonLinearSolverParams):
    """`plan`'s work: the `KernelPlan`, or the first reason found why not (str)."""
    if params.line_search_type not in _LS_CODE:
        return f"line_search_type {params.line_search_type.name}"
    if params.max_elapsed_time_seconds > 0:
        return "max_elapsed_time_seconds > 0 (a wall-clock limit is checked between iterations in Python)"
    if params.verbosity is Verbosity.VERBOSE:
        return "verbosity VERBOSE (per-iteration logging)"
    contact = constraint_system = None
    sets, terms = [], []
    seen_core = 0
    for pot in potentials:
        if type(pot) in _CORE:
            seen_core += 1
            continue
        if type(pot) is ContactSystem and contact is None:
            built = pot.potential()
            if built is not None and not built.uses_kernel:
                return ("the contact potential is outside its kernel's scope (a user SDF field or "
                        "exact_geometric_hessian)")
            contact = pot if built is not None else None
            continue
        if type(pot) is ConstraintSystem and constraint_system is None:
            constraint_system = pot
            for kind, cs in pot._sets.items():
                if not len(cs):
                    continue
                if kind not in _SET_KINDS or cs.exact_hessian:
                    return f"constraint type {kind} has no per-world kernel"
                sets.append((kind, cs))
            continue
        if isinstance(pot, KernelTerm):
            terms.append(pot)
            continue
        return f"potential {type(pot).__name__} has no per-world kernel"
    if seen_core != len(_CORE):
        return "the core potentials are not the pipeline's"
    kinds = [k for k, _ in sets]
    if len(set(kinds)) != len(kinds):
        return "a constraint type appears twice"
    return KernelPlan(contact, constraint_system, sets, terms)


_EMPTY = {}


def _empty(shape, dtype=np.float64):
    """A shared zero-size (or read-only by convention) array of ``shape``; kernels never write into these."""
    key = (shape, dtype)
    arr = _EMPTY.get(key)
    if arr is None:
        arr = _EMPTY[key] = np.zeros(shape, dtype=dtype)
    return arr


def _pivot_inputs(cs, kind, stage_dt: float, com0, rot0, world_rows):
    """The arrays one pivot set passes to the kernel: actors, geometry, targets, g_old at stage start (W, C, 3),
    stiffness, damping / dt, saturation, damped.

    Kept on the set and reused while its arrays are the same objects (the constraints' actors, local geometry and
    the CoMs are replaced, never written in place; the targets, stiffness and saturation are written in place by
    their setters, so the kernel reads their current values), the damping holds the same values and the stage
    length and world count are the same; g_old depends on the stage start and is computed for damped sets only."""
    dt = checked_stage_dt(stage_dt)
    point = kind == "RigidPivotPosition"
    source = cs._data["local_position"] if point else cs._data["local_rotation"]
    target_source = cs._targets["position" if point else "rotation"]
    cached = cs.__dict__.get("_stage_inputs")
    if cached is not None:
        k = cached[0]  # identity of each source, then the values (written out: this runs every stage)
        if (k[0] is cs.actors and k[1] is source and k[2] is cs.com_local and k[3] is target_source
                and k[4] is cs.stiffness and k[5] is cs.saturation and cached[1][0] == dt
                and cached[1][1] == com0.shape[0] and cached[1][2] == cs.damping.tobytes()):
            return _with_g_old(cs, cached[2], com0, rot0, world_rows)
    actors = kernel_array(cs.actors[:, 0], np.int64)
    geometry = kernel_array(source - cs.com_local[cs.actors[:, 0]]) if point else kernel_array(source)
    damp = kernel_array(cs.damping / dt)
    target, stiffness, saturation = (kernel_array(target_source), kernel_array(cs.stiffness),
                                     kernel_array(cs.saturation))
    value = (len(cs), actors, geometry, target, _empty((com0.shape[0], len(cs), 3)), stiffness, damp,
             saturation, bool(np.any(damp != 0.0)))
    # Kept only when the kernel reads the setters' arrays themselves (kernel_array made no copy of them).
    same = target is target_source and stiffness is cs.stiffness and saturation is cs.saturation
    cs._stage_inputs = ((cs.actors, source, cs.com_local, target_source, cs.stiffness, cs.saturation),
                        (dt, com0.shape[0], cs.damping.tobytes()), value) if same else None
    return _with_g_old(cs, value, com0, rot0, world_rows)


def _with_g_old(cs, value, com0, rot0, world_rows):
    """``value`` with g_old, the constraint values at the stage start (W, C, 3), when the set is damped."""
    if not value[8]:
        return value
    return value[:4] + (kernel_array(cs._stage_start_values(com0, rot0, world_rows)),) + value[5:]


def _target_pivot_inputs(cs, stage_dt: float, com0, rot0, world_rows):
    """newton_stage's five RigidPivotToRigidTarget arrays: actors (C,), CoM-frame arms (C, 3), the target points
    t_hat + R_hat x_t (W_set, C, 3) of the current targets (rows by world index), g_old at the stage start
    (W, C, 3; zeros when undamped, never read) and (3, C) stiffness, damping / dt, saturation. The target points
    are computed every stage (the setters write the targets in place); g_old from the old targets' points."""
    dt = checked_stage_dt(stage_dt)
    actors, arm_local = cs._kernel_geometry()
    damp = cs.damping / dt  # as RigidConstraintSet._evaluate_kernel
    if np.any(damp != 0.0):
        g_old = kernel_array(cs._stage_start_values(com0, rot0, world_rows))
    else:
        g_old = _empty((com0.shape[0], len(cs), 3))
    return (actors, arm_local, kernel_array(cs._target_points(cs._targets)), g_old,
            np.stack([cs.stiffness, damp, cs.saturation]))


def _no_target_pivots(num_worlds):
    """newton_stage's RigidPivotToRigidTarget arrays of a stage without the set (shared, never written)."""
    args = _NO_TARGET_PIVOTS.get(num_worlds)
    if args is None:
        args = _NO_TARGET_PIVOTS[num_worlds] = (_empty((0,), np.int64), _empty((0, 3)), _empty((1, 0, 3)),
                                                _empty((num_worlds, 0, 3)), _empty((3, 0)))
    return args


_NO_TARGET_PIVOTS: dict = {}


def _joint_pack(joint_sets, stage_dt: float, com0, rot0, world_rows):
    """The joint sets ((kind code, set) in the constraint system's order) packed as newton_stage takes them (layout
    in kernels/joints.py, `joint_set_terms`): floats, ints and g_old (W, 3 Cj), the values at the stage start of the
    damped sets (zeros for the others, never read). Packed every stage: the packed arrays are copies, and the
    targets (written in place by their setters) must be current."""
    dt = checked_stage_dt(stage_dt)
    num_worlds = com0.shape[0]
    header, floats, actors, g_old = [len(joint_sets), 0], [], [], []
    f_at, first = 0, 0
    i_at = 2 + joint_kernels.JOINT_SET_HEADER * len(joint_sets)
    for code, cs in joint_sets:
        count = len(cs)
        if code == newton_kernels.SET_SPHERICAL:
            _, arm_a, arm_b = cs._kernel_geometry()
            geometry = (arm_a, arm_b)
        elif code == newton_kernels.SET_PRISMATIC:
            geometry = (cs._world_data["frame"], cs._world_data["reference_offset"], cs._data["min"], cs._data["max"])
        elif code == newton_kernels.SET_RANGE:
            geometry = (cs._world_data["frame"], cs._world_data["reference"], cs._data["min"], cs._data["max"])
        else:
            geometry = (cs._world_data["frame"], cs._targets["rotation"])
        damp = cs.damping / dt  # as RigidConstraintSet._evaluate_kernel
        damped = bool(np.any(damp != 0.0))
        geo_at = f_at
        for part in geometry:
            floats.append(np.ravel(part))
            f_at += part.size
        stiff_at = f_at
        floats += [cs.stiffness, damp, cs.saturation]
        f_at += 3 * count
        header += [code, count, int(damped), cs.num_worlds, geo_at, first, i_at, stiff_at]
        actors.append(np.ravel(cs.actors))
        i_at += 2 * count
        if damped:
            g_old.append(cs._stage_start_values(com0, rot0, world_rows).reshape(num_worlds, 3 * count))
        else:
            g_old.append(np.zeros((num_worlds, 3 * count)))
        first += count
    header[1] = first
    return (np.concatenate(floats).astype(np.float64, copy=False),
            np.concatenate([np.array(header, dtype=np.int64), *actors]).astype(np.int64, copy=False),
            np.ascontiguousarray(np.concatenate(g_old, axis=1)))


def _no_joints(num_worlds):
    return _empty((0,)), _NO_JOINT_INTS, _empty((num_worlds, 0))


_NO_JOINT_INTS = np.zeros(2, dtype=np.int64)


def _no_pivots(kind, num_worlds):
    geometry = _empty((0, 3)) if kind == "RigidPivotPosition" else _empty((0, 3, 3))
    target = _empty((1, 0, 3)) if kind == "RigidPivotPosition" else _empty((1, 0, 3, 3))
    return (0, _empty((0,), np.int64), geometry, target, _empty((num_worlds, 0, 3)), _empty((0,)), _empty((0,)),
            _empty((0,)), False)


def solve(kplan: KernelPlan, ctx: StageContext, com_position, rotation, params: NonLinearSolverParams):
    """`newton.newton_solve` on the compiled per-world Newton; returns a `newton.NewtonResult`."""
    num_worlds, n = com_position.shape[:2]
    pot = kplan.contact.potential() if kplan.contact is not None else None
    if pot is not None:
        pot._check_state(ctx, com_position, rotation)
    if kplan.constraint_system is not None:
        kplan.constraint_system._sync_com_local(ctx.model.bodies.com_local)
        for kind, cs in kplan.sets:
            if len(cs):
                if n != cs.num_bodies:
                    raise ValueError(f"poses have {n} actors but com_local has {cs.num_bodies}; call set_com_local")
                cs._worlds_of(com_position, ctx.world_index)
    world_rows = np.arange(num_worlds) if ctx.world_index is None else np.asarray(ctx.world_index, dtype=np.int64)
    out_c, out_r, out_grad, status, iterations, ls_iterations = run_stage(
        kplan, ctx.model, ctx.stage_dt, ctx.com_position0, ctx.rotation0, ctx.linear_velocity0,
        ctx.angular_velocity0, ctx.velocity_sym0, kernel_array(np.broadcast_to(ctx.gravity, (num_worlds, 3))),
        ctx.external_force, ctx.offset_force, ctx.offset_local,
        kernel_array(np.broadcast_to(ctx.force_weight, (n,))),
        kernel_array(np.broadcast_to(ctx.torque_weight, (num_worlds, n, 3))), world_rows, com_position, rotation,
        params, stage_time=ctx.stage_time)
    return NewtonResult(
        com_position=out_c, rotation=out_r, status=status, iterations=iterations,
        line_search_iterations=ls_iterations, residual_norm=_residual_norm(out_grad),
        actor_residual=_actor_residuals(out_grad, ctx))


def _body_inputs(bodies):
    """(dyn_index, any_newton_euler) of a model, kept on it (it is frozen)."""
    cached = bodies.__dict__.get("_stage_inputs")
    if cached is None:
        cached = bodies.__dict__["_stage_inputs"] = (
            kernel_array(np.flatnonzero(~bodies.is_static), np.int64), bool(np.any(bodies.kernel_arrays.newton_euler)))
    return cached


def _contact_inputs(pot):
    """The contact potential's arguments of newton_stage, kept on it (its arrays and configuration are frozen: the
    contact system builds a new potential when the scene changes)."""
    args = pot.__dict__.get("_stage_inputs")
    if args is None:
        cfg = pot.config
        slots = pot._coupling_slots
        # Plain tuples: a namedtuple argument costs numba's dispatch more to type.
        args = pot._stage_inputs = (
            True, tuple(pot._kernel_samples), tuple(pot._kernel_pairs), tuple(pot._kernel_colliders),
            (_FRICTION_MODEL_CODE[cfg.friction_model], bool(cfg.fade_friction), contact_kernels.load_mode(cfg),
             bool(cfg.fitted_friction_hessian)),
            kernel_array(slots.body_a, np.int64), kernel_array(slots.body_b, np.int64))
    return args


def run_stage(kplan: KernelPlan, model, stage_dt, com0, rot0, vel0, omega0, sym0, gravity, external_force,
              offset_force, offset_local, force_weight, torque_weight, world_rows, guess_c, guess_r,
              params: NonLinearSolverParams, fresh: bool = False, stage_time: float = math.nan):
    """One stage's compiled Newton solve of every world: the stage start (W, N, ...), gravity (W, 3), loads,
    offset forces (None when there are none), the convergence weights (N,) and (W, N, 3), the worlds' rows of the
    constraints' per-world arrays (W,), Newton's start; the caller has checked that they fit the plan's
    potentials. Returns out_c (W, N, 3), out_r (W, N, 3, 3), the gradient there (W, N, 6), status, iterations,
    line-search iterations (W,). ``stage_time``: t_i, for the kernel terms' ``pack``. The frozen inputs (the
    model's, the contact potential's and the pivot sets' arrays) are converted once and kept on their objects. ``fresh``: the stage start, the guess and the world
    rows are kernel arrays already (the fused step allocates them), so they are not checked again."""
    arrays = model.bodies.kernel_arrays
    dyn_index, any_newton_euler = _body_inputs(model.bodies)
    num_worlds, n = guess_c.shape[:2]
    if not fresh:
        world_rows = kernel_array(world_rows, np.int64)
        com0, rot0 = kernel_array(com0), kernel_array(rot0)
        vel0, omega0, sym0 = kernel_array(vel0), kernel_array(omega0), kernel_array(sym0)
        guess_c, guess_r = kernel_array(guess_c), kernel_array(guess_r)
    pot = kplan.contact.potential() if kplan.contact is not None else None
    contact_args = _contact_inputs(pot) if pot is not None else _NO_CONTACT

    pp = pr = pt = None
    joints = []
    order = []
    if kplan.sets:  # the sets' CoM-frame arms follow the model's com_local (a new array after any change)
        kplan.constraint_system._sync_com_local(model.bodies.com_local)
    for kind, cs in kplan.sets:
        if len(cs):
            code = _SET_KINDS[kind]
            order.append(code)
            if code in _JOINT_CODES:
                joints.append((code, cs))
            elif code == newton_kernels.SET_TARGET_PIVOTS:
                pt = _target_pivot_inputs(cs, stage_dt, com0, rot0, world_rows)
            elif code == newton_kernels.SET_POINT_PIVOTS:
                pp = _pivot_inputs(cs, kind, stage_dt, com0, rot0, world_rows)
            else:
                pr = _pivot_inputs(cs, kind, stage_dt, com0, rot0, world_rows)
    set_order = _SET_ORDER.get(tuple(order))
    if set_order is None:
        set_order = _SET_ORDER[tuple(order)] = np.array(order, dtype=np.int64)
    if pp is None:
        pp = _no_pivots("RigidPivotPosition", num_worlds)
    if pr is None:
        pr = _no_pivots("RigidPivotRotation", num_worlds)
    if pt is None:
        pt = _no_target_pivots(num_worlds)
    if joints:  # packed; their coupling slots after the contact potential's, one group per set in the set order
        joint_args = _joint_pack(joints, stage_dt, com0, rot0, world_rows)
        slot_a = np.concatenate([contact_args[-2]] + [cs.actors[:, 0] for _, cs in joints])
        slot_b = np.concatenate([contact_args[-1]] + [cs.actors[:, 1] for _, cs in joints])
        slot_groups = np.cumsum([0, contact_args[-2].shape[0]] + [len(cs) for _, cs in joints], dtype=np.int64)
        contact_args = contact_args[:-2] + (kernel_array(slot_a, np.int64), kernel_array(slot_b, np.int64))
    else:
        key = (num_worlds, contact_args[-2].shape[0])
        cached = _NO_JOINTS.get(key)
        if cached is None:
            cached = _NO_JOINTS[key] = (_no_joints(num_worlds), np.array([0, key[1]], dtype=np.int64))
        joint_args, slot_groups = cached

    if kplan.terms:  # their coupling slots after the joints', one group per term
        ctx = StageContext(model=model, stage_dt=float(stage_dt), stage_time=stage_time, com_position0=com0,
                           rotation0=rot0, linear_velocity0=vel0, angular_velocity0=omega0, velocity_sym0=sym0,
                           gravity=gravity, external_force=external_force,
                           psd_project=params.psd_proj_mode is PsdProjMode.ALWAYS, offset_force=offset_force, offset_local=offset_local, force_weight=force_weight,
                           torque_weight=torque_weight, world_index=world_rows)
        term_args, pairs = _term_pack(kplan.terms, ctx)
        slot_a = np.concatenate([contact_args[-2]] + [a for a, _ in pairs])
        slot_b = np.concatenate([contact_args[-1]] + [b for _, b in pairs])
        slot_groups = np.concatenate([slot_groups, slot_groups[-1] + np.cumsum([len(a) for a, _ in pairs])])
        contact_args = contact_args[:-2] + (kernel_array(slot_a, np.int64), kernel_array(slot_b, np.int64))
        slot_groups = kernel_array(slot_groups, np.int64)
    else:
        term_args = _NO_TERMS
    has_offset = offset_force is not None
    offset_force = kernel_array(offset_force) if has_offset else _empty((num_worlds, n, 0, 3))
    offset_local = kernel_array(offset_local) if has_offset else _empty((n, 0, 3))
    external_force = kernel_array(external_force)
    any_load = bool(np.logical_or.reduce(external_force, axis=None))
    flags = (any_newton_euler, any_load, has_offset, bool(contact_args[0]), pp[0] > 0 or pt[0].shape[0] > 0,
             pr[0] > 0, bool(joints))
    needed = _NEEDED.get(flags)
    if needed is None:
        needed = _NEEDED[flags] = newton_kernels.needed_callees(*flags)

    # newton_stage's groups (kernels/newton.py names them).
    bodies = (arrays.mass, arrays.second_moment, arrays.is_static, arrays.has_gravity, arrays.rotational_inertia,
              arrays.inertia, arrays.newton_euler, any_newton_euler, dyn_index)
    stage = (float(stage_dt), com0, rot0, vel0, omega0, sym0, gravity, external_force, offset_force, offset_local,
             has_offset, force_weight, torque_weight)
    sets = (bool(order), set_order, world_rows, pp, pr, pt, joint_args, slot_groups)
    io = (guess_c, guess_r, np.empty((num_worlds, n, 3)), np.empty((num_worlds, n, 3, 3)),
          np.empty((num_worlds, n, 6)), np.empty(num_worlds, dtype=np.int64), np.empty(num_worlds, dtype=np.int64),
          np.empty(num_worlds, dtype=np.int64))
    groups = (bodies, stage, contact_args, sets, term_args, _solver_args(params), io)

    addresses = _LOADED.get(flags)  # the callees' addresses once every needed one is loaded (they never move)
    if addresses is None:
        compiling = [] if newton_kernels.newton_stage.overloads else newton_kernels.compile_callees_elsewhere(needed)
        if compiling:  # a cold cache: compile newton_stage here (a call on no worlds) while children compile callees
            newton_kernels.newton_stage(np.zeros_like(newton_kernels._addresses), *groups, 0, 0)
            for child in compiling:
                child.wait()
        addresses = _LOADED[flags] = newton_kernels.callee_addresses(needed)
    if num_worlds == 1 or worker_threads() < 2:
        newton_kernels.newton_stage(addresses, *groups, 0, num_worlds)
    else:
        run_world_slices(lambda w: newton_kernels.newton_stage(addresses, *groups, w.start, w.stop), num_worlds)
    return io[2:]


def _term_pack(terms, ctx: StageContext):
    """newton_stage's kernel-terms group (kernels/newton.py names it) and each term's coupling pairs: the terms'
    addresses, their packed floats and ints concatenated, and per term its slices of them and of the coupling
    slots (header rows: float start, float end, int start, int end, first slot)."""
    floats, ints, header, pairs, counts = [], [], np.zeros((len(terms), 5), dtype=np.int64), [], [0, 0, 0]
    for t, term in enumerate(terms):
        f, i = term.pack(ctx)
        f = np.asarray(f, dtype=np.float64).ravel()
        i = np.asarray(i, dtype=np.int64).ravel()
        a, b = (np.asarray(x, dtype=np.int64).ravel() for x in term.coupling_pairs())
        header[t] = counts[0], counts[0] + f.size, counts[1], counts[1] + i.size, counts[2]
        counts = [counts[0] + f.size, counts[1] + i.size, counts[2] + a.size]
        floats.append(f)
        ints.append(i)
        pairs.append((a, b))
    addresses = np.array([term.kernel_address() for term in terms], dtype=np.int64)
    return (True, addresses, kernel_array(np.concatenate(floats)), kernel_array(np.concatenate(ints), np.int64),
            header, counts[2]), pairs


_NO_TERMS = (False, np.zeros(0, dtype=np.int64), np.zeros(0), np.zeros(0, dtype=np.int64),
             np.zeros((0, 5), dtype=np.int64), 0)


def _solver_args(params: NonLinearSolverParams) -> tuple:
    """newton_stage's solver settings, kept per settings object while its fields hold the values they were
    converted from (a step reads the same settings every stage)."""
    cached = _SOLVER_ARGS.get(id(params))
    if cached is not None and cached[0] is params and cached[1] == vars(params):
        return cached[2]
    args = (
        int(params.max_iter), params.convergence_mode is ConvergenceMode.GLOBAL, float(params.abs_tol),
        float(params.rel_tol), float(params.rel_step_tol), int(PsdProjMode(params.psd_proj_mode).value),
        bool(params.explosion_control), float(params.abs_div_tol), float(params.rel_div_tol),
        _LS_CODE[params.line_search_type], int(params.line_search_max_iter), float(params.line_search_alpha),
        float(params.line_search_wolfe1), float(params.line_search_max_rel_increase),
        bool(params.best_iterate_on_stop))
    if len(_SOLVER_ARGS) >= 16:
        _SOLVER_ARGS.clear()
    _SOLVER_ARGS[id(params)] = (params, dict(vars(params)), args)  # the object held: its id stays its own
    return args


_SOLVER_ARGS: dict = {}
_LOADED: dict = {}  # callee_addresses per stage flags, filled once every callee the flags need is loaded


_NEEDED: dict = {}  # needed_callees per (newton_euler, loads, offset_forces, contact, point, rotation pivots, joints)
_SET_ORDER: dict = {}  # set_order arrays per tuple of set kinds
_NO_JOINTS: dict = {}  # (joint arguments, slot_groups) of a stage without joints, per (worlds, contact slots)


def _no_contact():
    z = _empty
    samples = (z((0, 3)), z((0, 3)), z((0,)), z((0,), np.int64), z((0,), np.int64))
    b = np.bool_
    pairs = (z((0,), np.int64), z((0,), np.int64), z((0,), np.int64), z((0,)), z((0,)), z((0,)), z((0,)), z((0,)),
             z((0,)), z((0,)), z((0,)), z((0,), b), z((0,), b), z((0,)), z((0, 3)), z((0,)), z((0,), b),
             z((0, 3)), z((0,)), z((0,), np.int64), z((0,), b))
    colliders = (z((0,), np.int64), z((0, 3)), z((0, 3)), z((0, 3, 3)), z((0,)), z((0, 3)), z((0,)), z((0,)),
                 z((0,), np.int64), z((0, 3), np.int64), z((0, 3)), z((0, 3)), z((0, 3)))
    return (False, samples, pairs, colliders, (0, False, contact_kernels.LOAD_RECONSTRUCTED, False),
            z((0,), np.int64), z((0,), np.int64))


_NO_CONTACT = _no_contact()
