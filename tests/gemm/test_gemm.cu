// GPU tests of marlin::gemm<>: shapes, every compiled tile configuration, streams, graphs,
// determinism, the workspace contract, and Status answers that need a device.
#include <cuda_fp16.h>
#include <gtest/gtest.h>
#include <marlin/marlin.cuh>

#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "common/cuda_helpers.hpp"
#include "common/gemm_problem.hpp"

namespace {

using marlin::Status;
using marlin_test::DeviceBuffer;
using marlin_test::GemmProblem;

uint64_t seed_for(int m, int n, int k, int g) {
  return 0x9e3779b97f4a7c15ull ^ (uint64_t(m) << 40) ^ (uint64_t(n) << 20) ^ uint64_t(k) ^
         (g == -1 ? 0x5555ull : 0);
}

/// A zero-filled workspace of the size `Config` needs for `args` (at least 16 bytes).
template <class Config = marlin::AutoTile>
DeviceBuffer make_workspace(const marlin::GemmArgs& args) {
  return marlin_test::zeroed(marlin::workspace_bytes<Config>(args));
}

/// Runs gemm<Config> on a fresh problem and checks it against the cuBLAS reference.
template <class Config = marlin::AutoTile>
void run_and_check(int m, int n, int k, int g) {
  GemmProblem p;
  ASSERT_NO_FATAL_FAILURE(marlin_test::make_problem(p, m, n, k, g, seed_for(m, n, k, g)));
  const marlin::GemmArgs args = p.args();
  DeviceBuffer ws = make_workspace<Config>(args);
  ASSERT_TRUE(ws);
  const Status st =
      marlin::gemm<__half, marlin::uint4b_t, Config>(args, ws.get(), ws.bytes(), nullptr);
  ASSERT_EQ(st, Status::kSuccess) << marlin::to_string(st) << " " << p.describe();
  MARLIN_TEST_CUDA(cudaDeviceSynchronize());
  std::vector<float> ref;
  ASSERT_NO_FATAL_FAILURE(marlin_test::reference_gpu(p, ref));
  const auto c = marlin_test::c_of(p);
  MARLIN_EXPECT_CLOSE(p, c, ref);
  // The contract: a completed call leaves the workspace's counters zero.
  EXPECT_EQ(marlin_test::nonzero_counters(ws.get(), ws.bytes()), 0u)
      << "workspace counters not left zero: " << p.describe();
}

// ---- the cuBLAS reference itself, against an fp64 host reference ---------------------------

TEST(GemmReference, CublasMatchesHostFp64) {
  MARLIN_REQUIRE_GPU();
  for (auto [m, n, k, g] : {std::tuple{3, 128, 256, 128}, std::tuple{17, 192, 384, -1},
                            std::tuple{64, 64, 1024, 128}}) {
    GemmProblem p;
    ASSERT_NO_FATAL_FAILURE(marlin_test::make_problem(p, m, n, k, g, seed_for(m, n, k, g)));
    std::vector<float> gpu;
    ASSERT_NO_FATAL_FAILURE(marlin_test::reference_gpu(p, gpu));
    const std::vector<double> host = marlin_test::reference_host(p);
    double num = 0, den = 0;
    for (size_t i = 0; i < host.size(); ++i) {
      num += (gpu[i] - host[i]) * (gpu[i] - host[i]);
      den += host[i] * host[i];
    }
    EXPECT_LE(std::sqrt(num / den), 1e-6) << p.describe();
  }
}

// ---- shape grid ------------------------------------------------------------------------------

struct Shape {
  int m, n, k, g;
};

std::string shape_name(const testing::TestParamInfo<Shape>& info) {
  const Shape& s = info.param;
  return "m" + std::to_string(s.m) + "_n" + std::to_string(s.n) + "_k" + std::to_string(s.k) +
         (s.g == -1 ? "_perchannel" : "_g" + std::to_string(s.g));
}

class GemmShapes : public testing::TestWithParam<Shape> {};

TEST_P(GemmShapes, MatchesReference) {
  MARLIN_REQUIRE_GPU();
  const Shape s = GetParam();
  run_and_check(s.m, s.n, s.k, s.g);
}

std::vector<Shape> shape_grid() {
  std::vector<Shape> shapes;
  for (int g : {128, -1}) {
    // every M from 1 to 16, and the edges of the 16- and 64-row tiles
    for (int m = 1; m <= 16; ++m) shapes.push_back({m, 256, 1024, g});
    for (int m : {17, 31, 33, 64, 65, 127, 128, 200, 1024, 1500}) shapes.push_back({m, 256, 1024, g});
    for (int n : {64, 192, 4096, 6144}) {
      for (int m : {1, 33, 200}) shapes.push_back({m, n, 1024, g});
    }
    // one K tile, and long K, for the decode tile, the 32-row tile (six stages, two tiles per
    // barrier) and two 64-row groups
    for (int k : {128, 4096, 14336}) {
      for (int m : {1, 16, 24, 65}) shapes.push_back({m, 256, k, g});
    }
    shapes.push_back({1500, 6144, 4096, g});
    shapes.push_back({1024, 4096, 14336, g});
  }
  return shapes;
}

INSTANTIATE_TEST_SUITE_P(Grid, GemmShapes, testing::ValuesIn(shape_grid()), shape_name);

// ---- every compiled tile configuration, forced ---------------------------------------------

template <int kConfig>
void check_forced_config() {
  for (int g : {128, -1}) {
    for (int m : {1, 24, 40, 64, 100}) {
      SCOPED_TRACE("config " + std::to_string(kConfig));
      run_and_check<marlin::FixedTile<kConfig>>(m, 768, 2048, g);
      if (testing::Test::HasFatalFailure()) return;
    }
  }
}

TEST(GemmConfigs, EveryConfigurationForced) {
  MARLIN_REQUIRE_GPU();
  static_assert(marlin::kNumTileConfigs == 3, "add the new configuration here");
  check_forced_config<0>();
  check_forced_config<1>();
  check_forced_config<2>();
}

// The eight-row kernels' warp-private pipelines (heuristics.hpp select_decode_pipeline, change
// 89) synchronize each K group on its own: one warp in the 64-wide tile (a warp barrier), two
// in the 128-wide one and four in the 256-wide one (named barriers). Each tile forced, at 1, 5
// and 8 rows (the rows of A past M zeroed by each K group), over 32-64 K tiles per slice:
// against the reference, and three calls bitwise the same (a missing barrier would let a
// warp read a stage before its K group's copies landed, or refill one still being read).
template <int kConfig>
void check_eight_row_config(const marlin::detail::DeviceInfo& dev) {
  using Config = marlin::FixedTile<kConfig>;
  for (int g : {128, -1}) {
    for (int m : {1, 5, 8}) {
      SCOPED_TRACE("config " + std::to_string(kConfig) + " m " + std::to_string(m) + " g " +
                   std::to_string(g));
      GemmProblem p;
      ASSERT_NO_FATAL_FAILURE(marlin_test::make_problem(p, m, 768, 4096, g, 89));
      const marlin::GemmArgs args = p.args();
      // The call runs the tile's eight-row kernel, with the shared memory of its warp-private
      // stages (and the cluster exchange buffer where the device has clusters).
      marlin::detail::Plan plan;
      ASSERT_EQ(marlin::detail::make_plan<Config>(args, dev, plan), Status::kSuccess);
      EXPECT_EQ(plan.config, kConfig);
      EXPECT_TRUE(plan.eight_rows);
      // On an H200, 3-12 slices of 32-64 K tiles split over clusters of 3 or more, where the
      // warp-private pipeline is the rule's.
      EXPECT_EQ(plan.pipeline,
                marlin::detail::select_decode_pipeline(kConfig, true, g != -1, m, plan.part));
      if (dev.cluster && dev.sm_count == 132 && marlin::detail::kClusterSplit) {
        EXPECT_GE(plan.part.split, 3);
        EXPECT_EQ(plan.pipeline, marlin::kDecodeWarpPrivateMode != 0
                                     ? marlin::DecodePipeline::kWarpPrivate
                                     : marlin::DecodePipeline::kCtaWide);
      }
      const marlin::TileConfig tile = marlin::kTileConfigs[kConfig];
      EXPECT_EQ(plan.smem,
                marlin::smem_bytes(tile, 1, g != -1, false,
                                   plan.pipeline != marlin::DecodePipeline::kCtaWide) +
                    (dev.cluster ? marlin::exchange_bytes(tile, 1) : 0));
      run_and_check<Config>(m, 768, 4096, g);
      if (testing::Test::HasFatalFailure()) return;
      DeviceBuffer ws = make_workspace<Config>(args);
      std::vector<uint16_t> first;
      for (int call = 0; call < 3; ++call) {
        ASSERT_NO_FATAL_FAILURE(marlin_test::poison_c(p));
        ASSERT_EQ((marlin::gemm<__half, marlin::uint4b_t, Config>(args, ws.get(), ws.bytes(),
                                                                  nullptr)),
                  Status::kSuccess);
        MARLIN_TEST_CUDA(cudaDeviceSynchronize());
        if (call == 0) {
          first = marlin_test::c_of(p);
        } else {
          EXPECT_EQ(marlin_test::c_of(p), first) << "call " << call;
        }
      }
    }
  }
}

TEST(GemmDecode, WarpPrivateEightRowKernelsOfEveryTileMatchReference) {
  MARLIN_REQUIRE_GPU();
  static_assert(marlin::kNumTileConfigs == 3, "add the new configuration here");
  marlin::detail::DeviceInfo dev;
  ASSERT_EQ(marlin::detail::query_device(dev), Status::kSuccess);
  check_eight_row_config<0>(dev);
  check_eight_row_config<1>(dev);
  check_eight_row_config<2>(dev);
}

TEST(GemmConfigs, ForcedConfigurationThatCannotTileNIsRefused) {
  MARLIN_REQUIRE_GPU();
  GemmProblem p;
  ASSERT_NO_FATAL_FAILURE(marlin_test::make_problem(p, 8, 192, 256, 128, 1, false));
  // kTileConfigs[1] is 256 columns wide: 192 is not a multiple.
  EXPECT_EQ(marlin::can_implement<marlin::FixedTile<1>>(p.args()), Status::kErrorUnsupportedShape);
  EXPECT_EQ((marlin::gemm<__half, marlin::uint4b_t, marlin::FixedTile<1>>(p.args(), nullptr, 0,
                                                                          nullptr)),
            Status::kErrorUnsupportedShape);
}

// ---- streams, graphs, determinism, workspace -------------------------------------------------

TEST(GemmExecution, NonDefaultStream) {
  MARLIN_REQUIRE_GPU();
  GemmProblem p;
  ASSERT_NO_FATAL_FAILURE(marlin_test::make_problem(p, 37, 4096, 4096, 128, 7));
  cudaStream_t stream;
  MARLIN_TEST_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  DeviceBuffer ws = make_workspace(p.args());
  EXPECT_EQ(marlin::gemm<>(p.args(), ws.get(), ws.bytes(), stream), Status::kSuccess);
  MARLIN_TEST_CUDA(cudaStreamSynchronize(stream));
  MARLIN_TEST_CUDA(cudaStreamDestroy(stream));
  std::vector<float> ref;
  ASSERT_NO_FATAL_FAILURE(marlin_test::reference_gpu(p, ref));
  MARLIN_EXPECT_CLOSE(p, marlin_test::c_of(p), ref);
}

TEST(GemmExecution, GraphCaptureAndReplayAreBitwiseEqualToDirectCall) {
  MARLIN_REQUIRE_GPU();
  // Small shapes (a cluster split on sm_90) and a shape that reduces through the workspace.
  const marlin_test::Dims reducing = marlin_test::workspace_dims();
  ASSERT_GT(reducing.m, 0) << "no candidate shape uses the workspace on this device";
  for (auto [m, n, k, g] : {std::tuple{16, 4096, 4096, 128}, std::tuple{16, 4096, 4096, -1},
                            std::tuple{reducing.m, reducing.n, reducing.k, reducing.g}}) {
    GemmProblem p;
    ASSERT_NO_FATAL_FAILURE(marlin_test::make_problem(p, m, n, k, g, 11));
    DeviceBuffer ws = make_workspace(p.args());
    ASSERT_EQ(marlin::gemm<>(p.args(), ws.get(), ws.bytes(), nullptr), Status::kSuccess);
    MARLIN_TEST_CUDA(cudaDeviceSynchronize());
    const auto direct = marlin_test::c_of(p);

    cudaStream_t stream;
    MARLIN_TEST_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    cudaGraph_t graph;
    MARLIN_TEST_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    const Status st = marlin::gemm<>(p.args(), ws.get(), ws.bytes(), stream);
    MARLIN_TEST_CUDA(cudaStreamEndCapture(stream, &graph));
    ASSERT_EQ(st, Status::kSuccess);
    cudaGraphExec_t exec;
    MARLIN_TEST_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    for (int replay = 0; replay < 3; ++replay) {
      ASSERT_NO_FATAL_FAILURE(marlin_test::poison_c(p, stream));
      MARLIN_TEST_CUDA(cudaGraphLaunch(exec, stream));
      MARLIN_TEST_CUDA(cudaStreamSynchronize(stream));
      EXPECT_EQ(marlin_test::c_of(p), direct)
          << "replay " << replay << " " << p.describe();
    }
    MARLIN_TEST_CUDA(cudaGraphExecDestroy(exec));
    MARLIN_TEST_CUDA(cudaGraphDestroy(graph));
    MARLIN_TEST_CUDA(cudaStreamDestroy(stream));
  }
}

// An engine may capture a CUDA graph around the first call of a shape in its process (say,
// one graph per batch size, with one workspace allocated up front): the first use of marlin's
// plan cache (device and kernel attributes, occupancy, lazily loaded kernels) then happens
// inside the capture, in the strictest (global) mode. ctest runs each test in a process of its
// own and nothing here plans a call before the capture, so every call below is a first one.
TEST(GemmExecution, FirstCallsOfAProcessInsideAGraphCaptureSucceed) {
  MARLIN_REQUIRE_GPU();
  // The decode kernels at 1 and 16 rows, the larger tiles at 48 and 256 rows.
  const std::vector<std::tuple<int, int, int, int>> shapes = {
      {1, 4096, 4096, 128}, {16, 8192, 4096, -1}, {48, 8192, 4096, 128}, {256, 2048, 1024, -1}};
  std::vector<GemmProblem> problems(shapes.size());
  for (size_t i = 0; i < shapes.size(); ++i) {
    const auto [m, n, k, g] = shapes[i];
    ASSERT_NO_FATAL_FAILURE(marlin_test::make_problem(problems[i], m, n, k, g, 17 + i));
  }
  // Sized without asking marlin (which would plan); checked against workspace_bytes below.
  constexpr size_t kWorkspaceBytes = size_t{256} << 20;
  DeviceBuffer ws = marlin_test::zeroed(kWorkspaceBytes);
  ASSERT_TRUE(ws);
  cudaStream_t stream;
  MARLIN_TEST_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaGraph_t graph;
  MARLIN_TEST_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  std::vector<Status> captured;
  for (const GemmProblem& p : problems) {
    captured.push_back(marlin::gemm<>(p.args(), ws.get(), ws.bytes(), stream));
  }
  const cudaError_t end = cudaStreamEndCapture(stream, &graph);
  ASSERT_EQ(end, cudaSuccess) << "the capture was invalidated: " << cudaGetErrorString(end);
  for (size_t i = 0; i < problems.size(); ++i) {
    EXPECT_EQ(captured[i], Status::kSuccess)
        << marlin::to_string(captured[i]) << " " << problems[i].describe();
    EXPECT_LE(marlin::workspace_bytes(problems[i].args()), kWorkspaceBytes);
  }
  cudaGraphExec_t exec;
  MARLIN_TEST_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  MARLIN_TEST_CUDA(cudaGraphLaunch(exec, stream));
  MARLIN_TEST_CUDA(cudaStreamSynchronize(stream));
  for (const GemmProblem& p : problems) {
    std::vector<float> ref;
    ASSERT_NO_FATAL_FAILURE(marlin_test::reference_gpu(p, ref));
    MARLIN_EXPECT_CLOSE(p, marlin_test::c_of(p), ref);
  }
  MARLIN_TEST_CUDA(cudaGraphExecDestroy(exec));
  MARLIN_TEST_CUDA(cudaGraphDestroy(graph));
  MARLIN_TEST_CUDA(cudaStreamDestroy(stream));
}

TEST(GemmExecution, RepeatedCallsAreBitwiseIdentical) {
  MARLIN_REQUIRE_GPU();
  for (auto [m, g] : {std::pair{5, 128}, std::pair{64, -1}, std::pair{300, 128}}) {
    GemmProblem p;
    ASSERT_NO_FATAL_FAILURE(marlin_test::make_problem(p, m, 6144, 4096, g, 13, false));
    DeviceBuffer ws = make_workspace(p.args());
    std::vector<uint16_t> first;
    for (int run = 0; run < 4; ++run) {
      ASSERT_NO_FATAL_FAILURE(marlin_test::poison_c(p));
      ASSERT_EQ(marlin::gemm<>(p.args(), ws.get(), ws.bytes(), nullptr), Status::kSuccess);
      MARLIN_TEST_CUDA(cudaDeviceSynchronize());
      auto c = marlin_test::c_of(p);
      if (run == 0) {
        first = c;
      } else {
        EXPECT_EQ(c, first) << "run " << run << " " << p.describe();
      }
    }
  }
}

TEST(GemmWorkspace, OneWorkspaceServesManyShapesInStreamOrder) {
  MARLIN_REQUIRE_GPU();
  // Shapes of very different partitions and partial-slot sizes, in an order where each call
  // finds the scratch after the counters holding another shape's partials.
  const std::vector<Shape> shapes = {{1024, 4096, 4096, 128}, {1, 4096, 4096, 128},
                                     {16, 6144, 4096, -1},      {600, 6144, 4096, -1},
                                     {100, 256, 14336, 128},    {7, 64, 1024, -1}};
  std::vector<GemmProblem> problems(shapes.size());
  size_t bytes = 16;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const Shape& s = shapes[i];
    ASSERT_NO_FATAL_FAILURE(marlin_test::make_problem(problems[i], s.m, s.n, s.k, s.g, 100 + i));
    bytes = std::max(bytes, marlin::workspace_bytes(problems[i].args()));
  }
  DeviceBuffer ws(bytes);
  MARLIN_TEST_CUDA(cudaMemset(ws.get(), 0, bytes));
  for (int round = 0; round < 3; ++round) {
    for (auto& p : problems) {
      ASSERT_NO_FATAL_FAILURE(marlin_test::poison_c(p));
      ASSERT_EQ(marlin::gemm<>(p.args(), ws.get(), bytes, nullptr), Status::kSuccess);
    }
  }
  MARLIN_TEST_CUDA(cudaDeviceSynchronize());
  EXPECT_EQ(marlin_test::nonzero_counters(ws.get(), bytes), 0u)
      << "workspace counters not left zero";
  for (auto& p : problems) {
    std::vector<float> ref;
    ASSERT_NO_FATAL_FAILURE(marlin_test::reference_gpu(p, ref));
    MARLIN_EXPECT_CLOSE(p, marlin_test::c_of(p), ref);
  }
}

// The automatic plan of shape `s` on `dev` (the plan reads only the shape).
void auto_plan(const Shape& s, const marlin::detail::DeviceInfo& dev,
               marlin::detail::Plan& plan) {
  marlin::GemmArgs shape;
  shape.m = s.m;
  shape.n = s.n;
  shape.k = s.k;
  shape.group_size = s.g;
  ASSERT_EQ(marlin::detail::make_plan<marlin::AutoTile>(shape, dev, plan), Status::kSuccess);
}

// Whether the automatic plan runs whole slices and hybrids as runs (changes 37-38): a
// warp-specialized warpgroup plan in a build that has them.
bool runs_planned(const marlin::detail::Plan& plan) {
  return plan.wgmma && plan.ws_kernel != nullptr && marlin::detail::kWgmmaWholeRuns &&
         marlin::detail::kWgmmaWsStriped;
}

// Solves shape `s` (data from `seed`) through the automatic plan, with no workspace, then
// through `plan` with the partition that `force(args, plan)` sets, which must need none: the
// two give the same bits.
template <class Force>
void expect_forced_partition_gives_auto_bits(const Shape& s, uint64_t seed,
                                             marlin::detail::Plan& plan, Force force) {
  GemmProblem p;
  ASSERT_NO_FATAL_FAILURE(marlin_test::make_problem(p, s.m, s.n, s.k, s.g, seed));
  const marlin::GemmArgs args = p.args();
  ASSERT_EQ(marlin::gemm<>(args, nullptr, 0, nullptr), Status::kSuccess);
  MARLIN_TEST_CUDA(cudaDeviceSynchronize());
  const auto auto_c = marlin_test::c_of(p);
  force(args, plan);
  if (::testing::Test::HasFatalFailure()) return;
  ASSERT_EQ(plan.workspace_bytes, 0u);
  ASSERT_NO_FATAL_FAILURE(marlin_test::poison_c(p));
  ASSERT_EQ(marlin::detail::run_plan(args, plan, nullptr, 0, nullptr), Status::kSuccess);
  MARLIN_TEST_CUDA(cudaDeviceSynchronize());
  EXPECT_EQ(marlin_test::c_of(p), auto_c) << s.m << "x" << s.n << "x" << s.k << " g" << s.g;
}

// The warpgroup kernel's hybrid partition (whole waves of whole slices, then one wave of
// slices split over clusters; heuristics.hpp select_wgmma_partition), on shapes whose plan on
// an H200 is such a hybrid: of the 128-row tile, 272 slices of 8 K tiles (M = 1024, which
// wgmma_rows_tile moves off the 256-row tile: 234 whole, 38 split over 3 CTAs) and 136
// (M = 128: 120 whole, 16 split over 4); of the 256-row tile, 192 of 64 (132 whole, 60 split
// over 2). On the warp-specialized kernel the plan is hybrid runs (change 38: each CTA of one
// wave of clusters runs its whole slices, then its share of a split slice), which give the
// bits of the hybrid with one CTA per whole slice, forced here too.
TEST(GemmWarpgroup, HybridPartitionMatchesReference) {
  MARLIN_REQUIRE_GPU();
  marlin::detail::DeviceInfo dev;
  ASSERT_EQ(marlin::detail::query_device(dev), Status::kSuccess);
  for (const Shape& s : std::vector<Shape>{
           {1024, 4352, 512, 128}, {1024, 4352, 512, -1}, {128, 34816, 512, 128},
           {1024, 6144, 4096, 128}}) {
    marlin::detail::Plan plan;
    ASSERT_NO_FATAL_FAILURE(auto_plan(s, dev, plan));
    if (dev.wgmma && dev.sm_count == 132) {
      EXPECT_TRUE(plan.wgmma && plan.part.split >= 2 && plan.part.whole > 0)
          << s.m << "x" << s.n << "x" << s.k << " g" << s.g << ": split " << plan.part.split
          << " whole " << plan.part.whole;
      EXPECT_EQ(plan.part.runs > 0, runs_planned(plan));
    }
    run_and_check(s.m, s.n, s.k, s.g);
    if (plan.part.runs == 0) continue;
    // The hybrid of one CTA per whole slice gives the bits of the hybrid runs (each slice is
    // summed in the same order either way).
    ASSERT_NO_FATAL_FAILURE(expect_forced_partition_gives_auto_bits(
        s, 67, plan, [](const marlin::GemmArgs& args, marlin::detail::Plan& forced) {
          marlin::detail::set_split(args, forced.part.split, forced, forced.part.whole);
          ASSERT_EQ(forced.part.runs, 0);
        }));
  }
}

// The warpgroup tiles where the mma.sync kernel would split (heuristics.hpp
// wgmma_m_blocks_beside_split, and wgmma_m_blocks's 64-row tile from 33 rows): 17-64 rows on
// layers of at least 4096 x 4096 whose mma.sync plan would be a split of 3 or more
// (14336 x 4096, 4096 x 4096) or striped runs (8192 x 10240) take the 32- or 64-row warpgroup
// tile (4096 x 4096 since changes 64 and 66, at 24, 40 and 56 rows here); where it would be a
// split of 2, the 32-row tile at 17-32 rows on layers of at least kWgmmaTinyBesideSplit2Layer
// weights (the default: every layer, change 63; 16384 x 8192, 8192 x 8192, 4096 x 6144 here)
// and the 64-row tile from 33 rows on layers larger than 4096 x 4096 (change 67; 4096 x 6144,
// 28672 x 8192 here).
TEST(GemmWarpgroup, TilesBesideTheMmaSyncSplitOfTwoMatchReference) {
  MARLIN_REQUIRE_GPU();
  marlin::detail::DeviceInfo dev;
  ASSERT_EQ(marlin::detail::query_device(dev), Status::kSuccess);
  for (const Shape& s : std::vector<Shape>{{24, 4096, 14336, 128},
                                           {32, 4096, 14336, -1},
                                           {40, 10240, 8192, -1},
                                           {20, 10240, 8192, 128},
                                           {24, 8192, 8192, 128},
                                           {24, 8192, 16384, -1},
                                           {20, 6144, 4096, -1},
                                           {24, 4096, 4096, 128},
                                           {40, 4096, 4096, -1},
                                           {56, 4096, 4096, 128},
                                           {40, 6144, 4096, 128},
                                           {36, 8192, 28672, -1}}) {
    marlin::detail::Plan plan;
    ASSERT_NO_FATAL_FAILURE(auto_plan(s, dev, plan));
    if (dev.wgmma && dev.sm_count == 132 && marlin::detail::kWgmmaBesideSplit) {
      const int m_blocks = marlin::detail::wgmma_m_blocks(s.m, s.n, s.k);
      const bool beside =
          m_blocks != 0 || s.n != 8192 ||
          static_cast<long long>(s.k) * s.n >= marlin::detail::kWgmmaTinyBesideSplit2Layer;
      EXPECT_EQ(plan.wgmma, beside) << s.m << "x" << s.n << "x" << s.k;
      if (beside) {
        EXPECT_EQ(plan.m_blocks, m_blocks != 0 ? m_blocks
                                               : marlin::detail::wgmma_m_blocks_beside_split(
                                                     s.m, s.n, s.k));
      }
    }
    run_and_check(s.m, s.n, s.k, s.g);
  }
}

// A decode shape and the tile width and cluster split an H200 plans it with (split 0: any
// cluster split).
struct DecodeTileCase {
  Shape s;
  int tile_n;
  int split;
};

// "MxNxK gG": a case's name in a SCOPED_TRACE.
std::string trace_of(const Shape& s) {
  return std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k) + " g" +
         std::to_string(s.g);
}

// The automatic plan of decode case `s`: the mma.sync kernels' 16-row tile.
void decode_plan(const Shape& s, const marlin::detail::DeviceInfo& dev,
                 marlin::detail::Plan& plan) {
  ASSERT_NO_FATAL_FAILURE(auto_plan(s, dev, plan));
  ASSERT_FALSE(plan.wgmma);
  EXPECT_EQ(plan.m_blocks, 1);
}

// Each case's automatic plan: the mma.sync kernel, on an H200 the expected tile width and
// cluster split, and the result against the reference.
void check_decode_tiles(const std::vector<DecodeTileCase>& cases) {
  marlin::detail::DeviceInfo dev;
  ASSERT_EQ(marlin::detail::query_device(dev), Status::kSuccess);
  for (const DecodeTileCase& c : cases) {
    const Shape& s = c.s;
    SCOPED_TRACE(trace_of(s));
    marlin::detail::Plan plan;
    ASSERT_NO_FATAL_FAILURE(auto_plan(s, dev, plan));
    EXPECT_FALSE(plan.wgmma);
    if (dev.cluster && dev.sm_count == 132 && marlin::detail::kClusterSplit) {
      EXPECT_EQ(plan.tile.tile_n(), c.tile_n);
      if (c.split != 0) {
        EXPECT_EQ(plan.part.split, c.split);
      } else {
        EXPECT_GE(plan.part.split, 2);
      }
    }
    run_and_check(s.m, s.n, s.k, s.g);
  }
}

// The 64-wide decode tile (heuristics.hpp use_narrow_decode_tile, change 78) where the
// 128-wide one would run striped runs over short slices (K x N 2048 x 8192, 4096 x 7168: a
// split of 2 of the narrow tile on an H200) or a cluster split that leaves SMs idle
// (4096 x 1024, 8192 x 1536: 64 and 96 CTAs, 128 and 192 with the narrow tile); and the
// 128-wide tile where neither holds (2048 x 2048, 4096 x 6144).
TEST(GemmDecode, NarrowTileWhereTheWideOneLeavesSmsIdleMatchesReference) {
  MARLIN_REQUIRE_GPU();
  check_decode_tiles({{{4, 8192, 2048, 128}, 64, 0},
                      {{1, 7168, 4096, -1}, 64, 0},
                      {{1, 1024, 4096, 128}, 64, 0},
                      {{16, 1536, 8192, -1}, 64, 0},
                      {{1, 2048, 2048, 128}, 128, 0},
                      {{16, 6144, 4096, -1}, 128, 0}});
}

// The 16-row tile's eight-row kernels (heuristics.hpp use_eight_row_kernel, change 84) at 1-8
// rows and the 16-row form from 9, on each kind of decode plan on an H200 (K x N): striped
// runs (8192 x 8192), a cluster split of the 128-wide tile (4096 x 4096), the 64-wide tile's
// split (2048 x 8192) and one K tile per slice (128 x 256).
TEST(GemmDecode, EightRowKernelMatchesReference) {
  MARLIN_REQUIRE_GPU();
  marlin::detail::DeviceInfo dev;
  ASSERT_EQ(marlin::detail::query_device(dev), Status::kSuccess);
  for (int g : {128, -1}) {
    for (const Shape& base : {Shape{1, 8192, 8192, g}, Shape{1, 4096, 4096, g},
                              Shape{1, 8192, 2048, g}, Shape{1, 256, 128, g}}) {
      for (int m : {1, 3, 8, 9}) {
        const Shape s{m, base.n, base.k, g};
        SCOPED_TRACE(trace_of(s));
        marlin::detail::Plan plan;
        ASSERT_NO_FATAL_FAILURE(decode_plan(s, dev, plan));
        EXPECT_EQ(plan.eight_rows, m <= 8);
        run_and_check(m, s.n, s.k, g);
        if (testing::Test::HasFatalFailure()) return;
      }
    }
  }
}

// Changes 86-88 (heuristics.hpp use_decode_whole_slices): a decode call without a cluster split
// whose idle resident CTAs would have streamed few bytes runs one CTA per slice and needs no
// workspace. On an H200 (264 resident decode CTAs, 128-wide slices), K x N 2048 x 28672 (224
// slices, 5 MiB idle), 2048 x 18944 (148 slices, 14.5 MiB) and 1024 x 33792 (264, exactly one wave)
// do in both scale modes, at 1 and 8 rows (the eight-row kernels) and at 16; 4096 x 20480 (160
// slices, 26 MiB) keeps striped runs; 8192 x 27136 (212 slices, 26 MiB) runs whole slices
// per-channel only (80 % of the CTAs); 4096 x 24576 (192 slices, 73 %, 18 MiB) per-channel at every
// M and with group scales at 1 and 8 rows only (the eight-row kernels' 20 MiB, change 111). Where
// the 128-wide tile has more slices than CTAs, the 256-wide tile's whole slices: 2048 x 57344 (224
// of them, 10 MiB) in both modes, 4096 x 57344 (20 MiB) per-channel only, 8192 x 57344 (224, 85 %
// of the CTAs, 40 MiB) per-channel at 1-8 rows only (the eight-row kernels, change 107); the
// 128-wide tile's striped runs otherwise.
TEST(GemmDecode, WholeSlicesWhereFewCtasWouldIdleMatchReference) {
  MARLIN_REQUIRE_GPU();
  marlin::detail::DeviceInfo dev;
  ASSERT_EQ(marlin::detail::query_device(dev), Status::kSuccess);
  const bool h200 = dev.cluster && dev.sm_count == 132 && marlin::detail::kClusterSplit &&
                    marlin::detail::kDecodeWholeSlices == 1 && marlin::detail::kDecodeWideWhole;
  enum Whole { kNever, kEightRows, kAlways };  // whole slices at no M, at M <= 8 only, at every M
  struct Case {
    int n, k;
    Whole whole_grouped, whole_channel;
    int whole_tile_n;  // the tile's width where the plan is whole slices (128 otherwise)
  };
  for (int g : {128, -1}) {
    for (const Case c :
         {Case{28672, 2048, kAlways, kAlways, 128}, Case{18944, 2048, kAlways, kAlways, 128},
          Case{33792, 1024, kAlways, kAlways, 128}, Case{20480, 4096, kNever, kNever, 128},
          Case{27136, 8192, kNever, kAlways, 128}, Case{24576, 4096, kEightRows, kAlways, 128},
          Case{57344, 2048, kAlways, kAlways, 256}, Case{57344, 4096, kNever, kAlways, 256},
          Case{57344, 8192, kNever, kEightRows, 256}}) {
      for (int m : {1, 8, 16}) {
        const Whole rule = g == -1 ? c.whole_channel : c.whole_grouped;
        const bool whole = rule == kAlways || (rule == kEightRows && m <= 8);
        const int tile_n = whole ? c.whole_tile_n : 128;
        const Shape s{m, c.n, c.k, g};
        SCOPED_TRACE(trace_of(s));
        marlin::detail::Plan plan;
        ASSERT_NO_FATAL_FAILURE(decode_plan(s, dev, plan));
        if (h200) {
          EXPECT_EQ(plan.tile.tile_n(), tile_n);
          EXPECT_EQ(plan.part.split, 0);
          EXPECT_EQ(plan.part.grid == s.n / tile_n, whole) << "grid " << plan.part.grid;
          EXPECT_EQ(plan.workspace_bytes == 0, whole);
        }
        run_and_check(m, s.n, s.k, g);
        if (testing::Test::HasFatalFailure()) return;
      }
    }
  }
}

// Changes 79-80 (heuristics.hpp narrow_decode_mid_candidate, use_narrow_decode_mid_split)
// where the 128-wide tile runs a split of 6-8 over short slices, on an H200: K x N 3584 x 3584
// and 4096 x 3840 the 64-wide tile's split of 4 from 8 rows with group scales (per-channel from
// 9), 4096 x 4096 and 2048 x 4096 its split of 3 from 12 rows; the 128-wide tile below them, on
// longer slices (6144 x 4096) and where the narrow split is 2 (5120 x 5120). Below those rows
// (use_narrow_decode_short_split, bench/NOTES.md run 278) N = 3840's split of 4 (ranks of 6-8
// K tiles against the wide tile's 7 of 4-5) at K = 3072-4096, not N = 4096's 3 or N = 3584's 4
// against 8.
TEST(GemmDecode, NarrowTileMidSplitOnShortSlicesMatchesReference) {
  MARLIN_REQUIRE_GPU();
  check_decode_tiles({{{12, 4096, 4096, 128}, 64, 3},
                      {{16, 4096, 2048, -1}, 64, 3},
                      {{8, 3584, 3584, 128}, 64, 4},
                      {{9, 3840, 4096, -1}, 64, 4},
                      {{1, 3840, 4096, 128}, 64, 4},
                      {{8, 3840, 3072, -1}, 64, 4},
                      {{8, 4096, 4096, 128}, 128, 6},
                      {{11, 4096, 2048, -1}, 128, 6},
                      {{1, 3584, 3584, 128}, 128, 8},
                      {{16, 4096, 6144, 128}, 128, 6},
                      {{16, 5120, 5120, 128}, 128, 0}});
}

// Change 80 (heuristics.hpp decode_spare_clusters) on an H200, whose decode kernels fit 30
// clusters of 8, 32 of 7 and 39 of 6: on short slices a decode split leaves one cluster of its
// size free, so N = 3840 (30 slices of 128 columns) runs a split of 7 instead of 8 and
// N = 4096 (32) 6 instead of 7, with group scales up to K = 9216 (change 81) and per-channel
// up to 6144; beyond (K x N 8192 x 4096 per-channel, 10240 x 4096, 14336 x 4096) the split of 7
// stays, as do the splits that leave a cluster free anyway (4096 x 3584: 8, 4096 x 4608: 6).
// (N = 3840 at K = 6144: on slices of at most 36 K tiles it takes the 64-wide tile below 8-9
// rows, use_narrow_decode_short_split.)
TEST(GemmDecode, SplitsKeepAClusterFreeOnShortSlicesMatchReference) {
  MARLIN_REQUIRE_GPU();
  check_decode_tiles({{{1, 3840, 6144, 128}, 128, 7},
                      {{8, 3840, 6144, -1}, 128, 7},
                      {{4, 3840, 8192, 128}, 128, 7},
                      {{1, 4096, 4096, -1}, 128, 6},
                      {{2, 4096, 6144, -1}, 128, 6},
                      {{1, 4096, 8192, 128}, 128, 6},
                      {{1, 4096, 8192, -1}, 128, 7},
                      {{4, 4096, 9216, 128}, 128, 6},
                      {{16, 3840, 9216, 128}, 128, 7},
                      {{1, 4096, 10240, 128}, 128, 7},
                      {{1, 4096, 14336, 128}, 128, 7},
                      {{4, 3584, 4096, 128}, 128, 8},
                      {{1, 4608, 4096, -1}, 128, 6}});
}

// More whole slices than kMaxGrid (which bounds only the slice counters of partitions that
// reduce through the workspace): 4100 slices of the 256-row tile (2 row groups of 2050
// 128-column slices, the second holding 244 rows), no workspace. The automatic plan runs them
// as runs of whole slices over at most one CTA per SM on the warp-specialized kernel (change
// 37: 32 slices each over 129 CTAs on an H200), and one CTA per slice otherwise; one CTA per
// slice is forced too, beyond kMaxGrid, and gives the same bits.
TEST(GemmWarpgroup, WholeSlicesBeyondTheGridLimitMatchReference) {
  MARLIN_REQUIRE_GPU();
  marlin::detail::DeviceInfo dev;
  ASSERT_EQ(marlin::detail::query_device(dev), Status::kSuccess);
  const Shape s{500, 262400, 128, 128};
  marlin::detail::Plan plan;
  ASSERT_NO_FATAL_FAILURE(auto_plan(s, dev, plan));
  if (dev.wgmma && dev.sm_count == 132) {
    EXPECT_EQ(plan.m_blocks, marlin::kWgmmaMBlocksTall);
    EXPECT_EQ(plan.workspace_bytes, 0u);
    if (runs_planned(plan)) {
      EXPECT_EQ(plan.part.iters, 32 * plan.part.k_tiles);
      EXPECT_EQ(plan.part.grid, 129);
    } else {
      EXPECT_EQ(plan.part.grid, plan.part.slices);
      EXPECT_GT(plan.part.grid, marlin::detail::kMaxGrid);
    }
  }
  run_and_check(s.m, s.n, s.k, s.g);
  if (!plan.wgmma) return;
  // One CTA per slice, forced (beyond kMaxGrid), against the automatic plan's bits.
  ASSERT_NO_FATAL_FAILURE(expect_forced_partition_gives_auto_bits(
      s, 61, plan, [](const marlin::GemmArgs& args, marlin::detail::Plan& forced) {
        marlin::detail::set_whole_slices(args, forced);
        ASSERT_GT(forced.part.grid, marlin::detail::kMaxGrid);
      }));
}

// Refused calls (each bad argument and workspace fault, C and workspace untouched) are in
// test_reliability.cu.

TEST(GemmStatus, NoDeviceIsReportedWithoutGpu) {
  if (marlin_test::gpu_major() != 0) GTEST_SKIP() << "a GPU is present: nothing to check";
  marlin::GemmArgs args;
  args.m = 16;
  args.n = 256;
  args.k = 256;
  // Addresses that are never read (no device): c apart from the operands, as check_args asks.
  args.a = args.b = args.scales = reinterpret_cast<const void*>(std::uintptr_t{0x10000000});
  args.c = reinterpret_cast<void*>(std::uintptr_t{0x20000000});
  EXPECT_EQ(marlin::can_implement(args), Status::kErrorNoDevice);
  EXPECT_EQ(marlin::gemm<>(args, nullptr, 0, nullptr), Status::kErrorNoDevice);
  EXPECT_EQ(marlin::workspace_bytes(args), 0u);
}

// Runs without a GPU too: the plan refuses a device whose per-block shared memory is below the
// smallest pipeline before it makes any CUDA call (white-box: a fake DeviceInfo).
TEST(GemmStatus, TooLittleSharedMemoryIsReported) {
  marlin::GemmArgs args;
  args.m = 64;
  args.n = 256;
  args.k = 1024;
  args.group_size = 128;
  marlin::detail::DeviceInfo small;
  small.cc_major = 8;
  small.sm_count = 8;
  small.smem_optin = 32 * 1024;  // below 4 stages of any tile at m_blocks 4
  marlin::detail::Plan plan;
  EXPECT_EQ(marlin::detail::make_plan<marlin::AutoTile>(args, small, plan),
            Status::kErrorInsufficientSharedMemory);
}

// ---- Llama-3 layer shapes (label: slow) -------------------------------------------------------

class GemmSlowLlama : public testing::TestWithParam<Shape> {};

TEST_P(GemmSlowLlama, MatchesReference) {
  MARLIN_REQUIRE_GPU();
  const Shape s = GetParam();
  run_and_check(s.m, s.n, s.k, s.g);
}

std::vector<Shape> llama_shapes() {
  std::vector<Shape> shapes;
  const std::pair<int, int> kn[] = {{4096, 6144},  {4096, 4096},  {4096, 28672}, {14336, 4096},
                                    {8192, 10240}, {8192, 8192},  {8192, 57344}, {28672, 8192}};
  for (auto [k, n] : kn) {
    // 1 and 16: decode kernels; 64: the mma.sync or 64-row warpgroup tile; 128 and 256: the
    // 128-row warpgroup tile, 256 or 128 columns wide (heuristics.hpp).
    for (int m : {1, 16, 64, 128, 256}) {
      for (int g : {128, -1}) shapes.push_back({m, n, k, g});
    }
  }
  return shapes;
}

INSTANTIATE_TEST_SUITE_P(Llama3, GemmSlowLlama, testing::ValuesIn(llama_shapes()), shape_name);

}  // namespace
