#!/usr/bin/env bash
# Installs what the build needs, builds mixgraph and its tests, runs them all.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh python3-h5py  # h5py reads our files in a test
build=${MIXGRAPH_TEST_BUILD_DIR:-build/tests-release}
# MIXGRAPH_CUDA=AUTO: where nvcc and cuDNN are installed the CUDA backend is
# built too (about a minute on 2 cores) and its tests skip without a GPU.
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DMIXGRAPH_CUDA=AUTO >/dev/null
cmake --build "$build" -j "$(nproc)"
cd "$build"
ctest --output-on-failure -j "$(nproc)" --timeout 600
