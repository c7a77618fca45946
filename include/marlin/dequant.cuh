// int4 -> fp16 dequantization in registers, straight into mma.m16n8k16 B fragments.
//
// One 32-bit word of the packed layout (see pack.hpp) holds, for one lane and one 16x16 tile,
// the 8 codes of its two n8 B fragments with nibbles interleaved 0,2,4,6,1,3,5,7: nibbles
// {0,4} are the (k=2t, 2t+1) pair of fragment 0, {1,5} its (2t+8, 2t+9) pair, {2,6} and {3,7}
// the same pairs of fragment 1. Masking a pair of nibbles into the low mantissa bits of two
// fp16 lanes and OR-ing the exponent of 1024 (0x6400) makes the value 1024 + q (or 1024 + 16q
// for the upper nibble), exactly, with one lop3; one sub or fma then yields q - 8.
#pragma once

#include <cuda_fp16.h>

#include <cstdint>

#include "ptx/lop3.cuh"

namespace marlin {


/// The B operand of one m16n8k16 mma: two f16x2 registers.
struct FragB {
  uint32_t reg[2];
};

namespace detail {

__device__ __forceinline__ __half2 as_half2(uint32_t bits) {
  __half2 h;
  static_assert(sizeof(h) == sizeof(bits));
  memcpy(&h, &bits, sizeof(bits));
  return h;
}

__device__ __forceinline__ uint32_t as_bits(__half2 h) {
  uint32_t bits;
  memcpy(&bits, &h, sizeof(bits));
  return bits;
}

}  // namespace detail

/// Dequantizes the 8 codes of `word` to (q - 8) in fp16, as the B fragments of the two n8
/// halves of a 16x16 tile: `frag[0]` for columns 0-7, `frag[1]` for columns 8-15.
/// Exact: every value -8..7 is representable in fp16.
__device__ __forceinline__ void dequant_u4b8(uint32_t word, FragB (&frag)[2]) {
  constexpr uint32_t kLowMask = 0x000f000f;   // nibbles 0 and 4 of the shifted word
  constexpr uint32_t kHighMask = 0x00f000f0;  // nibbles 1 and 5
  constexpr uint32_t kExponent = 0x64006400;  // fp16 1024.0 in both lanes
  constexpr int kAndOr = (0xf0 & 0xcc) | 0xaa;  // (a & b) | c
  // 1024 + q - 1032 = q - 8
  const __half2 low_bias = detail::as_half2(0x64086408);
  // (1024 + 16 q) / 16 - 72 = q - 8
  const __half2 high_scale = detail::as_half2(0x2c002c00);  // 1/16
  const __half2 high_bias = detail::as_half2(0xd480d480);   // -72
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const uint32_t shifted = word >> (8 * half);
    const uint32_t lo = ptx::lop3_b32<kAndOr>(shifted, kLowMask, kExponent);
    const uint32_t hi = ptx::lop3_b32<kAndOr>(shifted, kHighMask, kExponent);
    frag[half].reg[0] = detail::as_bits(__hsub2(detail::as_half2(lo), low_bias));
    frag[half].reg[1] =
        detail::as_bits(__hfma2(detail::as_half2(hi), high_scale, high_bias));
  }
}

/// Multiplies both registers of `frag` by the fp16 scale `s` (one rounding, as the reference
/// dequantization w = fp16((q - 8) * s) does).
__device__ __forceinline__ void scale_frag(FragB& frag, __half s) {
  const __half2 s2 = __half2half2(s);
  frag.reg[0] = detail::as_bits(__hmul2(detail::as_half2(frag.reg[0]), s2));
  frag.reg[1] = detail::as_bits(__hmul2(detail::as_half2(frag.reg[1]), s2));
}

}  // namespace marlin
