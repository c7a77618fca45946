// Built with compute_80 PTX only (no machine code): on any GPU of compute capability 8.0 or
// newer the driver JIT-compiles the kernels from PTX written for sm_80. On an sm_90 GPU that
// code has neither clusters nor wgmma (the sm_90 paths compile to traps below sm_90): marlin
// must see from its probe what the code was compiled for, keep to the paths that code has,
// and compute correct results.
#include <gtest/gtest.h>
#include <marlin/marlin.cuh>

#include <tuple>
#include <vector>

#include "common/cuda_helpers.hpp"
#include "common/gemm_problem.hpp"
#include "common/pending_error.cuh"

using marlin::Status;

TEST(PtxJit, Sm80CodeOnNewerGpusTakesOnlyItsOwnPaths) {
  MARLIN_REQUIRE_GPU();
  marlin::detail::DeviceInfo dev;
  ASSERT_EQ(marlin::detail::query_device(dev), Status::kSuccess);
  EXPECT_FALSE(dev.cluster) << "code JIT-compiled from compute_80 PTX has no cluster path";
  EXPECT_FALSE(dev.wgmma) << "code JIT-compiled from compute_80 PTX has no wgmma path";
  // Shapes that take the cluster split (1 x 4096 x 4096) and the warpgroup kernel (256 rows,
  // N % 256 == 0) where the code has them, and a striped reduction.
  for (auto [m, n, k, g] : {std::tuple{1, 4096, 4096, 128}, std::tuple{256, 1024, 2048, -1},
                            std::tuple{16, 256, 1024, 128}}) {
    marlin_test::GemmProblem p;
    ASSERT_NO_FATAL_FAILURE(marlin_test::make_problem(p, m, n, k, g, 51));
    SCOPED_TRACE(p.describe());
    marlin::detail::Plan plan;
    ASSERT_EQ(marlin::detail::make_plan<marlin::AutoTile>(p.args(), dev, plan), Status::kSuccess);
    EXPECT_EQ(plan.part.split, 0);
    EXPECT_FALSE(plan.wgmma);
    EXPECT_LE(plan.m_blocks, marlin::kMaxMBlocks);
    marlin_test::DeviceBuffer ws = marlin_test::zeroed(marlin::workspace_bytes(p.args()));
    ASSERT_NO_FATAL_FAILURE(marlin_test::poison_c(p));
    ASSERT_EQ(marlin::gemm<>(p.args(), ws.get(), ws.bytes(), nullptr), Status::kSuccess);
    MARLIN_TEST_CUDA(cudaDeviceSynchronize());
    std::vector<float> ref;
    ASSERT_NO_FATAL_FAILURE(marlin_test::reference_gpu(p, ref));
    MARLIN_EXPECT_CLOSE(p, marlin_test::c_of(p), ref);
  }
}

// This code launches without programmatic dependent launch or clusters, the launch path of
// sm_80-sm_89 GPUs: a launch error that the caller left pending must not come back as the
// call's own status (as cudaGetLastError after a <<<>>> launch would return it), and stays
// pending for the caller.
TEST(PtxJit, AnErrorLeftPendingByTheCallerIsNotReportedAsTheCallsOwn) {
  MARLIN_REQUIRE_GPU();
  marlin_test::GemmProblem p;
  ASSERT_NO_FATAL_FAILURE(marlin_test::make_problem(p, 16, 256, 1024, 128, 52));
  ASSERT_NO_FATAL_FAILURE(marlin_test::expect_gemm_ignores_pending_error(p));
}
