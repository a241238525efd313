#!/bin/bash
# On the GPU machine, from an extracted gpu_bundle.sh bundle:
#   run.sh RESULTS_DIR GTEST_FILTER EXECUTABLE...   (GTEST_FILTER may be "")
#   run.sh --env         prints the LD_LIBRARY_PATH the executables need
# Finds cuDNN, cuBLAS, NCCL and the CUDA runtime in the pip nvidia-*
# packages or /usr/local/cuda, says which libraries are missing, runs each
# executable (at most MG_TEST_TIMEOUT seconds, default 300) with a gtest XML
# report and log in RESULTS_DIR and prints the summary.
D=$(cd "$(dirname "$0")" && pwd)
PYLIBS=$(python3 - <<'PY' 2>/dev/null
import importlib, os
dirs = []
for m in ["nvidia.cudnn", "nvidia.cublas", "nvidia.cuda_runtime", "nvidia.nccl",
          "nvidia.cu13"]:
    try:
        for p in importlib.import_module(m).__path__:
            if os.path.isdir(os.path.join(p, "lib")):
                dirs.append(os.path.join(p, "lib"))
    except Exception:
        pass
print(":".join(dirs))
PY
)
export LD_LIBRARY_PATH=$D/lib:$PYLIBS:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
if [ "${1:-}" = "--env" ]; then
  echo "$LD_LIBRARY_PATH"
  exit 0
fi
OUTD=$1
FILTER=$2
shift 2
mkdir -p "$OUTD"
echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
for b in "$@"; do
  echo "== $b: libraries not found:"
  ldd "$D/bin/$b" | grep -i "not found"
done
for b in "$@"; do
  echo "===== $b"
  F=()
  [ -n "$FILTER" ] && F=("--gtest_filter=$FILTER")
  timeout "${MG_TEST_TIMEOUT:-300}" "$D/bin/$b" "${F[@]}" --gtest_output="xml:$OUTD/$b.xml" \
    >"$OUTD/$b.log" 2>&1
  echo "rc=$?"
  grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[==========\]" "$OUTD/$b.log" |
    head -60
done
