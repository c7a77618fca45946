// Warpgroup matrix multiply-accumulate (wgmma, sm_90a): fences, the shared-memory matrix
// descriptor and the m64nNk16 (N = 64, 128) f16 -> f32 products with A in registers.
// Compiled to a trap in code for any other target (plain sm_90 included); the host uses these
// kernels only where sm_90a machine code runs (detail::PlanCache's wgmma probe).
#pragma once

#include <cstdint>

#include "arch.cuh"

namespace marlin::ptx {

/// Orders this warpgroup's earlier register writes (A fragments, accumulators) before the
/// wgmma operations that follow.
__device__ __forceinline__ void wgmma_fence() {
#if defined(MARLIN_SM90A_ENABLED)
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#else
  __trap();
#endif
}

/// Makes this thread's earlier shared-memory writes (st.shared, cp.async once waited for)
/// visible to the async proxy, through which wgmma reads its shared-memory operand. Follow it
/// with a barrier before the wgmma of another thread reads them.
__device__ __forceinline__ void fence_proxy_async_shared() {
#if defined(MARLIN_SM90A_ENABLED)
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#else
  __trap();
#endif
}

/// Closes the group of wgmma operations issued since the last commit.
__device__ __forceinline__ void wgmma_commit_group() {
#if defined(MARLIN_SM90A_ENABLED)
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#else
  __trap();
#endif
}

/// Waits until at most `kPending` committed wgmma groups of this warpgroup are in flight.
template <int kPending>
__device__ __forceinline__ void wgmma_wait_group() {
#if defined(MARLIN_SM90A_ENABLED)
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(kPending) : "memory");
#else
  __trap();
#endif
}

/// Keeps `r` in its register up to this point: wgmma reads its register operands after the
/// instruction issues, so they must stay live (and unmodified) until wgmma_wait_group.
__device__ __forceinline__ void keep_live(uint32_t& r) { asm volatile("" : "+r"(r)::"memory"); }
/// As keep_live(uint32_t&), for an accumulator.
__device__ __forceinline__ void keep_live(float& r) { asm volatile("" : "+f"(r)::"memory"); }

/// Descriptor of a K-major operand tile in shared memory with the 128-byte swizzle: rows of
/// 64 f16 (128 bytes; 16-byte chunk c of row r stored at chunk c ^ (r % 8)), 8-row atoms of
/// 1024 bytes, consecutive along the tile's N (or M) dimension. `smem` is where the current
/// k16 slice starts: the atom's base (1024-byte aligned) plus 32 bytes per k16 step.
__device__ __forceinline__ uint64_t sw128_k_major_desc(const void* smem) {
  const auto addr = static_cast<uint64_t>(__cvta_generic_to_shared(smem));
  uint64_t desc = (addr & 0x3FFFF) >> 4;  // start address, 16-byte units
  desc |= uint64_t{1} << 16;              // leading byte offset: unused for this layout
  desc |= uint64_t{1024 >> 4} << 32;      // stride byte offset: next 8-row atom
  desc |= uint64_t{1} << 62;              // layout: 128-byte swizzle
  return desc;
}

/// D (64 x 128, fp32) += A (64 x 16, f16, registers) * B (16 x 128, f16, shared memory,
/// K-major, `b_desc`), over the 4 warps of a warpgroup. A: per warp 16 rows in the layout of
/// an mma.m16n8k16 A fragment; D: per warp 16 rows, d[4i..4i+3] the m16n8 accumulator
/// layout of columns 8i..8i+7. `accumulate` false overwrites D.
__device__ __forceinline__ void wgmma_m64n128k16_f32_f16_rs(float (&d)[64], const uint32_t (&a)[4],
                                                           uint64_t b_desc, bool accumulate) {
#if defined(MARLIN_SM90A_ENABLED)
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %69, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
      "{%64, %65, %66, %67}, %68, p, 1, 1, 0;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]),
        "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]),
        "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]),
        "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]),
        "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]),
        "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]),
        "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]),
        "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]),
        "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]),
        "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b_desc), "r"(accumulate ? 1 : 0)
      : "memory");
#else
  (void)d; (void)a; (void)b_desc; (void)accumulate;
  __trap();
#endif
}

/// As wgmma_m64n128k16_f32_f16_rs, for a 64 x 64 D (B: 16 x 64); d[4i..4i+3] the m16n8
/// accumulator layout of columns 8i..8i+7 of the warp's 16 rows.
__device__ __forceinline__ void wgmma_m64n64k16_f32_f16_rs(float (&d)[32], const uint32_t (&a)[4],
                                                          uint64_t b_desc, bool accumulate) {
#if defined(MARLIN_SM90A_ENABLED)
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %37, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
      "{%32, %33, %34, %35}, %36, p, 1, 1, 0;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
        "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]),
        "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]),
        "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b_desc), "r"(accumulate ? 1 : 0)
      : "memory");
#else
  (void)d; (void)a; (void)b_desc; (void)accumulate;
  __trap();
#endif
}

/// D (64 x kN) += A (64 x 16, registers) * B (16 x kN, shared memory) for kN = 64 or 128:
/// wgmma_m64n64k16_f32_f16_rs or wgmma_m64n128k16_f32_f16_rs.
template <int kN>
__device__ __forceinline__ void wgmma_m64k16_f32_f16_rs(float (&d)[kN / 2], const uint32_t (&a)[4],
                                                        uint64_t b_desc, bool accumulate) {
  static_assert(kN == 64 || kN == 128, "compiled for N = 64 and 128");
  if constexpr (kN == 128) {
    wgmma_m64n128k16_f32_f16_rs(d, a, b_desc, accumulate);
  } else {
    wgmma_m64n64k16_f32_f16_rs(d, a, b_desc, accumulate);
  }
}

}  // namespace marlin::ptx
