#!/usr/bin/env bash
# Builds marlin_bench with the warp-specialized kernel running one role only (ws_roles.py: feed
# or compute) into build/diag-<mode>, from a copy of the tree, for ARCH (default 90a), and runs it
# with the given Google Benchmark arguments (MARLIN_BENCH_BATCHES applies as usual). Compare with
# the normal build's times in the same call.
#   MARLIN_BENCH_BATCHES=17,32 scripts/diag/run.sh feed --benchmark_filter='^gemm/k8192_n57344/'
set -euo pipefail
mode=${1:?usage: run.sh feed-or-compute [benchmark args...]}
shift
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=$root/build/diag-$mode
rm -rf "$out/src" && mkdir -p "$out/src"
(cd "$root" && tar --exclude=./build --exclude=./.git -cf - .) | tar -xf - -C "$out/src"
python3 "$root/scripts/diag/ws_roles.py" "$mode" "$out/src/include"
cmake -S "$out/src" -B "$out/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CUDA_ARCHITECTURES="${ARCH:-90a}" -DMARLIN_BUILD_TESTS=OFF \
  -DMARLIN_BUILD_EXAMPLES=OFF >/dev/null
cmake --build "$out/build" --target marlin_bench >/dev/null
"$out/build/bench/marlin_bench" "$@"
