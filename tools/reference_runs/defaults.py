"""Item 8: defaults of the parameter structs, all enums, stats fields, state-capture signatures.

Values are read by constructing the objects (``SolverParams()`` etc.) and walking their public properties;
enum members as {name: value}; aliases (same value) are listed under "aliases".  Also a capture/restore check.
"""

from __future__ import annotations

import enum
import math

from _common import CUBE_HALF, box_mesh, emit, init, mesh_shape, solver_params, take_logs, vec

sdp = init()


def first_line(doc):
    if not doc:
        return None
    return doc.strip().split("\n\n")[0].replace("\n", " ")


def ser(v, depth=0):
    if isinstance(v, enum.Enum):
        return str(v)
    if isinstance(v, bool) or v is None or isinstance(v, (int, str)):
        return v
    if isinstance(v, float):
        return v
    if hasattr(v, "tolist"):
        try:
            return v.tolist()
        except Exception:  # noqa: BLE001
            pass
    if depth > 4:
        return repr(v)
    if type(v).__name__ in ("TransformRT",):
        return {"rotation_xyzw": vec(v.rotation), "translation": vec(v.translation)}
    if type(v).__name__ in ("ShapeHandle",):
        return "ShapeHandle(is_valid=%s)" % bool(v.is_valid())
    return fields(v, depth + 1)


def fields(obj, depth=0) -> dict:
    out = {}
    cls = type(obj)
    for n in dir(obj):
        if n.startswith("_"):
            continue
        attr = getattr(cls, n, None)
        if not isinstance(attr, property):
            continue
        try:
            out[n] = ser(getattr(obj, n), depth)
        except Exception as e:  # noqa: BLE001
            out[n] = f"<error: {e}>"
    return out


def field_docs(cls) -> dict:
    return {n: first_line(getattr(cls, n).__doc__) for n in dir(cls)
            if not n.startswith("_") and isinstance(getattr(cls, n, None), property)}


out: dict = {"structs": {}, "struct_field_docs": {}}
for name in ["SolverParams", "NonLinearSolverParams", "LinearSolverParams", "ExperimentalEvalParams",
             "SaturationHessianParams", "RigidActorParams", "ContactParams", "GridSdfParams",
             "BoundarySubsamplingParams", "ContactPairParamsOverride", "SolverStats", "PerformanceStats"]:
    cls = getattr(sdp, name, None)
    if cls is None:
        out["structs"][name] = "<not exposed>"
        continue
    try:
        out["structs"][name] = fields(cls())
    except Exception as e:  # noqa: BLE001
        out["structs"][name] = f"<cannot construct: {e}>"
    out["struct_field_docs"][name] = field_docs(cls)
out["contact_params_get_penalty_threshold_dist"] = {
    "add_padding_false": sdp.ContactParams().get_penalty_threshold_dist(False),
    "add_padding_true": sdp.ContactParams().get_penalty_threshold_dist(True)}

# enums ------------------------------------------------------------------------------------------------------
enums = {}
for name in sorted(dir(sdp)):
    obj = getattr(sdp, name, None)
    if isinstance(obj, type) and issubclass(obj, enum.Enum):
        members = {m: obj.__members__[m].value for m in obj.__members__}
        canonical = {m.name: m.value for m in obj}
        aliases = {m: v for m, v in members.items() if m not in canonical}
        enums[name] = {"members": canonical, "aliases": aliases, "doc": first_line(obj.__doc__)}
for name in sorted(dir(sdp.experimental)):
    obj = getattr(sdp.experimental, name, None)
    if isinstance(obj, type) and issubclass(obj, enum.Enum):
        enums["experimental." + name] = {"members": {m.name: m.value for m in obj}}
out["enums"] = enums

# constants --------------------------------------------------------------------------------------------------
consts = {}
for name in dir(sdp):
    if name.isupper() and not name.startswith("_"):
        v = getattr(sdp, name)
        if isinstance(v, (int, float, bool, str)) or hasattr(v, "tolist"):
            consts[name] = ser(v)
out["constants"] = consts

# signatures ------------------------------------------------------------------------------------------------
sig = {}
for n in ["capture_state", "capture_state_to_bytes", "capture_state_to_file", "restore_state",
          "restore_state_from_bytes", "release_state", "release_all_states", "is_equal_state", "step",
          "set_gravity", "get_gravity", "set_solver_params", "get_solver_params", "create_rigid_actor",
          "get_solver_stats", "get_performance_stats", "register_pre_step_callback", "register_post_step_callback",
          "cancel_callback", "get_total_simulation_time", "get_last_time_step", "set_force_single_island",
          "destroy_actor", "get_actor", "for_each_actor", "set_contact_pair_params_override"]:
    f = getattr(sdp.Scene, n, None)
    sig["Scene." + n] = f.__doc__.split("\n\n")[0] if f is not None and f.__doc__ else None
for n in sorted(d for d in dir(sdp.Actor) if not d.startswith("_")):
    f = getattr(sdp.Actor, n)
    sig["Actor." + n] = f.__doc__.split("\n")[0] if f.__doc__ else None
for n in ["initialize", "shutdown", "create_scene", "destroy_scene", "create_tri_mesh_shape", "create_sphere_shape",
          "create_plane_shape", "create_mesh_shape", "create_tet_mesh_shape", "load_shape_from_file",
          "get_shape_aabb", "release_shape"]:
    f = getattr(sdp, n, None)
    sig[n] = f.__doc__.split("\n")[0] if f is not None and f.__doc__ else None
for n in ["enable_newton_euler_inertia", "is_newton_euler_inertia_enabled", "apply_improved_convergence_settings",
          "calibrate_normal_viscous_damping_coefficient", "effective_coefficient_of_restitution"]:
    f = getattr(sdp.experimental, n, None)
    sig["experimental." + n] = f.__doc__.split("\n")[0] if f is not None and f.__doc__ else None
out["signatures"] = sig

# capture / restore behaviour ----------------------------------------------------------------------------------
cube = mesh_shape(*box_mesh(CUBE_HALF))
cr = {}
for method in ["BACKWARD_EULER", "BDF2"]:
    scene = sdp.create_scene("capture")
    scene.set_solver_params(solver_params(getattr(sdp.IntegrationMethod, method)))
    a = scene.create_rigid_actor(shape=cube, density=1000.0,
                                 world_from_local=sdp.TransformRT(translation=sdp.Real3(0.0, 5.0, 0.0)),
                                 angular_velocity=sdp.Real3(0.0, 0.0, 1.0))
    dt = 1.0 / 60.0
    for _ in range(3):
        scene.step(dt)
    h = scene.capture_state()
    t_cap = scene.get_total_simulation_time()
    first = []
    for _ in range(3):
        scene.step(dt)
        first.append([vec(a.get_center_of_mass_transform().translation)[1], vec(a.get_angular_velocity())[2]])
    scene.restore_state(h, False)
    t_rest = scene.get_total_simulation_time()
    eq_after_restore = None
    try:
        h2 = scene.capture_state()
        eq_after_restore = bool(scene.is_equal_state(h, h2))
    except Exception as e:  # noqa: BLE001
        eq_after_restore = f"<error: {e}>"
    second = []
    for _ in range(3):
        scene.step(dt)
        second.append([vec(a.get_center_of_mass_transform().translation)[1], vec(a.get_angular_velocity())[2]])
    blob = sdp.DynamicArrayUint8()
    scene.capture_state_to_bytes(blob)
    cr[method] = {"scenario": "cube y0=5, omega0=(0,0,1), gravity, dt 1/60: 3 steps, capture, 3 steps, restore, 3 steps",
                  "steps_4_6_first_pass_[com_y, omega_z]": first, "steps_4_6_after_restore": second,
                  "identical": first == second, "total_time_at_capture": t_cap,
                  "total_time_after_restore": t_rest, "is_equal_state(captured, recaptured_after_restore)":
                      eq_after_restore, "capture_state_to_bytes_type": type(blob).__name__,
                  "capture_state_to_bytes_len": len(blob), "logs": take_logs()}
    sdp.destroy_scene(scene)
out["capture_restore"] = cr
emit(out)
