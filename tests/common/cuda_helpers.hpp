// Test-side CUDA helpers: checked calls, RAII device buffers, device detection.
// (The library itself never aborts; tests do, loudly, on any CUDA failure.)
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#define MARLIN_TEST_CUDA(call)                                                       \
  do {                                                                               \
    const cudaError_t marlin_test_err_ = (call);                                     \
    ASSERT_EQ(marlin_test_err_, cudaSuccess)                                         \
        << #call << ": " << cudaGetErrorString(marlin_test_err_);                    \
  } while (0)

#define MARLIN_TEST_CUBLAS(call)                                                     \
  do {                                                                               \
    const cublasStatus_t marlin_test_st_ = (call);                                   \
    ASSERT_EQ(marlin_test_st_, CUBLAS_STATUS_SUCCESS) << #call;                      \
  } while (0)

namespace marlin_test {

/// Compute capability major of device 0, or 0 when no usable CUDA device exists.
inline int gpu_major() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    (void)cudaGetLastError();
    return 0;
  }
  int major = 0;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0) != cudaSuccess) {
    return 0;
  }
  return major;
}

/// Skips the current test with a visible reason unless an sm_80+ GPU is present.
#define MARLIN_REQUIRE_GPU()                                                           \
  do {                                                                                 \
    const int marlin_major_ = ::marlin_test::gpu_major();                              \
    if (marlin_major_ == 0) GTEST_SKIP() << "no CUDA GPU found: GPU test skipped";     \
    if (marlin_major_ < 8) GTEST_SKIP() << "GPU below sm_80: GPU test skipped";        \
  } while (0)

/// Owning device allocation (cudaMalloc / cudaFree).
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
    if (bytes > 0 && cudaMalloc(&ptr_, bytes) != cudaSuccess) {
      ptr_ = nullptr;
      bytes_ = 0;
    }
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) {
    o.ptr_ = nullptr;
    o.bytes_ = 0;
  }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      reset();
      ptr_ = o.ptr_;
      bytes_ = o.bytes_;
      o.ptr_ = nullptr;
      o.bytes_ = 0;
    }
    return *this;
  }
  ~DeviceBuffer() { reset(); }

  void reset() {
    if (ptr_) (void)cudaFree(ptr_);
    ptr_ = nullptr;
    bytes_ = 0;
  }
  void* get() const { return ptr_; }
  template <class T>
  T* as() const { return static_cast<T*>(ptr_); }
  std::size_t bytes() const { return bytes_; }
  explicit operator bool() const { return ptr_ != nullptr; }

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

/// A zero-filled device buffer of at least `bytes` (and at least 16) bytes: a workspace.
inline DeviceBuffer zeroed(std::size_t bytes) {
  DeviceBuffer b(bytes > 16 ? bytes : 16);
  if (b && cudaMemset(b.get(), 0, b.bytes()) != cudaSuccess) b.reset();
  return b;
}

/// Copies a host vector into a new device buffer (empty buffer on failure).
template <class T>
DeviceBuffer to_device(const std::vector<T>& host) {
  DeviceBuffer buf(host.size() * sizeof(T));
  if (buf && cudaMemcpy(buf.get(), host.data(), buf.bytes(), cudaMemcpyHostToDevice) != cudaSuccess) {
    buf.reset();
  }
  return buf;
}

/// Copies `count` elements of T from the device into a host vector.
template <class T>
std::vector<T> to_host(const void* device, std::size_t count) {
  std::vector<T> host(count);
  if (cudaMemcpy(host.data(), device, count * sizeof(T), cudaMemcpyDeviceToHost) != cudaSuccess) {
    host.clear();
  }
  return host;
}

}  // namespace marlin_test
