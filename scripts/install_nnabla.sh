#!/usr/bin/env bash
# Optional: NNabla from PyPI in a virtual environment (.venv-nnabla), for the
# interop test that checks parameter files both ways (tests/utils/
# test_nnabla_interop.cpp skips with a message without it), the .nnp tests
# and the differential test of every function (tests/utils/
# test_nnabla_functions.cpp, `ctest -L nnabla`). nnabla 1.39 has
# wheels only up to Python 3.10: this uses pyenv's 3.10 (or PYTHON=...).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/python310.sh
"$python" -m venv .venv-nnabla
.venv-nnabla/bin/pip install -q --upgrade pip
.venv-nnabla/bin/pip install -q "nnabla==1.39.*" "numpy<2" h5py
.venv-nnabla/bin/python -c "import nnabla; print('nnabla', nnabla.__version__)"
