#!/usr/bin/env bash
# Alternate the released engine's 5-box stack timing (tools/reference_runs/stack_speed.py, fp32 then fp64 build)
# with our `superdex-bench --skip-env --only stack`, for ROUNDS rounds: ref fp32, ours, ref fp64, ours, ...
# Both engines time the same step windows: 3 settling steps, then OURS_REPEATS runs of STEPS steps (the "resting"
# cases) or of STEPS / 10 steps (the "settling" cases, as superdex-bench's "settling" case), continuing one scene.
# A stack's cost per step falls ~3x from the first steps to rest, so rates over different windows do not compare.
# Records `uptime` before every run, keeps every JSON in OUT, and prints a summary (medians over the runs, the
# spread, the load). Documentation only; needs the reference venv of tests/reference_data/README.md.
#
#   tools/stack_speed_compare.sh [ROUNDS=4] [OUT=/tmp/stack_speed_<utc time>]
#
# Environment (defaults in brackets): REF_PY [/work/venv-ref/bin/python], REF_FP64 [/work/ref-fp64],
# OURS_BENCH [/work/venv-main/bin/superdex-bench], NUMBA_CACHE_DIR [/work/numba-main], OURS_REPEATS [3],
# STEPS [100], WORLDS ["1 256"].
set -euo pipefail
ROUNDS=${1:-4}
OUT=${2:-/tmp/stack_speed_$(date -u +%Y%m%dT%H%M%S)}
HERE=$(cd "$(dirname "$0")" && pwd)
SCRIPT="$HERE/reference_runs/stack_speed.py"
REF_PY=${REF_PY:-/work/venv-ref/bin/python}
REF_FP64=${REF_FP64:-/work/ref-fp64}
OURS_BENCH=${OURS_BENCH:-/work/venv-main/bin/superdex-bench}
export NUMBA_CACHE_DIR=${NUMBA_CACHE_DIR:-/work/numba-main}
OURS_REPEATS=${OURS_REPEATS:-3}
STEPS=${STEPS:-100}
SETTLE_RUN=$(( STEPS / 10 > 3 ? STEPS / 10 : 3 ))  # superdex-bench: max(3, steps // 10)
WORLDS=${WORLDS:-"1 256"}
mkdir -p "$OUT"
cd /tmp  # run ours from outside any checkout so the installed package is the one measured

log_load() { echo "$(date -u +%H:%M:%S) $1 $(uptime | sed 's/.*load average: //')" >> "$OUT/load.txt"; }

for r in $(seq 1 "$ROUNDS"); do
  log_load "r${r}_ref_fp32"
  SUPERDEX_PRECISION=fp32 "$REF_PY" "$SCRIPT" --worlds $WORLDS --steps "$STEPS" --repeats "$OURS_REPEATS" \
    --check-steps 300 > "$OUT/r${r}_ref_fp32.json"
  SUPERDEX_PRECISION=fp32 "$REF_PY" "$SCRIPT" --worlds $WORLDS --steps "$SETTLE_RUN" --repeats "$OURS_REPEATS" \
    > "$OUT/r${r}_ref_fp32_settling.json"
  log_load "r${r}_ours_a"
  "$OURS_BENCH" --repeats "$OURS_REPEATS" --skip-env --only stack --no-progress --steps "$STEPS" --json "$OUT/r${r}_ours_a.json" \
    > /dev/null
  log_load "r${r}_ref_fp64"
  SUPERDEX_PRECISION=fp64 PYTHONPATH="$REF_FP64" "$REF_PY" "$SCRIPT" --worlds $WORLDS --steps "$STEPS" \
    --repeats "$OURS_REPEATS" --check-steps 300 > "$OUT/r${r}_ref_fp64.json"
  SUPERDEX_PRECISION=fp64 PYTHONPATH="$REF_FP64" "$REF_PY" "$SCRIPT" --worlds $WORLDS --steps "$SETTLE_RUN" \
    --repeats "$OURS_REPEATS" > "$OUT/r${r}_ref_fp64_settling.json"
  log_load "r${r}_ours_b"
  "$OURS_BENCH" --repeats "$OURS_REPEATS" --skip-env --only stack --no-progress --steps "$STEPS" --json "$OUT/r${r}_ours_b.json" \
    > /dev/null
done
log_load "end"

python3 - "$OUT" <<'EOF'
import glob, json, os, statistics, sys
out = sys.argv[1]
load = {}
for line in open(os.path.join(out, "load.txt")):
    t, tag, rest = line.split(" ", 2)
    load[tag] = (t, rest.strip())
rows = {}  # (engine, layout, W) -> list of (round tag, median, min, max)
for path in sorted(glob.glob(os.path.join(out, "r*_*.json"))):
    tag = os.path.basename(path)[:-5]
    rnd, kind = tag.split("_", 1)
    d = json.load(open(path))
    if kind.startswith("ref"):
        build, _, window = kind.partition("_settling")
        for c in d["cases"]:
            layout = c["layout"] + ("/settling" if kind.endswith("_settling") else "")
            rows.setdefault((build, layout, c["worlds"]), []).append(
                (tag, c["world_steps_per_s_median"], c["world_steps_per_s_min"], c["world_steps_per_s_max"]))
    else:
        for name, c in d["cases"].items():
            w = int(name.rsplit("W=", 1)[1])
            layout = "set_num_worlds" + ("/settling" if "settling" in name else "")
            rows.setdefault(("ours", layout, w), []).append((tag, c["world-steps/s"], None, None))
print(f"{'engine':9} {'layout':15} {'W':>4} {'median of run medians':>22} {'min..max run medians':>22}  runs")
for key in sorted(rows, key=lambda k: (k[2], k[0], k[1])):
    meds = [m for _, m, _, _ in rows[key]]
    print(f"{key[0]:9} {key[1]:15} {key[2]:>4} {statistics.median(meds):>22,.0f} "
          f"{min(meds):>10,.0f}..{max(meds):<10,.0f}  {len(meds)}")
print("\nper run (world-steps/s; load 1/5/15 min before the run):")
for tag in sorted({t for v in rows.values() for t, *_ in v}, key=lambda t: (int(t.split('_')[0][1:]), t)):
    cells = [f"{k[0]}/{k[1]}/W{k[2]}={m:,.0f}" for k, v in sorted(rows.items(), key=lambda kv: (kv[0][2], kv[0][1]))
             for t, m, *_ in v if t == tag]
    print(f"{tag:12} load {load.get(tag, ('', '?'))[1]:18} " + "  ".join(cells))
hc = {}
for path in sorted(glob.glob(os.path.join(out, "r1_ref_fp*[0-9].json"))):
    d = json.load(open(path))
    hc[d["build"]] = d["height_check"]["box_y"]
    print(f"\nheights after 300 steps, released {d['build']}: {d['height_check']['box_y']}; sleep "
          f"{d['cases'][0]['sleep_params']}; threads {d['threads']}")
EOF
echo "JSON and load log in $OUT"
