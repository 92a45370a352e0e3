"""`ASSETS_PATH`: the folder of bundled shape files (``sim/assets``), as in the reference's examples.

Usage, as on the seed page: ``load_shape_from_file(ASSETS_PATH / "sphere/icosphere_3subdiv.1.mochi.json",
bake_scale=[0.2, 0.2, 0.2])``. The files ship as package data; ``sim/assets/make_assets.py`` regenerates them.
"""

from pathlib import Path

ASSETS_PATH: Path = Path(__file__).resolve().parent / "assets"

__all__ = ["ASSETS_PATH"]
