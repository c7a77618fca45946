// ldmatrix: warp-wide shared-memory loads of 8x8 b16 matrices in mma fragment order (sm_75+).
#pragma once

#include <cstdint>

#include "arch.cuh"

namespace marlin::ptx {

/// `ldmatrix.sync.aligned.m8n8.x4.shared.b16`: lanes 8i..8i+7 give the row addresses of
/// matrix i; lane l receives, in `frag[i]`, elements (l / 4, 2 * (l % 4) .. +1) of matrix i.
/// With lanes 0-15 addressing rows 0-15 at column 0 and lanes 16-31 rows 0-15 at column 8 of
/// a 16x16 tile, `frag` is exactly the A operand of mma.m16n8k16.
__device__ __forceinline__ void ldmatrix_m8n8_x4_b16(uint32_t (&frag)[4], const void* smem_row) {
#if defined(MARLIN_SM80_ENABLED)
  const auto addr = static_cast<uint32_t>(__cvta_generic_to_shared(smem_row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(frag[0]), "=r"(frag[1]), "=r"(frag[2]), "=r"(frag[3])
               : "r"(addr));
#else
  (void)smem_row;
  frag[0] = frag[1] = frag[2] = frag[3] = 0;
  MARLIN_UNSUPPORTED_ARCH();
#endif
}

/// `ldmatrix.sync.aligned.m8n8.x2.shared.b16`: lanes 8i..8i+7 (i < 2) give the row addresses of
/// matrix i (lanes 16-31's addresses are not read); lane l receives, in `frag[i]`, elements
/// (l / 4, 2 * (l % 4) .. +1) of matrix i. With lanes 0-7 addressing rows 0-7 at column 0 and
/// lanes 8-15 the same rows at column 8 of an 8x16 tile, `frag` is the B operand of
/// mma.m16n8k16 for the tile's transpose (its rows as the product's columns).
__device__ __forceinline__ void ldmatrix_m8n8_x2_b16(uint32_t (&frag)[2], const void* smem_row) {
#if defined(MARLIN_SM80_ENABLED)
  const auto addr = static_cast<uint32_t>(__cvta_generic_to_shared(smem_row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n"
               : "=r"(frag[0]), "=r"(frag[1])
               : "r"(addr));
#else
  (void)smem_row;
  frag[0] = frag[1] = 0;
  MARLIN_UNSUPPORTED_ARCH();
#endif
}

}  // namespace marlin::ptx
