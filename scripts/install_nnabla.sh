#!/usr/bin/env bash
# Optional: NNabla from PyPI in a virtual environment (.venv-nnabla), for the
# interop test that checks parameter files both ways (tests/utils/
# test_nnabla_interop.cpp skips with a message without it). nnabla 1.39 has
# wheels only up to Python 3.10: this uses pyenv's 3.10 (or PYTHON=...).
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-}
if [ -z "$python" ]; then
  for p in "$HOME/.pyenv/versions/3.10"*/bin/python3.10 python3.10; do
    if command -v "$p" >/dev/null 2>&1; then python=$p; break; fi
  done
fi
if [ -z "$python" ]; then
  echo "install_nnabla.sh: no Python 3.10 found (set PYTHON=...); nnabla needs <= 3.10" >&2
  exit 1
fi
"$python" -m venv .venv-nnabla
.venv-nnabla/bin/pip install -q --upgrade pip
.venv-nnabla/bin/pip install -q "nnabla==1.39.*" "numpy<2" h5py
.venv-nnabla/bin/python -c "import nnabla; print('nnabla', nnabla.__version__)"
