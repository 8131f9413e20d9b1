#!/usr/bin/env bash
# Runs the attention baselines and the kernels attnc compiles (method attnc)
# at the shapes the project's targets use and prints a markdown table
# (docs/benchmarks.md has the results and what they mean).
#
#   benchmarks/run_baseline.sh [--build-dir DIR] [--repeat R] [--jsonl FILE]
#
# Shapes: H=8 L=2048 D=64 (non-causal and causal), H=8 L=1024 D=128; each at 1
# and 2 threads, R (default 5) timed runs after a warm-up, the median
# reported. attention_baseline checks every method at a small size first, then
# runs each method in its own process, so each peak RSS is that method's.
# Builds build/bin/attention_baseline first (cmake --build DIR --target
# attention_baseline; not part of the default build) and needs python3
# (standard library only) for the table.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="$root/build"
repeat=5
jsonl=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build-dir) build_dir="$2"; shift 2 ;;
    --repeat) repeat="$2"; shift 2 ;;
    --jsonl) jsonl="$2"; shift 2 ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "run_baseline.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
done

bin="$build_dir/bin/attention_baseline"
if ! cmake --build "$build_dir" --target attention_baseline >&2; then
  echo "run_baseline.sh: building attention_baseline in $build_dir failed (configured? scripts/build.sh; OpenBLAS: libopenblas-dev)" >&2
  exit 1
fi
python=python3
command -v "$python" >/dev/null || python=/usr/bin/python3

if [[ -z "$jsonl" ]]; then
  jsonl="$(mktemp "${TMPDIR:-/tmp}/attention_baseline.XXXXXX.jsonl")"
fi
: > "$jsonl"

load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
start="$(date -u '+%Y-%m-%d %H:%M UTC')"
# shape: heads len dim causal-flag
shapes=("8 2048 64 " "8 2048 64 --causal" "8 1024 128 ")
for shape in "${shapes[@]}"; do
  read -r h l d causal <<<"$shape"
  for threads in 1 2; do
    echo "run_baseline.sh: H=$h L=$l D=$d ${causal:-non-causal} threads=$threads" >&2
    # shellcheck disable=SC2086
    "$bin" --heads "$h" --len "$l" --dim "$d" $causal --threads "$threads" \
      --repeat "$repeat" --json >> "$jsonl"
  done
done
load_after="$(cut -d' ' -f1-3 /proc/loadavg)"

cpu="$(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
flags="$(grep -m1 '^flags' /proc/cpuinfo)"
isa="AVX2"
[[ "$flags" == *avx512f* ]] && isa="AVX-512"
[[ "$flags" == *amx_tile* ]] && isa="$isa, AMX"

"$python" - "$jsonl" "$start" "$cpu ($isa; $(nproc) vCPUs)" "$load_before" "$load_after" "$repeat" <<'EOF'
import json, sys
path, start, cpu, load_before, load_after, repeat = sys.argv[1:]
rows, checks = [], []
for line in open(path):
    line = line.strip()
    if not line:
        continue
    r = json.loads(line)
    (checks if r["kind"] == "check" else rows).append(r)
blas = next((r["blas"] for r in rows if "blas" in r), "?")
sm = next((r["softmax_flags"] for r in rows if "softmax_flags" in r), "?")
print(f"Date: {start}. CPU: {cpu}. Load average before/after: {load_before} / {load_after}.")
print(f"BLAS: {blas}. Softmax built with `{sm}`. Median of {repeat} runs after one warm-up.")
print("GFLOP/s counts 4·L²·D flops per head, also for causal (the dense count). "
      "sgemm-only is not attention: unfused's two sgemms without the softmax, "
      "a measure of how fast the shared machine was during the run.")
print()
print("| H | L | D | mask | threads | method | median ms | GFLOP/s | min–max ms | peak RSS MiB |")
print("|---|---|---|---|---|---|---:|---:|---|---:|")
for r in rows:
    mask = "causal" if r["causal"] else "none"
    name = r["method"] + (" (calibration)" if r["method"] == "sgemm-only" else "")
    head = f'| {r["heads"]} | {r["len"]} | {r["dim"]} | {mask} | {r["threads"]} | {name} |'
    if r["status"] != "ok":
        print(f'{head} skipped ({r["reason"]}) | | | |')
        continue
    runs = "" if r["repeat"] == int(repeat) else f' ({r["repeat"]} runs)'
    print(f'{head} {r["median_ms"]:.1f} | {r["gflops"]:.1f} | '
          f'{r["min_ms"]:.1f}–{r["max_ms"]:.1f}{runs} | {r["peak_rss_kib"] / 1024:.1f} |')
print()
# The issue targets as ratios within this run: each attnc method against
# unfused (scalar expf) at the same shape and threads, and causal against
# non-causal at L=2048, D=64.
ok = {(r["heads"], r["len"], r["dim"], r["causal"], r["threads"], r["method"]): r["median_ms"]
      for r in rows if r["status"] == "ok"}
methods = [m for m in dict.fromkeys(r["method"] for r in rows) if m.startswith("attnc")]
for m in methods:
    parts = []
    for (h, l, d, c, t, name), ms in ok.items():
        if name != m or (h, l, d, c, t, "unfused") not in ok:
            continue
        parts.append(f'{l}/{d}{" causal" if c else ""} {t}T {ok[(h, l, d, c, t, "unfused")] / ms:.2f}×')
    for t in sorted({k[4] for k in ok}):
        a, b = ok.get((8, 2048, 64, False, t, m)), ok.get((8, 2048, 64, True, t, m))
        if a and b:
            parts.append(f"causal vs non-causal {t}T {a / b:.2f}×")
    if parts:
        print(f"{m} vs unfused: " + ", ".join(parts) + ".")
print()
bad = [c for c in checks if not c["ok"]]
worst = max((m["max_abs_diff_vs_f64"] for c in checks for m in c["methods"]), default=float("nan"))
worst_pair = max((m["max_abs_diff_vs_naive"] for c in checks for m in c["methods"]), default=float("nan"))
print(f"Check before timing ({len(checks)} runs, H={checks[0]['heads']} L={checks[0]['len']}, "
      f"each shape's D and mask): max |diff| vs float64 {worst:.2g}, any method vs naive {worst_pair:.2g}"
      + (f"; {len(bad)} FAILED" if bad else "; all within 1e-4") + ".")
EOF
echo "(raw results: $jsonl)" >&2
