#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test (ctest labels: unit,
# lit, oracle). Extra arguments go to ctest, e.g. `scripts/test.sh -L unit`.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/scripts/setup.sh"
"$root/scripts/build.sh"
cd "$root/build"
# attnc compile and run take their schedule from attnc tune's default
# database when one exists; the tests never read the user's.
export XDG_CACHE_HOME="$root/build/test-cache"
ctest --output-on-failure -j "$(nproc)" "$@"
