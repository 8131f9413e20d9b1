#!/bin/bash
# The CUDA kernels on a GPU machine that cannot build attnc (no LLVM/MLIR
# there): prepare everything here, carry one folder, run it there.
#
#   scripts/gpu.sh prepare [DIR]   here: graphs, PTX and manifests of the
#                                  oracle's cases, the tensor-core cases and
#                                  the benchmark, plus libattnrt's driver
#                                  probe, into DIR (default build/gpu)
#   scripts/gpu.sh run [DIR] [OUT] [BENCH-ARGS...]
#                                  there (python3 with numpy, CuPy and
#                                  PyTorch): the probe, the oracle under
#                                  every key-split rule and through
#                                  libattnrt's launcher, the benchmark
#                                  (with BENCH-ARGS, e.g. --no-flex or
#                                  --split-sweep); logs and JSON into OUT
#                                  (default DIR/results)
#
# Both run from the repository root; DIR must be inside it for `run` to
# find the tests. See docs/design/gpu.md.
set -euo pipefail
cd "$(dirname "$0")/.."
verb=${1:-}
dir=${2:-build/gpu}
case "$verb" in
prepare)
  python=/usr/bin/python3
  [ -x build/bin/attnc ] || scripts/build.sh
  mkdir -p "$dir/lib"
  $python tests/gpu/cuda_oracle.py prepare --attnc build/bin/attnc --out "$dir/oracle"
  $python tests/gpu/cuda_oracle.py prepare --attnc build/bin/attnc --out "$dir/tc" \
    --matrix 0 --count 0 --tensor-core 60
  # The same cases for cuda-sm90a, whose staged kernel multiplies by wgmma.
  $python tests/gpu/cuda_oracle.py prepare --attnc build/bin/attnc --out "$dir/tc90a" \
    --matrix 0 --count 0 --tensor-core 60 --target cuda-sm90a
  rm -rf "$dir/bench"
  $python benchmarks/gpu/bench.py prepare --attnc build/bin/attnc --out "$dir/bench"
  cp build/bin/runtime-cuda-probe build/lib/libattnrt.so.2 "$dir/lib/"
  cp "$(ldconfig -p | awk '/libpthreadpool.so.0 /{print $NF; exit}')" "$dir/lib/"
  du -sh "$dir"
  ;;
run)
  out=${3:-$dir/results}
  shift $(($# < 3 ? $# : 3))
  mkdir -p "$out"
  export PYTHONUNBUFFERED=1
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
  LD_LIBRARY_PATH="$dir/lib" "$dir/lib/runtime-cuda-probe" || true
  status=0
  # The checks at once (the float64 oracle is CPU work; the machine has 16
  # cores), each into OUT/NAME.log and NAME.rc; the benchmark after them,
  # alone on the GPU. A hung kernel stops its check or the benchmark after
  # ATTNC_GPU_TIMEOUT seconds (rc 124), not the run.
  limit=${ATTNC_GPU_TIMEOUT:-600}
  check() { # name, dir, arguments
    local name=$1 cases=$2
    shift 2
    echo "$*" > "$out/$name.args"
    (rc=0
     OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2 LD_LIBRARY_PATH="$dir/lib" \
       timeout "$limit" python3 tests/gpu/cuda_oracle.py check "$cases" "$@" \
       --json "$out/$name.json" > "$out/$name.log" 2>&1 || rc=$?
     echo $rc > "$out/$name.rc") &
  }
  attnrt=(--launcher attnrt --attnrt "$dir/lib/libattnrt.so.2")
  names=(tc-mma tc-default tc-simt tc-split7 tc-attnrt tc90a-mma tc90a-split7 tc90a-attnrt)
  check tc-mma "$dir/tc" --split-rule 0,1
  check tc-default "$dir/tc"
  check tc-simt "$dir/tc" --split-rule 0,1 --no-tensor-core
  check tc-split7 "$dir/tc" --split-rule 1000000,7
  check tc-attnrt "$dir/tc" "${attnrt[@]}"
  check tc90a-mma "$dir/tc90a" --split-rule 0,1
  check tc90a-split7 "$dir/tc90a" --split-rule 1000000,7
  check tc90a-attnrt "$dir/tc90a" "${attnrt[@]}"
  # The oracle's cases, several hundred, in ORACLE_SHARDS shards each.
  shards=${ORACLE_SHARDS:-4}
  for ((i = 0; i < shards; ++i)); do
    check oracle-default-$i "$dir/oracle" --shard $i/$shards
    check oracle-split1-$i "$dir/oracle" --split-rule 1000000,1 --shard $i/$shards
    check oracle-attnrt-$i "$dir/oracle" "${attnrt[@]}" --shard $i/$shards
    names+=(oracle-default-$i oracle-split1-$i oracle-attnrt-$i)
  done
  wait
  for name in "${names[@]}"; do
    echo "$name ($(cat "$out/$name.args")): $(tail -1 "$out/$name.log")"
    if [ "$(cat "$out/$name.rc")" != 0 ]; then
      status=1
      grep -E "^FAIL|error" "$out/$name.log" | head -20 || true
    fi
  done
  LD_LIBRARY_PATH="$dir/lib" timeout "$limit" \
    python3 benchmarks/gpu/bench.py run "$dir/bench" \
    --attnrt "$dir/lib/libattnrt.so.2" --json "$out/bench.json" "$@" \
    > "$out/bench.log" 2>&1 || status=1
  grep '^{' "$out/bench.log" | python3 -c '
import json, sys
for line in sys.stdin:
    r = json.loads(line)
    rate = ("%.0f TFLOP/s" % r["attnc_TFLOPs"]) if "attnc_TFLOPs" in r else ("%.0f GB/s" % r["attnc_GBps"])
    print("%-26s %-11s %9.3f ms (libattnrt %s ms)  %s  fastest %s: %.2fx" % (r["shape"], r["kernel"],
          r["attnc_ms"], "%.3f" % r["attnrt_ms"] if "attnrt_ms" in r else "-", rate,
          r.get("fastest_peer"), r.get("ratio", 0)))
    if "attnc_cuda-sm90a_ms" in r:
        print("%-26s %-11s %9.3f ms (err %.1e)  fastest %s: %.2fx" % ("", "sm90a",
              r["attnc_cuda-sm90a_ms"], r.get("cuda-sm90a_rel_err_vs_torch", -1),
              r.get("fastest_peer"), r.get("cuda-sm90a_ratio", 0)))
    if "split_sweep_best" in r:
        print("    best key-split rule (warps,keys: splits, ms):", r["split_sweep_best"])' || true
  exit $status
  ;;
*)
  sed -n '2,19p' "$0"
  exit 2
  ;;
esac
