// Warpgroup matrix multiply-accumulate (wgmma, sm_90a): fences, the shared-memory matrix
// descriptor and the m64nNk16 (N = 32, 64, 128, 256) f16 -> f32 products with A in registers.
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
/// 1024 bytes, consecutive along the tile's N (or M) dimension. `addr` is the shared address
/// where the current k16 slice starts: the atom's base (1024-byte aligned) plus 32 bytes per
/// k16 step. Its 14-bit start-address field holds any shared address (below 256 KB), so
/// adding 2 (32 bytes) to a descriptor gives the next k16 slice's.
__device__ __forceinline__ uint64_t sw128_k_major_desc(uint32_t addr) {
  uint64_t desc = (addr & 0x3FFFF) >> 4;  // start address, 16-byte units
  desc |= uint64_t{1} << 16;              // leading byte offset: unused for this layout
  desc |= uint64_t{1024 >> 4} << 32;      // stride byte offset: next 8-row atom
  desc |= uint64_t{1} << 62;              // layout: 128-byte swizzle
  return desc;
}

/// sw128_k_major_desc of the tile at generic address `smem`.
__device__ __forceinline__ uint64_t sw128_k_major_desc(const void* smem) {
  return sw128_k_major_desc(static_cast<uint32_t>(__cvta_generic_to_shared(smem)));
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

/// As wgmma_m64n128k16_f32_f16_rs, for a 64 x 32 D (B: 16 x 32); d[4i..4i+3] the m16n8
/// accumulator layout of columns 8i..8i+7 of the warp's 16 rows.
__device__ __forceinline__ void wgmma_m64n32k16_f32_f16_rs(float (&d)[16], const uint32_t (&a)[4],
                                                          uint64_t b_desc, bool accumulate) {
#if defined(MARLIN_SM90A_ENABLED)
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %21, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n32k16.f32.f16.f16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, "
      "{%16, %17, %18, %19}, %20, p, 1, 1, 0;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
        "+f"(d[14]), "+f"(d[15])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b_desc), "r"(accumulate ? 1 : 0)
      : "memory");
#else
  (void)d; (void)a; (void)b_desc; (void)accumulate;
  __trap();
#endif
}

/// As wgmma_m64n128k16_f32_f16_rs, for a 64 x 256 D (B: 16 x 256): the 256-row tile, whose
/// 128 accumulators per thread hold one 64-column strip; d[4i..4i+3] the m16n8 accumulator
/// layout of columns 8i..8i+7 of the warp's 16 rows.
__device__ __forceinline__ void wgmma_m64n256k16_f32_f16_rs(float (&d)[128],
                                                           const uint32_t (&a)[4],
                                                           uint64_t b_desc, bool accumulate) {
#if defined(MARLIN_SM90A_ENABLED)
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %133, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
      "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, "
      "%108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, "
      "%120, %121, %122, %123, %124, %125, %126, %127}, "
      "{%128, %129, %130, %131}, %132, p, 1, 1, 0;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
        "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),
        "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
        "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]),
        "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]),
        "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]),
        "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]),
        "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]),
        "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]),
        "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]),
        "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]),
        "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]),
        "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
        "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]),
        "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]),
        "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]),
        "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b_desc), "r"(accumulate ? 1 : 0)
      : "memory");
#else
  (void)d; (void)a; (void)b_desc; (void)accumulate;
  __trap();
#endif
}

/// D (64 x kN) += A (64 x 16, registers) * B (16 x kN, shared memory) for kN = 32, 64, 128
/// or 256: the wgmma_m64n<kN>k16_f32_f16_rs above.
template <int kN>
__device__ __forceinline__ void wgmma_m64k16_f32_f16_rs(float (&d)[kN / 2], const uint32_t (&a)[4],
                                                        uint64_t b_desc, bool accumulate) {
  static_assert(kN == 32 || kN == 64 || kN == 128 || kN == 256,
                "compiled for N = 32, 64, 128 and 256");
  if constexpr (kN == 32) {
    wgmma_m64n32k16_f32_f16_rs(d, a, b_desc, accumulate);
  } else if constexpr (kN == 256) {
    wgmma_m64n256k16_f32_f16_rs(d, a, b_desc, accumulate);
  } else if constexpr (kN == 128) {
    wgmma_m64n128k16_f32_f16_rs(d, a, b_desc, accumulate);
  } else {
    wgmma_m64n64k16_f32_f16_rs(d, a, b_desc, accumulate);
  }
}

}  // namespace marlin::ptx
