"""Run every reference script under the fp64 and the fp32 build and write reference_runs.json.

Usage (outside the product's environment; needs a venv with the released engine):

    PYENV_VERSION=3.12.1 python3.12 -m venv /work/refengine/venv
    /work/refengine/venv/bin/pip install superdex-physics==1.0.1
    /work/refengine/venv/bin/pip install --no-deps --target /work/refengine/fp64 superdex-physics-fp64==1.0.1
    /work/refengine/venv/bin/python tools/reference_runs/run_all.py \
        [--python /work/refengine/venv/bin/python] [--fp64-path /work/refengine/fp64] [--out PATH]

The fp64 build is selected with SUPERDEX_PRECISION=fp64 and PYTHONPATH=<fp64-path>; the fp32 build with
SUPERDEX_PRECISION=fp32 (no PYTHONPATH).  Each script prints one JSON document.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
SCRIPTS = {
    "mass_properties": "mass_properties.py",
    "free_fall": "free_fall.py",
    "spin": "spin.py",
    "velocity_pose_semantics": "velocity_pose_semantics.py",
    "static_kinematic": "static_kinematic.py",
    "external_forces": "external_forces.py",
    "errors": "errors.py",
    "defaults": "defaults.py",
    "contact_plane": "contact_plane.py",
    "actor_queries": "actor_queries.py",
    "example_rigid_bodies": "example_rigid_bodies.py",
}


def dumps(obj, indent=0) -> str:
    """JSON with dicts indented one space per level and lists of scalars kept on one line."""
    pad = " " * (indent + 1)
    if isinstance(obj, dict):
        if not obj:
            return "{}"
        items = [f"{pad}{json.dumps(k)}: {dumps(v, indent + 1)}" for k, v in obj.items()]
        return "{\n" + ",\n".join(items) + "\n" + " " * indent + "}"
    if isinstance(obj, list):
        if all(not isinstance(x, (dict, list)) for x in obj) or all(
                isinstance(x, list) and all(not isinstance(y, (dict, list)) for y in x) for x in obj) and len(obj) <= 12:
            return json.dumps(obj)
        items = [pad + dumps(v, indent + 1) for v in obj]
        return "[\n" + ",\n".join(items) + "\n" + " " * indent + "]"
    return json.dumps(obj)


def run(python: str, script: str, build: str, fp64_path: str) -> tuple[dict, float]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "SUPERDEX_PRECISION")}
    env["SUPERDEX_PRECISION"] = build
    if build == "fp64":
        env["PYTHONPATH"] = fp64_path
    t0 = time.time()
    p = subprocess.run([python, str(HERE / script)], cwd=HERE, env=env, capture_output=True, text=True, check=False)
    dt = time.time() - t0
    if p.returncode != 0:
        sys.stderr.write(p.stderr)
        raise SystemExit(f"{script} ({build}) failed with exit code {p.returncode}")
    return json.loads(p.stdout), dt


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--python", default="/work/refengine/venv/bin/python")
    ap.add_argument("--fp64-path", default="/work/refengine/fp64")
    ap.add_argument("--out", default=str(REPO / "tests" / "reference_data" / "reference_runs.json"))
    ap.add_argument("--only", nargs="*", default=None, help="subset of section names")
    args = ap.parse_args()

    ver = subprocess.run([args.python, "-c", "import sys, importlib.metadata as m; print(sys.version.split()[0]);"
                          "print(m.version('superdex-physics'))"], capture_output=True, text=True, check=True)
    py_ver, eng_ver = ver.stdout.split()
    out_path = Path(args.out)
    data = json.loads(out_path.read_text()) if (args.only and out_path.exists()) else {}
    data["meta"] = {
        "engine": f"superdex-physics=={eng_ver} (fp32) and superdex-physics-fp64=={eng_ver} (fp64)",
        "python": py_ver, "platform": platform.platform(), "num_worker_threads": 0,
        "generated_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "generator": "tools/reference_runs/run_all.py",
        "note": "Numbers recorded from the released engine; see tests/reference_data/README.md. "
                "Floats are Python repr (round-trip exact). NaN/Infinity appear as bare NaN/Infinity tokens "
                "(Python json reads them).",
        "timings_s": data.get("meta", {}).get("timings_s", {}),
    }
    for name, script in SCRIPTS.items():
        if args.only and name not in args.only:
            continue
        section = {"script": f"tools/reference_runs/{script}"}
        for build in ("fp64", "fp32"):
            res, dt = run(args.python, script, build, args.fp64_path)
            assert res.get("build") == build, (script, build, res.get("build"))
            section[build] = res
            data["meta"]["timings_s"][f"{name}/{build}"] = round(dt, 3)
            print(f"{name:26s} {build}: {dt:6.2f} s", flush=True)
        data[name] = section
    out_path.parent.mkdir(parents=True, exist_ok=True)
    text = dumps(data) + "\n"
    assert json.loads(text) == json.loads(json.dumps(data))  # lossless
    out_path.write_text(text)
    print(f"wrote {out_path} ({out_path.stat().st_size / 1e6:.2f} MB)")


if __name__ == "__main__":
    main()
