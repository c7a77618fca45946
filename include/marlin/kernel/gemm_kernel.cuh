// The fp16 x int4 GEMM kernel: one __global__ template per (m_blocks, tile, scale mode, path).
//
// Per CTA (8 warps), for each slice segment of its run (striped, or its rank's share of a
// cluster split: detail/partition.hpp):
//  1. a cp.async pipeline of stages_for(tile, m_blocks, path, scale mode) stages streams A
//     (fp16; rows past M are zeroed once per segment and never copied, or zero-filled by the
//     copies of the per-channel warp-private decode kernels), B (packed 4-bit) and, for
//     grouped scales, one scale row per K tile into shared memory; each thread's copy
//     addresses are set up once per segment and advanced by a constant per tile (in most decode
//     kernels offset from the segment's first tile by the tile's index), and the loop
//     is unrolled over the stages so that every shared-memory offset is an immediate; one CTA
//     barrier per tile, or per two tiles in the mma.sync kernels of m_blocks >= 2
//     (tiles_per_sync). Decode kernels may run warp-private pipelines instead (kPipeline,
//     detail::select_decode_pipeline): each warp copies its own weights and scales, the warps
//     of one K range copy their rows of A, and each K range's warps meet at their own barrier
//     per tile;
//  2. mma.sync path (m_blocks 1..4): each warp owns a 64-column strip and every
//     (8 / strips)-th k16 row of the tile (in a warp-private pipeline a contiguous run of k16
//     rows, Geometry::k_row): it loads A fragments with ldmatrix.x4 (.x2 of rows
//     0-7 in the per-channel eight-row kernels) from an XOR-swizzled tile, dequantizes its
//     lane's 16 bytes of B in registers (dequant.cuh) and issues mma.sync m16n8k16 into fp32
//     accumulators; the warps that split K then reduce in shared memory in a fixed order
//     (the eight-row kernels and the 64-wide tile's: each K range's tile stored at once and
//     summed where it is written).
//     The eight-row kernels (kEightRows: the 16-row tile where A has at most 8 rows,
//     detail::use_eight_row_kernel) swap the operands: a word's 16 columns x k16 of weights
//     are the mma's A operand and rows 0-7 of A its B operand, so one mma covers what two
//     cover in the 16-row form, which on the H200 the tensor pipe throttles (bench/NOTES.md,
//     change 84);
//  3. warpgroup path (sm_90a, 32- to 256-row tiles): each warpgroup owns half the
//     tile's columns (128, or 64 in the narrow tile, the only width of 256 rows) and all of
//     K; its dequantized B words are the register operand of wgmma.m64nNk16 (N = the tile's
//     rows), A the shared-memory operand; the accumulators go to shared memory as the tile to
//     write;
//  4. a CTA that owns the whole slice writes C. Otherwise, in a cluster split (sm_90), the
//     slice's CTAs form one cluster and sum their reduction tiles through distributed shared
//     memory (mma.sync kernels: each rank writes every output vector into the exchange buffer
//     of the rank that sums it; warpgroup kernels: each rank reads the other ranks' tiles);
//     in striped runs a CTA stores an fp32 partial to the workspace and the last CTA to arrive
//     on the slice sums all partials in CTA order and writes C.
// Per-channel scales are applied once, to the fp32 result; grouped scales in dequantization.
// On sm_90 the host launches with programmatic dependent launch: every CTA lets the next call
// be scheduled at once, prefetches its first weight tiles into L2, and waits for the previous
// grid on the stream before it reads A, scales or the workspace or writes C.
#pragma once

#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "../dequant.cuh"
#include "../detail/partition.hpp"
#include "../ptx/cluster.cuh"
#include "../ptx/cp_async.cuh"
#include "../ptx/ldmatrix.cuh"
#include "../ptx/mma.cuh"
#include "../ptx/pdl.cuh"
#include "../ptx/sync.cuh"
#include "../ptx/wgmma.cuh"
#include "tile_config.hpp"

namespace marlin::kernel {

/// Everything one launch needs. Pointers are 16-byte aligned; sizes as in GemmArgs.
struct Params {
  const int4* a;       ///< [m, k] fp16
  const int4* b;       ///< [k / 16, 2 n] packed words
  const int4* scales;  ///< [k / group or 1, n] fp16, permuted
  int4* c;             ///< [m, n] fp16
  int m, n, k;
  detail::Partition part;
  int* counters;       ///< [detail::kMaxGrid], zero on entry and on exit (counter_index)
  float* partials;     ///< [2 * part.grid][16 * m_blocks][tile_n]
  bool constant_weights;  ///< GemmArgs::constant_weights: B and scales may be read before
                          ///< the dependency wait
};

/// Compile-time geometry of one kernel instance (`kWarpgroup`: the sm_90a wgmma path;
/// `kPipeline`: a decode kernel's pipeline, m_blocks 1 only).
template <int kMBlocks, int kNBlocks, int kKBlocks, bool kGroupedScales, bool kWarpgroup,
          DecodePipeline kPipeline = DecodePipeline::kCtaWide>
struct Geometry {
  static constexpr int kTileM = 16 * kMBlocks;
  static constexpr int kTileN = 16 * kNBlocks;
  static constexpr int kTileK = 16 * kKBlocks;
  // pipeline stages, and tiles multiplied between two CTA barriers
  static constexpr int kDepth =
      stages_for(TileConfig{kNBlocks, kKBlocks}, kMBlocks, kWarpgroup, kGroupedScales);
  static constexpr int kPerSync = tiles_per_sync(kWarpgroup, kMBlocks);
  static_assert(kDepth % kPerSync == 0 && kDepth >= 2 * kPerSync,
                "whole groups of tiles per pipeline trip, and one group in flight");
  static constexpr bool kGrouped = kGroupedScales;
  static constexpr int kWarpsN = kTileN / 64;       // warps across N, one 64-column strip each
  static constexpr int kWarpsK = kWarps / kWarpsN;  // warps splitting K inside the tile
  static constexpr int kSubSteps = kKBlocks / kWarpsK;  // k16 rows per warp per stage
  // Warp-private pipeline (a decode kernel's, detail::select_decode_pipeline): each warp copies
  // the weights and scales it multiplies, the warps of kGroupWarpsK consecutive K ranges (a "K
  // group": warps kWarpsN kGroupWarpsK g .. + kWarpsN kGroupWarpsK - 1 for group g; one K
  // range, its kWarpsN warps, unless decode_a_group_bytes asks for more) the rows of A they
  // read, and each K group synchronizes on its own. The warp of K range warp_k multiplies k16
  // rows warp_k kSubSteps .. + kSubSteps - 1 (otherwise warp_k + kWarpsK step), so that a K
  // group's part of each row of A is contiguous.
  static constexpr bool kWarpPrivate = kPipeline != DecodePipeline::kCtaWide;
  static_assert(!kWarpPrivate || (!kWarpgroup && kMBlocks == 1),
                "only the decode kernels (mma.sync, m_blocks 1) run warp-private pipelines");
  // Shared-memory stage, in 16-byte vectors.
  static constexpr int kAVecsPerRow = kTileK / 8;
  static constexpr int kAStage = kTileM * kAVecsPerRow;  // [kTileM][kTileK / 8], swizzled
  static constexpr int kBVecsPerRow = kTileN / 2;        // one k16 row of the tile
  static constexpr int kBStage = kKBlocks * kBVecsPerRow;  // [kKBlocks][kTileN / 2]
  // Scale vectors of a 64-column strip (64 fp16), and of a stage: the tile's scale row, or in a
  // warp-private pipeline each warp's strip of it ([kWarps][kStripScales]).
  static constexpr int kStripScales = 8;
  static constexpr int kSStage =
      !kGroupedScales ? 0 : kWarpPrivate ? kWarps * kStripScales : kTileN / 8;
  static constexpr int kStage = kAStage + kBStage + kSStage;
  // Warp-private A: K ranges and threads of a K group, the vectors of each row of the A tile
  // that it reads (2 per k16 row) and its threads that copy them (one vector each, rows 0-15).
  static constexpr int kGroupWarpsKWanted =
      decode_a_group_bytes(kPipeline) / (32 * kSubSteps) > 1
          ? decode_a_group_bytes(kPipeline) / (32 * kSubSteps)
          : 1;
  static constexpr int kGroupWarpsK =
      kGroupWarpsKWanted < kWarpsK ? kGroupWarpsKWanted : kWarpsK;
  static constexpr int kGroupThreads = 32 * kWarpsN * kGroupWarpsK;
  static constexpr int kGroupRowVecs = 2 * kSubSteps * kGroupWarpsK;
  static constexpr int kGroupACopiers = 16 * kGroupRowVecs;
  static_assert(!kWarpPrivate || (kWarpsK % kGroupWarpsK == 0 && kGroupACopiers <= kGroupThreads),
                "whole K ranges per K group, whose threads copy its rows of A in one trip");
  /// K16 row of the tile that warp (warp_n, warp_k) multiplies in sub-step `step`.
  static constexpr __host__ __device__ int k_row(int warp_k, int step) {
    return kWarpPrivate ? warp_k * kSubSteps + step : warp_k + kWarpsK * step;
  }
  static constexpr int kRedStride = kTileN + 8;  // floats; +8 makes fragment stores conflict-free
  // Reduction tiles ([kTileM][kRedStride] each, kRedTileFloats apart) that the host leaves room
  // for (reduction_tiles: one per K range in the decode kernels).
  static constexpr int kRedTilesRoom =
      reduction_tiles(TileConfig{kNBlocks, kKBlocks}, kMBlocks, kWarpgroup);
  static constexpr int kRedTileFloats = kTileM * kRedStride;
  static_assert(kRedTilesRoom == 1 || kRedTilesRoom == kWarpsK, "one tile, or one per K range");
  static constexpr int kOutVecsPerRow = kTileN / 8;  // 8 outputs (16 bytes of fp16) per vector
  // Bytes of the pipeline or the reduction tiles that reuse it, whichever is larger.
  static constexpr int kPipelineBytes =
      pipeline_bytes(TileConfig{kNBlocks, kKBlocks}, kMBlocks, kGroupedScales, kWarpgroup,
                     kWarpPrivate);
  static_assert(kRedTilesRoom * kRedTileFloats * 4 <= kPipelineBytes,
                "the reduction tiles fit where the host placed them");
  static_assert(kAVecsPerRow >= 8, "the A swizzle permutes 8 vectors of a row");
  static_assert(kSubSteps >= 1 && kWarpsK * kSubSteps == kKBlocks, "K must split evenly");
  static_assert(kWarpgroup ? is_wgmma_m_blocks(kMBlocks) && kTileK == kWgmmaTileK &&
                                 (kTileN == kWgmmaTileN || kTileN == kWgmmaNarrowTile.tile_n()) &&
                                 (kMBlocks != kWgmmaMBlocksTall ||
                                  kTileN == kWgmmaNarrowTile.tile_n())
                           : kMBlocks >= 1 && kMBlocks <= kMaxMBlocks,
                "the warpgroup path is written for 64 x 128/256 tiles of 32, 64 or 128 rows and "
                "64 x 128 tiles of 256 rows");
  // 64-column strips per warpgroup (warpgroup path): 2 in the 256-column tile, 1 in the 128.
  static constexpr int kWgStrips = kWarpgroup ? kTileN / 128 : 1;
  // Cluster splits of the mma.sync kernels exchange their tiles through a buffer of their own
  // (exchange_bytes, at exchange_offset); the warpgroup kernels' pipelines leave no room for
  // one, so their ranks read each other's reduction tiles instead.
  static constexpr bool kExchange = !kWarpgroup;
  static constexpr int kExchangeOffset =
      kWarpgroup ? 0
                 : exchange_offset(TileConfig{kNBlocks, kKBlocks}, kMBlocks, kGroupedScales,
                                   kWarpPrivate);
  static_assert(kStage * 16 ==
                    stage_bytes(TileConfig{kNBlocks, kKBlocks}, kMBlocks, kGroupedScales,
                                kWarpPrivate),
                "the host's stage size must match the kernel's");
};

namespace detail_kernel {

__device__ __forceinline__ float4 add4(float4 x, float4 y) {
  return make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
}

/// The wgmma register operand of one k16 row of a warpgroup's 64-column strip (the 16 x 16 A
/// fragment, rows = columns of C): word `wq` of the lane's 16 bytes at `b_vec` dequantized, and
/// with grouped scales multiplied by `scale` (low half for the first 8 columns, high half for
/// the other 8; not read per-channel).
template <bool kGrouped>
__device__ __forceinline__ void wgmma_b_frag(const int4* b_vec, int wq, const __half2& scale,
                                             uint32_t (&frag)[4]) {
  const uint32_t word = reinterpret_cast<const uint32_t*>(b_vec)[wq];
  FragB f[2];
  dequant_u4b8(word, f);
  if constexpr (kGrouped) {
    scale_frag(f[0], __low2half(scale));
    scale_frag(f[1], __high2half(scale));
  }
  frag[0] = f[0].reg[0];
  frag[1] = f[1].reg[0];
  frag[2] = f[0].reg[1];
  frag[3] = f[1].reg[1];
}

/// Stores warpgroup `wg`'s accumulators (the D fragments of m64nN, N = G::kTileM, one per
/// 64-column strip) into the reduction tile `sh_red`: strip s's rows (columns of C)
/// 16 wq + lane / 4 (+ 8), its columns (rows of A) 8 i + 2 (lane % 4) (+ 1).
template <class G>
__device__ __forceinline__ void store_wgmma_acc(const float (&acc)[G::kWgStrips][G::kTileM / 2],
                                                float* sh_red, int wg, int wq, int lane) {
#pragma unroll
  for (int s = 0; s < G::kWgStrips; ++s)
#pragma unroll
    for (int i = 0; i < G::kTileM / 8; ++i)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int r = 8 * i + 2 * (lane % 4) + (e & 1);
        const int col = wg * (64 * G::kWgStrips) + s * 64 + wq * 16 + lane / 4 + 8 * (e >> 1);
        sh_red[r * G::kRedStride + col] = acc[s][4 * i + e];
      }
}

/// Accumulator vector `q` of a warpgroup's D fragments (store_wgmma_acc's layout): registers
/// 4 (q % (G::kTileM / 8)) .. + 3 of strip q / (G::kTileM / 8). Reads only.
template <class G>
__device__ __forceinline__ float4 wgmma_acc_vec(const float (&acc)[G::kWgStrips][G::kTileM / 2],
                                                int q) {
  const float* const a = &acc[q / (G::kTileM / 8)][4 * (q % (G::kTileM / 8))];
  return make_float4(a[0], a[1], a[2], a[3]);
}

/// Stores `v`, a warpgroup's accumulator vector `q` (wgmma_acc_vec) or a sum of such vectors,
/// where store_wgmma_acc stores those registers. (store_wgmma_acc keeps its own loop: written
/// through this function, the plain warpgroup kernel's sm_90a SASS changed in six instances.)
template <class G>
__device__ __forceinline__ void store_wgmma_vec(float4 v, int q, float* sh_red, int wg, int wq,
                                                int lane) {
  const int s = q / (G::kTileM / 8), i = q % (G::kTileM / 8);
  const int r = 8 * i + 2 * (lane % 4);
  const int col = wg * (64 * G::kWgStrips) + s * 64 + wq * 16 + lane / 4;
  sh_red[r * G::kRedStride + col] = v.x;
  sh_red[(r + 1) * G::kRedStride + col] = v.y;
  sh_red[r * G::kRedStride + col + 8] = v.z;
  sh_red[(r + 1) * G::kRedStride + col + 8] = v.w;
}

/// Position of column `col`'s scale in the permuted per-channel layout: within a 32-column
/// block, column 2i + {0,1} + 8q sits at position 8i + 2q + {0,1}.
__device__ __forceinline__ int channel_scale_position(int col) {
  const int j = col & 7;
  return (col & ~31) + 2 * ((col & 31) / 8) + 8 * (j / 2) + (j & 1);
}

/// Per-channel scales of 8 consecutive columns `col .. col + 7` (col % 8 == 0), read from the
/// permuted per-channel layout (channel_scale_position).
__device__ __forceinline__ void load_channel_scales(const __half* scales, int col, float (&s)[8]) {
  const int base = channel_scale_position(col);  // col % 8 == 0: the first pair's position
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const __half2 pair = __ldg(reinterpret_cast<const __half2*>(scales + base + 8 * i));
    s[2 * i] = __low2float(pair);
    s[2 * i + 1] = __high2float(pair);
  }
}

/// The per-channel scale of column `col` (channel_scale_position).
__device__ __forceinline__ float channel_scale(const __half* scales, int col) {
  return __half2float(__ldg(scales + channel_scale_position(col)));
}

/// Converts 8 fp32 values, scaled by `s` when per-channel, to one 16-byte fp16 vector.
template <bool kGrouped>
__device__ __forceinline__ int4 to_half8(float4 lo, float4 hi, const __half* scales, int col) {
  float v[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
  if constexpr (!kGrouped) {
    float s[8];
    load_channel_scales(scales, col, s);
#pragma unroll
    for (int i = 0; i < 8; ++i) v[i] *= s[i];
  }
  int4 out;
  __half2* h = reinterpret_cast<__half2*>(&out);
#pragma unroll
  for (int i = 0; i < 4; ++i) h[i] = __floats2half2_rn(v[2 * i], v[2 * i + 1]);
  return out;
}

/// Sets every float of a (nested) array to zero.
__device__ __forceinline__ void zero(float& x) { x = 0.0f; }
template <class T, int kN>
__device__ __forceinline__ void zero(T (&a)[kN]) {
#pragma unroll
  for (int i = 0; i < kN; ++i) zero(a[i]);
}

/// ptx::keep_live over every element of a (nested) array of floats or 32-bit words.
__device__ __forceinline__ void keep_live_all(float& x) { ptx::keep_live(x); }
__device__ __forceinline__ void keep_live_all(uint32_t& x) { ptx::keep_live(x); }
template <class T, int kN>
__device__ __forceinline__ void keep_live_all(T (&a)[kN]) {
#pragma unroll
  for (int i = 0; i < kN; ++i) keep_live_all(a[i]);
}

}  // namespace detail_kernel

/// Writes one segment's fp32 tile `sh_red` (the sum of kRedTiles tiles
/// [G::kTileM][G::kRedStride], complete in shared memory, all threads synchronized) for
/// `slice`, K tiles [k_begin, k_end): straight to C when the segment is the whole slice;
/// otherwise summed over the slice's cluster (cluster split: through `sh_exchange` where
/// G::kExchange, whose CTAs arrived on the cluster barrier at their start) or through the
/// workspace (striped runs). Rows past `rows` are not written.
/// Every thread of the CTA calls it; `is_last_arrival` is a shared-memory flag.
template <class G, int kRedTiles = 1>
__device__ __forceinline__ void write_tile(const Params& params, const float* sh_red,
                                           float* sh_exchange, int slice, int k_begin, int k_end,
                                           int rows, int& is_last_arrival) {
  constexpr int kTileM = G::kTileM;
  constexpr int kTileN = G::kTileN;
  constexpr int kRedStride = G::kRedStride;
  constexpr int kOutVecsPerRow = G::kOutVecsPerRow;
  constexpr bool kGrouped = G::kGrouped;
  const detail::Partition& part = params.part;
  const int tid = static_cast<int>(threadIdx.x);
  const int cta = static_cast<int>(blockIdx.x);
  const int c_row_vecs = params.n / 8;
  const int n_tile = slice / part.m_groups;
  const int row0 = (slice % part.m_groups) * kTileM;
  // Epilogue over 16-byte output vectors of the valid rows.
  const int out_vecs = rows * kOutVecsPerRow;
  const int col0 = n_tile * kTileN;
  const __half* const channel_scales = reinterpret_cast<const __half*>(params.scales);
  // Output vector v of row r: the sum of the tiles in the order kRedTiles - 1, ..., 0 (the order
  // in which the K ranges of a kernel with one tile add into it).
  static_assert(kRedTiles == 1 || kRedTiles == G::kRedTilesRoom, "one tile, or one per K range");
  auto tile_value = [&](int r, int v, float4& lo, float4& hi) {
    const float* const at = sh_red + r * kRedStride + 8 * v;
    const float4* src = reinterpret_cast<const float4*>(at + (kRedTiles - 1) * G::kRedTileFloats);
    lo = src[0];
    hi = src[1];
#pragma unroll
    for (int w = kRedTiles - 2; w >= 0; --w) {
      src = reinterpret_cast<const float4*>(at + w * G::kRedTileFloats);
      lo = detail_kernel::add4(lo, src[0]);
      hi = detail_kernel::add4(hi, src[1]);
    }
  };
  auto store_c = [&](int r, int v, float4 lo, float4 hi) {
    params.c[static_cast<size_t>(row0 + r) * c_row_vecs + n_tile * kOutVecsPerRow + v] =
        detail_kernel::to_half8<kGrouped>(lo, hi, channel_scales, col0 + 8 * v);
  };

  if (k_begin == 0 && k_end == part.k_tiles) {
    for (int i = tid; i < out_vecs; i += kThreads) {
      const int r = i / kOutVecsPerRow, v = i % kOutVecsPerRow;
      float4 lo, hi;
      tile_value(r, v, lo, hi);
      store_c(r, v, lo, hi);
    }
  } else if (part.split > 0 && G::kExchange) {
    // Cluster split, mma.sync kernels: the CTAs of the slice are one cluster. Output vector i
    // is summed by rank i % ranks: every rank writes its value of vector i into that rank's
    // exchange buffer, slot [own rank][i / ranks], through distributed shared memory, without
    // waiting for the other ranks to finish their tiles; after one cluster barrier each rank
    // sums its slots in rank order (the same on every run) and writes C.
    const int ranks = part.split;
    const int rank = cta % ranks;
    const int per_rank = (out_vecs + ranks - 1) / ranks;
    ptx::cluster_wait();  // every CTA of the cluster has started: its shared memory exists
    for (int i = tid; i < out_vecs; i += kThreads) {
      const int r = i / kOutVecsPerRow, v = i % kOutVecsPerRow;
      float4 lo, hi;
      tile_value(r, v, lo, hi);
      const uint32_t addr =
          ptx::map_shared_rank(sh_exchange + 8 * (rank * per_rank + i / ranks), i % ranks);
      ptx::st_shared_cluster_f32x4(addr, lo);
      ptx::st_shared_cluster_f32x4(addr + 16, hi);
    }
    ptx::cluster_sync();  // every rank's vectors are in place; none is written after this
    for (int j = tid; j * ranks + rank < out_vecs; j += kThreads) {
      const int i = j * ranks + rank;
      const float4* const slot = reinterpret_cast<const float4*>(sh_exchange + 8 * j);
      float4 lo = slot[0], hi = slot[1];
      for (int p = 1; p < ranks; ++p) {
        lo = detail_kernel::add4(lo, slot[2 * per_rank * p]);
        hi = detail_kernel::add4(hi, slot[2 * per_rank * p + 1]);
      }
      store_c(i / kOutVecsPerRow, i % kOutVecsPerRow, lo, hi);
    }
  } else if (part.split > 0) {
    // Cluster split, warpgroup kernels: once every reduction tile is complete, rank r sums
    // its share of the output vectors over all ranks' tiles, in rank order (the same on every
    // run), reading them through distributed shared memory.
    ptx::cluster_sync();
    const int ranks = part.split;
    const int rank = cta % ranks;  // (cta - part.whole) % ranks: whole is a multiple of ranks
    for (int i = tid + rank * kThreads; i < out_vecs; i += ranks * kThreads) {
      const int r = i / kOutVecsPerRow, v = i % kOutVecsPerRow;
      const float* const mine = sh_red + r * kRedStride + 8 * v;
      float4 lo = make_float4(0.f, 0.f, 0.f, 0.f), hi = lo;
#pragma unroll 8
      for (int p = 0; p < ranks; ++p) {
        const uint32_t addr = ptx::map_shared_rank(mine, p);
        const float4 plo = ptx::ld_shared_cluster_f32x4(addr);
        const float4 phi = ptx::ld_shared_cluster_f32x4(addr + 16);
        lo = p == 0 ? plo : detail_kernel::add4(lo, plo);
        hi = p == 0 ? phi : detail_kernel::add4(hi, phi);
      }
      store_c(r, v, lo, hi);
    }
    ptx::cluster_sync();  // no CTA leaves while another still reads its shared memory
  } else {
    constexpr int kSlotFloats = kTileM * kTileN;
    float* const mine = params.partials +
                        static_cast<size_t>(detail::partial_slot(part, cta, slice)) * kSlotFloats;
    for (int i = tid; i < out_vecs; i += kThreads) {
      const int r = i / kOutVecsPerRow, v = i % kOutVecsPerRow;
      float4 lo, hi;
      tile_value(r, v, lo, hi);
      float4* dst = reinterpret_cast<float4*>(mine + r * kTileN + 8 * v);
      __stcg(dst, lo);
      __stcg(dst + 1, hi);
    }
    __syncthreads();  // every thread's partial stores happen before thread 0's release
    if (tid == 0) {
      const int first = detail::first_cta(part, slice);
      const int participants = detail::last_cta(part, slice) - first + 1;
      int* const counter = params.counters + detail::counter_index(part, slice);
      // One atomic releases this CTA's partial (stored before the barrier above) with its
      // arrival and, for the last arrival, acquires the others' partials. A fence before a
      // relaxed atomic and one after it took 0.1-0.5 µs longer on the striped decode layers
      // (bench/NOTES.md, change 42).
      const int arrived = ptx::atomic_add_acq_rel_gpu(counter, 1) + 1;
      is_last_arrival = arrived == participants;
      if (arrived == participants) *counter = 0;  // leave the counters zeroed for the next call
    }
    __syncthreads();
    if (is_last_arrival) {
      const int first = detail::first_cta(part, slice);
      const int last = detail::last_cta(part, slice);
      // Each thread sums kBatch output vectors per trip, with only loads in the loop over the
      // partials, so that about 8 vectors' loads are in flight together: from 8 partials of
      // one vector in small tiles (one vector per thread), from 2 partials of 4 vectors in
      // tiles of 4 or more vectors per thread (most slices of a striped run have only 2-3
      // participants). Each vector's sum runs in CTA order, the same on every run.
      constexpr int kVecsPerThread = kTileM * kOutVecsPerRow / kThreads;
      constexpr int kBatch = kVecsPerThread >= 4 ? 4 : kVecsPerThread >= 2 ? 2 : 1;
      constexpr int kUnroll = 8 / kBatch;
      for (int i0 = tid; i0 < out_vecs; i0 += kBatch * kThreads) {
        float4 lo[kBatch], hi[kBatch];
#pragma unroll
        for (int b = 0; b < kBatch; ++b) lo[b] = hi[b] = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll kUnroll
        for (int p = first; p <= last; ++p) {
#pragma unroll
          for (int b = 0; b < kBatch; ++b) {
            const int i = i0 + b * kThreads;
            if (i < out_vecs) {
              const int r = i / kOutVecsPerRow, v = i % kOutVecsPerRow;
              float4 plo, phi;
              if (p == cta) {
                tile_value(r, v, plo, phi);
              } else {
                const float4* slot = reinterpret_cast<const float4*>(
                    params.partials +
                    static_cast<size_t>(detail::partial_slot(part, p, slice)) * kSlotFloats +
                    r * kTileN + 8 * v);
                plo = __ldcg(slot);
                phi = __ldcg(slot + 1);
              }
              lo[b] = p == first ? plo : detail_kernel::add4(lo[b], plo);
              hi[b] = p == first ? phi : detail_kernel::add4(hi[b], phi);
            }
          }
        }
#pragma unroll
        for (int b = 0; b < kBatch; ++b) {
          const int i = i0 + b * kThreads;
          if (i < out_vecs) store_c(i / kOutVecsPerRow, i % kOutVecsPerRow, lo[b], hi[b]);
        }
      }
    }
  }
}

/// The GEMM kernel. Launch with kThreads threads, smem_bytes(tile, kMBlocks, kGrouped, kWgmma,
/// kPipeline != DecodePipeline::kCtaWide) of dynamic shared memory and params.part.grid CTAs.
/// `kWgmma` selects the warpgroup path (sm_90a): wgmma with the dequantized weights as the
/// register operand and the A tile, read through a 128-byte-swizzle descriptor, as the
/// shared-memory operand. Loads, pipeline and epilogue are shared with the mma.sync path.
/// `kEightRows` (mma.sync, kMBlocks 1 only): the kernel for at most 8 rows of A, which
/// multiplies with the weights as the mma's A operand; launch it only where every slice has at
/// most 8 rows (params.m <= 8). `kPipeline` (mma.sync, kMBlocks 1 only): the decode kernel's
/// pipeline (detail::select_decode_pipeline).
template <int kMBlocks, int kNBlocks, int kKBlocks, bool kGrouped, bool kWgmma,
          bool kEightRows = false, DecodePipeline kPipeline = DecodePipeline::kCtaWide>
__global__ void __launch_bounds__(kThreads, 1) gemm_kernel(const Params params) {
#if defined(MARLIN_SM80_ENABLED)
  static_assert(!kEightRows || (kMBlocks == 1 && !kWgmma),
                "the eight-row kernels are the mma.sync path's 16-row tiles");
  using G = Geometry<kMBlocks, kNBlocks, kKBlocks, kGrouped, kWgmma, kPipeline>;
  extern __shared__ int4 smem_raw[];
  __shared__ int is_last_arrival;
  // A stages start 1024-byte aligned, as wgmma's 128-byte swizzle atoms must (smem_bytes
  // counts the slack).
  int4* const smem =
      smem_raw + ((kSmemAlign - (__cvta_generic_to_shared(smem_raw) & (kSmemAlign - 1))) &
                  (kSmemAlign - 1)) / sizeof(int4);

  constexpr int kDepth = G::kDepth;
  int4* const sh_a = smem;                        // [kDepth][G::kAStage]
  int4* const sh_b = sh_a + kDepth * G::kAStage;  // [kDepth][G::kBStage]
  int4* const sh_s = sh_b + kDepth * G::kBStage;  // [kDepth][G::kSStage]
  // [kRedTiles][kTileM][kRedStride], after the pipeline
  float* const sh_red = reinterpret_cast<float*>(smem);
  // The K ranges store their tiles at once, each into a tile of its own that write_tile sums,
  // in the eight-row kernels and in those of eight K ranges (the 64-wide tile): one CTA barrier
  // instead of one per K range (bench/NOTES.md, change 93). The other kernels' K ranges add
  // into one tile in turn, which measured faster in the 16-row kernels of the 128-wide tile on
  // the large layers (run 276).
  constexpr int kRedTiles =
      !kWgmma && kMBlocks == 1 && (kEightRows || G::kWarpsK == kWarps) ? G::kWarpsK : 1;

  const detail::Partition& part = params.part;
  const int tid = static_cast<int>(threadIdx.x);
  const int lane = tid % 32;
  const int warp = tid / 32;
  const int warp_n = warp % G::kWarpsN;
  const int warp_k = warp / G::kWarpsN;

  const int a_row_vecs = params.k / 8;   // int4 per row of A
  const int b_row_vecs = params.n / 2;   // int4 per k16 row of B
  const int s_row_vecs = params.n / 8;   // int4 per row of scales

  // This thread's share of one stage's copies: A vectors tid + it * kThreads (row, vector),
  // B vectors likewise (k16 row, vector), and for grouped scales vector tid of the scale row.
  constexpr int kAIters = (G::kAStage + kThreads - 1) / kThreads;
  constexpr int kBIters = G::kBStage / kThreads;
  static_assert(G::kBStage % kThreads == 0, "every thread copies the same number of B vectors");
  auto a_copies = [&](int it) {
    return G::kAStage % kThreads == 0 || tid + it * kThreads < G::kAStage;
  };
  auto a_row = [&](int it) { return (tid + it * kThreads) / G::kAVecsPerRow; };
  auto a_vec = [&](int it) { return (tid + it * kThreads) % G::kAVecsPerRow; };

  const int cta = static_cast<int>(blockIdx.x);
  int run_begin = 0, run_end = 0;
  detail::cta_run(part, cta, run_begin, run_end);
  // Programmatic dependent launch (sm_90): the next call on the stream may be scheduled as
  // soon as every CTA of this one has started; it waits for this grid's completion itself.
  ptx::launch_dependents();
  bool dependency_pending = true;  // this CTA has not yet waited for the previous grid
  // Per-channel scales: the lines of the slices of the CTA's run (of its first kThreads lines)
  // into L2 now, before the wait (safe there, see ptx::prefetch_l2), so that the conversions
  // at the slices' ends do not wait for DRAM (bench/NOTES.md, change 92).
  if constexpr (!kGrouped) {
    static_assert(G::kTileN * 2 % 128 == 0, "a tile's scales are whole 128-byte lines");
    constexpr int kLines = G::kTileN * 2 / 128;
    const int first = run_begin / part.k_tiles;
    if (run_begin < run_end && tid < ((run_end - 1) / part.k_tiles - first + 1) * kLines) {
      const int n_tile = (first + tid / kLines) / part.m_groups;
      ptx::prefetch_l2(reinterpret_cast<const char*>(params.scales) +
                       (n_tile * G::kTileN * 2 + tid % kLines * 128));
    }
  }
  // A cluster split's ranks write into each other's exchange buffers once they know that
  // every CTA of the cluster has started: this arrival, waited for in write_tile.
  if (G::kExchange && part.split > 0) ptx::cluster_arrive_relaxed();
  float* const sh_exchange =
      reinterpret_cast<float*>(reinterpret_cast<char*>(smem) + G::kExchangeOffset);

  for (int idx = run_begin; idx < run_end;) {
    const int slice = idx / part.k_tiles;
    const int k_begin = idx - slice * part.k_tiles;
    const int k_end = min(part.k_tiles, k_begin + (run_end - idx));
    const int n_k = k_end - k_begin;
    idx += n_k;
    const int n_tile = slice / part.m_groups;
    const int row0 = (slice % part.m_groups) * G::kTileM;
    const int rows = min(G::kTileM, params.m - row0);

    // Copy sources of the segment's first tile, advanced by one tile per load_stage (tiles are
    // loaded strictly in order).
    const int4* a_src[kAIters];
    bool a_live[kAIters];
#pragma unroll
    for (int it = 0; it < kAIters; ++it) {
      a_live[it] = a_copies(it) && a_row(it) < rows;
      const int r = a_live[it] ? a_row(it) : 0;
      a_src[it] = params.a + static_cast<size_t>(row0 + r) * a_row_vecs +
                  k_begin * G::kAVecsPerRow + a_vec(it);
    }
    const int4* b_src[kBIters];
#pragma unroll
    for (int it = 0; it < kBIters; ++it) {
      // Warp-private: B vector (k16 row k_row(warp_k, it), column warp_n * 32 + lane) of the
      // tile, the lane's own of compute_stage_mma; otherwise vector tid + it * kThreads.
      const int i = tid + it * kThreads;
      const int kr = G::kWarpPrivate ? G::k_row(warp_k, it) : i / G::kBVecsPerRow;
      const int v = G::kWarpPrivate ? warp_n * 32 + lane : i % G::kBVecsPerRow;
      b_src[it] = params.b + static_cast<size_t>(k_begin * kKBlocks + kr) * b_row_vecs +
                  n_tile * G::kBVecsPerRow + v;
    }
    const size_t b_tile_step = static_cast<size_t>(kKBlocks) * b_row_vecs;
    // Warp-private A: thread j = tid % kGroupThreads of K group g = warp_k / kGroupWarpsK
    // copies row j / kGroupRowVecs, vector kGroupRowVecs g + j % kGroupRowVecs of the A tile (a
    // contiguous part of each row), if that row is below `rows` (the others are zeroed below,
    // or zero-filled by the copier's copies: kAZeroFill).
    const int wp_group = warp_k / G::kGroupWarpsK;
    const int wp_j = tid % G::kGroupThreads;
    const int wp_a_row = wp_j / G::kGroupRowVecs;
    const bool wp_a_copier = G::kWarpPrivate && wp_j < G::kGroupACopiers;
    const bool wp_a_live = wp_a_copier && wp_a_row < rows;
    const int wp_a_vec = G::kGroupRowVecs * wp_group + wp_j % G::kGroupRowVecs;
    const int4* wp_a_src = params.a +
                           static_cast<size_t>(row0 + (wp_a_live ? wp_a_row : 0)) * a_row_vecs +
                           k_begin * G::kAVecsPerRow + wp_a_vec;
    const int wp_a_dst = wp_a_row * G::kAVecsPerRow + (wp_a_vec ^ (wp_a_row % 8));
    // The per-channel decode kernels and the grouped eight-row kernels of warp-private pipelines
    // (kIndexed) address each tile's copies from the segment's first tile: source = first +
    // rt x the tile's step in bytes, rt = kt - k_begin the tile's index in the segment (a
    // 32-bit offset: check_args keeps every operand under 2^32 bytes), where the other kernels
    // advance their sources by a tile per load_stage, which nvcc copies into fresh register
    // pairs before each copy (bench/NOTES.md, changes 96-97). The grouped ones among them copy
    // each warp's scale strip (128 bytes) with all 32 lanes, 4 bytes each (kScaleWords), where
    // lanes 0-7 copied 16 bytes each under a predicate that nvcc branched around once the
    // copies were indexed. Together 8-16 fewer instructions per loop step there (change 97); in
    // the grouped 16-row kernels the same forms cost 1-3.5 % at M = 16 on the large layers
    // (run 286), so they, and the grouped CTA-wide decode kernels, keep theirs: those whose K
    // tiles are one scale group deep advance a pointer to their scale row by a row per tile
    // (s_run: the row of the next tile that load_stage loads; change 95).
    constexpr bool kDecode = kMBlocks == 1 && !kWgmma;
    constexpr bool kIndexed = kDecode && (!kGrouped || (kEightRows && G::kWarpPrivate));
    constexpr bool kScaleWords = kIndexed && kGrouped;
    // The per-channel indexed kernels of warp-private pipelines copy every A copier's vector in
    // every tile, zero-filling rows at or past `rows` (a source size of 0) instead of skipping
    // them under a predicate and zeroing them once per segment (kAZeroFill): 3-4 instructions
    // fewer per step for x0.996-0.999 at M <= 8 (bench/NOTES.md, change 99). With group scales
    // the same form moved the eight-row loops and lost (run 288), so those keep the zeroing.
    constexpr bool kAZeroFill = kIndexed && !kGrouped && G::kWarpPrivate;
    // Grouped scales: the tile's scale row (warp 0's lanes 0 .. kSStage - 1), or warp-private
    // the 64 columns of each warp's strip (kScaleWords: from the strip's first column).
    const int4* const s_src =
        params.scales + n_tile * (G::kTileN / 8) +
        (G::kWarpPrivate ? warp_n * G::kStripScales + (kScaleWords ? 0 : lane) : tid);
    constexpr bool kScaleRun = kDecode && kGrouped && G::kTileK == kGroupSize && !kScaleWords;
    auto tile_at = [](const auto* first, int rt, uint32_t step_bytes) {
      const uint32_t offset = static_cast<uint32_t>(rt) * step_bytes;
      return reinterpret_cast<decltype(first)>(reinterpret_cast<const char*>(first) + offset);
    };
    const int s_first_row = k_begin * G::kTileK / kGroupSize;
    const int4* s_run = s_src + s_first_row * s_row_vecs;
    const uint32_t* const s_words = reinterpret_cast<const uint32_t*>(s_run) + lane;
    const uint32_t s_row_bytes = 16u * static_cast<uint32_t>(s_row_vecs);
    // Copies the weights and scales of K tile `kt` (`rt`: its index in the segment) into pipeline
    // stage `stage` from `b_at` (the tile's B vectors, one per kBIters); `ahead`: tiles between
    // kt and the next that load_stage loads (s_run's).
    auto copy_weights = [&](int stage, int kt, int rt, const int4* const (&b_at)[kBIters],
                            int ahead) {
#pragma unroll
      for (int it = 0; it < kBIters; ++it) {
        const int dst = G::kWarpPrivate
                            ? G::k_row(warp_k, it) * G::kBVecsPerRow + warp_n * 32 + lane
                            : tid + it * kThreads;
        ptx::cp_async_cg_16(sh_b + stage * G::kBStage + dst, b_at[it], true);
      }
      if constexpr (kGrouped) {
        auto scale_row = [&] {
          return kScaleRun ? s_run + ahead * s_row_vecs
                           : s_src + (kt * G::kTileK / kGroupSize) * s_row_vecs;
        };
        // kScaleWords: every lane of every warp copies a word of its strip's scales. Otherwise
        // lanes 0 .. kSStage - 1 of warp 0 copy the scale row (warp-private: lanes
        // 0 .. kStripScales - 1 of every warp copy their strip's). Written so, the condition is
        // one predicate set before the loop and the destination one register, which takes
        // 5 instructions per tile off every warp's decode loop (bench/NOTES.md, change 16).
        static_assert(G::kSStage <= 32 || G::kWarpPrivate, "one warp copies the scale row");
        if constexpr (kScaleWords) {
          static_assert(G::kStripScales * 16 == 32 * 4, "a strip's scales are a word per lane");
          const int row = G::kTileK == kGroupSize
                              ? rt
                              : kt * G::kTileK / kGroupSize - s_first_row;
          ptx::cp_async_ca_4(
              reinterpret_cast<uint32_t*>(sh_s + stage * G::kSStage + warp * G::kStripScales) +
                  lane,
              tile_at(s_words, row, s_row_bytes));
        } else if constexpr (G::kWarpPrivate) {
          if (lane < G::kStripScales) {
            ptx::cp_async_cg_16(sh_s + stage * G::kSStage + warp * G::kStripScales + lane,
                                scale_row(), true);
          }
        } else if (warp == 0) {
          if (lane < G::kSStage) {
            ptx::cp_async_cg_16(sh_s + stage * G::kSStage + lane, scale_row(), true);
          }
        }
      }
    };
    // The B sources of the segment's K tile `rt`: kIndexed from its first tile; otherwise from
    // b_src, which is the first tile's only until load_stage advances it (the prologue's use).
    const uint32_t b_step_bytes = 16u * static_cast<uint32_t>(b_tile_step);
    auto b_tile = [&](int rt, const int4* (&b_at)[kBIters]) {
#pragma unroll
      for (int it = 0; it < kBIters; ++it) {
        b_at[it] = kIndexed ? tile_at(b_src[it], rt, b_step_bytes)
                            : b_src[it] + rt * b_tile_step;
      }
    };
    // Issues the copies of K tile `kt` (the next in order; `rt` in the segment) into pipeline
    // stage `stage`; its weights and scales only if `weights` (false where they were copied
    // before the dependency wait). The sources advance either way (kIndexed: nothing to advance).
    constexpr uint32_t kAStepBytes = 16u * G::kAVecsPerRow;
    auto load_stage = [&](int stage, int kt, int rt, bool weights = true) {
      if constexpr (G::kWarpPrivate) {
        if (kAZeroFill ? wp_a_copier : wp_a_live) {
          ptx::cp_async_cg_16(sh_a + stage * G::kAStage + wp_a_dst,
                              kIndexed ? tile_at(wp_a_src, rt, kAStepBytes) : wp_a_src,
                              !kAZeroFill || wp_a_live);
        }
        if constexpr (!kIndexed) wp_a_src += G::kAVecsPerRow;
      } else {
#pragma unroll
        for (int it = 0; it < kAIters; ++it) {
          if (a_live[it]) {
            const int r = a_row(it);
            ptx::cp_async_cg_16(
                sh_a + stage * G::kAStage + r * G::kAVecsPerRow + (a_vec(it) ^ (r % 8)),
                kIndexed ? tile_at(a_src[it], rt, kAStepBytes) : a_src[it], true);
          }
          if constexpr (!kIndexed) a_src[it] += G::kAVecsPerRow;
        }
      }
      if constexpr (kIndexed) {
        if (weights) {
          const int4* b_at[kBIters];
          b_tile(rt, b_at);
          copy_weights(stage, kt, rt, b_at, 0);
        }
      } else {
        if (weights) copy_weights(stage, kt, rt, b_src, 0);
        if constexpr (kScaleRun) s_run += s_row_vecs;
#pragma unroll
        for (int it = 0; it < kBIters; ++it) b_src[it] += b_tile_step;
      }
    };

    // mma.sync: [m16 block][16-column tile][n8 half][mma accumulator] (eight-row kernels:
    // [0][16-column tile][0][D fragment of its one mma: rows = columns of C]). wgmma:
    // [64-column strip of the warpgroup][D fragment of m64nN, N = kTileM: rows = columns of
    // C, columns = rows of A].
    using Acc = std::conditional_t<kWgmma, float[G::kWgStrips][G::kTileM / 2],
                                   float[kWgmma ? 1 : kMBlocks][4][2][4]>;
    Acc acc;
    detail_kernel::zero(acc);

    // Multiplies pipeline stage `stage` into acc: the warpgroup path. Warp w of warpgroup wg
    // dequantizes word w % 4 of each lane's 16 bytes of the warpgroup's kWgStrips 64-column
    // strips (kWgStrips wg + s; two in the 256-column tile, one in the 128-column tile): the
    // two 8-column halves of that word's B fragments are the row halves of a
    // 16 x 16 A fragment of wgmma (rows = columns of C). The stage runs as two halves of two
    // k16 rows, each its own wgmma group with its own fragment registers (frags[half]): a
    // half is dequantized while the other half's products run, and `wait_group 1` after each
    // commit frees the registers of the half issued before it. The last half of a stage stays
    // in flight across the next barrier (hence kAhead); the segment's end waits for it.
    // `issue_copies` issues the copies of the tile kAhead ahead (and commits their group).
    using Frags = std::conditional_t<kWgmma, uint32_t[2][2][G::kWgStrips][4], uint32_t[1]>;
    [[maybe_unused]] Frags frags;  // [half][k16 row of the half][strip][register]
    [[maybe_unused]] auto compute_stage_wgmma = [&](int stage, auto&& issue_copies) {
      if constexpr (kWgmma) {
        const int wg = warp / 4, wq = warp % 4;
        const int4* const b_tile = sh_b + stage * G::kBStage;
        // Scales of the warp's two 8-column halves, per strip: halves 2 wq and 2 wq + 1 of the
        // lane's 8 (the same permuted layout as the mma.sync path reads).
        [[maybe_unused]] __half2 scale[G::kWgStrips];
        if constexpr (kGrouped) {
#pragma unroll
          for (int s = 0; s < G::kWgStrips; ++s) {
            scale[s] = reinterpret_cast<const __half2*>(
                sh_s + stage * G::kSStage + (G::kWgStrips * wg + s) * 8 + lane / 4)[wq];
          }
        }
        const char* const a_tile = reinterpret_cast<const char*>(sh_a + stage * G::kAStage);
        static_assert(kKBlocks == 4, "two halves of two k16 rows");
        // The next tile's copies go out after the scale loads above, so that those loads'
        // latency passes while the copies are issued (bench/NOTES.md, change 12).
        issue_copies();
#pragma unroll
        for (int half = 0; half < 2; ++half) {
#pragma unroll
          for (int i = 0; i < 2; ++i) {
            const int kr = 2 * half + i;
#pragma unroll
            for (int s = 0; s < G::kWgStrips; ++s) {
              detail_kernel::wgmma_b_frag<kGrouped>(
                  b_tile + kr * G::kBVecsPerRow + (G::kWgStrips * wg + s) * 32 + lane, wq,
                  scale[s], frags[half][i][s]);
            }
          }
          ptx::wgmma_fence();
#pragma unroll
          for (int i = 0; i < 2; ++i) {
            const uint64_t desc = ptx::sw128_k_major_desc(a_tile + 32 * (2 * half + i));
#pragma unroll
            for (int s = 0; s < G::kWgStrips; ++s) {
              ptx::wgmma_m64k16_f32_f16_rs<G::kTileM>(acc[s], frags[half][i][s], desc, true);
            }
          }
          ptx::wgmma_commit_group();
          ptx::wgmma_wait_group<1>();  // the other half's group is done: its registers are free
          detail_kernel::keep_live_all(frags[1 - half]);
        }
      }
    };

    // The per-channel eight-row kernels load rows 0-7 of A alone (ldmatrix.x2); with group
    // scales they load rows 0-15 (.x4), whose loop nvcc schedules better there (bench/NOTES.md,
    // change 85: the .x2 form x0.99 per-channel, x1.015-1.02 slower with group scales, run 246).
    constexpr bool kEightRowsX2 = kEightRows && !kGrouped;
    // Multiplies pipeline stage `stage` into acc: the mma.sync path.
    [[maybe_unused]] auto compute_stage_mma = [&](int stage) {
      if constexpr (!kWgmma) {
        const int4* const a_tile = sh_a + stage * G::kAStage;
        const int4* const b_tile = sh_b + stage * G::kBStage;
        [[maybe_unused]] __half scale[8];  // [n8 fragment of the warp's 64 columns]
        if constexpr (kGrouped) {
          const int4 s = sh_s[stage * G::kSStage +
                              (G::kWarpPrivate ? warp : warp_n) * G::kStripScales + lane / 4];
          memcpy(scale, &s, sizeof(s));
        }
#pragma unroll
        for (int step = 0; step < G::kSubSteps; ++step) {
          const int kr = G::k_row(warp_k, step);  // k16 row of the tile
          [[maybe_unused]] uint32_t a_frag[kMBlocks][4];
          [[maybe_unused]] uint32_t a_rows[2];  // eight-row kernels: the mma's B operand
          if constexpr (kEightRowsX2) {
            // Rows 0-7 of A only (k 0-7, then k 8-15): rows 8-15 are padding that the
            // transposed product does not read.
            const int r = lane % 8;
            const int v = (2 * kr + lane / 8 % 2) ^ r;
            ptx::ldmatrix_m8n8_x2_b16(a_rows, a_tile + r * G::kAVecsPerRow + v);
          } else {
#pragma unroll
            for (int mb = 0; mb < kMBlocks; ++mb) {
              // Eight-row kernels with group scales: the four 8 x 8 matrices in the order
              // (rows 0-7, k 0-7), (rows 0-7, k 8-15), (rows 8-15, k 0-7), (rows 8-15, k 8-15),
              // so that rows 0-7 are a register pair.
              const int r = kEightRows ? lane % 8 + 8 * (lane / 16) : mb * 16 + lane % 16;
              const int v = (2 * kr + (kEightRows ? lane / 8 % 2 : lane / 16)) ^ (r % 8);
              ptx::ldmatrix_m8n8_x4_b16(a_frag[mb], a_tile + r * G::kAVecsPerRow + v);
            }
            if constexpr (kEightRows) {
              a_rows[0] = a_frag[0][0];
              a_rows[1] = a_frag[0][1];
            }
          }
          const int4 words = b_tile[kr * G::kBVecsPerRow + warp_n * 32 + lane];
          const uint32_t word[4] = {static_cast<uint32_t>(words.x), static_cast<uint32_t>(words.y),
                                    static_cast<uint32_t>(words.z), static_cast<uint32_t>(words.w)};
#pragma unroll
          for (int j = 0; j < 4; ++j) {
            FragB b_frag[2];
            dequant_u4b8(word[j], b_frag);
#pragma unroll
            for (int h = 0; h < 2; ++h) {
              if constexpr (kGrouped) scale_frag(b_frag[h], scale[2 * j + h]);
            }
            if constexpr (kEightRows) {
              // The word's 16 columns x k16 as the A operand (its rows are columns 0-15 of the
              // word: fragment 0's then fragment 1's), rows 0-7 of A as the B operand.
              const uint32_t w_frag[4] = {b_frag[0].reg[0], b_frag[1].reg[0], b_frag[0].reg[1],
                                          b_frag[1].reg[1]};
              ptx::mma_m16n8k16_f32_f16_f16_f32(acc[0][j][0], w_frag, a_rows);
            } else {
#pragma unroll
              for (int h = 0; h < 2; ++h) {
#pragma unroll
                for (int mb = 0; mb < kMBlocks; ++mb) {
                  ptx::mma_m16n8k16_f32_f16_f16_f32(acc[mb][j][h], a_frag[mb], b_frag[h].reg);
                }
              }
            }
          }
        }
      }
    };

    // Pipeline: kAhead tiles in flight before the first multiply; one group per tile. Tile t
    // lives in stage t % kDepth; the loop runs kDepth tiles per trip so that the stage of
    // each tile is a compile-time constant. Between two barriers the CTA multiplies kPerSync
    // tiles (t .. t + kPerSync - 1). mma.sync: kDepth - kPerSync ahead (the stages refilled
    // after the barrier are those of the tiles multiplied before it). wgmma (kPerSync 1):
    // kDepth - 2 ahead, because tile t - 1's last products may still be reading its stage
    // after the barrier.
    constexpr int kPerSync = G::kPerSync;
    constexpr int kAhead = kWgmma ? kDepth - 2 : kDepth - kPerSync;
    // Before its first copies, a CTA fetches the weights of its first kAhead tiles into L2
    // (one prefetch per 128-byte line; safe before the wait, see ptx::prefetch_l2) and then
    // waits for the previous grid in the stream (programmatic dependent launch; at once
    // otherwise): nothing before this point reads A, scales or the workspace or writes C (the
    // per-channel scales above are fetched into L2 only). With constant weights (the caller's
    // promise that no kernel before this one writes them once it lets its dependents launch)
    // it copies those tiles' weights and scales into their stages instead, before the wait,
    // and A's part of them after it; the first commit below puts them into tile 0's group.
    const bool early_weights = dependency_pending && params.constant_weights;
    if (dependency_pending) {
      static_assert(G::kBVecsPerRow % 8 == 0, "a B row of a tile is whole 128-byte lines");
      if (early_weights) {
#pragma unroll
        for (int s = 0; s < kAhead; ++s) {
          const int4* b_at[kBIters];
          b_tile(s, b_at);
          if (s < n_k) copy_weights(s, k_begin + s, s, b_at, s);
        }
      } else if (tid % 8 == 0) {
#pragma unroll
        for (int s = 0; s < kAhead; ++s) {
#pragma unroll
          for (int it = 0; it < kBIters; ++it) {
            if (s < n_k) ptx::prefetch_l2(b_src[it] + s * b_tile_step);
          }
        }
      }
      ptx::grid_dependency_wait();
      dependency_pending = false;
    }
#pragma unroll
    for (int s = 0; s < kAhead; ++s) {
      if (s < n_k) load_stage(s, k_begin + s, s, !early_weights);
      ptx::cp_async_commit_group();
    }
    // Rows of A past M are zero in every stage for the whole segment; only rows < `rows` are
    // copied. (The previous segment's reduction tile overwrote this memory.) Done after the
    // first copies are issued, so that they are already in flight.
    // The per-channel eight-row kernels' .x2 loads read rows 0-7 only.
    constexpr int kReadRows = kEightRowsX2 ? 8 : G::kTileM;
    if constexpr (kAZeroFill) {
      // Nothing to zero: the copies zero-fill rows at or past `rows` in every tile.
    } else if constexpr (G::kWarpPrivate) {
      // Each A copier zeroes its vector for rows rows .. kReadRows - 1, in every stage: the K
      // group's first barrier in the loop below orders the zeros before its ldmatrix loads.
      if (wp_a_copier && wp_a_row >= rows && wp_a_row < kReadRows) {
#pragma unroll
        for (int s = 0; s < kDepth; ++s) sh_a[s * G::kAStage + wp_a_dst] = make_int4(0, 0, 0, 0);
      }
    } else if (rows < kReadRows) {
      const int zero_vecs = (kReadRows - rows) * G::kAVecsPerRow;
#pragma unroll
      for (int s = 0; s < kDepth; ++s) {
        for (int i = tid; i < zero_vecs; i += kThreads) {
          sh_a[s * G::kAStage + rows * G::kAVecsPerRow + i] = make_int4(0, 0, 0, 0);
        }
      }
    }
    for (int t0 = 0; t0 < n_k; t0 += kDepth) {
#pragma unroll
      for (int s = 0; s < kDepth; s += kPerSync) {
        const int t = t0 + s;
        if (t < n_k) {
          ptx::cp_async_wait_group<kAhead - kPerSync>();
          // wgmma reads A through the async proxy: this thread's copies (and the zeroed rows)
          // must be visible to it before the barrier.
          if constexpr (kWgmma) ptx::fence_proxy_async_shared();
          // Tiles t .. t + kPerSync - 1 landed for all threads; the stages of the tiles
          // multiplied before this barrier are free again. In a warp-private pipeline every
          // warp reads only what its own lanes or its K group copied, and refills only what
          // only it or its K group read, so the barrier is the K group's.
          if constexpr (G::kWarpPrivate && G::kGroupThreads == 32) {
            __syncwarp();
          } else if constexpr (G::kWarpPrivate && G::kGroupThreads < kThreads) {
            ptx::named_barrier_sync(1 + wp_group, G::kGroupThreads);
          } else {
            __syncthreads();
          }
          auto issue_copies = [&] {
#pragma unroll
            for (int j = 0; j < kPerSync; ++j) {
              if (t + kAhead + j < n_k) {
                load_stage((s + kAhead + j) % kDepth, k_begin + t + kAhead + j, t + kAhead + j);
              }
              ptx::cp_async_commit_group();
            }
          };
          if constexpr (kWgmma) {
            compute_stage_wgmma(s, issue_copies);
          } else {
            issue_copies();
#pragma unroll
            for (int j = 0; j < kPerSync; ++j) {
              if (j == 0 || t + j < n_k) compute_stage_mma(s + j);
            }
          }
        }
      }
    }
    if constexpr (kWgmma) {
      ptx::wgmma_wait_group<0>();  // the segment's last products are in acc
      detail_kernel::keep_live_all(frags);
      detail_kernel::keep_live_all(acc);
    }
    ptx::cp_async_wait_group<0>();
    __syncthreads();  // the pipeline's shared memory becomes the reduction tile

    if constexpr (kWgmma) {
      detail_kernel::store_wgmma_acc<G>(acc, sh_red, warp / 4, warp % 4, lane);
      __syncthreads();
    } else {
      // Eight-row kernels: the offset in a reduction tile of acc[0][j][0][e] (the mma's D,
      // rows = columns of C): column 16 j + lane / 4 (+ 8 for elements 2-3) of the warp's
      // strip, row 2 (lane % 4) (+ 1 for odd elements).
      [[maybe_unused]] auto eight_row_at = [&](int j, int e) {
        return (2 * (lane % 4) + e % 2) * G::kRedStride + warp_n * 64 + 16 * j + lane / 4 +
               8 * (e / 2);
      };
      // Other kernels: the fp32 pair of acc[mb][j][h][2 half .. 2 half + 1] in a reduction tile
      // at `tile`: row 16 mb + lane / 4 (+ 8 for half 1), columns 16 j + 8 h + 2 (lane % 4) and
      // the next of the warp's strip.
      [[maybe_unused]] auto fragment_at = [&](float* tile, int mb, int j, int h, int half) {
        const int r = mb * 16 + lane / 4 + 8 * half;
        const int col = warp_n * 64 + 16 * j + 8 * h + 2 * (lane % 4);
        return reinterpret_cast<float2*>(tile + r * G::kRedStride + col);
      };
      if constexpr (kRedTiles > 1) {
        // Every K range stores its tile at once (tile warp_k); write_tile sums them.
        float* const tile = sh_red + warp_k * G::kRedTileFloats;
        if constexpr (kEightRows) {
#pragma unroll
          for (int j = 0; j < 4; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) tile[eight_row_at(j, e)] = acc[0][j][0][e];
        } else {
#pragma unroll
          for (int j = 0; j < 4; ++j)
#pragma unroll
            for (int h = 0; h < 2; ++h)
#pragma unroll
              for (int half = 0; half < 2; ++half) {
                *fragment_at(tile, 0, j, h, half) =
                    make_float2(acc[0][j][h][2 * half], acc[0][j][h][2 * half + 1]);
              }
        }
        __syncthreads();
      } else {
        // Reduce the K-splitting warps in a fixed order: warp_k = kWarpsK - 1 stores, the
        // others add in turn, so the sum is the same on every run.
#pragma unroll
        for (int round = G::kWarpsK - 1; round >= 0; --round) {
          if (warp_k == round && kEightRows) {
#pragma unroll
            for (int j = 0; j < 4; ++j)
#pragma unroll
              for (int e = 0; e < 4; ++e) {
                float* const dst = sh_red + eight_row_at(j, e);
                *dst = round != G::kWarpsK - 1 ? *dst + acc[0][j][0][e] : acc[0][j][0][e];
              }
          } else if (warp_k == round) {
#pragma unroll
            for (int mb = 0; mb < kMBlocks; ++mb)
#pragma unroll
              for (int j = 0; j < 4; ++j)
#pragma unroll
                for (int h = 0; h < 2; ++h)
#pragma unroll
                  for (int half = 0; half < 2; ++half) {
                    float2* const dst = fragment_at(sh_red, mb, j, h, half);
                    float2 v = make_float2(acc[mb][j][h][2 * half], acc[mb][j][h][2 * half + 1]);
                    if (round != G::kWarpsK - 1) {
                      const float2 prev = *dst;
                      v.x += prev.x;
                      v.y += prev.y;
                    }
                    *dst = v;
                  }
          }
          __syncthreads();
        }
      }
    }
    write_tile<G, kRedTiles>(params, sh_red, sh_exchange, slice, k_begin, k_end, rows,
                             is_last_arrival);
    __syncthreads();  // the reduction tile is read before the next segment's loads land
  }
#else
  (void)params;
  MARLIN_UNSUPPORTED_ARCH();
#endif
}

}  // namespace marlin::kernel
