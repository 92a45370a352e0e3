"""Item 1: mass properties of box tri-meshes (cube, off-centre rotated anisotropic box)."""

from __future__ import annotations

import math

from _common import (ANISO_HALF, CUBE_HALF, box_mesh, emit, init, mesh_json, mesh_shape, quat_axis_angle,
                     take_logs, try_call, vec)

sdp = init()
scene = sdp.create_scene("mass_properties")


def props(actor) -> dict:
    return {
        "mass": actor.get_mass(),
        "density": actor.get_density(),
        "center_of_mass_local": vec(actor.get_rigid_center_of_mass_local()),
        "moment_of_inertia_local_real6": vec(actor.get_rigid_moment_of_inertia_local()),
        "root_transform_translation": vec(actor.get_root_transform().translation),
        "com_transform_translation": vec(actor.get_center_of_mass_transform().translation),
        "com_transform_rotation_xyzw": vec(actor.get_center_of_mass_transform().rotation),
    }


def create(shape, **kw) -> dict:
    take_logs()
    try:
        a = scene.create_rigid_actor(shape=shape, **kw)
    except Exception as e:  # noqa: BLE001
        return {"raised": True, "exception_type": type(e).__name__, "message": str(e), "logs": take_logs()}
    out = props(a)
    out["logs"] = take_logs()
    return out


out: dict = {"real6_order": ["ixx", "ixy", "ixz", "iyy", "iyz", "izz"],
             "real6_sign_convention": "negative tensor notation: ixy = -integral(x*y dm) (docstring)"}

# --- the 0.4 m cube -------------------------------------------------------------------------
cv, ct = box_mesh(CUBE_HALF)
cube = mesh_shape(cv, ct)
out["cube"] = {
    "mesh": mesh_json(cv, ct),
    "density_1000": create(cube, density=1000.0),
    "defaults_no_density_no_mass": create(cube),
    "mass_2": create(cube, mass=2.0),
    "density_1000_and_mass_2": create(cube, density=1000.0, mass=2.0),
}
for bet in ["P1Q1", "P1Q3", "P1Q6", "P1Q7", "P1Q12", "P1Q16"]:
    if hasattr(sdp.ActorBoundaryElementType, bet):
        out["cube"][f"density_1000_{bet}"] = create(
            cube, density=1000.0, boundary_element_type=getattr(sdp.ActorBoundaryElementType, bet))

# --- off-centre, rotated, anisotropic box (rotation baked into the mesh vertices) ------------
rot = quat_axis_angle((1.0, 2.0, 3.0), 0.7)  # 0.7 rad about normalize(1,2,3)
off = (0.5, -0.2, 0.1)
av, at = box_mesh(ANISO_HALF, offset=off, rotation_xyzw=rot)
aniso_rot = mesh_shape(av, at)
d = {
    "mesh": mesh_json(av, at),
    "construction": {"half_extents": list(ANISO_HALF), "offset": list(off),
                     "rotation_xyzw": rot, "rotation_axis": [1.0, 2.0, 3.0], "rotation_angle_rad": 0.7,
                     "vertex_formula": "v_i = offset + R(rotation) * (s_x*hx, s_y*hy, s_z*hz), bit k of i -> +axis k"},
    "density_1000": create(aniso_rot, density=1000.0),
    "mass_2": create(aniso_rot, mass=2.0),
    "density_1000_and_mass_2": create(aniso_rot, density=1000.0, mass=2.0),
}
for bet in ["P1Q1", "P1Q3", "P1Q6", "P1Q7", "P1Q12", "P1Q16"]:
    if hasattr(sdp.ActorBoundaryElementType, bet):
        d[f"density_1000_{bet}"] = create(aniso_rot, density=1000.0,
                                          boundary_element_type=getattr(sdp.ActorBoundaryElementType, bet))
# the same rotated mesh, additionally placed by a world_from_local (mass props are local -> unchanged)
d["density_1000_world_from_local_translated_rotated"] = create(
    aniso_rot, density=1000.0,
    world_from_local=sdp.TransformRT(sdp.Quaternion(*quat_axis_angle((0.0, 1.0, 0.0), 0.5)), sdp.Real3(1.0, 2.0, 3.0)))
d["world_from_local_used"] = {"rotation_xyzw": quat_axis_angle((0.0, 1.0, 0.0), 0.5), "translation": [1.0, 2.0, 3.0]}
out["aniso_offset_rotated"] = d

# --- axis-aligned anisotropic box, centred (used by the spin runs) ---------------------------
bv, bt = box_mesh(ANISO_HALF)
out["aniso_centred"] = {"mesh": mesh_json(bv, bt), "density_1000": create(mesh_shape(bv, bt), density=1000.0)}

# --- user-provided CoM / MoI ------------------------------------------------------------------
out["cube_user_inertia"] = {
    "mass_2_com_only": create(cube, mass=2.0, center_of_mass=sdp.Real3(0.01, 0.0, 0.0)),
    "mass_2_moi_only": create(cube, mass=2.0, moment_of_inertia=sdp.Real6(0.1, 0.0, 0.0, 0.2, 0.0, 0.3)),
    "mass_2_com_and_moi": create(cube, mass=2.0, center_of_mass=sdp.Real3(0.01, 0.0, 0.0),
                                 moment_of_inertia=sdp.Real6(0.1, 0.0, 0.0, 0.2, 0.0, 0.3)),
    "mass_2_moi_violates_triangle_inequality": create(cube, mass=2.0,
                                                      moment_of_inertia=sdp.Real6(1.0, 0.0, 0.0, 0.1, 0.0, 0.1)),
    "mass_2_moi_negative": create(cube, mass=2.0, moment_of_inertia=sdp.Real6(-1.0, 0.0, 0.0, 1.0, 0.0, 1.0)),
}

# --- set_density on an existing actor ---------------------------------------------------------
a = scene.create_rigid_actor(shape=aniso_rot, density=1000.0)
take_logs()
r = try_call(a.set_density, 500.0)
out["aniso_offset_rotated_set_density_500"] = {"call": r, "after": props(a)}

emit(out)
