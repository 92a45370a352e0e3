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
            for kind, cs in pot.sets():
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


def _pivot_inputs(nm, which: str, stage_dt: float, com0, rot0, world_rows):
    """The arrays one pivot set (``which``: "point" or "rotation") passes to the kernel: count, actors, geometry,
    the targets, g_old at the stage start (W, C, 3), stiffness, damping / dt, saturation and damped. All but the
    targets and g_old are the model's (per stage length: damping / dt); the targets are the set's own array (its
    setters write it in place), read every stage; g_old is computed for damped sets only."""
    cs, kind, actors, geometry, no_g_old = getattr(nm, which)
    stiffness, damp, saturation, damped = nm.compliance(which, stage_dt)
    target = kernel_array(cs.target_array("position" if kind == "RigidPivotPosition" else "rotation"))
    g_old = kernel_array(cs.stage_start_values(com0, rot0, world_rows)) if damped else no_g_old
    return (len(cs), actors, geometry, target, g_old, stiffness, damp, saturation, damped)


def _target_pivot_inputs(nm, stage_dt: float, com0, rot0, world_rows):
    """newton_stage's five RigidPivotToRigidTarget arrays: actors (C,), CoM-frame arms (C, 3), the target points
    t_hat + R_hat x_t (W_set, C, 3) of the current targets (rows by world index), g_old at the stage start
    (W, C, 3; zeros when undamped, never read) and (3, C) stiffness, damping / dt, saturation. The target points
    are computed every stage (the setters write the targets in place); g_old from the old targets' points."""
    cs, actors, arm_local, no_g_old = nm.target
    stiffness, damp, saturation, damped = nm.compliance("target", stage_dt)
    g_old = kernel_array(cs.stage_start_values(com0, rot0, world_rows)) if damped else no_g_old
    return (actors, arm_local, kernel_array(cs.target_points()), g_old, np.stack([stiffness, damp, saturation]))


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
        geometry = cs.packed_geometry()
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
            g_old.append(cs.stage_start_values(com0, rot0, world_rows).reshape(num_worlds, 3 * count))
        else:
            g_old.append(np.zeros((num_worlds, 3 * count)))
        first += count
    header[1] = first
    return (np.concatenate(floats).astype(np.float64, copy=False),
            np.concatenate([np.array(header, dtype=np.int64), *actors]).astype(np.int64, copy=False),
            np.ascontiguousarray(np.concatenate(g_old, axis=1)))


def _no_joints(num_worlds):
    return _empty((0,)), np.zeros(2, dtype=np.int64), _empty((num_worlds, 0))


def _no_pivots(kind, num_worlds):
    geometry = _empty((0, 3)) if kind == "RigidPivotPosition" else _empty((0, 3, 3))
    target = _empty((1, 0, 3)) if kind == "RigidPivotPosition" else _empty((1, 0, 3, 3))
    return (0, _empty((0,), np.int64), geometry, target, _empty((num_worlds, 0, 3)), _empty((0,)), _empty((0,)),
            _empty((0,)), False)


class NewtonModel:
    """The compiled Newton's inputs that a scene's composition and settings decide, converted once: the bodies',
    the contact potential's and the solver settings' groups, the constraint sets in the constraint system's order
    with their frozen geometry, and the callee addresses per stage flags. Built with the scene's compiled model
    (sim/step/compiled_model.py) and never edited; per stage, `run_stage` reads only the stage's data, the
    constraints' targets, stiffness, damping and saturation (written in place by their setters) and the kernel
    terms' packs."""

    def __init__(self, kplan: KernelPlan, model, params: NonLinearSolverParams, num_worlds: int):
        self.kplan, self.model, self.params, self.num_worlds = kplan, model, params, int(num_worlds)
        bodies = model.bodies
        arrays = bodies.kernel_arrays
        self.dyn_index = kernel_array(np.flatnonzero(~bodies.is_static), np.int64)
        self.any_newton_euler = bool(np.any(arrays.newton_euler))
        self.bodies_group = (arrays.mass, arrays.second_moment, arrays.is_static, arrays.has_gravity,
                             arrays.rotational_inertia, arrays.inertia, arrays.newton_euler, self.any_newton_euler,
                             self.dyn_index)
        self.contact = kplan.contact.potential() if kplan.contact is not None else None
        contact = _contact_inputs(self.contact) if self.contact is not None else _NO_CONTACT
        self.solver_group = _solver_args(params)
        self._build_sets(kplan, bodies, contact)
        self.addresses = {}  # callee addresses per stage flags, filled when a stage first has those flags
        self._per_stage_length = {}  # (what, stage length) -> `compliance`'s or `guess_rows`' value

    def _build_sets(self, kplan, bodies, contact) -> None:
        """The sets' order, their frozen geometry and the coupling slots of the contact pairs and joints."""
        num_worlds = self.num_worlds
        if kplan.sets:  # the sets' CoM-frame arms follow the model's com_local
            kplan.constraint_system.sync_com_local(bodies.com_local)
        self.point = self.rotation = self.target = None
        joints, order = [], []
        for kind, cs in kplan.sets:
            if not len(cs):
                continue
            code = _SET_KINDS[kind]
            order.append(code)
            if code in _JOINT_CODES:
                joints.append((code, cs))
            elif code == newton_kernels.SET_TARGET_PIVOTS:
                self.target = (cs, *cs.kernel_geometry(), _empty((num_worlds, len(cs), 3)))
            elif code == newton_kernels.SET_POINT_PIVOTS:
                self.point = (cs, kind, *cs.kernel_geometry(), _empty((num_worlds, len(cs), 3)))
            else:
                self.rotation = (cs, kind, *cs.kernel_geometry(), _empty((num_worlds, len(cs), 3)))
        self.joints = joints
        self.has_sets = bool(order)
        self.has_point_sets = self.point is not None or self.target is not None
        self.set_order = np.array(order, dtype=np.int64)
        self.no_point = _no_pivots("RigidPivotPosition", num_worlds)
        self.no_rotation = _no_pivots("RigidPivotRotation", num_worlds)
        self.no_target = (_empty((0,), np.int64), _empty((0, 3)), _empty((1, 0, 3)), _empty((num_worlds, 0, 3)),
                          _empty((3, 0)))
        # coupling slots: the contact pairs', then one group per joint set in the set order
        slot_a = np.concatenate([contact[-2]] + [cs.actors[:, 0] for _, cs in joints])
        slot_b = np.concatenate([contact[-1]] + [cs.actors[:, 1] for _, cs in joints])
        self.slot_groups = kernel_array(np.cumsum([0, contact[-2].shape[0]] + [len(cs) for _, cs in joints]),
                                        np.int64)
        self.contact_group = contact[:-2] + (kernel_array(slot_a, np.int64), kernel_array(slot_b, np.int64))
        self.no_joints = _no_joints(num_worlds)

    def compliance(self, which: str, stage_dt: float) -> tuple:
        """(stiffness, damping / dt, saturation, damped) of the pivot set ``which`` ("point", "rotation", "target")
        for a stage length (a step has at most a few; the setters of these parameters drop the model)."""
        key = (which, stage_dt)
        value = self._per_stage_length.get(key)
        if value is None:
            cs = getattr(self, which)[0]
            damp = kernel_array(cs.damping / checked_stage_dt(stage_dt))  # as RigidConstraintSet._evaluate_kernel
            value = self._per_stage_length[key] = (kernel_array(cs.stiffness), damp, kernel_array(cs.saturation),
                                             bool(np.any(damp != 0.0)))
        return value

    def guess_rows(self, stage_dt: float):
        """(constraint rows, actors, CoM-frame arms) of the position pivots whose targets start Newton
        (`RigidPivotPositionConstraints.guess_rows`) for a stage length, as kernel arrays; None when there are none."""
        key = ("guess", stage_dt)
        if key not in self._per_stage_length:
            ok, rows, arm_local = self.point[0].guess_rows(self.model.bodies, stage_dt)
            self._per_stage_length[key] = None if ok.size == 0 else (
                kernel_array(ok, np.int64), kernel_array(rows, np.int64), kernel_array(arm_local))
        return self._per_stage_length[key]

    def stage_addresses(self, flags: tuple, groups: tuple) -> np.ndarray:
        """The callee addresses of a stage with these flags; on a cold cache, compiles newton_stage here (a call on
        no worlds) while children compile the callees."""
        addresses = self.addresses.get(flags)
        if addresses is None:
            needed = newton_kernels.needed_callees(*flags)
            compiling = [] if newton_kernels.newton_stage.overloads else newton_kernels.compile_callees_elsewhere(
                needed)
            if compiling:
                newton_kernels.newton_stage(newton_kernels.no_addresses(), *groups, 0, 0)
                for child in compiling:
                    child.wait()
            addresses = self.addresses[flags] = newton_kernels.callee_addresses(needed)
        return addresses


def solve(nm: NewtonModel, ctx: StageContext, com_position, rotation, params: NonLinearSolverParams):
    """`newton.newton_solve` on the compiled per-world Newton; returns a `newton.NewtonResult`."""
    num_worlds, n = com_position.shape[:2]
    if nm.contact is not None:
        nm.contact.check_state(ctx, com_position, rotation)
    for _, cs in nm.kplan.sets:
        if len(cs):
            if n != cs.num_bodies:
                raise ValueError(f"poses have {n} actors but com_local has {cs.num_bodies}; call set_com_local")
            cs.check_world_rows(com_position, ctx.world_index)
    world_rows = np.arange(num_worlds) if ctx.world_index is None else np.asarray(ctx.world_index, dtype=np.int64)
    out_c, out_r, out_grad, status, iterations, ls_iterations = run_stage(
        nm, ctx.stage_dt, ctx.com_position0, ctx.rotation0, ctx.linear_velocity0,
        ctx.angular_velocity0, ctx.velocity_sym0, kernel_array(np.broadcast_to(ctx.gravity, (num_worlds, 3))),
        ctx.external_force, ctx.offset_force, ctx.offset_local,
        kernel_array(np.broadcast_to(ctx.force_weight, (n,))),
        kernel_array(np.broadcast_to(ctx.torque_weight, (num_worlds, n, 3))), world_rows, com_position, rotation,
        stage_time=ctx.stage_time)
    return NewtonResult(
        com_position=out_c, rotation=out_r, status=status, iterations=iterations,
        line_search_iterations=ls_iterations, residual_norm=_residual_norm(out_grad),
        actor_residual=_actor_residuals(out_grad, ctx))


def _contact_inputs(pot):
    """The contact potential's arguments of newton_stage (its arrays and configuration are frozen: the contact
    system builds a new potential when the scene changes)."""
    cfg = pot.config
    slots = pot.coupling_slots
    # Plain tuples: a namedtuple argument costs numba's dispatch more to type.
    samples, pairs, colliders = pot.kernel_groups()
    return (True, tuple(samples), tuple(pairs), tuple(colliders),
            (_FRICTION_MODEL_CODE[cfg.friction_model], bool(cfg.fade_friction), contact_kernels.load_mode(cfg),
             bool(cfg.fitted_friction_hessian)),
            kernel_array(slots.body_a, np.int64), kernel_array(slots.body_b, np.int64))


def run_stage(nm: NewtonModel, stage_dt, com0, rot0, vel0, omega0, sym0, gravity, external_force,
              offset_force, offset_local, force_weight, torque_weight, world_rows, guess_c, guess_r,
              fresh: bool = False, stage_time: float = math.nan):
    """One stage's compiled Newton solve of every world: the stage start (W, N, ...), gravity (W, 3), loads,
    offset forces (None when there are none), the convergence weights (N,) and (W, N, 3), the worlds' rows of the
    constraints' per-world arrays (W,), Newton's start; the caller has checked that they fit the model's
    potentials. Returns out_c (W, N, 3), out_r (W, N, 3, 3), the gradient there (W, N, 6), status, iterations,
    line-search iterations (W,). ``stage_time``: t_i, for the kernel terms' ``pack``. ``fresh``: the stage start,
    the guess and the world rows are kernel arrays already (the fused step allocates them), so they are not
    checked again."""
    num_worlds, n = guess_c.shape[:2]
    if not fresh:
        world_rows = kernel_array(world_rows, np.int64)
        com0, rot0 = kernel_array(com0), kernel_array(rot0)
        vel0, omega0, sym0 = kernel_array(vel0), kernel_array(omega0), kernel_array(sym0)
        guess_c, guess_r = kernel_array(guess_c), kernel_array(guess_r)
    rows = (stage_dt, com0, rot0, world_rows)
    pp = nm.no_point if nm.point is None else _pivot_inputs(nm, "point", *rows)
    pr = nm.no_rotation if nm.rotation is None else _pivot_inputs(nm, "rotation", *rows)
    pt = nm.no_target if nm.target is None else _target_pivot_inputs(nm, *rows)
    joint_args = _joint_pack(nm.joints, *rows) if nm.joints else nm.no_joints
    contact_args, slot_groups = nm.contact_group, nm.slot_groups
    terms = nm.kplan.terms
    if terms:  # their coupling slots after the joints', one group per term
        ctx = StageContext(model=nm.model, stage_dt=float(stage_dt), stage_time=stage_time, com_position0=com0,
                           rotation0=rot0, linear_velocity0=vel0, angular_velocity0=omega0, velocity_sym0=sym0,
                           gravity=gravity, external_force=external_force,
                           psd_project=nm.params.psd_proj_mode is PsdProjMode.ALWAYS, offset_force=offset_force,
                           offset_local=offset_local, force_weight=force_weight, torque_weight=torque_weight,
                           world_index=world_rows)
        term_args, pairs = _term_pack(terms, ctx)
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
    flags = (nm.any_newton_euler, any_load, has_offset, bool(contact_args[0]), nm.has_point_sets,
             nm.rotation is not None, bool(nm.joints))

    # newton_stage's groups (kernels/newton.py names them).
    stage = (float(stage_dt), com0, rot0, vel0, omega0, sym0, gravity, external_force, offset_force, offset_local,
             has_offset, force_weight, torque_weight)
    sets = (nm.has_sets, nm.set_order, world_rows, pp, pr, pt, joint_args, slot_groups)
    io = (guess_c, guess_r, np.empty((num_worlds, n, 3)), np.empty((num_worlds, n, 3, 3)),
          np.empty((num_worlds, n, 6)), np.empty(num_worlds, dtype=np.int64), np.empty(num_worlds, dtype=np.int64),
          np.empty(num_worlds, dtype=np.int64))
    groups = (nm.bodies_group, stage, contact_args, sets, term_args, nm.solver_group, io)
    addresses = nm.stage_addresses(flags, groups)
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
    """newton_stage's solver settings group."""
    return (
        int(params.max_iter), params.convergence_mode is ConvergenceMode.GLOBAL, float(params.abs_tol),
        float(params.rel_tol), float(params.rel_step_tol), int(PsdProjMode(params.psd_proj_mode).value),
        bool(params.explosion_control), float(params.abs_div_tol), float(params.rel_div_tol),
        _LS_CODE[params.line_search_type], int(params.line_search_max_iter), float(params.line_search_alpha),
        float(params.line_search_wolfe1), float(params.line_search_max_rel_increase),
        bool(params.best_iterate_on_stop))


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
