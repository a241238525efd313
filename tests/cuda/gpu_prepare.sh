#!/bin/bash
# Prepares tests/cuda/gpu_session.sh's run here: builds the CUDA build's
# executables (sm_90), bundles them with the libraries the GPU machine lacks
# (gpu_bundle.sh) and copies Fashion-MNIST beside them, into GPU_DIR
# (default .gpu, which .git/info/exclude should name so that it travels
# only when carried).
#   bash tests/cuda/gpu_prepare.sh [BUILD_DIR [GPU_DIR]]
set -euo pipefail
cd "$(dirname "$0")/../.."
B=${1:-build/cuda}
G=${2:-.gpu}
BINS=(test_cuda_arrays test_cuda_functions test_cuda_solvers test_functions
      test_context test_device test_synced_array tutorials/main_job
      benchmarks/bench_models)
cmake -S . -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release -DMIXGRAPH_CUDA=ON \
  -DCMAKE_CUDA_ARCHITECTURES=90 -DMIXGRAPH_BUILD_TESTS=ON \
  -DMIXGRAPH_BUILD_TUTORIALS=ON -DMIXGRAPH_BUILD_BENCHMARKS=ON >/dev/null
ninja -C "$B" "${BINS[@]##*/}"
rm -rf "$G"
bash tests/cuda/gpu_bundle.sh "$B" "$G" "${BINS[@]}"
cp -r /usr/share/datasets/fashion-mnist "$G/"
du -sh "$G"
