#!/usr/bin/env bash
# Installs what the build needs, builds mixgraph and its tests, runs them all.
set -euo pipefail
cd "$(dirname "$0")/.."
# h5py reads our files in a test; the tutorials' tests train on Fashion-MNIST;
# the data-parallel tests (label mpi) run under OpenMPI's mpirun; the ONNX
# test reads a model the ONNX project's Python helper writes, and
# test_onnx_pytorch models PyTorch exports; python3-venv lets Debian's
# python3 make the optional environments below; doxygen builds the API
# reference in a test (docs.doxygen).
bash scripts/install_deps.sh python3-h5py dataset-fashion-mnist clang-format \
  libopenmpi-dev openmpi-bin python3-onnx python3-venv python3-torch \
  python3-torchvision doxygen
# Optional peers from PyPI (tests/utils/test_nnabla_interop.cpp runs NNabla
# itself): installed into .venv-nnabla when PyPI can be reached; without it
# those tests skip with a message. MIXGRAPH_SKIP_PEERS=1 leaves them out.
if [ "${MIXGRAPH_SKIP_PEERS:-0}" != 1 ] && [ ! -x .venv-nnabla/bin/python ]; then
  bash scripts/install_nnabla.sh ||
    echo "nnabla could not be installed: the NNabla interop tests will skip"
fi
# The same for onnxruntime (.venv-onnx): tests/utils/test_onnx.cpp runs our
# exported models in it.
if [ "${MIXGRAPH_SKIP_PEERS:-0}" != 1 ] && [ ! -x .venv-onnx/bin/python ]; then
  bash scripts/install_onnxruntime.sh ||
    echo "onnxruntime could not be installed: the onnxruntime checks will skip"
fi
build=${MIXGRAPH_TEST_BUILD_DIR:-build/tests-release}
# MIXGRAPH_CUDA=AUTO: where nvcc and cuDNN are installed the CUDA backend is
# built too (about a minute on 2 cores) and its tests skip without a GPU.
# MIXGRAPH_MPI=ON: OpenMPI is installed above, so a failed detection stops
# the configure step instead of leaving the mpi tests out unseen.
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DMIXGRAPH_CUDA=AUTO -DMIXGRAPH_MPI=ON >/dev/null
cmake --build "$build" -j "$(nproc)"
# Two tests at a time on 2 cores: OpenMP threads sleep at barriers instead of
# spinning against each other.
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}"
# Passive teams make the CPU functions keep loops under 1M elements on one
# thread (cpu::parallel_min); the tests' arrays are smaller, so they set the
# bound back to 32K elements to keep running the threaded loops.
export MIXGRAPH_PARALLEL_MIN="${MIXGRAPH_PARALLEL_MIN:-32768}"
(cd "$build" && ctest --output-on-failure -j "$(nproc)" --timeout 600)

# The same suite again under AddressSanitizer and UBSan (a Debug build of
# the library and the tests, CPU only; the tutorials and examples, which
# the release run covers, are left out). Any report fails the run (UBSan
# does not recover); tests/lsan_suppressions.txt lists the leaks that are
# HDF5's own. MIXGRAPH_SKIP_SANITIZERS=1 skips it. Each GoogleTest suite
# runs in one process (MIXGRAPH_TESTS_BY_SUITE, cmake/gtest_suites.cmake):
# an instrumented process takes 0.26 s or more to start and end, and one
# per test made this run 519 s instead of 122 s (AMD EPYC Zen 3, 2 cores,
# 2026-11-28).
if [ "${MIXGRAPH_SKIP_SANITIZERS:-0}" != 1 ]; then
  asan=${MIXGRAPH_ASAN_BUILD_DIR:-build/tests-asan}
  # -O0 -g1: line tables are all ASan's reports need, and with one process
  # per suite the build, not the run, is what takes the time: on that
  # machine -O0 built in 14.1 min and ran in 201 s, -O1 in 24.7 min and
  # 122 s (ASan advises -O1 for a faster run; the whole command must stay
  # under 30 minutes).
  cmake -S . -B "$asan" -G Ninja -DCMAKE_BUILD_TYPE=Debug \
    -DCMAKE_CXX_FLAGS_DEBUG="-O0 -g1" -DMIXGRAPH_SANITIZE=ON -DMIXGRAPH_CUDA=OFF -DMIXGRAPH_MPI=ON \
    -DMIXGRAPH_BUILD_EXAMPLES=OFF -DMIXGRAPH_BUILD_TUTORIALS=OFF \
    -DMIXGRAPH_TESTS_BY_SUITE=ON >/dev/null
  cmake --build "$asan" -j "$(nproc)"
  suppressions="$(pwd)/tests/lsan_suppressions.txt"
  (cd "$asan" &&
    LSAN_OPTIONS="suppressions=$suppressions" \
    UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --output-on-failure -j "$(nproc)" --timeout 900 -LE format)
fi
