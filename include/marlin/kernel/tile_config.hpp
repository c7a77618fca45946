// The tile configurations marlin compiles, listed once. Host-only; compiles without nvcc.
//
// A CTA of 8 warps computes a tile_m x tile_n block of C over a run of tile_k-deep K steps.
// Each warp owns a 64-column strip (one 16x64 chunk of the packed B layout per k16 row), so
// tile_n / 64 warps cover N and the remaining 8 / (tile_n / 64) warps split K inside the
// tile, reduced in shared memory at the end. tile_m (16 * m_blocks, m_blocks 1..4) is chosen
// at run time from M; tile_n and tile_k come from this table.
#pragma once

#include <cstddef>

namespace marlin {

/// One compiled (tile_n, tile_k) choice. `_blocks` count 16-wide mma tiles.
struct TileConfig {
  int n_blocks;  ///< tile_n / 16
  int k_blocks;  ///< tile_k / 16

  constexpr int tile_n() const { return 16 * n_blocks; }
  constexpr int tile_k() const { return 16 * k_blocks; }
};

/// Threads per CTA: 8 warps, so that 4-8 warps stream a tile while the others compute.
inline constexpr int kThreads = 256;
/// Warps per CTA.
inline constexpr int kWarps = kThreads / 32;
/// Shared-memory pipeline depth of the mma.sync kernels that synchronize once per tile (the
/// decode kernels, m_blocks 1): loads for tile t + kStages - 1 fly while tile t computes.
/// A compile-time constant, so the main loop unrolls over the stages and every shared-memory
/// address and cp.async wait is an immediate (bench/NOTES.md: a depth chosen at run time cost
/// ~10 % through the extra index arithmetic, and deeper pipelines did not pay). Override with
/// -DMARLIN_PIPELINE_STAGES=n (3..8) only to measure other depths (an odd n also needs
/// -DMARLIN_TILES_PER_SYNC=1).
#ifndef MARLIN_PIPELINE_STAGES
#define MARLIN_PIPELINE_STAGES 4
#endif
inline constexpr int kStages = MARLIN_PIPELINE_STAGES;
static_assert(kStages >= 3 && kStages <= 8, "MARLIN_PIPELINE_STAGES must be within 3..8");
/// Pipeline depth of the sm_90 warpgroup kernel, whose copies run kWgmmaStages - 2 tiles ahead
/// (its last wgmma group of a tile is still reading when the next tile's barrier passes).
/// Override with -DMARLIN_WGMMA_STAGES=n (4..8) only to measure other depths.
#ifndef MARLIN_WGMMA_STAGES
#define MARLIN_WGMMA_STAGES 4
#endif
inline constexpr int kWgmmaStages = MARLIN_WGMMA_STAGES;
static_assert(kWgmmaStages >= 4 && kWgmmaStages <= 8, "MARLIN_WGMMA_STAGES must be within 4..8");
/// Pipeline depth of the warpgroup kernel's 32-row tile (kWgmmaMBlocksTiny), whose stages are
/// small (12.5 KB): it copies 6 tiles ahead. (Measured the same as 4 stages on the H200,
/// bench/NOTES.md change 19: not bound by the bytes in flight.) Override with
/// -DMARLIN_WGMMA_TINY_STAGES=n (4..8) only to measure other depths.
#ifndef MARLIN_WGMMA_TINY_STAGES
#define MARLIN_WGMMA_TINY_STAGES 8
#endif
inline constexpr int kWgmmaTinyStages = MARLIN_WGMMA_TINY_STAGES;
static_assert(kWgmmaTinyStages >= 4 && kWgmmaTinyStages <= 8,
              "MARLIN_WGMMA_TINY_STAGES must be within 4..8");
/// Pipeline depth of the warpgroup kernel's 64-row tile (kWgmmaMBlocksSmall; 16.5 KB stages)
/// with group scales: 5 stages measured x0.985 in median against 4 at M = 40-64 (bench/NOTES.md
/// change 73, on the warp-specialized tile's four computing warpgroups); 6 do not leave room
/// for the push variant's receive region beside them. Override with
/// -DMARLIN_WGMMA_SMALL_STAGES=n (4..8) only to measure other depths.
#ifndef MARLIN_WGMMA_SMALL_STAGES
#define MARLIN_WGMMA_SMALL_STAGES 5
#endif
inline constexpr int kWgmmaSmallStages = MARLIN_WGMMA_SMALL_STAGES;
static_assert(kWgmmaSmallStages >= 4 && kWgmmaSmallStages <= 8,
              "MARLIN_WGMMA_SMALL_STAGES must be within 4..8");
/// kWgmmaSmallStages per-channel, whose stages are 512 bytes smaller (no scale row): 6, where
/// the push variant's receive region still fits. Against five, per-channel at M = 40-64
/// (bench/NOTES.md, run 189): x0.9965 in median, 17 of 36 cases faster in both passes and one
/// slower, 8192 x 10240 x0.96-0.97 (as in run 183). Override with
/// -DMARLIN_WGMMA_SMALL_CHANNEL_STAGES=n (4..8) only to measure other depths.
#ifndef MARLIN_WGMMA_SMALL_CHANNEL_STAGES
#define MARLIN_WGMMA_SMALL_CHANNEL_STAGES 6
#endif
inline constexpr int kWgmmaSmallChannelStages = MARLIN_WGMMA_SMALL_CHANNEL_STAGES;
static_assert(kWgmmaSmallChannelStages >= 4 && kWgmmaSmallChannelStages <= 8,
              "MARLIN_WGMMA_SMALL_CHANNEL_STAGES must be within 4..8");
/// The group size of grouped scales (the only one supported so far).
inline constexpr int kGroupSize = 128;
/// Largest m_blocks of one CTA tile; larger M runs as several 64-row problems in one launch.
inline constexpr int kMaxMBlocks = 4;

/// The sm_90 warpgroup (wgmma) kernels: kTileConfigs[kWgmmaConfig] (256 x 64) with 32-, 64- or
/// 128-row tiles (m_blocks kWgmmaMBlocksTiny, kWgmmaMBlocksSmall or kWgmmaMBlocks), and the
/// 256-row tile (kWgmmaMBlocksTall) of kWgmmaNarrowTile. Two warpgroups each own half the
/// columns; per k16 step each issues one wgmma.m64nNk16 (N = the tile's rows) per 64-column
/// strip with the dequantized weights in registers.
inline constexpr int kWgmmaConfig = 1;
/// m_blocks of the large warpgroup tile (128 rows of A per tile).
inline constexpr int kWgmmaMBlocks = 8;
/// m_blocks of the small warpgroup tile (64 rows of A per tile).
inline constexpr int kWgmmaMBlocksSmall = 4;
/// m_blocks of the tall warpgroup tile: 256 rows x 128 columns (kWgmmaNarrowTile only, so that
/// its m64n256 accumulators are one strip of 128 registers per thread). It dequantizes each
/// weight once per 256 rows of A instead of 128: half the dequantization per product.
inline constexpr int kWgmmaMBlocksTall = 16;
/// m_blocks of the 32-row warpgroup tile (256 columns wide), for 17-32 rows on wide layers.
inline constexpr int kWgmmaMBlocksTiny = 2;
/// Whether `m_blocks` is the row count (in 16-row blocks) of a compiled warpgroup tile.
constexpr bool is_wgmma_m_blocks(int m_blocks) {
  return m_blocks == kWgmmaMBlocksTiny || m_blocks == kWgmmaMBlocksSmall ||
         m_blocks == kWgmmaMBlocks || m_blocks == kWgmmaMBlocksTall;
}
/// Columns of C per tile of the warpgroup kernel (two warpgroups of 2 x 64).
inline constexpr int kWgmmaTileN = 256;
/// The narrow tile of the warpgroup kernel: 128 columns (two warpgroups of 64) x 64 K, twice
/// the slices of kTileConfigs[kWgmmaConfig] for layers whose wide tiles leave SMs idle.
inline constexpr TileConfig kWgmmaNarrowTile{8, 4};
/// K per pipeline stage of the warpgroup kernel (one 128-byte swizzled row of A).
inline constexpr int kWgmmaTileK = 64;
/// Alignment of the shared-memory pipeline (wgmma's 128-byte swizzle atoms are 1024 bytes);
/// smem_bytes includes the slack to reach it.
inline constexpr int kSmemAlign = 1024;

/// Every compiled configuration. Index into this table is a configuration's identity.
/// - 128 x 128: small batch; a deep K tile keeps 8 KB of weights per stage in flight.
/// - 256 x 64: larger batch; wider N reuses each A fragment over more columns.
/// - 64 x 128: any N that is a multiple of 64 but not of 128.
inline constexpr TileConfig kTileConfigs[] = {{8, 8}, {16, 4}, {4, 8}};
/// Number of entries in kTileConfigs.
inline constexpr int kNumTileConfigs =
    static_cast<int>(sizeof(kTileConfigs) / sizeof(kTileConfigs[0]));

/// Whether configuration `c` is a valid CTA tile for 8 warps (checked at compile time below).
constexpr bool is_valid(TileConfig c) {
  const int warps_n = c.tile_n() / 64;
  return c.tile_n() % 64 == 0 && warps_n >= 1 && kWarps % warps_n == 0 &&
         c.k_blocks % (kWarps / warps_n) == 0 && kGroupSize % c.tile_k() == 0;
}

namespace detail {
constexpr bool all_valid() {
  for (int i = 0; i < kNumTileConfigs; ++i) {
    if (!is_valid(kTileConfigs[i])) return false;
  }
  return true;
}
static_assert(all_valid(), "every tile configuration must fit 8 warps and divide k % 128");
static_assert(kTileConfigs[kWgmmaConfig].tile_n() == kWgmmaTileN &&
                  kTileConfigs[kWgmmaConfig].tile_k() == kWgmmaTileK,
              "the warpgroup kernel's tile is configuration kWgmmaConfig");
}  // namespace detail

/// The shared-memory pipeline of a decode kernel (mma.sync, m_blocks 1; kernel::gemm_kernel's
/// kPipeline). detail::select_decode_pipeline picks one per call, by its partition.
enum class DecodePipeline : int {
  /// The CTA's threads copy each stage together and meet at one CTA barrier per tile.
  kCtaWide = 0,
  /// Warp-private: each warp copies the weights and the scales it multiplies into a stage
  /// region of its own, the warps that share a K range (one per 64-column strip: a "K group")
  /// copy the bytes of each row of A they all read (64 per tile, 32 in the 64-wide tile), and
  /// each K group waits for its copies at a warp barrier or a named barrier of its own.
  kWarpPrivate = 1,
  /// kWarpPrivate with K groups of as many consecutive K ranges as make 128 bytes of each row
  /// of A (four warps in the 128- and 64-wide tiles, the CTA in the 256-wide one), so that A
  /// takes as many requests per tile as in kCtaWide.
  kWarpPrivateA128 = 2,
};

/// Bytes of each row of A that one K group of a decode kernel's `pipeline` copies at least (0:
/// one K range's).
constexpr int decode_a_group_bytes(DecodePipeline pipeline) {
  return pipeline == DecodePipeline::kWarpPrivateA128 ? 128 : 0;
}

/// Which pipelines the decode kernels run. 1 (the default): each call's by its partition
/// (detail::select_decode_pipeline; the forms that rule can pick are compiled,
/// detail::decode_pipeline_compiled). 0: every decode kernel DecodePipeline::kCtaWide (the code
/// before bench/NOTES.md change 89); 2: every one kWarpPrivate (run 260's form). Build with 0 or
/// 2 only to measure them.
#ifndef MARLIN_DECODE_WARP_PRIVATE
#define MARLIN_DECODE_WARP_PRIVATE 1
#endif
inline constexpr int kDecodeWarpPrivateMode = MARLIN_DECODE_WARP_PRIVATE;
static_assert(kDecodeWarpPrivateMode >= 0 && kDecodeWarpPrivateMode <= 2,
              "MARLIN_DECODE_WARP_PRIVATE must be 0, 1 or 2");

/// Shared memory in bytes of one pipeline stage of a CTA of `m_blocks` x configuration `c`
/// (`warp_private`: a decode kernel's warp-private pipeline, any DecodePipeline but kCtaWide;
/// m_blocks 1 only): the A tile, the B tile and, with grouped scales, one scale row (in a
/// warp-private pipeline, each warp's 64 columns of it).
constexpr int stage_bytes(TileConfig c, int m_blocks, bool grouped, bool warp_private = false) {
  const int a_stage = 16 * m_blocks * c.tile_k() * 2;  // fp16 A tile
  const int b_stage = c.tile_k() * c.tile_n() / 2;      // 4-bit B tile
  const bool strip_per_warp = warp_private && m_blocks == 1;  // each warp's 64 scales
  const int s_stage = !grouped ? 0 : strip_per_warp ? kWarps * 64 * 2 : c.tile_n() * 2;
  return a_stage + b_stage + s_stage;
}

/// Tiles that a mma.sync kernel of m_blocks >= 2 (17-64 rows, one CTA per SM) multiplies
/// between two CTA barriers. Measured on the H200 (bench/NOTES.md, change 14): one barrier
/// per two tiles took ×0.95-0.985 (median per batch) at M = 17-64; the decode kernels
/// (m_blocks 1, two CTAs per SM) gained nothing from it and keep one barrier per tile.
/// Override with -DMARLIN_TILES_PER_SYNC=1 only to measure the alternative.
#ifndef MARLIN_TILES_PER_SYNC
#define MARLIN_TILES_PER_SYNC 2
#endif
inline constexpr int kTilesPerSync = MARLIN_TILES_PER_SYNC;
static_assert(kTilesPerSync == 1 || kTilesPerSync == 2, "MARLIN_TILES_PER_SYNC must be 1 or 2");
/// Pipeline depth of the kernels that synchronize once per two tiles, where it fits
/// kPortableSmemBytes (four tiles in flight while two compute; otherwise kStages).
inline constexpr int kPairedStages = 6;
/// Shared memory that every mma.sync kernel fits: the opt-in limit of a block on sm_86 and
/// sm_89 (99 KB), so one set of kernels runs on every supported GPU.
inline constexpr int kPortableSmemBytes = 99 * 1024;

/// Tiles between two CTA barriers of a kernel (`wgmma`: the warpgroup kernels, always 1).
constexpr int tiles_per_sync(bool wgmma, int m_blocks) {
  return !wgmma && m_blocks >= 2 ? kTilesPerSync : 1;
}

/// Pipeline depth of a kernel of `m_blocks` x configuration `c` with `grouped` scales or
/// per-channel: kWgmmaStages for the warpgroup kernels (`wgmma`; kWgmmaTinyStages for their
/// 32-row tile, kWgmmaSmallStages or per-channel kWgmmaSmallChannelStages for their 64-row
/// tile); for the mma.sync kernels, in either scale mode, kPairedStages where they synchronize
/// once per two tiles and that depth fits kPortableSmemBytes with grouped scales (the larger
/// stage, so that both scale modes of a tile take the same depth), kStages otherwise.
constexpr int stages_for(TileConfig c, int m_blocks, bool wgmma, bool grouped) {
  if (wgmma && m_blocks == kWgmmaMBlocksTiny) return kWgmmaTinyStages;
  if (wgmma && m_blocks == kWgmmaMBlocksSmall) {
    return grouped ? kWgmmaSmallStages : kWgmmaSmallChannelStages;
  }
  if (wgmma) return kWgmmaStages;
  if (tiles_per_sync(false, m_blocks) == 1) return kStages;
  const bool paired_fits =
      kPairedStages * stage_bytes(c, m_blocks, true) + kSmemAlign <= kPortableSmemBytes;
  return paired_fits ? kPairedStages : kStages;
}

/// fp32 tiles that the reduction region of a CTA of `m_blocks` x configuration `c` has room for:
/// in the decode kernels (mma.sync, m_blocks 1) one per K range of warps (8 / (tile_n / 64)),
/// for those whose K ranges store their tiles at once and sum them where the tile is written
/// (gemm_kernel's kRedTiles; bench/NOTES.md, change 93); otherwise one, which the K ranges add
/// into in turn (`wgmma`: the warpgroup kernels, whose warps do not split K).
constexpr int reduction_tiles(TileConfig c, int m_blocks, bool wgmma) {
  return !wgmma && m_blocks == 1 ? kWarps / (c.tile_n() / 64) : 1;
}

/// Bytes of a CTA's pipeline (stages_for stages) or of the fp32 reduction tiles that reuse its
/// memory (reduction_tiles of 16 m_blocks rows, tile_n + 8 floats apart), whichever is larger;
/// `wgmma` for the warpgroup kernels, `warp_private` as in stage_bytes.
constexpr int pipeline_bytes(TileConfig c, int m_blocks, bool grouped, bool wgmma,
                             bool warp_private = false) {
  const int pipe =
      stages_for(c, m_blocks, wgmma, grouped) * stage_bytes(c, m_blocks, grouped, warp_private);
  const int reduce = reduction_tiles(c, m_blocks, wgmma) * 16 * m_blocks * (c.tile_n() + 8) * 4;
  return pipe > reduce ? pipe : reduce;
}

/// Shared memory in bytes that a CTA of `m_blocks` x configuration `c` needs: pipeline_bytes
/// plus the slack that aligns the pipeline to kSmemAlign (`warp_private` as in stage_bytes).
constexpr int smem_bytes(TileConfig c, int m_blocks, bool grouped, bool wgmma,
                         bool warp_private = false) {
  return pipeline_bytes(c, m_blocks, grouped, wgmma, warp_private) + kSmemAlign;
}

/// Bytes of the warp-specialized warpgroup kernel's fp16 output tile (kernel::gemm_kernel_ws),
/// which it places after pipeline_bytes: whole slices convert their accumulators into it and
/// write C from it, so that the copies of the CTA's next slice fill the stages meanwhile. Rows
/// padded by 8 halves (16 bytes), which keeps the fragment stores free of bank conflicts.
constexpr int ws_out_bytes(TileConfig c, int m_blocks) {
  return 16 * m_blocks * (c.tile_n() + 8) * 2;
}

/// Shared memory in bytes that a CTA of the warp-specialized warpgroup kernel of `m_blocks` x
/// configuration `c` needs: the plain warpgroup kernel's (smem_bytes) plus its output tile.
constexpr int ws_smem_bytes(TileConfig c, int m_blocks, bool grouped) {
  return smem_bytes(c, m_blocks, grouped, true) + ws_out_bytes(c, m_blocks);
}

/// Where the cluster-split exchange buffer of a mma.sync CTA starts, in bytes from the aligned
/// pipeline: after the pipeline and the fp32 reduction tile, so that other ranks may write it
/// while this CTA still computes.
constexpr int exchange_offset(TileConfig c, int m_blocks, bool grouped,
                              bool warp_private = false) {
  return pipeline_bytes(c, m_blocks, grouped, false, warp_private);
}

/// Most CTAs of one cluster split (one slice's K over a cluster): the portable cluster size.
inline constexpr int kMaxClusterSplit = 8;

/// Shared memory in bytes of that exchange buffer, which every mma.sync CTA on a device with
/// clusters adds to smem_bytes, whether or not its call splits (so that each kernel has one
/// size on a device): every rank writes each 8-float output vector of its tile into the buffer
/// of the rank that sums that vector, so a buffer holds one tile of vectors plus at most one
/// vector of padding per rank.
constexpr int exchange_bytes(TileConfig c, int m_blocks) {
  return (16 * m_blocks * c.tile_n() / 8 + kMaxClusterSplit) * 32;
}

/// Which warp-specialized tiles 256 wide compute with four warpgroups of one 64-column strip
/// each instead of two of two strips (kernel::gemm_kernel_ws): 2, the 32- and 64-row tiles;
/// 1, the 32-row tile only; 0, none. Four pay where the computing warps' dependency chains,
/// not the tensor pipe, bound a stage: the 32-row tile x0.93-0.97 at M = 17-32 once the wgmma
/// descriptors were built once (bench/NOTES.md changes 60-61; alone, the warps' per-stage
/// overhead outweighed them), the 64-row tile x0.966-0.970 in median at M = 40-64 (change 72,
/// with whole trips). Build with -DMARLIN_WS_WIDE_COMPUTE=1 or 0 only to measure the
/// alternatives.
#ifndef MARLIN_WS_WIDE_COMPUTE
#define MARLIN_WS_WIDE_COMPUTE 2
#endif
inline constexpr int kWsWideCompute = MARLIN_WS_WIDE_COMPUTE;
static_assert(kWsWideCompute >= 0 && kWsWideCompute <= 2,
              "MARLIN_WS_WIDE_COMPUTE must be 0, 1 or 2");

/// Computing warpgroups of the warp-specialized warpgroup tile of `m_blocks` x configuration
/// `c`: 4 for the 32-row tile 256 wide and, at kWsWideCompute 2, the 64-row tile 256 wide, each
/// warpgroup of one 64-column strip; 2 otherwise, each of half the columns. (Four computing
/// warpgroups leave 112 registers per computing thread: ws_compute_regs.)
constexpr int ws_compute_warpgroups(TileConfig c, int m_blocks) {
  const bool four = c.tile_n() == 4 * 64 &&
                    ((kWsWideCompute >= 1 && m_blocks == kWgmmaMBlocksTiny) ||
                     (kWsWideCompute >= 2 && m_blocks == kWgmmaMBlocksSmall));
  return four ? 4 : 2;
}

/// Threads per CTA of the warp-specialized warpgroup tile of `m_blocks` x configuration `c`:
/// a copy warpgroup and ws_compute_warpgroups computing warpgroups of 128 threads.
constexpr int ws_threads(TileConfig c, int m_blocks) {
  return 128 * (1 + ws_compute_warpgroups(c, m_blocks));
}

/// Accumulator vectors (4 floats each) per computing thread of the warp-specialized warpgroup
/// tile of `m_blocks` x configuration `c`: each computing thread holds 8 rows of 8 columns
/// (two vectors) per 16 rows of each 64-column strip of its warpgroup, whose 128 threads
/// together hold 16 rows of the strip per two vectors.
constexpr int ws_accumulator_vectors(TileConfig c, int m_blocks) {
  return (c.tile_n() / 64 / ws_compute_warpgroups(c, m_blocks)) * (16 * m_blocks / 8);
}

/// Whether a cluster split of `split` CTAs of the warp-specialized warpgroup tile of
/// `m_blocks` x configuration `c` runs gemm_kernel_ws's push variant (kPush; bench/NOTES.md
/// change 49): splits of 3 or more of the tiles of at most 16 accumulator vectors of 4 floats
/// per computing thread (the 32- and 64-row tiles 256 wide, the 128-row tile 128 wide).
/// Otherwise the split sums through the cluster window (or, a split of 2, by change 36's
/// exchange).
constexpr bool ws_split_pushes(TileConfig c, int m_blocks, int split) {
  return split >= 3 && split <= kMaxClusterSplit && ws_accumulator_vectors(c, m_blocks) <= 16;
}

/// Bytes of the push variant's receive region for a split of `split` (ws_split_pushes), after
/// its output tile: ceil(vectors / split) vectors of 16 bytes per computing thread from each
/// other rank.
constexpr int ws_push_receive_bytes(TileConfig c, int m_blocks, int split) {
  const int vectors = ws_accumulator_vectors(c, m_blocks);
  const int computing_threads = 128 * ws_compute_warpgroups(c, m_blocks);
  return (split - 1) * ((vectors + split - 1) / split) * computing_threads * 16;
}

/// The largest ws_push_receive_bytes over the splits of 3 .. kMaxClusterSplit: with
/// ws_smem_bytes, the shared memory that the push variant's limit is raised to.
constexpr int ws_push_receive_max_bytes(TileConfig c, int m_blocks) {
  int most = 0;
  for (int split = 3; split <= kMaxClusterSplit; ++split) {
    const int bytes = ws_push_receive_bytes(c, m_blocks, split);
    most = bytes > most ? bytes : most;
  }
  return most;
}

}  // namespace marlin
