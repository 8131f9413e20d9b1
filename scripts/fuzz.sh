#!/usr/bin/env bash
# Fuzzes attnc's readers of untrusted input with libFuzzer (clang-19, ASan and
# UBSan), one target for SECONDS, or every target in turn.
#
#   scripts/fuzz.sh TARGET [SECONDS] [libFuzzer flags...]
#   scripts/fuzz.sh all [SECONDS]
#
# TARGET: graph (graph parser and validator), npy (the .npy reader and its
# dtype conversions), onnx (the ONNX importer), schedule (MLIR schedule
# files), runtime (attnrt_invoke's argument validation). SECONDS defaults to 60. The fuzzing build lives in build-fuzz/
# (configured on first use, only the fuzz targets built); each target's
# corpus grows in build-fuzz/corpus/TARGET across runs, seeded from the
# repository's examples and tests, and every input under
# tests/fuzz/regressions/TARGET (crashes found earlier) is run first. A crash
# stops the run with exit 1 and leaves the input in build-fuzz/crashes/TARGET/;
# once fixed, copy it into tests/fuzz/regressions/TARGET/. docs/fuzzing.md.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build="$root/build-fuzz"
targets=(graph npy onnx schedule runtime)

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }
if [[ $# -lt 1 || $1 == -h || $1 == --help ]]; then
  usage
  [[ $# -ge 1 ]] && exit 0 || exit 2
fi
target=$1
seconds=${2:-60}
shift $(($# >= 2 ? 2 : 1))
if ! [[ $seconds =~ ^[1-9][0-9]{0,6}$ ]]; then
  echo "fuzz.sh: SECONDS must be a whole number of seconds, got '$seconds'" >&2
  exit 2
fi
if [[ $target == all ]]; then
  for t in "${targets[@]}"; do "$0" "$t" "$seconds" "$@"; done
  exit 0
fi
if [[ ! " ${targets[*]} " == *" $target "* ]]; then
  echo "fuzz.sh: unknown target '$target' (one of: ${targets[*]}, all)" >&2
  exit 2
fi

# The seeds: every file of the kind the target reads that the repository has.
seeds() {
  case $1 in
    graph) find "$root/examples" "$root/tests/lit" "$root/benchmarks/graphs" -name '*.json' ;;
    npy) find "$root/tests" -name '*.npy' ;;
    onnx) find "$root/tests" -name '*.onnx' ;;
    schedule) find "$root/schedules/cpu" "$root/tests/lit" -name '*.json' ;;
    runtime) ;; # libFuzzer starts from an empty input.
  esac
}

if [[ ! -f $build/build.ninja ]]; then
  flags="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined"
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER=clang-19 -DCMAKE_CXX_COMPILER=clang++-19 \
    -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" \
    -DATTNC_FUZZ=ON -DATTNC_BUILD_BENCHMARKS=OFF >/dev/null
fi
cmake --build "$build" --target "fuzz_$target" >/dev/null

corpus="$build/corpus/$target"
crashes="$build/crashes/$target"
mkdir -p "$corpus" "$crashes"
if [[ -z $(ls -A "$corpus") ]]; then
  seeds "$target" | while read -r seed; do
    cp "$seed" "$corpus/seed-$(sha1sum "$seed" | cut -c1-16)"
  done
fi
regressions="$root/tests/fuzz/regressions/$target"
# The deliberately huge allocations of some inputs are refused, not errors.
export ASAN_OPTIONS=${ASAN_OPTIONS:-allocator_may_return_null=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
if [[ -d $regressions ]] && [[ -n $(ls -A "$regressions") ]]; then
  "$build/bin/fuzz_$target" "$regressions"/* >/dev/null 2>&1 ||
    { echo "fuzz.sh: $target: a regression input crashes again:" >&2
      "$build/bin/fuzz_$target" "$regressions"/* 2>&1 | tail -40 >&2; exit 1; }
fi
echo "fuzz.sh: $target for ${seconds}s (corpus $corpus)"
log="$build/fuzz-$target.log"
if ! "$build/bin/fuzz_$target" -max_total_time="$seconds" -timeout=20 \
    -rss_limit_mb=2048 -max_len=1048576 -artifact_prefix="$crashes/" \
    -print_final_stats=1 "$@" "$corpus" >"$log" 2>&1; then
  tail -60 "$log" >&2
  echo "fuzz.sh: $target: crash, input in $crashes/ (full log $log)" >&2
  exit 1
fi
# libFuzzer's closing statistics: executions and time.
grep -E "^stat::number_of_executed_units|^stat::peak_rss_mb|^#[0-9]+.*DONE" "$log" |
  sed "s/^/fuzz.sh: $target: /"
