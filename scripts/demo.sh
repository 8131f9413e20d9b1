#!/usr/bin/env bash
# From a fresh Debian 12 machine to a computed attention: installs what is
# missing, builds, then validates, explains and runs one example graph,
# printing its error against the float64 reference and its speed.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/scripts/setup.sh"
"$root/scripts/build.sh"

attnc="$root/build/bin/attnc"
graph="$root/examples/graphs/llama3_gqa_prefill.json"
out="$root/build/demo"
run() { echo "\$ attnc $*"; "$attnc" "$@"; echo; }

run check "$graph"
run explain "$graph"
# Backend: the float64 reference evaluator, until the MLIR and Halide
# backends land (see the status table in README.md).
run run "$graph" --dim B=1 --dim S=64 --seed 1 --check --repeat 3 \
  --output-dir "$out"
echo "demo: outputs in $out"
