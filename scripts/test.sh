#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test (ctest labels: unit,
# lit, oracle, ...), then a short run of each fuzz target (scripts/fuzz.sh,
# ATTNC_TEST_FUZZ_SECONDS each, default 30; 0 skips them). Extra arguments go
# to ctest, e.g. `scripts/test.sh -L unit`.
#
#   scripts/test.sh --sanitize [ctest arguments]
#
# builds everything with AddressSanitizer and UndefinedBehaviorSanitizer into
# build-sanitize/ (RelWithDebInfo) and runs the unit (runtime included) and
# lit suites there, and the oracle tests labelled sanitize (docs/fuzzing.md,
# "Sanitizers"); any report fails the test that printed it.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
sanitize=0
if [[ ${1:-} == --sanitize ]]; then
  sanitize=1
  shift
fi
"$root/scripts/setup.sh"
# attnc compile and run take their schedule from attnc tune's default
# database when one exists; the tests never read the user's.
if ((sanitize)); then
  build="$root/build-sanitize"
  flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
  # -O1 and line tables only (-g1): half the compile time of -O2 -g, and
  # still file:line in every report.
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
    -DATTNC_BUILD_BENCHMARKS=OFF >/dev/null
  cmake --build "$build" -j "$(nproc)"
  export XDG_CACHE_HOME="$build/test-cache"
  # allow_user_poisoning=0: LLVM's allocator headers, compiled into attnc
  # with ASan, poison memory that Debian's uninstrumented libMLIR then uses
  # (false use-after-poison reports in the attribute uniquer). Tests that
  # ask for absurd sizes on purpose expect a null, not an ASan abort.
  export ASAN_OPTIONS=${ASAN_OPTIONS:-allow_user_poisoning=0:allocator_may_return_null=1:detect_leaks=1}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
  cd "$build"
  ctest --output-on-failure -j "$(nproc)" -L 'unit|lit|sanitize' "$@"
  exit
fi
"$root/scripts/build.sh"
cd "$root/build"
export XDG_CACHE_HOME="$root/build/test-cache"
ctest --output-on-failure -j "$(nproc)" "$@"
fuzz_seconds=${ATTNC_TEST_FUZZ_SECONDS:-30}
if [[ $fuzz_seconds != 0 ]]; then
  "$root/scripts/fuzz.sh" all "$fuzz_seconds"
fi
