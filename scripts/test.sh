#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test (ctest labels: unit,
# lit, oracle, ...), then a short run of each fuzz target (scripts/fuzz.sh,
# ATTNC_TEST_FUZZ_SECONDS each, default 60; 0 skips them). Extra arguments go
# to ctest, e.g. `scripts/test.sh -L unit`.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/scripts/setup.sh"
"$root/scripts/build.sh"
cd "$root/build"
# attnc compile and run take their schedule from attnc tune's default
# database when one exists; the tests never read the user's.
export XDG_CACHE_HOME="$root/build/test-cache"
ctest --output-on-failure -j "$(nproc)" "$@"
fuzz_seconds=${ATTNC_TEST_FUZZ_SECONDS:-60}
if [[ $fuzz_seconds != 0 ]]; then
  "$root/scripts/fuzz.sh" all "$fuzz_seconds"
fi
