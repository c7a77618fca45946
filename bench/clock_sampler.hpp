// The SM clock, and the reasons the driver gives for holding it down, sampled through NVML
// while the bench's timed batches run, so that each case reports the clock its repetitions
// ran at (bench/README.md). Host-only.
//
// Why: under the H200's software power cap the SM clock moves between 1425 and 1980 MHz from
// one second to the next (bench/NOTES.md, runs 311-312), and falls with M at M >= 256 (run 314:
// 1470-1680 MHz in median). A row's time needs its clock. (Run 314 did not tie a repetition's
// time to its mean clock: the repetitions' spread is mostly not the clock's.)
//
// NVML is the driver's library (libnvidia-ml.so.1). It is opened at run time with dlopen, so
// the bench builds without NVML's header or import library and still runs where the driver's
// library is missing (no GPU, a container without it): the sampler then says why it is
// unavailable and the bench reports no clock.
#pragma once

#include <dlfcn.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>

namespace marlin_bench {

/// Bits of NVML's clock event reasons (`nvmlClocksEventReason*` in nvml.h; the values are the
/// library's ABI): the software power cap, and the slowdowns that are not the power cap
/// (hardware slowdown, software and hardware thermal slowdown, the hardware power brake).
inline constexpr std::uint64_t kReasonSwPowerCap = 0x4;
inline constexpr std::uint64_t kReasonsSlowdown = 0x8 | 0x20 | 0x40 | 0x80;

/// Samples of the SM clock over one interval (in the bench: one library's timed batches of one
/// repetition of a case): how many, their mean and minimum, and how many carried the power cap
/// or a slowdown among their reasons.
struct ClockStats {
  int samples = 0;
  double sum_mhz = 0.0;
  unsigned min_mhz = std::numeric_limits<unsigned>::max();  ///< meaningful when samples > 0
  int power_capped = 0;  ///< samples whose reasons include kReasonSwPowerCap
  int slowed = 0;        ///< samples whose reasons include any of kReasonsSlowdown

  /// Adds one sample: the SM clock in MHz and the reason bits NVML gave with it.
  void add(unsigned mhz, std::uint64_t reasons) {
    ++samples;
    sum_mhz += mhz;
    min_mhz = std::min(min_mhz, mhz);
    power_capped += (reasons & kReasonSwPowerCap) != 0 ? 1 : 0;
    slowed += (reasons & kReasonsSlowdown) != 0 ? 1 : 0;
  }
  /// Adds every sample of `other`.
  void merge(const ClockStats& other) {
    samples += other.samples;
    sum_mhz += other.sum_mhz;
    min_mhz = std::min(min_mhz, other.min_mhz);
    power_capped += other.power_capped;
    slowed += other.slowed;
  }
  /// Mean clock in MHz; NaN without samples (as are the two shares).
  double mean_mhz() const { return ratio(sum_mhz); }
  /// Share of the samples under the software power cap, 0..1.
  double power_capped_share() const { return ratio(power_capped); }
  /// Share of the samples with a slowdown other than the power cap, 0..1.
  double slowed_share() const { return ratio(slowed); }

 private:
  double ratio(double x) const {
    return samples > 0 ? x / samples : std::numeric_limits<double>::quiet_NaN();
  }
};

/// NVML opened for one GPU; sample() reads its current SM clock and clock event reasons.
/// Neither copied nor moved: it owns the library handle and NVML's initialization.
class ClockSampler {
 public:
  /// Opens NVML (`library`: the driver's, or a stand-in's path in tests) and finds the GPU
  /// with PCI bus id `pci_bus_id` (the form cudaDeviceGetPCIBusId writes, e.g.
  /// "0000:19:00.0"). Never throws: on any failure the sampler is unavailable and
  /// why_unavailable() says which step failed.
  explicit ClockSampler(const std::string& pci_bus_id,
                        const std::string& library = "libnvidia-ml.so.1")
      : library_(library) {
    lib_ = dlopen(library_.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib_ == nullptr) {
      const char* err = dlerror();
      why_ = "cannot load " + library_ + (err != nullptr ? ": " : "") + (err != nullptr ? err : "");
      return;
    }
    // The reasons' query had the name ...ClocksThrottleReasons first and ...ClocksEventReasons
    // since; older drivers' libraries export only the first. Either name is the same function.
    if (!find(init_, "nvmlInit_v2") || !find(shutdown_, "nvmlShutdown") ||
        !find(error_string_, "nvmlErrorString") ||
        !find(handle_by_bus_id_, "nvmlDeviceGetHandleByPciBusId_v2") ||
        !find(clock_info_, "nvmlDeviceGetClockInfo") ||
        (!find(reasons_, "nvmlDeviceGetCurrentClocksEventReasons") &&
         !find(reasons_, "nvmlDeviceGetCurrentClocksThrottleReasons"))) {
      return;
    }
    if (const int st = init_(); st != kSuccess) {
      why_ = "nvmlInit_v2: " + error(st);
      return;
    }
    initialized_ = true;
    if (const int st = handle_by_bus_id_(pci_bus_id.c_str(), &device_); st != kSuccess) {
      why_ = "nvmlDeviceGetHandleByPciBusId_v2(" + pci_bus_id + "): " + error(st);
      return;
    }
    unsigned mhz = 0;
    unsigned long long reasons = 0;
    if (const int st = clock_info_(device_, kClockSm, &mhz); st != kSuccess) {
      why_ = "nvmlDeviceGetClockInfo: " + error(st);
      return;
    }
    if (const int st = reasons_(device_, &reasons); st != kSuccess) {
      why_ = "the clock event reasons' query: " + error(st);
      return;
    }
    why_.clear();  // a missing first name of the reasons' query left a message
    available_ = true;
  }
  ClockSampler(const ClockSampler&) = delete;
  ClockSampler& operator=(const ClockSampler&) = delete;
  ~ClockSampler() {
    if (initialized_) (void)shutdown_();
    if (lib_ != nullptr) (void)dlclose(lib_);
  }

  /// Whether sample() can read the clock.
  bool available() const { return available_; }
  /// Why not, when !available(): the step that failed and NVML's or the loader's message.
  const std::string& why_unavailable() const { return why_; }

  /// Adds the SM clock and the current clock event reasons to `stats`; returns false, adding
  /// nothing, when the sampler is unavailable or NVML fails this time.
  bool sample(ClockStats& stats) const {
    if (!available_) return false;
    unsigned mhz = 0;
    unsigned long long reasons = 0;
    if (clock_info_(device_, kClockSm, &mhz) != kSuccess ||
        reasons_(device_, &reasons) != kSuccess) {
      return false;
    }
    stats.add(mhz, reasons);
    return true;
  }

 private:
  // NVML's C ABI, declared here so that nvml.h is not needed: nvmlReturn_t and
  // nvmlClockType_t are C enums (int), nvmlDevice_t an opaque pointer.
  using Device = void*;
  static constexpr int kSuccess = 0;   // NVML_SUCCESS
  static constexpr int kClockSm = 1;   // NVML_CLOCK_SM
  using InitFn = int (*)();
  using ShutdownFn = int (*)();
  using ErrorStringFn = const char* (*)(int);
  using HandleByBusIdFn = int (*)(const char*, Device*);
  using ClockInfoFn = int (*)(Device, int, unsigned*);
  using ReasonsFn = int (*)(Device, unsigned long long*);

  // Looks up `name` in the library; on failure sets why_ (unless `name` has a fallback the
  // caller tries next, in which case a later failure overwrites it).
  template <class Fn>
  bool find(Fn& fn, const char* name) {
    fn = reinterpret_cast<Fn>(dlsym(lib_, name));
    if (fn == nullptr) why_ = library_ + " has no " + name;
    return fn != nullptr;
  }
  std::string error(int st) const {
    const char* s = error_string_ != nullptr ? error_string_(st) : nullptr;
    return s != nullptr ? s : "NVML error " + std::to_string(st);
  }

  std::string library_;
  void* lib_ = nullptr;
  bool initialized_ = false;
  bool available_ = false;
  std::string why_;
  Device device_ = nullptr;
  InitFn init_ = nullptr;
  ShutdownFn shutdown_ = nullptr;
  ErrorStringFn error_string_ = nullptr;
  HandleByBusIdFn handle_by_bus_id_ = nullptr;
  ClockInfoFn clock_info_ = nullptr;
  ReasonsFn reasons_ = nullptr;
};

}  // namespace marlin_bench
