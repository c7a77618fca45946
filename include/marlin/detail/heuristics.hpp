// Configuration choice: constexpr, so it is tested on the host and can decide at compile time
// which kernels a fixed configuration instantiates. Host-only; compiles without nvcc.
#pragma once

#include "../kernel/tile_config.hpp"
#include "partition.hpp"

namespace marlin::detail {

/// m_blocks (16-row mma blocks per CTA tile) for a problem of `m` rows (m >= 1): the smallest
/// tile that covers M up to 64 rows, 64 rows (and several 64-row groups) beyond.
constexpr int select_m_blocks(int m) {
  return m >= 16 * kMaxMBlocks ? kMaxMBlocks : (m + 15) / 16;
}

/// Most rows of A for which the mma.sync path's 16-row tiles run their eight-row kernels.
inline constexpr int kEightRowsMaxRows = 8;

/// Whether a call of `m` rows whose mma.sync tile is `m_blocks` 16-row blocks runs the tile's
/// eight-row kernel (kernel::gemm_kernel's kEightRows: the weights as the mma's A operand, rows
/// 0-7 of A as its B operand, one mma per 16 columns and k16 where the 16-row form issues two,
/// half of whose rows are zeros). Measured on the H200 (bench/NOTES.md, change 84, run 243):
/// at M <= 8 x0.883-0.943 with group scales and x0.932-0.973 per-channel on the bench layers,
/// the largest layers gaining most (16384 x 16384 with group scales 43.99 -> 39.02 us at
/// M = 1), where the decode loop's mmas wait on the tensor pipe; at 9-16 rows two swapped mmas
/// per word are as many as the 16-row form's, and a run-time choice between one and two in one
/// kernel measured x1.04 slower at M = 16 (run 242).
constexpr bool use_eight_row_kernel(int m, int m_blocks) {
  return m_blocks == 1 && m <= kEightRowsMaxRows;
}

/// Number of tile_m-row groups that cover `m` rows.
constexpr int m_groups_for(int m, int m_blocks) {
  return (m + 16 * m_blocks - 1) / (16 * m_blocks);
}

/// Whether configuration `config` tiles N exactly.
constexpr bool tile_divides(int config, int n) {
  return config >= 0 && config < kNumTileConfigs && n % kTileConfigs[config].tile_n() == 0;
}

/// Index into kTileConfigs for an (m, n) problem (n % 64 == 0). The deep 128x128 tile keeps
/// more weight bytes in flight per CTA and gives twice the slices; the 256-wide tile reuses each
/// A fragment over more columns. Measured on the H200 (bench/NOTES.md, change 9): 128x128 is
/// faster at M <= 16 on every bench layer, at 17 <= M <= 64 on layers up to N = 10240 (by
/// 5-23 %) and beyond 64 rows up to N = 4096 (even at 6144); 256x64 on the wider layers (by
/// 3-10 %), from N = 16384 and 8192 respectively. N that only 64 divides takes 64x128. (At
/// M <= 16 make_plan may still take 64x128 where use_narrow_decode_tile or
/// use_narrow_decode_mid_split says so: changes 78-79.)
constexpr int select_tile_config(int m, int n) {
  const int wide_from_n = m <= 16 ? 0 : m <= 64 ? 16384 : 8192;  // 0: never
  if (wide_from_n > 0 && n >= wide_from_n && tile_divides(1, n)) return 1;
  if (tile_divides(0, n)) return 0;
  return 2;
}

/// Rows of A from which the sm_90 warpgroup kernel is used on every layer (its 128-row tile).
inline constexpr int kWgmmaAllLayersRows = 128;
/// Fewest rows of A for which the sm_90 warpgroup kernel's 64-row tile is used (on layers
/// larger than kWgmmaSmallLayer): 33 on every such layer since session 30 (bench/NOTES.md
/// change 67; until then 49 below 16384 columns, where at 33-48 rows the 64-row tile measured
/// x0.84-0.90 against the mma.sync kernel's split of 2 on 4096 x 6144 and 28672 x 8192, and
/// x0.98-0.99 on 8192 x 8192, run 167). Build with -DMARLIN_WGMMA_MIN_ROWS=n only to measure
/// other thresholds.
#ifndef MARLIN_WGMMA_MIN_ROWS
#define MARLIN_WGMMA_MIN_ROWS 33
#endif
inline constexpr int kWgmmaMinRows = MARLIN_WGMMA_MIN_ROWS;
/// Weights (K x N) up to which a layer keeps the mma.sync kernels below 65 rows, and below
/// which it keeps them up to kWgmmaAllLayersRows (wgmma_m_blocks).
inline constexpr long long kWgmmaSmallLayer = 4096LL * 4096;

/// Fewest rows of A for which the sm_90 warpgroup kernel takes its 256-row tile
/// (kWgmmaMBlocksTall, where it makes enough slices: wgmma_m_blocks); 0 never. Build with
/// -DMARLIN_WGMMA_TALL_MIN_ROWS=n only to measure other thresholds (bench/NOTES.md, change 18).
#ifndef MARLIN_WGMMA_TALL_MIN_ROWS
#define MARLIN_WGMMA_TALL_MIN_ROWS 129
#endif
inline constexpr int kWgmmaTallMinRows = MARLIN_WGMMA_TALL_MIN_ROWS;
static_assert(kWgmmaTallMinRows == 0 || kWgmmaTallMinRows > 16 * kWgmmaMBlocks,
              "the 256-row tile takes over from the 128-row tile");
/// Fewest slices (256 rows x 128 columns) for which the 256-row tile is used: with 32 (4096 x
/// 4096 and 14336 x 4096 at M = 192-256) it measured x1.04-1.35 slower than the 128-row tile.
inline constexpr int kWgmmaTallMinSlices = 33;

/// Columns from which 17-32 rows take the 32-row warpgroup tile (kWgmmaMBlocksTiny, on layers
/// larger than kWgmmaSmallLayer); 0 never. Build with -DMARLIN_WGMMA_TINY_MIN_N=n only to
/// measure other thresholds (bench/NOTES.md, change 19).
#ifndef MARLIN_WGMMA_TINY_MIN_N
#define MARLIN_WGMMA_TINY_MIN_N 16384
#endif
inline constexpr int kWgmmaTinyMinN = MARLIN_WGMMA_TINY_MIN_N;
/// Fewest rows for the 32-row warpgroup tile (below, the decode kernels).
inline constexpr int kWgmmaTinyMinRows = 17;

/// m_blocks of the sm_90 warpgroup tile for a problem of `m` x `n` x `k`, 0 for the mma.sync
/// kernels (which also run where the device or the binary has no wgmma). N must be a multiple
/// of 256. From kWgmmaTallMinRows rows, where it makes at least kWgmmaTallMinSlices slices:
/// the 256-row tile (always 128 columns wide; measured x0.94-0.97 against the 128-row tile
/// from M = 512, bench/NOTES.md change 18; make_plan takes the 128-row tile instead where
/// wgmma_rows_tile says so); from 128 rows: the 128-row tile. For 17-32 rows
/// on layers of at least kWgmmaTinyMinN columns: the 32-row tile (measured x0.78-0.86 on
/// 4096 x 28672 and x0.93-1.01 on 16384 x 16384 against the mma.sync kernel, bench/NOTES.md
/// change 19; warp-specialized, also x0.88-0.90 on 8192 x 57344, change 26). Below that: on
/// layers larger than kWgmmaSmallLayer, the 64-row tile from kWgmmaMinRows rows to 64; on
/// layers of at least kWgmmaSmallLayer, the 128-row tile for 65-127 (one tile streams the
/// weights once, where two 64-row tiles would stream them twice). Measured on the H200
/// (bench/NOTES.md, change 10): against the mma.sync kernels, faster by 3-48 % at M = 64 and
/// 96 on every bench layer but 4096 x 4096; at M = 48 faster on the three layers with
/// N >= 16384 (8-29 %) and 14336 x 4096, even or slower on the others (warp-specialized, the
/// 64-row tile has since measured faster at 33-48 rows on those too: changes 26, 64 and 67).
/// On 4096 x 4096, warp-specialized (change 29): the 128-row tile x0.84-0.93 at M = 80-127
/// (4096 x 4096 itself takes the smaller tiles below 65 rows through
/// wgmma_m_blocks_beside_split).
constexpr int wgmma_m_blocks(int m, int n, int k) {
  if (n % kWgmmaTileN != 0) return 0;
  const long long tall_slices =
      static_cast<long long>(n / kWgmmaNarrowTile.tile_n()) * m_groups_for(m, kWgmmaMBlocksTall);
  if (kWgmmaTallMinRows > 0 && m >= kWgmmaTallMinRows && tall_slices >= kWgmmaTallMinSlices) {
    return kWgmmaMBlocksTall;
  }
  if (m >= kWgmmaAllLayersRows) return kWgmmaMBlocks;
  const long long weights = static_cast<long long>(k) * n;
  if (kWgmmaTinyMinN > 0 && n >= kWgmmaTinyMinN && m >= kWgmmaTinyMinRows &&
      m <= 16 * kWgmmaMBlocksTiny && weights > kWgmmaSmallLayer) {
    return kWgmmaMBlocksTiny;
  }
  if (m < kWgmmaMinRows) return 0;
  if (m <= 16 * kWgmmaMBlocksSmall) return weights > kWgmmaSmallLayer ? kWgmmaMBlocksSmall : 0;
  return weights >= kWgmmaSmallLayer ? kWgmmaMBlocks : 0;
}

/// Whether the warpgroup tiles also run where the mma.sync kernel would not split each slice
/// over a cluster of 2 (wgmma_m_blocks_beside_split). Build with -DMARLIN_WGMMA_BESIDE_SPLIT=0
/// only to measure without (bench/NOTES.md).
#ifndef MARLIN_WGMMA_BESIDE_SPLIT
#define MARLIN_WGMMA_BESIDE_SPLIT 1
#endif
inline constexpr bool kWgmmaBesideSplit = MARLIN_WGMMA_BESIDE_SPLIT != 0;

/// m_blocks of the warpgroup tile that a problem of `m` x `n` x `k` may take where
/// wgmma_m_blocks gives 0, if wgmma_beats_mma_split prefers it to the mma.sync kernel's plan:
/// the 32-row tile for 17-32 rows, the 64-row tile for 33-64, on layers of at least
/// kWgmmaSmallLayer weights with N a multiple of 256; 0 otherwise. Since wgmma_m_blocks gives
/// the 64-row tile from 33 rows on every larger layer (change 67), that tile comes from here
/// only on layers of kWgmmaSmallLayer weights. Measured on the H200 (session 16 run 70,
/// bench/NOTES.md change 26): against the mma.sync kernel these tiles took ×0.93-0.975 on
/// 14336 × 4096 (mma.sync: a split of 3) and ×0.91-0.97 on 8192 × 10240 at 40-48 rows
/// (striped runs); session 21 (run 100, change 40) measured the 32-row tile faster on
/// 28672 × 8192 (wgmma_beats_mma_split). 4096 × 4096 itself (kWgmmaSmallLayer) was left out
/// until session 29 (run 163, bench/NOTES.md change 64): admitted, it took ×0.92-0.94 at
/// 17-32 rows and ×0.88-0.89 at 40-48; the 64-row tile at 49-64 rows there, against the
/// mma.sync kernel's split of 3, ×0.81-0.84 (session 30 run 167, change 66).
constexpr int wgmma_m_blocks_beside_split(int m, int n, int k) {
  if (!kWgmmaBesideSplit || n % kWgmmaTileN != 0 || m < kWgmmaTinyMinRows) return 0;
  if (static_cast<long long>(k) * n < kWgmmaSmallLayer || wgmma_m_blocks(m, n, k) != 0) return 0;
  if (m <= 16 * kWgmmaMBlocksTiny) return kWgmmaMBlocksTiny;
  return m <= 16 * kWgmmaMBlocksSmall ? kWgmmaMBlocksSmall : 0;
}

/// Weights (K x N) from which the 32-row warpgroup tile runs even where the mma.sync kernel's
/// plan is a cluster split of 2 (wgmma_beats_mma_split); 0, every layer that
/// wgmma_m_blocks_beside_split admits (at least kWgmmaSmallLayer). Measured on the H200:
/// session 21 (run 100, bench/NOTES.md change 40) put it at 2^27 (the tile x0.88-0.93 on
/// 28672 x 8192 at M = 24-32, x1.00-1.05 slower on 8192 x 8192); since the tile's whole trips
/// (change 62) it took x0.84-0.88 on 4096 x 6144 and x0.90-0.94 on 8192 x 8192 at M = 17-32
/// (session 29 run 162, change 63), so no layer keeps the split. Build with
/// -DMARLIN_WGMMA_TINY_BESIDE_SPLIT2_LAYER=n only to measure others.
#ifndef MARLIN_WGMMA_TINY_BESIDE_SPLIT2_LAYER
#define MARLIN_WGMMA_TINY_BESIDE_SPLIT2_LAYER 0
#endif
inline constexpr long long kWgmmaTinyBesideSplit2Layer = MARLIN_WGMMA_TINY_BESIDE_SPLIT2_LAYER;

/// Whether the warpgroup tile of `m_blocks` rows that wgmma_m_blocks_beside_split gives for a
/// layer of `weights` (K x N) runs instead of the mma.sync kernel whose plan would be a cluster
/// split of `mma_split` CTAs (0: striped runs): unless that is a split of 2, and then only the
/// 32-row tile on layers of at least kWgmmaTinyBesideSplit2Layer weights.
constexpr bool wgmma_beats_mma_split(int mma_split, int m_blocks, long long weights) {
  return mma_split != 2 ||
         (m_blocks == kWgmmaMBlocksTiny && weights >= kWgmmaTinyBesideSplit2Layer);
}

/// Policy for the width of the sm_90 warpgroup kernel's tile: 0, use_narrow_wgmma_tile's rule;
/// 1, the 128-column tile wherever the 128-row tile runs; 2, never. Build with
/// -DMARLIN_WGMMA_NARROW=1 or 2 only to measure the alternatives (bench/NOTES.md).
#ifndef MARLIN_WGMMA_NARROW
#define MARLIN_WGMMA_NARROW 0
#endif
inline constexpr int kWgmmaNarrow = MARLIN_WGMMA_NARROW;
/// Most 256-column slices (of 128 rows) for which the 128-row tile is made 128 columns wide:
/// 40 since session 31 (bench/NOTES.md change 69; runs 172-173, two passes each: 8192 x 10240
/// at M = 80-128, 40 wide slices striped, ×0.87-0.96 narrow; run 172 also measured 16384 x
/// 16384 with 64 ×1.02-1.06, 4096 x 28672 with 112 ×1.07-1.19 and 8192 x 57344 with 224
/// ×1.05-1.18 slower). Build with -DMARLIN_WGMMA_NARROW_MAX_SLICES=n only to measure others.
#ifndef MARLIN_WGMMA_NARROW_MAX_SLICES
#define MARLIN_WGMMA_NARROW_MAX_SLICES 40
#endif
inline constexpr int kWgmmaNarrowMaxSlices = MARLIN_WGMMA_NARROW_MAX_SLICES;

/// Whether a problem of `m` x `n` x `k` on the warpgroup kernel takes the 128-column tile
/// (kWgmmaNarrowTile) instead of the 256-column one: always with the 256-row tile (its only
/// width); with the 128-row tile, when the wide tiles make at most kWgmmaNarrowMaxSlices
/// slices. Measured on the H200 (bench/NOTES.md, changes 11 and 13): ×0.72-0.95 on 4096²,
/// 4096×6144, 8192² and 14336×4096 at M = 96-256 and ×0.85-0.95 on 28672×8192 at M = 96-128
/// (16-32 slices); above 32 slices ×0.92-1.25, slower in most cases (but 8192×10240's 40 since
/// session 31: kWgmmaNarrowMaxSlices); with the 64-row tile ×0.97-1.07.
constexpr bool use_narrow_wgmma_tile(int m, int n, int k) {
  const int m_blocks = wgmma_m_blocks(m, n, k);
  if (m_blocks == kWgmmaMBlocksTall) return true;
  if (m_blocks != kWgmmaMBlocks) return false;
  if (kWgmmaNarrow != 0) return kWgmmaNarrow == 1;
  const long long slices =
      static_cast<long long>(n / kWgmmaTileN) * m_groups_for(m, kWgmmaMBlocks);
  return slices <= kWgmmaNarrowMaxSlices;
}

/// Cluster split (CTAs per slice, 0 for striped runs) to try first for `slices` slices of
/// `k_tiles` K tiles when `ctas_per_sm` CTAs fit each of `sm_count` SMs, at most `max_split`
/// CTAs per cluster. Measured on the H200 (bench/NOTES.md, changes 3 and 15): the split pays
/// at one CTA per SM; at two CTAs per SM with 5 or more CTAs per slice, and with 2 (16384²,
/// M <= 16: x0.90-0.94, one K run per CTA instead of striped runs over two slices), but not
/// with 3 or 4 (8192², 8192 x 10240, 28672 x 8192: x1.06-1.19 against striped runs), which
/// `mid_splits` allows (the 64-wide decode tile's splits where use_narrow_decode_mid_split
/// takes them).
constexpr int select_split(int slices, int k_tiles, int ctas_per_sm, int sm_count,
                           int max_split, bool mid_splits = false) {
  int split = slices > 0 ? ctas_per_sm * sm_count / slices : 0;
  if (split > max_split) split = max_split;
  if (split > k_tiles) split = k_tiles;
  if (split < 2) return 0;
  if (!mid_splits && ctas_per_sm >= 2 && split > 2 && split < 5) return 0;
  return split;
}

/// The decode tile 64 columns wide (kTileConfigs[kNarrowDecodeConfig], 128 deep) that
/// use_narrow_decode_tile may take instead of 128 x 128.
inline constexpr int kNarrowDecodeConfig = 2;
static_assert(kTileConfigs[kNarrowDecodeConfig].tile_n() == 64 &&
                  kTileConfigs[kNarrowDecodeConfig].tile_k() == kTileConfigs[0].tile_k(),
              "the narrow decode tile is 64 wide and as deep as 128 x 128");
/// Most K tiles (of 128) per slice for which use_narrow_decode_tile's first rule holds:
/// measured faster to K = 5120 (x0.97-0.995 there), even at 6144 (x0.99-1.02), slower at 8192
/// (x1.01-1.05).
inline constexpr int kNarrowDecodeMaxKTiles = 40;
/// Fewest weights (K x N) for which use_narrow_decode_tile's second rule holds: below, the
/// call is mostly its fixed costs, which the narrow tile's extra K-warp reduction rounds add
/// to (K x N 4096 x 512 and 2048 x 1024, 2^21 weights: x0.92-1.05).
inline constexpr long long kNarrowDecodeMinWeights = 4096LL * 1024;

/// use_narrow_decode_tile's conditions on the 128-wide tile alone (the narrow tile's split is
/// worth planning only where they hold).
constexpr bool narrow_decode_candidate(int n, int k, int sm_count, int wide_split) {
  if (n % 128 != 0) return false;
  if (wide_split == 0) return k / 128 <= kNarrowDecodeMaxKTiles;
  return 4LL * (n / 128) * wide_split <= 3LL * sm_count &&
         static_cast<long long>(k) * n >= kNarrowDecodeMinWeights;
}

/// Whether a decode call (M <= 16, the mma.sync kernels' 16-row tile) of an `n` x `k` weight
/// takes the 64-wide tile instead of 128 x 128, given the cluster split each would run on a
/// device of `sm_count` SMs (select_split after the cluster capacity check, 0 for striped
/// runs): `wide_split` for the 128-wide tile's n / 128 slices, `narrow_split` for the narrow
/// tile's n / 64. Measured on the H200 (bench/NOTES.md, change 78), two cases:
/// - the wide tile would run striped runs over short slices (at most kNarrowDecodeMaxKTiles
///   K tiles) where the narrow one runs a cluster split: the workspace sums of striped runs
///   whose every CTA shares a slice, against an on-chip sum (K x N 2048 x 8192, 3072 x 8192,
///   4096 x 7168, 4096 x 8192, 5120 x 8192: x0.72-0.995);
/// - the wide tile's cluster split leaves at least a quarter of the SMs idle (slices x split
///   <= 3/4 of sm_count) on a layer of at least kNarrowDecodeMinWeights: twice the CTAs at
///   the same split (N = 1024 and 1536, K = 4096-16384: x0.77-0.98).
/// Elsewhere it measured slower or mixed: its loop moves fewer bytes per tile for the same
/// fixed steps (x1.00-1.34 on the bench layers, but for 4096 x 4096 with group scales,
/// x0.87-0.95: use_narrow_decode_mid_split), and its eight K-warp reduction rounds cost where
/// it only adds CTAs to a split that already covers the SMs (2048 x 2048, 4096 x 2048,
/// 8192 x 2048, 3072 x 3072, 8192 x 3072: x0.92-1.33).
constexpr bool use_narrow_decode_tile(int n, int k, int sm_count, int wide_split,
                                      int narrow_split) {
  return narrow_split >= 2 && narrow_decode_candidate(n, k, sm_count, wide_split);
}

/// Most K tiles (of 128) per slice for which narrow_decode_mid_candidate holds: with group
/// scales (N = 4096) K = 1024-4096 measured x0.77-0.93 and 4608 (36 K tiles) x0.88-0.97, 5120
/// x0.94-1.03 (slower at M <= 4), 6144 x0.98-1.05, 8192-14336 x1.02-1.19.
inline constexpr int kNarrowDecodeMidMaxKTiles = 36;
/// Fewest rows for which narrow_decode_mid_candidate holds per-channel: x0.86-0.97 at M = 16
/// (K = 1024-4096, N = 3584-4096), but at M = 8 x1.00-1.02 on 4096 x 4096 (x0.93-0.99 on the
/// others) and at M = 1-4 x1.00-1.05.
inline constexpr int kNarrowDecodeMidChannelMinRows = 9;
/// Fewest rows for which narrow_decode_mid_candidate holds with group scales; below them the
/// 128-wide tile's split measured faster: the 64-wide tile's split of 4 over as many CTAs as
/// the wide tile's 8 (3584 x 3584, 2048 x 3584 and 4096 x 3584) x0.98-1.03 at M = 1-4, and its
/// split of 3 over 192 CTAs against the wide tile's 6 over as many (K x N 1024-4608 x 4096)
/// x1.005-1.08 (run 209). use_narrow_decode_mid_split gives the measurements from 8 rows.
inline constexpr int kNarrowDecodeMidMinRows = 8;

/// Whether a decode call on an `n` x `k` weight whose 128-wide tile runs a cluster split of
/// `wide_split` ranks has short slices (at most kNarrowDecodeMidMaxKTiles K tiles) on which the
/// 64-wide tile's splits are worth planning: narrow_decode_mid_candidate from its rows,
/// use_narrow_decode_short_split below them.
constexpr bool narrow_decode_short_candidate(int n, int k, int wide_split) {
  return wide_split >= 2 && n % 128 == 0 && k / 128 <= kNarrowDecodeMidMaxKTiles;
}

/// Whether a decode call (M <= 16) of `m` rows on an `n` x `k` weight, whose 128-wide tile runs
/// a cluster split of `wide_split` ranks and which use_narrow_decode_tile did not move, plans
/// the 64-wide tile with select_split's splits of 3-4 allowed (`mid_splits`) to see whether
/// use_narrow_decode_mid_split moves it: short slices (at most kNarrowDecodeMidMaxKTiles K
/// tiles), from kNarrowDecodeMidMinRows rows with group scales, or per-channel from
/// kNarrowDecodeMidChannelMinRows.
constexpr bool narrow_decode_mid_candidate(int m, int n, int k, bool grouped, int wide_split) {
  return narrow_decode_short_candidate(n, k, wide_split) &&
         m >= (grouped ? kNarrowDecodeMidMinRows : kNarrowDecodeMidChannelMinRows);
}

/// Fewest rows for which use_narrow_decode_mid_split takes the 64-wide tile's split of 3: the
/// 128-wide tile's split of 6 over as many CTAs (192-216) measured x0.98-1.00 against it at
/// M = 8 and x0.985-1.01 at M = 10, even at 12 (x0.99-1.02) and slower from 14 (x1.00-1.03;
/// K x N 2048-4096 x 4096 and 4096 x 4608, run 215).
inline constexpr int kNarrowDecodeMidSplit3MinRows = 12;

/// Whether a narrow_decode_mid_candidate call of `m` rows takes the 64-wide tile, given the
/// cluster split it would run (planned with select_split's `mid_splits`, after the cluster
/// capacity check): a split of 4, or of 3 from kNarrowDecodeMidSplit3MinRows rows, where the
/// 128-wide tile runs 6-8 ranks. Fewer ranks sum each output in the cluster, and the gain grows
/// with M. Measured on the H200 (bench/NOTES.md, changes 79-80): 2048-4096 x 3584 (4 over 224
/// CTAs against the wide tile's 8 over 224) and 2048-4096 x 3840 (4 over 240 against 7 over
/// 210) x0.91-0.985 at M = 8-16 (run 213); 2048-4096 x 4096 and 4096 x 4608 (3 over 192 and
/// 216 against 6 over as many) x0.97-1.00 at M = 14-16 (runs 213 and 215; against the wide
/// tile's 7 over 224 before change 80, x0.77-0.95 at M = 8-16). N = 5120 and 6144 (wide splits
/// of 4-5) leave the narrow tile a split of 2 after the capacity check, which this rule does
/// not take.
constexpr bool use_narrow_decode_mid_split(int m, int narrow_split) {
  return narrow_split == 4 || (narrow_split == 3 && m >= kNarrowDecodeMidSplit3MinRows);
}

/// Whether a narrow_decode_short_candidate call over `k_tiles` K tiles takes the 64-wide tile's
/// split of `narrow_split` ranks instead of the 128-wide tile's `wide_split`: a split of 4
/// whose most loaded rank runs at most 1.6 times the K tiles of the wide tile's (its tiles are
/// half as wide). Measured on the H200 at M = 1-8 with change 93's reductions (bench/NOTES.md,
/// runs 278-279): N = 3840 (4 ranks of 2-9 against 7 of 2-6, ratio 1.0-1.6) x0.92-1.01 in both
/// scale modes at K = 1024-4608 (x0.954 in median); slower at a ratio of 2 (N = 4096: 3 ranks
/// of 8-12 against 6 of 4-6, x1.00-1.12; N = 3584 at K = 4096: 4 of 8 against 8 of 4,
/// x1.02-1.06 with group scales, x0.97-0.99 per-channel), but for the shortest slices
/// (N = 3584 at K = 2048, 4 of 4 against 8 of 2: x0.93-0.96) and N = 4096 at K = 2048 (6
/// against 3: x0.98-1.02), which it leaves out. Other narrow splits are left out: the narrow
/// tile's larger splits where the wide one already covers the SMs measured slower before
/// change 93 (2048 x 2048: see use_narrow_decode_tile).
constexpr bool use_narrow_decode_short_split(int k_tiles, int wide_split, int narrow_split) {
  if (narrow_split != 4 || wide_split < 2) return false;
  const int narrow_most = (k_tiles + narrow_split - 1) / narrow_split;
  const int wide_most = (k_tiles + wide_split - 1) / wide_split;
  return 5 * narrow_most <= 8 * wide_most;
}

/// Most K tiles (of 128) per slice on which decode_spare_clusters keeps a cluster free with
/// group scales: measured faster to K = 9216 (M = 1-16; K = 5120-8192: N = 3840 x0.85-0.99,
/// N = 4096 x0.91-0.97, run 213; K = 9216: N = 3840 x0.88-1.00, N = 4096 x0.983-0.989, run
/// 220). Longer slices measured slower with fewer ranks in median (K = 10240-14336, run 220:
/// N = 4096 x0.95-1.05, x1.014 in median, faster only at K = 12288; N = 3840 x1.01-1.08 at
/// M = 1-8, x0.96-1.06 at M = 16; 14336 x 4096 x1.03-1.10 in run 208).
inline constexpr int kDecodeSpareClusterMaxKTiles = 72;
/// The same per-channel: to K = 6144 (N = 4096 at K = 5120-6144 x0.95-1.015, x0.995 in median;
/// at K = 8192 x1.00-1.05, and x1.035-1.05 at M <= 8, run 213; at K = 9216-14336 x1.00-1.09,
/// run 220). N = 3840 alone would take it further (K = 8192-9216 x0.92-1.00, run 220).
inline constexpr int kDecodeSpareClusterChannelMaxKTiles = 48;

/// Clusters that a decode call's cluster split (the mma.sync kernels' 16-row tiles, `m_blocks`
/// 1) leaves free on the device beyond its slices', on slices of `k_tiles` K tiles: one on
/// short slices (at most kDecodeSpareClusterMaxKTiles with group scales, `grouped`, and
/// kDecodeSpareClusterChannelMaxKTiles per-channel), so that a split whose clusters would fill
/// the device's capacity for their size exactly runs one rank fewer; none otherwise. Measured
/// on the H200 (bench/NOTES.md, change 80), where two CTAs per SM fit 30 clusters of 8, 32 of
/// 7 and 39 of 6 (run 212): N = 3840 (30 slices) a split of 7 instead of 8 x0.86-0.93 at K =
/// 2048-4096 (run 213); N = 4096 (32 slices) 6 instead of 7 with group scales x0.81-0.90 at
/// K = 2048-4096 and M = 1-4 (run 212; what decode_mid_wide_split did until then), per-channel
/// x0.93-1.00 at M = 1-8 (run 213). Where a cluster stays free anyway the lower split is
/// slower: N = 3584 (28 of 30 clusters of 8) 7 against 8 x1.01-1.06 at K = 2048-4096 (but
/// x0.98-0.99 at K = 3584, run 211), N = 4608 (36 of 39 of 6) 5 against 6 x1.02-1.07 (run 212).
constexpr int decode_spare_clusters(int m_blocks, int k_tiles, bool grouped) {
  const int max_k_tiles =
      grouped ? kDecodeSpareClusterMaxKTiles : kDecodeSpareClusterChannelMaxKTiles;
  return m_blocks == 1 && k_tiles <= max_k_tiles ? 1 : 0;
}

/// Which decode calls use_decode_whole_slices gives whole slices: 1, its rule; build with
/// -DMARLIN_DECODE_WHOLE_SLICES=0 (never) or 2 (wherever the slices fit one wave) only to
/// measure the alternatives.
#ifndef MARLIN_DECODE_WHOLE_SLICES
#define MARLIN_DECODE_WHOLE_SLICES 1
#endif
inline constexpr int kDecodeWholeSlices = MARLIN_DECODE_WHOLE_SLICES;
static_assert(kDecodeWholeSlices >= 0 && kDecodeWholeSlices <= 2,
              "MARLIN_DECODE_WHOLE_SLICES must be 0, 1 or 2");
/// Most weight bytes that the resident CTAs left without a slice would have streamed, for
/// which use_decode_whole_slices holds: with group scales, and per-channel.
inline constexpr long long kDecodeWholeIdleBytesGrouped = 16LL << 20;
inline constexpr long long kDecodeWholeIdleBytesChannel = 24LL << 20;
/// The same limits for the 128-wide tile's eight-row kernels (M <= 8) where the slices fill at
/// least kDecodeWholeEightRowFillPct (70 %) of the resident CTAs: there whole slices measured
/// faster than striped runs past the limits above (bench/NOTES.md, change 111, runs 306 and
/// 309, 192 and 224 slices of 264: with group scales x0.97-1.005 at 17.5-20 MiB and slower
/// from 22.5 MiB; per-channel x0.93-0.99 at 27-31.5 MiB); at 140 and 160 slices (53 and 61 %)
/// they lost at M = 1-4 (x1.00-1.08).
inline constexpr long long kDecodeWholeIdleBytesGroupedEightRows = 20LL << 20;
inline constexpr long long kDecodeWholeIdleBytesChannelEightRows = 32LL << 20;
inline constexpr int kDecodeWholeEightRowFillPct = 70;
/// Fewest slices, in percent of the resident CTAs, from which per-channel decode calls on tiles
/// at most 128 wide take whole slices whatever their idle bytes.
inline constexpr int kDecodeWholeChannelFillPct = 80;
/// The same for the 256-wide decode tile, its eight-row kernels only (M <= 8): measured to
/// gain from 224 slices of 264 (84.8 %) and to lose at 216 (81.8 %) (bench/NOTES.md, change
/// 107, run 305).
inline constexpr int kDecodeWholeWideFillPct = 84;
/// The decode tile 256 columns wide (kTileConfigs[kWideDecodeConfig], 64 deep) whose whole
/// slices make_plan takes where the 128-wide tile has more slices than resident CTAs and
/// use_decode_whole_slices holds for the wide tile's (bench/NOTES.md, change 88). Build with
/// -DMARLIN_DECODE_WIDE_WHOLE=0 only to measure the striped runs instead.
inline constexpr int kWideDecodeConfig = 1;
static_assert(kTileConfigs[kWideDecodeConfig].tile_n() == 256,
              "the wide decode tile is 256 columns wide");
#ifndef MARLIN_DECODE_WIDE_WHOLE
#define MARLIN_DECODE_WIDE_WHOLE 1
#endif
inline constexpr bool kDecodeWideWhole = MARLIN_DECODE_WIDE_WHOLE != 0;

/// Every decode kernel's pipeline in builds of one form (MARLIN_DECODE_WARP_PRIVATE 0 or 2).
inline constexpr DecodePipeline kDecodeFixedPipeline =
    kDecodeWarpPrivateMode == 2 ? DecodePipeline::kWarpPrivate : DecodePipeline::kCtaWide;

/// The pipeline (DecodePipeline) of a decode call (mma.sync, m_blocks 1) of configuration
/// `config` (its tile) on partition `part`, with `eight_rows` (use_eight_row_kernel), `grouped`
/// scales or per-channel and `m` rows of A. The warp-private pipeline pays where the CTAs of a
/// call read different K ranges of A at any moment (striped runs, cluster splits of 3 or more)
/// and costs where every CTA reads the same rows of A at once (whole slices, splits of 2), as
/// each K group requests its 64 bytes (32 in the 64-wide tile) of each row on its own; there K
/// groups of 128 bytes (kWarpPrivateA128) take A in as many requests as the CTA-wide pipeline.
/// The rule, where the CTAs read A apart / together:
/// - eight-row kernels (M <= 8): kWarpPrivate / per-channel kWarpPrivateA128 on the 128 x 128
///   tile (at M = 1 on its whole slices only) and on the 64-wide tile from M = 2, kCtaWide for the
///   64-wide tile's grouped kernel, kWarpPrivate otherwise;
/// - 16-row kernels (M = 9-16): on the 128 x 128 tile kWarpPrivate / per-channel
///   kWarpPrivateA128, with group scales kWarpPrivate; on the 64-wide tile kCtaWide / per-channel
///   kWarpPrivateA128, with group scales kCtaWide; on the 256-wide tile kCtaWide.
/// Measured on the H200 (bench/NOTES.md, changes 89-90 and 100-103; the bench layers and others
/// off them, M = 1-16; ratios are time against the other form, same call):
/// - eight-row kernels: kWarpPrivate against kCtaWide x0.946-1.021 (run 261), the splits and
///   striped runs x0.94-1.00. Read together, per-channel, kWarpPrivateA128 against kWarpPrivate
///   x0.89-1.01 at M = 2-8 and x0.98-0.99 against kCtaWide (run 268); at M = 1 on the 128 x 128
///   tile x0.975-0.989 on whole slices at K = 4096-8192 (x1.000 at K = 2048) but x0.994-1.012 on
///   splits of 2 (change 102, runs 298-299), on the 64-wide tile x1.016-1.017 (run 269),
///   x0.999-1.006 (run 270) and x1.004-1.010 on splits of 2 (run 301). With group scales the
///   64-wide tile's kCtaWide against kWarpPrivate x0.93-0.99 and against kWarpPrivateA128
///   x0.98-0.99 (run 268); the 128 x 128 tile's kWarpPrivateA128 against kWarpPrivate
///   x1.004-1.017 at M = 2-8 (run 298).
/// - 16-row kernels, the 128 x 128 tile: kWarpPrivate against kCtaWide on runs of 8-20 tiles per
///   CTA x0.96-0.99 and of 55-108 x1.00-1.04 (run 268), after changes 95-99 on runs of 55-202
///   tiles x0.961-1.006 (median x0.979; 8192 x 57344, 28672 x 8192, 8192 x 28672, 16384 x 53248)
///   and read together with group scales x0.971-0.996 (4096 x 28672, 16384²), per-channel x0.98
///   at M = 9 but x1.01-1.06 at M = 16 (run 293, change 100); read together per-channel
///   kWarpPrivateA128 against kCtaWide x0.927-0.979 at M = 9-16 (run 296, change 101: 4096 x
///   28672, 8192 x 28672, 16384²), with group scales against kWarpPrivate x0.993-1.008 (run 298).
///   The 64-wide tile: kWarpPrivate against kCtaWide on its split of 3 x1.03-1.13 at M = 12-16
///   (run 264); per-channel kWarpPrivateA128 against kCtaWide on its splits of 2 x0.947-0.973 at
///   M = 12-16 (2048-4096 x 8192; run 301, change 103).
/// With MARLIN_DECODE_WARP_PRIVATE 0 or 2 every call's is kDecodeFixedPipeline.
constexpr DecodePipeline select_decode_pipeline(int config, bool eight_rows, bool grouped, int m,
                                                const Partition& part) {
  if (kDecodeWarpPrivateMode != 1) return kDecodeFixedPipeline;
  const bool read_together = part.split == 2 || (part.split == 0 && part.iters == part.k_tiles);
  if (eight_rows) {
    if (!read_together) return DecodePipeline::kWarpPrivate;
    if (grouped) {
      return config == kNarrowDecodeConfig ? DecodePipeline::kCtaWide
                                           : DecodePipeline::kWarpPrivate;
    }
    const bool a128 = config == kNarrowDecodeConfig ? m >= 2
                                                    : config == 0 && (m >= 2 || part.split == 0);
    return a128 ? DecodePipeline::kWarpPrivateA128 : DecodePipeline::kWarpPrivate;
  }
  if (!grouped && read_together && (config == 0 || config == kNarrowDecodeConfig)) {
    return DecodePipeline::kWarpPrivateA128;
  }
  return config == 0 ? DecodePipeline::kWarpPrivate : DecodePipeline::kCtaWide;
}

/// Whether the decode kernel (mma.sync, m_blocks 1) of configuration `config`, scale mode and
/// kernel (`eight_rows`) with `pipeline` is compiled in this build: exactly the forms
/// select_decode_pipeline picks for some call and the planning form (decode_planning_pipeline),
/// which make_plan keeps where the picked form would lose the partition's residency.
constexpr bool decode_pipeline_compiled(int config, bool grouped, bool eight_rows,
                                        DecodePipeline pipeline) {
  if (kDecodeWarpPrivateMode != 1) return pipeline == kDecodeFixedPipeline;
  const bool narrow = config == kNarrowDecodeConfig;
  switch (pipeline) {
    case DecodePipeline::kWarpPrivate: return eight_rows || config == 0;
    case DecodePipeline::kWarpPrivateA128: return !grouped && (config == 0 || narrow);
    case DecodePipeline::kCtaWide: return !eight_rows || (narrow && grouped);
  }
  return false;
}

/// The pipeline make_plan takes a decode kernel with while it chooses the partition (its
/// shared memory and residency are what the partition is chosen on); where
/// select_decode_pipeline then picks another, make_plan swaps the kernel if the swap keeps the
/// partition's residency.
constexpr DecodePipeline decode_planning_pipeline(bool eight_rows) {
  if (kDecodeWarpPrivateMode != 1) return kDecodeFixedPipeline;
  return eight_rows ? DecodePipeline::kWarpPrivate : DecodePipeline::kCtaWide;
}

/// Whether a decode call (the mma.sync kernels' 16-row tiles, `m_blocks` 1) that runs no
/// cluster split takes one CTA per slice instead of striped runs over all `capacity` resident
/// CTAs. Its `slices` (tile_n columns by k, `grouped` scales or per-channel) must fit one wave
/// and fill at least half of it (the fills measured: 56-100 %). Whole slices pay no
/// workspace end (partials, slice counters, the last arrival's sum), but leave capacity -
/// slices CTAs without work, so that the SMs that run two slices set the time. The measure of
/// that loss is the bytes those CTAs would have streamed, (capacity - slices) x k x tile_n / 2:
/// whole slices where it is at most kDecodeWholeIdleBytesGrouped (16 MiB) with group scales and
/// kDecodeWholeIdleBytesChannel (24 MiB) per-channel (20 and 32 MiB for the 128-wide tile's
/// `eight_rows` kernels from 70 % of the capacity), and per-channel from
/// kDecodeWholeChannelFillPct (80 %) of the capacity whatever the bytes on tiles at most 128 wide,
/// and from kDecodeWholeWideFillPct (84 %) on the 256-wide tile for the `eight_rows` kernels
/// (use_eight_row_kernel): two CTAs of the per-channel loop stream an SM's slices faster than its
/// even share of the bandwidth (~38 GB/s against ~32; ~30 with group scales). Measured on the H200
/// (bench/NOTES.md, change 87; runs 247, 253 and 254; M = 1-16, 128-wide slices against 264
/// resident CTAs, K = 2048-16384, 148-256 slices): with group scales every layer at or below 16 MiB
/// gained (x0.79-0.99), 16.5-20 MiB were even (x0.99-1.04) and from 22 MiB every one lost
/// (x1.02-1.25); per-channel x0.76-1.00 at or below 24 MiB, x0.93-1.04 at 80 % or more above it
/// (14336 x 27648 x1.04 at M = 16), and x0.96-1.18 elsewhere. The 256-wide tile's whole slices at
/// 85 % of the capacity against 128-wide striped runs (8192 x 57344, run 304, change 107):
/// per-channel x0.955-0.977 at M = 1-8, x1.02 at M = 12-16 (its 16-row kernel CTA-wide), with group
/// scales x1.02-1.10; the eight-row kernels' whole slices there on five layers of 55296-61440
/// columns (run 305, change 107): x0.953-1.010 from 224 slices (84.8 %; above 1.00 only at M = 1
/// on 16384 x 57344 and 8192 x 59136), x0.99-1.02 at 216 (12288 x 55296, M = 1-8).
constexpr bool use_decode_whole_slices(int m_blocks, int slices, int capacity, int k,
                                       int tile_n, bool grouped, bool eight_rows) {
  if (kDecodeWholeSlices == 0 || m_blocks != 1 || slices > capacity || slices < 1) return false;
  if (kDecodeWholeSlices == 2) return true;
  if (2 * slices < capacity) return false;
  const long long idle = static_cast<long long>(capacity - slices) * k * tile_n / 2;
  const bool eight_row_limits =
      eight_rows && tile_n == 128 &&
      100LL * slices >= static_cast<long long>(kDecodeWholeEightRowFillPct) * capacity;
  if (grouped) {
    return idle <= (eight_row_limits ? kDecodeWholeIdleBytesGroupedEightRows
                                     : kDecodeWholeIdleBytesGrouped);
  }
  if (idle <= (eight_row_limits ? kDecodeWholeIdleBytesChannelEightRows
                                : kDecodeWholeIdleBytesChannel)) {
    return true;
  }
  const long long fill = 100LL * slices;
  if (tile_n <= 128) return fill >= static_cast<long long>(kDecodeWholeChannelFillPct) * capacity;
  return eight_rows && fill >= static_cast<long long>(kDecodeWholeWideFillPct) * capacity;
}

/// Resident capacity of a kernel on one device: clusters[s] clusters of s CTAs fit at once
/// (clusters[1]: single CTAs, e.g. SMs for the warpgroup kernel at one CTA per SM; 0 where a
/// size is unusable).
struct ClusterCapacity {
  int clusters[kMaxClusterSplit + 1] = {};
};

/// The largest cluster split up to `split` (at most kMaxClusterSplit) whose `slices` clusters
/// and `spare` more all fit `cap` at once; 0 where none of 2 or more does.
constexpr int resident_cluster_split(int split, int slices, int spare,
                                     const ClusterCapacity& cap) {
  while (split >= 2 && cap.clusters[split] < slices + spare) --split;
  return split >= 2 ? split : 0;
}

/// Fixed cost, in K-tile times of one CTA, that a striped partition of the warpgroup kernel
/// pays on top of its share of tiles (a second pipeline fill, the 128 KB fp32 partials stored
/// and summed by the last arriver); measured on the H200 (bench/NOTES.md, change 7).
inline constexpr int kWgmmaStripedCost = 40;
/// kWgmmaStripedCost for the warp-specialized 256-row tile (kernel::gemm_kernel_ws), whose
/// striped runs end cheaper (changes 23, 25 and 27: a CTA arrives before it stores, and the
/// last arrival stores nothing and sums with loads in flight). Measured on the H200 (session
/// 17, run 75, bench/NOTES.md change 28): 8192 x 10240 at M = 256 and 512 took 26-27 K-tile
/// times beyond share + share / kWgmmaStripedSlowdown.
inline constexpr int kWgmmaWsTallStripedCost = 26;
/// kWgmmaStripedCost for the warp-specialized 32-, 64- and 128-row tiles, whose striped runs
/// store their partials from registers and sum them there like the 256-row tile's (change 34).
/// Measured on the H200 (session 19, run 88: striped against whole or split plans of the same
/// code on six layers at M = 20-192), the fixed cost beyond share + share /
/// kWgmmaStripedSlowdown that would have made each plan even: 32 rows 0-13 (14336 x 4096 at
/// M = 20-32, even at 11, measured 8-10 and striped ×0.92-0.985 faster), 64 rows -5 to 19
/// (8192 x 10240 and 8192 x 57344, even at 25: 8-19, striped ×0.86-0.95; 4096 x 28672, even at
/// 6: 13-15, striped ×1.11-1.14 slower), 128 rows 6-24 (8192 x 10240 and 8192 x 57344, even at
/// 25: 8-21, striped ×0.90-0.98; 14336 x 4096, even at 19: 18-24, ×0.99-1.07). Each constant
/// sits at or above the even points its tile measured slower or within noise at. The 32-row
/// tile's grows by kWgmmaWsTinySharerCost per CTA beyond kWgmmaWsTinySharers that shares a
/// slice (wgmma_striped_cost; session 30, run 170, bench/NOTES.md change 68): its striped runs
/// measured ×1.02-1.12 faster than a split of 3 on 8192 x 8192 (4 CTAs per slice: 34 + 10
/// against 45) and ×1.02-1.12 slower than a split of 6 on 14336 x 4096 (8 per slice: 29 + 14
/// against 40), where one constant had priced both below the split.
inline constexpr int kWgmmaWsTinyStripedCost = 10;   ///< the 32-row tile (kWgmmaMBlocksTiny)
inline constexpr int kWgmmaWsTinySharers = 4;        ///< CTAs per slice that the cost covers
inline constexpr int kWgmmaWsTinySharerCost = 1;     ///< per CTA sharing a slice beyond those
inline constexpr int kWgmmaWsSmallStripedCost = 12;  ///< the 64-row tile (kWgmmaMBlocksSmall)
inline constexpr int kWgmmaWsRowsStripedCost = 20;   ///< the 128-row tile (kWgmmaMBlocks)
/// Proportional cost of a striped partition: 1 / kWgmmaStripedSlowdown of its tiles (its CTAs
/// work on slices far apart, which share less of A and B in L2 than neighbouring whole slices).
inline constexpr int kWgmmaStripedSlowdown = 16;
/// Cost in K-tile times of the distributed-shared-memory sum of a cluster split. Override with
/// -DMARLIN_WGMMA_CLUSTER_COST=n only to measure other prices (run 95's timelines measured
/// the split of 2's end at about 7 K-tile times on the 128- and 256-row tiles).
#ifndef MARLIN_WGMMA_CLUSTER_COST
#define MARLIN_WGMMA_CLUSTER_COST 2
#endif
inline constexpr int kWgmmaClusterCost = MARLIN_WGMMA_CLUSTER_COST;
static_assert(kWgmmaClusterCost >= 0, "MARLIN_WGMMA_CLUSTER_COST must be >= 0");

/// K tiles per CTA when striped runs cover `slices` slices of `k_tiles` K tiles on `sms` SMs.
constexpr long long striped_share(int slices, int k_tiles, long long sms) {
  return (static_cast<long long>(slices) * k_tiles + sms - 1) / sms;
}

/// CTAs that share a slice of `k_tiles` K tiles when striped runs cover `slices` slices on
/// `sms` SMs: ceil(k_tiles / striped_share), at least 1 (a slice whose runs do not start at its
/// first tile has one more).
constexpr int striped_sharers(int slices, int k_tiles, long long sms) {
  if (slices < 1 || k_tiles < 1 || sms < 1) return 1;
  const long long share = striped_share(slices, k_tiles, sms);
  return static_cast<int>((k_tiles + share - 1) / share);
}

/// The striped partition's fixed cost (in K-tile times) for the warpgroup tile of `m_blocks`
/// rows, run by the warp-specialized kernel (`ws`) or the plain one, for `slices` slices of
/// `k_tiles` K tiles on `sms` SMs (which only the 32-row tile's cost depends on; without them,
/// kWgmmaWsTinyStripedCost).
constexpr int wgmma_striped_cost(int m_blocks, bool ws, int slices = 0, int k_tiles = 0,
                                 long long sms = 0) {
  if (!ws) return kWgmmaStripedCost;
  if (m_blocks == kWgmmaMBlocksTall) return kWgmmaWsTallStripedCost;
  if (m_blocks == kWgmmaMBlocksTiny) {
    const int beyond = striped_sharers(slices, k_tiles, sms) - kWgmmaWsTinySharers;
    return kWgmmaWsTinyStripedCost + kWgmmaWsTinySharerCost * (beyond > 0 ? beyond : 0);
  }
  if (m_blocks == kWgmmaMBlocksSmall) return kWgmmaWsSmallStripedCost;
  if (m_blocks == kWgmmaMBlocks) return kWgmmaWsRowsStripedCost;
  return kWgmmaStripedCost;
}

/// The wave model's cost, in K-tile times of one CTA, of covering `slices` slices of `k_tiles`
/// K tiles with the warpgroup kernel on `sms` SMs: split 1, whole slices in ceil(slices / sms)
/// waves of k_tiles; split s >= 2, a cluster split with every cluster resident at once,
/// ceil(k_tiles / s) plus the cluster sum; split 0, striped runs, their share of all tiles plus
/// the fixed cost `striped_cost` and the proportional cost above.
constexpr long long wgmma_partition_cost(int slices, int k_tiles, long long sms, int split,
                                         int striped_cost = kWgmmaStripedCost) {
  if (split == 1) return (slices + sms - 1) / sms * k_tiles;
  if (split >= 2) return (k_tiles + split - 1) / split + kWgmmaClusterCost;
  const long long share = striped_share(slices, k_tiles, sms);
  return share + share / kWgmmaStripedSlowdown + striped_cost;
}

/// How the warpgroup kernel (one CTA per SM, long K runs) covers `slices` slices of `k_tiles`
/// K tiles: 1 = whole slices (in as many waves or, on the warp-specialized kernel, rounds of
/// runs of whole slices as needed: the same cost), s >= 2 = cluster split of s CTAs per slice
/// with every cluster resident at once, 0 = striped runs over all SMs.
/// Picks the cheapest by the wave model (wgmma_partition_cost). (Cluster splits in several
/// waves measured up to 2x slower than this model on the H200, so they are not candidates:
/// bench/NOTES.md, change 7.) Ties go to the simpler partition. `policy`: 0 the model; 1
/// never striped; 2 always striped (the last two for A/B measurement only). `striped_cost`:
/// the striped partition's fixed cost for the kernel and tile that would run it
/// (wgmma_striped_cost).
constexpr int select_wgmma_split(int slices, int k_tiles, const ClusterCapacity& cap,
                                 int policy = 0, int striped_cost = kWgmmaStripedCost) {
  const long long sms = cap.clusters[1];
  if (policy == 2 || sms < 1) return 0;
  int best = 1;
  long long best_cost = wgmma_partition_cost(slices, k_tiles, sms, 1);
  for (int s = 2; s <= kMaxClusterSplit && s <= k_tiles; ++s) {
    if (cap.clusters[s] < slices) continue;  // not every cluster resident at once
    const long long cost = wgmma_partition_cost(slices, k_tiles, sms, s);
    if (cost < best_cost) {
      best = s;
      best_cost = cost;
    }
  }
  if (policy == 1) return best;
  return wgmma_partition_cost(slices, k_tiles, sms, 0, striped_cost) < best_cost ? 0 : best;
}

/// A partition of the warpgroup kernel: `split` as select_wgmma_split's, and with split >= 2,
/// `whole` slices (0 for none) done first by one CTA each (Partition::whole).
struct WgmmaPartition {
  int split = 1;
  int whole = 0;
};

/// select_wgmma_split's choice, or a hybrid where the wave model finds it cheaper (policy 0
/// only): whole slices in W >= 1 whole waves of cap.clusters[s] clusters of s CTAs each, then
/// the remaining slices (at most cap.clusters[s], so one wave) split over s CTAs each, in a
/// grid of at most `max_grid` CTAs: W k_tiles plus the split's cost (e.g. 4096 x 6144,
/// M = 1024: 192 slices of 64 K tiles, 128 -> 98 tile times with s = 2). `striped_cost` as
/// select_wgmma_split's.
constexpr WgmmaPartition select_wgmma_partition(int slices, int k_tiles,
                                                const ClusterCapacity& cap, int policy = 0,
                                                int max_grid = kMaxGrid,
                                                int striped_cost = kWgmmaStripedCost) {
  WgmmaPartition best{select_wgmma_split(slices, k_tiles, cap, policy, striped_cost), 0};
  const long long sms = cap.clusters[1];
  if (policy != 0 || sms < 1) return best;
  long long best_cost = wgmma_partition_cost(slices, k_tiles, sms, best.split, striped_cost);
  for (int s = 2; s <= kMaxClusterSplit && s <= k_tiles; ++s) {
    const int per_wave = cap.clusters[s] * s;  // whole slices per wave, in clusters of s
    if (per_wave < 1) continue;
    const int waves = slices / per_wave;
    const int rest = slices - waves * per_wave;
    if (waves < 1 || rest == 0 || rest > cap.clusters[s]) continue;
    if (static_cast<long long>(waves) * per_wave + static_cast<long long>(rest) * s > max_grid) {
      continue;
    }
    const long long cost = static_cast<long long>(waves) * k_tiles +
                           wgmma_partition_cost(rest, k_tiles, sms, s);
    if (cost < best_cost) {
      best = WgmmaPartition{s, waves * per_wave};
      best_cost = cost;
    }
  }
  return best;
}

/// The wave model's cost (wgmma_partition_cost) of `p`, select_wgmma_partition's choice for
/// `slices` slices of `k_tiles` K tiles on capacity `cap`: with `p.whole` > 0, its whole waves
/// of whole slices plus the split wave.
constexpr long long wgmma_plan_cost(int slices, int k_tiles, const ClusterCapacity& cap,
                                    WgmmaPartition p, int striped_cost = kWgmmaStripedCost) {
  const long long sms = cap.clusters[1];
  if (p.whole == 0 || p.split < 2) {
    return wgmma_partition_cost(slices, k_tiles, sms, p.split, striped_cost);
  }
  const int waves = p.whole / (cap.clusters[p.split] * p.split);
  return static_cast<long long>(waves) * k_tiles +
         wgmma_partition_cost(slices - p.whole, k_tiles, sms, p.split);
}

/// Which 128-row tiles are planned where wgmma_m_blocks gives the 256-row tile, where
/// wgmma_rows_tile says so: 2 (the default), 128 or 256 wide; 1, only 128 wide (before change
/// 70); 0, none. Build with -DMARLIN_WGMMA_ROWS_128=0 or 1 only to measure without
/// (bench/NOTES.md, changes 32 and 70).
#ifndef MARLIN_WGMMA_ROWS_128
#define MARLIN_WGMMA_ROWS_128 2
#endif
inline constexpr bool kWgmmaRows128 = MARLIN_WGMMA_ROWS_128 != 0;
/// Whether the 128-row tile 256 columns wide is a candidate in wgmma_rows_tile.
inline constexpr bool kWgmmaRowsWide = MARLIN_WGMMA_ROWS_128 >= 2;
/// K-tile time of the 128-row tile 128 wide relative to the 256-row tile's in wgmma_rows_tile, as
/// kWgmmaRowsCostNum / kWgmmaRowsCostDen = 0.633: measured 0.50-0.60 on the H200 (session 18,
/// runs 82-83: whole slices of either tile, one wave or several), the rest a margin for its
/// hybrid partitions, which gained less than the model says (×0.91-0.99 where the model says
/// ×0.80 with 0.55).
inline constexpr int kWgmmaRowsCostNum = 19;
inline constexpr int kWgmmaRowsCostDen = 30;
/// kWgmmaRowsCostNum / kWgmmaRowsCostDen for per-channel scales, as kWgmmaRowsChannelCostNum
/// percent: 58 since session 31 (bench/NOTES.md change 71). Per-channel the 128-row tile
/// measured relatively cheaper than with group scales (its B tile is dequantized once per 128
/// rows instead of 256, and group scales add to that work): with 0.55 for both, the
/// per-channel cases it moved took mostly ×0.94-0.98 and the grouped ones mostly ×1.01-1.13
/// (run 176); 0.58 per-channel only took ×0.94-0.99 on 7 of the 8 bench cases it moves at
/// M = 192-1536 and ×1.02 on 8192 × 10240 at M = 192 (run 177, against cuBLAS in the same
/// case). Build with -DMARLIN_WGMMA_ROWS_CHANNEL_COST_PCT=n only to measure others.
#ifndef MARLIN_WGMMA_ROWS_CHANNEL_COST_PCT
#define MARLIN_WGMMA_ROWS_CHANNEL_COST_PCT 58
#endif
inline constexpr int kWgmmaRowsChannelCostNum = MARLIN_WGMMA_ROWS_CHANNEL_COST_PCT;
inline constexpr int kWgmmaRowsChannelCostDen = 100;
static_assert(kWgmmaRowsChannelCostNum > 0, "MARLIN_WGMMA_ROWS_CHANNEL_COST_PCT must be > 0");
/// What a cluster split of the 256-row tile costs beyond kWgmmaClusterCost, in its K-tile times,
/// when it is compared with the 128-row tile: its splits of 2 took 1.11-1.19× the time of the
/// 128-row tile's whole slices where the model with kWgmmaClusterCost alone says 0.97 (4096 ×
/// 6144 at M = 256, 4096² at M = 384-512; runs 82-83). Override with
/// -DMARLIN_WGMMA_TALL_SPLIT_EXTRA_COST=n only to measure other prices.
#ifndef MARLIN_WGMMA_TALL_SPLIT_EXTRA_COST
#define MARLIN_WGMMA_TALL_SPLIT_EXTRA_COST 8
#endif
inline constexpr int kWgmmaTallSplitExtraCost = MARLIN_WGMMA_TALL_SPLIT_EXTRA_COST;
static_assert(kWgmmaTallSplitExtraCost >= 0, "MARLIN_WGMMA_TALL_SPLIT_EXTRA_COST must be >= 0");

/// K-tile time of the 128-row tile 256 wide relative to the 256-row tile's (the same products
/// per K tile) in wgmma_rows_tile, as kWgmmaWideRowsCostNum / kWgmmaWideRowsCostDen = 1.05:
/// with the same partitions (M = 256-4096, session 31 run 173), against cuBLAS in the same
/// case, ×1.04-1.05 with group scales and ×1.00 per-channel.
inline constexpr int kWgmmaWideRowsCostNum = 21;
inline constexpr int kWgmmaWideRowsCostDen = 20;

/// The tile that covers a problem of `m` x `n` x `k` for which wgmma_m_blocks gives the
/// 256-row tile.
enum class RowsTile {
  kTall,    ///< the 256-row tile (kWgmmaMBlocksTall, 128 wide)
  kNarrow,  ///< the 128-row tile 128 wide (kWgmmaNarrowTile)
  kWide,    ///< the 128-row tile 256 wide (kWgmmaTileN)
};

/// Which of the 256-row tile and the 128-row tile, 128 or 256 wide, covers a problem of `m` x
/// `n` x `k` with group scales or not (`grouped`; wgmma_m_blocks gives the 256-row tile for
/// it) most cheaply on capacity `cap` (all run one CTA per SM): the wave model's cost of each
/// tile's partition (select_wgmma_partition, with the striped cost `tall_striped_cost` or
/// `rows_striped_cost`), plus kWgmmaTallSplitExtraCost where the 256-row tile or the wide
/// 128-row tile splits, in K-tile times scaled by each tile's time per K tile (the 256-row
/// tile's 1; the narrow tile's kWgmmaRowsCostNum / kWgmmaRowsCostDen with group scales,
/// kWgmmaRowsChannelCostNum / kWgmmaRowsChannelCostDen without; the wide tile's
/// kWgmmaWideRowsCostNum / kWgmmaWideRowsCostDen); ties keep the 256-row tile, then the
/// narrow one.
/// The narrow tile takes rows the 256-row tile would pad (M = 384: ×0.79-0.93 on seven of the
/// eight layers measured) and slices it would leave idle or split (4096 × 6144 at M = 256-512,
/// 4096² at M = 384-768: ×0.84-0.99), and leaves M = 256 and 512 on the larger layers to the
/// 256-row tile (there the 128-row tile measured ×1.02-1.18 slower, except 8192² at M = 256:
/// ×0.93-0.99, kept on the 256-row tile by a small margin; session 18, runs 82-84,
/// bench/NOTES.md change 32). The wide tile has as many slices as the 256-row tile where the
/// 128-row groups are even in number, so it is a candidate only where they are odd (the
/// 256-row tile pads 128 rows or more). There, against the narrow or the 256-row tile, it
/// measured ×0.82-0.99 (against cuBLAS in the same case, both passes) on 44 of the 52 cases it
/// moved at M = 384, 640, 896 and 1152 on the bench layers, even on 3, and ×1.00-1.07 on 5:
/// 4096² at M = 1152, per-channel 16384² at 384, 14336 × 4096 and 4096 × 28672 at 640
/// (session 31 run 174, bench/NOTES.md change 70; since change 71 a few per-channel cases of
/// those take the narrow tile instead, 4096² at M = 1152 among them).
constexpr RowsTile wgmma_rows_tile(int m, int n, int k, bool grouped, const ClusterCapacity& cap,
                                   int tall_striped_cost, int rows_striped_cost) {
  const long long rows_num = grouped ? kWgmmaRowsCostNum : kWgmmaRowsChannelCostNum;
  const long long rows_den = grouped ? kWgmmaRowsCostDen : kWgmmaRowsChannelCostDen;
  if (!kWgmmaRows128 || cap.clusters[1] < 1) return RowsTile::kTall;
  const int k_tiles = k / kWgmmaTileK;
  const int m_groups = m_groups_for(m, kWgmmaMBlocks);
  // The plan cost of `slices` slices of a tile with striped cost `striped`, plus `split_extra`
  // where its partition splits.
  const auto cost = [&](int slices, int striped, int split_extra) {
    const WgmmaPartition p =
        select_wgmma_partition(slices, k_tiles, cap, 0, kMaxGrid, striped);
    return wgmma_plan_cost(slices, k_tiles, cap, p, striped) + (p.split >= 2 ? split_extra : 0);
  };
  const int narrow_cols = n / kWgmmaNarrowTile.tile_n();
  const long long tall =
      cost(narrow_cols * m_groups_for(m, kWgmmaMBlocksTall), tall_striped_cost,
           kWgmmaTallSplitExtraCost) * rows_den * kWgmmaWideRowsCostDen;
  const long long narrow = cost(narrow_cols * m_groups, rows_striped_cost, 0) *
                           rows_num * kWgmmaWideRowsCostDen;
  RowsTile best = RowsTile::kTall;
  long long best_cost = tall;
  if (narrow < best_cost) {
    best = RowsTile::kNarrow;
    best_cost = narrow;
  }
  // The wide tile only where it makes fewer slices than the 256-row tile (an odd number of
  // 128-row groups): with as many, the two ran the same partitions and the wide tile was even
  // or slower (×0.98-1.17 the 256-row tile's time on 8192 × 10240 at M = 256; run 173).
  if (kWgmmaRowsWide && n % kWgmmaTileN == 0 && m_groups % 2 == 1) {
    const long long wide = cost(n / kWgmmaTileN * m_groups, rows_striped_cost,
                                kWgmmaTallSplitExtraCost) *
                           kWgmmaWideRowsCostNum * rows_den;
    if (wide < best_cost) best = RowsTile::kWide;
  }
  return best;
}

}  // namespace marlin::detail
