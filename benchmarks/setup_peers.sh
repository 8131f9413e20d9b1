#!/usr/bin/env bash
# Creates (or reuses) the Python environment benchmarks/speed_report.py runs
# in: a venv with numpy, torch, onnx, onnxruntime and matplotlib from PyPI.
# Only the benchmark needs it; the C++ build never does.
#
#   benchmarks/setup_peers.sh [--venv DIR] [--python PY] [--models]
#
#   --venv DIR    the venv (default build/venv-bench, git-ignored); an
#                 existing one is reused, e.g. --venv build/venv-torch
#   --python PY   the interpreter that creates a new venv (default python3)
#   --models      also transformers and onnxscript (the Hugging Face modules
#                 and the dynamo exporter benchmarks/model_report.py needs),
#                 at the versions tests/onnx/torch_export/requirements.txt pins
#
# Idempotent: each package whose import already works in the venv is skipped,
# so a second run installs nothing. PyPI's Linux torch wheel pulls in CUDA
# libraries (a few GB); for the CPU-only wheel install torch first:
#   python3 -m venv DIR
#   DIR/bin/pip install torch --index-url https://download.pytorch.org/whl/cpu
# Then: DIR/bin/python benchmarks/speed_report.py (docs/benchmarks.md).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/build/venv-bench"
python=python3
models=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --venv) venv="$2"; shift 2 ;;
    --python) python="$2"; shift 2 ;;
    --models) models=1; shift ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "setup_peers.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
done
[[ "$venv" = /* ]] || venv="$PWD/$venv"

if [[ -x "$venv/bin/python" ]]; then
  echo "setup_peers.sh: reusing the venv $venv"
else
  echo "setup_peers.sh: creating the venv $venv with $python"
  if ! "$python" -m venv "$venv"; then
    echo "setup_peers.sh: '$python -m venv' failed (Debian: apt-get install python3-venv)" >&2
    exit 1
  fi
fi

# Each of these imports under its PyPI name.
missing=()
for module in numpy torch onnx onnxruntime matplotlib; do
  if "$venv/bin/python" -c "import $module" 2>/dev/null; then
    echo "setup_peers.sh: $module: already installed"
  else
    missing+=("$module")
  fi
done
if [[ ${#missing[@]} -eq 0 ]]; then
  echo "setup_peers.sh: nothing to install"
else
  echo "setup_peers.sh: installing ${missing[*]} from PyPI into $venv"
  "$venv/bin/python" -m pip install --upgrade pip
  "$venv/bin/python" -m pip install "${missing[@]}"
  "$venv/bin/python" -c "import numpy, torch, onnx, onnxruntime, matplotlib"
fi
"$venv/bin/python" - <<'EOF'
import numpy, torch, onnx, onnxruntime, matplotlib
print(f"setup_peers.sh: ready: numpy {numpy.__version__}, torch {torch.__version__}, "
      f"onnx {onnx.__version__}, onnxruntime {onnxruntime.__version__}, "
      f"matplotlib {matplotlib.__version__}")
EOF
if ((models)); then
  pins="$root/tests/onnx/torch_export/requirements.txt"
  wanted=()
  for package in transformers onnxscript onnx-ir; do
    module=${package//-/_}
    if "$venv/bin/python" -c "import $module" 2>/dev/null; then
      echo "setup_peers.sh: $package: already installed"
    else
      wanted+=("$(grep -E "^$package==" "$pins")")
    fi
  done
  if [[ ${#wanted[@]} -gt 0 ]]; then
    echo "setup_peers.sh: installing ${wanted[*]} from PyPI into $venv"
    "$venv/bin/python" -m pip install "${wanted[@]}"
  fi
  "$venv/bin/python" -c "import transformers, onnxscript; print('setup_peers.sh: ready: transformers', transformers.__version__, 'onnxscript', onnxscript.__version__)"
  echo "setup_peers.sh: run $venv/bin/python $root/benchmarks/model_report.py"
fi
echo "setup_peers.sh: run $venv/bin/python $root/benchmarks/speed_report.py"
