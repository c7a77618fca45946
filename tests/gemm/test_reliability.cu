// Reliability tests: every bad input answered before launch, operand canaries, a randomized
// differential test, NaN/Inf and large-magnitude numerics, independence from the CTA count,
// and concurrency (several streams; a GEMM beside a kernel that occupies most SMs).
#include <cuda_fp16.h>
#include <gtest/gtest.h>
#include <marlin/marlin.cuh>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "common/cuda_helpers.hpp"
#include "common/gemm_problem.hpp"
#include "common/pending_error.cuh"

namespace {

using marlin::Status;
using marlin_test::DeviceBuffer;
using marlin_test::GemmProblem;

using marlin_test::c_of;
using marlin_test::zeroed;

// ---- bad input --------------------------------------------------------------------------------

TEST(Reliability, EveryBadInputIsAnsweredBeforeLaunchAndTouchesNothing) {
  MARLIN_REQUIRE_GPU();
  const marlin_test::Dims d = marlin_test::workspace_dims();
  ASSERT_GT(d.m, 0) << "no candidate shape uses the workspace on this device";
  GemmProblem p;
  ASSERT_NO_FATAL_FAILURE(marlin_test::make_problem(p, d.m, d.n, d.k, d.g, 21, false));
  const size_t need = marlin::workspace_bytes(p.args());
  ASSERT_GT(need, 0u);
  DeviceBuffer ws = zeroed(need + 64);
  struct Case {
    const char* what;
    marlin::GemmArgs args;
    void* ws;
    size_t ws_bytes;
    Status want;
  };
  std::vector<Case> cases;
  auto add = [&](const char* what, auto mutate, Status want, void* w = nullptr,
                 size_t wb = 0) {
    marlin::GemmArgs a = p.args();
    mutate(a);
    cases.push_back({what, a, w ? w : ws.get(), w ? wb : ws.bytes(), want});
  };
  char* const c_bytes = static_cast<char*>(p.d_c.get());
  add("null a", [](auto& a) { a.a = nullptr; }, Status::kErrorNullPointer);
  add("null b", [](auto& a) { a.b = nullptr; }, Status::kErrorNullPointer);
  add("null scales", [](auto& a) { a.scales = nullptr; }, Status::kErrorNullPointer);
  add("null c", [](auto& a) { a.c = nullptr; }, Status::kErrorNullPointer);
  add("a misaligned", [](auto& a) { a.a = static_cast<const char*>(a.a) + 8; },
      Status::kErrorMisalignedPointer);
  add("b misaligned", [](auto& a) { a.b = static_cast<const char*>(a.b) + 4; },
      Status::kErrorMisalignedPointer);
  add("scales misaligned", [](auto& a) { a.scales = static_cast<const char*>(a.scales) + 2; },
      Status::kErrorMisalignedPointer);
  add("c misaligned", [&](auto& a) { a.c = c_bytes + 2; }, Status::kErrorMisalignedPointer);
  add("m < 0", [](auto& a) { a.m = -5; }, Status::kErrorInvalidShape);
  add("n == 0", [](auto& a) { a.n = 0; }, Status::kErrorInvalidShape);
  add("k < 0", [](auto& a) { a.k = -4096; }, Status::kErrorInvalidShape);
  add("n % 64", [](auto& a) { a.n = 4064; }, Status::kErrorUnsupportedShape);
  add("k % 128", [](auto& a) {
        a.k = 4032;
        a.group_size = -1;
      },
      Status::kErrorUnsupportedShape);
  add("group 64", [](auto& a) { a.group_size = 64; }, Status::kErrorUnsupportedGroupSize);
  add("group 256", [](auto& a) { a.group_size = 256; }, Status::kErrorUnsupportedGroupSize);
  add("k % group", [](auto& a) { a.k = 4032; }, Status::kErrorGroupSizeMismatch);
  add("workspace null", [](auto&) {}, Status::kErrorWorkspaceNull, nullptr, 0);
  cases.back().ws = nullptr;
  cases.back().ws_bytes = need;
  add("workspace small", [](auto&) {}, Status::kErrorWorkspaceTooSmall, ws.get(), need - 16);
  add("workspace misaligned", [](auto&) {}, Status::kErrorMisalignedWorkspace,
      ws.as<char>() + 8, need);
  add("workspace on c", [](auto&) {}, Status::kErrorOverlappingOperands, c_bytes, need);
  add("c on a", [](auto& a) { a.c = const_cast<void*>(a.a); }, Status::kErrorOverlappingOperands);
  add("c on b's last bytes", [&](auto& a) {
        a.c = const_cast<char*>(static_cast<const char*>(a.b)) + size_t(d.k) * d.n / 2 - 16;
      },
      Status::kErrorOverlappingOperands);
  add("scales in c", [&](auto& a) { a.scales = c_bytes + 16; }, Status::kErrorOverlappingOperands);
  for (const Case& c : cases) {
    const Status got = marlin::gemm<>(c.args, c.ws, c.ws_bytes, nullptr);
    EXPECT_EQ(got, c.want) << c.what << ": " << marlin::to_string(got);
    // can_implement gives the same answer for everything but the workspace, which it does
    // not see.
    const bool workspace_fault = std::string(c.what).rfind("workspace", 0) == 0;
    EXPECT_EQ(marlin::can_implement(c.args), workspace_fault ? Status::kSuccess : c.want)
        << c.what;
  }
  // M = 0 succeeds and does nothing, even with null operands.
  marlin::GemmArgs empty = p.args();
  empty.m = 0;
  EXPECT_EQ(marlin::gemm<>(empty, nullptr, 0, nullptr), Status::kSuccess);
  empty.a = empty.b = empty.scales = nullptr;
  empty.c = nullptr;
  EXPECT_EQ(marlin::gemm<>(empty, nullptr, 0, nullptr), Status::kSuccess);
  MARLIN_TEST_CUDA(cudaDeviceSynchronize());
  for (uint16_t x : c_of(p)) ASSERT_EQ(x, marlin_test::kPoisonHalf) << "C was written";
  for (uint32_t x : marlin_test::to_host<uint32_t>(ws.get(), ws.bytes() / 4)) {
    ASSERT_EQ(x, 0u) << "the workspace was written";
  }
}

// ---- canaries -------------------------------------------------------------------------------

TEST(Reliability, OperandsInsideSentinelFilledBuffersLeaveSentinelsIntact) {
  MARLIN_REQUIRE_GPU();
  constexpr size_t kGuard = 4096;
  constexpr uint8_t kSentinel = 0xA5;
  for (auto [m, n, k, g] : {std::tuple{1, 256, 1024, 128}, std::tuple{37, 192, 2048, -1},
                            std::tuple{200, 512, 512, 128}}) {
    GemmProblem p;
    ASSERT_NO_FATAL_FAILURE(marlin_test::make_problem(p, m, n, k, g, 31));
    // Copy every operand into the middle of a larger, sentinel-filled buffer.
    struct Guarded {
      DeviceBuffer buf;
      size_t bytes;
      char* mid() const { return buf.as<char>() + kGuard; }
    };
    auto guard = [&](const DeviceBuffer& src) {
      Guarded gd{DeviceBuffer(src.bytes() + 2 * kGuard), src.bytes()};
      EXPECT_EQ(cudaMemset(gd.buf.get(), kSentinel, gd.buf.bytes()), cudaSuccess);
      EXPECT_EQ(cudaMemcpy(gd.mid(), src.get(), src.bytes(), cudaMemcpyDeviceToDevice),
                cudaSuccess);
      return gd;
    };
    Guarded a = guard(p.d_a), b = guard(p.d_b), s = guard(p.d_s), c = guard(p.d_c);
    marlin::GemmArgs args = p.args();
    args.a = a.mid();
    args.b = b.mid();
    args.scales = s.mid();
    args.c = c.mid();
    const size_t need = marlin::workspace_bytes(args);
    Guarded ws{DeviceBuffer(need + 2 * kGuard), need};
    MARLIN_TEST_CUDA(cudaMemset(ws.buf.get(), kSentinel, ws.buf.bytes()));
    MARLIN_TEST_CUDA(cudaMemset(ws.mid(), 0, need));
    for (int run = 0; run < 2; ++run) {
      ASSERT_EQ(marlin::gemm<>(args, ws.mid(), need, nullptr), Status::kSuccess);
    }
    MARLIN_TEST_CUDA(cudaDeviceSynchronize());
    for (const Guarded* gd : {&a, &b, &s, &c, &ws}) {
      const auto bytes = marlin_test::to_host<uint8_t>(gd->buf.get(), gd->buf.bytes());
      for (size_t i = 0; i < kGuard; ++i) {
        ASSERT_EQ(bytes[i], kSentinel) << "sentinel before a buffer overwritten at " << i;
        ASSERT_EQ(bytes[kGuard + gd->bytes + i], kSentinel)
            << "sentinel after a buffer overwritten at " << i << " " << p.describe();
      }
    }
    std::vector<float> ref;
    ASSERT_NO_FATAL_FAILURE(marlin_test::reference_gpu(p, ref));
    MARLIN_EXPECT_CLOSE(p, marlin_test::to_host<uint16_t>(c.mid(), size_t(m) * n), ref);
  }
}

// ---- randomized differential test -----------------------------------------------------------

// MARLIN_FUZZ_SEED=<n> replays a seed, MARLIN_FUZZ_SEED=random draws a fresh one;
// MARLIN_FUZZ_CASES=<n> sets the count (default 500). The seed is printed either way.
TEST(Reliability, RandomizedDifferentialAgainstReference) {
  MARLIN_REQUIRE_GPU();
  uint64_t seed = 20261129;
  if (const char* env = std::getenv("MARLIN_FUZZ_SEED")) {
    seed = std::string(env) == "random" ? (uint64_t(std::random_device{}()) << 32) ^
                                              std::random_device{}()
                                        : std::strtoull(env, nullptr, 10);
  }
  int cases = 500;
  if (const char* env = std::getenv("MARLIN_FUZZ_CASES")) cases = std::atoi(env);
  std::cout << "[ fuzz     ] seed " << seed << ", " << cases << " cases" << std::endl;
  RecordProperty("fuzz_seed", std::to_string(seed));
  std::mt19937_64 rng(seed);
  DeviceBuffer ws;
  int run = 0;
  for (int i = 0; i < cases; ++i) {
    const int bucket = int(rng() % 10);
    const int m = bucket < 5 ? 1 + int(rng() % 16) : bucket < 8 ? 17 + int(rng() % 112)
                                                                : 129 + int(rng() % 500);
    const int n = 64 * (1 + int(rng() % 24));
    const int k = 128 * (1 + int(rng() % 16));
    const int g = rng() % 2 ? 128 : -1;
    const int config = int(rng() % 4) - 1;  // -1: automatic; else forced when it divides n
    GemmProblem p;
    ASSERT_NO_FATAL_FAILURE(marlin_test::make_problem(p, m, n, k, g, rng()));
    SCOPED_TRACE("fuzz seed " + std::to_string(seed) + " case " + std::to_string(i) +
                 " config " + std::to_string(config) + ": " + p.describe());
    const marlin::GemmArgs args = p.args();
    Status st;
    auto call = [&](auto cfg) {
      using Cfg = decltype(cfg);
      const size_t need = marlin::workspace_bytes<Cfg>(args);
      if (ws.bytes() < need) ws = zeroed(need);
      return marlin::gemm<__half, marlin::uint4b_t, Cfg>(args, ws.get(), ws.bytes(), nullptr);
    };
    if (config == -1 || !marlin::detail::tile_divides(config, n)) {
      st = call(marlin::AutoTile{});
    } else if (config == 0) {
      st = call(marlin::FixedTile<0>{});
    } else if (config == 1) {
      st = call(marlin::FixedTile<1>{});
    } else {
      st = call(marlin::FixedTile<2>{});
    }
    ASSERT_EQ(st, Status::kSuccess) << marlin::to_string(st);
    MARLIN_TEST_CUDA(cudaDeviceSynchronize());
    std::vector<float> ref;
    ASSERT_NO_FATAL_FAILURE(marlin_test::reference_gpu(p, ref));
    const auto cmp = marlin_test::compare(c_of(p), ref);
    ASSERT_TRUE(cmp.rel_l2 <= 2e-3 && cmp.bad == 0)
        << "rel_l2 " << cmp.rel_l2 << ", " << cmp.bad << " bad elements, first at "
        << cmp.first_bad << " got " << cmp.first_got << " want " << cmp.first_want;
    ++run;
  }
  std::cout << "[ fuzz     ] " << run << " random cases passed (seed " << seed << ")"
            << std::endl;
}

// ---- numerics -------------------------------------------------------------------------------

TEST(Reliability, NanAndInfInAPropagateToExactlyTheirRows) {
  MARLIN_REQUIRE_GPU();
  for (int g : {128, -1}) {
    GemmProblem p;
    ASSERT_NO_FATAL_FAILURE(marlin_test::make_problem(p, 40, 512, 2048, g, 41));
    // Row 3: one NaN; row 17: +Inf; row 30: -Inf. Every output of those rows depends on them.
    const int k0 = 777;
    p.a[size_t(3) * p.k + k0] = 0x7e00;
    p.a[size_t(17) * p.k + k0] = 0x7c00;
    p.a[size_t(30) * p.k + 5] = 0xfc00;
    MARLIN_TEST_CUDA(cudaMemcpy(p.d_a.get(), p.a.data(), p.a.size() * 2, cudaMemcpyHostToDevice));
    DeviceBuffer ws = zeroed(marlin::workspace_bytes(p.args()));
    ASSERT_EQ(marlin::gemm<>(p.args(), ws.get(), ws.bytes(), nullptr), Status::kSuccess);
    MARLIN_TEST_CUDA(cudaDeviceSynchronize());
    const auto c = c_of(p);
    for (int r = 0; r < p.m; ++r) {
      const bool poisoned = r == 3 || r == 17 || r == 30;
      for (int col = 0; col < p.n; ++col) {
        const float x = marlin::half_to_float(c[size_t(r) * p.n + col]);
        if (r == 3) {
          ASSERT_TRUE(std::isnan(x)) << "row 3 col " << col << " = " << x;
        } else if (poisoned) {
          ASSERT_FALSE(std::isfinite(x)) << "row " << r << " col " << col << " = " << x;
        } else {
          ASSERT_TRUE(std::isfinite(x)) << "row " << r << " col " << col << " = " << x;
        }
      }
    }
  }
}

TEST(Reliability, LargeMagnitudeInputsAgreeWithReference) {
  MARLIN_REQUIRE_GPU();
  for (int g : {128, -1}) {
    GemmProblem p;
    ASSERT_NO_FATAL_FAILURE(marlin_test::make_problem(p, 24, 1024, 1024, g, 43));
    // A in [-240, 240) and scales near 0.4: outputs of a few thousand, products far from fp16
    // subnormals, fp32 accumulation far from overflow, the fp16 output still finite.
    for (auto& x : p.a) x = marlin::float_to_half(240.0f * marlin::half_to_float(x));
    MARLIN_TEST_CUDA(cudaMemcpy(p.d_a.get(), p.a.data(), p.a.size() * 2, cudaMemcpyHostToDevice));
    std::vector<uint16_t> scales(p.s_packed.size());
    for (size_t i = 0; i < scales.size(); ++i) {
      scales[i] = marlin::float_to_half(40.0f * marlin::half_to_float(p.s_packed[i]));
    }
    // The packed scales were permuted from the original ones; scaling every one keeps that.
    std::vector<uint16_t> unpacked;
    ASSERT_EQ(marlin::unpack_scales(scales.data(), p.k, p.n, g, unpacked), Status::kSuccess);
    MARLIN_TEST_CUDA(cudaMemcpy(p.d_s.get(), scales.data(), scales.size() * 2,
                                cudaMemcpyHostToDevice));
    // Rebuild the reference weights from the codes and the new scales.
    std::vector<uint8_t> codes;
    ASSERT_EQ(marlin::unpack_weights(p.b_packed.data(), p.k, p.n, codes), Status::kSuccess);
    if (g == -1) {
      for (int c = 0; c < p.n; ++c) p.col_scale[size_t(c)] = marlin::half_to_float(unpacked[size_t(c)]);
    } else {
      ASSERT_EQ(marlin::dequantize(codes.data(), unpacked.data(), p.k, p.n, g, p.w),
                Status::kSuccess);
      MARLIN_TEST_CUDA(cudaMemcpy(p.d_w.get(), p.w.data(), p.w.size() * 2,
                                  cudaMemcpyHostToDevice));
    }
    DeviceBuffer ws = zeroed(marlin::workspace_bytes(p.args()));
    ASSERT_EQ(marlin::gemm<>(p.args(), ws.get(), ws.bytes(), nullptr), Status::kSuccess);
    MARLIN_TEST_CUDA(cudaDeviceSynchronize());
    std::vector<float> ref;
    ASSERT_NO_FATAL_FAILURE(marlin_test::reference_gpu(p, ref));
    float max_ref = 0;
    for (float r : ref) max_ref = std::max(max_ref, std::fabs(r));
    EXPECT_GT(max_ref, 1000.0f) << "the test should reach large outputs";
    EXPECT_LT(max_ref, 60000.0f) << "the test must stay within fp16";
    MARLIN_EXPECT_CLOSE(p, c_of(p), ref);
  }
}

/// Two results of one problem whose partitions differ only reorder fp32 sums: each element of
/// `c` is within one fp16 ulp of `first`, or, near zero (cancellation), within 2^-12 rms(ref),
/// the accumulation-order term of MARLIN_EXPECT_CLOSE's bound.
void expect_equal_up_to_sum_order(const std::vector<uint16_t>& c,
                                  const std::vector<uint16_t>& first,
                                  const std::vector<float>& ref) {
  ASSERT_EQ(c.size(), first.size());
  const float tol = static_cast<float>(std::ldexp(marlin_test::rms(ref), -12));
  for (size_t i = 0; i < c.size(); ++i) {
    const float x = marlin::half_to_float(c[i]), y = marlin::half_to_float(first[i]);
    ASSERT_LE(std::fabs(x - y), std::ldexp(std::fabs(y), -10) + tol) << "element " << i;
  }
}

/// Runs `plan` (partition already set) on `p` into a poisoned C with a fresh zeroed workspace,
/// checks C against `ref` and that the workspace's counters are left zero; C goes to `c`.
void run_partition(GemmProblem& p, const marlin::detail::Plan& plan,
                   const std::vector<float>& ref, std::vector<uint16_t>& c) {
  DeviceBuffer ws = zeroed(plan.workspace_bytes);
  ASSERT_NO_FATAL_FAILURE(marlin_test::poison_c(p));
  ASSERT_EQ(marlin::detail::run_plan(p.args(), plan, ws.get(), ws.bytes(), nullptr),
            Status::kSuccess);
  MARLIN_TEST_CUDA(cudaDeviceSynchronize());
  c = c_of(p);
  MARLIN_EXPECT_CLOSE(p, c, ref);
  EXPECT_EQ(marlin_test::nonzero_counters(ws.get(), ws.bytes()), 0u);
}

/// run_partition for a plan that needs no workspace (the call gets none).
void run_without_workspace(GemmProblem& p, const marlin::detail::Plan& plan,
                           const std::vector<float>& ref, std::vector<uint16_t>& c) {
  ASSERT_EQ(plan.workspace_bytes, 0u);
  ASSERT_NO_FATAL_FAILURE(run_partition(p, plan, ref, c));
}

/// Why the warp-specialized kernel cannot run on `dev` (empty where it can), for every
/// warpgroup tile: the tests that call this count plans of each tile's variant.
std::string ws_kernel_unavailable(const marlin::detail::DeviceInfo& dev) {
  if (!dev.wgmma) return "the warpgroup kernel needs sm_90a code on an sm_90 GPU";
  if (marlin::detail::kWgmmaWsLevel < 4) {  // an A/B build (launch.cuh, MARLIN_WGMMA_WS)
    return "built with MARLIN_WGMMA_WS=" + std::to_string(marlin::detail::kWgmmaWsLevel) +
           ": not every warpgroup tile has its warp-specialized variant";
  }
  if (marlin::detail::tensor_map_encoder() == nullptr) {
    return "the warp-specialized kernel needs the driver's tensor map encoder";
  }
  return "";
}

/// `p`, an m x n x k problem (group size g, data from `seed`), and its automatic plan on `dev`.
void planned_problem(GemmProblem& p, int m, int n, int k, int g, uint64_t seed,
                     const marlin::detail::DeviceInfo& dev, marlin::detail::Plan& plan) {
  ASSERT_NO_FATAL_FAILURE(marlin_test::make_problem(p, m, n, k, g, seed));
  ASSERT_EQ(marlin::detail::make_plan<marlin::AutoTile>(p.args(), dev, plan), Status::kSuccess);
}

TEST(Reliability, ResultsDoNotDependOnTheNumberOfCtasBeyondRounding) {
  MARLIN_REQUIRE_GPU();
  for (auto [m, n, k, g] : {std::tuple{3, 1024, 4096, 128}, std::tuple{24, 1024, 2048, 128},
                            std::tuple{70, 512, 2048, -1}}) {
    GemmProblem p;
    ASSERT_NO_FATAL_FAILURE(marlin_test::make_problem(p, m, n, k, g, 47));
    const marlin::GemmArgs args = p.args();
    marlin::detail::DeviceInfo dev;
    ASSERT_EQ(marlin::detail::query_device(dev), Status::kSuccess);
    marlin::detail::Plan plan;
    ASSERT_EQ(marlin::detail::make_plan<marlin::AutoTile>(args, dev, plan), Status::kSuccess);
    std::vector<float> ref;
    ASSERT_NO_FATAL_FAILURE(marlin_test::reference_gpu(p, ref));
    std::vector<uint16_t> first;
    for (int max_ctas : {1, 3, 7, 50, 1000, plan.part.grid}) {
      marlin::detail::set_partition(args, max_ctas, plan);
      SCOPED_TRACE("max_ctas " + std::to_string(max_ctas) + " grid " +
                   std::to_string(plan.part.grid));
      std::vector<uint16_t> c;
      ASSERT_NO_FATAL_FAILURE(run_partition(p, plan, ref, c));
      if (first.empty()) {
        first = c;
      } else {
        ASSERT_NO_FATAL_FAILURE(expect_equal_up_to_sum_order(c, first, ref));
      }
    }
  }
}

// The decode kernels' pipelines (select_decode_pipeline picks one by partition, and make_plan's
// settle_decode_pipeline swaps the kernel): every tile at 1, 5 and 8 rows (the
// eight-row kernels) and 12 and 16 (the 16-row ones), both scale modes, each partition forced
// (whole slices, splits of 2 and 3 where the device has clusters, striped runs across slices)
// and settled: the plan carries the rule's pipeline with its shared memory, and the result
// agrees with the reference and leaves the counters zero; where the rule's form is not the
// planning form (decode_planning_pipeline), the planning form runs on the same partition too.
// Every compiled decode kernel (decode_pipeline_compiled) must run.
using DecodeForm = std::tuple<int, bool, bool, marlin::DecodePipeline>;  // config, grouped, 8 rows

template <int kConfig>
void check_decode_pipelines(const marlin::detail::DeviceInfo& dev, std::set<DecodeForm>& ran) {
  using Config = marlin::FixedTile<kConfig>;
  const marlin::TileConfig tile = marlin::kTileConfigs[kConfig];
  for (int g : {128, -1}) {
    for (int m : {1, 5, 8, 12, 16}) {
      GemmProblem p;
      ASSERT_NO_FATAL_FAILURE(marlin_test::make_problem(p, m, 768, 2048, g, 90));
      const marlin::GemmArgs args = p.args();
      SCOPED_TRACE("config " + std::to_string(kConfig) + " " + p.describe());
      std::vector<float> ref;
      ASSERT_NO_FATAL_FAILURE(marlin_test::reference_gpu(p, ref));
      marlin::detail::Plan plan;
      ASSERT_EQ(marlin::detail::make_plan<Config>(args, dev, plan), Status::kSuccess);
      ASSERT_EQ(plan.m_blocks, 1);
      ASSERT_EQ(plan.config, kConfig);
      for (int force = 0; force < 4; ++force) {
        const bool clusters = dev.cluster && marlin::detail::kClusterSplit;
        if (force == 0) marlin::detail::set_whole_slices(args, plan);
        if (force == 1 || force == 2) {
          if (!clusters) continue;
          marlin::detail::set_split(args, force + 1, plan);
        }
        if (force == 3) marlin::detail::set_partition(args, 2 * plan.part.slices + 1, plan);
        ASSERT_EQ(marlin::detail::settle_decode_pipeline<Config>(args, dev, plan),
                  Status::kSuccess);
        const marlin::DecodePipeline pipeline =
            marlin::detail::select_decode_pipeline(kConfig, m <= 8, g != -1, m, plan.part);
        SCOPED_TRACE("partition " + std::to_string(force) + " pipeline " +
                     std::to_string(static_cast<int>(pipeline)));
        EXPECT_EQ(plan.eight_rows, m <= 8);
        EXPECT_EQ(plan.pipeline, pipeline);
        EXPECT_EQ(plan.smem,
                  marlin::smem_bytes(tile, 1, g != -1, false,
                                     pipeline != marlin::DecodePipeline::kCtaWide) +
                      (dev.cluster ? marlin::exchange_bytes(tile, 1) : 0));
        std::vector<uint16_t> c;
        ASSERT_NO_FATAL_FAILURE(run_partition(p, plan, ref, c));
        ran.insert({kConfig, g != -1, plan.eight_rows, plan.pipeline});
        // The same plan with constant weights (their first tiles copied before the dependency
        // wait) gives the same bits.
        marlin::GemmArgs constant = args;
        constant.constant_weights = true;
        DeviceBuffer ws = zeroed(plan.workspace_bytes);
        ASSERT_NO_FATAL_FAILURE(marlin_test::poison_c(p));
        ASSERT_EQ(marlin::detail::run_plan(constant, plan, ws.get(), ws.bytes(), nullptr),
                  Status::kSuccess);
        MARLIN_TEST_CUDA(cudaDeviceSynchronize());
        EXPECT_EQ(c_of(p), c) << "constant_weights changed the result";
        EXPECT_EQ(marlin_test::nonzero_counters(ws.get(), ws.bytes()), 0u);
        // The planning form on the same partition: make_plan keeps it where the rule's form
        // would lose the partition's residency (the 128 x 128 tile's 16-row kernels CTA-wide
        // run only so).
        const marlin::DecodePipeline planning =
            marlin::detail::decode_planning_pipeline(plan.eight_rows);
        if (pipeline != planning) {
          marlin::detail::Plan planned;
          ASSERT_EQ(marlin::detail::plan_partition<Config>(args, dev, planned),
                    Status::kSuccess);
          ASSERT_EQ(planned.pipeline, planning);
          ASSERT_EQ(planned.eight_rows, plan.eight_rows);
          planned.part = plan.part;
          planned.counters_bytes = plan.counters_bytes;
          planned.workspace_bytes = plan.workspace_bytes;
          SCOPED_TRACE("planning pipeline " + std::to_string(static_cast<int>(planning)));
          std::vector<uint16_t> c_planned;
          ASSERT_NO_FATAL_FAILURE(run_partition(p, planned, ref, c_planned));
          ran.insert({kConfig, g != -1, planned.eight_rows, planned.pipeline});
        }
      }
    }
  }
}

TEST(Reliability, DecodePipelinesOfEveryPartitionAgreeWithTheReference) {
  MARLIN_REQUIRE_GPU();
  marlin::detail::DeviceInfo dev;
  ASSERT_EQ(marlin::detail::query_device(dev), Status::kSuccess);
  static_assert(marlin::kNumTileConfigs == 3, "add the new configuration here");
  std::set<DecodeForm> ran;
  ASSERT_NO_FATAL_FAILURE(check_decode_pipelines<0>(dev, ran));
  ASSERT_NO_FATAL_FAILURE(check_decode_pipelines<1>(dev, ran));
  ASSERT_NO_FATAL_FAILURE(check_decode_pipelines<2>(dev, ran));
  for (int config = 0; config < marlin::kNumTileConfigs; ++config) {
    for (bool grouped : {false, true}) {
      for (bool eight_rows : {false, true}) {
        for (marlin::DecodePipeline pipeline :
             {marlin::DecodePipeline::kCtaWide, marlin::DecodePipeline::kWarpPrivate,
              marlin::DecodePipeline::kWarpPrivateA128}) {
          if (!marlin::detail::decode_pipeline_compiled(config, grouped, eight_rows, pipeline)) {
            continue;
          }
          EXPECT_EQ(ran.count({config, grouped, eight_rows, pipeline}), 1u)
              << "config " << config << " grouped " << grouped << " eight_rows " << eight_rows
              << " pipeline " << static_cast<int>(pipeline) << " never ran";
        }
      }
    }
  }
}

// Striped runs of the decode kernels (m_blocks 1) across slices: a run that starts inside a
// slice, covers whole slices and ends inside another stores the first slice's partial, writes
// the whole slices straight to C and ends with the last slice's partial or sum. Every partition
// below (16 slices of 16 K tiles over 2 .. 40 CTAs: runs of 128 .. 7 tiles) agrees with the
// reference, leaves the counters zero and repeats bit for bit; all but the first (two runs of
// 8 whole slices) have runs that start inside a slice and leave it.
TEST(Reliability, DecodeRunsAcrossSlicesAgreeWithTheReference) {
  MARLIN_REQUIRE_GPU();
  marlin::detail::DeviceInfo dev;
  ASSERT_EQ(marlin::detail::query_device(dev), Status::kSuccess);
  for (auto [m, g] : {std::pair{1, -1}, std::pair{9, 128}, std::pair{16, -1}}) {
    GemmProblem p;
    marlin::detail::Plan plan;
    ASSERT_NO_FATAL_FAILURE(planned_problem(p, m, 2048, 2048, g, 49, dev, plan));
    const marlin::GemmArgs args = p.args();
    SCOPED_TRACE(p.describe());
    ASSERT_EQ(plan.m_blocks, 1);
    ASSERT_FALSE(plan.wgmma);
    ASSERT_EQ(plan.tile.tile_n(), 128);  // 16 slices
    std::vector<float> ref;
    ASSERT_NO_FATAL_FAILURE(marlin_test::reference_gpu(p, ref));
    for (int max_ctas : {2, 5, 12, 24, 40}) {
      marlin::detail::set_partition(args, max_ctas, plan);
      SCOPED_TRACE("max_ctas " + std::to_string(max_ctas));
      const marlin::detail::Partition& part = plan.part;
      int crossing = 0;  // runs that start inside a slice and leave it
      for (int cta = 0; cta < part.grid; ++cta) {
        int begin = 0, end = 0;
        marlin::detail::cta_run(part, cta, begin, end);
        if (begin % part.k_tiles != 0 && (end - 1) / part.k_tiles > begin / part.k_tiles) {
          ++crossing;
        }
      }
      EXPECT_EQ(crossing > 0, max_ctas != 2) << crossing;
      std::vector<uint16_t> first, again;
      ASSERT_NO_FATAL_FAILURE(run_partition(p, plan, ref, first));
      ASSERT_NO_FATAL_FAILURE(run_partition(p, plan, ref, again));
      EXPECT_EQ(again, first);
    }
  }
}

// The sm_90 cluster split: every split of a slice's K over a cluster agrees with the reference
// and with the others within rounding, repeats bit for bit, and needs no workspace.
TEST(Reliability, ClusterSplitsAgreeWithTheReference) {
  MARLIN_REQUIRE_GPU();
  if (marlin_test::gpu_major() < 9) GTEST_SKIP() << "cluster splits need sm_90 or newer";
  for (auto [m, n, k, g] : {std::tuple{1, 4096, 4096, 128}, std::tuple{3, 1024, 4096, 128},
                            std::tuple{24, 1024, 4096, 128}, std::tuple{70, 512, 2048, -1},
                            std::tuple{16, 6144, 4096, -1}}) {
    GemmProblem p;
    ASSERT_NO_FATAL_FAILURE(marlin_test::make_problem(p, m, n, k, g, 48));
    const marlin::GemmArgs args = p.args();
    SCOPED_TRACE(p.describe());
    marlin::detail::DeviceInfo dev;
    ASSERT_EQ(marlin::detail::query_device(dev), Status::kSuccess);
    marlin::detail::Plan plan;
    ASSERT_EQ(marlin::detail::make_plan<marlin::AutoTile>(args, dev, plan), Status::kSuccess);
    if (m == 1) {
      // the automatic plan takes this path for small layers at batch 1
      EXPECT_GE(plan.part.split, 2);
      EXPECT_EQ(plan.workspace_bytes, 0u);
    }
    std::vector<float> ref;
    ASSERT_NO_FATAL_FAILURE(marlin_test::reference_gpu(p, ref));
    std::vector<uint16_t> first;
    const int k_tiles = plan.part.k_tiles;
    for (int split : {1, 2, 3, 5, 8}) {
      if (split > k_tiles) continue;
      marlin::detail::set_split(args, split, plan);
      EXPECT_EQ(marlin::detail::launches_ws(plan), plan.ws_kernel != nullptr);  // where planned
      ASSERT_EQ(plan.workspace_bytes, 0u);
      std::vector<uint16_t> run0;
      for (int run = 0; run < 2; ++run) {
        ASSERT_NO_FATAL_FAILURE(marlin_test::poison_c(p));
        ASSERT_EQ(marlin::detail::run_plan(args, plan, nullptr, 0, nullptr), Status::kSuccess);
        MARLIN_TEST_CUDA(cudaDeviceSynchronize());
        const auto c = c_of(p);
        SCOPED_TRACE("split " + std::to_string(split) + " run " + std::to_string(run));
        MARLIN_EXPECT_CLOSE(p, c, ref);
        if (first.empty()) {
          first = c;
        } else if (run == 0) {
          ASSERT_NO_FATAL_FAILURE(expect_equal_up_to_sum_order(c, first, ref));
        }
        if (run == 0) {
          run0 = c;
        } else {
          EXPECT_EQ(c, run0) << "a cluster split must repeat bit for bit";
        }
      }
    }
  }
}

// The sm_90a warpgroup kernels (32- and 64-row tiles, 256 columns wide; 128-row tiles, 256 or
// 128 wide; the 256-row tile, 128 wide): the automatic plan takes them where the device runs
// sm_90a code, and every partition of each (striped over any CTA count, whole slices, cluster
// splits in one or several waves) agrees with the reference, with the tile full or padded
// past M (256-row tiles holding 256, 232, 88 and 8 rows of their last group below; 32-row
// tiles holding 24 and 17). Where wgmma_m_blocks gives the 256-row tile the plan may take the
// 128-row tile instead, 128 or 256 wide (wgmma_rows_tile, on the device's capacity: on an H200
// 384 x 4096 x 1024 128 wide, 300 x 10240 x 1024 (its last row group holding 44 rows) and
// 640 x 6144 x 1024 256 wide); the other shapes keep the 256-row tile on it.
TEST(Reliability, WarpgroupKernelAgreesWithTheReferenceUnderEveryPartition) {
  MARLIN_REQUIRE_GPU();
  marlin::detail::DeviceInfo dev;
  ASSERT_EQ(marlin::detail::query_device(dev), Status::kSuccess);
  if (!dev.wgmma) GTEST_SKIP() << "the warpgroup kernel needs sm_90a code on an sm_90 GPU";
  int tall_shapes = 0, tiny_shapes = 0;  // shapes planned on the 256- and 32-row tiles
  // shapes planned on the 128-row tile, 128 and 256 wide, where the 256-row one was given
  int narrow_rows_for_tall = 0, wide_rows_for_tall = 0;
  for (auto [m, n, k, g] :
       {std::tuple{128, 256, 128, 128}, std::tuple{200, 512, 1024, -1},
        std::tuple{1000, 768, 2048, 128}, std::tuple{256, 4096, 4096, 128},
        std::tuple{130, 1024, 4096, -1}, std::tuple{64, 4096, 8192, 128},
        std::tuple{50, 2048, 10240, -1}, std::tuple{100, 4352, 4096, 128},
        std::tuple{33, 16384, 1280, 128}, std::tuple{600, 4096, 1024, 128},
        std::tuple{520, 4096, 512, -1}, std::tuple{256, 10240, 512, -1},
        std::tuple{1000, 4096, 1024, 128}, std::tuple{24, 16384, 2048, 128},
        std::tuple{17, 28672, 1024, -1}, std::tuple{384, 4096, 1024, 128},
        std::tuple{300, 10240, 1024, 128}, std::tuple{640, 6144, 1024, -1}}) {
    const int m_blocks = marlin::detail::wgmma_m_blocks(m, n, k);
    tiny_shapes += m_blocks == marlin::kWgmmaMBlocksTiny;
    GemmProblem p;
    ASSERT_NO_FATAL_FAILURE(marlin_test::make_problem(p, m, n, k, g, 49));
    const marlin::GemmArgs args = p.args();
    SCOPED_TRACE(p.describe());
    marlin::detail::Plan plan;
    ASSERT_EQ(marlin::detail::make_plan<marlin::AutoTile>(args, dev, plan), Status::kSuccess);
    ASSERT_TRUE(plan.wgmma) << "the plan should take the wgmma kernel";
    const bool narrow = marlin::detail::use_narrow_wgmma_tile(m, n, k);
    if (m_blocks == marlin::kWgmmaMBlocksTall && plan.m_blocks == marlin::kWgmmaMBlocks) {
      // wgmma_rows_tile: the 128-row tile, 128 or 256 wide
      const bool rows_narrow = plan.tile.tile_n() == marlin::kWgmmaNarrowTile.tile_n();
      ASSERT_TRUE(rows_narrow || plan.tile.tile_n() == marlin::kWgmmaTileN);
      narrow_rows_for_tall += rows_narrow;
      wide_rows_for_tall += !rows_narrow;
    } else {
      ASSERT_EQ(plan.m_blocks, m_blocks);
      ASSERT_EQ(plan.tile.tile_n(),
                narrow ? marlin::kWgmmaNarrowTile.tile_n() : marlin::kWgmmaTileN);
    }
    tall_shapes += plan.m_blocks == marlin::kWgmmaMBlocksTall;
    // The warpgroup tiles have their warp-specialized variants (ws_tile; unless the
    // driver encodes no tensor maps), which run under every partition below (striped runs of
    // several slices too, with kWgmmaWsStriped; otherwise the plain kernel runs those).
    if (marlin::detail::tensor_map_encoder() != nullptr) {
      EXPECT_EQ(plan.ws_kernel != nullptr, marlin::detail::ws_tile(plan.m_blocks));
    }
    std::vector<float> ref;
    ASSERT_NO_FATAL_FAILURE(marlin_test::reference_gpu(p, ref));
    // The automatic plan through the public entry point first.
    DeviceBuffer auto_ws = zeroed(marlin::workspace_bytes(args));
    ASSERT_NO_FATAL_FAILURE(marlin_test::poison_c(p));
    ASSERT_EQ(marlin::gemm<>(args, auto_ws.get(), auto_ws.bytes(), nullptr), Status::kSuccess);
    MARLIN_TEST_CUDA(cudaDeviceSynchronize());
    MARLIN_EXPECT_CLOSE(p, c_of(p), ref);
    const int k_tiles = plan.part.k_tiles;
    const int slices = plan.part.slices;
    for (int max_ctas : {1, 3, 7, 50, 1000, slices}) {  // `slices`: one CTA per whole slice
      marlin::detail::set_partition(args, max_ctas, plan);
      SCOPED_TRACE("max_ctas " + std::to_string(max_ctas));
      // The warp-specialized kernel (where planned) runs one CTA per whole slice, and one CTA
      // over several slices only with kWgmmaWsStriped.
      if (max_ctas == slices) {
        EXPECT_EQ(marlin::detail::launches_ws(plan), plan.ws_kernel != nullptr);
      }
      if (max_ctas == 1 && slices > 1) {  // striped over several slices
        EXPECT_EQ(marlin::detail::launches_ws(plan),
                  marlin::detail::kWgmmaWsStriped && plan.ws_kernel != nullptr);
      }
      std::vector<uint16_t> c;
      ASSERT_NO_FATAL_FAILURE(run_partition(p, plan, ref, c));
    }
    // Splits of 8 over 24 slices (1000 x 768) launch more clusters than fit at once.
    for (int split : {2, 4, 8}) {
      if (split > k_tiles) continue;
      marlin::detail::set_split(args, split, plan);
      EXPECT_EQ(marlin::detail::launches_ws(plan), plan.ws_kernel != nullptr);  // where planned
      ASSERT_NO_FATAL_FAILURE(marlin_test::poison_c(p));
      ASSERT_EQ(marlin::detail::run_plan(args, plan, nullptr, 0, nullptr), Status::kSuccess);
      MARLIN_TEST_CUDA(cudaDeviceSynchronize());
      SCOPED_TRACE("split " + std::to_string(split));
      MARLIN_EXPECT_CLOSE(p, c_of(p), ref);
    }
  }
  // With the build's default rules the list covers both new tiles (not vacuously).
  // (On another GPU than the H200 the capacity may move shapes between the two tiles.)
  if (marlin::detail::kWgmmaTallMinRows == 129 && dev.sm_count == 132) {
    EXPECT_EQ(tall_shapes, 4);
    EXPECT_EQ(narrow_rows_for_tall, marlin::detail::kWgmmaRows128 ? 1 : 0);
    EXPECT_EQ(wide_rows_for_tall,
              marlin::detail::kWgmmaRows128 && marlin::detail::kWgmmaRowsWide ? 2 : 0);
  }
  if (marlin::detail::kWgmmaTinyMinN == 16384) EXPECT_EQ(tiny_shapes, 2);
}

// Runs of whole slices (make_whole_runs): each warp-specialized tile, per-channel and grouped,
// full and padded past M, over 1, 2, 7 and the device's SMs worth of CTAs gives the same bits as
// one CTA per slice (every slice is summed by one CTA in the same order either way; only when
// the next slice's copies start differs), needs no workspace, and is the automatic plan where
// whole slices take more than one wave.
TEST(Reliability, WholeSliceRunsGiveTheBitsOfOneCtaPerSlice) {
  MARLIN_REQUIRE_GPU();
  marlin::detail::DeviceInfo dev;
  ASSERT_EQ(marlin::detail::query_device(dev), Status::kSuccess);
  if (const std::string why = ws_kernel_unavailable(dev); !why.empty()) GTEST_SKIP() << why;
  int whole_run_plans = 0;
  for (auto [m, n, k, g] :
       {std::tuple{2048, 4096, 1024, -1}, std::tuple{1000, 8192, 512, 128},
        std::tuple{200, 4096, 768, 128}, std::tuple{100, 8192, 1024, -1},
        std::tuple{40, 16384, 512, 128}, std::tuple{24, 32768, 512, -1}}) {
    GemmProblem p;
    marlin::detail::Plan plan;
    ASSERT_NO_FATAL_FAILURE(planned_problem(p, m, n, k, g, 53, dev, plan));
    const marlin::GemmArgs args = p.args();
    SCOPED_TRACE(p.describe());
    if (!plan.wgmma || plan.ws_kernel == nullptr) continue;  // a tile without a ws variant
    const marlin::detail::Partition& auto_part = plan.part;
    if (auto_part.split == 0 && auto_part.iters % auto_part.k_tiles == 0 &&
        auto_part.iters > auto_part.k_tiles) {
      whole_run_plans += 1;
      EXPECT_LE(auto_part.grid, dev.sm_count);
    }
    std::vector<float> ref;
    ASSERT_NO_FATAL_FAILURE(marlin_test::reference_gpu(p, ref));
    marlin::detail::set_whole_slices(args, plan);
    std::vector<uint16_t> per_slice;
    ASSERT_NO_FATAL_FAILURE(run_without_workspace(p, plan, ref, per_slice));
    for (int max_ctas : {1, 2, 7, dev.sm_count}) {
      marlin::detail::set_whole_runs(args, max_ctas, plan);
      SCOPED_TRACE("max_ctas " + std::to_string(max_ctas) + " grid " +
                   std::to_string(plan.part.grid));
      ASSERT_EQ(plan.part.iters % plan.part.k_tiles, 0);
      EXPECT_TRUE(marlin::detail::launches_ws(plan) || !marlin::detail::kWgmmaWsStriped);
      std::vector<uint16_t> c;
      ASSERT_NO_FATAL_FAILURE(run_without_workspace(p, plan, ref, c));
      EXPECT_EQ(c, per_slice) << "whole slices must give the same bits in a run or alone";
    }
  }
  // 2048 x 4096 x 1024 takes two waves of 256-row slices on the H200 (256 slices, 132 SMs).
  if (marlin::detail::kWgmmaWholeRuns && marlin::detail::kWgmmaWsStriped &&
      dev.sm_count == 132) {
    EXPECT_GE(whole_run_plans, 1);
  }
}

// Hybrid runs (make_hybrid_runs): each warp-specialized tile, over splits of 2 and 3 and over
// many and few clusters (so that CTAs run one or several whole slices before their split
// share, and some clusters have no share), gives the bits of the hybrid with one CTA per
// whole slice, needs no workspace, and agrees with the reference.
TEST(Reliability, HybridRunsGiveTheBitsOfTheHybrid) {
  MARLIN_REQUIRE_GPU();
  marlin::detail::DeviceInfo dev;
  ASSERT_EQ(marlin::detail::query_device(dev), Status::kSuccess);
  if (const std::string why = ws_kernel_unavailable(dev); !why.empty()) GTEST_SKIP() << why;
  int forced = 0;
  for (auto [m, n, k, g] :
       {std::tuple{1000, 8192, 512, 128}, std::tuple{200, 4096, 768, -1},
        std::tuple{100, 8192, 1024, 128}, std::tuple{40, 16384, 512, -1},
        std::tuple{24, 32768, 512, 128}}) {
    GemmProblem p;
    marlin::detail::Plan plan;
    ASSERT_NO_FATAL_FAILURE(planned_problem(p, m, n, k, g, 59, dev, plan));
    const marlin::GemmArgs args = p.args();
    SCOPED_TRACE(p.describe());
    if (!plan.wgmma || plan.ws_kernel == nullptr) continue;  // a tile without a ws variant
    std::vector<float> ref;
    ASSERT_NO_FATAL_FAILURE(marlin_test::reference_gpu(p, ref));
    const int slices = plan.part.slices, k_tiles = plan.part.k_tiles;
    for (int split : {2, 3}) {
      // The most clusters that leave a split wave of at most one slice per cluster, and a
      // quarter as many (several whole slices per CTA).
      for (int most : {slices / split, slices / split / 4}) {
        int clusters = most;
        while (clusters >= 1 && (slices % (clusters * split) == 0 ||
                                 slices % (clusters * split) > clusters)) {
          --clusters;
        }
        if (clusters < 1 || split > k_tiles) continue;
        marlin::detail::set_hybrid_runs(args, split, clusters * split, plan);
        SCOPED_TRACE("split " + std::to_string(split) + " clusters " + std::to_string(clusters) +
                     " runs " + std::to_string(plan.part.runs));
        ASSERT_TRUE(marlin::detail::launches_ws(plan));
        std::vector<uint16_t> runs_c, hybrid_c;
        ASSERT_NO_FATAL_FAILURE(run_without_workspace(p, plan, ref, runs_c));
        marlin::detail::set_split(args, split, plan, plan.part.whole);
        ASSERT_NO_FATAL_FAILURE(run_without_workspace(p, plan, ref, hybrid_c));
        EXPECT_EQ(hybrid_c, runs_c) << "hybrid runs must give the bits of the hybrid";
        ++forced;
      }
    }
  }
  // Not vacuous: 8 forced cases on an H200 (run 98); another GPU's capacity may move a shape
  // to a tile without hybrid runs.
  EXPECT_GE(forced, dev.sm_count == 132 ? 8 : 1);
}

// Cluster splits of 3 to 8 CTAs of every warp-specialized tile (the 32- and 64-row tiles 256
// wide, the 128-row tile 128 and 256 wide, the 256-row tile): those that push their vectors to
// the rank that sums them (ws_split_pushes: gemm_kernel_ws's kPush variant) and those whose
// ranks sum their shares through the cluster window. Each agrees with the reference, with the
// tile full or padded past M, repeats bit for bit, and agrees with the split of 2 up to the
// order of the fp32 sums; a pushed split also agrees with the same split summed through the
// cluster window (the plain variant launched instead) up to that order.
TEST(Reliability, WarpSpecializedSplitsOfThreeOrMoreAgreeWithTheReference) {
  MARLIN_REQUIRE_GPU();
  marlin::detail::DeviceInfo dev;
  ASSERT_EQ(marlin::detail::query_device(dev), Status::kSuccess);
  if (const std::string why = ws_kernel_unavailable(dev); !why.empty()) GTEST_SKIP() << why;
  std::set<std::pair<int, int>> tiles;  // (rows, columns) of the tiles run
  int pushed = 0, windowed = 0;
  for (auto [m, n, k, g] :
       {std::tuple{24, 16384, 2048, 128}, std::tuple{64, 4096, 8192, -1},
        std::tuple{50, 2048, 10240, 128}, std::tuple{100, 4352, 4096, -1},
        std::tuple{128, 4096, 2048, 128}, std::tuple{256, 10240, 512, -1},
        std::tuple{128, 16384, 1024, 128}}) {
    GemmProblem p;
    marlin::detail::Plan plan;
    ASSERT_NO_FATAL_FAILURE(planned_problem(p, m, n, k, g, 61, dev, plan));
    const marlin::GemmArgs args = p.args();
    SCOPED_TRACE(p.describe());
    ASSERT_TRUE(plan.wgmma && plan.ws_kernel != nullptr) << "a warp-specialized tile";
    tiles.insert({16 * plan.m_blocks, plan.tile.tile_n()});
    std::vector<float> ref;
    ASSERT_NO_FATAL_FAILURE(marlin_test::reference_gpu(p, ref));
    std::vector<uint16_t> split2;
    marlin::detail::set_split(args, 2, plan);
    ASSERT_EQ(marlin::detail::ws_launch(plan).kernel, plan.ws_kernel) << "change 36's exchange";
    ASSERT_NO_FATAL_FAILURE(run_without_workspace(p, plan, ref, split2));
    for (int split = 3; split <= marlin::kMaxClusterSplit && split <= plan.part.k_tiles;
         ++split) {
      marlin::detail::set_split(args, split, plan);
      // What run_plan launches: the push variant, with its receive region, or the plain one.
      const marlin::detail::WsLaunch launch = marlin::detail::ws_launch(plan);
      const bool push = plan.ws_push_kernel != nullptr && launch.kernel == plan.ws_push_kernel;
      SCOPED_TRACE("split " + std::to_string(split) + (push ? " (push)" : " (cluster window)"));
      ASSERT_TRUE(marlin::detail::launches_ws(plan));
      if (push) {
        EXPECT_EQ(launch.smem,
                  plan.ws_smem + marlin::ws_push_receive_bytes(plan.tile, plan.m_blocks, split));
      } else {
        EXPECT_EQ(launch.kernel, plan.ws_kernel);
        EXPECT_EQ(launch.smem, plan.ws_smem);
      }
      std::vector<uint16_t> c0, c1;
      ASSERT_NO_FATAL_FAILURE(run_without_workspace(p, plan, ref, c0));
      ASSERT_NO_FATAL_FAILURE(run_without_workspace(p, plan, ref, c1));
      EXPECT_EQ(c1, c0) << "a cluster split must repeat bit for bit";
      ASSERT_NO_FATAL_FAILURE(expect_equal_up_to_sum_order(c0, split2, ref));
      if (push) {
        marlin::detail::Plan windowed_plan = plan;
        windowed_plan.ws_push_kernel = nullptr;  // the plain variant: the cluster window
        ASSERT_EQ(marlin::detail::ws_launch(windowed_plan).kernel, plan.ws_kernel);
        std::vector<uint16_t> window;
        ASSERT_NO_FATAL_FAILURE(run_without_workspace(p, windowed_plan, ref, window));
        ASSERT_NO_FATAL_FAILURE(expect_equal_up_to_sum_order(c0, window, ref));
      }
      (push ? pushed : windowed) += 1;
    }
  }
  // Not vacuous: every tile runs, each over splits 3 to 8 (42 splits), and both sums run. On
  // an H200: five shapes on pushing tiles (32 x 256, 64 x 256, 128 x 128), 6 splits each; the
  // 128-row tile 256 wide and the 256-row tile through the cluster window. (Another GPU's
  // capacity may move 256 x 10240 from the 256-row tile to the 128-row tile.)
  EXPECT_EQ(pushed + windowed, 42);
  if (dev.sm_count == 132) {
    EXPECT_EQ(tiles, (std::set<std::pair<int, int>>{
                         {32, 256}, {64, 256}, {128, 128}, {128, 256}, {256, 128}}));
    EXPECT_EQ(pushed, 30);
    EXPECT_EQ(windowed, 12);
  } else {
    EXPECT_GE(pushed, 1);
    EXPECT_GE(windowed, 1);
  }
}

// ---- concurrency ----------------------------------------------------------------------------

TEST(Reliability, ConcurrentStreamsWithOwnWorkspacesAreAllCorrect) {
  MARLIN_REQUIRE_GPU();
  constexpr int kStreams = 6;
  std::vector<GemmProblem> problems(kStreams);
  std::vector<DeviceBuffer> workspaces(kStreams);
  std::vector<cudaStream_t> streams(kStreams);
  for (int i = 0; i < kStreams; ++i) {
    ASSERT_NO_FATAL_FAILURE(
        marlin_test::make_problem(problems[size_t(i)], 1 + 13 * i, 4096, 4096, i % 2 ? -1 : 128,
                                  60 + i));
    workspaces[size_t(i)] = zeroed(marlin::workspace_bytes(problems[size_t(i)].args()));
    MARLIN_TEST_CUDA(cudaStreamCreateWithFlags(&streams[size_t(i)], cudaStreamNonBlocking));
  }
  for (int round = 0; round < 5; ++round) {
    for (int i = 0; i < kStreams; ++i) {
      ASSERT_EQ(marlin::gemm<>(problems[size_t(i)].args(), workspaces[size_t(i)].get(),
                               workspaces[size_t(i)].bytes(), streams[size_t(i)]),
                Status::kSuccess);
    }
  }
  MARLIN_TEST_CUDA(cudaDeviceSynchronize());
  for (int i = 0; i < kStreams; ++i) {
    std::vector<float> ref;
    ASSERT_NO_FATAL_FAILURE(marlin_test::reference_gpu(problems[size_t(i)], ref));
    MARLIN_EXPECT_CLOSE(problems[size_t(i)], c_of(problems[size_t(i)]), ref);
    MARLIN_TEST_CUDA(cudaStreamDestroy(streams[size_t(i)]));
  }
}

TEST(Reliability, StreamsSharingOneWorkspaceInEventOrderAreCorrect) {
  MARLIN_REQUIRE_GPU();
  // The documented rule: a shared workspace is fine when the calls are ordered (here by
  // events across two streams); unordered concurrent calls must not share one.
  GemmProblem p1, p2;
  ASSERT_NO_FATAL_FAILURE(marlin_test::make_problem(p1, 9, 6144, 4096, 128, 70));
  ASSERT_NO_FATAL_FAILURE(marlin_test::make_problem(p2, 90, 4096, 4096, -1, 71));
  DeviceBuffer ws = zeroed(std::max(marlin::workspace_bytes(p1.args()),
                                    marlin::workspace_bytes(p2.args())));
  cudaStream_t s1, s2;
  cudaEvent_t e1, e2;
  MARLIN_TEST_CUDA(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  MARLIN_TEST_CUDA(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  MARLIN_TEST_CUDA(cudaEventCreateWithFlags(&e1, cudaEventDisableTiming));
  MARLIN_TEST_CUDA(cudaEventCreateWithFlags(&e2, cudaEventDisableTiming));
  for (int round = 0; round < 4; ++round) {
    ASSERT_EQ(marlin::gemm<>(p1.args(), ws.get(), ws.bytes(), s1), Status::kSuccess);
    MARLIN_TEST_CUDA(cudaEventRecord(e1, s1));
    MARLIN_TEST_CUDA(cudaStreamWaitEvent(s2, e1, 0));
    ASSERT_EQ(marlin::gemm<>(p2.args(), ws.get(), ws.bytes(), s2), Status::kSuccess);
    MARLIN_TEST_CUDA(cudaEventRecord(e2, s2));
    MARLIN_TEST_CUDA(cudaStreamWaitEvent(s1, e2, 0));
  }
  MARLIN_TEST_CUDA(cudaDeviceSynchronize());
  for (GemmProblem* p : {&p1, &p2}) {
    std::vector<float> ref;
    ASSERT_NO_FATAL_FAILURE(marlin_test::reference_gpu(*p, ref));
    MARLIN_EXPECT_CLOSE(*p, c_of(*p), ref);
  }
  cudaEventDestroy(e1);
  cudaEventDestroy(e2);
  cudaStreamDestroy(s1);
  cudaStreamDestroy(s2);
}

// What one host thread of HostThreadsCallingAtOnceFromAColdStartAreAllCorrect did.
struct ThreadCalls {
  Status workspace = Status::kSuccess;  // kErrorCudaError if its workspace could not be made
  std::vector<Status> calls;            // each gemm<>'s status
  cudaError_t sync = cudaSuccess;       // its stream's synchronization
};

// Host threads that call marlin at the same moment, each on its own stream and workspace, from
// a cold start (ctest runs each test in a process of its own, and nothing before the threads
// plans a call): every first use of the per-process plan cache (the device's properties, each
// kernel's shared-memory limit and occupancy, the cluster capacities) happens in several
// threads at once. Every call must succeed and give the bits that the same call gives alone.
TEST(Reliability, HostThreadsCallingAtOnceFromAColdStartAreAllCorrect) {
  MARLIN_REQUIRE_GPU();
  // Shapes of different kernels and partitions (the decode kernels at 1, 8, 9 and 16 rows,
  // the larger tiles at 48, 128 and 300 rows; per-channel and grouped), and two threads on
  // the same shape, which meet in the same cache entries.
  const std::vector<std::tuple<int, int, int, int>> shapes = {
      {1, 4096, 4096, 128},  {8, 28672, 2048, -1}, {16, 8192, 4096, 128}, {48, 8192, 4096, -1},
      {128, 4096, 4096, 128}, {300, 2048, 1024, -1}, {1, 4096, 4096, 128}, {9, 6144, 2048, -1}};
  const int threads = static_cast<int>(shapes.size());
  std::vector<GemmProblem> problems(shapes.size());
  std::vector<cudaStream_t> streams(shapes.size());
  for (size_t i = 0; i < shapes.size(); ++i) {
    const auto [m, n, k, g] = shapes[i];
    ASSERT_NO_FATAL_FAILURE(marlin_test::make_problem(problems[i], m, n, k, g, 90 + i));
    MARLIN_TEST_CUDA(cudaStreamCreateWithFlags(&streams[i], cudaStreamNonBlocking));
  }
  std::vector<ThreadCalls> done(shapes.size());
  std::vector<void*> workspaces(shapes.size(), nullptr);
  std::atomic<int> ready{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      const size_t i = static_cast<size_t>(t);
      const marlin::GemmArgs args = problems[i].args();
      ready.fetch_add(1);
      while (ready.load() < threads) std::this_thread::yield();  // all start together
      // The first marlin call of each thread plans, so the cache fills from every thread.
      const size_t bytes = marlin::workspace_bytes(args);
      if (bytes > 0 && (cudaMalloc(&workspaces[i], bytes) != cudaSuccess ||
                        cudaMemsetAsync(workspaces[i], 0, bytes, streams[i]) != cudaSuccess)) {
        done[i].workspace = Status::kErrorCudaError;
        return;
      }
      for (int round = 0; round < 3; ++round) {
        done[i].calls.push_back(marlin::gemm<>(args, workspaces[i], bytes, streams[i]));
      }
      done[i].sync = cudaStreamSynchronize(streams[i]);
    });
  }
  for (std::thread& th : pool) th.join();
  for (size_t i = 0; i < shapes.size(); ++i) {
    GemmProblem& p = problems[i];
    SCOPED_TRACE(p.describe());
    ASSERT_EQ(done[i].workspace, Status::kSuccess);
    ASSERT_EQ(done[i].calls.size(), 3u);
    for (const Status st : done[i].calls) EXPECT_EQ(st, Status::kSuccess) << marlin::to_string(st);
    ASSERT_EQ(done[i].sync, cudaSuccess) << cudaGetErrorString(done[i].sync);
    const std::vector<uint16_t> concurrent = c_of(p);
    std::vector<float> ref;
    ASSERT_NO_FATAL_FAILURE(marlin_test::reference_gpu(p, ref));
    MARLIN_EXPECT_CLOSE(p, concurrent, ref);
    // The same call alone, on this thread, with the cache now warm: the same bits.
    ASSERT_NO_FATAL_FAILURE(marlin_test::poison_c(p));
    const size_t bytes = marlin::workspace_bytes(p.args());
    ASSERT_EQ(marlin::gemm<>(p.args(), workspaces[i], bytes, nullptr), Status::kSuccess);
    MARLIN_TEST_CUDA(cudaDeviceSynchronize());
    EXPECT_EQ(c_of(p), concurrent);
  }
  for (size_t i = 0; i < shapes.size(); ++i) {
    if (workspaces[i] != nullptr) MARLIN_TEST_CUDA(cudaFree(workspaces[i]));
    MARLIN_TEST_CUDA(cudaStreamDestroy(streams[i]));
  }
}

// A caller's launch error that is still pending (not yet read with cudaGetLastError) when it
// calls marlin is the caller's: the call must not report it as its own, and leaves it pending.
TEST(Reliability, AnErrorLeftPendingByTheCallerIsNotReportedAsTheCallsOwn) {
  MARLIN_REQUIRE_GPU();
  for (auto [m, n, k, g] : {std::tuple{1, 4096, 4096, 128}, std::tuple{16, 2048, 1024, -1},
                            std::tuple{256, 2048, 1024, 128}}) {
    GemmProblem p;
    ASSERT_NO_FATAL_FAILURE(marlin_test::make_problem(p, m, n, k, g, 95));
    SCOPED_TRACE(p.describe());
    ASSERT_NO_FATAL_FAILURE(marlin_test::expect_gemm_ignores_pending_error(p));
  }
}

// The plan cache raises each kernel's shared-memory limit once per process and remembers it;
// calls after a cudaDeviceReset() must still launch and compute correct results (they do with
// CUDA 13 on the H200 without marlin raising the limits again: bench/NOTES.md run 313).
TEST(Reliability, CallsAfterADeviceResetSucceed) {
  MARLIN_REQUIRE_GPU();
  // The decode kernels at 1 and 16 rows and a 256-row call (the warpgroup kernel where the
  // binary has it); the largest planned kernel's shared memory must be over 48 KB (below).
  const std::vector<std::tuple<int, int, int, int>> shapes = {
      {1, 4096, 4096, 128}, {16, 2048, 1024, -1}, {256, 2048, 1024, 128}};
  int optin = 0;
  MARLIN_TEST_CUDA(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0));
  int most_smem = 0;  // dynamic shared memory of the largest planned kernel
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t i = 0; i < shapes.size(); ++i) {
      const auto [m, n, k, g] = shapes[i];
      GemmProblem p;
      ASSERT_NO_FATAL_FAILURE(marlin_test::make_problem(p, m, n, k, g, 97 + i));
      SCOPED_TRACE(p.describe() + (pass == 0 ? " before the reset" : " after the reset"));
      DeviceBuffer ws = zeroed(marlin::workspace_bytes(p.args()));
      ASSERT_EQ(marlin::gemm<>(p.args(), ws.get(), ws.bytes(), nullptr), Status::kSuccess);
      MARLIN_TEST_CUDA(cudaDeviceSynchronize());
      std::vector<float> ref;
      ASSERT_NO_FATAL_FAILURE(marlin_test::reference_gpu(p, ref));
      MARLIN_EXPECT_CLOSE(p, c_of(p), ref);
      if (pass == 0) {
        marlin::detail::DeviceInfo dev;
        ASSERT_EQ(marlin::detail::query_device(dev), Status::kSuccess);
        marlin::detail::Plan plan;
        ASSERT_EQ(marlin::detail::make_plan<marlin::AutoTile>(p.args(), dev, plan),
                  Status::kSuccess);
        const int smem = marlin::detail::launches_ws(plan) ? plan.ws_smem : plan.smem;
        most_smem = std::max(most_smem, smem);
      }
    }
    if (pass == 0) {
      // Some kernel needs a raised limit, or this test proves nothing.
      EXPECT_GT(most_smem, 48 * 1024) << "device limit per block " << optin << " bytes";
      MARLIN_TEST_CUDA(cudaDeviceReset());  // every buffer above is freed already
    }
  }
}

// Occupies one SM per CTA (large dynamic shared memory) and spins for `cycles` SM clocks.
__global__ void occupy_sm(long long cycles, int* done) {
  extern __shared__ int pad[];
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
  if (threadIdx.x == 0) {
    pad[0] = 1;
    atomicAdd(done, pad[0]);
  }
}

TEST(Reliability, GemmCompletesWhileAnotherKernelOccupiesMostSms) {
  MARLIN_REQUIRE_GPU();
  int sms = 0, clock_khz = 0, optin = 0;
  MARLIN_TEST_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  MARLIN_TEST_CUDA(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0));
  MARLIN_TEST_CUDA(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0));
  const int busy = sms - 4;  // leave 4 SMs to marlin
  MARLIN_TEST_CUDA(cudaFuncSetAttribute(occupy_sm, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        optin));
  // A launch of many CTAs that reduce across CTAs through the workspace. (A cluster split
  // waits for room for a whole cluster in one GPC, which 4 free SMs need not offer.)
  const marlin_test::Dims d = marlin_test::workspace_dims();
  ASSERT_GT(d.m, 0) << "no candidate shape uses the workspace on this device";
  GemmProblem p;
  ASSERT_NO_FATAL_FAILURE(marlin_test::make_problem(p, d.m, d.n, d.k, d.g, 80));
  ASSERT_GT(marlin::workspace_bytes(p.args()), 0u);
  DeviceBuffer ws = zeroed(marlin::workspace_bytes(p.args()));
  DeviceBuffer done = zeroed(sizeof(int));
  cudaStream_t hog, work;
  cudaEvent_t hog_done, gemm_done;
  MARLIN_TEST_CUDA(cudaStreamCreateWithFlags(&hog, cudaStreamNonBlocking));
  MARLIN_TEST_CUDA(cudaStreamCreateWithFlags(&work, cudaStreamNonBlocking));
  MARLIN_TEST_CUDA(cudaEventCreate(&hog_done));
  MARLIN_TEST_CUDA(cudaEventCreate(&gemm_done));
  // One call first: with lazy module loading, a kernel's first launch may wait for the device,
  // which would make the GEMM wait for the hog for a reason that is not marlin's.
  ASSERT_EQ(marlin::gemm<>(p.args(), ws.get(), ws.bytes(), work), Status::kSuccess);
  MARLIN_TEST_CUDA(cudaStreamSynchronize(work));
  ASSERT_NO_FATAL_FAILURE(marlin_test::poison_c(p, work));
  MARLIN_TEST_CUDA(cudaStreamSynchronize(work));
  const long long cycles = 2000LL * clock_khz;  // about 2 s
  occupy_sm<<<busy, 64, optin, hog>>>(cycles, done.as<int>());
  MARLIN_TEST_CUDA(cudaGetLastError());
  MARLIN_TEST_CUDA(cudaEventRecord(hog_done, hog));
  ASSERT_EQ(marlin::gemm<>(p.args(), ws.get(), ws.bytes(), work), Status::kSuccess);
  MARLIN_TEST_CUDA(cudaEventRecord(gemm_done, work));
  // The GEMM must finish while the hog still holds its SMs.
  const auto t0 = std::chrono::steady_clock::now();
  bool gemm_first = false;
  while (std::chrono::steady_clock::now() - t0 < std::chrono::seconds(10)) {
    if (cudaEventQuery(gemm_done) == cudaSuccess) {
      gemm_first = cudaEventQuery(hog_done) == cudaErrorNotReady;
      break;
    }
  }
  MARLIN_TEST_CUDA(cudaDeviceSynchronize());
  EXPECT_TRUE(gemm_first) << "the GEMM did not complete while " << busy << " of " << sms
                          << " SMs were occupied";
  std::cout << "[ hog      ] GEMM finished on " << sms - busy << " free SMs while " << busy
            << " were occupied: " << (gemm_first ? "yes" : "no") << std::endl;
  EXPECT_EQ(marlin_test::to_host<int>(done.get(), 1).at(0), busy);
  std::vector<float> ref;
  ASSERT_NO_FATAL_FAILURE(marlin_test::reference_gpu(p, ref));
  MARLIN_EXPECT_CLOSE(p, c_of(p), ref);
  cudaEventDestroy(hog_done);
  cudaEventDestroy(gemm_done);
  cudaStreamDestroy(hog);
  cudaStreamDestroy(work);
}

// Spins for `cycles` SM clocks, then copies `n_copy` halves of src to dst and fills `n_fill`
// halves of `fill` with `value`. On sm_90 it first lets the next grid on the stream launch
// (programmatic dependent launch), so a following marlin call runs alongside it and only its
// own dependency wait keeps stream order.
__global__ void slow_copy_and_fill(const uint16_t* src, uint16_t* dst, size_t n_copy,
                                   uint16_t* fill, size_t n_fill, uint16_t value,
                                   long long cycles) {
  marlin::ptx::launch_dependents();
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n_copy; i += stride) {
    dst[i] = src[i];
  }
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n_fill; i += stride) {
    fill[i] = value;
  }
}

// Programmatic dependent launch (sm_90) lets a call start before the kernel in front of it on
// the stream has finished. The call must still read A only after that kernel's writes and write
// C only after its reads, and a call whose A is the previous call's C must read the finished C.
TEST(Reliability, CallsKeepStreamOrderWithTheKernelsAroundThem) {
  MARLIN_REQUIRE_GPU();
  int clock_khz = 0;
  MARLIN_TEST_CUDA(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0));
  cudaStream_t stream;
  MARLIN_TEST_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  // decode (cluster split or striped), a 16-row tile per-channel, and the warpgroup kernel
  for (auto [m, g] : {std::tuple{1, 128}, std::tuple{16, -1}, std::tuple{256, 128}}) {
    GemmProblem p1, p2;
    ASSERT_NO_FATAL_FAILURE(marlin_test::make_problem(p1, m, 4096, 4096, g, 90));
    ASSERT_NO_FATAL_FAILURE(marlin_test::make_problem(p2, m, 4096, 4096, g, 91));
    SCOPED_TRACE(p1.describe());
    const size_t elems = size_t(m) * 4096;  // of A and of C alike
    DeviceBuffer ws = zeroed(std::max(marlin::workspace_bytes(p1.args()),
                                      marlin::workspace_bytes(p2.args())));
    DeviceBuffer seen(elems * 2);
    ASSERT_TRUE(seen);
    marlin::GemmArgs chained = p2.args();
    chained.a = p1.d_c.get();
    // One call of each first, so that lazy module loading does not order the launches below.
    ASSERT_EQ(marlin::gemm<>(p1.args(), ws.get(), ws.bytes(), stream), Status::kSuccess);
    ASSERT_EQ(marlin::gemm<>(chained, ws.get(), ws.bytes(), stream), Status::kSuccess);
    ASSERT_NO_FATAL_FAILURE(marlin_test::poison_c(p1, stream));
    MARLIN_TEST_CUDA(cudaStreamSynchronize(stream));
    const uint16_t quarter = marlin::float_to_half(0.25f);
    // It spins ~1 ms: far longer than the calls take. One block, so that every CTA of the
    // call finds room beside it and starts while it spins.
    slow_copy_and_fill<<<1, 256, 0, stream>>>(p1.d_c.as<uint16_t>(), seen.as<uint16_t>(),
                                                elems, p1.d_a.as<uint16_t>(), elems, quarter,
                                                static_cast<long long>(clock_khz));
    MARLIN_TEST_CUDA(cudaGetLastError());
    ASSERT_EQ(marlin::gemm<>(p1.args(), ws.get(), ws.bytes(), stream), Status::kSuccess);
    ASSERT_EQ(marlin::gemm<>(chained, ws.get(), ws.bytes(), stream), Status::kSuccess);
    MARLIN_TEST_CUDA(cudaStreamSynchronize(stream));
    // The slow kernel read C before the first call wrote it (poison: all bits set).
    const std::vector<uint16_t> before = marlin_test::to_host<uint16_t>(seen.get(), elems);
    size_t overwritten = 0;
    for (uint16_t x : before) overwritten += x != 0xFFFF;
    EXPECT_EQ(overwritten, 0u) << "the call wrote C before the kernel in front of it read it";
    // The first call multiplied the rewritten A (the reference reads A from the device).
    const std::vector<uint16_t> a_now = marlin_test::to_host<uint16_t>(p1.d_a.get(), elems);
    ASSERT_EQ(a_now.front(), quarter);
    std::vector<float> ref;
    ASSERT_NO_FATAL_FAILURE(marlin_test::reference_gpu(p1, ref));
    MARLIN_EXPECT_CLOSE(p1, c_of(p1), ref);
    // The second call multiplied the first call's finished C.
    MARLIN_TEST_CUDA(cudaMemcpy(p2.d_a.get(), p1.d_c.get(), elems * 2, cudaMemcpyDeviceToDevice));
    ASSERT_NO_FATAL_FAILURE(marlin_test::reference_gpu(p2, ref));
    MARLIN_EXPECT_CLOSE(p2, c_of(p2), ref);
  }
  MARLIN_TEST_CUDA(cudaStreamDestroy(stream));
}

// GemmArgs::constant_weights is false by default: a call then reads its weights and scales only
// after the kernel in front of it on the stream has written them, even where that kernel lets
// the call launch first (programmatic dependent launch). slow_copy_and_fill (one block) rewrites
// the call's B with another problem's and its scales with one constant after ~1 ms; the call
// must multiply the new ones, and give the bits of a call on the new weights in their own
// buffers. (With the promise broken, a call may read old weights: the test prints how many
// elements of C differ then, which shows that the test sees early reads, but asserts nothing
// about it.)
TEST(Reliability, WeightsWrittenByTheKernelInFrontAreReadAfterIt) {
  MARLIN_REQUIRE_GPU();
  int clock_khz = 0;
  MARLIN_TEST_CUDA(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0));
  cudaStream_t stream;
  MARLIN_TEST_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  // decode with a cluster split or striped runs, the 16-row tile per-channel, the warpgroup
  for (auto [m, g] : {std::tuple{1, 128}, std::tuple{8, -1}, std::tuple{16, -1},
                      std::tuple{256, 128}}) {
    GemmProblem p, q;
    ASSERT_NO_FATAL_FAILURE(marlin_test::make_problem(p, m, 4096, 4096, g, 92));
    ASSERT_NO_FATAL_FAILURE(marlin_test::make_problem(q, m, 4096, 4096, g, 93));
    SCOPED_TRACE(p.describe());
    DeviceBuffer ws = zeroed(marlin::workspace_bytes(p.args()));
    constexpr uint16_t kScale = 0x3434;  // fp16 0.2627: every new scale
    DeviceBuffer scales(p.d_s.bytes());
    ASSERT_TRUE(scales);
    MARLIN_TEST_CUDA(cudaMemset(scales.get(), 0x34, scales.bytes()));
    // Expected: p's A times q's codes with the new scales, from their own buffers, with nothing
    // running before.
    marlin::GemmArgs expected_args = p.args();
    expected_args.b = q.d_b.get();
    expected_args.scales = scales.get();
    ASSERT_EQ(marlin::gemm<>(expected_args, ws.get(), ws.bytes(), stream), Status::kSuccess);
    MARLIN_TEST_CUDA(cudaStreamSynchronize(stream));
    const std::vector<uint16_t> expected = c_of(p);
    std::vector<float> ref;
    ASSERT_NO_FATAL_FAILURE(marlin_test::reference_gpu(p, ref));
    ASSERT_EQ(marlin::gemm<>(p.args(), ws.get(), ws.bytes(), stream), Status::kSuccess);
    MARLIN_TEST_CUDA(cudaStreamSynchronize(stream));
    const std::vector<uint16_t> old_weights = c_of(p);
    MARLIN_EXPECT_CLOSE(p, old_weights, ref);
    size_t moved = 0;  // elements of C that the old weights would get wrong
    for (size_t i = 0; i < expected.size(); ++i) moved += expected[i] != old_weights[i];
    ASSERT_GT(moved, expected.size() / 2);
    for (bool constant : {false, true}) {
      // p's own weights back in place, then the slow rewrite and the call behind it.
      MARLIN_TEST_CUDA(cudaMemcpyAsync(p.d_b.get(), p.b_packed.data(), p.d_b.bytes(),
                                       cudaMemcpyHostToDevice, stream));
      MARLIN_TEST_CUDA(cudaMemcpyAsync(p.d_s.get(), p.s_packed.data(), p.d_s.bytes(),
                                       cudaMemcpyHostToDevice, stream));
      ASSERT_NO_FATAL_FAILURE(marlin_test::poison_c(p, stream));
      MARLIN_TEST_CUDA(cudaStreamSynchronize(stream));
      // One block: the call's CTAs find every other SM free and start while it spins.
      slow_copy_and_fill<<<1, 256, 0, stream>>>(
          q.d_b.as<uint16_t>(), p.d_b.as<uint16_t>(), p.d_b.bytes() / 2, p.d_s.as<uint16_t>(),
          p.d_s.bytes() / 2, kScale, static_cast<long long>(clock_khz));
      MARLIN_TEST_CUDA(cudaGetLastError());
      marlin::GemmArgs args = p.args();
      args.constant_weights = constant;
      ASSERT_EQ(marlin::gemm<>(args, ws.get(), ws.bytes(), stream), Status::kSuccess);
      MARLIN_TEST_CUDA(cudaStreamSynchronize(stream));
      const std::vector<uint16_t> c = c_of(p);
      size_t differ = 0;
      for (size_t i = 0; i < c.size(); ++i) differ += c[i] != expected[i];
      if (!constant) {
        EXPECT_EQ(differ, 0u) << "the call read weights the kernel in front of it had not written";
      } else {
        std::cout << "[ promise  ] " << p.describe() << ": with constant_weights broken, " << differ
                  << " of " << c.size() << " elements of C differ" << std::endl;
      }
    }
    EXPECT_EQ(marlin_test::nonzero_counters(ws.get(), ws.bytes()), 0u);
  }
  MARLIN_TEST_CUDA(cudaStreamDestroy(stream));
}

}  // namespace
