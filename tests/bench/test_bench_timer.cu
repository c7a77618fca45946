// GPU tests of the bench's timer and its SM clock samples (bench/bench_util.cuh,
// bench/clock_sampler.hpp): NVML finds the test's GPU by its PCI bus id and reads a clock the
// GPU can run at, and BatchTimer samples that clock while a batch runs, and only when asked.
#include <gtest/gtest.h>

#include "../../bench/bench_util.cuh"
#include "../../bench/clock_sampler.hpp"
#include "common/cuda_helpers.hpp"

#include <string>

namespace {

using marlin_bench::BatchTimer;
using marlin_bench::ClockSampler;
using marlin_bench::ClockStats;

// Spins for `cycles` SM clocks.
__global__ void spin_kernel(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

std::string bus_id_of_device0() {
  char bus_id[32] = {};
  if (cudaDeviceGetPCIBusId(bus_id, sizeof(bus_id), 0) != cudaSuccess) return "";
  return bus_id;
}

// The highest SM clock the device reports, in MHz.
int peak_sm_mhz() {
  int khz = 0;
  if (cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0) != cudaSuccess) return 0;
  return khz / 1000;
}

TEST(BenchClockGpu, SamplerFindsTheGpuAndReadsAPlausibleClock) {
  MARLIN_REQUIRE_GPU();
  const std::string bus_id = bus_id_of_device0();
  ASSERT_FALSE(bus_id.empty());
  const ClockSampler sampler(bus_id);
  ASSERT_TRUE(sampler.available()) << "bus id " << bus_id << ": " << sampler.why_unavailable();
  ClockStats s;
  ASSERT_TRUE(sampler.sample(s));
  EXPECT_EQ(s.samples, 1);
  EXPECT_GT(s.min_mhz, 0u);
  // At most the device's peak; the 50 MHz margin is for NVML and the CUDA attribute rounding
  // the same clock differently (a guess, not a measured difference: on the H200 the test passed
  // in runs 313 and 315, bench/NOTES.md).
  EXPECT_LE(s.min_mhz, static_cast<unsigned>(peak_sm_mhz()) + 50) << "peak " << peak_sm_mhz();
}

TEST(BenchClockGpu, BatchTimerSamplesDuringABatchOnlyWithASampler) {
  MARLIN_REQUIRE_GPU();
  cudaStream_t stream{};
  MARLIN_TEST_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const ClockSampler sampler(bus_id_of_device0());
  ASSERT_TRUE(sampler.available()) << sampler.why_unavailable();
  constexpr long long kCycles = 20'000'000;  // 10-14 ms at 1.4-2 GHz
  auto launch = [&] { spin_kernel<<<1, 32, 0, stream>>>(kCycles); };
  {
    BatchTimer timer(stream);
    launch();  // loads the module outside a held batch (bench_gemm.cu says why)
    MARLIN_TEST_CUDA(cudaStreamSynchronize(stream));
    const double unsampled_us = timer.time_batch(launch, 1);
    EXPECT_EQ(timer.last_clock().samples, 0);
    timer.set_clock_sampler(&sampler);
    const double sampled_us = timer.time_batch(launch, 1);
    // Many sampling periods of 200 us, even where each NVML read takes a millisecond.
    const ClockStats& s = timer.last_clock();
    EXPECT_GE(s.samples, 2) << "batch of " << sampled_us << " us";
    EXPECT_GT(s.min_mhz, 0u);
    EXPECT_LE(s.mean_mhz(), peak_sm_mhz() + 50.0);
    // A kernel of a fixed cycle count lasts at least cycles / clock (longer when other
    // processes' kernels delay its start, as under ctest -j): the clock the batch's time
    // implies is a lower bound of the one the samples must show, less the clock's moves.
    const double implied_mhz = static_cast<double>(kCycles) / sampled_us;
    EXPECT_GE(s.mean_mhz(), 0.75 * implied_mhz)
        << "unsampled batch " << unsampled_us << " us, sampled " << sampled_us << " us";
    timer.set_clock_sampler(nullptr);
    (void)timer.time_batch(launch, 1);
    EXPECT_EQ(timer.last_clock().samples, 0);
  }
  MARLIN_TEST_CUDA(cudaStreamDestroy(stream));
}

}  // namespace
