#!/bin/bash
# On the GPU machine, from an extracted gpu_bundle.sh bundle:
#   run.sh RESULTS_DIR GTEST_FILTER EXECUTABLE...   (GTEST_FILTER may be "")
# Finds cuDNN, cuBLAS and the CUDA runtime in the pip nvidia-* packages or
# /usr/local/cuda, says which libraries are missing, runs each executable
# with a gtest XML report and log in RESULTS_DIR and prints the summary.
D=$(cd "$(dirname "$0")" && pwd)
OUTD=$1
FILTER=$2
shift 2
mkdir -p "$OUTD"
PYLIBS=$(python3 - <<'PY' 2>/dev/null
import importlib, os
dirs = []
for m in ["nvidia.cudnn", "nvidia.cublas", "nvidia.cuda_runtime", "nvidia.cu13"]:
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
  timeout 300 "$D/bin/$b" "${F[@]}" --gtest_output="xml:$OUTD/$b.xml" \
    >"$OUTD/$b.log" 2>&1
  echo "rc=$?"
  grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[==========\]" "$OUTD/$b.log" |
    head -60
done
