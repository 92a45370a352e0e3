"""Regenerate the bundled shape assets deterministically: ``python sim/assets/make_assets.py``.

``sphere/icosphere_3subdiv.1.mochi.json``: the reference example's asset name (TetGen ``.1`` suffix). A unit
icosphere with 3 subdivisions (642 surface vertices, 1280 faces), tetrahedralized as a fan from a centre vertex
(index 642, the last node): one tet ``(centre, a, b, c)`` per outward CCW surface face ``(a, b, c)``, which is
positively oriented. Written in the reference's DEPRECATED flat layout
``{"element_size": 4, "coordinates": [...], "connectivity": [...]}`` (digest 6.1), with coordinates in full
float64 precision (JSON floats round-trip exactly).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

ICOSPHERE_SUBDIVISIONS = 3


def icosphere_tet_mesh() -> tuple[np.ndarray, np.ndarray]:
    """(643, 3) nodes (surface, then the centre) and (1280, 4) tets of the unit icosphere fan."""
    from superdex_gym.sim.shapes import icosphere_mesh

    surface, faces = icosphere_mesh(ICOSPHERE_SUBDIVISIONS)
    nodes = np.vstack([surface, np.zeros((1, 3))])
    centre = np.full((faces.shape[0], 1), surface.shape[0], dtype=np.int64)
    return nodes, np.hstack([centre, faces])


def write_icosphere_asset(path: Path) -> None:
    nodes, tets = icosphere_tet_mesh()
    model = {"element_size": 4, "coordinates": nodes.reshape(-1).tolist(), "connectivity": tets.reshape(-1).tolist()}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(model) + "\n")


def main() -> None:
    here = Path(__file__).resolve().parent
    target = here / "sphere" / "icosphere_3subdiv.1.mochi.json"
    write_icosphere_asset(target)
    print(f"wrote {target}")


if __name__ == "__main__":
    main()
