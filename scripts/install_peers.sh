#!/usr/bin/env bash
# Optional: the Python peers of benchmarks/bench_training (--peers) in a
# virtual environment, .venv-peers: MXNet 1.9.1 (on numpy 1.23, which it
# needs) and PyTorch 2.x from PyPI. Never a build or test dependency.
#
#   bash scripts/install_peers.sh
#   build/benchmarks/bench_training --peers .venv-peers/bin/python
#
# PyTorch's Linux wheel is built for CUDA: it goes in with --no-deps, its
# pure-Python dependencies and the NVIDIA libraries it loads at import
# (the CPU is all the benchmark uses). Python 3.10 (pyenv's, or PYTHON=...)
# suits both. NNabla 1.39 (whose numpy requirement conflicts with MXNet's
# 1.23) has its own environment: scripts/install_nnabla.sh, --peers .venv-nnabla/bin/python.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/python310.sh
"$python" -m venv .venv-peers
pip=.venv-peers/bin/pip
$pip install -q --upgrade pip
$pip install -q "mxnet==1.9.1" "numpy==1.23.5"
$pip install -q --no-deps torch
$pip install -q filelock typing-extensions sympy networkx jinja2 fsspec \
  nvidia-cufile nvidia-cusparselt-cu13 nvidia-nvshmem-cu13 nvidia-nccl-cu13
.venv-peers/bin/python - <<'PY'
import mxnet, torch
print("mxnet", mxnet.__version__, "torch", torch.__version__)
assert torch.ones(2, 2).sum().item() == 4.0
PY
