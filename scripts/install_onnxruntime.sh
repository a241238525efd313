#!/usr/bin/env bash
# Optional: onnxruntime from PyPI in a virtual environment (.venv-onnx), for
# the test that runs our exported ONNX models in it (tests/utils/
# test_onnx.cpp skips those checks with a message without it). Uses the
# python3 on PATH (pyenv's 3.11 here) or PYTHON=...
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
"$python" -m venv .venv-onnx
.venv-onnx/bin/pip install -q --upgrade pip
.venv-onnx/bin/pip install -q onnxruntime "numpy<2.3"
.venv-onnx/bin/python -c "import onnxruntime; print('onnxruntime', onnxruntime.__version__)"
