#!/bin/bash
# Issue 37's GPU run, in one call on a GPU machine (CUDA 13 driver, PyTorch
# with its nvidia-* wheels, nothing of ours), ending inside 8 minutes:
#   1. the machine: GPU, driver, clocks, PyTorch;
#   2. every CUDA test and the CUDA harness (each function in float, half
#      and bfloat16 on the device against the CPU), and compute-sanitizer's
#      memcheck over the index kernels;
#   3. the main job on the GPU, one epoch each in cudnn:half,
#      cudnn:bfloat16 and cudnn:float;
#   4. the ResNet-18, GPT, U-Net and LSTM training steps of bench_models on
#      the GPU, interleaved with PyTorch's (float32, fp16 AMP, bf16
#      autocast) on the same GPU, with the host<->device copies of each step.
# Prepared here (tests/cuda/gpu_prepare.sh fills GPU_DIR with the bundle
# and Fashion-MNIST); on the device, from the repository's root:
#   bash tests/cuda/gpu_session.sh GPU_DIR RESULTS_DIR
# RESULTS_DIR gets session.log and results.tar.xz (test logs and XML, the
# main job's table and curves).
set -u
G=$(cd "$1" && pwd)
OUTD=$2
R=/tmp/mg_results
mkdir -p "$OUTD" "$R"
exec > >(tee "$OUTD/session.log") 2>&1
start=$SECONDS
stage() { echo; echo "##### $1 (at $((SECONDS - start)) s)"; }

stage "machine"
date -u
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,clocks.mem --format=csv
echo "cores: $(nproc)"
python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version())"
mkdir -p /tmp/b && tar -C /tmp/b -xJf "$G/bundle.tar.xz"
LD_LIBRARY_PATH=$(/tmp/b/run.sh --env)
export LD_LIBRARY_PATH
export OMP_WAIT_POLICY=passive

stage "CUDA tests"
MG_TEST_TIMEOUT=60 /tmp/b/run.sh "$R/tests" "" test_cuda_arrays \
  test_cuda_functions test_cuda_solvers test_context test_device \
  test_synced_array
stage "CUDA harness (cuda.*)"
MG_TEST_TIMEOUT=150 /tmp/b/run.sh "$R/tests" "*CudaHarness*" test_functions
grep -E "^\[  FAILED  \]" "$R"/tests/*.log | head -80
tar -C "$R" -cJf "$OUTD/results.tar.xz" .

stage "compute-sanitizer memcheck over the index kernels and BatchMatmul"
if command -v compute-sanitizer >/dev/null; then
  timeout 120 compute-sanitizer --tool memcheck --error-exitcode 3 \
    /tmp/b/bin/test_cuda_functions \
    --gtest_filter='*TrainingStep*:*BatchMatmul*:*Layout*:*Interpolate*:*Depthwise*' \
    2>&1 | tail -15
  echo "memcheck rc=${PIPESTATUS[0]}"
else
  echo "compute-sanitizer is not on PATH"
fi

stage "main job on the GPU (1 epoch each)"
timeout 120 /tmp/b/bin/main_job --backend cudnn --epochs 1 \
  --type-configs half,bfloat16,float --data-dir "$G/fashion-mnist" \
  --out-dir "$R/main_job" --checkpoint-every 0 --log-every 200
echo "main_job rc=$?"

stage "models on the GPU, ours and PyTorch's interleaved"
timeout 200 /tmp/b/bin/bench_models --backend cudnn --model resnet18,gpt,unet,lstm \
  --steps 20 --rounds 3 --warmup 3 --peers "env -u LD_LIBRARY_PATH python3" \
  --peers-script "$PWD/benchmarks/python_models.py"
echo "bench_models rc=$?"

stage "clocks after"
nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv
tar -C "$R" -cJf "$OUTD/results.tar.xz" .
stage "done"
