#!/usr/bin/env bash
# Installs the Debian 12 packages attnc builds and tests with, when missing.
# Idempotent: with everything present it only checks and exits. Runs apt-get
# as root, or through sudo. Versions are pinned by package name (LLVM/MLIR 19,
# Halide 14) and checked after installing; see docs/toolchain.md.
set -euo pipefail

packages=(
  cmake ninja-build g++ pkg-config
  llvm-19-dev libmlir-19-dev mlir-19-tools clang-19 llvm-19-tools
  libclang-rt-19-dev
  libhalide14-0-dev
  nlohmann-json3-dev libgtest-dev libgmock-dev libbenchmark-dev
  libpthreadpool-dev libopenblas-dev libsqlite3-dev
  libonnx-dev libprotobuf-dev python3-onnx
  python3 python3-numpy
)

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null |
      grep -q "install ok installed"; then
    missing+=("$package")
  fi
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  if [[ $(id -u) -eq 0 ]]; then
    sudo=()
  elif command -v sudo >/dev/null; then
    sudo=(sudo)
  else
    echo "setup: need root or sudo to install: ${missing[*]}" >&2
    exit 1
  fi
  "${sudo[@]}" apt-get update -q
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -q \
    --no-install-recommends "${missing[@]}"
fi

version=$(/usr/lib/llvm-19/bin/llvm-config --version)
if [[ $version != 19.* ]]; then
  echo "setup: expected LLVM 19, found $version" >&2
  exit 1
fi
echo "setup: toolchain ready (LLVM/MLIR $version, Halide 14)"
