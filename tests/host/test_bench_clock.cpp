// Host-only tests of the bench's SM clock samples (bench/clock_sampler.hpp): what ClockStats
// reports from known samples, the sampler's reads through a stand-in NVML library
// (tests/fake_nvml, built next to this binary), and that a sampler which cannot reach a
// GPU says why instead of failing. tests/bench/test_bench_timer.cu samples a real GPU.
#include <gtest/gtest.h>
#include <unistd.h>

#include "../../bench/clock_sampler.hpp"

#include <cmath>
#include <cstdint>
#include <string>
#include <utility>

namespace {

using marlin_bench::ClockSampler;
using marlin_bench::ClockStats;
using marlin_bench::kReasonsSlowdown;
using marlin_bench::kReasonSwPowerCap;

// The stand-in NVML library's path: MARLIN_TEST_FAKE_NVML_NAME in this executable's directory.
std::string fake_nvml() {
  char exe[4096] = {};
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  const std::string path = n > 0 ? std::string(exe, static_cast<std::size_t>(n)) : "";
  const std::size_t slash = path.rfind('/');
  return (slash == std::string::npos ? "" : path.substr(0, slash + 1)) +
         MARLIN_TEST_FAKE_NVML_NAME;
}

TEST(BenchClock, StatsOfKnownSamples) {
  ClockStats s;
  s.add(1980, 0);                              // no reason
  s.add(1425, kReasonSwPowerCap);              // the power cap alone
  s.add(1755, kReasonSwPowerCap | 0x8);        // the power cap and a hardware slowdown
  s.add(1830, 0x1);                            // GPU idle: neither counted reason
  EXPECT_EQ(s.samples, 4);
  EXPECT_DOUBLE_EQ(s.mean_mhz(), (1980.0 + 1425.0 + 1755.0 + 1830.0) / 4);
  EXPECT_EQ(s.min_mhz, 1425u);
  EXPECT_DOUBLE_EQ(s.power_capped_share(), 0.5);
  EXPECT_DOUBLE_EQ(s.slowed_share(), 0.25);
}

TEST(BenchClock, EachSlowdownReasonCountsAndThePowerCapDoesNot) {
  // Hardware slowdown, software and hardware thermal slowdown, the hardware power brake.
  for (const std::uint64_t bit : {0x8ull, 0x20ull, 0x40ull, 0x80ull}) {
    ClockStats s;
    s.add(1500, bit);
    EXPECT_DOUBLE_EQ(s.slowed_share(), 1.0) << "reason bit 0x" << std::hex << bit;
    EXPECT_DOUBLE_EQ(s.power_capped_share(), 0.0) << "reason bit 0x" << std::hex << bit;
  }
  EXPECT_EQ(kReasonsSlowdown & kReasonSwPowerCap, 0u);
}

TEST(BenchClock, MergeEqualsAddingEverySample) {
  ClockStats a, b, all;
  a.add(1980, 0);
  a.add(1600, kReasonSwPowerCap);
  b.add(1500, 0x40);
  for (const auto& [mhz, reasons] : {std::pair<unsigned, std::uint64_t>{1980, 0},
                                     {1600, kReasonSwPowerCap},
                                     {1500, 0x40}}) {
    all.add(mhz, reasons);
  }
  a.merge(b);
  EXPECT_EQ(a.samples, all.samples);
  EXPECT_DOUBLE_EQ(a.mean_mhz(), all.mean_mhz());
  EXPECT_EQ(a.min_mhz, all.min_mhz);
  EXPECT_EQ(a.power_capped, all.power_capped);
  EXPECT_EQ(a.slowed, all.slowed);
}

TEST(BenchClock, MergingAnEmptyIntervalChangesNothing) {
  ClockStats a;
  a.add(1700, kReasonSwPowerCap);
  a.merge(ClockStats{});
  EXPECT_EQ(a.samples, 1);
  EXPECT_EQ(a.min_mhz, 1700u);
  EXPECT_DOUBLE_EQ(a.mean_mhz(), 1700.0);
  EXPECT_DOUBLE_EQ(a.power_capped_share(), 1.0);
}

TEST(BenchClock, NoSamplesGiveNaNNotZero) {
  const ClockStats s;
  EXPECT_EQ(s.samples, 0);
  EXPECT_TRUE(std::isnan(s.mean_mhz()));
  EXPECT_TRUE(std::isnan(s.power_capped_share()));
  EXPECT_TRUE(std::isnan(s.slowed_share()));
}

// A bus id that no machine we run on has (PCI domain ffff, device 1f, function 7), so the
// sampler must be unavailable: without NVML it names the library, with NVML the lookup.
TEST(BenchClock, SamplerForAMissingGpuIsUnavailableAndSaysWhy) {
  const ClockSampler sampler("ffff:ff:1f.7");
  EXPECT_FALSE(sampler.available());
  const std::string& why = sampler.why_unavailable();
  EXPECT_TRUE(why.find("libnvidia-ml.so.1") != std::string::npos ||
              why.find("nvmlInit_v2") != std::string::npos ||
              why.find("nvmlDeviceGetHandleByPciBusId_v2(ffff:ff:1f.7)") != std::string::npos)
      << why;
  ClockStats s;
  EXPECT_FALSE(sampler.sample(s));
  EXPECT_EQ(s.samples, 0);
}

// The stand-in library knows one GPU, 0000:42:00.0, whose clock alternates 1980 MHz (no
// reason) and 1425 MHz (the power cap); it exports the reasons' query under its older name.
TEST(BenchClock, SamplerReadsClockAndReasonsThroughNvml) {
  const ClockSampler sampler("0000:42:00.0", fake_nvml());
  ASSERT_TRUE(sampler.available()) << sampler.why_unavailable();
  EXPECT_TRUE(sampler.why_unavailable().empty()) << sampler.why_unavailable();
  // Four reads in a row give each state twice, whichever comes first.
  ClockStats s;
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(sampler.sample(s));
  EXPECT_EQ(s.samples, 4);
  EXPECT_EQ(s.min_mhz, 1425u);
  EXPECT_DOUBLE_EQ(s.mean_mhz(), (1425.0 + 1980.0) / 2);
  EXPECT_DOUBLE_EQ(s.power_capped_share(), 0.5);
  EXPECT_DOUBLE_EQ(s.slowed_share(), 0.0);
}

TEST(BenchClock, SamplerNamesTheBusIdNvmlDoesNotKnow) {
  const ClockSampler sampler("0000:43:00.0", fake_nvml());
  EXPECT_FALSE(sampler.available());
  EXPECT_EQ(sampler.why_unavailable(),
            "nvmlDeviceGetHandleByPciBusId_v2(0000:43:00.0): Not Found");
  ClockStats s;
  EXPECT_FALSE(sampler.sample(s));
  EXPECT_EQ(s.samples, 0);
}

TEST(BenchClock, SamplerNamesALibraryThatIsNotThere) {
  const std::string missing = fake_nvml() + ".missing";
  const ClockSampler sampler("0000:42:00.0", missing);
  EXPECT_FALSE(sampler.available());
  EXPECT_EQ(sampler.why_unavailable().rfind("cannot load " + missing, 0), 0u)
      << sampler.why_unavailable();
}

}  // namespace
