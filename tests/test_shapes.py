"""Shapes: creation and validation, tet boundary extraction, every file format, baking, and the bundled asset."""

import copy
import importlib.util
import json
import pickle
import sys
import warnings

import numpy as np
import pytest
import trimesh

from superdex_gym.sim.assets_path import ASSETS_PATH
from superdex_gym.sim.mesh_io import (
    bake_shape,
    load_shape_from_file,
    model_data_from_shape,
    save_shape_to_file,
    shape_from_model_data,
)
from superdex_gym.sim.shapes import (
    Shape,
    box_mesh,
    create_box_mesh_shape,
    create_icosphere_shape,
    create_plane_shape,
    create_sphere_shape,
    create_tet_mesh_shape,
    create_tri_mesh_shape,
    get_shape_aabb,
    release_shape,
    validate_surface_mesh,
)
from superdex_gym.sim.transforms import Quaternion, TransformRT

ASSET = ASSETS_PATH / "sphere" / "icosphere_3subdiv.1.mochi.json"


def signed_volume(vertices, triangles):
    p = np.asarray(vertices)[np.asarray(triangles)]
    return np.einsum("fi,fi->", p[:, 0], np.cross(p[:, 1], p[:, 2])) / 6.0


def unit_tet():
    return np.array([[0.0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]]), np.array([[0, 1, 2, 3]])


def sdf_block():
    dims = [2, 3, 2]
    return {"dims": dims, "values": np.linspace(-1, 1, 12).tolist(),
            "bounds": {"min": [-1.0, -1.0, -1.0], "max": [1.0, 1.0, 1.0]},
            "negativeValueBounds": {"min": [-0.5, -0.5, -0.5], "max": [0.5, 0.5, 0.5]}}


def write_json(path, model):
    path.write_text(json.dumps(model))
    return path


# ----------------------------------------------------------------------------------------- implicit shapes


def test_plane_defaults_normalization_and_aabb():
    plane = create_plane_shape()
    assert plane.kind == "plane" and not plane.has_surface_mesh
    np.testing.assert_array_equal(plane.normal, [0, 1, 0])
    assert plane.distance == 0.0
    assert get_shape_aabb(plane) == {"min": [-np.inf, -np.inf, -np.inf], "max": [np.inf, 0.0, np.inf]}
    tilted = create_plane_shape(normal=[3.0, 4.0, 0.0], distance=2.0)
    np.testing.assert_allclose(tilted.normal, [0.6, 0.8, 0.0], rtol=1e-15)
    assert get_shape_aabb(tilted)["max"] == [np.inf] * 3
    down = create_plane_shape(normal=[0, 0, -2], distance=1.5)  # solid above z = -1.5
    assert get_shape_aabb(down)["min"] == [-np.inf, -np.inf, -1.5]


def test_plane_errors():
    with pytest.raises(ValueError, match="non-zero"):
        create_plane_shape(normal=[0, 0, 0])
    with pytest.raises(ValueError, match="distance must be finite"):
        create_plane_shape(distance=float("nan"))
    with pytest.raises(ValueError, match=r"normal must have shape \(3,\)"):
        create_plane_shape(normal=[0, 1])


def test_sphere_and_errors():
    sphere = create_sphere_shape(center=[1, 2, 3], radius=0.5)
    assert sphere.kind == "sphere" and sphere.radius == 0.5
    assert get_shape_aabb(sphere) == {"min": [0.5, 1.5, 2.5], "max": [1.5, 2.5, 3.5]}
    for radius in (0.0, -1.0, float("inf")):
        with pytest.raises(ValueError, match="radius must be positive"):
            create_sphere_shape(radius=radius)


def test_handles_are_unique_and_release_is_harmless():
    shapes = [create_plane_shape() for _ in range(5)]
    assert len({s.handle for s in shapes}) == 5
    release_shape(shapes[0])
    release_shape(shapes[0])
    with pytest.raises(TypeError, match="Shape"):
        release_shape(42)
    with pytest.raises(TypeError, match="Shape"):
        get_shape_aabb("plane")


# ------------------------------------------------------------------------------------------- triangle meshes


def test_tri_mesh_from_flat_lists_and_arrays():
    vertices, triangles = box_mesh([1.0, 2.0, 3.0])
    flat = create_tri_mesh_shape(vertices.reshape(-1).tolist(), triangles.reshape(-1).tolist())
    arrays = create_tri_mesh_shape(vertices, triangles)
    assert flat.kind == "tri_mesh" and flat.has_surface_mesh and flat.tetrahedra is None
    np.testing.assert_array_equal(flat.vertices, arrays.vertices)
    np.testing.assert_array_equal(flat.triangles, arrays.triangles)
    assert flat.triangles.dtype == np.int64 and flat.vertices.dtype == np.float64
    assert not flat.vertices.flags.writeable and not flat.triangles.flags.writeable
    with pytest.raises(AttributeError, match="immutable"):
        flat.vertices = arrays.vertices
    assert copy.deepcopy({"shape": flat})["shape"] is flat  # immutable: copies share it
    restored = pickle.loads(pickle.dumps(flat))
    assert restored.handle == flat.handle and not restored.vertices.flags.writeable
    np.testing.assert_array_equal(restored.triangles, flat.triangles)
    lo, hi = flat.aabb()
    np.testing.assert_array_equal(lo, [-1, -2, -3])
    np.testing.assert_array_equal(hi, [1, 2, 3])
    assert "tri_mesh" in repr(flat)


def two_tets_sharing_an_edge():
    """Two closed tet surfaces glued along edge (0, 1): every edge used twice except (0, 1), used 4 times."""
    v = np.array([[0.0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1], [0, -1, 0], [0, 0, -1]])
    faces = np.array([[1, 2, 3], [0, 3, 2], [0, 1, 3], [0, 2, 1],
                      [1, 5, 4], [0, 4, 5], [0, 1, 4], [0, 5, 1]])
    return v, faces


@pytest.mark.parametrize("case, message", [
    ("flat_coordinates", "not a multiple of 3"),
    ("flat_connectivity", "not a multiple of 3"),
    ("nan", "NaN or infinite"),
    ("inf", "NaN or infinite"),
    ("out_of_range", "out of range"),
    ("negative", "out of range"),
    ("repeated_vertex", "repeats a vertex"),
    ("zero_area", "zero-area"),
    ("open", "open"),
    ("non_manifold", "non-manifold"),
    ("winding", "inconsistent winding"),
    ("inverted", "inverted"),
    ("zero_volume", "zero volume"),
    ("empty", "empty"),
])
def test_tri_mesh_validation_errors(case, message):
    v, t = box_mesh([1.0, 1.0, 1.0])
    v, t = v.copy(), t.copy()
    if case == "flat_coordinates":
        v = v.reshape(-1)[:-1]
    elif case == "flat_connectivity":
        t = t.reshape(-1)[:-1]
    elif case == "nan":
        v[3, 1] = np.nan
    elif case == "inf":
        v[5, 0] = np.inf
    elif case == "out_of_range":
        t[4, 2] = 8
    elif case == "negative":
        t[0, 0] = -1
    elif case == "repeated_vertex":
        t[2, 1] = t[2, 0]
    elif case == "zero_area":
        v = np.array([[0.0, 0, 0], [1, 0, 0], [2, 0, 0], [0, 1, 0]])
        t = np.array([[0, 1, 2], [0, 2, 3], [0, 3, 1], [1, 3, 2]])
    elif case == "open":
        t = t[1:]
    elif case == "non_manifold":
        v, t = two_tets_sharing_an_edge()
    elif case == "winding":
        t[3] = t[3, [0, 2, 1]]
    elif case == "inverted":
        t = t[:, [0, 2, 1]]
    elif case == "zero_volume":
        v = np.array([[0.0, 0, 0], [1, 0, 0], [0, 1, 0]])
        t = np.array([[0, 1, 2], [0, 2, 1]])
    elif case == "empty":
        t = np.zeros((0, 3), dtype=int)
    with pytest.raises(ValueError, match=message):
        create_tri_mesh_shape(v, t)


def test_connectivity_type_errors_and_open_surfaces_on_request():
    v, t = box_mesh([1.0, 1.0, 1.0])
    with pytest.raises(TypeError, match="integer vertex indices"):
        create_tri_mesh_shape(v, t + 0.5)
    with pytest.raises(TypeError, match="integer vertex indices"):
        create_tri_mesh_shape(v, t.astype(bool))
    with pytest.raises(TypeError, match="coordinates must be numbers"):
        create_tri_mesh_shape([["a", "b", "c"]], [0, 0, 0])
    np.testing.assert_array_equal(create_tri_mesh_shape(v, t.astype(float)).triangles, t)  # integral floats ok
    open_surface = create_tri_mesh_shape(v, t[1:], require_closed=False)
    assert open_surface.triangles.shape == (11, 3)
    with pytest.raises(ValueError, match="zero-area"):
        validate_surface_mesh([[0, 0, 0], [1, 0, 0], [2, 0, 0]], [[0, 1, 2]], require_closed=False)


def test_box_mesh_shape():
    rotation = Quaternion.from_axis_angle([1, 1, 0], 0.7)
    box = create_box_mesh_shape([0.1, 0.2, 0.3], center=[1, 2, 3], rotation=rotation)
    assert box.vertices.shape == (8, 3) and box.triangles.shape == (12, 3)
    assert signed_volume(box.vertices - [1, 2, 3], box.triangles) == pytest.approx(0.048, rel=1e-14)
    local = (box.vertices - [1, 2, 3]) @ rotation.to_matrix()
    np.testing.assert_allclose(np.abs(local), np.broadcast_to([0.1, 0.2, 0.3], (8, 3)), rtol=1e-14)
    with pytest.raises(ValueError, match="half_extents must all be positive"):
        create_box_mesh_shape([0.1, 0.0, 0.3])


@pytest.mark.parametrize("subdivisions", [0, 1, 2, 3])
def test_icosphere_counts_and_radius(subdivisions):
    ico = create_icosphere_shape(radius=0.5, subdivisions=subdivisions, center=[0, 1, 0])
    assert ico.vertices.shape == (10 * 4**subdivisions + 2, 3)
    assert ico.triangles.shape == (20 * 4**subdivisions, 3)
    np.testing.assert_allclose(np.linalg.norm(ico.vertices - [0, 1, 0], axis=1), 0.5, rtol=1e-15)


def test_icosphere_errors():
    with pytest.raises(ValueError, match="subdivisions must be in"):
        create_icosphere_shape(subdivisions=8)
    with pytest.raises(TypeError, match="subdivisions must be an int"):
        create_icosphere_shape(subdivisions=2.0)
    with pytest.raises(ValueError, match="radius must be positive"):
        create_icosphere_shape(radius=-1.0)


# ---------------------------------------------------------------------------------------------- tet meshes


def test_single_tet_boundary_is_outward():
    v, tets = unit_tet()
    shape = create_tet_mesh_shape(v.reshape(-1).tolist(), tets.reshape(-1).tolist())
    assert shape.kind == "tet_mesh" and shape.has_surface_mesh
    assert shape.triangles.shape == (4, 3) and shape.vertices.shape == (4, 3)
    assert signed_volume(shape.vertices, shape.triangles) == pytest.approx(1 / 6, rel=1e-15)
    np.testing.assert_array_equal(shape.tetrahedra, tets)


def test_two_tets_share_an_interior_face_and_interior_nodes_are_dropped():
    v = np.array([[0.0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1], [0, 0, -1]])
    tets = np.array([[0, 1, 2, 3], [0, 2, 1, 4]])
    shape = create_tet_mesh_shape(v, tets)
    assert shape.triangles.shape == (6, 3)
    assert signed_volume(shape.vertices, shape.triangles) == pytest.approx(2 / 6, rel=1e-15)
    # Fan around a centre node: the centre is not on the boundary and is dropped from `vertices`.
    ico = create_icosphere_shape(subdivisions=1)
    centre = len(ico.vertices)
    fan = create_tet_mesh_shape(np.vstack([ico.vertices, [[0, 0, 0]]]),
                                np.hstack([np.full((len(ico.triangles), 1), centre), ico.triangles]))
    np.testing.assert_array_equal(fan.vertices, ico.vertices)
    np.testing.assert_array_equal(fan.triangles, ico.triangles)
    assert fan.tet_vertices.shape == (centre + 1, 3)


@pytest.mark.parametrize("case, message", [
    ("inverted", "inverted tetrahedra"),
    ("flat", "zero-volume"),
    ("overlap", "overlapping"),
    ("flat_length", "not a multiple of 4"),
    ("index", "out of range"),
])
def test_tet_mesh_errors(case, message):
    v, tets = unit_tet()
    if case == "inverted":
        tets = tets[:, [0, 2, 1, 3]]
    elif case == "flat":
        v[3] = [0.3, 0.3, 0.0]
    elif case == "overlap":
        tets = np.vstack([tets, tets])
    elif case == "flat_length":
        tets = tets.reshape(-1)[:3]
    elif case == "index":
        tets = tets + 1
    with pytest.raises(ValueError, match=message):
        create_tet_mesh_shape(v, tets)


# ------------------------------------------------------------------------------------------------ JSON files


def assert_same_geometry(a: Shape, b: Shape):
    assert a.kind == b.kind
    for name in ("normal", "center", "vertices", "triangles", "tet_vertices", "tetrahedra"):
        x, y = getattr(a, name), getattr(b, name)
        assert (x is None) == (y is None), name
        if x is not None:
            np.testing.assert_array_equal(x, y)
    assert a.distance == b.distance and a.radius == b.radius


@pytest.mark.parametrize("suffix", [".mochi.json", ".mochi.h5"])
@pytest.mark.parametrize("maker", ["tri", "tet", "plane", "sphere"])
def test_round_trip(tmp_path, suffix, maker):
    v, t = unit_tet()
    shape = {"tri": lambda: create_icosphere_shape(0.3, 2, center=[0.1, 0.2, 0.3]),
             "tet": lambda: create_tet_mesh_shape(v, t),
             "plane": lambda: create_plane_shape([0.0, 0.6, 0.8], -0.25),
             "sphere": lambda: create_sphere_shape([1.0, -2.0, 0.5], 0.125)}[maker]()
    path = tmp_path / "sub" / f"shape{suffix}"
    save_shape_to_file(shape, path)
    loaded = load_shape_from_file(path)
    assert_same_geometry(shape, loaded)
    assert loaded.handle != shape.handle


@pytest.mark.parametrize("suffix", [".mochi.json", ".mochi.h5"])
def test_sdf_round_trip(tmp_path, suffix):
    model = {"mesh": {"nodesPerElement": 3, "coordinates": box_mesh([1, 1, 1])[0].reshape(-1).tolist(),
                      "connectivity": box_mesh([1, 1, 1])[1].reshape(-1).tolist()},
             "sdf": dict(sdf_block(), scale=[2.0, 2.0, 2.0], rotation=[0, 0, 0, 1], translation=[0.5, 0, 0])}
    shape = shape_from_model_data(model)
    sdf = shape.sdf
    assert sdf["values"].shape == (2, 3, 2) and sdf["dims"].tolist() == [2, 3, 2]
    np.testing.assert_array_equal(sdf["values"].reshape(-1), np.linspace(-1, 1, 12))  # x slowest, z fastest
    assert not sdf["values"].flags.writeable
    path = tmp_path / f"sdf{suffix}"
    save_shape_to_file(shape, path)
    loaded = load_shape_from_file(path).sdf
    for key in ("dims", "values", "scale", "rotation", "translation"):
        np.testing.assert_array_equal(loaded[key], sdf[key])
    for key in ("bounds", "negative_value_bounds"):
        np.testing.assert_array_equal(loaded[key]["min"], sdf[key]["min"])
        np.testing.assert_array_equal(loaded[key]["max"], sdf[key]["max"])


@pytest.mark.parametrize("change, message", [
    ({"dims": [1, 3, 2]}, "dims must be 3 integers >= 2"),
    ({"values": [0.0] * 11}, "expected dims product 12"),
    ({"negativeValueBounds": {"min": [-2.0, 0, 0], "max": [0.5, 0.5, 0.5]}}, "inside bounds"),
    ({"bounds": {"min": [1.0, -1, -1], "max": [1.0, 1, 1]}}, "max > min"),
    ({"scale": [1.0, 2.0, 1.0]}, "uniform in magnitude"),
    ({"rotation": [0, 0, 0, 2.0]}, "unit quaternion"),
])
def test_sdf_validation(change, message):
    model = {"sphere": {"center": [0, 0, 0], "radius": 1.0}, "sdf": dict(sdf_block(), **change)}
    with pytest.raises(ValueError, match=message):
        shape_from_model_data(model)


def test_current_json_box_becomes_a_box_mesh(tmp_path):
    rotation = Quaternion.rotation_z(0.3)
    path = write_json(tmp_path / "box.mochi.json", {"box": {"center": [0, 1, 0], "halfExtents": [0.1, 0.2, 0.3],
                                                            "rotation": list(rotation)}, "plane": None})
    shape = load_shape_from_file(path)
    expected = create_box_mesh_shape([0.1, 0.2, 0.3], center=[0, 1, 0], rotation=rotation)
    assert shape.kind == "tri_mesh" and shape.triangles.shape == (12, 3)
    np.testing.assert_allclose(shape.vertices, expected.vertices, rtol=0, atol=1e-15)


def test_current_json_tet_mesh_and_ignored_blocks(tmp_path):
    v, t = unit_tet()
    model = {"mesh": {"nodesPerElement": 4, "coordinates": v.reshape(-1).tolist(),
                      "connectivity": t.reshape(-1).tolist()},
             "visualMesh": {"nodesPerElement": 3, "coordinates": [], "connectivity": []}, "material": None}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        shape = load_shape_from_file(write_json(tmp_path / "tet.mochi.json", model))
    assert shape.kind == "tet_mesh" and shape.triangles.shape == (4, 3)


@pytest.mark.parametrize("model, message", [
    ({"plane": {"normal": [0, 1, 0], "distance": 0}, "sphere": {"center": [0, 0, 0], "radius": 1}}, "exactly one"),
    ({"sdf": sdf_block()}, "exactly one"),
    ({"mesh": {"nodesPerElement": 2, "coordinates": [0, 0, 0, 1, 0, 0], "connectivity": [0, 1]}}, "polyline"),
    ({"mesh": {"nodesPerElement": 5, "coordinates": [0, 0, 0], "connectivity": [0]}}, "must be 3"),
    ({"mesh": {"nodesPerElement": 3, "coordinates": [0, 0, 0]}}, "missing required key 'connectivity'"),
    ({"sphere": {"center": [0, 0, 0]}}, "missing required key 'radius'"),
    ({"sphere": {"center": [0, 0, 0], "radius": -1}}, "radius must be positive"),
    ([1, 2, 3], "JSON object"),
])
def test_current_json_errors(tmp_path, model, message):
    with pytest.raises(ValueError, match=message):
        load_shape_from_file(write_json(tmp_path / "bad.mochi.json", model))


def test_unknown_json_key_warns(tmp_path):
    path = write_json(tmp_path / "p.mochi.json", {"plane": {"normal": [0, 2, 0], "distance": 1}, "colour": "red"})
    with pytest.warns(UserWarning, match="colour"):
        shape = load_shape_from_file(path)
    np.testing.assert_array_equal(shape.normal, [0, 1, 0])  # normalized like the reference's auto-correct


def test_deprecated_json_layouts(tmp_path):
    v, t = box_mesh([0.5, 0.5, 0.5])
    tri = {"element_size": 3, "coordinates": v.reshape(-1).tolist(), "connectivity": t.reshape(-1).tolist(),
           "visual_coordinates": [0.0, 0.0, 0.0], "visual_connectivity": [0, 0, 0], "visual_element_size": 3}
    shape = load_shape_from_file(write_json(tmp_path / "tri.mochi.json", tri))
    assert shape.kind == "tri_mesh" and shape.triangles.shape == (12, 3)
    tv, tt = unit_tet()
    tet = {"coordinates": tv.reshape(-1).tolist(), "connectivity": tt.reshape(-1).tolist()}  # element_size 4
    assert load_shape_from_file(write_json(tmp_path / "tet.mochi.json", tet)).kind == "tet_mesh"
    with pytest.raises(ValueError, match="element_size must be 3 or 4"):
        load_shape_from_file(write_json(tmp_path / "b.mochi.json", dict(tet, element_size=5)))
    with pytest.raises(ValueError, match="must not be empty"):
        load_shape_from_file(write_json(tmp_path / "e.mochi.json", {"coordinates": [], "connectivity": [0]}))
    with pytest.raises(ValueError, match="not a multiple of 4"):
        load_shape_from_file(write_json(tmp_path / "l.mochi.json", dict(tet, connectivity=[0, 1, 2])))


def test_file_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="not found"):
        load_shape_from_file(tmp_path / "missing.mochi.json")
    with pytest.raises(ValueError, match="unsupported shape file type"):
        load_shape_from_file(tmp_path / "shape.vtk")
    with pytest.raises(TypeError, match="file_path"):
        load_shape_from_file(3)
    broken = tmp_path / "broken.mochi.json"
    broken.write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        load_shape_from_file(broken)
    with pytest.raises(ValueError, match="not supported"):
        save_shape_to_file(create_plane_shape(), tmp_path / "p.obj")
    with pytest.raises(TypeError, match="Shape"):
        save_shape_to_file({"plane": {}}, tmp_path / "p.mochi.json")


# ------------------------------------------------------------------------------------------------ HDF5 files


def test_h5_layout_matches_the_reference_names(tmp_path):
    h5py = pytest.importorskip("h5py")
    v, t = unit_tet()
    shape = create_tet_mesh_shape(v, t).with_sdf(shape_from_model_data(
        {"sphere": {"center": [0, 0, 0], "radius": 1}, "sdf": sdf_block()}).sdf)
    path = tmp_path / "tet.mochi.h5"
    save_shape_to_file(shape, path)
    with h5py.File(path, "r") as f:
        assert f["mesh/coordinates"].shape == (4, 3)
        assert f["mesh/connectivity"].shape == (1, 4)  # nodes per element = second dimension
        assert f["sdf/grid"].shape == (2, 3, 2)
        assert set(f["sdf"].attrs) == {"grid_min", "grid_max", "collider_min", "collider_max"}


def test_h5_box_sphere_plane_groups(tmp_path):
    h5py = pytest.importorskip("h5py")
    path = tmp_path / "box.mochi.h5"
    with h5py.File(path, "w") as f:
        g = f.create_group("box")
        g.attrs["center"], g.attrs["half_extents"], g.attrs["rotation"] = [0, 0, 1], [0.1, 0.1, 0.2], [0, 0, 0, 1]
    box = load_shape_from_file(path)
    assert box.kind == "tri_mesh" and box.triangles.shape == (12, 3)
    np.testing.assert_allclose(box.aabb()[1], [0.1, 0.1, 1.2])
    with h5py.File(path, "w") as f:
        f.create_group("sphere").attrs["center"] = [0, 0, 0]
    with pytest.raises(ValueError, match="missing attribute 'radius'"):
        load_shape_from_file(path)
    with h5py.File(path, "a") as f:
        f.create_group("plane")
    with pytest.raises(ValueError, match="exactly one"):
        load_shape_from_file(path)
    (tmp_path / "junk.mochi.h5").write_bytes(b"not hdf5")
    with pytest.raises(ValueError, match="not a readable HDF5 file"):
        load_shape_from_file(tmp_path / "junk.mochi.h5")


def test_missing_h5py_names_the_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "h5py", None)  # makes `import h5py` raise ImportError
    with pytest.raises(ImportError, match=r"pip install superdex-gym\[h5\]"):
        save_shape_to_file(create_plane_shape(), tmp_path / "p.mochi.h5")
    (tmp_path / "q.mochi.h5").write_bytes(b"")
    with pytest.raises(ImportError, match=r"superdex-gym\[h5\]"):
        load_shape_from_file(tmp_path / "q.mochi.h5")


# -------------------------------------------------------------------------------------- trimesh file formats


@pytest.mark.parametrize("suffix", [".obj", ".stl", ".ply", ".off", ".STL"])
def test_trimesh_formats(tmp_path, suffix):
    v, t = box_mesh([0.1, 0.2, 0.3], center=[1, 0, 0])
    path = tmp_path / f"box{suffix}"
    trimesh.Trimesh(vertices=v, faces=t, process=False).export(path, file_type=suffix[1:].lower())
    shape = load_shape_from_file(path, bake_scale=[2.0, 2.0, 2.0])
    assert shape.kind == "tri_mesh"
    assert shape.vertices.shape == (8, 3) and shape.triangles.shape == (12, 3)  # STL copies merged
    assert signed_volume(shape.vertices, shape.triangles) == pytest.approx(8 * 0.048, rel=1e-6)


def test_trimesh_open_mesh_is_rejected(tmp_path):
    v, t = box_mesh([0.1, 0.2, 0.3])
    path = tmp_path / "open.obj"
    trimesh.Trimesh(vertices=v, faces=t[2:], process=False).export(path)
    with pytest.raises(ValueError, match="open"):
        load_shape_from_file(path)


# ---------------------------------------------------------------------------------------------------- baking


def test_bake_applies_scale_then_transform():
    box = create_box_mesh_shape([0.1, 0.2, 0.3])
    scale = np.array([2.0, 3.0, 0.5])
    transform = TransformRT(rotation=Quaternion.rotation_x(0.4), translation=[1.0, -1.0, 2.0])
    baked = bake_shape(box, scale, transform)
    expected = (box.vertices * scale) @ transform.rotation_matrix.T + transform.translation_array
    np.testing.assert_allclose(baked.vertices, expected, rtol=0, atol=1e-15)
    np.testing.assert_array_equal(baked.triangles, box.triangles)
    assert bake_shape(box) is box  # identity: nothing to bake


@pytest.mark.parametrize("scale", [[-1.0, 1.0, 1.0], [1.0, -2.0, 1.0], [-1.0, -1.0, -1.0], [-1.0, -1.0, 1.0]])
def test_mirroring_keeps_normals_outward(scale):
    ico = create_icosphere_shape(subdivisions=1, center=[0.3, 0.0, 0.0])
    baked = bake_shape(ico, scale)
    validate_surface_mesh(baked.vertices, baked.triangles)  # still closed, consistent and not inverted
    assert signed_volume(baked.vertices, baked.triangles) == pytest.approx(
        signed_volume(ico.vertices, ico.triangles) * abs(np.prod(scale)), rel=1e-13)
    flipped = np.prod(np.sign(scale)) < 0
    np.testing.assert_array_equal(baked.triangles, ico.triangles[:, [0, 2, 1]] if flipped else ico.triangles)
    v, t = unit_tet()
    tet = bake_shape(create_tet_mesh_shape(v, t), scale)
    create_tet_mesh_shape(tet.tet_vertices, tet.tetrahedra)  # tets stay positively oriented
    assert signed_volume(tet.vertices, tet.triangles) > 0


def test_bake_plane_moves_points_consistently():
    plane = create_plane_shape([1.0, 2.0, -0.5], 0.7)
    scale = np.array([2.0, -0.5, 3.0])
    transform = TransformRT(rotation=Quaternion.from_axis_angle([0.2, 1.0, 0.3], 1.1), translation=[0.4, 1.0, -2.0])
    baked = bake_shape(plane, scale, transform)
    np.testing.assert_allclose(np.linalg.norm(baked.normal), 1.0, rtol=1e-15)
    rng = np.random.default_rng(3)
    # Points on the plane map onto the baked plane; points below (inside) stay below.
    tangent = np.cross(plane.normal, rng.normal(size=(20, 3)))
    on_plane = plane.distance * plane.normal + tangent
    inside = on_plane - 0.3 * plane.normal
    mapped = lambda p: (p * scale) @ transform.rotation_matrix.T + transform.translation_array  # noqa: E731
    np.testing.assert_allclose(mapped(on_plane) @ baked.normal, baked.distance, rtol=0, atol=1e-13)
    assert np.all(mapped(inside) @ baked.normal < baked.distance)
    lifted = bake_shape(create_plane_shape(), [1.0, 2.0, 1.0], TransformRT(translation=[0, 0.5, 0]))
    np.testing.assert_allclose(lifted.normal, [0, 1, 0])
    assert lifted.distance == pytest.approx(0.5)


def test_bake_sphere():
    sphere = create_sphere_shape([1.0, 0.0, 0.0], 0.5)
    baked = bake_shape(sphere, [2.0, 2.0, 2.0], TransformRT(rotation=Quaternion.rotation_z(np.pi / 2)))
    assert baked.radius == pytest.approx(1.0)
    np.testing.assert_allclose(baked.center, [0.0, 2.0, 0.0], atol=1e-15)
    mirrored = bake_shape(sphere, [-3.0, 3.0, 3.0])
    assert mirrored.radius == pytest.approx(1.5)
    np.testing.assert_allclose(mirrored.center, [-3.0, 0, 0])
    with pytest.raises(ValueError, match="non-uniform bake_scale"):
        bake_shape(sphere, [1.0, 2.0, 1.0])


def test_bake_errors():
    box = create_box_mesh_shape([1, 1, 1])
    with pytest.raises(ValueError, match="bake_scale of zero"):
        bake_shape(box, [1.0, 0.0, 1.0])
    with pytest.raises(ValueError, match=r"bake_scale must have shape \(3,\)"):
        bake_shape(box, [1.0, 2.0])
    with pytest.raises(TypeError, match="bake_transform must be a TransformRT"):
        bake_shape(box, None, [0, 0, 0])


def test_bake_composes_the_sdf_transform():
    base = shape_from_model_data({"sphere": {"center": [0, 0, 0], "radius": 1}, "sdf": dict(
        sdf_block(), scale=[0.5, 0.5, 0.5], rotation=list(Quaternion.rotation_y(0.3)), translation=[0, 1, 0])})
    scale = np.array([-2.0, 2.0, 2.0])
    transform = TransformRT(rotation=Quaternion.rotation_x(0.7), translation=[1.0, 2.0, 3.0])
    baked = bake_shape(base, scale, transform)

    def parent_from_grid(sdf, p):
        return Quaternion(*sdf["rotation"]).to_matrix() @ (sdf["scale"] * p) + sdf["translation"]

    grid_point = np.array([0.3, -0.2, 0.9])
    expected = transform.rotation_matrix @ (scale * parent_from_grid(base.sdf, grid_point)) + [1.0, 2.0, 3.0]
    np.testing.assert_allclose(parent_from_grid(baked.sdf, grid_point), expected, rtol=0, atol=1e-14)
    with pytest.warns(UserWarning, match="SDF was dropped"):
        box_with_sdf = create_box_mesh_shape([1, 1, 1]).with_sdf(base.sdf)
        assert bake_shape(box_with_sdf, [1.0, 2.0, 1.0]).sdf is None


def test_model_data_of_a_tet_mesh_keeps_the_tets():
    v, t = unit_tet()
    model = model_data_from_shape(create_tet_mesh_shape(v, t))
    assert model["mesh"]["nodesPerElement"] == 4 and model["mesh"]["connectivity"] == [0, 1, 2, 3]


# ----------------------------------------------------------------------------------------------------- asset


def test_asset_is_the_tetrahedralized_unit_icosphere():
    assert ASSET.is_file()
    raw = json.loads(ASSET.read_text())
    assert raw["element_size"] == 4 and "mesh" not in raw  # the deprecated flat layout
    shape = load_shape_from_file(str(ASSET))
    assert shape.kind == "tet_mesh"
    assert shape.vertices.shape == (642, 3) and shape.triangles.shape == (1280, 3)
    assert shape.tetrahedra.shape == (1280, 4) and shape.tet_vertices.shape == (643, 3)
    np.testing.assert_allclose(np.linalg.norm(shape.vertices, axis=1), 1.0, rtol=1e-15)


def test_asset_baked_to_a_0p2_m_sphere():
    shape = load_shape_from_file(file_path=str(ASSET), bake_scale=[0.2, 0.2, 0.2])
    np.testing.assert_allclose(np.linalg.norm(shape.vertices, axis=1), 0.2, rtol=1e-15)
    np.testing.assert_allclose(get_shape_aabb(shape)["max"], 0.2, rtol=0.02)


def test_asset_generator_is_deterministic(tmp_path):
    spec = importlib.util.spec_from_file_location("make_assets", ASSETS_PATH / "make_assets.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    regenerated = tmp_path / "icosphere.mochi.json"
    module.write_icosphere_asset(regenerated)
    assert regenerated.read_bytes() == ASSET.read_bytes()
