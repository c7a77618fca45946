// Built with sm_80 machine code only (no PTX): on a GPU of another architecture the kernels
// cannot load, and marlin must say so with Status::kErrorNoKernelImage instead of failing the
// launch. Skips without a GPU and on sm_80 itself.
#include <gtest/gtest.h>
#include <marlin/marlin.cuh>

#include "common/cuda_helpers.hpp"

TEST(NoKernelImage, OtherArchitectureIsReportedAsNoKernelImage) {
  MARLIN_REQUIRE_GPU();
  int major = 0, minor = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0), cudaSuccess);
  if (major == 8 && minor == 0) GTEST_SKIP() << "sm_80 runs this binary's code: nothing to check";
  void* dev = nullptr;
  ASSERT_EQ(cudaMalloc(&dev, 1 << 20), cudaSuccess);
  marlin::GemmArgs args;
  args.m = 16;
  args.n = 256;
  args.k = 256;
  args.group_size = 128;
  // a, b and the scales share the first 256 KiB (they are only read), c and the workspace
  // have their own quarter and half: the arguments are valid but for the missing code.
  char* const bytes = static_cast<char*>(dev);
  args.a = args.b = args.scales = bytes;
  args.c = bytes + (1 << 18);
  EXPECT_EQ(marlin::can_implement(args), marlin::Status::kErrorNoKernelImage);
  EXPECT_EQ(marlin::gemm<>(args, bytes + (1 << 19), 1 << 19, nullptr),
            marlin::Status::kErrorNoKernelImage);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess) << "marlin left a sticky error behind";
  cudaFree(dev);
}
