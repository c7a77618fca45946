// Configuration choice: constexpr, so it is tested on the host and can decide at compile time
// which kernels a fixed configuration instantiates. Host-only; compiles without nvcc.
#pragma once

#include "../kernel/tile_config.hpp"

namespace marlin::detail {

/// m_blocks (16-row mma blocks per CTA tile) for a problem of `m` rows (m >= 1): the smallest
/// tile that covers M up to 64 rows, 64 rows (and several 64-row groups) beyond.
constexpr int select_m_blocks(int m) {
  return m >= 16 * kMaxMBlocks ? kMaxMBlocks : (m + 15) / 16;
}

/// Number of tile_m-row groups that cover `m` rows.
constexpr int m_groups_for(int m, int m_blocks) { return (m + 16 * m_blocks - 1) / (16 * m_blocks); }

/// Whether configuration `config` tiles N exactly.
constexpr bool tile_divides(int config, int n) {
  return config >= 0 && config < kNumTileConfigs && n % kTileConfigs[config].tile_n() == 0;
}

/// Index into kTileConfigs for an (m, n) problem (n % 64 == 0). Small batches take the deep
/// 128x128 tile (more weight bytes in flight per CTA); from 17 rows on, the 256-wide tile
/// reuses each A fragment over more columns; N that only 64 divides takes 64x128.
constexpr int select_tile_config(int m, int n) {
  if (m > 16 && tile_divides(1, n)) return 1;
  if (tile_divides(0, n)) return 0;
  return 2;
}

/// Fewest rows of A for which the sm_90 warpgroup kernel is used (one full 128-row tile).
inline constexpr int kWgmmaMinRows = 128;

/// Whether a problem of `m` rows and `n` columns runs on the sm_90 warpgroup kernel (where
/// the device and the binary allow): enough rows for its 128-row tile, N a multiple of 256.
constexpr bool use_wgmma(int m, int n) { return m >= kWgmmaMinRows && n % kWgmmaTileN == 0; }

/// Cluster split (CTAs per slice, 0 for striped runs) to try first for `slices` slices of
/// `k_tiles` K tiles when `ctas_per_sm` CTAs fit each of `sm_count` SMs, at most `max_split`
/// CTAs per cluster. Measured on the H200 (bench/NOTES.md, change 3): the split pays at one CTA
/// per SM, and at two CTAs per SM only when the striped runs would share each slice among 5
/// or more CTAs; with 2-4 CTAs per slice the striped runs were faster by 3-16 %.
constexpr int select_split(int slices, int k_tiles, int ctas_per_sm, int sm_count,
                           int max_split) {
  int split = slices > 0 ? ctas_per_sm * sm_count / slices : 0;
  if (split > max_split) split = max_split;
  if (split > k_tiles) split = k_tiles;
  if (split < 2) return 0;
  if (ctas_per_sm >= 2 && split < 5) return 0;
  return split;
}

}  // namespace marlin::detail
