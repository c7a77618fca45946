// Device queries, the launch plan (configuration, grid, workspace) and kernel dispatch.
// Dispatch is a fold over kTileConfigs: a fixed configuration instantiates only its own
// kernels; automatic configuration instantiates the whole table and the warpgroup kernels.
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>  // PFN_cuTensorMapEncodeTiled
#include <cuda_runtime.h>

#include <cstddef>
#include <mutex>
#include <type_traits>
#include <utility>
#include <vector>

#include "../kernel/gemm_kernel.cuh"
#include "../kernel/gemm_kernel_ws.cuh"
#include "../status.hpp"
#include "../types.hpp"
#include "heuristics.hpp"
#include "partition.hpp"
#include "validate.hpp"

namespace marlin {

/// Configuration policy: choose the tile configuration from the problem (the default).
struct AutoTile {};

/// Configuration policy: always use kTileConfigs[kIndex]; problems it cannot tile are
/// refused with Status::kErrorUnsupportedShape.
template <int kIndex>
struct FixedTile {
  static_assert(kIndex >= 0 && kIndex < kNumTileConfigs, "no such tile configuration");
  static constexpr int kConfig = kIndex;
};

namespace detail {

/// At most this many CTAs per SM are launched: more adds partial slots without adding
/// bandwidth once two CTAs keep the memory pipeline full.
inline constexpr int kMaxCtasPerSm = 2;

/// Whether plans may use the sm_90 cluster split (make_plan). Build with
/// -DMARLIN_CLUSTER_SPLIT=0 only to measure the striped partition alone (bench/NOTES.md).
#ifndef MARLIN_CLUSTER_SPLIT
#define MARLIN_CLUSTER_SPLIT 1
#endif
inline constexpr bool kClusterSplit = MARLIN_CLUSTER_SPLIT != 0;

/// Whether plans may use the sm_90 warpgroup kernel for large M (make_plan). Build with
/// -DMARLIN_WGMMA=0 only to measure the mma.sync kernel alone (bench/NOTES.md).
#ifndef MARLIN_WGMMA
#define MARLIN_WGMMA 1
#endif
inline constexpr bool kWgmmaPath = MARLIN_WGMMA != 0;

/// Partition policy of the warpgroup kernel (select_wgmma_partition): 0, the cost model. Build
/// with -DMARLIN_WGMMA_PLAN=1 (never striped, no hybrid) or 2 (always striped) only to measure
/// the alternatives (bench/NOTES.md).
#ifndef MARLIN_WGMMA_PLAN
#define MARLIN_WGMMA_PLAN 0
#endif
inline constexpr int kWgmmaPlan = MARLIN_WGMMA_PLAN;

/// Which warpgroup tiles run their warp-specialized variant (kernel::gemm_kernel_ws: tensor
/// copies, no CTA barrier per stage), under every partition (launches_ws): 1, the 256-row
/// tile; 2, also the 128-row tiles; 3, also the 64-row tile; 4 (the default), also the 32-row
/// tile. Build with -DMARLIN_WGMMA_WS=0 (none) or another level only to measure the
/// alternatives (bench/NOTES.md, changes 20-24).
#ifndef MARLIN_WGMMA_WS
#define MARLIN_WGMMA_WS 4
#endif
inline constexpr int kWgmmaWsLevel = MARLIN_WGMMA_WS;
inline constexpr bool kWgmmaWs = kWgmmaWsLevel != 0;
static_assert(kWgmmaWsLevel >= 0 && kWgmmaWsLevel <= 4, "MARLIN_WGMMA_WS must be within 0..4");

/// Whether the warp-specialized kernels also run striped partitions (runs of several slices,
/// reduced through the workspace), not only whole slices and cluster splits (change 23,
/// bench/NOTES.md). Build with -DMARLIN_WGMMA_WS_STRIPED=0 only to measure without.
#ifndef MARLIN_WGMMA_WS_STRIPED
#define MARLIN_WGMMA_WS_STRIPED 1
#endif
inline constexpr bool kWgmmaWsStriped = MARLIN_WGMMA_WS_STRIPED != 0;

/// Whether whole-slice plans of the warp-specialized kernels run as runs of whole slices over
/// at most one CTA per SM (make_whole_runs) rather than one CTA per slice in waves (change 37,
/// bench/NOTES.md). Build with -DMARLIN_WGMMA_WHOLE_RUNS=0 only to measure without.
#ifndef MARLIN_WGMMA_WHOLE_RUNS
#define MARLIN_WGMMA_WHOLE_RUNS 1
#endif
inline constexpr bool kWgmmaWholeRuns = MARLIN_WGMMA_WHOLE_RUNS != 0;

/// Whether the warpgroup tile of `m_blocks` rows has a warp-specialized variant in this build.
constexpr bool ws_tile(int m_blocks) {
  return (kWgmmaWsLevel >= 1 && m_blocks == kWgmmaMBlocksTall) ||
         (kWgmmaWsLevel >= 2 && m_blocks == kWgmmaMBlocks) ||
         (kWgmmaWsLevel >= 3 && m_blocks == kWgmmaMBlocksSmall) ||
         (kWgmmaWsLevel >= 4 && m_blocks == kWgmmaMBlocksTiny);
}

/// Whether sm_90 launches use programmatic dependent launch (the kernel's setup and first
/// weight prefetches overlap the tail of the previous kernel on the stream). Build with
/// -DMARLIN_PDL=0 only to measure without it (bench/NOTES.md).
#ifndef MARLIN_PDL
#define MARLIN_PDL 1
#endif
inline constexpr bool kPdl = MARLIN_PDL != 0;

/// What the plan needs to know of the current device.
struct DeviceInfo {
  int device = 0;
  int sm_count = 0;
  int cc_major = 0;
  int smem_optin = 0;     ///< opt-in shared memory per block, bytes
  bool cluster = false;   ///< the code that runs on it was compiled for sm_90+ (clusters)
  bool wgmma = false;     ///< the code that runs on it is sm_90a (has the warpgroup kernel)
};

/// Static shared memory of arch_probe_kernel in code compiled for sm_90 (plain or from PTX).
inline constexpr int kProbeSm90Bytes = 128;
/// Static shared memory of arch_probe_kernel in code compiled for sm_90a.
inline constexpr int kProbeSm90aBytes = 256;

/// Probe of the code that runs on the current device: what the compiler's target was is not
/// visible to the host (an sm_90 GPU may run sm_90a or sm_90 machine code, or code JIT-compiled
/// from compute_80 PTX, and cudaFuncAttributes::binaryVersion describes the machine code, not
/// the source's target), but this kernel's static shared memory is: 0 below sm_90,
/// kProbeSm90Bytes for sm_90, kProbeSm90aBytes for sm_90a. cudaFuncGetAttributes reads it
/// without a launch; the kernel is never launched. (A template: header-only, no ODR clash.)
template <int kUnused = 0>
__global__ void arch_probe_kernel(int* out) {
#if defined(MARLIN_SM90A_ENABLED)
  __shared__ int marker[kProbeSm90aBytes / sizeof(int)];
#elif defined(MARLIN_SM90_ENABLED)
  __shared__ int marker[kProbeSm90Bytes / sizeof(int)];
#endif
#if defined(MARLIN_SM90_ENABLED)
  marker[threadIdx.x % 32] = 1;
  __syncthreads();
  *out = marker[0];
#else
  (void)out;
#endif
}

/// Maps a CUDA error met while preparing or launching to a Status.
inline Status status_from(cudaError_t err) {
  switch (err) {
    case cudaSuccess: return Status::kSuccess;
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver: return Status::kErrorNoDevice;
    case cudaErrorNoKernelImageForDevice:
    case cudaErrorInvalidDeviceFunction: return Status::kErrorNoKernelImage;
    default: return Status::kErrorCudaError;
  }
}

/// Reads the properties of device `device` (cheap attribute queries).
inline Status read_device(int device, DeviceInfo& info) {
  info.device = device;
  cudaError_t err;
  if ((err = cudaDeviceGetAttribute(&info.cc_major, cudaDevAttrComputeCapabilityMajor,
                                    device)) != cudaSuccess ||
      (err = cudaDeviceGetAttribute(&info.sm_count, cudaDevAttrMultiProcessorCount, device)) !=
          cudaSuccess ||
      (err = cudaDeviceGetAttribute(&info.smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin,
                                    device)) != cudaSuccess) {
    (void)cudaGetLastError();
    return status_from(err);
  }
  // On sm_90+ devices, what the code this binary runs there was compiled for (the current
  // device is `device` here; the kernels come from the same compilation as the probe).
  info.cluster = false;
  info.wgmma = false;
  if (info.cc_major >= 9) {
    cudaFuncAttributes attrs{};
    if ((err = cudaFuncGetAttributes(&attrs, arch_probe_kernel<>)) != cudaSuccess) {
      (void)cudaGetLastError();
      return status_from(err);
    }
    info.cluster = attrs.sharedSizeBytes >= static_cast<std::size_t>(kProbeSm90Bytes);
    info.wgmma = attrs.sharedSizeBytes >= static_cast<std::size_t>(kProbeSm90aBytes);
  }
  return Status::kSuccess;
}

/// Launch configuration of `grid` CTAs of `threads` threads with `smem` bytes of dynamic shared
/// memory on `stream`: in clusters of `cluster` CTAs along x when `cluster` > 0, and with
/// programmatic stream serialization (programmatic dependent launch) when `pdl` is set. Not
/// copyable: `config` points at `attrs`.
struct LaunchConfig {
  cudaLaunchConfig_t config{};
  cudaLaunchAttribute attrs[2]{};

  LaunchConfig(int grid, int cluster, bool pdl, int smem, cudaStream_t stream,
               int threads = kThreads) {
    config.gridDim = dim3(static_cast<unsigned>(grid), 1, 1);
    config.blockDim = dim3(static_cast<unsigned>(threads), 1, 1);
    config.dynamicSmemBytes = static_cast<std::size_t>(smem);
    config.stream = stream;
    config.attrs = attrs;
    config.numAttrs = 0;
    if (cluster > 0) {
      cudaLaunchAttribute& a = attrs[config.numAttrs++];
      a.id = cudaLaunchAttributeClusterDimension;
      a.val.clusterDim.x = static_cast<unsigned>(cluster);
      a.val.clusterDim.y = 1;
      a.val.clusterDim.z = 1;
    }
    if (pdl) {
      cudaLaunchAttribute& a = attrs[config.numAttrs++];
      a.id = cudaLaunchAttributeProgrammaticStreamSerialization;
      a.val.programmaticStreamSerializationAllowed = 1;
    }
  }
  LaunchConfig(const LaunchConfig&) = delete;
  LaunchConfig& operator=(const LaunchConfig&) = delete;
};

/// What a call learns once per process and reuses: each device's properties and, per
/// (device, kernel, shared memory), the CTAs per SM after the kernel's shared-memory limit was
/// raised and the clusters of each size that fit. A warm call costs two cheap runtime queries
/// and at most three uncontended lookups. Host threads share it under a lock. Calls after a
/// cudaDeviceReset() succeed without raising the limits again (GPU test
/// Reliability.CallsAfterADeviceResetSucceed; CUDA 13 on the H200), and first calls made
/// while the caller captures a CUDA graph in the global mode succeed without invalidating the
/// capture (GemmExecution.FirstCallsOfAProcessInsideAGraphCaptureSucceed).
class PlanCache {
 public:
  static PlanCache& instance() {
    static PlanCache cache;
    return cache;
  }

  /// The properties of `device`, read on first use.
  Status device(int device, DeviceInfo& info) {
    const std::lock_guard<std::mutex> lock(mutex_);
    for (const DeviceInfo& d : devices_) {
      if (d.device == device) {
        info = d;
        return Status::kSuccess;
      }
    }
    if (const Status st = read_device(device, info); st != Status::kSuccess) return st;
    devices_.push_back(info);
    return Status::kSuccess;
  }

  /// CTAs of `kernel` (`threads` per CTA) that fit one SM of `dev` with `smem` bytes of dynamic
  /// shared memory (raising the kernel's limit to `smem` first), computed on first use; 0 when
  /// `smem` and the kernel's static shared memory exceed what one block may opt into.
  template <class Kernel>
  Status ctas_per_sm(const DeviceInfo& dev, Kernel kernel, int smem, int& ctas,
                     int threads = kThreads) {
    return cached(ctas_, dev.device, reinterpret_cast<const void*>(kernel), smem, ctas, [&] {
      cudaFuncAttributes attrs{};
      cudaError_t err = cudaFuncGetAttributes(&attrs, kernel);
      ctas = 0;
      if (err == cudaSuccess &&
          smem + static_cast<int>(attrs.sharedSizeBytes) <= dev.smem_optin) {
        err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
        if (err == cudaSuccess) {
          err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&ctas, kernel, threads, smem);
        }
      }
      return err;
    });
  }

  /// How many clusters of 2 .. kMaxClusterSplit CTAs of `kernel` (shared-memory limit already
  /// raised by ctas_per_sm) can be resident on `dev` at once, all sizes computed on first use;
  /// cap.clusters[1] is left 0 (the caller knows its CTA capacity). `dev` must run code
  /// compiled for clusters (DeviceInfo::cluster).
  template <class Kernel>
  Status cluster_capacity(const DeviceInfo& dev, Kernel kernel, int smem, ClusterCapacity& cap) {
    return cached(clusters_, dev.device, reinterpret_cast<const void*>(kernel), smem, cap, [&] {
      cap = ClusterCapacity{};
      for (int size = 2; size <= kMaxClusterSplit; ++size) {
        const LaunchConfig launch(size, size, false, smem, nullptr);
        if (const cudaError_t err =
                cudaOccupancyMaxActiveClusters(&cap.clusters[size], kernel, &launch.config);
            err != cudaSuccess) {
          return err;
        }
      }
      return cudaSuccess;
    });
  }

 private:
  template <class T>
  struct Entry {
    int device;
    const void* kernel;
    int smem;
    T value;
  };

  /// `value` for the key, from `table` or else from `compute` (CUDA calls that set it).
  template <class T, class Compute>
  Status cached(std::vector<Entry<T>>& table, int device, const void* kernel, int smem,
                T& value, Compute compute) {
    const std::lock_guard<std::mutex> lock(mutex_);
    for (const Entry<T>& e : table) {
      if (e.device == device && e.kernel == kernel && e.smem == smem) {
        value = e.value;
        return Status::kSuccess;
      }
    }
    if (const cudaError_t err = compute(); err != cudaSuccess) {
      (void)cudaGetLastError();
      return status_from(err);
    }
    table.push_back(Entry<T>{device, kernel, smem, value});
    return Status::kSuccess;
  }

  std::mutex mutex_;
  std::vector<DeviceInfo> devices_;
  std::vector<Entry<int>> ctas_;
  std::vector<Entry<ClusterCapacity>> clusters_;
};

/// Reads the current device's properties (cached per device after the first call).
inline Status query_device(DeviceInfo& info) {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    (void)cudaGetLastError();  // the failed query must not surface as a later launch error
    return Status::kErrorNoDevice;
  }
  int device = 0;
  if ((err = cudaGetDevice(&device)) != cudaSuccess) {
    (void)cudaGetLastError();
    return status_from(err);
  }
  if (const Status st = PlanCache::instance().device(device, info); st != Status::kSuccess) {
    return st;
  }
  if (info.cc_major < 8) return Status::kErrorUnsupportedDevice;
  return Status::kSuccess;
}

using KernelFn = void (*)(kernel::Params);
/// The warp-specialized kernel's entry: its parameters carry tensor maps.
using WsKernelFn = void (*)(kernel::WsParams);

template <int kConfig, int kMBlocks, bool kGrouped, bool kEightRows = false,
          DecodePipeline kPipeline = DecodePipeline::kCtaWide>
constexpr KernelFn kernel_for() {
  return &kernel::gemm_kernel<kMBlocks, kTileConfigs[kConfig].n_blocks,
                              kTileConfigs[kConfig].k_blocks, kGrouped, false, kEightRows,
                              kPipeline>;
}

/// The decode kernel (m_blocks 1) of configuration kConfig and scale mode, the eight-row one if
/// kEightRows, with kPipeline, or null where that form is not compiled
/// (decode_pipeline_compiled).
template <int kConfig, bool kGrouped, bool kEightRows, DecodePipeline kPipeline>
constexpr KernelFn decode_kernel_for() {
  if constexpr (decode_pipeline_compiled(kConfig, kGrouped, kEightRows, kPipeline)) {
    return kernel_for<kConfig, 1, kGrouped, kEightRows, kPipeline>();
  } else {
    return nullptr;
  }
}

/// decode_kernel_for with the pipeline as a value.
template <int kConfig, bool kGrouped, bool kEightRows>
constexpr KernelFn decode_kernel_for(DecodePipeline pipeline) {
  switch (pipeline) {
    case DecodePipeline::kCtaWide:
      return decode_kernel_for<kConfig, kGrouped, kEightRows, DecodePipeline::kCtaWide>();
    case DecodePipeline::kWarpPrivate:
      return decode_kernel_for<kConfig, kGrouped, kEightRows, DecodePipeline::kWarpPrivate>();
    case DecodePipeline::kWarpPrivateA128:
      return decode_kernel_for<kConfig, kGrouped, kEightRows,
                               DecodePipeline::kWarpPrivateA128>();
  }
  return nullptr;
}

/// The warpgroup kernel of `m_blocks` rows (is_wgmma_m_blocks), scale mode and tile width
/// (kTileConfigs[kWgmmaConfig], or kWgmmaNarrowTile when `narrow`: 128-row tiles; the
/// 256-row tile is only narrow).
template <bool kGrouped>
KernelFn wgmma_kernel_for(int m_blocks, bool narrow) {
  constexpr int kWide = kTileConfigs[kWgmmaConfig].n_blocks;
  constexpr int kNarrow = kWgmmaNarrowTile.n_blocks;
  constexpr int kK = kWgmmaTileK / 16;
  static_assert(kTileConfigs[kWgmmaConfig].k_blocks == kK && kWgmmaNarrowTile.k_blocks == kK);
  if (m_blocks == kWgmmaMBlocksTiny) {
    return &kernel::gemm_kernel<kWgmmaMBlocksTiny, kWide, kK, kGrouped, true>;
  }
  if (m_blocks == kWgmmaMBlocksSmall) {
    return &kernel::gemm_kernel<kWgmmaMBlocksSmall, kWide, kK, kGrouped, true>;
  }
  if (m_blocks == kWgmmaMBlocksTall) {
    return &kernel::gemm_kernel<kWgmmaMBlocksTall, kNarrow, kK, kGrouped, true>;
  }
  return narrow ? &kernel::gemm_kernel<kWgmmaMBlocks, kNarrow, kK, kGrouped, true>
                : &kernel::gemm_kernel<kWgmmaMBlocks, kWide, kK, kGrouped, true>;
}

/// The warp-specialized kernel of the warpgroup tile of `m_blocks` rows (ws_tile) and width
/// `tile` (the 256-row tile is only narrow).
template <bool kGrouped>
WsKernelFn ws_kernel_for(int m_blocks, TileConfig tile) {
  constexpr int kWide = kTileConfigs[kWgmmaConfig].n_blocks;
  constexpr int kNarrow = kWgmmaNarrowTile.n_blocks;
  if (m_blocks == kWgmmaMBlocksTall) {
    return &kernel::gemm_kernel_ws<kWgmmaMBlocksTall, kNarrow, kGrouped>;
  }
  if constexpr (kWgmmaWsLevel >= 3) {
    if (m_blocks == kWgmmaMBlocksSmall) {
      return &kernel::gemm_kernel_ws<kWgmmaMBlocksSmall, kWide, kGrouped>;
    }
  }
  if constexpr (kWgmmaWsLevel >= 4) {
    if (m_blocks == kWgmmaMBlocksTiny) {
      return &kernel::gemm_kernel_ws<kWgmmaMBlocksTiny, kWide, kGrouped>;
    }
  }
  if constexpr (kWgmmaWsLevel >= 2) {
    if (m_blocks == kWgmmaMBlocks) {
      return tile.n_blocks == kNarrow
                 ? &kernel::gemm_kernel_ws<kWgmmaMBlocks, kNarrow, kGrouped>
                 : &kernel::gemm_kernel_ws<kWgmmaMBlocks, kWide, kGrouped>;
    }
  }
  return nullptr;
}

/// The push variant (kernel::gemm_kernel_ws's kPush) of the warp-specialized tile of
/// `m_blocks` rows and width `tile`, for its cluster splits of 3 or more (ws_split_pushes), or
/// null where the tile has none (more than 16 accumulator vectors per thread). It runs with
/// ws_smem_bytes plus the split's ws_push_receive_bytes of shared memory.
template <bool kGrouped>
WsKernelFn ws_push_kernel_for(int m_blocks, TileConfig tile) {
  constexpr int kWide = kTileConfigs[kWgmmaConfig].n_blocks;
  constexpr int kNarrow = kWgmmaNarrowTile.n_blocks;
  if constexpr (kWgmmaWsLevel >= 3) {
    if (m_blocks == kWgmmaMBlocksSmall && tile.n_blocks == kWide) {
      return &kernel::gemm_kernel_ws<kWgmmaMBlocksSmall, kWide, kGrouped, true>;
    }
  }
  if constexpr (kWgmmaWsLevel >= 4) {
    if (m_blocks == kWgmmaMBlocksTiny && tile.n_blocks == kWide) {
      return &kernel::gemm_kernel_ws<kWgmmaMBlocksTiny, kWide, kGrouped, true>;
    }
  }
  if constexpr (kWgmmaWsLevel >= 2) {
    if (m_blocks == kWgmmaMBlocks && tile.n_blocks == kNarrow) {
      return &kernel::gemm_kernel_ws<kWgmmaMBlocks, kNarrow, kGrouped, true>;
    }
  }
  return nullptr;
}

/// The mma.sync kernel of configuration kConfig, `m_blocks` and scale mode; `eight_rows`
/// (use_eight_row_kernel) and `pipeline` (select_decode_pipeline), m_blocks 1 only: the 16-row
/// tile's eight-row kernel, and the decode kernel's pipeline (null where that decode form is
/// not compiled).
template <int kConfig, bool kGrouped>
KernelFn kernel_for(int m_blocks, bool eight_rows, DecodePipeline pipeline) {
  switch (m_blocks) {
    case 1:
      return eight_rows ? decode_kernel_for<kConfig, kGrouped, true>(pipeline)
                        : decode_kernel_for<kConfig, kGrouped, false>(pipeline);
    case 2: return kernel_for<kConfig, 2, kGrouped>();
    case 3: return kernel_for<kConfig, 3, kGrouped>();
    default: return kernel_for<kConfig, 4, kGrouped>();
  }
}
static_assert(kMaxMBlocks == 4, "kernel_for(m_blocks) enumerates m_blocks 1..4");

template <int kConfig>
KernelFn kernel_for(int m_blocks, bool grouped, bool eight_rows, DecodePipeline pipeline) {
  return grouped ? kernel_for<kConfig, true>(m_blocks, eight_rows, pipeline)
                 : kernel_for<kConfig, false>(m_blocks, eight_rows, pipeline);
}

template <std::size_t... kIndex>
KernelFn kernel_for(int config, int m_blocks, bool grouped, bool eight_rows,
                    DecodePipeline pipeline, std::index_sequence<kIndex...>) {
  KernelFn fn = nullptr;
  ((config == static_cast<int>(kIndex)
        ? (fn = kernel_for<static_cast<int>(kIndex)>(m_blocks, grouped, eight_rows, pipeline),
           true)
        : false) ||
   ...);
  return fn;
}

/// The kernel of (config, m_blocks, scale mode, path), instantiating only what `Config`
/// allows (the sm_90 warpgroup kernels, `wgmma`, only with AutoTile; `narrow` picks their
/// 128-column tile; `eight_rows` the mma.sync 16-row tile's eight-row kernel, `pipeline` a
/// decode kernel's). Null where that decode form is not compiled (decode_pipeline_compiled).
template <class Config>
KernelFn select_kernel(int config, int m_blocks, bool grouped, bool wgmma, bool narrow,
                       bool eight_rows, DecodePipeline pipeline) {
  if constexpr (std::is_same_v<Config, AutoTile>) {
    if (wgmma) {
      return grouped ? wgmma_kernel_for<true>(m_blocks, narrow)
                     : wgmma_kernel_for<false>(m_blocks, narrow);
    }
    return kernel_for(config, m_blocks, grouped, eight_rows, pipeline,
                      std::make_index_sequence<static_cast<std::size_t>(kNumTileConfigs)>{});
  } else {
    (void)wgmma;
    (void)narrow;
    return kernel_for<Config::kConfig>(m_blocks, grouped, eight_rows, pipeline);
  }
}

/// Everything decided before a launch.
struct Plan {
  int config = 0;      ///< index into kTileConfigs (mma.sync kernels; -1 for the warpgroup one)
  TileConfig tile{};   ///< the CTA tile launched (kTileConfigs[config] or a warpgroup tile)
  int m_blocks = 0;
  bool wgmma = false;  ///< the sm_90a warpgroup kernel
  bool eight_rows = false;  ///< the mma.sync 16-row tile's eight-row kernel (use_eight_row_kernel)
  /// A decode kernel's pipeline (select_decode_pipeline; smem follows it); kCtaWide otherwise.
  DecodePipeline pipeline = DecodePipeline::kCtaWide;
  int smem = 0;    ///< dynamic shared memory per CTA, bytes
  KernelFn kernel = nullptr;
  /// The warp-specialized variant of `kernel` (ws_threads threads), or null; run_plan
  /// launches it for every partition (kWgmmaWsStriped), or where every CTA's run lies in one
  /// slice (slice_local_runs).
  WsKernelFn ws_kernel = nullptr;
  int ws_smem = 0;  ///< dynamic shared memory per CTA of `ws_kernel` (ws_smem_bytes), bytes
  /// The push variant of `ws_kernel` (ws_push_kernel_for), or null; run_plan launches it
  /// instead for cluster splits where ws_split_pushes holds, with ws_smem plus the split's
  /// ws_push_receive_bytes of shared memory.
  WsKernelFn ws_push_kernel = nullptr;
  Partition part;
  std::size_t counters_bytes = 0;   ///< offset of the partial slots in the workspace
  std::size_t workspace_bytes = 0;  ///< 0 when no slice is shared between CTAs
  /// Launch with programmatic stream serialization: the kernel runs sm_90 code, which waits
  /// for the previous grid (ptx::grid_dependency_wait) before touching its inputs or outputs.
  bool pdl = false;
};

/// Bytes at the start of a workspace that hold the slice counters (kMaxGrid of them, at
/// counter_index); the partial slots follow. The offset is the same for every problem, so only
/// the counters must be zero between calls: partial slots are always written before read.
inline constexpr std::size_t kCountersBytes = kMaxGrid * sizeof(int);

/// Splits the tiles of `plan` (config and m_blocks chosen) over at most `max_ctas` CTAs
/// (clamped to kMaxGrid) and sizes the workspace that split needs. The result does not depend
/// on `max_ctas` beyond fp32 rounding of the partial sums (tests vary it).
inline void set_partition(const GemmArgs& args, int max_ctas, Plan& plan) {
  const TileConfig tile = plan.tile;
  plan.part = make_partition(args.k / tile.tile_k(), args.n / tile.tile_n(),
                             m_groups_for(args.m, plan.m_blocks),
                             max_ctas < kMaxGrid ? max_ctas : kMaxGrid);
  plan.counters_bytes = 0;
  plan.workspace_bytes = 0;
  if (needs_reduction(plan.part)) {
    plan.counters_bytes = kCountersBytes;
    const std::size_t slot_bytes =
        static_cast<std::size_t>(16 * plan.m_blocks) * tile.tile_n() * sizeof(float);
    plan.workspace_bytes =
        plan.counters_bytes + static_cast<std::size_t>(num_partial_slots(plan.part)) * slot_bytes;
  }
}

/// Gives `plan` (config and m_blocks chosen) one CTA per whole slice, however many slices
/// there are (kMaxGrid bounds only partitions that reduce through the workspace); no workspace.
inline void set_whole_slices(const GemmArgs& args, Plan& plan) {
  const TileConfig tile = plan.tile;
  const int n_tiles = args.n / tile.tile_n();
  const int m_groups = m_groups_for(args.m, plan.m_blocks);
  plan.part = make_partition(args.k / tile.tile_k(), n_tiles, m_groups, n_tiles * m_groups);
  plan.counters_bytes = 0;
  plan.workspace_bytes = 0;
}

/// Gives `plan` (config and m_blocks chosen) runs of whole slices over at most `max_ctas` CTAs
/// (make_whole_runs); no workspace.
inline void set_whole_runs(const GemmArgs& args, int max_ctas, Plan& plan) {
  const TileConfig tile = plan.tile;
  plan.part = make_whole_runs(args.k / tile.tile_k(), args.n / tile.tile_n(),
                              m_groups_for(args.m, plan.m_blocks), max_ctas);
  plan.counters_bytes = 0;
  plan.workspace_bytes = 0;
}

/// Gives `plan` (config and m_blocks chosen, a warp-specialized kernel planned) hybrid runs
/// over `ctas` CTAs in clusters of `split` (make_hybrid_runs, whose preconditions hold); no
/// workspace.
inline void set_hybrid_runs(const GemmArgs& args, int split, int ctas, Plan& plan) {
  const TileConfig tile = plan.tile;
  plan.part = make_hybrid_runs(args.k / tile.tile_k(), args.n / tile.tile_n(),
                               m_groups_for(args.m, plan.m_blocks), split, ctas);
  plan.counters_bytes = 0;
  plan.workspace_bytes = 0;
}

/// Gives `plan` (config and m_blocks chosen) the cluster-split partition with `split` CTAs
/// per slice (1 <= split <= min(kMaxClusterSplit, k tiles)), after `whole` slices of one CTA
/// each (a multiple of split; Partition::whole); it needs no workspace. The kernel must run
/// sm_90 machine code.
inline void set_split(const GemmArgs& args, int split, Plan& plan, int whole = 0) {
  const TileConfig tile = plan.tile;
  plan.part = make_split_partition(args.k / tile.tile_k(), args.n / tile.tile_n(),
                                   m_groups_for(args.m, plan.m_blocks), split, whole);
  plan.counters_bytes = 0;
  plan.workspace_bytes = 0;
}

/// The driver's cuTensorMapEncodeTiled, looked up once through the runtime (so that nothing
/// links libcuda); null where the driver does not provide it.
inline PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {
  static const PFN_cuTensorMapEncodeTiled_v12000 encode = [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
#if CUDART_VERSION >= 12050
    const cudaError_t err = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000,
                                                             cudaEnableDefault, &found);
#else
    const cudaError_t err =
        cudaGetDriverEntryPoint("cuTensorMapEncodeTiled", &fn, cudaEnableDefault, &found);
#endif
    if (err != cudaSuccess || found != cudaDriverEntryPointSuccess) {
      (void)cudaGetLastError();
      fn = nullptr;
    }
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn);
  }();
  return encode;
}

/// Fills the tensor maps of kernel::WsParams (see there) for `args` on the tile of `plan`.
/// Addresses and strides are 16-byte aligned (check_args: k % 128 == 0, n % 64 == 0, aligned
/// pointers).
inline Status encode_ws_tensor_maps(const GemmArgs& args, const Plan& plan,
                                    kernel::WsParams& ws) {
  const PFN_cuTensorMapEncodeTiled_v12000 encode = tensor_map_encoder();
  if (encode == nullptr) return Status::kErrorCudaError;
  const auto u64 = [](int v) { return static_cast<cuuint64_t>(v); };
  const cuuint32_t unit[3] = {1, 1, 1};
  const cuuint64_t a_dims[3] = {64, u64(args.m), u64(args.k / 64)};
  const cuuint64_t a_strides[2] = {u64(args.k) * sizeof(__half), 64 * sizeof(__half)};
  const auto box = [](int v) { return static_cast<cuuint32_t>(v); };
  const cuuint32_t a_box[3] = {64, box(16 * plan.m_blocks), 1};
  const cuuint64_t b_dims[2] = {u64(args.n), u64(args.k / 16)};
  const cuuint64_t b_strides[1] = {u64(args.n) * sizeof(cuuint64_t)};
  const cuuint32_t b_box[2] = {box(plan.tile.tile_n()), box(kWgmmaTileK / 16)};
  const cuuint64_t s_dims[2] = {u64(args.n), u64(args.k / kGroupSize)};
  const cuuint64_t s_strides[1] = {u64(args.n) * sizeof(__half)};
  const cuuint32_t s_box[2] = {box(plan.tile.tile_n()), 1};
  bool ok =
      encode(&ws.tensor_a, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 3, const_cast<void*>(args.a), a_dims,
             a_strides, a_box, unit, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
             CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) ==
          CUDA_SUCCESS &&
      encode(&ws.tensor_b, CU_TENSOR_MAP_DATA_TYPE_UINT64, 2, const_cast<void*>(args.b), b_dims,
             b_strides, b_box, unit, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
             CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
  if (ok && args.group_size != -1) {
    ok = encode(&ws.tensor_s, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2, const_cast<void*>(args.scales),
                s_dims, s_strides, s_box, unit, CU_TENSOR_MAP_INTERLEAVE_NONE,
                CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
  }
  return ok ? Status::kSuccess : Status::kErrorCudaError;
}

/// Dynamic shared memory of the kernel of (`tile`, `m_blocks`, scale mode, path, decode
/// `pipeline`) as launched on `dev`: smem_bytes, and for mma.sync kernels on devices with
/// clusters the room for a cluster split's exchange buffer, whether or not the call splits, so
/// that each kernel has one size on a device.
inline int launch_smem_bytes(TileConfig tile, int m_blocks, bool grouped, bool wgmma,
                             DecodePipeline pipeline, const DeviceInfo& dev) {
  const int smem =
      smem_bytes(tile, m_blocks, grouped, wgmma, pipeline != DecodePipeline::kCtaWide);
  return !wgmma && dev.cluster ? smem + exchange_bytes(tile, m_blocks) : smem;
}

/// Plans the kernel and partition of a valid, non-empty problem on device `dev`, decode
/// kernels with their planning pipeline (decode_planning_pipeline); make_plan then settles it.
template <class Config>
Status plan_partition(const GemmArgs& args, const DeviceInfo& dev, Plan& plan) {
  const bool grouped = args.group_size != -1;
  PlanCache& cache = PlanCache::instance();
  // Takes kernel (config, m_blocks, path): its shared memory and, once per device and kernel
  // (the value is fixed, so calls from several host threads never race on it), its raised
  // shared-memory limit and occupancy.
  int fit_per_sm = 0;
  auto take = [&](int config, int m_blocks, bool wgmma, bool narrow) {
    // the narrow kernels compiled: 128 rows (or wide), 256 rows (only narrow)
    narrow = wgmma && (m_blocks == kWgmmaMBlocksTall || (narrow && m_blocks == kWgmmaMBlocks));
    plan.config = wgmma ? -1 : config;
    plan.tile = narrow ? kWgmmaNarrowTile : kTileConfigs[config];
    plan.m_blocks = m_blocks;
    plan.wgmma = wgmma;
    plan.eight_rows = !wgmma && use_eight_row_kernel(args.m, m_blocks);
    plan.pipeline = !wgmma && m_blocks == 1 ? decode_planning_pipeline(plan.eight_rows)
                                            : DecodePipeline::kCtaWide;
    plan.smem = launch_smem_bytes(plan.tile, m_blocks, grouped, wgmma, plan.pipeline, dev);
    if (plan.smem > dev.smem_optin) return Status::kErrorInsufficientSharedMemory;
    plan.kernel = select_kernel<Config>(config, m_blocks, grouped, wgmma, narrow,
                                        plan.eight_rows, plan.pipeline);
    plan.ws_kernel = nullptr;
    plan.ws_smem = 0;
    plan.ws_push_kernel = nullptr;
    return cache.ctas_per_sm(dev, plan.kernel, plan.smem, fit_per_sm);
  };
  // How many clusters of each size of the kernel just taken fit the device at once (none where
  // the build or the device has no cluster splits), with `single` single CTAs.
  auto capacity_of_taken = [&](ClusterCapacity& cap, int single) -> Status {
    cap = ClusterCapacity{};
    if (kClusterSplit && dev.cluster) {
      if (const Status st = cache.cluster_capacity(dev, plan.kernel, plan.smem, cap);
          st != Status::kSuccess) {
        return st;
      }
    }
    cap.clusters[1] = single;
    return Status::kSuccess;
  };
  // The cluster split of the mma.sync kernel just taken (0: none, striped runs), the largest
  // that keeps every cluster resident at once (select_split says when; bench/NOTES.md), with
  // decode_spare_clusters more clusters of its size free. `mid_splits`: select_split's splits
  // of 3-4 at two CTAs per SM allowed.
  auto mma_cluster_split = [&](int& split, bool mid_splits) -> Status {
    split = 0;
    if (!kClusterSplit || !dev.cluster || fit_per_sm < 1) return Status::kSuccess;
    const int per_sm = fit_per_sm < kMaxCtasPerSm ? fit_per_sm : kMaxCtasPerSm;
    const int slices = (args.n / plan.tile.tile_n()) * m_groups_for(args.m, plan.m_blocks);
    const int k_tiles = args.k / plan.tile.tile_k();
    split = select_split(slices, k_tiles, per_sm, dev.sm_count, kMaxClusterSplit, mid_splits);
    if (split >= 2) {
      ClusterCapacity cap;
      if (const Status st = capacity_of_taken(cap, 0); st != Status::kSuccess) return st;
      split = resident_cluster_split(split, slices,
                                     decode_spare_clusters(plan.m_blocks, k_tiles, grouped), cap);
    }
    // Both select_split and resident_cluster_split return 0 or at least 2.
    return Status::kSuccess;
  };
  // Where sm_90a code runs (AutoTile only) and wgmma_m_blocks allows it: the warpgroup kernel,
  // unless it does not fit the device, which leaves the mma.sync kernel. Where only
  // wgmma_m_blocks_beside_split allows it, the warpgroup kernel unless the mma.sync kernel
  // would run a cluster split of 2 on a layer where that wins (wgmma_beats_mma_split).
  bool wgmma = false;
  if constexpr (std::is_same_v<Config, AutoTile>) {
    int wgmma_blocks = wgmma_m_blocks(args.m, args.n, args.k);
    const int beside = wgmma_m_blocks_beside_split(args.m, args.n, args.k);
    if (kWgmmaPath && dev.wgmma && wgmma_blocks == 0 && beside > 0) {
      const int config = select_tile_config(args.m, args.n);
      if (tile_divides(config, args.n)) {
        if (const Status st = take(config, select_m_blocks(args.m), false, false);
            st != Status::kSuccess && st != Status::kErrorInsufficientSharedMemory) {
          return st;
        }
        int split = 0;
        if (const Status st = mma_cluster_split(split, false); st != Status::kSuccess) return st;
        if (wgmma_beats_mma_split(split, beside, static_cast<long long>(args.k) * args.n)) {
          wgmma_blocks = beside;
        }
      }
    }
    if (kWgmmaPath && dev.wgmma && wgmma_blocks > 0) {
      const bool narrow = use_narrow_wgmma_tile(args.m, args.n, args.k);
      const Status st = take(kWgmmaConfig, wgmma_blocks, true, narrow);
      if (st != Status::kSuccess && st != Status::kErrorInsufficientSharedMemory) return st;
      wgmma = st == Status::kSuccess && fit_per_sm >= 1;
    }
    // Where the 256-row tile was taken, the 128-row tile (128 or 256 wide) instead if the wave
    // model finds it cheaper (wgmma_rows_tile), on the 256-row kernel's cluster capacity.
    if (wgmma && wgmma_blocks == kWgmmaMBlocksTall && kWgmmaRows128 && kWgmmaPlan == 0) {
      ClusterCapacity cap;  // one CTA per SM (fit_per_sm >= 1)
      if (const Status st = capacity_of_taken(cap, dev.sm_count); st != Status::kSuccess) {
        return st;
      }
      const bool ws_striped = kWgmmaWs && kWgmmaWsStriped && tensor_map_encoder() != nullptr;
      const RowsTile rows = wgmma_rows_tile(
          args.m, args.n, args.k, grouped, cap,
          wgmma_striped_cost(kWgmmaMBlocksTall, ws_striped && ws_tile(kWgmmaMBlocksTall)),
          wgmma_striped_cost(kWgmmaMBlocks, ws_striped && ws_tile(kWgmmaMBlocks)));
      if (rows != RowsTile::kTall) {
        Status st = take(kWgmmaConfig, kWgmmaMBlocks, true, rows == RowsTile::kNarrow);
        if (st != Status::kSuccess && st != Status::kErrorInsufficientSharedMemory) return st;
        if (st != Status::kSuccess || fit_per_sm < 1) {  // keep the 256-row tile
          st = take(kWgmmaConfig, kWgmmaMBlocksTall, true, true);
          if (st != Status::kSuccess) return st;
        }
      }
    }
  }
  // The mma.sync kernel's cluster split, where the choice of its decode tile already planned it
  // (-1: not yet).
  int mma_split = -1;
  if (!wgmma) {
    int config = 0;
    if constexpr (std::is_same_v<Config, AutoTile>) {
      config = select_tile_config(args.m, args.n);
    } else {
      config = Config::kConfig;
    }
    if (!tile_divides(config, args.n)) return Status::kErrorUnsupportedShape;
    if (const Status st = take(config, select_m_blocks(args.m), false, false);
        st != Status::kSuccess) {
      return st;
    }
    // Decode calls: the 64-wide tile where use_narrow_decode_tile or, with splits of 3-4,
    // use_narrow_decode_mid_split (use_narrow_decode_short_split below its rows) finds it
    // faster, from the cluster split each tile would run.
    if constexpr (std::is_same_v<Config, AutoTile>) {
      if (config == 0 && plan.m_blocks == 1 && kClusterSplit && dev.cluster) {
        int wide_split = 0, narrow_split = 0;
        if (const Status st = mma_cluster_split(wide_split, false); st != Status::kSuccess) {
          return st;
        }
        const bool first = narrow_decode_candidate(args.n, args.k, dev.sm_count, wide_split);
        const bool mid =
            !first && narrow_decode_mid_candidate(args.m, args.n, args.k, grouped, wide_split);
        const bool short_slices =
            !first && !mid && narrow_decode_short_candidate(args.n, args.k, wide_split);
        if (first || mid || short_slices) {
          if (const Status st = take(kNarrowDecodeConfig, 1, false, false);
              st != Status::kSuccess) {
            return st;
          }
          if (const Status st = mma_cluster_split(narrow_split, mid || short_slices);
              st != Status::kSuccess) {
            return st;
          }
          const bool narrow =
              mid            ? use_narrow_decode_mid_split(args.m, narrow_split)
              : short_slices ? use_narrow_decode_short_split(args.k / 128, wide_split,
                                                             narrow_split)
                             : use_narrow_decode_tile(args.n, args.k, dev.sm_count, wide_split,
                                                      narrow_split);
          if (narrow) {
            mma_split = narrow_split;
          } else {
            if (const Status st = take(config, 1, false, false); st != Status::kSuccess) {
              return st;
            }
            mma_split = wide_split;
          }
        } else {
          mma_split = wide_split;
        }
      }
    }
  }
  const TileConfig tile = plan.tile;
  if (fit_per_sm < 1) return Status::kErrorInsufficientSharedMemory;
  // The warpgroup kernel's partitions assume one CTA per SM (its 32-row tile would fit two).
  const int max_per_sm = wgmma ? 1 : kMaxCtasPerSm;
  const int ctas_per_sm = fit_per_sm < max_per_sm ? fit_per_sm : max_per_sm;
  const int capacity = ctas_per_sm * dev.sm_count;
  // sm_90 code waits for the previous grid itself, so it may be launched early.
  plan.pdl = kPdl && dev.cluster;

  const int k_tiles = args.k / tile.tile_k();
  const int slices = (args.n / tile.tile_n()) * m_groups_for(args.m, plan.m_blocks);
  // The warpgroup kernel: whole slices (in as many waves as needed), a cluster split with
  // every cluster resident, striped runs, or whole waves of whole slices followed by one wave
  // of split slices, whichever select_wgmma_partition's model finds cheapest; on the
  // warp-specialized kernel, whole slices and hybrids run as runs (changes 37-38).
  if (wgmma) {
    // The tile's warp-specialized variant, if built in and the driver encodes tensor maps
    // (run where launches_ws).
    if constexpr (kWgmmaWs) {
      if (ws_tile(plan.m_blocks) && tensor_map_encoder() != nullptr) {
        const WsKernelFn ws = grouped ? ws_kernel_for<true>(plan.m_blocks, plan.tile)
                                      : ws_kernel_for<false>(plan.m_blocks, plan.tile);
        const int ws_smem = ws_smem_bytes(plan.tile, plan.m_blocks, grouped);
        const int ws_block = ws_threads(plan.tile, plan.m_blocks);
        int ws_fit = 0;
        if (const Status st = cache.ctas_per_sm(dev, ws, ws_smem, ws_fit, ws_block);
            st != Status::kSuccess) {
          return st;
        }
        if (ws_fit >= 1) {
          plan.ws_kernel = ws;
          plan.ws_smem = ws_smem;
          const WsKernelFn push = grouped ? ws_push_kernel_for<true>(plan.m_blocks, plan.tile)
                                          : ws_push_kernel_for<false>(plan.m_blocks, plan.tile);
          int push_fit = 0;  // (raises the push variant's shared-memory limit, once)
          if (push != nullptr) {
            const int push_smem =
                ws_smem + ws_push_receive_max_bytes(plan.tile, plan.m_blocks);
            if (const Status st =
                    cache.ctas_per_sm(dev, push, push_smem, push_fit, ws_block);
                st != Status::kSuccess) {
              return st;
            }
          }
          if (push_fit >= 1) plan.ws_push_kernel = push;
        }
      }
    }
    ClusterCapacity cap;
    if (const Status st = capacity_of_taken(cap, capacity); st != Status::kSuccess) return st;
    // The fixed cost of striped runs depends on the kernel that would run them and its tile.
    const bool ws_striped = plan.ws_kernel != nullptr && kWgmmaWsStriped;
    const WgmmaPartition wp =
        select_wgmma_partition(slices, k_tiles, cap, kWgmmaPlan, kMaxGrid,
                               wgmma_striped_cost(plan.m_blocks, ws_striped, slices, k_tiles,
                                                  cap.clusters[1]));
    const bool runs = kWgmmaWholeRuns && plan.ws_kernel != nullptr && kWgmmaWsStriped;
    if (wp.split >= 2 && wp.whole > 0 && runs) {
      // A hybrid on the warp-specialized kernel: hybrid runs over the CTAs of one wave of
      // clusters (each CTA's split share starts when its whole slices end, with its pipeline
      // already filling).
      set_hybrid_runs(args, wp.split, cap.clusters[wp.split] * wp.split, plan);
    } else if (wp.split >= 2) {
      set_split(args, wp.split, plan, wp.whole);
    } else {
      // Whole slices: on the warp-specialized kernel, runs of whole slices over at most one
      // CTA per SM (the copies of a CTA's next slice overlap the writing of its last); on the
      // plain kernel, striped runs of one slice each, in as many waves as needed.
      if (wp.split == 1 && runs) {
        set_whole_runs(args, capacity, plan);
      } else if (wp.split == 1) {
        set_whole_slices(args, plan);
      } else {
        set_partition(args, capacity, plan);
      }
    }
    return Status::kSuccess;
  }

  // Far fewer slices than resident CTAs (small layers, small batches): on sm_90 split each
  // slice's K over a cluster of CTAs that reduces in shared memory, rather than over striped
  // runs that reduce through the workspace.
  int split = mma_split;
  if (split < 0) {
    if (const Status st = mma_cluster_split(split, false); st != Status::kSuccess) return st;
  }
  if (split >= 2) {
    set_split(args, split, plan);
    return Status::kSuccess;
  }
  // Decode calls whose slices leave few resident CTAs idle: one CTA per slice.
  if (use_decode_whole_slices(plan.m_blocks, slices, capacity, args.k, tile.tile_n(), grouped,
                              plan.eight_rows)) {
    set_whole_slices(args, plan);
    return Status::kSuccess;
  }
  // More 128-wide decode slices than resident CTAs: the 256-wide tile's whole slices where they
  // leave few CTAs idle; striped runs of the 128-wide tile otherwise. The rule is first asked
  // with the 128-wide kernel's capacity (the same on the H200), so that the calls it leaves
  // striped (the grid's 8192 x 57344 at M = 9-16 and with group scales) take no second kernel;
  // where only the wide kernel's own capacity would pass it, the call keeps its striped runs.
  // (K % 128 == 0, so the wide tile's 64-deep K tiles divide it.)
  if constexpr (std::is_same_v<Config, AutoTile>) {
    const TileConfig wide = kTileConfigs[kWideDecodeConfig];
    const int wide_slices = args.n / wide.tile_n();
    if (kDecodeWideWhole && plan.config == 0 && plan.m_blocks == 1 && slices > capacity &&
        args.n % wide.tile_n() == 0 &&
        use_decode_whole_slices(1, wide_slices, capacity, args.k, wide.tile_n(), grouped,
                                plan.eight_rows)) {
      const Plan striped = plan;
      const Status st = take(kWideDecodeConfig, 1, false, false);
      if (st != Status::kSuccess && st != Status::kErrorInsufficientSharedMemory) return st;
      const int wide_capacity =
          (fit_per_sm < kMaxCtasPerSm ? fit_per_sm : kMaxCtasPerSm) * dev.sm_count;
      if (st == Status::kSuccess && fit_per_sm >= 1 &&
          use_decode_whole_slices(1, wide_slices, wide_capacity, args.k, wide.tile_n(),
                                  grouped, plan.eight_rows)) {
        set_whole_slices(args, plan);
        return Status::kSuccess;
      }
      plan = striped;
    }
  }
  set_partition(args, capacity, plan);
  return Status::kSuccess;
}

/// Gives a planned decode call (mma.sync, m_blocks 1) the pipeline that select_decode_pipeline
/// picks for its partition: where that is not the pipeline it was planned with, that form's
/// kernel and shared memory, if that kernel keeps the partition's residency (as many CTAs per
/// SM and, for a cluster split, as many clusters of its size at once); otherwise the plan keeps
/// its kernel.
template <class Config>
Status settle_decode_pipeline(const GemmArgs& args, const DeviceInfo& dev, Plan& plan) {
  if (plan.wgmma || plan.m_blocks != 1) return Status::kSuccess;
  const bool grouped = args.group_size != -1;
  const DecodePipeline pipeline =
      select_decode_pipeline(plan.config, plan.eight_rows, grouped, args.m, plan.part);
  if (pipeline == plan.pipeline) return Status::kSuccess;
  const KernelFn kernel = select_kernel<Config>(plan.config, 1, grouped, false, false,
                                                plan.eight_rows, pipeline);
  if (kernel == nullptr) return Status::kSuccess;  // not compiled: keep the planned form
  const int smem = launch_smem_bytes(plan.tile, 1, grouped, false, pipeline, dev);
  if (smem > dev.smem_optin) return Status::kSuccess;
  PlanCache& cache = PlanCache::instance();
  int planned_fit = 0, fit = 0;
  if (const Status st = cache.ctas_per_sm(dev, plan.kernel, plan.smem, planned_fit);
      st != Status::kSuccess) {
    return st;
  }
  if (const Status st = cache.ctas_per_sm(dev, kernel, smem, fit); st != Status::kSuccess) {
    return st;
  }
  const auto capped = [](int per_sm) { return per_sm < kMaxCtasPerSm ? per_sm : kMaxCtasPerSm; };
  if (capped(fit) < capped(planned_fit)) return Status::kSuccess;
  if (plan.part.split >= 2) {
    ClusterCapacity planned_cap, cap;
    if (const Status st = cache.cluster_capacity(dev, plan.kernel, plan.smem, planned_cap);
        st != Status::kSuccess) {
      return st;
    }
    if (const Status st = cache.cluster_capacity(dev, kernel, smem, cap);
        st != Status::kSuccess) {
      return st;
    }
    if (cap.clusters[plan.part.split] < planned_cap.clusters[plan.part.split]) {
      return Status::kSuccess;
    }
  }
  plan.kernel = kernel;
  plan.smem = smem;
  plan.pipeline = pipeline;
  return Status::kSuccess;
}

/// Plans a valid, non-empty problem (check_args passed, m > 0) on device `dev`.
template <class Config>
Status make_plan(const GemmArgs& args, const DeviceInfo& dev, Plan& plan) {
  if (const Status st = plan_partition<Config>(args, dev, plan); st != Status::kSuccess) {
    return st;
  }
  return settle_decode_pipeline<Config>(args, dev, plan);
}

/// Whether run_plan launches `plan`'s warp-specialized kernel: planned (ws_tile, tensor maps
/// available) and, unless it runs striped partitions too (kWgmmaWsStriped), a partition of
/// whole slices or cluster splits (slice_local_runs); the plain kernel otherwise.
inline bool launches_ws(const Plan& plan) {
  return plan.ws_kernel != nullptr && (kWgmmaWsStriped || slice_local_runs(plan.part));
}

/// The warp-specialized kernel that run_plan launches for `plan` (launches_ws) and its dynamic
/// shared memory: the push variant for cluster splits where ws_split_pushes holds (if planned),
/// with the split's receive region on top of ws_smem; ws_kernel with ws_smem otherwise.
struct WsLaunch {
  WsKernelFn kernel = nullptr;
  int smem = 0;
};
inline WsLaunch ws_launch(const Plan& plan) {
  if (plan.ws_push_kernel != nullptr &&
      ws_split_pushes(plan.tile, plan.m_blocks, plan.part.split)) {
    return {plan.ws_push_kernel,
            plan.ws_smem + ws_push_receive_bytes(plan.tile, plan.m_blocks, plan.part.split)};
  }
  return {plan.ws_kernel, plan.ws_smem};
}

/// Enqueues `kernel(params)` as LaunchConfig describes it and returns the launch's own status.
/// Every launch goes through cudaLaunchKernelEx, whose return value is this launch's error:
/// cudaGetLastError after a <<<>>> launch would also return an error that the caller left
/// pending, as this call's (GPU tests *.AnErrorLeftPendingByTheCallerIsNotReportedAsTheCallsOwn).
template <class KernelParams>
inline Status launch_kernel(void (*kernel)(KernelParams), const KernelParams& params, int grid,
                            int cluster, bool pdl, int smem, cudaStream_t stream, int threads) {
  const LaunchConfig launch(grid, cluster, pdl, smem, stream, threads);
  const cudaError_t err = cudaLaunchKernelEx(&launch.config, kernel, params);
  if (err != cudaSuccess) (void)cudaGetLastError();
  return status_from(err);
}

/// Checks the workspace against `plan` and enqueues the kernel on `stream`.
inline Status run_plan(const GemmArgs& args, const Plan& plan, void* workspace,
                       std::size_t workspace_size, cudaStream_t stream) {
  if (plan.workspace_bytes > 0) {
    if (workspace == nullptr) return Status::kErrorWorkspaceNull;
    if (workspace_size < plan.workspace_bytes) return Status::kErrorWorkspaceTooSmall;
    if (!aligned16(workspace)) return Status::kErrorMisalignedWorkspace;
    if (workspace_overlaps(args, workspace, plan.workspace_bytes)) {
      return Status::kErrorOverlappingOperands;
    }
  }
  kernel::Params params;
  params.a = static_cast<const int4*>(args.a);
  params.b = static_cast<const int4*>(args.b);
  params.scales = static_cast<const int4*>(args.scales);
  params.c = static_cast<int4*>(args.c);
  params.m = args.m;
  params.n = args.n;
  params.k = args.k;
  params.part = plan.part;
  params.constant_weights = args.constant_weights;
  params.counters = nullptr;
  params.partials = nullptr;
  if (plan.workspace_bytes > 0) {
    params.counters = static_cast<int*>(workspace);
    params.partials =
        reinterpret_cast<float*>(static_cast<char*>(workspace) + plan.counters_bytes);
  }
  // A warp-specialized tile: that kernel, if planned.
  if (launches_ws(plan)) {
    kernel::WsParams ws{};
    ws.params = params;
    if (const Status st = encode_ws_tensor_maps(args, plan, ws); st != Status::kSuccess) {
      return st;
    }
    const WsLaunch ws_run = ws_launch(plan);
    return launch_kernel(ws_run.kernel, ws, plan.part.grid, plan.part.split, plan.pdl,
                         ws_run.smem, stream, ws_threads(plan.tile, plan.m_blocks));
  }
  return launch_kernel(plan.kernel, params, plan.part.grid, plan.part.split, plan.pdl, plan.smem,
                       stream, kThreads);
}

}  // namespace detail
}  // namespace marlin
