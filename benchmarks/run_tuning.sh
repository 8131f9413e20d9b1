#!/usr/bin/env bash
# Tunes the suite of benchmarks/tuning/shapes.txt with `attnc tune`, then
# times each shape's tuned kernel against the default in one run (pairs of
# `attnc run --no-tuning-db` and `--tuning-db DB`, interleaved) and prints a
# markdown table: medians, the median of the pairwise ratios of the runs'
# medians and of their fastest repetitions (what `attnc tune` ranks by),
# their geometric means (docs/tuning.md has the results). A shape whose
# tuned build has the default's machine code (the tuner kept the default)
# is not timed: its speedup is 1 by construction, where timing one object
# against itself would only measure the host's noise.
#
#   benchmarks/run_tuning.sh [--build-dir DIR] [--db PATH] [--budget 120s]
#                            [--backend mlir|halide] [--pairs N]
#                            [--measure-only] [--only NAME]
#
# --db defaults to build/tuning-suite.db (not the user's database).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="$root/build"
db=""
budget=120s
backend=mlir
pairs=5
measure_only=0
only=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build-dir) build_dir="$2"; shift 2 ;;
    --db) db="$2"; shift 2 ;;
    --budget) budget="$2"; shift 2 ;;
    --backend) backend="$2"; shift 2 ;;
    --pairs) pairs="$2"; shift 2 ;;
    --measure-only) measure_only=1; shift ;;
    --only) only="$2"; shift 2 ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "run_tuning.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
done
attnc="$build_dir/bin/attnc"
[[ -x "$attnc" ]] || { echo "run_tuning.sh: $attnc not found; run scripts/build.sh" >&2; exit 1; }
[[ -n "$db" ]] || db="$build_dir/tuning-suite.db"
cd "$root"
python=python3
command -v "$python" >/dev/null || python=/usr/bin/python3

times="$(mktemp "${TMPDIR:-/tmp}/attnc-tuning-suite.XXXXXX")"
scratch="$(mktemp -d "${TMPDIR:-/tmp}/attnc-tuning-objects.XXXXXX")"
trap 'rm -rf "$times" "$scratch"' EXIT

# Whether the tuned build of GRAPH at DIMS... has the default's machine code
# (the objects differ anyway: each embeds its manifest).
same_code() {
  local graph="$1"; shift
  rm -rf "$scratch/default" "$scratch/tuned"
  "$attnc" compile "$graph" --backend "$backend" --no-tuning-db -o "$scratch/default" >/dev/null 2>&1 &&
    "$attnc" compile "$graph" "$@" --backend "$backend" --tuning-db="$db" -o "$scratch/tuned" >/dev/null 2>&1 &&
    cmp -s <(objdump -d "$scratch"/default/*.o | tail -n +3) <(objdump -d "$scratch"/tuned/*.o | tail -n +3)
}
cpu="$(lscpu | sed -n 's/^Model name: *//p' | head -1)"
echo "# attnc tuning suite ($backend) on ${cpu:-an unknown CPU}, $(nproc) CPUs, budget $budget per shape" >&2

while read -r name graph dims; do
  [[ -z "$name" || "$name" == \#* ]] && continue
  [[ -n "$only" && "$name" != "$only" ]] && continue
  # shellcheck disable=SC2086
  if [[ $measure_only -eq 0 ]]; then
    echo "## tuning $name" >&2
    "$attnc" tune "$graph" $dims --backend "$backend" --db "$db" --budget "$budget" --threads 1 >&2
  fi
  # shellcheck disable=SC2086
  if same_code "$graph" $dims; then
    echo "$name same" >>"$times"
    continue
  fi
  for ((pair = 0; pair < pairs; ++pair)); do
    for mode in default tuned; do
      if [[ $mode == default ]]; then flag=--no-tuning-db; else flag="--tuning-db=$db"; fi
      # shellcheck disable=SC2086
      ms=$("$attnc" run "$graph" $dims --backend "$backend" $flag --threads 1 --repeat 7 --input-sets 3 2>/dev/null |
           sed -n 's/^\(median\|min\)_ms: //p' | tr '\n' ' ')
      echo "$name $mode $ms" >>"$times"
    done
  done
done < benchmarks/tuning/shapes.txt

"$python" - "$times" "$cpu" "$backend" <<'PY'
import math, statistics, sys
rows = {}
same, order = [], []
for line in open(sys.argv[1]):
    fields = line.split()
    if fields[0] not in order:
        order.append(fields[0])
    if fields[1:] == ["same"]:
        same.append(fields[0])
        continue
    name, mode, median_ms, min_ms = fields
    runs = rows.setdefault(name, {"default": [], "tuned": []})[mode]
    runs.append((float(median_ms), float(min_ms)))
print("CPU: %s; backend %s; 1 thread; `attnc run --repeat 7 --input-sets 3`, pairs interleaved" % (sys.argv[2], sys.argv[3]))
print()
print("| shape | default ms | tuned ms | speedup (median of pair ratios) | speedup, fastest runs |")
print("|---|---:|---:|---:|---:|")
speedups = {"median": [], "fastest": []}
for name in order:
    if name in same:
        print("| %s | | | 1 (the default kept: same machine code) | 1 |" % name)
        speedups["median"].append(1.0)
        speedups["fastest"].append(1.0)
        continue
    r = rows[name]
    pairs = list(zip(r["default"], r["tuned"]))
    by_median = statistics.median(d[0] / t[0] for d, t in pairs)
    by_fastest = statistics.median(d[1] / t[1] for d, t in pairs)
    speedups["median"].append(by_median)
    speedups["fastest"].append(by_fastest)
    print("| %s | %.3f | %.3f | %.3f | %.3f |" % (
        name, statistics.median(d[0] for d in r["default"]),
        statistics.median(t[0] for t in r["tuned"]), by_median, by_fastest))
def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values))
if speedups["median"]:
    print()
    for kind, values in speedups.items():
        print("geometric mean speedup by %s: %.3f over %d shapes (%d kept the default); slowest shape %.3f" %
              (kind, geomean(values), len(values), len(same), min(values)))
PY
