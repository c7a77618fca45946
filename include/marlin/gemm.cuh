// The public entry point: GemmArgs, workspace_bytes, can_implement and gemm<>.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <type_traits>

#include "detail/launch.cuh"
#include "detail/validate.hpp"
#include "status.hpp"
#include "types.hpp"

namespace marlin {

/// Bytes of workspace that `gemm<ElementA, ElementB, Config>(args, ...)` needs on the current
/// device; 0 when the problem needs none (or when `args` is invalid, which gemm<> reports).
///
/// Workspace contract:
/// - it must be zero-filled before its first use (e.g. `cudaMemsetAsync(ws, 0, bytes, stream)`);
/// - every call that returns kSuccess and whose kernel completes leaves it ready for the next
///   (its first detail::kCountersBytes, the slice counters, zero again; the rest is scratch),
///   so one workspace serves any number of calls in stream order, of any shapes, as long as it
///   is as large as the largest workspace_bytes among them;
/// - calls that may run at the same time (different streams without ordering, or concurrent
///   graph branches) must use different workspaces: a shared one gives wrong results;
/// - it must not overlap a, b, scales or c (gemm<> returns kErrorOverlappingOperands);
/// - if a kernel is aborted (device fault), zero it again before reuse.
template <class Config = AutoTile>
std::size_t workspace_bytes(const GemmArgs& args) {
  if (detail::check_args(args) != Status::kSuccess || args.m == 0) return 0;
  detail::DeviceInfo dev;
  if (detail::query_device(dev) != Status::kSuccess) return 0;
  detail::Plan plan;
  if (detail::make_plan<Config>(args, dev, plan) != Status::kSuccess) return 0;
  return plan.workspace_bytes;
}

/// Whether `gemm<ElementA, ElementB, Config>(args, ...)` can run on the current device:
/// kSuccess, or the Status gemm<> would return before launching (workspace aside).
template <class Config = AutoTile>
Status can_implement(const GemmArgs& args) {
  const Status st = detail::check_args(args);
  if (st != Status::kSuccess || args.m == 0) return st;
  detail::DeviceInfo dev;
  if (const Status dev_st = detail::query_device(dev); dev_st != Status::kSuccess) return dev_st;
  detail::Plan plan;
  return detail::make_plan<Config>(args, dev, plan);
}

/// C = A * dequant(B) on `stream` (see GemmArgs for layouts).
///
/// Template parameters: `ElementA` is the activation type (`__half`), `ElementB` the weight
/// code type (`uint4b_t`), `Config` AutoTile (choose per problem) or FixedTile<i>
/// (kTileConfigs[i] always).
///
/// Allocates nothing, never synchronizes, and is safe to capture in a CUDA graph: it enqueues
/// one kernel (none when m == 0) and returns. Invalid arguments are reported before anything is
/// launched and C is then untouched. `workspace` follows the contract on workspace_bytes(); it
/// may be null when workspace_bytes(args) is 0. Results are bitwise reproducible for the same
/// arguments on the same device. Any number of host threads may call it at once (each on its own
/// stream and workspace; the per-process plan cache is locked). A launch error that the caller
/// left pending in the CUDA runtime is never returned as this call's status, and a call that
/// succeeds leaves it pending (cudaGetLastError still returns it afterwards).
template <class ElementA = __half, class ElementB = uint4b_t, class Config = AutoTile>
Status gemm(const GemmArgs& args, void* workspace, std::size_t workspace_size,
            cudaStream_t stream) {
  static_assert(std::is_same_v<ElementA, __half>, "ElementA: only __half is supported so far");
  static_assert(std::is_same_v<ElementB, uint4b_t>, "ElementB: only uint4b_t is supported so far");
  Status st = detail::check_args(args);
  if (st != Status::kSuccess || args.m == 0) return st;
  detail::DeviceInfo dev;
  if ((st = detail::query_device(dev)) != Status::kSuccess) return st;
  detail::Plan plan;
  if ((st = detail::make_plan<Config>(args, dev, plan)) != Status::kSuccess) return st;
  return detail::run_plan(args, plan, workspace, workspace_size, stream);
}

}  // namespace marlin
