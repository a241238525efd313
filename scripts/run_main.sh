#!/usr/bin/env bash
# Installs what the build needs (with Fashion-MNIST and gnuplot), builds
# mixgraph and runs the main job: a LeNet trained on Fashion-MNIST in float,
# in half with dynamic loss scaling and in bfloat16, 3 epochs each, then a
# table (accuracy, images/s, peak memory, skipped steps), curves and a plot
# in out/main_job. Interrupted? `bash scripts/run_main.sh --resume` continues
# from the checkpoints. Other flags go to the job (--help lists them).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh dataset-fashion-mnist gnuplot-nox
build=${MIXGRAPH_MAIN_BUILD_DIR:-build/main-release}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DMIXGRAPH_BUILD_TESTS=OFF -DMIXGRAPH_CUDA=OFF >/dev/null
cmake --build "$build" -j "$(nproc)" --target main_job
# OpenMP threads that spin at barriers waste the cores when anything else
# runs on the machine (a 10x slowdown on a shared 2-core box); sleep instead.
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}"
"$build/tutorials/main_job" "$@"
