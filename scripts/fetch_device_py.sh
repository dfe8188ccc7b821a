#!/usr/bin/env bash
# scripts/fetch_device_py.sh [PYVER]: fills the git-ignored .device-py with
# the Python packages tests/gpu/torch_models.py and bench/ need on the GPU
# machine beyond its PyTorch (which has no package index): Captum and what
# Captum imports, onnx and onnxscript (torch.onnx.export), unpacked (no install step there; scripts/gpu_run.sh puts the
# directory on PYTHONPATH). PYVER (e.g. 3.12, the GPU machine's Python)
# also fetches matplotlib's binary wheels for that version, which Captum
# imports at load time. Run from a machine that reaches PyPI.
set -euo pipefail
cd "$(dirname "$0")/.."
pyver=${1:-}
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT
pip download -q --no-deps -d "$w" captum tqdm packaging onnxscript onnx-ir
if [ -n "$pyver" ]; then
    # binary wheels for the GPU machine's Python: matplotlib (Captum imports it),
    # onnx and ml_dtypes (torch.onnx.export, its dynamo exporter through onnxscript)
    pip download -q -d "$w" --only-binary=:all: --python-version "$pyver" \
        --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 \
        --platform manylinux_2_28_x86_64 matplotlib onnx ml_dtypes
    rm -f "$w"/numpy-*.whl # the GPU machine's numpy stays
fi
rm -rf .device-py
mkdir -p .device-py
for f in "$w"/*.whl; do
    python3 -m zipfile -e "$f" .device-py
done
du -sh .device-py
