"""Articulated actors' parameters against the released engine's names and defaults, and bad-input validation.

The facts were recorded once from superdex-physics 1.0.1 (fp64) by tools/reference_runs/articulated_api.py into
reference_data/articulated_api.json; the reference engine is not needed here.
"""

import dataclasses
import enum
import json
from pathlib import Path

import numpy as np
import pytest

import superdex_gym.sim as mochi
from superdex_gym.sim import articulated as art

FACTS = json.loads((Path(__file__).parent / "reference_data" / "articulated_api.json").read_text())
JT = art.ArticulatedJointType
SHAPE = mochi.create_box_mesh_shape([0.05, 0.2, 0.05])


def _ours(value):
    """Our default in the JSON's vocabulary (enum names, transforms as dicts, nested params as dicts)."""
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, mochi.TransformRT):
        return {"rotation": list(value.rotation.as_array()) if hasattr(value.rotation, "as_array") else
                [value.rotation.x, value.rotation.y, value.rotation.z, value.rotation.w],
                "translation": list(value.translation)}
    if isinstance(value, mochi.ContactParams):
        return "<ContactParams>"
    if dataclasses.is_dataclass(value):
        return {f.name: _ours(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (tuple, list, np.ndarray)):
        return [_ours(v) for v in value]
    return value


@pytest.mark.parametrize("name", sorted(FACTS["structs"]))
def test_struct_fields_and_defaults_match_the_reference(name):
    ref = FACTS["structs"][name]
    obj = getattr(art, name)()
    ours = {f.name: _ours(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    assert set(ours) == set(ref), (set(ours) ^ set(ref))
    for field, want in ref.items():
        got = ours[field]
        if want in ("<ShapeHandle>", "<ActorHandle>"):
            assert got is None  # a shape / actor is given by the caller
        elif field in ("collider_type", "boundary_element_type"):
            assert got is None  # None means the reference's default (AUTO / P1Q3), resolved at creation
        elif name == "Articulated3dRotationTargetConstraintParams" and field == "target":
            assert got is None  # None means the identity quaternion, the reference's default
        else:
            assert got == want, (name, field, got, want)


def test_joint_type_values_match_the_reference():
    assert {m: JT[m].value for m in JT.__members__} == FACTS["ArticulatedJointType"]


def test_pose_controller_params_presized_with_zero_gains():
    p = art.PoseControllerParams(3)
    assert [_ours(x) for x in p.joint_tracking] == FACTS["PoseControllerParams(3)"]["joint_tracking"]
    assert len(p.link_pos_tracking) == len(p.link_rot_tracking) == 3


def chain(types_axes, offsets, joint_kw=None, **actor_kw):
    joint_kw = joint_kw or {}
    p = art.ArticulatedActorParams(name="a", world_from_root=mochi.TransformRT(translation=[0, 2, 0]), **actor_kw)
    p.joints = [art.ArticulatedJointParams(type=t, axis=ax, parent_link_from_joint=mochi.TransformRT(translation=o),
                                           **joint_kw.get(i, {}))
                for i, ((t, ax), o) in enumerate(zip(types_axes, offsets))]
    p.links = [art.ArticulatedLinkParams(parent_link=i - 1, shape=SHAPE, density=1000.0,
                                         parent_joint_from_link=mochi.TransformRT(translation=[0, -0.2, 0]))
               for i in range(len(types_axes))]
    return p


REV3 = ([(JT.REVOLUTE, [0, 0, 1])] * 3, [[0, 0, 0], [0, -0.4, 0], [0, -0.4, 0]])


def test_dof_layout_and_names_match_the_reference():
    lay = FACTS["layout"]
    p = chain([(JT.FREE, [0, 0, 1]), (JT.SPHERICAL, [0, 0, 1]), (JT.PRISMATIC, [1, 0, 0]), (JT.REVOLUTE, [0, 0, 1]),
               (JT.HARD, [0, 0, 1])], [[0, 0, 0], [0.1, -0.3, 0.05], [0, -0.3, 0], [0, -0.3, 0], [0, -0.3, 0]])
    info = art.get_articulated_shape_info(p)
    assert [[d.offset, d.trans_size, d.rot_size, d.get_trans_offset(), d.get_rot_offset(), d.get_size()]
            for d in info.dof_info] == lay["dof_info"]
    assert info.joint_names == lay["joint_names"] and info.parents == lay["parents"]
    assert [f"a/{n}" for n in info.link_names] == lay["nested_link_names"]
    assert art.build_model(p).num_dofs == lay["num_dofs"]


def _bad(p, match):
    with pytest.raises((ValueError, TypeError), match=match):
        art.build_model(p)


def test_parent_out_of_range_names_the_link():
    p = chain(*REV3)
    p.links[2].parent_link = 5
    _bad(p, r"link 2: parent_link must be in \[-1, 2\]")


def test_parent_not_before_child_names_the_link():
    p = chain(*REV3)
    p.links[1].parent_link, p.links[2].parent_link = 2, 0
    _bad(p, r"link 1: parent_link must be in \[0, 0\]")


def test_cycle_in_the_tree_is_named_as_such():
    p = chain(*REV3)
    p.links[1].parent_link, p.links[2].parent_link = 2, 1
    _bad(p, r"link 1: parent_link chain loops back on itself \(a cycle")
    p = chain(*REV3)
    p.links[1].parent_link = 1
    _bad(p, r"link 1: parent_link chain loops")


@pytest.mark.parametrize("pair", [(1, 1), (0, 1), (2, 1), (0, 7)])
def test_cycle_joint_between_links_the_tree_does_not_join(pair):
    p = chain(*REV3)
    p.cycles = [art.ArticulatedCycleJointParams(parent_link=pair[0], child_link=pair[1])]
    _bad(p, r"cycle 0: ")


def test_root_must_have_parent_minus_one():
    p = chain(*REV3)
    p.links[0].parent_link = 0
    _bad(p, r"link 0: parent_link chain loops|link 0: the root")


@pytest.mark.parametrize("axis", [[0, 0, 0], [0, np.nan, 1], [np.inf, 0, 0]])
def test_zero_or_non_finite_axis_names_the_joint(axis):
    p = chain([(JT.REVOLUTE, [0, 0, 1]), (JT.REVOLUTE, axis), (JT.REVOLUTE, [0, 0, 1])], REV3[1])
    _bad(p, r"joint 1: axis must be (non-zero and )?finite")


def test_axis_is_normalized_as_the_reference_does():
    p = chain([(JT.REVOLUTE, [0, 0, 2.0])] * 3, REV3[1])
    assert np.array_equal(art.build_model(p).axis[1], [0, 0, 1.0])
    assert FACTS["bad_input"]["axis_not_unit_is_normalized"]["raised"] is False


def test_min_limit_above_max_limit_names_the_joint():
    p = chain(*REV3, joint_kw={1: {"min_limit": [0, 0, 1.0], "max_limit": [0, 0, -1.0]}})
    _bad(p, r"joint 1: min_limit > max_limit on DoF 0")


def test_limit_on_a_dof_the_joint_lacks_names_the_joint():
    p = chain(*REV3, joint_kw={1: {"min_limit": [0.5, 0, -1.0], "max_limit": [0, 0, 1.0]}})
    _bad(p, r"joint 1: min_limit .* has a component across the axis")
    p = chain([(JT.REVOLUTE, [0, 0, 1]), (JT.HARD, [0, 0, 1]), (JT.REVOLUTE, [0, 0, 1])], REV3[1],
              joint_kw={1: {"min_limit": [0, 0, -1.0], "max_limit": [0, 0, 1.0]}})
    _bad(p, r"joint 1: a HARD joint takes no min_limit")


@pytest.mark.parametrize("jtype, kw", [(JT.FREE, {"friction": art.ArticulatedJointFrictionParams(viscous=0.5)}),
                                       (JT.FREE, {"inertia": 0.1}), (JT.HARD, {"inertia": 0.1})])
def test_friction_or_rotor_inertia_on_free_or_hard_joints_is_refused(jtype, kw):
    """The reference ignores them there (its FREE-joint run with viscous 0.5 and inertia 0.1 equals one without)."""
    p = chain([(jtype, [0, 0, 1]), (JT.REVOLUTE, [0, 0, 1]), (JT.REVOLUTE, [0, 0, 1])], REV3[1], joint_kw={0: kw})
    if jtype == JT.HARD:
        p.joints[0].type, p.joints[1].type, p.joints[1].inertia = JT.REVOLUTE, JT.HARD, 0.1
    _bad(p, rf"joint {0 if jtype == JT.FREE else 1}: a {jtype.name} joint takes no joint friction and no rotor")


def test_joint_count_must_match_links():
    p = chain(*REV3)
    p.joints = p.joints[:2]
    _bad(p, r"joints: expected one joint per link \(3 links\), got 2 joints")


def test_bad_link_mass_names_the_link():
    p = chain(*REV3)
    p.links[1].density = -5.0
    _bad(p, r"link 1: ")


def test_rejected_params_are_left_as_given():
    p = chain(*REV3, joint_kw={2: {"min_limit": [0, 0, 1.0], "max_limit": [0, 0, -1.0]}})
    before = repr(p)
    with pytest.raises(ValueError):
        art.build_model(p)
    assert repr(p) == before


def test_reference_rejects_the_same_tree_errors():
    """The released engine refuses these too (and creates nothing); its messages are less specific."""
    bad = FACTS["bad_input"]
    for case in ("parent_out_of_range", "parent_not_before_child", "parent_is_self", "zero_axis",
                 "joint_count_mismatch", "root_parent_not_minus_one"):
        assert bad[case]["raised"] and bad[case]["actors_after_minus_before"] == 0, case
    # Where it accepts input it cannot honour we refuse it (docs/engine.md lists the difference).
    assert not bad["min_above_max"]["raised"] and not bad["limit_off_axis"]["raised"]
