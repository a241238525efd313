#!/usr/bin/env bash
# Installs what the build needs (with Fashion-MNIST and gnuplot), builds
# mixgraph and runs the main job: a LeNet trained on Fashion-MNIST in float,
# in half with dynamic loss scaling and in bfloat16, 3 epochs each, then a
# table (accuracy, images/s, peak memory, skipped steps), curves and a plot
# in out/main_job. Interrupted? `bash scripts/run_main.sh --resume` continues
# from the checkpoints. Other flags go to the job (--help lists them).
#
# `bash scripts/run_main.sh --ranks 2` trains data-parallel on 2 processes
# started by mpirun (OpenMPI from Debian; --batch-size is per rank, so add
# --batch-size 64 for the single process's 128 images per step); the cores
# are shared out between the ranks. Runs on several machines use mpirun
# directly (docs/data-parallel.md).
set -euo pipefail
cd "$(dirname "$0")/.."
ranks=0
args=()
while [ $# -gt 0 ]; do
  if [ "$1" = "--ranks" ]; then
    ranks=${2:?--ranks needs a number of processes}
    shift 2
  else
    args+=("$1")
    shift
  fi
done
extra=()
[ "$ranks" -gt 0 ] && extra=(libopenmpi-dev openmpi-bin)
bash scripts/install_deps.sh dataset-fashion-mnist gnuplot-nox "${extra[@]}"
build=${MIXGRAPH_MAIN_BUILD_DIR:-build/main-release}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DMIXGRAPH_BUILD_TESTS=OFF -DMIXGRAPH_CUDA=OFF >/dev/null
cmake --build "$build" -j "$(nproc)" --target main_job
# OpenMP threads that spin at barriers waste the cores when anything else
# runs on the machine (a 10x slowdown on a shared 2-core box); sleep instead.
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}"
if [ "$ranks" -gt 0 ]; then
  threads=$(( $(nproc) / ranks ))
  [ "$threads" -lt 1 ] && threads=1
  exec mpirun -np "$ranks" --oversubscribe --allow-run-as-root \
    -x OMP_NUM_THREADS="$threads" -x OMP_WAIT_POLICY \
    "$build/tutorials/main_job" --ranks "${args[@]}"
fi
exec "$build/tutorials/main_job" "${args[@]}"
