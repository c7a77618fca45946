#!/usr/bin/env bash
# Runs tests/tools/gemm_once under compute-sanitizer over a grid of shapes and fails on any
# reported error. Usage: tests/sanitize.sh <path-to-gemm_once> [tool ...]
#   tools default to: memcheck racecheck synccheck initcheck
# Shapes: decode (M = 1; 1 57216 2048: striped runs of 27-28 tiles over slices of 16, so that a
# run spans two or three slices and ends a segment mid-run; 1 18944 2048: one CTA per slice, 148
# of them on a 132-SM GPU, bench/NOTES.md changes 86-87; 8 57344 2048: one CTA per slice of the
# 256-wide tile, change 88; 3 8192 2048: the 64-wide tile's split of 2, per-channel with K groups
# of 128 bytes of A, with group scales (8 8192 2048) CTA-wide, change 90; 4 28672 4096: whole
# slices per-channel with K groups of 128 bytes; 12 8192 8192 and 16 6144 4096: the 16-row
# kernel's warp-private pipeline, striped and split of 4; 12 28672 4096 g128: the same kernel with
# group scales on whole slices, bench/NOTES.md change 100; 16 28672 4096 -1: per-channel there with
# K groups of 128 bytes, change 101; 16 8192 4096 -1: the 64-wide tile's 16-row kernel with K groups
# of 128 bytes on a split of 2, change 103; 8 57344 8192 -1: the 256-wide tile's whole slices
# per-channel at 85 % of the CTAs, change 107), one full 16-row tile, the 32-row tile
# (six stages, one barrier per two tiles: 24 4096 4096, 31 6144 1024), odd M across several 64-row
# groups, large M (600: ten 64-row groups), both scale modes, a layer-sized K = N = 8192 (group
# 128), small shapes that split one slice over many CTAs, and (sm_90a builds on an sm_90 GPU) the
# warpgroup kernel where N is a multiple of 256 (shapes as M N K): its 32-row tile (24 16384 2048, 8
# stages), its 64-row tile (50 4096 8192), its 128-row tile 256 columns wide (120 16384 1024: 8 rows
# of padding) and 128 wide (100 8192 8192, 130 512 512, 600 1024 1024, 200 768 2048), its 256-row
# tile (600 4096 1024: 88 rows in the last tile), cluster splits of 3 summed through the cluster
# window (256 4352 4096: the 256-row tile, 34 slices; its last cluster barrier arrives relaxed,
# bench/NOTES.md change 48), cluster splits of 3 or more whose ranks push their vectors to the rank
# that sums them with asynchronous stores (the push variant, change 49: 128 4096 4096, the 128-row
# tile 128 wide, a split of 3 over 32 slices on a 132-SM GPU; 64 4096 14336, the 64-row tile, a
# split of 6), splits of 2, whose CTAs push half their accumulators into each other's shared memory
# (256 4096 4096: the 128-row tile; 256 8192 8192: the 256-row tile; change 36), and its hybrid
# partition (whole slices, then split ones: 1000 6144 2048 on a 132-SM GPU; hybrid runs since change
# 38: each CTA's split share follows its whole slices), the 128-row tile where wgmma_m_blocks gives
# the 256-row one (1024 4352 512: a hybrid with splits of 3), and striped runs of the 256-row tile
# that share slices through the workspace (256 10240 8192: 80 slices over 132 CTAs), of the 32-row
# tile (24 49152 4096: 192 slices over 132 CTAs, bench/NOTES.md change 28; 24 4096 14336: the 32-row
# tile beside the mma.sync kernel's split of 2, 16 slices over 128 CTAs), of the 64-row tile (50
# 10240 8192: 40 slices over 132 CTAs) and of the 128-row tile 256 wide (100 10240 8192), whose
# partials are summed in registers (change 34), and runs of whole slices (2048 4096 1024: 256 slices
# of the 256-row tile, two per CTA, whose next slice's copies land while the last is written through
# the output tile; change 37). Every warpgroup tile runs the warp-specialized kernel (tensor copies)
# wherever the driver encodes tensor maps.
set -euo pipefail
bin=${1:?usage: sanitize.sh <gemm_once> [tool ...]}
shift
tools=("$@")
[ ${#tools[@]} -gt 0 ] || tools=(memcheck racecheck synccheck initcheck)
shapes=(
  "1 8192 8192 128"
  "16 8192 8192 128"
  "100 8192 8192 128"
  "1 4096 4096 -1"
  "1 57216 2048 -1"
  "1 18944 2048 128"
  "8 57344 2048 128"
  "3 8192 2048 -1"
  "8 8192 2048 128"
  "4 28672 4096 -1"
  "12 8192 8192 128"
  "16 6144 4096 -1"
  "12 28672 4096 128"
  "16 28672 4096 -1"
  "16 8192 4096 -1"
  "8 57344 8192 -1"
  "24 4096 4096 128"
  "31 6144 1024 -1"
  "50 4096 8192 -1"
  "33 256 1024 128"
  "65 192 2048 -1"
  "130 512 512 128"
  "600 1024 1024 128"
  "600 4096 1024 128"
  "256 4352 4096 -1"
  "128 4096 4096 128"
  "64 4096 14336 -1"
  "200 768 2048 -1"
  "120 16384 1024 128"
  "24 16384 2048 128"
  "1024 4352 512 128"
  "1000 6144 2048 128"
  "256 10240 8192 128"
  "24 49152 4096 128"
  "24 4096 14336 128"
  "50 10240 8192 128"
  "100 10240 8192 -1"
  "256 4096 4096 128"
  "256 8192 8192 128"
  "2048 4096 1024 -1"
)
fail=0
for tool in "${tools[@]}"; do
  for shape in "${shapes[@]}"; do
    log=$(mktemp)
    # shellcheck disable=SC2086
    if compute-sanitizer --tool "$tool" --error-exitcode 99 "$bin" $shape >"$log" 2>&1; then
      printf '%-10s %-20s %s\n' "$tool" "$shape" "$(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$log" | tail -1)"
    else
      rc=$?
      if [ "$rc" -eq 77 ]; then echo "no GPU: sanitizer runs skipped"; rm -f "$log"; exit 0; fi
      printf '%-10s %-20s FAILED (exit %d)\n' "$tool" "$shape" "$rc"
      tail -30 "$log"
      fail=1
    fi
    rm -f "$log"
  done
done
exit $fail
