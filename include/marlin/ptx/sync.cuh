// Synchronization and copies of warp-specialized kernels (sm_90a): shared-memory barrier objects
// (mbarrier) that threads arrive on and tensor copies complete bytes on, tensor copies (the
// Tensor Memory Accelerator) and setmaxnreg, which moves registers between warpgroups: compiled
// to a trap in code for any other target. Also named CTA barriers over a subset of the warps
// and the GPU-scope acquire load and acquire-release atomic of striped runs' slice counters,
// which every target from sm_70 has.
#pragma once

#include <cstdint>

#include "arch.cuh"

namespace marlin::ptx {

/// The shared-memory address (shared::cta window) of a generic pointer into shared memory.
__device__ __forceinline__ uint32_t shared_address(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

/// Initializes the mbarrier at `bar` (8-byte aligned shared memory) to expect `count` arrivals
/// per phase. One thread initializes; fence_mbarrier_init and a CTA barrier publish it.
__device__ __forceinline__ void mbarrier_init(uint64_t* bar, uint32_t count) {
#if defined(MARLIN_SM90A_ENABLED)
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(shared_address(bar)),
               "r"(count)
               : "memory");
#else
  (void)bar; (void)count;
  __trap();
#endif
}

/// Orders this thread's earlier mbarrier_init before the barriers' use by other threads and by
/// asynchronous arrivals.
__device__ __forceinline__ void fence_mbarrier_init() {
#if defined(MARLIN_SM90A_ENABLED)
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
#else
  __trap();
#endif
}

/// This thread's arrival on the current phase of `bar`, with release semantics: its earlier
/// shared-memory accesses happen before a waiter's observation of the phase's end.
__device__ __forceinline__ void mbarrier_arrive(uint64_t* bar) {
#if defined(MARLIN_SM90A_ENABLED)
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(shared_address(bar))
               : "memory");
#else
  (void)bar;
  __trap();
#endif
}

/// This thread's arrival on the current phase of `bar`, adding `bytes` to the bytes that the
/// phase waits for (the tensor copies that complete on `bar` count them down).
__device__ __forceinline__ void mbarrier_arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
#if defined(MARLIN_SM90A_ENABLED)
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(
                   shared_address(bar)),
               "r"(bytes)
               : "memory");
#else
  (void)bar; (void)bytes;
  __trap();
#endif
}

/// A load of `*p` with acquire semantics at GPU scope: the loads after it see what the writer
/// of the value released.
__device__ __forceinline__ int ld_acquire_gpu(const int* p) {
  int v;
  asm volatile("ld.acquire.gpu.global.b32 %0, [%1];\n" : "=r"(v) : "l"(p) : "memory");
  return v;
}

/// Adds `v` to `*p` at GPU scope and returns the old value, with acquire and release
/// semantics: what this thread (and, through an earlier CTA barrier, its CTA) wrote before it
/// is visible to whoever acquires a later value of `*p`, and what the writers of the earlier
/// values released is visible to this thread after it.
__device__ __forceinline__ int atomic_add_acq_rel_gpu(int* p, int v) {
  int old;
  asm volatile("atom.add.acq_rel.gpu.global.s32 %0, [%1], %2;\n"
               : "=r"(old)
               : "l"(p), "r"(v)
               : "memory");
  return old;
}

/// Scope of an mbarrier wait's acquire: the waiting CTA (every barrier whose phase its own
/// threads or copies complete) or the cluster (a barrier whose phase other CTAs' stores complete,
/// st_async_f32x4, so that those stores are visible after the wait).
enum class WaitScope { kCta, kCluster };

/// Waits until the phase of `bar` with parity `parity` has completed (acquire at kScope). A
/// fresh barrier is in phase 0, so waiting for parity 1 returns at once.
template <WaitScope kScope = WaitScope::kCta>
__device__ __forceinline__ void mbarrier_wait_parity(uint64_t* bar, uint32_t parity) {
#if defined(MARLIN_SM90A_ENABLED)
  const uint32_t addr = shared_address(bar);
  uint32_t done = 0;
  do {
    if constexpr (kScope == WaitScope::kCluster) {
      asm volatile(
          "{\n.reg .pred p;\n"
          "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2;\n"
          "selp.u32 %0, 1, 0, p;\n}\n"
          : "=r"(done)
          : "r"(addr), "r"(parity)
          : "memory");
    } else {
      asm volatile(
          "{\n.reg .pred p;\n"
          "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
          "selp.u32 %0, 1, 0, p;\n}\n"
          : "=r"(done)
          : "r"(addr), "r"(parity)
          : "memory");
    }
  } while (done == 0);
#else
  (void)bar; (void)parity;
  __trap();
#endif
}

/// Fetches the tensor map at `tensor_map` (a __grid_constant__ kernel parameter) into the copy
/// engine's descriptor cache ahead of its first use.
__device__ __forceinline__ void prefetch_tensor_map(const void* tensor_map) {
#if defined(MARLIN_SM90A_ENABLED)
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(tensor_map) : "memory");
#else
  (void)tensor_map;
  __trap();
#endif
}

/// Copies the box at element coordinates (`x`, `y`) of the 2-D tensor that `tensor_map` (a
/// __grid_constant__ kernel parameter) describes into this CTA's shared memory at `dst` (aligned
/// as the map's swizzle requires), completing the box's bytes on the mbarrier `bar`. Elements
/// outside the tensor are written as zeros and counted as well.
__device__ __forceinline__ void tensor_copy_2d(void* dst, const void* tensor_map, int x, int y,
                                               uint64_t* bar) {
#if defined(MARLIN_SM90A_ENABLED)
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3}], [%4];\n" ::"r"(shared_address(dst)),
      "l"(tensor_map), "r"(x), "r"(y), "r"(shared_address(bar))
      : "memory");
#else
  (void)dst; (void)tensor_map; (void)x; (void)y; (void)bar;
  __trap();
#endif
}

/// As tensor_copy_2d, for the box at (`x`, `y`, `z`) of a 3-D tensor.
__device__ __forceinline__ void tensor_copy_3d(void* dst, const void* tensor_map, int x, int y,
                                               int z, uint64_t* bar) {
#if defined(MARLIN_SM90A_ENABLED)
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3, %4}], [%5];\n" ::"r"(shared_address(dst)),
      "l"(tensor_map), "r"(x), "r"(y), "r"(z), "r"(shared_address(bar))
      : "memory");
#else
  (void)dst; (void)tensor_map; (void)x; (void)y; (void)z; (void)bar;
  __trap();
#endif
}

/// Waits at named barrier `id` (1..15; 0 is __syncthreads') until `threads` threads (a
/// multiple of 32) have arrived. Every architecture (the eight-row decode kernels' K groups
/// synchronize with it on sm_80 too).
__device__ __forceinline__ void named_barrier_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

/// Raises this warpgroup's registers per thread to kRegs, waiting for registers that other
/// warpgroups released (setmaxnreg). Every thread of the warpgroup executes it.
template <int kRegs>
__device__ __forceinline__ void setmaxnreg_inc() {
#if defined(MARLIN_SM90A_ENABLED)
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kRegs));
#else
  __trap();
#endif
}

/// Lowers this warpgroup's registers per thread to kRegs, releasing the rest.
template <int kRegs>
__device__ __forceinline__ void setmaxnreg_dec() {
#if defined(MARLIN_SM90A_ENABLED)
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kRegs));
#else
  __trap();
#endif
}

/// threadIdx.x, read again where it is called: values that code after a long loop derives
/// from it are then computed there, rather than computed before the loop and held (or
/// spilled) across it. Every target.
__device__ __forceinline__ int thread_index_reread() {
  int tid;
  asm volatile("mov.u32 %0, %%tid.x;\n" : "=r"(tid));
  return tid;
}

}  // namespace marlin::ptx
