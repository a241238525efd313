#!/usr/bin/env bash
# Installs what the build needs, builds mixgraph and its tests, runs them all.
set -euo pipefail
cd "$(dirname "$0")/.."
# h5py reads our files in a test; the tutorials' tests train on Fashion-MNIST.
bash scripts/install_deps.sh python3-h5py dataset-fashion-mnist clang-format
build=${MIXGRAPH_TEST_BUILD_DIR:-build/tests-release}
# MIXGRAPH_CUDA=AUTO: where nvcc and cuDNN are installed the CUDA backend is
# built too (about a minute on 2 cores) and its tests skip without a GPU.
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DMIXGRAPH_CUDA=AUTO >/dev/null
cmake --build "$build" -j "$(nproc)"
cd "$build"
# Two tests at a time on 2 cores: OpenMP threads sleep at barriers instead of
# spinning against each other.
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}"
ctest --output-on-failure -j "$(nproc)" --timeout 600
