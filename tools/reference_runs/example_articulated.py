"""Run examples/articulated_chain_and_arm.py on the released engine (documentation only).

The example imports ``superdex_gym.sim as mochi``; here that one line becomes ``import superdex.physics as mochi``
(the only difference) and its ``main(verbose=False)`` results are printed as JSON:

    cd tools/reference_runs && SUPERDEX_PRECISION=fp64 PYTHONPATH=/work/ref312-fp64 /work/ref312/bin/python \
        example_articulated.py > ../../tests/reference_data/example_articulated.json
"""

from __future__ import annotations

import json
import sys

from _common import precision, run_example

result = run_example("examples/articulated_chain_and_arm.py")
result["build"] = precision()
json.dump(result, sys.stdout, indent=1)
sys.stdout.write("\n")
