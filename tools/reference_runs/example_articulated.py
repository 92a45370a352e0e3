"""Run examples/articulated_chain_and_arm.py on the released engine (documentation only).

The example imports ``superdex_gym.sim as mochi``; here that one line becomes ``import superdex.physics as mochi``
(the only difference) and its ``main(verbose=False)`` results are printed as JSON:

    cd tools/reference_runs && SUPERDEX_PRECISION=fp64 PYTHONPATH=/work/ref312-fp64 /work/ref312/bin/python \
        example_articulated.py > ../../tests/reference_data/example_articulated.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from _common import precision

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "articulated_chain_and_arm.py"
OURS, THEIRS = "import superdex_gym.sim as mochi\n", "import superdex.physics as mochi\n"

source = EXAMPLE.read_text()
assert source.count(OURS) == 1
namespace = {"__file__": str(EXAMPLE), "__name__": "example"}
exec(compile(source.replace(OURS, THEIRS), str(EXAMPLE), "exec"), namespace)  # noqa: S102 (our own example)
result = namespace["main"](verbose=False)
result["build"] = precision()
json.dump(result, sys.stdout, indent=1)
sys.stdout.write("\n")
