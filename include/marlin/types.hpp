// Element tags and the argument block of one GEMM. Host-only; compiles without nvcc.
#pragma once

namespace marlin {

/// Tag for 4-bit unsigned weight codes with a fixed bias of 8: w = (q - 8) * s, q in 0..15.
/// Storage is the packed Marlin layout described in <marlin/pack.hpp>.
struct uint4b_t {};

/// One GEMM: C[m, n] = A[m, k] * dequant(B)[k, n].
///
/// Layouts (all device pointers, all 16-byte aligned):
/// - `a`: fp16, row-major [m, k], leading dimension k.
/// - `b`: 4-bit codes packed in the Marlin tile layout, `k / 16` rows of `2 * n` 32-bit words
///        (see marlin::pack_weights).
/// - `scales`: fp16, `k / group_size` rows of `n` (one row when group_size == -1), permuted as
///        marlin::pack_scales writes them.
/// - `c`: fp16, row-major [m, n], leading dimension n. Must not overlap a, b or scales
///        (kErrorOverlappingOperands); a, b and scales, which are only read, may share bytes.
struct GemmArgs {
  int m = 0;                   ///< rows of A and C; 0 is a valid empty problem
  int n = 0;                   ///< columns of B and C; multiple of 64
  int k = 0;                   ///< columns of A, rows of B; multiple of 128
  const void* a = nullptr;     ///< [m, k] fp16
  const void* b = nullptr;     ///< packed 4-bit weights
  const void* scales = nullptr;  ///< packed fp16 scales
  void* c = nullptr;           ///< [m, n] fp16 output
  int group_size = -1;         ///< 128, or -1 for one scale per output column
  /// The caller's promise that `b` and `scales` are not written by any kernel enqueued before
  /// this call on its stream (or before it in a graph) after that kernel allows its dependents
  /// to launch (`griddepcontrol.launch_dependents`, cudaTriggerProgrammaticLaunchCompletion).
  /// On sm_90 a call starts while the kernel before it still runs (programmatic dependent
  /// launch) and waits for that kernel before it reads anything; with this promise the decode
  /// kernels (small m) copy their first weight tiles before that wait, which shortens the
  /// call. True of weights written once before inference, and of every preceding marlin::gemm
  /// call, which writes only its C and its workspace. A broken promise reads stale weights.
  /// False (default): weights are read after the preceding kernel has finished, as A is.
  bool constant_weights = false;
};

}  // namespace marlin
