#!/bin/bash
# Packs the CUDA test executables of a CUDA build for a GPU machine that has
# the CUDA runtime, cuDNN and cuBLAS (e.g. PyTorch's pip nvidia-* wheels) but
# not this machine's Debian libraries (oneDNN, HDF5, yaml-cpp, gtest):
# the executables, libmixgraph and every shared library they load except
# glibc's, libstdc++/libgcc and the CUDA ones (cudart, cuBLAS, cuDNN, NCCL
# and the driver), plus gpu_run.sh, into one
# tar.xz (about 17 MB).
#
#   tests/cuda/gpu_bundle.sh BUILD_DIR OUT_DIR [executables...]
#   (default: the cuda.* executables and the context tests; a name with a
#   slash is a path in BUILD_DIR, e.g. tutorials/main_job)
# On the GPU machine:
#   mkdir -p /tmp/b && tar -C /tmp/b -xJf OUT_DIR/bundle.tar.xz &&
#   /tmp/b/run.sh RESULTS_DIR "" test_cuda_arrays test_functions ...
set -euo pipefail
B=$(cd "$1" && pwd)
OUT=$2
shift 2
BINS=("$@")
if [ ${#BINS[@]} -eq 0 ]; then
  BINS=(test_cuda_arrays test_cuda_functions test_cuda_solvers test_functions
        test_context test_device test_synced_array)
fi
S=$(mktemp -d)
mkdir -p "$S/bin" "$S/lib"
path_of() { case $1 in */*) echo "$B/$1" ;; *) echo "$B/tests/$1" ;; esac; }
for b in "${BINS[@]}"; do cp "$(path_of "$b")" "$S/bin/"; done
cp -L "$B/libmixgraph.so.0" "$S/lib/"
for b in "${BINS[@]}"; do ldd "$(path_of "$b")"; done |
  awk '/=>/ {print $1, $3}' | sort -u | while read -r name path; do
  case $name in
    linux-vdso* | libc.so* | libm.so* | libdl.so* | libpthread.so* | \
      librt.so* | ld-linux* | libstdc++* | libgcc_s* | libcudart* | \
      libcudnn* | libcublas* | libnccl* | libcuda.so* | libmixgraph* | \
      libresolv*) continue ;;
  esac
  cp -L "$path" "$S/lib/$name"
done
cp "$(dirname "$0")/gpu_run.sh" "$S/run.sh"
mkdir -p "$OUT"
tar -C "$S" -cf - . | xz -T2 -6 >"$OUT/bundle.tar.xz"
rm -rf "$S"
ls -la "$OUT/bundle.tar.xz"
