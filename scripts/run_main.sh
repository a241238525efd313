#!/usr/bin/env bash
# Installs what the build needs, builds mixgraph and runs the main job: a
# small MLP trained in cpu:half next to cpu:float.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
build=${MIXGRAPH_MAIN_BUILD_DIR:-build/main-release}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DMIXGRAPH_BUILD_TESTS=OFF >/dev/null
cmake --build "$build" -j "$(nproc)" --target mlp_mixed_precision
"$build/examples/mlp_mixed_precision" "$@"
