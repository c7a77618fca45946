// Device helpers of the benchmark: error checks, an owning device buffer, random fills,
// the device-side dequantization used for the cuBLAS baseline, the error reduction, and
// BatchTimer, which times a batch of back-to-back launches with CUDA events (and samples the SM
// clock while they run).
#pragma once

#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>

#include "clock_sampler.hpp"

namespace marlin_bench {

/// A failed CUDA, cuBLAS or marlin call; the benchmark case reports it with SkipWithError.
struct BenchError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

inline void cuda_check(cudaError_t err, const char* what) {
  if (err != cudaSuccess) {
    throw BenchError(std::string(what) + ": " + cudaGetErrorString(err));
  }
}

inline void cublas_check(cublasStatus_t st, const char* what) {
  if (st != CUBLAS_STATUS_SUCCESS) {
    throw BenchError(std::string(what) + ": cuBLAS status " + std::to_string(static_cast<int>(st)));
  }
}

/// Owning device allocation (cudaMalloc / cudaFree). Move-only.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
    if (bytes > 0) cuda_check(cudaMalloc(&ptr_, bytes), "cudaMalloc");
  }
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : ptr_(std::exchange(other.ptr_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    if (this != &other) {
      reset();
      ptr_ = std::exchange(other.ptr_, nullptr);
      bytes_ = std::exchange(other.bytes_, 0);
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { reset(); }

  void reset() noexcept {
    if (ptr_ != nullptr) (void)cudaFree(ptr_);
    ptr_ = nullptr;
    bytes_ = 0;
  }
  template <class T = void>
  T* get() const noexcept {
    return static_cast<T*>(ptr_);
  }
  template <class T = void>
  T* at(std::size_t byte_offset) const noexcept {
    return reinterpret_cast<T*>(static_cast<char*>(ptr_) + byte_offset);
  }
  std::size_t bytes() const noexcept { return bytes_; }

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

/// `bytes` rounded up to a multiple of 256, the offset between sub-buffers of one allocation.
constexpr std::size_t align256(std::size_t bytes) { return (bytes + 255) / 256 * 256; }

/// splitmix64: a counter-based 64-bit mixer, so element i's random bits need no state.
__host__ __device__ inline std::uint64_t mix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// p[i] = fp16(uniform in [lo, hi)), a function of (seed, i) only.
__global__ void fill_uniform_half_kernel(__half* p, std::size_t count, std::uint64_t seed,
                                         float lo, float hi) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < count; i += stride) {
    const std::uint64_t bits = mix64(seed ^ mix64(i));
    const float u = static_cast<float>(bits >> 40) * (1.0f / 16777216.0f);  // [0, 1), 24 bits
    p[i] = __float2half_rn(lo + (hi - lo) * u);
  }
}

inline void fill_uniform_half(__half* p, std::size_t count, std::uint64_t seed, float lo,
                              float hi, cudaStream_t stream) {
  fill_uniform_half_kernel<<<1024, 256, 0, stream>>>(p, count, seed, lo, hi);
  cuda_check(cudaGetLastError(), "fill_uniform_half_kernel");
}

// w[r][c] = fp16((codes[r][c] - 8) * scales[r / group][c]): the product in fp32 rounded once
// to fp16, exactly as marlin::dequantize computes it on the host. codes row-major [k][n],
// scales row-major and unpermuted [k / group][n].
__global__ void dequantize_kernel(const std::uint8_t* codes, const __half* scales, int k, int n,
                                  int group, __half* w) {
  const std::size_t count = static_cast<std::size_t>(k) * n;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < count; i += stride) {
    const std::size_t row = i / n;
    const std::size_t col = i % n;
    const float s = __half2float(scales[(row / group) * n + col]);
    const int q = static_cast<int>(codes[i] & 0xFu) - 8;
    w[i] = __float2half_rn(static_cast<float>(q) * s);
  }
}

// Over `count` elements, in fp64: sums[0] += sum (c - ref)^2, sums[1] += sum ref^2,
// sums[2] += count of non-finite c, sums[3] += sum (fp16(ref) - ref)^2 (what rounding the exact
// result to fp16 alone costs); against `c16`, another fp16 result of the same product (cuBLAS
// with fp32 accumulation and fp16 output): sums[4] += sum (c - c16)^2, sums[5] += sum c16^2,
// sums[6] += sum (c16 - ref)^2. A NaN in c (an unwritten, poisoned element) makes sums[0] and
// sums[4] NaN.
inline constexpr int kErrorSums = 7;
__global__ void squared_error_kernel(const __half* c, const float* ref, const __half* c16,
                                     std::size_t count, double* sums) {
  constexpr int kThreadsPerBlock = 256;
  __shared__ double part_sh[kErrorSums][kThreadsPerBlock];  // [sum][thread]
  double part[kErrorSums] = {};
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < count; i += stride) {
    const double x = __half2float(c[i]);
    const double y = ref[i];
    const double z = __half2float(c16[i]);
    const double y16 = __half2float(__float2half_rn(ref[i]));
    part[0] += (x - y) * (x - y);
    part[1] += y * y;
    part[2] += isfinite(x) ? 0.0 : 1.0;
    part[3] += (y16 - y) * (y16 - y);
    part[4] += (x - z) * (x - z);
    part[5] += z * z;
    part[6] += (z - y) * (z - y);
  }
  for (int j = 0; j < kErrorSums; ++j) part_sh[j][threadIdx.x] = part[j];
  __syncthreads();
  for (int half = kThreadsPerBlock / 2; half > 0; half /= 2) {
    if (static_cast<int>(threadIdx.x) < half) {
      for (int j = 0; j < kErrorSums; ++j) {
        part_sh[j][threadIdx.x] += part_sh[j][threadIdx.x + half];
      }
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    for (int j = 0; j < kErrorSums; ++j) atomicAdd(&sums[j], part_sh[j][0]);
  }
}

// Spins until the host writes a nonzero *release (or about `max_cycles` SM clocks pass, in
// which case *timed_out is set): holds the stream while the host enqueues a batch.
__global__ void wait_for_release_kernel(const volatile int* release, volatile int* timed_out,
                                        long long max_cycles) {
  const long long start = clock64();
  while (*release == 0) {
    if (clock64() - start > max_cycles) {
      *timed_out = 1;
      return;
    }
    __nanosleep(500);
  }
}

// Reads `count` 16-byte words, this thread's share of a grid-wide stride (and writes nothing
// but, never, *sink): run over a buffer larger than the L2, it leaves the L2 holding that
// buffer's clean lines and none of the data a timed call is about to read, with no dirty lines
// to write back during that call.
__device__ inline void read_flush(const int4* p, std::size_t count, int* sink) {
  int acc = 0;
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < count;
       i += std::size_t{gridDim.x} * blockDim.x) {
    const int4 v = p[i];
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x7fffffff && count == 0) *sink = acc;  // never true; keeps the loads
}

// read_flush as a kernel: the isolated mode's L2 flush before every timed call.
__global__ void read_flush_kernel(const int4* p, std::size_t count, int* sink) {
  read_flush(p, count, sink);
}

/// Times batches of back-to-back launches on one stream.
///
/// Why the stream is held first: a marlin call costs several microseconds of host time
/// (device queries, the launch itself), about as long as the kernel at m = 1 on the small
/// shapes. Timing launches as the host issues them would measure the host. So each batch is
/// enqueued behind a kernel that spins on a flag in mapped host memory; the start event,
/// the launches and the stop event queue up behind it, the host then releases the flag, and
/// the GPU runs the whole batch back to back. The events therefore time the kernels and the
/// gaps between consecutive launches that the GPU itself needs, not the host.
///
/// With a ClockSampler set, the host samples the SM clock while it waits for a batch (the
/// first sample right after the release, then one every kClockSamplePeriod until the stop
/// event completes); last_clock() holds the batch's samples. Every launch is enqueued before
/// the first sample, so sampling cannot delay one.
class BatchTimer {
 public:
  explicit BatchTimer(cudaStream_t stream) : stream_(stream) {
    cuda_check(cudaHostAlloc(reinterpret_cast<void**>(&flags_), 2 * sizeof(int),
                             cudaHostAllocMapped),
               "cudaHostAlloc");
    flags_[0] = flags_[1] = 0;
    cuda_check(cudaHostGetDevicePointer(reinterpret_cast<void**>(&flags_dev_), flags_, 0),
               "cudaHostGetDevicePointer");
    cuda_check(cudaEventCreate(&start_), "cudaEventCreate");
    cuda_check(cudaEventCreate(&stop_), "cudaEventCreate");
  }
  BatchTimer(const BatchTimer&) = delete;
  BatchTimer& operator=(const BatchTimer&) = delete;
  ~BatchTimer() {
    (void)cudaEventDestroy(start_);
    (void)cudaEventDestroy(stop_);
    (void)cudaFreeHost(flags_);
  }

  /// Calls `launch()` `count` times between two events; returns microseconds per launch on
  /// the GPU. last_host_us() is then the host's time per call to enqueue them (the GPU is held,
  /// so the host never waits for it).
  template <class Launch>
  double time_batch(Launch&& launch, int count) {
    // Idle already, unless a launch of the previous batch threw: then its hold kernel must
    // see the release before the flag is cleared for this one.
    cuda_check(cudaStreamSynchronize(stream_), "previous batch");
    release_store(0);
    static_cast<volatile int*>(flags_)[1] = 0;
    // ~2 s at the H200's clock: far longer than enqueueing any batch, short enough that a
    // host that dies mid-batch does not hang the GPU.
    wait_for_release_kernel<<<1, 1, 0, stream_>>>(flags_dev_, flags_dev_ + 1, 4'000'000'000LL);
    cuda_check(cudaGetLastError(), "wait_for_release_kernel");
    struct Release {  // releases the GPU even when a launch throws
      BatchTimer* timer;
      ~Release() { timer->release_store(1); }
    } release{this};
    cuda_check(cudaEventRecord(start_, stream_), "cudaEventRecord");
    const auto host_start = std::chrono::steady_clock::now();
    for (int i = 0; i < count; ++i) launch();
    const std::chrono::duration<double, std::micro> host = std::chrono::steady_clock::now() -
                                                           host_start;
    last_host_us_ = host.count() / count;
    cuda_check(cudaEventRecord(stop_, stream_), "cudaEventRecord");
    release_store(1);
    last_clock_ = ClockStats{};
    wait_sampling(stop_, "batch");
    if (timed_out()) throw BenchError("the batch was not enqueued within the hold time");
    float ms = 0.0f;
    cuda_check(cudaEventElapsedTime(&ms, start_, stop_), "cudaEventElapsedTime");
    return 1000.0 * ms / count;
  }

  /// Calls `launch()` `count` times one at a time, each after `flush()` (which must evict the
  /// L2) and between two events of its own, waiting for each call before the next; returns the
  /// mean GPU microseconds per call, from the end of the flush to the end of the call, and sets
  /// last_host_us() to the host's time per launch() call. So each call starts on a cold L2
  /// and an otherwise idle GPU, as after a kernel that does not launch its dependents early.
  /// Clock samples (last_clock()) are taken while each call and the end of its flush run.
  /// The flush must outlast the host's enqueueing of the start event and the call (a read of
  /// 136 MB takes ~35 us on an H200, a marlin call ~4 us of host time), or the events would
  /// time the host too.
  template <class Launch, class Flush>
  double time_isolated(Launch&& launch, Flush&& flush, int count) {
    cuda_check(cudaStreamSynchronize(stream_), "previous batch");
    last_clock_ = ClockStats{};
    double gpu_us = 0.0, host_us = 0.0;
    for (int i = 0; i < count; ++i) {
      flush();
      cuda_check(cudaEventRecord(start_, stream_), "cudaEventRecord");
      const auto host_start = std::chrono::steady_clock::now();
      launch();
      const std::chrono::duration<double, std::micro> host = std::chrono::steady_clock::now() -
                                                             host_start;
      host_us += host.count();
      cuda_check(cudaEventRecord(stop_, stream_), "cudaEventRecord");
      wait_sampling(stop_, "isolated call");
      float ms = 0.0f;
      cuda_check(cudaEventElapsedTime(&ms, start_, stop_), "cudaEventElapsedTime");
      gpu_us += 1000.0 * ms;
    }
    last_host_us_ = host_us / count;
    return gpu_us / count;
  }

  /// Host microseconds per launch() call of the last time_batch or time_isolated.
  double last_host_us() const { return last_host_us_; }

  /// Samples the SM clock during every later batch with `sampler` (nullptr: no sampling). The
  /// sampler must outlive the batches timed with it.
  void set_clock_sampler(const ClockSampler* sampler) { sampler_ = sampler; }
  /// The SM clock samples of the last time_batch or time_isolated (none without a sampler).
  const ClockStats& last_clock() const { return last_clock_; }

  /// Time between the starts of two clock samples while a batch runs: a batch lasts up to about
  /// a millisecond, so it gets a few samples as long as NVML's two reads take less than this.
  static constexpr std::chrono::microseconds kClockSamplePeriod{200};

 private:
  // Waits for `done` (`what` names it in errors), adding clock samples to last_clock_ when a
  // sampler is set: one at once, then one per kClockSamplePeriod while `done` is pending.
  void wait_sampling(cudaEvent_t done, const char* what) {
    if (sampler_ == nullptr) {
      cuda_check(cudaEventSynchronize(done), what);
      return;
    }
    for (;;) {
      const auto next = std::chrono::steady_clock::now() + kClockSamplePeriod;
      (void)sampler_->sample(last_clock_);
      cudaError_t st = cudaEventQuery(done);
      while (st == cudaErrorNotReady && std::chrono::steady_clock::now() < next) {
        st = cudaEventQuery(done);
      }
      if (st != cudaErrorNotReady) {
        cuda_check(st, what);
        return;
      }
    }
  }

  bool timed_out() const { return static_cast<volatile int*>(flags_)[1] != 0; }
  void release_store(int value) {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    *static_cast<volatile int*>(flags_) = value;
    std::atomic_thread_fence(std::memory_order_seq_cst);
  }

  cudaStream_t stream_;
  int* flags_ = nullptr;      // [2] host: {release, timed_out}
  int* flags_dev_ = nullptr;  // the same two ints as the device sees them
  cudaEvent_t start_{};
  cudaEvent_t stop_{};
  double last_host_us_ = 0.0;
  const ClockSampler* sampler_ = nullptr;
  ClockStats last_clock_;
};

}  // namespace marlin_bench
