// Programmatic dependent launch (sm_90+) and the L2 prefetch that may run before its wait.
// Below sm_90 the grid-dependency wrappers compile to nothing: the host launches with the
// programmatic-serialization attribute only kernels compiled for sm_90 or newer.
#pragma once

#include "arch.cuh"

namespace marlin::ptx {

/// Waits until every grid this one depends on (the previous kernel in the stream, when this
/// grid was launched with programmatic stream serialization) has completed and its memory
/// operations are visible. Without that launch attribute it returns at once.
__device__ __forceinline__ void grid_dependency_wait() {
#if defined(MARLIN_SM90_ENABLED)
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

/// Lets the next grid in the stream (if launched with programmatic stream serialization) be
/// scheduled once every CTA of this grid has called this or exited. It orders nothing: the
/// next grid still waits for this one's completion in grid_dependency_wait.
__device__ __forceinline__ void launch_dependents() {
#if defined(MARLIN_SM90_ENABLED)
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

/// Fetches the 128-byte line holding `gmem` into L2. L2 is the device's point of coherence,
/// so this is safe before grid_dependency_wait: a later write by the previous grid updates
/// the line, and the reads after the wait see it.
__device__ __forceinline__ void prefetch_l2(const void* gmem) {
#if defined(MARLIN_SM80_ENABLED)
  asm volatile("prefetch.global.L2 [%0];\n" ::"l"(gmem));
#else
  (void)gmem;
#endif
}

}  // namespace marlin::ptx
