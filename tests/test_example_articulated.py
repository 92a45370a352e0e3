"""examples/articulated_chain_and_arm.py runs here and ends where the released engine's run of the same file ends
(reference_data/example_articulated.json: tools/reference_runs/example_articulated.py swaps the one import)."""

import json
import runpy
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "articulated_chain_and_arm.py"
REF = json.loads((ROOT / "tests" / "reference_data" / "example_articulated.json").read_text())


def test_the_example_switches_engines_with_one_import():
    source = EXAMPLE.read_text()
    assert source.count("import superdex_gym.sim as mochi\n") == 1
    assert source.count("superdex_gym") == 1  # nothing else of ours: the import is the only difference


def test_the_example_runs_and_matches_the_released_engine(capsys):
    ours = runpy.run_path(str(EXAMPLE), run_name="example")["main"](verbose=True)
    printed = capsys.readouterr().out.splitlines()
    assert len(printed) == 6 and all("table force on the chain" in line for line in printed)
    # converged solves on both engines: measured 2.3e-11 on the poses and 4.3e-10 N on the forces (2026-12-05); the
    # bounds leave room for other BLAS / libm round-off and stay far inside the 2e-3 with contact
    np.testing.assert_allclose(ours["chain_pose"], REF["chain_pose"], rtol=0, atol=1e-8)
    np.testing.assert_allclose(ours["arm_pose"], REF["arm_pose"], rtol=0, atol=1e-8)
    np.testing.assert_allclose(ours["chain_contact_force"], REF["chain_contact_force"], rtol=0, atol=1e-6)
    assert ours["chain_contact_force"][1] > 10.0  # the table holds the chain up
