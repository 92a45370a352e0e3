"""Record the released engine's Python API surface (names and argument names) as JSON (documentation only).

Run with the reference engine's venv (never imported by the product or its tests):

    /work/ref_venv/bin/python tools/reference_runs/api_surface.py > tests/reference_data/api_surface.json

For every recorded namespace (the module, its classes that a rigid-body script touches, ``experimental`` and
``utils.scene_helpers``) it lists each public name with its kind: ``function`` / ``method`` with the argument
names read from the first line of its docstring (the nanobind signature, e.g.
``register_query(self, type: QueryType) -> QueryHandle``) or from ``inspect.signature`` for pure-Python
functions; ``field`` for data attributes (properties and plain values); ``class`` / ``module`` / ``enum member``.
``self`` is dropped. The ``tests/test_api_parity.py`` checks this data against ``superdex_gym.sim``.
"""

from __future__ import annotations

import enum
import inspect
import json
import re
import sys
import types

import superdex.physics as sdp
import superdex.physics.utils.scene_helpers as scene_helpers

sdp.initialize(num_worker_threads=0)
ex = sdp.experimental

# The classes a rigid-body script constructs or gets back (issue 18), by the name the module exports them under.
CLASSES = [
    "Scene", "Actor", "RigidActorParams", "ContactParams", "SolverParams", "NonLinearSolverParams",
    "LinearSolverParams", "GridSdfParams", "ContactPairParamsOverride", "ContactPoint", "SolverStats",
    "PerformanceStats", "Quaternion", "TransformRT", "QueryType", "ColliderType", "IntegrationMethod", "ActorType",
    "FileFormat", "Aabb", "Obb", "Box", "Plane", "Sphere", "Real3", "Real6", "MeshData", "MeshDataView",
    "SdfDistances", "QueryHandle", "SceneHandle", "StateHandle", "ShapeHandle", "GridSdfData", "Constraint",
]
EXPERIMENTAL_CLASSES = ["SleepParams", "PointCloudColliderParams", "NewtonEulerTerms"]

_SIG = re.compile(r"^\s*(\w+)\((.*)\)\s*(->.*)?$")


def _split_args(text: str) -> list[str]:
    """Top-level comma split of a signature's argument text (brackets nest)."""
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur)
    return out


def arg_names(obj) -> list[str] | None:
    doc = (getattr(obj, "__doc__", None) or "").strip()
    first = doc.split("\n", 1)[0] if doc else ""
    m = _SIG.match(first)
    if m:
        names = []
        for part in _split_args(m.group(2)):
            name = part.split(":")[0].split("=")[0].strip()
            if name in ("self", "/", "*") or not name:
                continue
            names.append(name.lstrip("*"))
        return names
    try:
        return [p for p in inspect.signature(obj).parameters if p != "self"]
    except (TypeError, ValueError):
        return None


def describe(owner, name: str) -> dict:
    raw = inspect.getattr_static(owner, name, None)
    value = getattr(owner, name)
    if isinstance(value, enum.Enum):
        return {"kind": "enum member", "value": int(value.value)}
    if isinstance(value, types.ModuleType):
        return {"kind": "module"}
    if inspect.isclass(value):
        return {"kind": "class"}
    if isinstance(raw, property) or type(raw).__name__ in ("nb_property", "getset_descriptor", "property"):
        return {"kind": "field"}
    if callable(value):
        kind = "method" if inspect.isclass(owner) else "function"
        return {"kind": kind, "args": arg_names(value)}
    return {"kind": "field"}


def surface(owner) -> dict:
    names = sorted(n for n in dir(owner) if not n.startswith("_"))
    if inspect.isclass(owner) and issubclass(owner, enum.Enum):
        return {n: {"kind": "enum member", "value": int(owner[n].value)} for n in owner.__members__}
    return {n: describe(owner, n) for n in names}


def main() -> None:
    data = {
        "meta": {
            "engine": "superdex-physics 1.0.1 (fp32 build)",
            "python": sys.version.split()[0],
            "how": "tools/reference_runs/api_surface.py: dir() of each namespace; argument names from the first "
                   "docstring line (nanobind signature) or inspect.signature",
        },
        "module": surface(sdp),
        "experimental": surface(ex),
        "utils.scene_helpers": {n: describe(scene_helpers, n) for n in ("create_ground_plane", "find_actor")},
    }
    for cls in CLASSES:
        data[cls] = surface(getattr(sdp, cls))
    for cls in EXPERIMENTAL_CLASSES:
        data[f"experimental.{cls}"] = surface(getattr(ex, cls))
    json.dump(data, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
