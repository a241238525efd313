#!/usr/bin/env bash
# Installs what the build needs, builds mixgraph and its tests, runs them all.
set -euo pipefail
cd "$(dirname "$0")/.."
# h5py reads our files in a test; the tutorials' tests train on Fashion-MNIST.
bash scripts/install_deps.sh python3-h5py dataset-fashion-mnist
build=${MIXGRAPH_TEST_BUILD_DIR:-build/tests-release}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j "$(nproc)"
cd "$build"
ctest --output-on-failure -j "$(nproc)" --timeout 600
