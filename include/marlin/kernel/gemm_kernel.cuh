// The fp16 x int4 GEMM kernel: one __global__ template per (m_blocks, tile, scale mode).
//
// Per CTA (8 warps), for each slice segment of its striped run (detail/partition.hpp):
//  1. a cp.async pipeline of params.stages stages streams A (fp16, zero-filled past M), B (packed 4-bit)
//     and, for grouped scales, one scale row per K tile into shared memory;
//  2. each warp owns a 64-column strip and every (8 / strips)-th k16 row of the tile: it loads
//     A fragments with ldmatrix.x4 from an XOR-swizzled tile, dequantizes its lane's 16 bytes
//     of B in registers (dequant.cuh) and issues mma.sync m16n8k16 into fp32 accumulators;
//  3. the warps that split K reduce in shared memory in a fixed order;
//  4. a CTA that owns the whole slice writes C; otherwise it stores an fp32 partial and the
//     last CTA to arrive on the slice sums all partials in CTA order and writes C.
// Per-channel scales are applied once, to the fp32 result; grouped scales in dequantization.
#pragma once

#include <cuda_fp16.h>

#include <cstdint>

#include "../dequant.cuh"
#include "../detail/partition.hpp"
#include "../ptx/cp_async.cuh"
#include "../ptx/ldmatrix.cuh"
#include "../ptx/mma.cuh"
#include "tile_config.hpp"

namespace marlin::kernel {

/// Everything one launch needs. Pointers are 16-byte aligned; sizes as in GemmArgs.
struct Params {
  const int4* a;       ///< [m, k] fp16
  const int4* b;       ///< [k / 16, 2 n] packed words
  const int4* scales;  ///< [k / group or 1, n] fp16, permuted
  int4* c;             ///< [m, n] fp16
  int m, n, k;
  int group_size;      ///< 128, or k for per-channel
  int stages;          ///< pipeline depth, kMinStages..kMaxStages (select_stages)
  detail::Partition part;
  int* counters;       ///< [part.slices], zero on entry and on exit
  float* partials;     ///< [2 * part.grid][16 * m_blocks][tile_n]
};

/// Compile-time geometry of one kernel instance.
template <int kMBlocks, int kNBlocks, int kKBlocks, bool kGrouped>
struct Geometry {
  static constexpr int kTileM = 16 * kMBlocks;
  static constexpr int kTileN = 16 * kNBlocks;
  static constexpr int kTileK = 16 * kKBlocks;
  static constexpr int kWarpsN = kTileN / 64;       // warps across N, one 64-column strip each
  static constexpr int kWarpsK = kWarps / kWarpsN;  // warps splitting K inside the tile
  static constexpr int kSubSteps = kKBlocks / kWarpsK;  // k16 rows per warp per stage
  // Shared-memory stage, in 16-byte vectors.
  static constexpr int kAVecsPerRow = kTileK / 8;
  static constexpr int kAStage = kTileM * kAVecsPerRow;  // [kTileM][kTileK / 8], swizzled
  static constexpr int kBVecsPerRow = kTileN / 2;        // one k16 row of the tile
  static constexpr int kBStage = kKBlocks * kBVecsPerRow;  // [kKBlocks][kTileN / 2]
  static constexpr int kSStage = kGrouped ? kTileN / 8 : 0;  // [kTileN] fp16
  static constexpr int kStage = kAStage + kBStage + kSStage;
  static constexpr int kRedStride = kTileN + 8;  // floats; +8 makes fragment stores conflict-free
  static constexpr int kOutVecsPerRow = kTileN / 8;  // 8 outputs (16 bytes of fp16) per vector
  static_assert(kAVecsPerRow >= 8, "the A swizzle permutes 8 vectors of a row");
  static_assert(kSubSteps >= 1 && kWarpsK * kSubSteps == kKBlocks, "K must split evenly");
  static_assert(kStage * 16 == stage_bytes(TileConfig{kNBlocks, kKBlocks}, kMBlocks, kGrouped),
                "the host's stage size must match the kernel's");
};

namespace detail_kernel {

__device__ __forceinline__ float4 add4(float4 x, float4 y) {
  return make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
}

/// Per-channel scales of 8 consecutive columns `col .. col + 7` (col % 8 == 0), read from the
/// permuted per-channel layout: within a 32-column block, column 2i + {0,1} + 8q sits at
/// position 8i + 2q + {0,1}.
__device__ __forceinline__ void load_channel_scales(const __half* scales, int col, float (&s)[8]) {
  const int base = (col & ~31) + 2 * ((col & 31) / 8);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const __half2 pair = __ldg(reinterpret_cast<const __half2*>(scales + base + 8 * i));
    s[2 * i] = __low2float(pair);
    s[2 * i + 1] = __high2float(pair);
  }
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

}  // namespace detail_kernel

/// The GEMM kernel. Launch with kThreads threads, smem_bytes(tile, kMBlocks, kGrouped,
/// params.stages) of dynamic shared memory and params.part.grid CTAs.
template <int kMBlocks, int kNBlocks, int kKBlocks, bool kGrouped>
__global__ void __launch_bounds__(kThreads, 1) gemm_kernel(const Params params) {
#if defined(MARLIN_SM80_ENABLED)
  using G = Geometry<kMBlocks, kNBlocks, kKBlocks, kGrouped>;
  extern __shared__ int4 smem[];
  __shared__ int is_last_arrival;

  const int stages = params.stages;
  int4* const sh_a = smem;                           // [stages][G::kAStage]
  int4* const sh_b = sh_a + stages * G::kAStage;     // [stages][G::kBStage]
  int4* const sh_s = sh_b + stages * G::kBStage;     // [stages][G::kSStage]
  float* const sh_red = reinterpret_cast<float*>(smem);  // [kTileM][kRedStride], after the pipe

  const detail::Partition& part = params.part;
  const int tid = static_cast<int>(threadIdx.x);
  const int lane = tid % 32;
  const int warp = tid / 32;
  const int warp_n = warp % G::kWarpsN;
  const int warp_k = warp / G::kWarpsN;

  const int a_row_vecs = params.k / 8;   // int4 per row of A
  const int b_row_vecs = params.n / 2;   // int4 per k16 row of B
  const int c_row_vecs = params.n / 8;   // int4 per row of C
  const int s_row_vecs = params.n / 8;   // int4 per row of scales

  const int cta = static_cast<int>(blockIdx.x);
  const int run_begin = cta * part.iters;
  const int run_end = min(run_begin + part.iters, part.total);

  for (int idx = run_begin; idx < run_end;) {
    const int slice = idx / part.k_tiles;
    const int k_begin = idx - slice * part.k_tiles;
    const int k_end = min(part.k_tiles, k_begin + (run_end - idx));
    const int n_k = k_end - k_begin;
    idx += n_k;
    const int n_tile = slice / part.m_groups;
    const int row0 = (slice % part.m_groups) * G::kTileM;
    const int rows = min(G::kTileM, params.m - row0);

    const int4* const a_tile = params.a + static_cast<size_t>(row0) * a_row_vecs;
    const int4* const b_tile = params.b + n_tile * G::kBVecsPerRow;

    // Issues the copies of K tile `kt` into pipeline stage `stage`.
    auto load_stage = [&](int stage, int kt) {
      int4* const a_dst = sh_a + stage * G::kAStage;
#pragma unroll
      for (int it = 0; it < (G::kAStage + kThreads - 1) / kThreads; ++it) {
        const int i = tid + it * kThreads;
        if (G::kAStage % kThreads != 0 && i >= G::kAStage) break;
        const int r = i / G::kAVecsPerRow;
        const int v = i % G::kAVecsPerRow;
        const bool in_range = r < rows;
        const int4* src = in_range ? a_tile + r * a_row_vecs + kt * G::kAVecsPerRow + v : params.a;
        ptx::cp_async_cg_16(a_dst + r * G::kAVecsPerRow + (v ^ (r % 8)), src, in_range);
      }
      int4* const b_dst = sh_b + stage * G::kBStage;
#pragma unroll
      for (int it = 0; it < (G::kBStage + kThreads - 1) / kThreads; ++it) {
        const int i = tid + it * kThreads;
        if (G::kBStage % kThreads != 0 && i >= G::kBStage) break;
        const int kr = i / G::kBVecsPerRow;
        const int v = i % G::kBVecsPerRow;
        ptx::cp_async_cg_16(b_dst + i, b_tile + (kt * kKBlocks + kr) * b_row_vecs + v, true);
      }
      if constexpr (kGrouped) {
        if (tid < G::kSStage) {
          const int group = kt * G::kTileK / params.group_size;
          ptx::cp_async_cg_16(sh_s + stage * G::kSStage + tid,
                              params.scales + group * s_row_vecs + n_tile * G::kSStage + tid,
                              true);
        }
      }
    };

    float acc[kMBlocks][4][2][4];  // [m16 block][16-column tile][n8 half][mma accumulator]
#pragma unroll
    for (int mb = 0; mb < kMBlocks; ++mb)
#pragma unroll
      for (int j = 0; j < 4; ++j)
#pragma unroll
        for (int h = 0; h < 2; ++h)
#pragma unroll
          for (int e = 0; e < 4; ++e) acc[mb][j][h][e] = 0.0f;

    // Multiplies pipeline stage `stage` into acc.
    auto compute_stage = [&](int stage) {
      const int4* const a_src = sh_a + stage * G::kAStage;
      const int4* const b_src = sh_b + stage * G::kBStage;
      [[maybe_unused]] __half scale[8];  // [n8 fragment of the warp's 64 columns]
      if constexpr (kGrouped) {
        const int4 s = sh_s[stage * G::kSStage + warp_n * 8 + lane / 4];
        memcpy(scale, &s, sizeof(s));
      }
#pragma unroll
      for (int step = 0; step < G::kSubSteps; ++step) {
        const int kr = warp_k + G::kWarpsK * step;  // k16 row of the tile
        uint32_t a_frag[kMBlocks][4];
#pragma unroll
        for (int mb = 0; mb < kMBlocks; ++mb) {
          const int r = mb * 16 + lane % 16;
          const int v = (2 * kr + lane / 16) ^ (r % 8);
          ptx::ldmatrix_m8n8_x4_b16(a_frag[mb], a_src + r * G::kAVecsPerRow + v);
        }
        const int4 words = b_src[kr * G::kBVecsPerRow + warp_n * 32 + lane];
        const uint32_t word[4] = {static_cast<uint32_t>(words.x), static_cast<uint32_t>(words.y),
                                  static_cast<uint32_t>(words.z), static_cast<uint32_t>(words.w)};
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          FragB b_frag[2];
          dequant_u4b8(word[j], b_frag);
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            if constexpr (kGrouped) scale_frag(b_frag[h], scale[2 * j + h]);
#pragma unroll
            for (int mb = 0; mb < kMBlocks; ++mb) {
              ptx::mma_m16n8k16_f32_f16_f16_f32(acc[mb][j][h], a_frag[mb], b_frag[h].reg);
            }
          }
        }
      }
    };

    // Pipeline: stages - 1 tiles in flight before the first multiply; one group per tile.
    for (int s = 0; s < stages - 1; ++s) {
      if (s < n_k) load_stage(s, k_begin + s);
      ptx::cp_async_commit_group();
    }
    int read_stage = 0;            // stage of tile t
    int write_stage = stages - 1;  // stage of tile t + stages - 1 (that of tile t - 1)
    for (int t = 0; t < n_k; ++t) {
      ptx::cp_async_wait_group_dynamic<kMinStages - 2, kMaxStages - 2>(stages - 2);
      __syncthreads();  // tile t landed for all threads; the stage of tile t - 1 is free again
      if (t + stages - 1 < n_k) load_stage(write_stage, k_begin + t + stages - 1);
      ptx::cp_async_commit_group();
      compute_stage(read_stage);
      read_stage = read_stage + 1 == stages ? 0 : read_stage + 1;
      write_stage = write_stage + 1 == stages ? 0 : write_stage + 1;
    }
    ptx::cp_async_wait_group<0>();
    __syncthreads();  // the pipeline's shared memory becomes the reduction tile

    // Reduce the K-splitting warps in a fixed order: warp_k = kWarpsK - 1 stores, the others
    // add in turn, so the sum is the same on every run.
#pragma unroll
    for (int round = G::kWarpsK - 1; round >= 0; --round) {
      if (warp_k == round) {
#pragma unroll
        for (int mb = 0; mb < kMBlocks; ++mb)
#pragma unroll
          for (int j = 0; j < 4; ++j)
#pragma unroll
            for (int h = 0; h < 2; ++h)
#pragma unroll
              for (int half = 0; half < 2; ++half) {
                const int r = mb * 16 + lane / 4 + 8 * half;
                const int col = warp_n * 64 + 16 * j + 8 * h + 2 * (lane % 4);
                float2* dst = reinterpret_cast<float2*>(sh_red + r * G::kRedStride + col);
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

    // Epilogue over 16-byte output vectors of the valid rows.
    const int out_vecs = rows * G::kOutVecsPerRow;
    const int col0 = n_tile * G::kTileN;
    const __half* const channel_scales = reinterpret_cast<const __half*>(params.scales);
    auto tile_value = [&](int r, int v, float4& lo, float4& hi) {
      const float4* src = reinterpret_cast<const float4*>(sh_red + r * G::kRedStride + 8 * v);
      lo = src[0];
      hi = src[1];
    };
    auto store_c = [&](int r, int v, float4 lo, float4 hi) {
      params.c[static_cast<size_t>(row0 + r) * c_row_vecs + n_tile * G::kOutVecsPerRow + v] =
          detail_kernel::to_half8<kGrouped>(lo, hi, channel_scales, col0 + 8 * v);
    };

    if (k_begin == 0 && k_end == part.k_tiles) {
      for (int i = tid; i < out_vecs; i += kThreads) {
        const int r = i / G::kOutVecsPerRow, v = i % G::kOutVecsPerRow;
        float4 lo, hi;
        tile_value(r, v, lo, hi);
        store_c(r, v, lo, hi);
      }
    } else {
      constexpr int kSlotFloats = G::kTileM * G::kTileN;
      float* const mine = params.partials +
                          static_cast<size_t>(detail::partial_slot(part, cta, slice)) * kSlotFloats;
      for (int i = tid; i < out_vecs; i += kThreads) {
        const int r = i / G::kOutVecsPerRow, v = i % G::kOutVecsPerRow;
        float4 lo, hi;
        tile_value(r, v, lo, hi);
        float4* dst = reinterpret_cast<float4*>(mine + r * G::kTileN + 8 * v);
        __stcg(dst, lo);
        __stcg(dst + 1, hi);
      }
      __threadfence();  // partial visible device-wide before the arrival below
      __syncthreads();
      if (tid == 0) {
        const int participants = detail::last_cta(part, slice) - detail::first_cta(part, slice) + 1;
        const int arrived = atomicAdd(params.counters + slice, 1) + 1;
        is_last_arrival = arrived == participants;
        if (arrived == participants) params.counters[slice] = 0;  // leave the workspace zeroed
      }
      __syncthreads();
      if (is_last_arrival) {
        __threadfence();  // acquire: the other participants' partials are visible
        const int first = detail::first_cta(part, slice);
        const int last = detail::last_cta(part, slice);
        for (int i = tid; i < out_vecs; i += kThreads) {
          const int r = i / G::kOutVecsPerRow, v = i % G::kOutVecsPerRow;
          const float4 zero = make_float4(0.f, 0.f, 0.f, 0.f);
          float4 lo = zero, hi = zero;
          for (int p = first; p <= last; ++p) {
            float4 plo, phi;
            float4* slot = reinterpret_cast<float4*>(
                params.partials +
                static_cast<size_t>(detail::partial_slot(part, p, slice)) * kSlotFloats +
                r * G::kTileN + 8 * v);
            if (p == cta) {
              tile_value(r, v, plo, phi);
            } else {
              plo = __ldcg(slot);
              phi = __ldcg(slot + 1);
            }
            // Leave the whole workspace zero: a later call of another shape may place its
            // counters where this call's partials were.
            __stcg(slot, zero);
            __stcg(slot + 1, zero);
            lo = p == first ? plo : detail_kernel::add4(lo, plo);
            hi = p == first ? phi : detail_kernel::add4(hi, phi);
          }
          store_c(r, v, lo, hi);
        }
      }
    }
    __syncthreads();  // the reduction tile is read before the next segment's loads land
  }
#else
  (void)params;
  MARLIN_UNSUPPORTED_ARCH();
#endif
}

}  // namespace marlin::kernel
