// mma.sync tensor-core instructions (sm_80+).
#pragma once

#include <cstdint>

#include "arch.cuh"

namespace marlin::ptx {

/// `mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32`: d = a * b + d, fp32 accumulators.
/// a: 4 registers of f16x2 (A fragment, row-major 16x16); b: 2 registers of f16x2
/// (B fragment, 16x8 "col"); d: 4 fp32 (rows lane/4 and lane/4+8, columns 2*(lane%4)+{0,1}).
__device__ __forceinline__ void mma_m16n8k16_f32_f16_f16_f32(float (&d)[4],
                                                             const uint32_t (&a)[4],
                                                             const uint32_t (&b)[2]) {
#if defined(MARLIN_SM80_ENABLED)
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
  (void)d; (void)a; (void)b;
  MARLIN_UNSUPPORTED_ARCH();
#endif
}

}  // namespace marlin::ptx
