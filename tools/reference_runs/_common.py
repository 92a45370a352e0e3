"""Shared helpers for the reference-engine runs (documentation only).

These scripts are run with a separate virtualenv that has the released SuperDex Physics
engine installed (``superdex-physics==1.0.1`` and ``superdex-physics-fp64==1.0.1``); they are
never imported by the product or by its tests. See ``tests/reference_data/README.md``.

Every script prints one JSON document on stdout.  ``run_all.py`` runs each script under the
fp64 and the fp32 build and merges the outputs into ``tests/reference_data/reference_runs.json``.
"""

from __future__ import annotations

import json
import math
import sys

import superdex.physics as sdp

_LOGS: list[dict] = []
_INITIALIZED = False


def init():
    """Initialise the engine single-threaded and capture its log messages."""
    global _INITIALIZED
    if not _INITIALIZED:
        sdp.initialize(num_worker_threads=0)
        sdp.set_log_callback(_log_cb)
        _INITIALIZED = True
    return sdp


def _log_cb(channel, message, file, line):
    _LOGS.append({"channel": str(channel), "message": message.rstrip("\n")})


def take_logs() -> list[dict]:
    """Return and clear the log messages emitted since the last call."""
    out = list(_LOGS)
    _LOGS.clear()
    return out


def precision() -> str:
    return "fp64" if sdp.uses_double_precision() else "fp32"


def real_dtype():
    """numpy dtype of the engine's Real (spans of Real must use it)."""
    import numpy as np
    return np.float64 if sdp.uses_double_precision() else np.float32


def reals(values):
    import numpy as np
    return np.array(values, dtype=real_dtype())


def ints(values):
    import numpy as np
    return np.array(values, dtype=np.int32)


def vec(x) -> list[float]:
    if hasattr(x, "tolist"):
        x = x.tolist()
    return [float(v) for v in x]


def tf(t) -> dict:
    """TransformRT -> {'rotation_xyzw': [...], 'translation': [...]}"""
    return {"rotation_xyzw": vec(t.rotation), "translation": vec(t.translation)}


# --------------------------------------------------------------------------------------
# Box tri-mesh, built programmatically.  Vertex order: bit 0 -> +x, bit 1 -> +y, bit 2 -> +z
# (vertex i = (sx, sy, sz) with s = -1 if bit clear else +1, times the half extent).
# 12 triangles, counter-clockwise seen from outside (outward normals).
BOX_TRIANGLES = [
    (0, 2, 3), (0, 3, 1),  # -z face
    (4, 5, 7), (4, 7, 6),  # +z face
    (0, 1, 5), (0, 5, 4),  # -y face
    (2, 6, 7), (2, 7, 3),  # +y face
    (0, 4, 6), (0, 6, 2),  # -x face
    (1, 3, 7), (1, 7, 5),  # +x face
]


def quat_to_matrix(q):
    x, y, z, w = q
    return [
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
    ]


def quat_axis_angle(axis, angle):
    n = math.sqrt(sum(a * a for a in axis))
    s = math.sin(angle / 2) / n
    return [axis[0] * s, axis[1] * s, axis[2] * s, math.cos(angle / 2)]


def box_mesh(half_extents, offset=(0.0, 0.0, 0.0), rotation_xyzw=(0.0, 0.0, 0.0, 1.0)):
    """Return (vertices [[x,y,z]*8], triangles [[i,j,k]*12]); vertex = offset + R*(s*h)."""
    R = quat_to_matrix(rotation_xyzw)
    verts = []
    for i in range(8):
        p = [half_extents[k] * (1.0 if (i >> k) & 1 else -1.0) for k in range(3)]
        q = [sum(R[r][c] * p[c] for c in range(3)) + offset[r] for r in range(3)]
        verts.append(q)
    return verts, [list(t) for t in BOX_TRIANGLES]


def box_mesh_subdivided(half_extents, n):
    """Box with every face split into n x n quads (2 CCW triangles each), vertices shared (welded).

    Faces in the order -x,+x,-y,+y,-z,+z; on the face with normal s*e_a the parameters run along
    b=(a+1)%3, c=(a+2)%3 (swapped when s<0) so that triangles (00,10,11),(00,11,01) face outwards.
    n = 1 gives a 12-triangle box (different vertex/triangle order from box_mesh).
    """
    verts, tris, index = [], [], {}

    def vid(p):
        key = tuple(round(c, 12) for c in p)
        if key not in index:
            index[key] = len(verts)
            verts.append(list(p))
        return index[key]

    for a in range(3):
        for s in (-1, 1):
            b, c = (a + 1) % 3, (a + 2) % 3
            if s < 0:
                b, c = c, b
            for i in range(n):
                for j in range(n):
                    def P(ii, jj):
                        p = [0.0, 0.0, 0.0]
                        p[a] = s * half_extents[a]
                        p[b] = -half_extents[b] + 2 * half_extents[b] * ii / n
                        p[c] = -half_extents[c] + 2 * half_extents[c] * jj / n
                        return p
                    v00, v10, v11, v01 = vid(P(i, j)), vid(P(i + 1, j)), vid(P(i + 1, j + 1)), vid(P(i, j + 1))
                    tris += [[v00, v10, v11], [v00, v11, v01]]
    return verts, tris


def mesh_shape(verts, tris):
    return sdp.create_tri_mesh_shape([c for v in verts for c in v], [i for t in tris for i in t])


def mesh_json(verts, tris) -> dict:
    return {"vertices": [[float(c) for c in v] for v in verts], "triangles": [list(map(int, t)) for t in tris]}


# Standard shapes used by several scripts --------------------------------------------------
CUBE_HALF = (0.2, 0.2, 0.2)  # the 0.4 m cube
ANISO_HALF = (0.1, 0.2, 0.3)  # anisotropic box, centred, axis aligned (principal axes = local axes)


def solver_stats(scene) -> dict:
    s = scene.get_solver_stats()
    return {
        "convergence_status": str(s.convergence_status),
        "max_non_linear_iters": int(s.max_non_linear_iters),
        "max_line_search_iters": int(s.max_line_search_iters),
        "residual_norm": float(s.residual_norm),
    }


def solver_params(method=None, **nl):
    sp = sdp.SolverParams()
    if method is not None:
        sp.integration_method = method
    for k, v in nl.items():
        setattr(sp.non_linear_solver, k, v)
    return sp


def try_call(fn, *args, **kwargs) -> dict:
    """Call fn, record result or exception (type + message) and the log messages emitted."""
    take_logs()
    try:
        r = fn(*args, **kwargs)
        out = {"raised": False}
        if r is not None and isinstance(r, (int, float, str, bool)):
            out["result"] = r
    except Exception as e:  # noqa: BLE001 - we record whatever the engine raises
        out = {"raised": True, "exception_type": f"{type(e).__module__}.{type(e).__name__}",
               "exception_bases": [b.__name__ for b in type(e).__mro__[1:-1]],
               "message": str(e)}
    out["logs"] = take_logs()
    return out


def emit(data: dict) -> None:
    data = {"build": precision(), **data}
    json.dump(data, sys.stdout, indent=1)
    sys.stdout.write("\n")


def run_example(relative_path: str, verbose: bool = False) -> dict:
    """Run one of our examples on the released engine: its one ``import superdex_gym.sim as mochi`` line becomes
    ``import superdex.physics as mochi`` (the only difference, as the examples say); returns ``main``'s results."""
    from pathlib import Path

    example = Path(__file__).resolve().parents[2] / relative_path
    ours, theirs = "import superdex_gym.sim as mochi\n", "import superdex.physics as mochi\n"
    source = example.read_text()
    assert source.count(ours) == 1
    namespace = {"__file__": str(example), "__name__": "example"}
    exec(compile(source.replace(ours, theirs), str(example), "exec"), namespace)  # noqa: S102 (our own example)
    return namespace["main"](verbose=verbose)
