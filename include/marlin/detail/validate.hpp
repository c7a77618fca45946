// Argument validation of one GEMM, independent of any device. Host-only; compiles without nvcc.
#pragma once

#include <cstdint>

#include "../status.hpp"
#include "../types.hpp"

namespace marlin::detail {

/// Whether `p` is 16-byte aligned.
inline bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

/// Checks `args` in a fixed order, so each fault maps to one Status: shape sign, group size,
/// K against the group, supported divisibility, 32-bit index range, then (for m > 0) operand
/// pointers and their alignment. An empty problem (m == 0, valid n, k, group) is kSuccess.
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
  return Status::kSuccess;
}

}  // namespace marlin::detail
