#!/bin/bash
# Issue 37's GPU run, in one call on a GPU machine (CUDA 13 driver, PyTorch
# with its nvidia-* wheels, nothing of ours), ending inside DEADLINE seconds
# (default 420; each stage gets what is left, the most important first):
#   1. the machine: GPU, driver, clocks, PyTorch;
#   2. every CUDA test and the CUDA harness (each function in float, half
#      and bfloat16 on the device against the CPU);
#   3. the main job on the GPU, one epoch each in cudnn:half,
#      cudnn:bfloat16 and cudnn:float;
#   4. the LeNet, ResNet-18, GPT, U-Net and LSTM training steps of
#      bench_models on the GPU, each model in its own process, interleaved
#      with PyTorch's (float32, fp16 AMP, bf16 autocast) on the same GPU,
#      with the host<->device copies and the host's share of each step;
#   5. compute-sanitizer's memcheck over the index kernels, the recurrent
#      driver, BatchMatmul and the fused batch normalization.
# Prepared here (tests/cuda/gpu_prepare.sh fills GPU_DIR with the bundle
# and Fashion-MNIST); on the device, from the repository's root:
#   bash tests/cuda/gpu_session.sh GPU_DIR RESULTS_DIR [STAGES]
# STAGES (default "tests,main,models,memcheck") picks stages for a rerun;
# MODELS (default "lenet,resnet18,gpt,unet,lstm") the models. RESULTS_DIR
# gets session.log and results.tar.xz (test logs and XML, the main job's
# table and curves).
set -u
G=$(cd "$1" && pwd)
OUTD=$2
STAGES=${3:-tests,main,models,memcheck}
MODELS=${MODELS:-lenet,resnet18,gpt,unet,lstm}
DEADLINE=${DEADLINE:-420}
R=/tmp/mg_results
mkdir -p "$OUTD" "$R"
exec > >(tee "$OUTD/session.log") 2>&1
start=$SECONDS
stage() { echo; echo "##### $1 (at $((SECONDS - start)) s)"; }
wanted() { [[ ",$STAGES," == *",$1,"* ]]; }
# The seconds a stage may take: at most $1, and never past the deadline
# (less 15 s to pack the results); 0 when none is left.
budget() {
  local left=$((DEADLINE - 15 - (SECONDS - start)))
  [ "$left" -lt 0 ] && left=0
  [ "$left" -lt "$1" ] && echo "$left" || echo "$1"
}
# Whether a stage of at least $1 seconds still fits; says so when not.
fits() {
  [ "$(budget "$1")" -ge "$1" ] && return 0
  echo "(skipped: less than $1 s left before the deadline of $DEADLINE s)"
  return 1
}
# The logs and XML, not the checkpoints (the files that come back are small).
pack() { tar -C "$R" --exclude="*.h5" -cJf "$OUTD/results.tar.xz" . 2>/dev/null; }

stage "machine"
date -u
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,clocks.mem --format=csv
echo "cores: $(nproc)"
python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version())"
mkdir -p /tmp/b && tar -C /tmp/b -xJf "$G/bundle.tar.xz"
LD_LIBRARY_PATH=$(/tmp/b/run.sh --env)
export LD_LIBRARY_PATH
export OMP_WAIT_POLICY=passive

if wanted tests; then
  stage "CUDA tests"
  MG_TEST_TIMEOUT=$(budget 60) /tmp/b/run.sh "$R/tests" "" test_cuda_arrays \
    test_cuda_functions test_cuda_solvers test_context test_device \
    test_synced_array
  stage "CUDA harness (cuda.*)"
  MG_TEST_TIMEOUT=$(budget 150) /tmp/b/run.sh "$R/tests" "*CudaHarness*" \
    test_functions
  echo "failed:"
  grep -hE "^\[  FAILED  \]" "$R"/tests/*.log | sort -u | head -80
  # The first lines of each failure's message.
  grep -h -B1 -A6 -E "Failure$" "$R"/tests/*.log | head -120
  pack
fi

if wanted main; then
  stage "main job on the GPU (1 epoch each)"
  fits 20 &&
  timeout "$(budget 90)" /tmp/b/bin/main_job --backend cudnn --epochs 1 \
    --type-configs half,bfloat16,float --data-dir "$G/fashion-mnist" \
    --out-dir "$R/main_job" --checkpoint-every 0 --log-every 200
  echo "main_job rc=$?"
  pack
fi

if wanted models; then
  stage "models on the GPU, ours and PyTorch's interleaved"
  for m in ${MODELS//,/ }; do
    echo "=== $m (at $((SECONDS - start)) s)"
    fits 20 || continue
    timeout "$(budget 60)" /tmp/b/bin/bench_models --backend cudnn --model "$m" \
      --steps 20 --rounds 3 --warmup 3 \
      --peers "env -u LD_LIBRARY_PATH python3" \
      --peers-script "$PWD/benchmarks/python_models.py"
    echo "bench_models $m rc=$?"
  done
  nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv
fi

if wanted memcheck; then
  stage "compute-sanitizer memcheck: index kernels, recurrent, BatchMatmul, fused BN"
  if ! fits 20; then
    :
  elif command -v compute-sanitizer >/dev/null; then
    timeout "$(budget 90)" compute-sanitizer --tool memcheck --error-exitcode 3 \
      /tmp/b/bin/test_cuda_functions \
      --gtest_filter='*TrainingStep*:*BatchMatmul*:*Layout*:*Interpolate*:*Depthwise*:*Recurrent*:*FusedBatch*' \
      2>&1 | tail -15
    echo "memcheck rc=${PIPESTATUS[0]}"
  else
    echo "compute-sanitizer is not on PATH"
  fi
fi

pack
stage "done"
