// marlin::Status: the one error vocabulary of the host API. Host-only; compiles without nvcc.
// Headers never throw, print or exit: every failure is a Status value.
#pragma once

namespace marlin {

/// Result of every host entry point. `kSuccess` is the only success value.
enum class Status {
  kSuccess = 0,
  kErrorNullPointer,          ///< a, b, scales or c is null while m > 0
  kErrorMisalignedPointer,    ///< a, b, scales or c is not 16-byte aligned
  kErrorInvalidShape,         ///< m < 0, or n or k <= 0
  kErrorUnsupportedShape,     ///< n % 64 != 0 or k % 128 != 0, or a forced tile does not divide n
  kErrorUnsupportedGroupSize, ///< group_size is neither 128 nor -1
  kErrorGroupSizeMismatch,    ///< k is not a multiple of group_size
  kErrorProblemTooLarge,      ///< an index would overflow 32 bits (m*k, m*n or k*n >= 2^31)
  kErrorWorkspaceNull,        ///< the problem needs a workspace and none was given
  kErrorWorkspaceTooSmall,    ///< workspace_bytes is below marlin::workspace_bytes(args)
  kErrorMisalignedWorkspace,  ///< the workspace is not 16-byte aligned
  kErrorNoDevice,             ///< no CUDA device is present or the runtime cannot reach it
  kErrorUnsupportedDevice,    ///< the current device is below compute capability 8.0
  kErrorNoKernelImage,        ///< this binary holds no kernel code for the current device's arch
  kErrorInsufficientSharedMemory,  ///< the device's per-block shared memory limit is too small
  kErrorCudaError,            ///< a CUDA runtime call or the launch failed
  kErrorOverlappingOperands,  ///< c overlaps a, b or scales, or the workspace overlaps an operand
};

/// A short, stable, human-readable description of `status`.
constexpr const char* to_string(Status status) noexcept {
  switch (status) {
    case Status::kSuccess: return "success";
    case Status::kErrorNullPointer: return "null operand pointer (a, b, scales or c)";
    case Status::kErrorMisalignedPointer: return "operand pointer not 16-byte aligned";
    case Status::kErrorInvalidShape: return "invalid shape (m < 0, n <= 0 or k <= 0)";
    case Status::kErrorUnsupportedShape:
      return "unsupported shape (needs n % 64 == 0 and k % 128 == 0; a forced tile must divide n)";
    case Status::kErrorUnsupportedGroupSize: return "unsupported group size (supported: 128, -1)";
    case Status::kErrorGroupSizeMismatch: return "k is not a multiple of group_size";
    case Status::kErrorProblemTooLarge: return "problem too large for 32-bit indexing";
    case Status::kErrorWorkspaceNull: return "workspace is null but the problem needs one";
    case Status::kErrorWorkspaceTooSmall: return "workspace smaller than workspace_bytes(args)";
    case Status::kErrorMisalignedWorkspace: return "workspace not 16-byte aligned";
    case Status::kErrorNoDevice: return "no CUDA device available";
    case Status::kErrorUnsupportedDevice: return "device below compute capability 8.0";
    case Status::kErrorNoKernelImage: return "no kernel image for this device (build for its arch)";
    case Status::kErrorInsufficientSharedMemory: return "device shared memory per block too small";
    case Status::kErrorCudaError: return "CUDA runtime error";
    case Status::kErrorOverlappingOperands:
      return "overlapping buffers (c with a, b or scales, or the workspace with an operand)";
  }
  return "unknown status";
}

}  // namespace marlin
