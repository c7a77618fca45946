#!/usr/bin/env bash
# Per-CTA timeline of back-to-back calls (see timeline.cu) on a GPU host: instruments a copy of
# include/ into build/timeline, builds the driver for ARCH (default 90a) with FLAGS (e.g. the
# A/B macros of bench/NOTES.md), and runs it for each shape "m n k group".
#   scripts/timeline/run.sh "1 4096 4096 128" "16 8192 8192 -1"
#   FLAGS=-DMARLIN_TILES_PER_SYNC=1 scripts/timeline/run.sh "32 4096 4096 128"
#   scripts/timeline/run.sh "1 4096 4096 128 isolated"   (each call alone: see timeline.cu;
#                                                         "light" after a small kernel)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=$root/build/timeline
mkdir -p "$out"
python3 "$root/scripts/timeline/instrument.py" "$root/include" "$out/include"
# shellcheck disable=SC2086
nvcc -std=c++17 -O3 -gencode "arch=compute_${ARCH:-90a},code=sm_${ARCH:-90a}" \
  -I"$out/include" -Wno-deprecated-gpu-targets ${FLAGS:-} \
  "$root/scripts/timeline/timeline.cu" -lcublas -o "$out/timeline"
for shape in "$@"; do
  # shellcheck disable=SC2086
  "$out/timeline" $shape
done
