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
# Ahead of time: the object, header and manifest an application links.
run compile "$graph" -o "$out/kernel"
# The same kernel compiled and run in process, checked against the float64
# reference, then timed.
run run "$graph" --dim B=1 --dim S=512 --seed 1 --check --repeat 5 \
  --output-dir "$out"
echo "demo: kernel in $out/kernel, outputs in $out"
