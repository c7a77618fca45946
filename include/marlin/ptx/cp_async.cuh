// cp.async: asynchronous 16-byte (and one 4-byte) global -> shared copies (sm_80+), and their
// group fences.
// `.cg` caches in L2 only: every byte of B is read once per launch, so L1 would only evict
// useful data. No L2 cache-policy hint is attached (see DESIGN.md: the original kernel's
// `createpolicy.fractional.L2::evict_first` hint dies with "illegal instruction" on the H200).
#pragma once

#include <cstdint>

#include "arch.cuh"

namespace marlin::ptx {

/// Copies 16 bytes from `gmem` to `smem` when `pred` holds; otherwise writes 16 zero bytes to
/// `smem` and reads nothing (`gmem` must still be a valid address; it is not dereferenced).
__device__ __forceinline__ void cp_async_cg_16(void* smem, const void* gmem, bool pred) {
#if defined(MARLIN_SM80_ENABLED)
  const auto dst = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  const int src_bytes = pred ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(gmem),
               "r"(src_bytes)
               : "memory");
#else
  (void)smem; (void)gmem; (void)pred;
  MARLIN_UNSUPPORTED_ARCH();
#endif
}

/// Copies 4 bytes from `gmem` to `smem`, both 4-byte aligned. `.ca` (cached in L1 too) because
/// `.cg` copies only 16 bytes; the grouped eight-row decode kernels copy their scale strips so,
/// a word per lane.
__device__ __forceinline__ void cp_async_ca_4(void* smem, const void* gmem) {
#if defined(MARLIN_SM80_ENABLED)
  const auto dst = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(dst), "l"(gmem) : "memory");
#else
  (void)smem; (void)gmem;
  MARLIN_UNSUPPORTED_ARCH();
#endif
}

/// Closes the current group of cp.async operations issued by this thread.
__device__ __forceinline__ void cp_async_commit_group() {
#if defined(MARLIN_SM80_ENABLED)
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#else
  MARLIN_UNSUPPORTED_ARCH();
#endif
}

/// Waits until at most `kPending` of this thread's committed groups are still in flight.
template <int kPending>
__device__ __forceinline__ void cp_async_wait_group() {
#if defined(MARLIN_SM80_ENABLED)
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
#else
  MARLIN_UNSUPPORTED_ARCH();
#endif
}

}  // namespace marlin::ptx
