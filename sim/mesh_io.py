"""Shape files: ``.mochi.json`` (current and deprecated layouts), ``.mochi.h5``, and ``.obj/.stl/.ply/.off``.

Formats (digest 6.1; reference ``mochi_core/src/geometry/model_utils.cpp`` and ``model_utils_hdf5.cpp``):

* JSON, current = the reference's ``ModelData`` reflection (camelCase keys). Exactly one of ``mesh``, ``box``,
  ``plane``, ``sphere`` (a JSON ``null`` counts as absent)::

      mesh:   {nodesPerElement: 3 | 4, coordinates: [x0, y0, z0, ...], connectivity: [...]}
      box:    {center: [3], halfExtents: [3], rotation: [x, y, z, w]}   -> a 12-triangle box tri mesh
      plane:  {normal: [3], distance: d}        sphere: {center: [3], radius: r}
      sdf?:   {dims: [nx, ny, nz], values: [nx*ny*nz], bounds: {min, max}, negativeValueBounds: {min, max},
               scale?: [3], rotation?: [4], translation?: [3]}

  ``visualMesh``, ``blending``, ``constrainedNodes``, ``elementFrameAxes`` and ``material`` are read past (not
  needed by rigid bodies); other unknown keys warn. Polyline meshes (``nodesPerElement`` 2, rods) raise.
* JSON, deprecated (detected by a top-level ``coordinates`` key): ``element_size`` (default 4; 3 or 4),
  ``coordinates``, ``connectivity``; the ``visual_*``, skinning, blending and constrained-node keys are ignored.
* HDF5 (needs ``h5py``: ``pip install superdex-gym[h5]``), the reference's group layout: group ``mesh`` with
  datasets ``coordinates`` (N, 3) and ``connectivity`` (E, k), k = nodes per element; group ``sdf`` with
  dataset ``grid`` (nx, ny, nz) and attributes ``grid_min``, ``grid_max``, ``collider_min``, ``collider_max``
  (the negative-value bounds), optional ``scale`` (1 or 3 values), ``rotation`` (x, y, z, w), ``translation``;
  groups ``box`` (attributes ``center``, ``half_extents``, ``rotation``), ``sphere`` (``center``, ``radius``)
  and ``plane`` (``normal``, ``distance``).
* Baking (`bake_shape`, the ``bake_scale`` / ``bake_transform`` of `load_shape_from_file`): see its docstring.
* ``.obj/.stl/.ply/.off`` through ``trimesh.load(path, force="mesh")`` with vertices merged (STL stores a
  vertex copy per face); the result must be a closed outward surface.

The SDF of a shape is kept as a dict with snake_case keys: ``dims`` (3,) int64, ``values`` (nx, ny, nz) float64
[m] (x slowest, z fastest; sample (i, j, k) at ``bounds.min + (i, j, k) * (max - min) / (dims - 1)``),
``bounds`` and ``negative_value_bounds`` ``{"min": (3,), "max": (3,)}`` [m], and ``scale`` (3,),
``rotation`` (4,) (x, y, z, w), ``translation`` (3,) [m] (parent-from-grid, applied scale -> rotation ->
translation), each possibly None.
"""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path

import numpy as np

from .shapes import (Shape, _check_shape, box_mesh, create_plane_shape, create_sphere_shape, create_tet_mesh_shape,
                     create_tri_mesh_shape)
from .transforms import Quaternion, TransformRT, as_vector3

__all__ = ["load_shape_from_file", "save_shape_to_file", "bake_shape", "shape_from_model_data",
           "model_data_from_shape", "TRIMESH_SUFFIXES"]

TRIMESH_SUFFIXES = (".obj", ".stl", ".ply", ".off")
_SHAPE_KEYS = ("mesh", "box", "plane", "sphere")
_IGNORED_KEYS = ("visualMesh", "blending", "constrainedNodes", "elementFrameAxes", "material")
_H5_HINT = "reading and writing .mochi.h5 files needs h5py: pip install superdex-gym[h5]"


def _import_h5py():
    try:
        import h5py
    except ImportError as exc:
        raise ImportError(_H5_HINT) from exc
    return h5py


def _suffix_kind(path: Path) -> str:
    name = path.name.lower()
    if name.endswith(".json"):
        return "json"
    if name.endswith(".h5"):
        return "h5"
    if name.endswith(TRIMESH_SUFFIXES):
        return "trimesh"
    raise ValueError(
        f"unsupported shape file type {path.name!r}: expected .mochi.json, .mochi.h5, .obj, .stl, .ply or .off"
    )


def _as_path(file_path) -> Path:
    if not isinstance(file_path, (str, os.PathLike)):
        raise TypeError(f"file_path must be a str or os.PathLike, got {type(file_path).__name__}")
    return Path(file_path)


# --------------------------------------------------------------------------------------------------- SDF data


def _aabb(value, name: str) -> dict:
    if not isinstance(value, dict) or set(value) != {"min", "max"}:
        raise ValueError(f"sdf {name} must be an object {{min: [3], max: [3]}}, got {value!r}")
    lo, hi = as_vector3(value["min"], f"sdf {name}.min"), as_vector3(value["max"], f"sdf {name}.max")
    if np.any(hi <= lo):
        raise ValueError(f"sdf {name} must have max > min on every axis, got min {lo.tolist()} max {hi.tolist()}")
    return {"min": lo, "max": hi}


def _make_sdf(dims, values, bounds, negative_value_bounds, scale=None, rotation=None, translation=None) -> dict:
    """Validate grid-SDF data (reference ValidateSdf rules) into the dict layout of the module docstring."""
    dims = np.asarray(dims)
    if dims.shape != (3,) or not np.issubdtype(dims.dtype, np.integer) or np.any(dims < 2):
        raise ValueError(f"sdf dims must be 3 integers >= 2, got {dims.tolist()}")
    values = np.asarray(values, dtype=np.float64)
    if values.size != int(np.prod(dims)):
        raise ValueError(f"sdf values has {values.size} entries, expected dims product {int(np.prod(dims))}")
    if not np.all(np.isfinite(values)):
        raise ValueError("sdf values contain NaN or infinite entries")
    bounds = _aabb(bounds, "bounds")
    inner = _aabb(negative_value_bounds, "negativeValueBounds")
    if np.any(inner["min"] < bounds["min"]) or np.any(inner["max"] > bounds["max"]):
        raise ValueError("sdf negativeValueBounds must lie inside bounds")
    if scale is not None:
        scale = np.asarray(scale, dtype=np.float64).reshape(-1)
        scale = np.repeat(scale, 3) if scale.shape == (1,) else scale  # older files store one value
        scale = as_vector3(scale, "sdf scale")
        if np.min(np.abs(scale)) == 0.0 or not _is_uniform_abs(scale):
            raise ValueError(f"sdf scale must be non-zero and uniform in magnitude, got {scale.tolist()}")
    if rotation is not None:
        rotation = np.asarray(rotation, dtype=np.float64)
        if rotation.shape != (4,) or not np.all(np.isfinite(rotation)) or abs(np.linalg.norm(rotation) - 1) > 1e-6:
            raise ValueError(f"sdf rotation must be a unit quaternion (x, y, z, w), got {rotation.tolist()}")
    if translation is not None:
        translation = as_vector3(translation, "sdf translation")
    return {"dims": dims.astype(np.int64), "values": values.reshape(tuple(dims)), "bounds": bounds,
            "negative_value_bounds": inner, "scale": scale, "rotation": rotation, "translation": translation}


# ------------------------------------------------------------------------------------------- ModelData (JSON)


def _required(block: dict, key: str, where: str):
    if key not in block or block[key] is None:
        raise ValueError(f"{where} is missing required key {key!r}")
    return block[key]


def _mesh_shape(nodes_per_element, coordinates, connectivity, where: str) -> Shape:
    if nodes_per_element == 3:
        return create_tri_mesh_shape(coordinates, connectivity)
    if nodes_per_element == 4:
        return create_tet_mesh_shape(coordinates, connectivity)
    if nodes_per_element == 2:
        raise ValueError(f"{where}: polyline (rod) meshes, nodesPerElement 2, are not supported for rigid shapes")
    raise ValueError(f"{where}: nodes per element must be 3 (triangles) or 4 (tetrahedra), got {nodes_per_element!r}")


def shape_from_model_data(model: dict) -> Shape:
    """A `Shape` from a current-format ModelData dict (the parsed JSON object)."""
    if not isinstance(model, dict):
        raise ValueError(f"a model file must hold a JSON object, got {type(model).__name__}")
    present = [k for k in _SHAPE_KEYS if model.get(k) is not None]
    if len(present) != 1:
        raise ValueError(f"a model must contain exactly one of mesh, box, plane, sphere; found {present or 'none'}")
    unknown = sorted(set(model) - set(_SHAPE_KEYS) - set(_IGNORED_KEYS) - {"sdf"})
    if unknown:
        warnings.warn(f"ignoring unknown model keys {unknown}", stacklevel=3)
    sdf = None
    if model.get("sdf") is not None:
        block = model["sdf"]
        if not isinstance(block, dict):
            raise ValueError("sdf must be an object")
        sdf = _make_sdf(_required(block, "dims", "sdf"), _required(block, "values", "sdf"),
                        _required(block, "bounds", "sdf"), _required(block, "negativeValueBounds", "sdf"),
                        block.get("scale"), block.get("rotation"), block.get("translation"))
    kind = present[0]
    block = model[kind]
    if not isinstance(block, dict):
        raise ValueError(f"{kind} must be an object, got {type(block).__name__}")
    if kind == "mesh":
        shape = _mesh_shape(_required(block, "nodesPerElement", "mesh"), _required(block, "coordinates", "mesh"),
                            _required(block, "connectivity", "mesh"), "mesh")
    elif kind == "box":
        vertices, triangles = box_mesh(_required(block, "halfExtents", "box"), block.get("center", (0, 0, 0)),
                                        block.get("rotation"))
        shape = create_tri_mesh_shape(vertices, triangles)
    elif kind == "plane":
        shape = create_plane_shape(_required(block, "normal", "plane"), _required(block, "distance", "plane"))
    else:
        shape = create_sphere_shape(_required(block, "center", "sphere"), _required(block, "radius", "sphere"))
    return shape if sdf is None else shape.with_sdf(sdf)


def _shape_from_deprecated(model: dict) -> Shape:
    element_size = model.get("element_size", 4)
    if element_size not in (3, 4):
        raise ValueError(f"deprecated model: element_size must be 3 or 4, got {element_size!r}")
    coordinates, connectivity = model.get("coordinates"), model.get("connectivity")
    if not coordinates or not connectivity:
        raise ValueError("deprecated model: coordinates and connectivity must not be empty")
    return _mesh_shape(element_size, coordinates, connectivity, "deprecated model")


def _sdf_to_json(sdf: dict) -> dict:
    out = {"dims": sdf["dims"].tolist(), "values": sdf["values"].reshape(-1).tolist(),
           "bounds": {k: sdf["bounds"][k].tolist() for k in ("min", "max")},
           "negativeValueBounds": {k: sdf["negative_value_bounds"][k].tolist() for k in ("min", "max")}}
    for key in ("scale", "rotation", "translation"):
        if sdf.get(key) is not None:
            out[key] = np.asarray(sdf[key]).tolist()
    return out


def model_data_from_shape(shape: Shape) -> dict:
    """Current-format ModelData dict (JSON-ready) of a shape; tet meshes keep their tetrahedra."""
    if not isinstance(shape, Shape):
        raise TypeError(f"expected a Shape, got {type(shape).__name__}")
    if shape.kind == "plane":
        model = {"plane": {"normal": shape.normal.tolist(), "distance": shape.distance}}
    elif shape.kind == "sphere":
        model = {"sphere": {"center": shape.center.tolist(), "radius": shape.radius}}
    elif shape.kind == "tri_mesh":
        model = {"mesh": {"nodesPerElement": 3, "coordinates": shape.vertices.reshape(-1).tolist(),
                          "connectivity": shape.triangles.reshape(-1).tolist()}}
    else:
        model = {"mesh": {"nodesPerElement": 4, "coordinates": shape.tet_vertices.reshape(-1).tolist(),
                          "connectivity": shape.tetrahedra.reshape(-1).tolist()}}
    if shape.sdf is not None:
        model["sdf"] = _sdf_to_json(shape.sdf)
    return model


# ------------------------------------------------------------------------------------------------------- HDF5


def _h5_attr(group, name: str, where: str):
    if name not in group.attrs:
        raise ValueError(f"{where}: group {group.name!r} is missing attribute {name!r}")
    return group.attrs[name]


def _shape_from_h5(path: Path) -> Shape:
    h5py = _import_h5py()
    try:
        f = h5py.File(path, "r")
    except OSError as exc:
        raise ValueError(f"{path.name} is not a readable HDF5 file: {exc}") from exc
    with f:
        present = [k for k in _SHAPE_KEYS if k in f]
        if len(present) != 1:
            raise ValueError(f"{path.name}: must contain exactly one of groups mesh, box, plane, sphere; "
                             f"found {present or 'none'}")
        sdf = None
        if "sdf" in f:
            g = f["sdf"]
            a = g.attrs
            missing = [k for k in ("grid_min", "grid_max", "collider_min", "collider_max") if k not in a]
            if "grid" not in g or missing:
                raise ValueError(f"{path.name}: sdf group needs dataset 'grid' and attributes {missing}")
            grid = np.asarray(g["grid"], dtype=np.float64)
            sdf = _make_sdf(np.array(grid.shape), grid, {"min": a["grid_min"], "max": a["grid_max"]},
                            {"min": a["collider_min"], "max": a["collider_max"]},
                            a.get("scale"), a.get("rotation"), a.get("translation"))
        kind, g = present[0], f[present[0]]
        if kind == "mesh":
            if "coordinates" not in g:
                raise ValueError(f"{path.name}: group mesh needs dataset 'coordinates'")
            coordinates = np.asarray(g["coordinates"], dtype=np.float64)
            if coordinates.ndim != 2 or coordinates.shape[1] != 3:
                raise ValueError(f"{path.name}: mesh coordinates must be an (N, 3) dataset, got {coordinates.shape}")
            if "connectivity" not in g:
                raise ValueError(f"{path.name}: polyline meshes (no 'connectivity' dataset) are not supported")
            connectivity = np.asarray(g["connectivity"])
            if connectivity.ndim != 2:
                raise ValueError(f"{path.name}: mesh connectivity must be an (E, k) dataset, got {connectivity.shape}")
            shape = _mesh_shape(connectivity.shape[1], coordinates, connectivity, path.name)
        elif kind == "box":
            vertices, triangles = box_mesh(_h5_attr(g, "half_extents", path.name), g.attrs.get("center", (0, 0, 0)),
                                           g.attrs.get("rotation"))
            shape = create_tri_mesh_shape(vertices, triangles)
        elif kind == "plane":
            shape = create_plane_shape(_h5_attr(g, "normal", path.name), float(_h5_attr(g, "distance", path.name)))
        else:
            shape = create_sphere_shape(_h5_attr(g, "center", path.name), float(_h5_attr(g, "radius", path.name)))
    return shape if sdf is None else shape.with_sdf(sdf)


def _save_h5(shape: Shape, path: Path) -> None:
    h5py = _import_h5py()
    with h5py.File(path, "w") as f:
        if shape.kind in ("tri_mesh", "tet_mesh"):
            g = f.create_group("mesh")
            tets = shape.kind == "tet_mesh"
            g.create_dataset("coordinates", data=shape.tet_vertices if tets else shape.vertices)
            g.create_dataset("connectivity", data=(shape.tetrahedra if tets else shape.triangles).astype(np.int32))
        elif shape.kind == "plane":
            g = f.create_group("plane")
            g.attrs["normal"], g.attrs["distance"] = shape.normal, shape.distance
        else:
            g = f.create_group("sphere")
            g.attrs["center"], g.attrs["radius"] = shape.center, shape.radius
        if shape.sdf is not None:
            sdf = shape.sdf
            g = f.create_group("sdf")
            g.create_dataset("grid", data=sdf["values"])
            g.attrs["grid_min"], g.attrs["grid_max"] = sdf["bounds"]["min"], sdf["bounds"]["max"]
            inner = sdf["negative_value_bounds"]
            g.attrs["collider_min"], g.attrs["collider_max"] = inner["min"], inner["max"]
            for key in ("scale", "rotation", "translation"):
                if sdf.get(key) is not None:
                    g.attrs[key] = np.asarray(sdf[key], dtype=np.float64)


# ---------------------------------------------------------------------------------------------------- baking
# (In the reference, BakeTransform sits with the model I/O in model_utils.cpp.)


def _is_uniform_abs(scale: np.ndarray) -> bool:
    return bool(np.allclose(np.abs(scale), abs(scale[0]), rtol=1e-9, atol=0.0))


def _bake_sdf(sdf: dict, scale: np.ndarray, rotation: np.ndarray, translation: np.ndarray):
    """Compose the bake into the SDF's parent-from-grid (scale, rotation, translation); None if impossible."""
    if not _is_uniform_abs(scale):
        warnings.warn("non-uniform bake_scale cannot be represented by a grid SDF; the SDF was dropped",
                      stacklevel=3)
        return None
    prev_scale = np.ones(3) if sdf.get("scale") is None else np.asarray(sdf["scale"], dtype=np.float64)
    prev_rot = np.eye(3) if sdf.get("rotation") is None else Quaternion(*sdf["rotation"]).to_matrix()
    prev_t = np.zeros(3) if sdf.get("translation") is None else np.asarray(sdf["translation"], dtype=np.float64)
    linear = rotation @ np.diag(scale) @ prev_rot @ np.diag(prev_scale)
    magnitude = abs(scale[0]) * abs(prev_scale[0])
    signs = np.array([-1.0, 1.0, 1.0]) if np.linalg.det(linear) < 0 else np.ones(3)  # reflection on x
    new_rot = (linear / magnitude) @ np.diag(signs)
    out = dict(sdf)
    out["scale"] = signs * magnitude
    out["rotation"] = Quaternion.from_matrix(new_rot).to_array()
    out["translation"] = rotation @ (scale * prev_t) + translation
    return out


def bake_shape(shape, bake_scale=None, bake_transform=None) -> Shape:
    """New shape with ``x -> R (bake_scale * x) + t`` baked in (per-axis scale first, then the TransformRT).

    Meshes: every vertex is mapped; an odd number of negative scale axes (mirroring) flips the triangle
    winding (and tet orientation) so normals stay outward. Planes: the normal maps by the inverse transpose
    and is renormalized, the distance follows. Spheres: the scale must be uniform in magnitude (a mirror only
    moves the centre), else ValueError. A grid SDF composes the bake into its own transform when the scale is
    uniform in magnitude, otherwise it is dropped with a warning.
    """
    _check_shape(shape)
    scale = np.ones(3) if bake_scale is None else as_vector3(bake_scale, "bake_scale")
    if np.min(np.abs(scale)) < np.finfo(np.float64).eps:
        raise ValueError(f"bake_scale of zero is not allowed (zero volume), got {scale.tolist()}")
    if bake_transform is None:
        bake_transform = TransformRT()
    if not isinstance(bake_transform, TransformRT):
        raise TypeError(f"bake_transform must be a TransformRT, got {type(bake_transform).__name__}")
    rotation, translation = bake_transform.rotation_matrix, bake_transform.translation_array
    if np.all(scale == 1.0) and np.array_equal(rotation, np.eye(3)) and not translation.any():
        return shape

    sdf = None if shape.sdf is None else _bake_sdf(shape.sdf, scale, rotation, translation)
    if shape.kind == "plane":
        stretched = rotation @ (shape.normal / scale)  # inverse transpose of (R diag(s)) applied to n
        inv_length = 1.0 / np.linalg.norm(stretched)
        normal = stretched * inv_length
        return Shape("plane", normal=normal, distance=shape.distance * inv_length + normal @ translation, sdf=sdf)
    if shape.kind == "sphere":
        if not _is_uniform_abs(scale):
            raise ValueError(f"cannot apply a non-uniform bake_scale {scale.tolist()} to an implicit sphere")
        return Shape("sphere", center=rotation @ (scale * shape.center) + translation,
                     radius=shape.radius * abs(scale[0]), sdf=sdf)

    def transform(points):
        return (points * scale) @ rotation.T + translation

    mirrored = np.prod(np.sign(scale)) < 0
    triangles = shape.triangles[:, [0, 2, 1]] if mirrored else shape.triangles
    if shape.kind == "tri_mesh":
        return Shape("tri_mesh", vertices=transform(shape.vertices), triangles=triangles, sdf=sdf)
    tetrahedra = shape.tetrahedra[:, [0, 2, 1, 3]] if mirrored else shape.tetrahedra
    return Shape("tet_mesh", vertices=transform(shape.vertices), triangles=triangles,
                 tet_vertices=transform(shape.tet_vertices), tetrahedra=tetrahedra, sdf=sdf)


# ---------------------------------------------------------------------------------------------- entry points


def _shape_from_trimesh(path: Path) -> Shape:
    import trimesh  # core dependency; imported here because it is slow to import

    try:
        mesh = trimesh.load(path, force="mesh")
    except (IndexError, ValueError, KeyError) as exc:  # trimesh's own errors name neither the file nor the problem
        raise ValueError(f"{path.name}: not a readable triangle mesh (a face index out of range or a malformed "
                         f"line?): {type(exc).__name__}: {exc}") from exc
    if not isinstance(mesh, trimesh.Trimesh) or len(mesh.faces) == 0:
        raise ValueError(f"{path.name}: no triangles could be read")
    mesh.merge_vertices()
    return create_tri_mesh_shape(np.asarray(mesh.vertices, dtype=np.float64), np.asarray(mesh.faces))


def load_shape_from_file(file_path, bake_scale=None, bake_transform=None) -> Shape:
    """Load a shape (see the module docstring for formats), then bake ``bake_scale`` (3,) and
    ``bake_transform`` (TransformRT) into it (`shapes.bake_shape`: scale first, then the transform)."""
    path = _as_path(file_path)
    kind = _suffix_kind(path)
    if not path.is_file():
        raise FileNotFoundError(f"shape file not found: {path}")
    if kind == "h5":
        shape = _shape_from_h5(path)
    elif kind == "trimesh":
        shape = _shape_from_trimesh(path)
    else:
        try:
            model = json.loads(path.read_text())
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path.name} is not valid JSON: {exc}") from exc
        if isinstance(model, dict) and "coordinates" in model:  # the reference's deprecated-layout test
            shape = _shape_from_deprecated(model)
        else:
            shape = shape_from_model_data(model)
    return bake_shape(shape, bake_scale, bake_transform)


def save_shape_to_file(shape: Shape, file_path) -> None:
    """Write a shape as ``.mochi.json`` (current ModelData layout) or ``.mochi.h5`` (reference HDF5 layout)."""
    if not isinstance(shape, Shape):
        raise TypeError(f"expected a Shape, got {type(shape).__name__}")
    path = _as_path(file_path)
    kind = _suffix_kind(path)
    if kind == "trimesh":
        raise ValueError(f"saving to {path.suffix} is not supported; use .mochi.json or .mochi.h5")
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "h5":
        _save_h5(shape, path)
    else:
        path.write_text(json.dumps(model_data_from_shape(shape)))
