"""Run examples/rigid_bodies_queries.py on the released engine (documentation only; run_all.py runs it).

The example imports ``superdex_gym.sim as mochi``; here that one line becomes ``import superdex.physics as mochi``
(the only difference, as the example says) and its ``main(verbose=False)`` results are printed as JSON.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from _common import precision

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "rigid_bodies_queries.py"
OURS, THEIRS = "import superdex_gym.sim as mochi\n", "import superdex.physics as mochi\n"

source = EXAMPLE.read_text()
assert source.count(OURS) == 1
namespace = {"__file__": str(EXAMPLE), "__name__": "example"}
exec(compile(source.replace(OURS, THEIRS), str(EXAMPLE), "exec"), namespace)  # noqa: S102 (our own example)
result = namespace["main"](verbose=False)
result["cube_sdf_distances"] = [float(d) for d in result["cube_sdf_distances"]]
result["build"] = precision()
json.dump(result, sys.stdout, indent=1)
sys.stdout.write("\n")
