// The benchmark grid of MEASURING.md and the floor model of one GEMM. Host-only.
//
// Everything a reader needs to check a reported number against its floor lives here: the
// shapes, the batch sizes, the rotation rule and the two floors (memory and mma.sync).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>

namespace marlin_bench {

/// One weight matrix: C[m, n] = A[m, k] * W[k, n].
struct Shape {
  int k;
  int n;
  const char* layer;  ///< where the shape comes from (documentation only)
};

/// Llama-3-8B and -70B linear layers and one large square matrix (MEASURING.md).
inline constexpr std::array<Shape, 9> kShapes{{
    {4096, 6144, "Llama-3-8B qkv_proj"},
    {4096, 4096, "Llama-3-8B o_proj"},
    {4096, 28672, "Llama-3-8B gate_up_proj"},
    {14336, 4096, "Llama-3-8B down_proj"},
    {8192, 10240, "Llama-3-70B qkv_proj"},
    {8192, 8192, "Llama-3-70B o_proj"},
    {8192, 57344, "Llama-3-70B gate_up_proj"},
    {28672, 8192, "Llama-3-70B down_proj"},
    {16384, 16384, "large square"},
}};

/// Batch sizes: decode (1-16), the memory/compute crossover (~40 on the H200), prefill.
inline constexpr std::array<int, 13> kBatches{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024,
                                              2048, 4096};

/// Group sizes: 128 rows per scale, and -1 (one scale per output column).
inline constexpr std::array<int, 2> kGroups{128, -1};

/// The smoke subset registered again under the `quick/` prefix.
inline constexpr std::array<Shape, 2> kQuickShapes{{{4096, 4096, "Llama-3-8B o_proj"},
                                                    {8192, 8192, "Llama-3-70B o_proj"}}};
inline constexpr std::array<int, 3> kQuickBatches{1, 16, 256};

/// mma.sync m16n8k16 f16 -> f32 throughput measured on the H200 (MEASURING.md). The kernel
/// issues mma.sync, not wgmma, so this, not the data-sheet tensor-core peak, is its ceiling.
inline constexpr double kMmaFlopsPerSecond = 635e12;

/// Weight and scale buffers are replicated until their total reaches this (> 2x the 60 MB
/// L2 of the H200), and successive launches cycle through the copies.
inline constexpr std::size_t kRotationBytes = std::size_t{256} << 20;

/// Upper bound on one rotated set; reached by no shape of the grid (the largest set is the
/// fp16 weights of (8192, 57344): 2 x 896 MiB), it keeps an added shape from exhausting memory.
inline constexpr std::size_t kRotationCapBytes = std::size_t{16} << 30;

/// Copies of a buffer of `bytes_per_copy` so that together they cover kRotationBytes; at least
/// 2, so that a launch never finds the tail of its own weights left in L2 by the previous one.
inline int rotation_copies(std::size_t bytes_per_copy) {
  if (bytes_per_copy == 0) return 2;
  std::size_t copies = (kRotationBytes + bytes_per_copy - 1) / bytes_per_copy;
  copies = std::min(copies, kRotationCapBytes / bytes_per_copy);
  return static_cast<int>(std::max<std::size_t>(copies, 2));
}

/// Bytes one W4A16 GEMM must move at least: 4-bit codes, fp16 scales, fp16 A and C.
/// `group_size` -1 means one scale row (g = k).
inline double marlin_bytes(int m, int n, int k, int group_size) {
  const double g = group_size == -1 ? k : group_size;
  return 0.5 * k * n + (k / g) * n * 2.0 + 2.0 * m * k + 2.0 * m * n;
}

/// Floating-point operations of one GEMM (multiply and add counted apart).
inline double gemm_flops(int m, int n, int k) { return 2.0 * m * n * k; }

/// The two floors of one GEMM, in microseconds, and the larger of them.
struct Floor {
  double bytes;   ///< marlin_bytes(...)
  double mem_us;  ///< bytes / measured copy bandwidth
  double mma_us;  ///< flops / kMmaFlopsPerSecond
  double us;      ///< max(mem_us, mma_us)
};

/// `bandwidth` in bytes per second (the device-to-device copy measured at start-up).
inline Floor gemm_floor(int m, int n, int k, int group_size, double bandwidth) {
  Floor f;
  f.bytes = marlin_bytes(m, n, k, group_size);
  f.mem_us = 1e6 * f.bytes / bandwidth;
  f.mma_us = 1e6 * gemm_flops(m, n, k) / kMmaFlopsPerSecond;
  f.us = std::max(f.mem_us, f.mma_us);
  return f;
}

}  // namespace marlin_bench
