// Argument validation of one GEMM, independent of any device. Host-only; compiles without nvcc.
#pragma once

#include <cstdint>

#include "../status.hpp"
#include "../types.hpp"

namespace marlin::detail {

/// Whether `p` is 16-byte aligned.
inline bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

/// Whether the byte ranges [p, p + p_bytes) and [q, q + q_bytes) share a byte.
inline bool overlap(const void* p, std::uint64_t p_bytes, const void* q, std::uint64_t q_bytes) {
  const std::uintptr_t x = reinterpret_cast<std::uintptr_t>(p);
  const std::uintptr_t y = reinterpret_cast<std::uintptr_t>(q);
  return p_bytes > 0 && q_bytes > 0 && x < y + q_bytes && y < x + p_bytes;
}

/// Bytes that each operand of `args` spans (shape and group size valid, m > 0).
struct OperandBytes {
  std::uint64_t a = 0, b = 0, scales = 0, c = 0;
};
inline OperandBytes operand_bytes(const GemmArgs& args) {
  const std::uint64_t m = static_cast<std::uint64_t>(args.m);
  const std::uint64_t n = static_cast<std::uint64_t>(args.n);
  const std::uint64_t k = static_cast<std::uint64_t>(args.k);
  const std::uint64_t groups = args.group_size > 0 ? k / args.group_size : 1;
  return {m * k * 2, k * n / 2, groups * n * 2, m * n * 2};
}

/// Checks `args` in a fixed order, so each fault maps to one Status: shape sign, group size,
/// K against the group, supported divisibility, 32-bit index range, then (for m > 0) operand
/// pointers, their alignment, and C against the operands it must not overlap (the kernel
/// writes C while other CTAs still read A, B and the scales). An empty problem (m == 0, valid
/// n, k, group) is kSuccess.
inline Status check_args(const GemmArgs& args) {
  if (args.m < 0 || args.n <= 0 || args.k <= 0) return Status::kErrorInvalidShape;
  if (args.group_size != 128 && args.group_size != -1) return Status::kErrorUnsupportedGroupSize;
  if (args.group_size > 0 && args.k % args.group_size != 0) return Status::kErrorGroupSizeMismatch;
  if (args.n % 64 != 0 || args.k % 128 != 0) return Status::kErrorUnsupportedShape;
  constexpr std::int64_t kIndexLimit = std::int64_t{1} << 31;
  const std::int64_t m = args.m, n = args.n, k = args.k;
  if (m * k >= kIndexLimit || m * n >= kIndexLimit || k * n >= kIndexLimit) {
    return Status::kErrorProblemTooLarge;
  }
  if (args.m == 0) return Status::kSuccess;
  if (!args.a || !args.b || !args.scales || !args.c) return Status::kErrorNullPointer;
  if (!aligned16(args.a) || !aligned16(args.b) || !aligned16(args.scales) || !aligned16(args.c)) {
    return Status::kErrorMisalignedPointer;
  }
  const OperandBytes bytes = operand_bytes(args);
  if (overlap(args.c, bytes.c, args.a, bytes.a) || overlap(args.c, bytes.c, args.b, bytes.b) ||
      overlap(args.c, bytes.c, args.scales, bytes.scales)) {
    return Status::kErrorOverlappingOperands;
  }
  return Status::kSuccess;
}

/// Whether `workspace_bytes` bytes of workspace at `workspace` overlap an operand of `args`
/// (which check_args accepted, m > 0): the kernel writes the workspace while it reads the
/// operands and writes C.
inline bool workspace_overlaps(const GemmArgs& args, const void* workspace,
                               std::uint64_t workspace_bytes) {
  const OperandBytes bytes = operand_bytes(args);
  return overlap(workspace, workspace_bytes, args.a, bytes.a) ||
         overlap(workspace, workspace_bytes, args.b, bytes.b) ||
         overlap(workspace, workspace_bytes, args.scales, bytes.scales) ||
         overlap(workspace, workspace_bytes, args.c, bytes.c);
}

}  // namespace marlin::detail
