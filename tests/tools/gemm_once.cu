// gemm_once: runs marlin::gemm<> on one random problem, twice (the second time with
// GemmArgs::constant_weights, whose decode kernels copy their first weights before the
// dependency wait), and checks that both runs give the same bits and a finite result. Small on
// purpose: it is the program that tests/sanitize.sh runs under compute-sanitizer.
//
//   gemm_once m n k group_size
//
// Exit codes: 0 success, 1 failure, 77 no usable GPU.
#include <cuda_runtime.h>
#include <marlin/marlin.cuh>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#define CHECK_CUDA(call)                                                               \
  do {                                                                                 \
    const cudaError_t err_ = (call);                                                   \
    if (err_ != cudaSuccess) {                                                         \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call,                \
                   cudaGetErrorString(err_));                                          \
      return 1;                                                                        \
    }                                                                                  \
  } while (0)

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s m n k group_size\n", argv[0]);
    return 1;
  }
  const int m = std::atoi(argv[1]), n = std::atoi(argv[2]), k = std::atoi(argv[3]);
  const int group_size = std::atoi(argv[4]);
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("gemm_once: no CUDA GPU found (skipped)\n");
    return 77;
  }

  std::mt19937 rng(static_cast<unsigned>(m * 131 + n * 7 + k));
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  std::vector<uint16_t> a(size_t(m) * k);
  for (auto& x : a) x = marlin::float_to_half(unit(rng));
  std::vector<uint8_t> codes(size_t(k) * n);
  for (auto& q : codes) q = static_cast<uint8_t>(rng() & 0xF);
  std::vector<uint16_t> scales(size_t(group_size == -1 ? 1 : k / group_size) * n);
  for (auto& s : scales) s = marlin::float_to_half(0.01f + 0.005f * unit(rng));
  std::vector<uint32_t> b_packed;
  std::vector<uint16_t> s_packed;
  if (marlin::pack_weights(codes.data(), k, n, b_packed) != marlin::Status::kSuccess ||
      marlin::pack_scales(scales.data(), k, n, group_size, s_packed) != marlin::Status::kSuccess) {
    std::fprintf(stderr, "packing failed\n");
    return 1;
  }

  void *d_a, *d_b, *d_s, *d_c;
  CHECK_CUDA(cudaMalloc(&d_a, a.size() * 2));
  CHECK_CUDA(cudaMalloc(&d_b, b_packed.size() * 4));
  CHECK_CUDA(cudaMalloc(&d_s, s_packed.size() * 2));
  CHECK_CUDA(cudaMalloc(&d_c, size_t(m) * n * 2));
  CHECK_CUDA(cudaMemcpy(d_a, a.data(), a.size() * 2, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(d_b, b_packed.data(), b_packed.size() * 4, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(d_s, s_packed.data(), s_packed.size() * 2, cudaMemcpyHostToDevice));

  marlin::GemmArgs args;
  args.m = m;
  args.n = n;
  args.k = k;
  args.a = d_a;
  args.b = d_b;
  args.scales = d_s;
  args.c = d_c;
  args.group_size = group_size;
  const size_t ws_bytes = marlin::workspace_bytes(args);
  void* ws = nullptr;
  if (ws_bytes > 0) {
    CHECK_CUDA(cudaMalloc(&ws, ws_bytes));
    CHECK_CUDA(cudaMemset(ws, 0, ws_bytes));
  }

  std::vector<uint16_t> runs[2];
  for (auto& c : runs) {
    args.constant_weights = &c == &runs[1];
    CHECK_CUDA(cudaMemset(d_c, 0xFF, size_t(m) * n * 2));  // NaN
    const marlin::Status st = marlin::gemm<>(args, ws, ws_bytes, nullptr);
    if (st != marlin::Status::kSuccess) {
      std::fprintf(stderr, "gemm: %s\n", marlin::to_string(st));
      return 1;
    }
    CHECK_CUDA(cudaDeviceSynchronize());
    c.resize(size_t(m) * n);
    CHECK_CUDA(cudaMemcpy(c.data(), d_c, c.size() * 2, cudaMemcpyDeviceToHost));
  }
  size_t non_finite = 0;
  for (uint16_t x : runs[0]) non_finite += !std::isfinite(marlin::half_to_float(x));
  const bool same = runs[0] == runs[1];
  std::printf("gemm_once m=%d n=%d k=%d group=%d workspace=%zu B: %s, %zu non-finite\n", m, n, k,
              group_size, ws_bytes, same ? "runs identical" : "RUNS DIFFER", non_finite);
  cudaFree(d_a);
  cudaFree(d_b);
  cudaFree(d_s);
  cudaFree(d_c);
  cudaFree(ws);
  return same && non_finite == 0 ? 0 : 1;
}
