"""Run examples/rigid_bodies_queries.py on the released engine (documentation only; run_all.py runs it).

The example imports ``superdex_gym.sim as mochi``; here that one line becomes ``import superdex.physics as mochi``
(the only difference, as the example says) and its ``main(verbose=False)`` results are printed as JSON.
"""

from __future__ import annotations

import json
import sys

from _common import precision, run_example

result = run_example("examples/rigid_bodies_queries.py")
result["cube_sdf_distances"] = [float(d) for d in result["cube_sdf_distances"]]
result["build"] = precision()
json.dump(result, sys.stdout, indent=1)
sys.stdout.write("\n")
