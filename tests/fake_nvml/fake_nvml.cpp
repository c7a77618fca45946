// A stand-in for the driver's NVML library with the few functions the bench's clock sampler
// (bench/clock_sampler.hpp) loads, for host tests of its loading and reading paths on machines
// without a GPU. It knows one GPU, at bus id "0000:42:00.0", whose SM clock alternates between
// 1980 MHz without a reason and 1425 MHz under the software power cap; any other clock domain
// or bus id is an error. The reasons' query is exported under its older name only, so the
// sampler's fallback to that name is what finds it.
#include <cstring>

namespace {
int g_reads = 0;       // clock reads so far
int g_initialized = 0;  // nvmlInit_v2 calls minus nvmlShutdown calls
char g_device = 0;      // the one device's handle points here
constexpr int kSuccess = 0, kInvalidArgument = 2, kUninitialized = 1, kNotFound = 6;
}  // namespace

extern "C" {

__attribute__((visibility("default"))) int nvmlInit_v2() {
  ++g_initialized;
  return kSuccess;
}

__attribute__((visibility("default"))) int nvmlShutdown() {
  if (g_initialized == 0) return kUninitialized;
  --g_initialized;
  return kSuccess;
}

__attribute__((visibility("default"))) const char* nvmlErrorString(int st) {
  return st == kNotFound ? "Not Found" : "fake NVML error";
}

__attribute__((visibility("default"))) int nvmlDeviceGetHandleByPciBusId_v2(const char* bus_id,
                                                                           void** device) {
  if (g_initialized == 0) return kUninitialized;
  if (bus_id == nullptr || device == nullptr) return kInvalidArgument;
  if (std::strcmp(bus_id, "0000:42:00.0") != 0) return kNotFound;
  *device = &g_device;
  return kSuccess;
}

__attribute__((visibility("default"))) int nvmlDeviceGetClockInfo(void* device, int type,
                                                                 unsigned* mhz) {
  if (device != &g_device || type != 1 || mhz == nullptr) return kInvalidArgument;  // SM only
  *mhz = g_reads++ % 2 == 0 ? 1980u : 1425u;
  return kSuccess;
}

// The reasons of the last clock read: the power cap with 1425 MHz.
__attribute__((visibility("default"))) int nvmlDeviceGetCurrentClocksThrottleReasons(
    void* device, unsigned long long* reasons) {
  if (device != &g_device || reasons == nullptr) return kInvalidArgument;
  *reasons = g_reads % 2 == 0 ? 0x4ull : 0x0ull;
  return kSuccess;
}

}  // extern "C"
