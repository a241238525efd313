# Sourced by the scripts that make the optional Python environments: sets
# `python` to PYTHON, else pyenv's 3.10, else python3.10 on PATH (NNabla
# 1.39's newest wheels are for 3.10; MXNet and PyTorch run on it too).
python=${PYTHON:-}
if [ -z "$python" ]; then
  for p in "$HOME/.pyenv/versions/3.10"*/bin/python3.10 python3.10; do
    if command -v "$p" >/dev/null 2>&1; then python=$p; break; fi
  done
fi
if [ -z "$python" ]; then
  echo "$(basename "$0"): no Python 3.10 found (set PYTHON=...)" >&2
  exit 1
fi
