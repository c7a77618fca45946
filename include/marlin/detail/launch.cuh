// Device queries, the launch plan (configuration, grid, workspace) and kernel dispatch.
// Dispatch is a fold over kTileConfigs: a fixed configuration instantiates only its own
// kernels; automatic configuration instantiates the whole table.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <type_traits>
#include <utility>

#include "../kernel/gemm_kernel.cuh"
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

/// What the plan needs to know of the current device.
struct DeviceInfo {
  int device = 0;
  int sm_count = 0;
  int cc_major = 0;
  int smem_optin = 0;     ///< opt-in shared memory per block, bytes
  int smem_per_sm = 0;    ///< shared memory per SM, bytes
  int smem_reserved = 0;  ///< shared memory the system reserves per block, bytes
};

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

/// Reads the current device's properties (cheap attribute queries, no cudaGetDeviceProperties).
inline Status query_device(DeviceInfo& info) {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    (void)cudaGetLastError();  // the failed query must not surface as a later launch error
    return Status::kErrorNoDevice;
  }
  if ((err = cudaGetDevice(&info.device)) != cudaSuccess) return status_from(err);
  if ((err = cudaDeviceGetAttribute(&info.cc_major, cudaDevAttrComputeCapabilityMajor,
                                    info.device)) != cudaSuccess ||
      (err = cudaDeviceGetAttribute(&info.sm_count, cudaDevAttrMultiProcessorCount,
                                    info.device)) != cudaSuccess ||
      (err = cudaDeviceGetAttribute(&info.smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin,
                                    info.device)) != cudaSuccess ||
      (err = cudaDeviceGetAttribute(&info.smem_per_sm,
                                    cudaDevAttrMaxSharedMemoryPerMultiprocessor, info.device)) !=
          cudaSuccess ||
      (err = cudaDeviceGetAttribute(&info.smem_reserved, cudaDevAttrReservedSharedMemoryPerBlock,
                                    info.device)) != cudaSuccess) {
    return status_from(err);
  }
  if (info.cc_major < 8) return Status::kErrorUnsupportedDevice;
  return Status::kSuccess;
}

using KernelFn = void (*)(kernel::Params);

template <int kConfig, int kMBlocks, bool kGrouped>
constexpr KernelFn kernel_for() {
  return &kernel::gemm_kernel<kMBlocks, kTileConfigs[kConfig].n_blocks,
                              kTileConfigs[kConfig].k_blocks, kGrouped>;
}

template <int kConfig, bool kGrouped>
KernelFn kernel_for(int m_blocks) {
  switch (m_blocks) {
    case 1: return kernel_for<kConfig, 1, kGrouped>();
    case 2: return kernel_for<kConfig, 2, kGrouped>();
    case 3: return kernel_for<kConfig, 3, kGrouped>();
    default: return kernel_for<kConfig, 4, kGrouped>();
  }
}
static_assert(kMaxMBlocks == 4, "kernel_for(m_blocks) enumerates m_blocks 1..4");

template <int kConfig>
KernelFn kernel_for(int m_blocks, bool grouped) {
  return grouped ? kernel_for<kConfig, true>(m_blocks) : kernel_for<kConfig, false>(m_blocks);
}

template <std::size_t... kIndex>
KernelFn kernel_for(int config, int m_blocks, bool grouped, std::index_sequence<kIndex...>) {
  KernelFn fn = nullptr;
  ((config == static_cast<int>(kIndex)
        ? (fn = kernel_for<static_cast<int>(kIndex)>(m_blocks, grouped), true)
        : false) ||
   ...);
  return fn;
}

/// The kernel of (config, m_blocks, scale mode), instantiating only what `Config` allows.
template <class Config>
KernelFn select_kernel(int config, int m_blocks, bool grouped) {
  if constexpr (std::is_same_v<Config, AutoTile>) {
    return kernel_for(config, m_blocks, grouped,
                      std::make_index_sequence<static_cast<std::size_t>(kNumTileConfigs)>{});
  } else {
    return kernel_for<Config::kConfig>(m_blocks, grouped);
  }
}

/// Everything decided before a launch.
struct Plan {
  int config = 0;
  int m_blocks = 0;
  int stages = 0;  ///< pipeline depth
  int smem = 0;    ///< dynamic shared memory per CTA, bytes
  KernelFn kernel = nullptr;
  Partition part;
  std::size_t counters_bytes = 0;   ///< offset of the partial slots in the workspace
  std::size_t workspace_bytes = 0;  ///< 0 when no slice is shared between CTAs
};

/// Splits the tiles of `plan` (config and m_blocks chosen) over at most `max_ctas` CTAs and
/// sizes the workspace that split needs. The result does not depend on `max_ctas` beyond fp32
/// rounding of the partial sums (tests vary it).
inline void set_partition(const GemmArgs& args, int max_ctas, Plan& plan) {
  const TileConfig tile = kTileConfigs[plan.config];
  plan.part = make_partition(args.k / tile.tile_k(), args.n / tile.tile_n(),
                             m_groups_for(args.m, plan.m_blocks), max_ctas);
  plan.counters_bytes = 0;
  plan.workspace_bytes = 0;
  if (needs_reduction(plan.part)) {
    constexpr std::size_t kAlign = 256;
    plan.counters_bytes =
        (static_cast<std::size_t>(plan.part.slices) * sizeof(int) + kAlign - 1) / kAlign * kAlign;
    const std::size_t slot_bytes =
        static_cast<std::size_t>(16 * plan.m_blocks) * tile.tile_n() * sizeof(float);
    plan.workspace_bytes =
        plan.counters_bytes + static_cast<std::size_t>(num_partial_slots(plan.part)) * slot_bytes;
  }
}

/// Plans a valid, non-empty problem (check_args passed, m > 0) on device `dev`.
template <class Config>
Status make_plan(const GemmArgs& args, const DeviceInfo& dev, Plan& plan) {
  if constexpr (std::is_same_v<Config, AutoTile>) {
    plan.config = select_tile_config(args.m, args.n);
  } else {
    plan.config = Config::kConfig;
  }
  if (!tile_divides(plan.config, args.n)) return Status::kErrorUnsupportedShape;
  const TileConfig tile = kTileConfigs[plan.config];
  const bool grouped = args.group_size != -1;
  plan.m_blocks = select_m_blocks(args.m);
  plan.stages = kMinStages;
  plan.smem = smem_bytes(tile, plan.m_blocks, grouped, plan.stages);
  if (plan.smem > dev.smem_optin) return Status::kErrorInsufficientSharedMemory;
  plan.kernel = select_kernel<Config>(plan.config, plan.m_blocks, grouped);

  // The kernel may use all the shared memory a block can opt into: one fixed value, so that
  // calls from several host threads never race on the attribute with different depths.
  // (The opt-in limit counts static shared memory too.)
  cudaFuncAttributes attrs{};
  if (cudaError_t err = cudaFuncGetAttributes(&attrs, plan.kernel);
      err != cudaSuccess ||
      (err = cudaFuncSetAttribute(plan.kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  dev.smem_optin - static_cast<int>(attrs.sharedSizeBytes))) !=
          cudaSuccess) {
    (void)cudaGetLastError();
    return status_from(err);
  }
  // How many CTAs fit per SM at the shallowest pipeline (registers usually decide); then the
  // deepest pipeline that keeps that many, which holds more weight bytes in flight per SM.
  auto occupancy = [&](int smem, int& ctas) {
    const cudaError_t e =
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&ctas, plan.kernel, kThreads, smem);
    if (e != cudaSuccess) (void)cudaGetLastError();
    return e;
  };
  int ctas_per_sm = 0;
  if (const cudaError_t err = occupancy(plan.smem, ctas_per_sm); err != cudaSuccess) {
    return status_from(err);
  }
  if (ctas_per_sm < 1) return Status::kErrorInsufficientSharedMemory;
  if (ctas_per_sm > kMaxCtasPerSm) ctas_per_sm = kMaxCtasPerSm;
  const int static_smem = static_cast<int>(attrs.sharedSizeBytes);
  const int deep = select_stages(tile, plan.m_blocks, grouped, ctas_per_sm, dev.smem_per_sm,
                                 dev.smem_reserved + static_smem, dev.smem_optin - static_smem);
  if (deep > plan.stages) {
    const int deep_smem = smem_bytes(tile, plan.m_blocks, grouped, deep);
    int deep_ctas = 0;
    if (const cudaError_t err = occupancy(deep_smem, deep_ctas); err != cudaSuccess) {
      return status_from(err);
    }
    if (deep_ctas >= ctas_per_sm) {
      plan.stages = deep;
      plan.smem = deep_smem;
    }
  }

  set_partition(args, ctas_per_sm * dev.sm_count, plan);
  return Status::kSuccess;
}

/// Checks the workspace against `plan` and enqueues the kernel on `stream`.
inline Status run_plan(const GemmArgs& args, const Plan& plan, void* workspace,
                       std::size_t workspace_size, cudaStream_t stream) {
  if (plan.workspace_bytes > 0) {
    if (workspace == nullptr) return Status::kErrorWorkspaceNull;
    if (workspace_size < plan.workspace_bytes) return Status::kErrorWorkspaceTooSmall;
    if (!aligned16(workspace)) return Status::kErrorMisalignedWorkspace;
  }
  kernel::Params params;
  params.a = static_cast<const int4*>(args.a);
  params.b = static_cast<const int4*>(args.b);
  params.scales = static_cast<const int4*>(args.scales);
  params.c = static_cast<int4*>(args.c);
  params.m = args.m;
  params.n = args.n;
  params.k = args.k;
  params.group_size = args.group_size == -1 ? args.k : args.group_size;
  params.stages = plan.stages;
  params.part = plan.part;
  params.counters = nullptr;
  params.partials = nullptr;
  if (plan.workspace_bytes > 0) {
    params.counters = static_cast<int*>(workspace);
    params.partials =
        reinterpret_cast<float*>(static_cast<char*>(workspace) + plan.counters_bytes);
  }
  plan.kernel<<<plan.part.grid, kThreads, plan.smem, stream>>>(params);
  return status_from(cudaGetLastError());
}

}  // namespace detail
}  // namespace marlin
