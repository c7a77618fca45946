// Warp-specialized variant of the warpgroup kernel's tiles (256, 128, 64 and 32 rows;
// bench/NOTES.md, changes 20-24, 60 and 72). Three or five warpgroups: in warpgroup 0 one thread
// fills the stages with tensor copies (the TMA: the A tile, the B tile and the scale row, whose
// bytes complete on a `full` mbarrier per stage); the computing warpgroups (two of half the
// columns each, or four of one 64-column strip: ws_compute_warpgroups) only dequantize and
// issue wgmmas, and release a stage on its `empty` mbarrier once their wgmmas of it are done.
// No CTA barrier in the main loop, and the copies run up to kDepth tiles ahead. A CTA's run is
// a whole slice, a run of whole slices (in hybrid runs followed by its rank's share of a split
// slice), its rank's share in a cluster split, or a striped run of segments (one per slice it
// touches) reduced through the workspace; the copy thread starts a segment's copies only after
// the previous segment's epilogue has read the reduction tile, which reuses the pipeline's
// memory. Two epilogues let the copies start at once: a whole slice writes C through an fp16
// output tile of its own, after the pipeline (change 37), and a striped CTA that does not sum
// the slice stores its partial from registers.
#pragma once

#include <cuda.h>  // CUtensorMap
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "../ptx/sync.cuh"
#include "gemm_kernel.cuh"

namespace marlin::kernel {

/// Registers per thread of gemm_kernel_ws's copy warpgroup after setmaxnreg, in a CTA of
/// `threads` threads (ws_threads): 40, or 24 where four computing warpgroups need the rest.
constexpr int ws_copy_regs(int threads) { return threads > 384 ? 24 : 40; }
/// Registers per thread of gemm_kernel_ws's computing warpgroups after setmaxnreg, in a CTA of
/// `threads` threads: __launch_bounds__(threads, 1) gives each thread the registers of one SM
/// shared out (a multiple of 8), and the copy warpgroup's surplus goes to the computing
/// threads: 232 of 2 warpgroups (40 * 128 + 232 * 256 = 64,512, the 168 per thread of 384
/// threads; the 128- and 256-row tiles use registers up to R229 without spills, cuobjdump,
/// session 16), 112 of 4 (24 * 128 + 112 * 512 = 60,416 of the 96 per thread of 640).
constexpr int ws_compute_regs(int threads) {
  const int launched = 65536 / threads / 8 * 8;
  return (launched * threads - ws_copy_regs(threads) * 128) / (threads - 128) / 8 * 8;
}
static_assert(ws_compute_regs(384) == 232 && ws_compute_regs(640) == 112,
              "the register counts that the comment above names");

/// Shared address of the kSmemAlign-aligned pipeline in the dynamic shared memory `smem_raw`
/// (where gemm_kernel_ws's `smem` points).
__device__ __forceinline__ uint32_t aligned_smem_address(const void* smem_raw) {
  const auto raw = static_cast<uint32_t>(__cvta_generic_to_shared(smem_raw));
  return (raw + kSmemAlign - 1) & ~static_cast<uint32_t>(kSmemAlign - 1);
}

/// Parameters of gemm_kernel_ws: the GEMM's, and the tensor maps of its copies (filled on the
/// host per call, detail::encode_ws_tensor_maps): A, fp16 [m][k] seen as [k / 64][m][64], in
/// boxes of tile_m rows x 64 columns with the 128-byte swizzle that the wgmma descriptors
/// expect (rows past M come back as zeros); B, 8-byte words [k / 16][n], in boxes of 4 k16 rows
/// x tile_n words; grouped scales, fp16 [k / 128][n], in boxes of one row x tile_n.
struct WsParams {
  Params params;
  CUtensorMap tensor_a;
  CUtensorMap tensor_b;
  CUtensorMap tensor_s;  ///< unused (zero) with per-channel scales
};

/// Geometry of gemm_kernel_ws's tile of 16 kMBlocks rows and 16 kNBlocks columns: the
/// warpgroup kernel's, with its computing warpgroups (ws_compute_warpgroups) and the sizes of
/// tile_config.hpp's host functions, evaluated here so that the kernel can use them.
template <int kMBlocks, int kNBlocks, bool kGrouped>
struct WsGeometry : Geometry<kMBlocks, kNBlocks, kWgmmaTileK / 16, kGrouped, true> {
  static constexpr TileConfig kTile{kNBlocks, kWgmmaTileK / 16};
  static constexpr int kThreads = ws_threads(kTile, kMBlocks);
  static constexpr int kComputeWgs = ws_compute_warpgroups(kTile, kMBlocks);
  static constexpr int kComputeThreads = 128 * kComputeWgs;
  static constexpr int kCopyRegs = ws_copy_regs(kThreads);
  static constexpr int kComputeRegs = ws_compute_regs(kThreads);
  // 64-column strips per computing warpgroup (hides Geometry's, which counts two warpgroups;
  // detail_kernel's accumulator functions read it).
  static constexpr int kWgStrips = kNBlocks / 4 / kComputeWgs;
  static_assert(kWgStrips >= 1 && kComputeWgs * kWgStrips * 64 == 16 * kNBlocks,
                "the computing warpgroups cover the tile's strips");
  // The push variant's accumulator vectors per computing thread, and the bytes of the output
  // tile (where its receive region starts).
  static constexpr int kAccVectors = ws_accumulator_vectors(kTile, kMBlocks);
  static constexpr int kOutBytes = ws_out_bytes(kTile, kMBlocks);
};

/// The warpgroup kernel's tile of 16 kMBlocks rows and 16 kNBlocks columns (256 x 128,
/// 128 x 128 or 256, 64 x 256 or 32 x 256), warp-specialized. Launch with ws_threads threads,
/// ws_smem_bytes of shared memory (gemm_kernel's for that tile plus the fp16 output tile) and
/// any partition (in clusters of part.split CTAs where it splits; with the plan's workspace
/// where striped runs share slices). kPush: the variant for cluster splits of 3 or more where
/// ws_split_pushes holds (whole slices and such splits only; bench/NOTES.md change 49), whose
/// ranks push their vectors to the rank that sums them, launched with ws_push_receive_bytes of
/// shared memory more for its receive region; a kernel of its own, so that the other plans'
/// code stays as it is.
template <int kMBlocks, int kNBlocks, bool kGrouped, bool kPush = false>
__global__ void __launch_bounds__(WsGeometry<kMBlocks, kNBlocks, kGrouped>::kThreads, 1)
    gemm_kernel_ws(const __grid_constant__ WsParams ws) {
#if defined(MARLIN_SM90A_ENABLED)
  const Params& params = ws.params;
  using G = WsGeometry<kMBlocks, kNBlocks, kGrouped>;
  constexpr int kDepth = G::kDepth;
  // The computing loop runs whole trips of kDepth stages with no bound test per stage (the
  // last trip tests it): 75 instructions per warp and stage (between consecutive `full`
  // waits) instead of 93 in the 32-row tile with group scales (bench/NOTES.md change 62), and
  // the 64-row tile's four warpgroups measured faster with them too (change 72). Only where
  // four warpgroups compute: in the two-warpgroup tiles the same loop spilled and their plans
  // ran slower (run 160); in the push kernels ptxas serialized the 32-row tile's wgmmas.
  constexpr bool kWholeTrips = G::kComputeWgs == 4 && !kPush;
  constexpr int kStrips = G::kWgStrips;  // 64-column strips per computing warpgroup
  constexpr int kCopyThreads = 128;
  constexpr int kComputeThreads = G::kComputeThreads;
  // Bytes that complete one stage: the A tile (rows past M included: zeros), B, the scale row.
  constexpr uint32_t kStageBytes =
      16 * (G::kAStage + G::kBStage + (kGrouped ? G::kSStage : 0));
  static_assert(G::kTileK == 64 && G::kAVecsPerRow == 8,
                "four k16 rows and 128-byte A rows per stage");
  // Striped runs store their partial sums from the accumulators, in fragment order, and the
  // last arrival sums them in registers (changes 31 and 34, bench/NOTES.md).
  constexpr int kAccVecs = kStrips * G::kTileM / 8;  // accumulator float4s per thread
  // Vectors loaded at once when one other CTA shares the slice, and with more (when the
  // running sum takes registers too: 8 vectors, or 4 at the 112 registers of four computing
  // warpgroups, where 8 spilled the running sum's loop and slowed the 64-row tile's striped
  // runs x1.13-1.16 on 8192 x 10240; change 72).
  constexpr int kWideChunk = kAccVecs < 16 ? kAccVecs : 16;
  constexpr int kChunkMost = G::kComputeWgs == 4 ? 4 : 8;
  constexpr int kChunk = kWideChunk < kChunkMost ? kWideChunk : kChunkMost;
  static_assert(kAccVecs % kWideChunk == 0 && kWideChunk % kChunk == 0, "whole chunks");
  extern __shared__ int4 smem_raw[];
  __shared__ uint64_t full_bar[kDepth];   // the stage's copies have landed (bytes)
  __shared__ uint64_t empty_bar[kDepth];  // the stage's wgmmas are done (kComputeThreads)
  __shared__ uint64_t red_done_bar;       // a segment's epilogue has read the reduction tile
  __shared__ int is_last_arrival;         // striped runs: this CTA sums the slice
  // kPush: the other ranks' vectors have landed (their bytes; one phase per call).
  __shared__ uint64_t received_bar;
  int4* const smem =
      smem_raw + ((kSmemAlign - (__cvta_generic_to_shared(smem_raw) & (kSmemAlign - 1))) &
                  (kSmemAlign - 1)) / sizeof(int4);
  int4* const sh_a = smem;                        // [kDepth][G::kAStage]
  int4* const sh_b = sh_a + kDepth * G::kAStage;  // [kDepth][G::kBStage]
  int4* const sh_s = sh_b + kDepth * G::kBStage;  // [kDepth][G::kSStage]
  float* const sh_red = reinterpret_cast<float*>(smem);  // [kTileM][kRedStride], at the end
  // The fp16 output tile of whole slices, after the pipeline (and the reduction tile): whole
  // slices write C through it while the next slice's copies fill the stages.
  constexpr int kOutStride = G::kTileN + 8;  // halves
  static_assert(G::kPipelineBytes % 16 == 0 && 2 * kOutStride % 16 == 0,
                "16-byte output vectors");
  __half* const sh_out =
      reinterpret_cast<__half*>(reinterpret_cast<char*>(smem) + G::kPipelineBytes);

  const int tid = static_cast<int>(threadIdx.x);
  // The role, read from lane 0 so that ptxas sees it warp-uniform.
  const int role = __shfl_sync(0xffffffffu, tid / 128, 0);  // 0 copies, 1.. compute
  const detail::Partition& part = params.part;
  const int cta = static_cast<int>(blockIdx.x);
  int run_begin = 0, run_end = 0, tail_begin = 0, tail_end = 0;
  // The tail: in hybrid runs, the CTA's share of a split slice after its whole slices.
  detail::cta_runs(part, cta, run_begin, run_end, tail_begin, tail_end);

  if (tid == 0) {
#pragma unroll
    for (int s = 0; s < kDepth; ++s) {
      ptx::mbarrier_init(&full_bar[s], 1);
      ptx::mbarrier_init(&empty_bar[s], kComputeThreads);
    }
    ptx::mbarrier_init(&red_done_bar, 1);
    ptx::fence_mbarrier_init();
    ptx::prefetch_tensor_map(&ws.tensor_a);
    ptx::prefetch_tensor_map(&ws.tensor_b);
    if constexpr (kGrouped) ptx::prefetch_tensor_map(&ws.tensor_s);
  }
  if constexpr (kPush) {
    // Initialized and fenced by a computing thread, whose relaxed arrival on the cluster
    // barrier (below) then publishes the init to the other ranks.
    if (tid == kCopyThreads) {
      ptx::mbarrier_init(&received_bar, 1);
      ptx::fence_mbarrier_init();
    }
  }
  __syncthreads();
  // kPush: every thread arrives on the cluster barrier once, at the start; the computing
  // threads wait for that phase before their first store into another rank (its receive
  // region and received_bar are then ready, and stay so until it has received everything).
  if constexpr (kPush) ptx::cluster_arrive_relaxed();
  ptx::launch_dependents();
  ptx::grid_dependency_wait();  // before A, the scales, the workspace or C are touched

  // The run is split into segments, one per slice it touches (one segment unless striped runs
  // cross slices). Each segment fills the stages from stage 0; a stage's barriers keep their
  // phases across segments, tracked per stage in a bit mask (bit s: the parity to wait for
  // next on stage s).
  if (role == 0) {
    ptx::setmaxnreg_dec<G::kCopyRegs>();
    if (tid == 0) {
      uint32_t empty_parity = (1u << kDepth) - 1;  // a fresh barrier passes a wait on parity 1
      int segment = 0;
      for (int idx = run_begin, end = run_end, tail = tail_begin; idx < end; ++segment) {
        const detail::Segment seg = detail::run_segment(part, idx, end);
        const int slice = seg.slice, k_begin = seg.k_begin, n_k = seg.n_k;
        idx += n_k;
        detail::continue_with_tail(idx, end, tail, tail_end);
        const int n_tile = slice / part.m_groups;
        const int row0 = (slice % part.m_groups) * G::kTileM;
        // The previous segment's epilogue reuses the stages as its reduction tile (or releases
        // them before it stores its partial, in a striped run it does not sum).
        if (segment > 0) ptx::mbarrier_wait_parity(&red_done_bar, (segment - 1) & 1);
        for (int u0 = 0; u0 < n_k; u0 += kDepth) {
#pragma unroll
          for (int s = 0; s < kDepth; ++s) {
            const int u = u0 + s;
            if (u < n_k) {
              // The stage's previous tile must be released by every computing warpgroup.
              ptx::mbarrier_wait_parity(&empty_bar[s], (empty_parity >> s) & 1);
              empty_parity ^= 1u << s;
              ptx::mbarrier_arrive_expect_tx(&full_bar[s], kStageBytes);
              const int kt = k_begin + u;
              ptx::tensor_copy_3d(sh_a + s * G::kAStage, &ws.tensor_a, 0, row0, kt,
                                  &full_bar[s]);
              ptx::tensor_copy_2d(sh_b + s * G::kBStage, &ws.tensor_b, n_tile * G::kTileN,
                                  kt * (G::kTileK / 16), &full_bar[s]);
              if constexpr (kGrouped) {
                ptx::tensor_copy_2d(sh_s + s * G::kSStage, &ws.tensor_s, n_tile * G::kTileN,
                                    kt * G::kTileK / kGroupSize, &full_bar[s]);
              }
            }
          }
        }
      }
    }
    return;
  }

  ptx::setmaxnreg_inc<G::kComputeRegs>();
  const int cwg = role - 1;  // computing warpgroup: 64-column strips kStrips cwg + s
  const int warp = tid / 32;
  const int wq = warp % 4;
  const int lane = tid % 32;
  const int ctid = tid - kCopyThreads;
  const int c_row_vecs = params.n / 8;
  const __half* const channel_scales = reinterpret_cast<const __half*>(params.scales);
  // D fragments of m64nN (N = kTileM) per strip: [strip][8-column chunk][4]. Not zeroed: the
  // first wgmma of a segment ignores them (scale-d 0). Zeroing them made ptxas serialize every
  // wgmma of the grouped 256-row instance (C7515: non-wgmma instructions defining accumulator
  // registers).
  float acc[kStrips][G::kTileM / 2];
  uint32_t frags[2][2][kStrips][4];  // [half][k16 row of the half][strip][register]
  uint32_t full_parity = 0;          // bit s: the parity of stage s's next `full` phase
  for (int idx = run_begin, end = run_end, tail = tail_begin; idx < end;) {
    const detail::Segment seg = detail::run_segment(part, idx, end);
    const int slice = seg.slice, k_begin = seg.k_begin, n_k = seg.n_k;
    const int k_end = k_begin + n_k;
    idx += n_k;
    detail::continue_with_tail(idx, end, tail, tail_end);
    const int n_tile = slice / part.m_groups;
    const int row0 = (slice % part.m_groups) * G::kTileM;
    const int rows = min(G::kTileM, params.m - row0);
    // One stage: tile u of the segment in stage s (s a constant once the loops below unroll).
    auto run_stage = [&](const int s, const int u) {
      // The tensor copies wrote the stage through the async proxy, as wgmma reads it: the
      // completed phase makes it visible to both wgmma and the loads of B below.
      ptx::mbarrier_wait_parity(&full_bar[s], (full_parity >> s) & 1);
      full_parity ^= 1u << s;
      const int4* const b_tile = sh_b + s * G::kBStage;
      // The wgmma descriptor of the pipeline's first A tile, from its shared address as
      // the symbol gives it, so that ptxas builds it in uniform registers (bench/NOTES.md
      // change 61: built from a generic pointer, each wgmma's descriptor cost ~5
      // instructions; one held across the loop made two tiles spill).
      const uint64_t a_desc = ptx::sw128_k_major_desc(aligned_smem_address(smem_raw));
      [[maybe_unused]] __half2 scale[kStrips];
      if constexpr (kGrouped) {
#pragma unroll
        for (int j = 0; j < kStrips; ++j) {
          scale[j] = reinterpret_cast<const __half2*>(sh_s + s * G::kSStage +
                                                      (kStrips * cwg + j) * 8 + lane / 4)[wq];
        }
      }
#pragma unroll
      for (int half = 0; half < 2; ++half) {
#pragma unroll
        for (int i = 0; i < 2; ++i) {
          const int kr = 2 * half + i;
#pragma unroll
          for (int j = 0; j < kStrips; ++j) {
            detail_kernel::wgmma_b_frag<kGrouped>(
                b_tile + kr * G::kBVecsPerRow + (kStrips * cwg + j) * 32 + lane, wq, scale[j],
                frags[half][i][j]);
          }
        }
        ptx::wgmma_fence();
#pragma unroll
        for (int i = 0; i < 2; ++i) {
          // Stage s's k16 row kr starts 16 kAStage s + 32 kr bytes later (16-byte units).
          const uint64_t desc = a_desc + (16 * s * G::kAStage + 32 * (2 * half + i)) / 16;
#pragma unroll
          for (int j = 0; j < kStrips; ++j) {
            ptx::wgmma_m64k16_f32_f16_rs<G::kTileM>(acc[j], frags[half][i][j], desc,
                                                    u > 0 || half > 0 || i > 0);
          }
        }
        ptx::wgmma_commit_group();
        ptx::wgmma_wait_group<1>();  // every group but this half's is done
        detail_kernel::keep_live_all(frags[1 - half]);
        // After the first half of tile u, tile u - 1's wgmmas are done: release its stage.
        if (half == 0 && u > 0) ptx::mbarrier_arrive(&empty_bar[(s + kDepth - 1) % kDepth]);
      }
    };
    int u0 = 0;
    if constexpr (kWholeTrips) {
      for (; u0 + kDepth <= n_k; u0 += kDepth) {
#pragma unroll
        for (int s = 0; s < kDepth; ++s) run_stage(s, u0 + s);
      }
    }
    for (; u0 < n_k; u0 += kDepth) {
#pragma unroll
      for (int s = 0; s < kDepth; ++s) {
        if (u0 + s < n_k) run_stage(s, u0 + s);
      }
    }
    ptx::wgmma_wait_group<0>();
    detail_kernel::keep_live_all(frags);
    detail_kernel::keep_live_all(acc);
    // The segment's last tile is done too: release its stage (the copy thread refills it only
    // after this segment's epilogue, red_done_bar).
    ptx::mbarrier_arrive(&empty_bar[(n_k - 1) % kDepth]);
    // The computing warpgroups are done with the pipeline's memory (every copy landed before
    // its `full` wait), so it becomes the reduction tile of cluster splits of 3 or more (and of
    // the striped CTA that sums the slice, and of a split of 2, below).
    ptx::named_barrier_sync(1, kComputeThreads);
    const int col0 = n_tile * G::kTileN;
    const int out_vecs = rows * G::kOutVecsPerRow;
    if (k_begin == 0 && k_end == part.k_tiles) {
      // A whole slice: the stages are released at once (the copy thread starts the run's next
      // slice while this one is written), and the accumulators, scaled per channel where the
      // scales are, go to C through the fp16 output tile. Thread (lane, wq) holds rows
      // 8 i + 2 (lane % 4) (+ 1) of columns 16 wq + lane / 4 (+ 8) of each 64-column strip
      // (store_wgmma_acc's layout); the conversion is to_half8's, so C is the same bits.
      if (ctid == 0) ptx::mbarrier_arrive(&red_done_bar);
      // After whole trips the lane and warp are read again here: derived before that loop, the
      // output tile's offsets were held across it and one spilled. (The other kernels keep
      // theirs: a fresh read moved their SASS with nothing to gain.)
      const int e_tid = kWholeTrips ? ptx::thread_index_reread() : tid;
      const int e_lane = e_tid % 32, e_wq = (e_tid / 32) % 4;
#pragma unroll
      for (int strip = 0; strip < kStrips; ++strip) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int col = (kStrips * cwg + strip) * 64 + e_wq * 16 + e_lane / 4 + 8 * h;
          [[maybe_unused]] float scale = 1.0f;
          if constexpr (!kGrouped) scale = detail_kernel::channel_scale(channel_scales, col0 + col);
#pragma unroll
          for (int i = 0; i < G::kTileM / 8; ++i) {
#pragma unroll
            for (int e = 0; e < 2; ++e) {
              float v = acc[strip][4 * i + 2 * h + e];
              if constexpr (!kGrouped) v *= scale;
              sh_out[(8 * i + 2 * (e_lane % 4) + e) * kOutStride + col] = __float2half_rn(v);
            }
          }
        }
      }
      ptx::named_barrier_sync(1, kComputeThreads);
      for (int i = ctid; i < out_vecs; i += kComputeThreads) {
        const int r = i / G::kOutVecsPerRow, v = i % G::kOutVecsPerRow;
        params.c[static_cast<size_t>(row0 + r) * c_row_vecs + n_tile * G::kOutVecsPerRow + v] =
            *reinterpret_cast<const int4*>(sh_out + r * kOutStride + 8 * v);
      }
      // Every thread has read the output tile before the next slice's epilogue writes it.
      ptx::named_barrier_sync(1, kComputeThreads);
      continue;  // the stages were released above
    }
    if (!kPush && part.split > 2) detail_kernel::store_wgmma_acc<G>(acc, sh_red, cwg, wq, lane);
    auto store_c = [&](int i, float4 lo, float4 hi) {
      const int r = i / G::kOutVecsPerRow, v = i % G::kOutVecsPerRow;
      params.c[static_cast<size_t>(row0 + r) * c_row_vecs + n_tile * G::kOutVecsPerRow + v] =
          detail_kernel::to_half8<kGrouped>(lo, hi, channel_scales, col0 + 8 * v);
    };
    auto tile_value = [&](int i) {
      return sh_red + (i / G::kOutVecsPerRow) * G::kRedStride + 8 * (i % G::kOutVecsPerRow);
    };
    // Output vector i of the reduction tile to C.
    auto vec_to_c = [&](int i) {
      const float4* const src = reinterpret_cast<const float4*>(tile_value(i));
      store_c(i, src[0], src[1]);
    };
    if constexpr (kPush) {
      // Cluster split of 3 or more, summed where each vector lands (bench/NOTES.md change 49).
      // A thread's accumulator vectors that hold rows below M (8 rows of a 64-column strip
      // each, the same in both warpgroups), numbered strip by strip, are shared out in rank
      // order: rank r owns [r, r + 1) * per of them (per = ceil(vectors / ranks)). As soon as
      // its loop is done, each thread stores the vectors it does not own into the owner's
      // receive region (after the output tile, used for nothing else, so the owner may still
      // be in its loop), in fragment order, in the owner's slot for this rank (the other ranks
      // in rank order, this one left out), as asynchronous stores that complete their bytes on
      // the owner's received_bar, and the vectors it owns into the pipeline's memory (free
      // since the barrier above). Each rank waits there for the bytes of the others, adds to
      // its own vectors the received ones in rank order from r + 1 (the window sum's order),
      // converts the sums to fp16 in the output tile (to_half8's conversion) and writes its
      // rows of C. No CTA reads another's memory, and every store into a CTA has landed
      // before it passes its wait, so no cluster barrier follows the loop but the wait for
      // the start's phase. The sum is a rolled loop over the owned vectors, read back from
      // shared memory: its code runs once per call, and unrolled over the tile's vectors
      // (registers) it was ~2200 instructions in the 128 x 128 grouped kernel (bench/NOTES.md
      // change 52).
      constexpr int kRowVecs = G::kTileM / 8;  // accumulator vectors per strip (8 rows each)
      static_assert(kAccVecs == kStrips * kRowVecs && kAccVecs == G::kAccVectors &&
                        kAccVecs <= 16 && kComputeThreads == G::kThreads - kCopyThreads,
                    "ws_push_receive_bytes counts this tile's vectors and threads");
      const int ranks = part.split;
      const int rank = cta % ranks;  // part.whole (and the grid of hybrid runs): multiples
      const int live = (rows + 7) / 8;  // vectors per strip that hold rows below M
      const int per = (kStrips * live + ranks - 1) / ranks;  // vectors owned per rank
      const int v_begin = rank * per;
      const int v_end = min(kStrips * live, v_begin + per);
      // Slot of rank p's vectors in rank o's receive region: [slot][vector - o * per][thread].
      auto slot = [](int p, int o) { return p < o ? p : p - 1; };
      const float4* const received = reinterpret_cast<const float4*>(
          reinterpret_cast<const char*>(sh_out) + G::kOutBytes);
      float4* const own = reinterpret_cast<float4*>(smem);  // [vector - v_begin][thread]
      static_assert(kAccVecs * kComputeThreads * 16 <= G::kPipelineBytes,
                    "the owned vectors fit the pipeline's memory");
      // Per-channel scales of this thread's columns (two per strip), loaded while the other
      // ranks finish their loops and push.
      [[maybe_unused]] float scale_lo[kStrips], scale_hi[kStrips];
      if constexpr (!kGrouped) {
#pragma unroll
        for (int j = 0; j < kStrips; ++j) {
          const int col = (kStrips * cwg + j) * 64 + wq * 16 + lane / 4;
          scale_lo[j] = detail_kernel::channel_scale(channel_scales, col0 + col);
          scale_hi[j] = detail_kernel::channel_scale(channel_scales, col0 + col + 8);
        }
      }
      ptx::cluster_wait();  // every rank has started: its received_bar is initialized
      if (ctid == 0) {
        const int owned = v_end > v_begin ? v_end - v_begin : 0;
        ptx::mbarrier_arrive_expect_tx(
            &received_bar, static_cast<uint32_t>((ranks - 1) * owned * kComputeThreads * 16));
      }
      {
        int owner = 0, j = 0;  // the owner of the next live vector, and its index there
#pragma unroll
        for (int q = 0; q < kAccVecs; ++q) {
          if (q % kRowVecs < live) {
            if (owner != rank) {
              const uint32_t dst = ptx::map_shared_rank(
                  received + (slot(rank, owner) * per + j) * kComputeThreads + ctid, owner);
              ptx::st_async_f32x4(dst, detail_kernel::wgmma_acc_vec<G>(acc, q),
                                  ptx::map_shared_rank(&received_bar, owner));
            } else {
              own[j * kComputeThreads + ctid] = detail_kernel::wgmma_acc_vec<G>(acc, q);
            }
            if (++j == per) {
              j = 0;
              ++owner;
            }
          }
        }
      }
      ptx::mbarrier_wait_parity<ptx::WaitScope::kCluster>(&received_bar, 0);
      // Owned vector j is live vector v_begin + j: vector i of strip `strip`.
      int strip = v_begin / live, i = v_begin % live;
#pragma unroll 1
      for (int j = 0; j < v_end - v_begin; ++j) {
        // Every received vector is loaded before the first add.
        float4 term[kMaxClusterSplit - 1];
#pragma unroll
        for (int k = 1; k < kMaxClusterSplit; ++k) {
          if (k < ranks) {
            const int p = rank + k < ranks ? rank + k : rank + k - ranks;
            term[k - 1] = received[(slot(p, rank) * per + j) * kComputeThreads + ctid];
          }
        }
        float4 sum = own[j * kComputeThreads + ctid];
#pragma unroll
        for (int k = 1; k < kMaxClusterSplit; ++k) {
          if (k < ranks) sum = detail_kernel::add4(sum, term[k - 1]);
        }
        // Rows r, r + 1 of columns col, col + 8 (store_wgmma_vec's layout).
        const int r = 8 * i + 2 * (lane % 4);
        const int col = (kStrips * cwg + strip) * 64 + wq * 16 + lane / 4;
        float lo = 1.0f, hi = 1.0f;
        if constexpr (!kGrouped) {
          static_assert(kStrips <= 2, "a strip's scales by a select");
          lo = strip == 0 ? scale_lo[0] : scale_lo[kStrips - 1];
          hi = strip == 0 ? scale_hi[0] : scale_hi[kStrips - 1];
        }
        sh_out[r * kOutStride + col] = __float2half_rn(sum.x * lo);
        sh_out[(r + 1) * kOutStride + col] = __float2half_rn(sum.y * lo);
        sh_out[r * kOutStride + col + 8] = __float2half_rn(sum.z * hi);
        sh_out[(r + 1) * kOutStride + col + 8] = __float2half_rn(sum.w * hi);
        if (++i == live) {
          i = 0;
          ++strip;
        }
      }
      ptx::named_barrier_sync(1, kComputeThreads);
      // This rank's rows of C: per owned vector, 8 rows x 8 output vectors of its strip in
      // each warpgroup (64 output vectors per warpgroup and vector).
      constexpr int kVecOuts = 64 * G::kComputeWgs;  // output vectors per owned vector
      for (int t = ctid; t < (v_end - v_begin) * kVecOuts; t += kComputeThreads) {
        const int v = v_begin + t / kVecOuts;
        const int w = (t % kVecOuts) / 64;  // the warpgroup whose strip it is
        const int r = 8 * (v % live) + (t % 64) / 8;
        const int out = (kStrips * w + v / live) * 8 + t % 8;
        if (r < rows) {
          params.c[static_cast<size_t>(row0 + r) * c_row_vecs + n_tile * G::kOutVecsPerRow +
                   out] = *reinterpret_cast<const int4*>(sh_out + r * kOutStride + 8 * out);
        }
      }
    } else if (part.split == 2) {
      // Cluster split of 2 (one split segment per CTA, the slice's two CTAs one cluster): rank r
      // writes rows [r, r + 1) * kTileM / 2 of C. Once both CTAs are past their loops, each
      // thread stores the accumulator vectors of the other rank's rows straight into that
      // rank's shared memory (in fragment order: coalesced, no bank conflicts), into the half
      // of its reduction tile whose rows that rank does not write; after a second cluster
      // barrier each adds the received vectors to its own, stages the sums in its half of the
      // reduction tile, and writes its rows of C. The sum of two is the same in either order.
      // No load crosses the cluster (the sum through the cluster window was measured slow:
      // bench/NOTES.md, timelines of session 19), and no CTA reads another's memory after
      // the second barrier, so there is no third.
      constexpr int kRowVecs = G::kTileM / 8;  // accumulator vectors per strip (8 rows each)
      constexpr int kHalfVecs = kRowVecs / 2;
      constexpr int kHalfRows = G::kTileM / 2;
      const int rank = cta % 2;  // part.whole (and the grid of hybrid runs) is even
      const float4* const received =
          reinterpret_cast<const float4*>(sh_red + (rank == 0 ? kHalfRows : 0) * G::kRedStride);
      const uint32_t peer_received = ptx::map_shared_rank(
          sh_red + (rank == 0 ? 0 : kHalfRows) * G::kRedStride + 4 * ctid, rank ^ 1);
      // Vector q holds rows 8 (q % kRowVecs) .. + 7 of its strip: the upper half's belong to
      // rank 1. j is its slot among the half's vectors. (Each rank's loop is its own code:
      // with the rank a run-time test per vector, the 128 x 256 instance spilled.)
      auto exchange = [&](auto upper) {
        ptx::cluster_sync();  // both CTAs are past their loops: their stages may be written
#pragma unroll
        for (int q = 0; q < kAccVecs; ++q) {
          const int i = q % kRowVecs;
          const int j = (q / kRowVecs) * kHalfVecs + i % kHalfVecs;
          if ((i >= kHalfVecs) != decltype(upper)::value) {
            ptx::st_shared_cluster_f32x4(peer_received + 16u * kComputeThreads * j,
                                         detail_kernel::wgmma_acc_vec<G>(acc, q));
          }
        }
        ptx::cluster_sync();  // the other rank's vectors have landed
#pragma unroll
        for (int q = 0; q < kAccVecs; ++q) {
          const int i = q % kRowVecs;
          const int j = (q / kRowVecs) * kHalfVecs + i % kHalfVecs;
          if ((i >= kHalfVecs) == decltype(upper)::value) {
            const float4 sum = detail_kernel::add4(detail_kernel::wgmma_acc_vec<G>(acc, q),
                                                   received[j * kComputeThreads + ctid]);
            detail_kernel::store_wgmma_vec<G>(sum, q, sh_red, cwg, wq, lane);
          }
        }
      };
      if (rank == 0) {
        exchange(std::false_type{});
      } else {
        exchange(std::true_type{});
      }
      ptx::named_barrier_sync(1, kComputeThreads);
      const int begin = rank * kHalfRows * G::kOutVecsPerRow;
      const int vec_end = min(out_vecs, begin + kHalfRows * G::kOutVecsPerRow);
      // One vector per trip: unrolled, this loop made ptxas spill six values of the 128 x 256
      // instances (stored in the prologue, reloaded here).
#pragma unroll 1
      for (int i = begin + ctid; i < vec_end; i += kComputeThreads) vec_to_c(i);
    } else if (part.split > 0) {
      // Cluster split of 3 or more (one split segment per CTA; the CTAs of the slice are one
      // cluster, a whole-slice CTA of a hybrid is in a cluster of whole-slice CTAs only, and
      // in hybrid runs every CTA of a cluster runs as many whole slices before its share):
      // once every rank's reduction tile is complete, rank r sums its share of the output
      // vectors over all ranks' tiles: its own from its shared memory, then the others'
      // through distributed shared memory in rank order from r + 1 (the same on every run).
      // The copy warpgroup has exited, which releases it from the cluster barriers.
      // (write_tile's sum for the plain warpgroup kernel still reads every rank's tile
      // through the cluster window, in rank order: change 35 was measured on this kernel
      // only.)
      ptx::cluster_sync();
      const int ranks = part.split;
      const int rank = cta % ranks;  // part.whole (and the grid of hybrid runs): multiples
      for (int i = ctid + rank * kComputeThreads; i < out_vecs; i += ranks * kComputeThreads) {
        const float* const mine = tile_value(i);
        float4 lo = reinterpret_cast<const float4*>(mine)[0];
        float4 hi = reinterpret_cast<const float4*>(mine)[1];
#pragma unroll 7
        for (int j = 1; j < ranks; ++j) {
          const int p = rank + j < ranks ? rank + j : rank + j - ranks;
          const uint32_t addr = ptx::map_shared_rank(mine, p);
          lo = detail_kernel::add4(lo, ptx::ld_shared_cluster_f32x4(addr));
          hi = detail_kernel::add4(hi, ptx::ld_shared_cluster_f32x4(addr + 16));
        }
        store_c(i, lo, hi);
      }
      // No CTA leaves while another still reads its shared memory. This CTA's reads of the
      // others' tiles are complete (their values are in the stores above), so its arrival
      // publishes nothing and is relaxed: no GPU-scope fence waiting for the C stores
      // (bench/NOTES.md change 48).
      ptx::cluster_arrive_relaxed();
      ptx::cluster_wait();
    } else {
      // Striped runs that share the slice, reduced through the workspace among the 256
      // computing threads. Unlike write_tile, a CTA arrives on the slice's counter before it
      // stores anything (the low 16 bits count arrivals): every CTA but the last then stores
      // its fp32 partial and counts it stored (the high bits), and the last to arrive never
      // stores its tile; it waits until every other participant's partial is stored, then
      // sums them all in CTA order (the same on every run) and writes C. The wait cannot
      // deadlock: the CTAs it waits for have arrived, so they are resident and past their
      // loops, and they store without waiting for anything. At the end of a striped run, when
      // every CTA finishes at once, the last arrivals (most of the CTAs) store nothing.
      constexpr int kSlotFloats = G::kTileM * G::kTileN;
      constexpr int kStored = 1 << 16;  // participants <= grid <= kMaxGrid < kStored
      static_assert(detail::kMaxGrid < kStored, "arrivals fit the counter's low bits");
      const int first = detail::first_cta(part, slice);
      const int last = detail::last_cta(part, slice);
      const int participants = last - first + 1;
      int* const counter = params.counters + detail::counter_index(part, slice);
      auto slot_of = [&](int p) {  // participant p's slot in the workspace
        return params.partials +
               static_cast<size_t>(detail::partial_slot(part, p, slice)) * kSlotFloats;
      };
      if (ctid == 0) {
        is_last_arrival = (atomicAdd(counter, 1) & (kStored - 1)) + 1 == participants;
      }
      ptx::named_barrier_sync(1, kComputeThreads);
      if (!is_last_arrival) {
        // The accumulators go straight to the workspace in fragment order (vector q of every
        // thread, then q + 1: coalesced), so the stages are released at once and the copy
        // thread starts the next segment while they are stored.
        if (ctid == 0) ptx::mbarrier_arrive(&red_done_bar);  // this segment's, done early
        float4* const mine = reinterpret_cast<float4*>(slot_of(cta)) + ctid;
#pragma unroll
        for (int q = 0; q < kAccVecs; ++q) {
          __stcg(mine + q * kComputeThreads, detail_kernel::wgmma_acc_vec<G>(acc, q));
        }
        ptx::named_barrier_sync(1, kComputeThreads);  // every partial store before the count
        if (ctid == 0) {
          __threadfence();  // release: this CTA's partial before it is counted stored
          atomicAdd(counter, kStored);
        }
        continue;  // the stages were released above
      }
      if (ctid == 0) {
        while (ptx::ld_acquire_gpu(counter) / kStored != participants - 1) __nanosleep(64);
        *counter = 0;     // leave the counters zeroed for the next call
        __threadfence();  // the other participants' partials are visible to the whole CTA
      }
      ptx::named_barrier_sync(1, kComputeThreads);
      // The last arrival sums each of its own accumulator vectors with the same vector of the
      // others' partials, in CTA order (the same on every run), writes the sums into the
      // reduction tile, and the tile goes to C as 16-byte vectors. The accumulators are only
      // read: a non-wgmma instruction that defines them makes ptxas serialize the main loop's
      // wgmmas (C7515).
      if (participants == 2) {
        // One other partial (the common case): the sum of two is the same in either order, so
        // a chunk of kWideChunk vectors is loaded at once.
        const float4* const other =
            reinterpret_cast<const float4*>(slot_of(cta == first ? last : first)) + ctid;
#pragma unroll
        for (int q0 = 0; q0 < kAccVecs; q0 += kWideChunk) {
          float4 sum[kWideChunk];
#pragma unroll
          for (int j = 0; j < kWideChunk; ++j) {
            sum[j] = __ldcg(other + (q0 + j) * kComputeThreads);
          }
#pragma unroll
          for (int j = 0; j < kWideChunk; ++j) {
            sum[j] = detail_kernel::add4(detail_kernel::wgmma_acc_vec<G>(acc, q0 + j), sum[j]);
            detail_kernel::store_wgmma_vec<G>(sum[j], q0 + j, sh_red, cwg, wq, lane);
          }
        }
      } else {
        // Three or more: a running sum in CTA order, kChunk vectors at a time.
#pragma unroll
        for (int q0 = 0; q0 < kAccVecs; q0 += kChunk) {
          float4 sum[kChunk];
#pragma unroll 1
          for (int p = first; p <= last; ++p) {
            const float4* const src = reinterpret_cast<const float4*>(slot_of(p)) + ctid;
            float4 term[kChunk];
#pragma unroll
            for (int j = 0; j < kChunk; ++j) {
              term[j] = p == cta ? detail_kernel::wgmma_acc_vec<G>(acc, q0 + j)
                                 : __ldcg(src + (q0 + j) * kComputeThreads);
            }
#pragma unroll
            for (int j = 0; j < kChunk; ++j) {
              sum[j] = p == first ? term[j] : detail_kernel::add4(sum[j], term[j]);
            }
          }
#pragma unroll
          for (int j = 0; j < kChunk; ++j) {
            detail_kernel::store_wgmma_vec<G>(sum[j], q0 + j, sh_red, cwg, wq, lane);
          }
        }
      }
      ptx::named_barrier_sync(1, kComputeThreads);
      for (int i = ctid; i < out_vecs; i += kComputeThreads) vec_to_c(i);
    }
    // The reduction tile has been read: the copy thread may refill the stages.
    ptx::named_barrier_sync(1, kComputeThreads);
    if (ctid == 0) ptx::mbarrier_arrive(&red_done_bar);
  }
#else
  (void)ws;
  MARLIN_UNSUPPORTED_ARCH();
#endif
}

}  // namespace marlin::kernel
