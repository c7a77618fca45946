// Thread-block clusters (sm_90+): the cluster barrier and reads and writes of another CTA's
// shared memory (distributed shared memory). Compiled to a trap below sm_90; the host launches
// clusters only where the code that runs was compiled for sm_90 or newer
// (detail::DeviceInfo::cluster, from the probe kernel).
#pragma once

#include <cstdint>

#include "arch.cuh"

namespace marlin::ptx {

/// Barrier over all threads of the cluster: shared-memory writes of every CTA before it are
/// visible to every CTA after it (arrive has release, wait has acquire semantics).
__device__ __forceinline__ void cluster_sync() {
#if defined(MARLIN_SM90_ENABLED)
  asm volatile(
      "barrier.cluster.arrive.release.aligned;\n"
      "barrier.cluster.wait.acquire.aligned;\n" ::
          : "memory");
#else
  __trap();
#endif
}

/// This thread's arrival on the cluster barrier, without waiting and without ordering memory
/// (relaxed): paired with a later cluster_wait, e.g. to learn that every CTA of the cluster has
/// started before writing to another CTA's shared memory.
__device__ __forceinline__ void cluster_arrive_relaxed() {
#if defined(MARLIN_SM90_ENABLED)
  asm volatile("barrier.cluster.arrive.relaxed.aligned;\n" ::: "memory");
#else
  __trap();
#endif
}

/// Waits until every thread of the cluster has arrived on the cluster barrier's current phase
/// (acquire semantics).
__device__ __forceinline__ void cluster_wait() {
#if defined(MARLIN_SM90_ENABLED)
  asm volatile("barrier.cluster.wait.acquire.aligned;\n" ::: "memory");
#else
  __trap();
#endif
}

/// The address, in the cluster's shared window, of `smem` (this CTA's shared memory) as it
/// lies in the CTA of cluster rank `rank`.
__device__ __forceinline__ uint32_t map_shared_rank(const void* smem, int rank) {
#if defined(MARLIN_SM90_ENABLED)
  const auto local = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  uint32_t remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(local), "r"(rank));
  return remote;
#else
  (void)smem; (void)rank;
  __trap();
  return 0;
#endif
}

/// Loads 16 bytes (4 floats) from a cluster shared-memory address (map_shared_rank).
__device__ __forceinline__ float4 ld_shared_cluster_f32x4(uint32_t addr) {
  float4 v;
#if defined(MARLIN_SM90_ENABLED)
  asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];\n"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "r"(addr)
               : "memory");
#else
  (void)addr;
  v = make_float4(0.f, 0.f, 0.f, 0.f);
  __trap();
#endif
  return v;
}

/// Stores 16 bytes (4 floats) to a cluster shared-memory address (map_shared_rank).
__device__ __forceinline__ void st_shared_cluster_f32x4(uint32_t addr, float4 v) {
#if defined(MARLIN_SM90_ENABLED)
  asm volatile("st.shared::cluster.v4.f32 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "f"(v.x),
               "f"(v.y), "f"(v.z), "f"(v.w)
               : "memory");
#else
  (void)addr; (void)v;
  __trap();
#endif
}

/// Stores 16 bytes (4 floats) to a cluster shared-memory address (map_shared_rank) of another CTA
/// without ordering it against anything: the store completes its 16 bytes on that CTA's mbarrier at
/// cluster address `bar` (map_shared_rank of the barrier), whose waiters then see them
/// (mbarrier_wait_parity with WaitScope::kCluster). The barrier must be initialized (and the init
/// fenced, fence_mbarrier_init) before the store is issued.
__device__ __forceinline__ void st_async_f32x4(uint32_t addr, float4 v, uint32_t bar) {
#if defined(MARLIN_SM90_ENABLED)
  asm volatile(
      "st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.b32 [%0], {%1, %2, %3, %4}, "
      "[%5];\n" ::"r"(addr),
      "r"(__float_as_uint(v.x)), "r"(__float_as_uint(v.y)), "r"(__float_as_uint(v.z)),
      "r"(__float_as_uint(v.w)), "r"(bar)
      : "memory");
#else
  (void)addr; (void)v; (void)bar;
  __trap();
#endif
}

}  // namespace marlin::ptx
