// lop3: any three-input bitwise function in one instruction; the lookup table is the result
// of the function applied to the constants a = 0xF0, b = 0xCC, c = 0xAA.
#pragma once

#include <cstdint>

#include "arch.cuh"

namespace marlin::ptx {

/// `lop3.b32 d, a, b, c, kLut`.
template <int kLut>
__device__ __forceinline__ uint32_t lop3_b32(uint32_t a, uint32_t b, uint32_t c) {
  uint32_t d;
#if defined(__CUDA_ARCH__)
  asm volatile("lop3.b32 %0, %1, %2, %3, %4;\n" : "=r"(d) : "r"(a), "r"(b), "r"(c), "n"(kLut));
#else
  d = 0; (void)a; (void)b; (void)c;
#endif
  return d;
}

}  // namespace marlin::ptx
