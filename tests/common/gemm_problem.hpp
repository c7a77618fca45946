// One random W4A16 problem for the GPU tests: operands on host and device, the dequantized
// weights, a reference C from cuBLAS (fp16 operands, fp32 accumulation and output) and the
// comparison rule.
#pragma once

#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <gtest/gtest.h>
#include <marlin/marlin.cuh>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "common/cuda_helpers.hpp"

namespace marlin_test {

/// fp16 bits of NaN: C is filled with it before every run, so an unwritten element fails.
inline constexpr uint16_t kPoisonHalf = 0x7e00;

struct GemmProblem {
  int m = 0, n = 0, k = 0, group_size = -1;
  uint64_t seed = 0;
  std::vector<uint16_t> a;         // [m][k] fp16 bits
  // The function the kernel computes is C = (A w_eff) * col_scale: with group scales,
  // w_eff = fp16((q - 8) * s) (dequantized in fp16, as the kernel does before the mma) and
  // col_scale = 1; per-channel, w_eff = q - 8 (exact) and the fp32 result is scaled once per
  // column. The references below compute exactly that, at higher precision.
  std::vector<uint16_t> w;         // [k][n] w_eff, fp16 bits
  std::vector<float> col_scale;    // [n]
  std::vector<uint32_t> b_packed;  // [k/16][2n]
  std::vector<uint16_t> s_packed;  // [k/group or 1][n], permuted
  DeviceBuffer d_a, d_b, d_s, d_c, d_w;

  std::string describe() const {
    std::ostringstream os;
    os << "m=" << m << " n=" << n << " k=" << k << " group=" << group_size << " seed=" << seed;
    return os.str();
  }
  marlin::GemmArgs args() const {
    marlin::GemmArgs g;
    g.m = m;
    g.n = n;
    g.k = k;
    g.a = d_a.get();
    g.b = d_b.get();
    g.scales = d_s.get();
    g.c = d_c.get();
    g.group_size = group_size;
    return g;
  }
};

/// Random A in [-1, 1), random codes 0..15, random scales in [0.5e-2, 1.5e-2) (fp16), packed
/// with marlin's own packer, uploaded, C poisoned. `upload_w` also uploads the dequantized
/// weights for the cuBLAS reference.
inline void make_problem(GemmProblem& p, int m, int n, int k, int group_size, uint64_t seed,
                         bool upload_w = true) {
  p.m = m;
  p.n = n;
  p.k = k;
  p.group_size = group_size;
  p.seed = seed;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  std::uniform_real_distribution<float> scale(0.5e-2f, 1.5e-2f);
  p.a.resize(static_cast<size_t>(m) * k);
  for (auto& x : p.a) x = marlin::float_to_half(unit(rng));
  std::vector<uint8_t> codes(static_cast<size_t>(k) * n);
  for (auto& q : codes) q = static_cast<uint8_t>(rng() & 0xF);
  const int groups = group_size == -1 ? 1 : k / group_size;
  std::vector<uint16_t> scales(static_cast<size_t>(groups) * n);
  for (auto& s : scales) s = marlin::float_to_half(scale(rng));
  ASSERT_EQ(marlin::pack_weights(codes.data(), k, n, p.b_packed), marlin::Status::kSuccess);
  ASSERT_EQ(marlin::pack_scales(scales.data(), k, n, group_size, p.s_packed),
            marlin::Status::kSuccess);
  if (group_size == -1) {
    const std::vector<uint16_t> ones(static_cast<size_t>(n), marlin::float_to_half(1.0f));
    ASSERT_EQ(marlin::dequantize(codes.data(), ones.data(), k, n, group_size, p.w),
              marlin::Status::kSuccess);
    p.col_scale.resize(static_cast<size_t>(n));
    for (int c = 0; c < n; ++c) p.col_scale[c] = marlin::half_to_float(scales[c]);
  } else {
    ASSERT_EQ(marlin::dequantize(codes.data(), scales.data(), k, n, group_size, p.w),
              marlin::Status::kSuccess);
    p.col_scale.assign(static_cast<size_t>(n), 1.0f);
  }
  p.d_a = to_device(p.a);
  p.d_b = to_device(p.b_packed);
  p.d_s = to_device(p.s_packed);
  if (upload_w) p.d_w = to_device(p.w);
  p.d_c = DeviceBuffer(static_cast<size_t>(m) * n * 2);
  ASSERT_TRUE(p.d_a && p.d_b && p.d_s && p.d_c && (!upload_w || p.d_w)) << "device allocation";
  std::vector<uint16_t> poison(static_cast<size_t>(m) * n, kPoisonHalf);
  MARLIN_TEST_CUDA(cudaMemcpy(p.d_c.get(), poison.data(), poison.size() * 2,
                              cudaMemcpyHostToDevice));
}

/// C of `p`, copied to the host (fp16 bits).
inline std::vector<uint16_t> c_of(const GemmProblem& p) {
  return to_host<uint16_t>(p.d_c.get(), static_cast<size_t>(p.m) * p.n);
}

/// Problem dimensions (m, n, k, group size).
struct Dims {
  int m, n, k, g;
};

/// Dimensions that the current device runs as striped runs reducing through the workspace
/// (workspace_bytes > 0), from a fixed list: which shapes do depends on the SM count and the
/// architecture (sm_90 splits small problems over clusters instead). {0, 0, 0, 0} if none.
inline Dims workspace_dims() {
  static const Dims kCandidates[] = {
      {8, 4096, 4096, 128}, {16, 8192, 8192, 128}, {2048, 1024, 4096, 128},
      {600, 6144, 4096, -1}, {16, 36864, 4096, 128}};
  // workspace_bytes validates the pointers (alignment, C apart from the operands it reads);
  // nothing is dereferenced.
  void* const fake = reinterpret_cast<void*>(std::uintptr_t{1} << 20);
  void* const fake_c = reinterpret_cast<void*>(std::uintptr_t{1} << 36);
  for (const Dims& d : kCandidates) {
    marlin::GemmArgs args;
    args.m = d.m;
    args.n = d.n;
    args.k = d.k;
    args.group_size = d.g;
    args.a = args.b = args.scales = fake;
    args.c = fake_c;
    if (marlin::workspace_bytes(args) > 0) return d;
  }
  return Dims{0, 0, 0, 0};
}

/// Nonzero words among a workspace's slice counters (its first detail::kCountersBytes, or all
/// of a smaller one): the contract is that a completed call leaves them all zero.
inline std::size_t nonzero_counters(const void* workspace, std::size_t bytes) {
  const std::size_t words = std::min(bytes, marlin::detail::kCountersBytes) / 4;
  std::size_t nonzero = 0;
  for (uint32_t x : to_host<uint32_t>(workspace, words)) nonzero += x != 0;
  return nonzero;
}

/// Fills C with NaN again.
inline void poison_c(GemmProblem& p, cudaStream_t stream = nullptr) {
  MARLIN_TEST_CUDA(cudaMemsetAsync(p.d_c.get(), 0xFF, p.d_c.bytes(), stream));  // 0xFFFF: NaN
}

/// Reference C[m][n] in fp32: cuBLAS on A and w_eff with fp32 accumulation
/// (CUBLAS_COMPUTE_32F_PEDANTIC: no reduced-precision shortcuts), then the column scales.
inline void reference_gpu(const GemmProblem& p, std::vector<float>& ref) {
  cublasHandle_t handle = nullptr;
  MARLIN_TEST_CUBLAS(cublasCreate(&handle));
  DeviceBuffer d_ref(static_cast<size_t>(p.m) * p.n * sizeof(float));
  ASSERT_TRUE(d_ref);
  const float alpha = 1.0f, beta = 0.0f;
  // Row-major C = A W is column-major C^T = W^T A^T: W as an n x k column-major matrix (ld n),
  // A as k x m (ld k).
  const cublasStatus_t st = cublasGemmEx(
      handle, CUBLAS_OP_N, CUBLAS_OP_N, p.n, p.m, p.k, &alpha, p.d_w.get(), CUDA_R_16F, p.n,
      p.d_a.get(), CUDA_R_16F, p.k, &beta, d_ref.get(), CUDA_R_32F, p.n,
      CUBLAS_COMPUTE_32F_PEDANTIC, CUBLAS_GEMM_DEFAULT);
  cublasDestroy(handle);
  ASSERT_EQ(st, CUBLAS_STATUS_SUCCESS);
  ref = to_host<float>(d_ref.get(), static_cast<size_t>(p.m) * p.n);
  ASSERT_EQ(ref.size(), static_cast<size_t>(p.m) * p.n);
  for (size_t i = 0; i < ref.size(); ++i) ref[i] *= p.col_scale[i % static_cast<size_t>(p.n)];
}

/// Reference in fp64 on the host (small problems only).
inline std::vector<double> reference_host(const GemmProblem& p) {
  std::vector<double> ref(static_cast<size_t>(p.m) * p.n, 0.0);
  std::vector<double> w(p.w.size());
  for (size_t i = 0; i < w.size(); ++i) w[i] = marlin::half_to_float(p.w[i]);
  for (int r = 0; r < p.m; ++r) {
    double* row = ref.data() + static_cast<size_t>(r) * p.n;
    for (int kk = 0; kk < p.k; ++kk) {
      const double a = marlin::half_to_float(p.a[static_cast<size_t>(r) * p.k + kk]);
      const double* wrow = w.data() + static_cast<size_t>(kk) * p.n;
      for (int c = 0; c < p.n; ++c) row[c] += a * wrow[c];
    }
    for (int c = 0; c < p.n; ++c) row[c] *= p.col_scale[static_cast<size_t>(c)];
  }
  return ref;
}

/// Comparison result of C against a reference.
struct Comparison {
  double rel_l2 = 0;     ///< ||C - ref|| / ||ref||
  size_t bad = 0;        ///< elements beyond the per-element bound (NaN included)
  size_t first_bad = 0;  ///< index of the first of them
  double first_got = 0, first_want = 0;
};

/// Root mean square of `v` (0 for an empty vector).
template <class T>
double rms(const std::vector<T>& v) {
  double sum = 0;
  for (const T& x : v) sum += static_cast<double>(x) * x;
  return std::sqrt(sum / static_cast<double>(v.empty() ? 1 : v.size()));
}

/// Per-element bound: |c - ref| <= 2^-10 |ref| + 2^-12 rms(ref). The first term is the fp16
/// rounding of the output (at most 2^-11 |ref|, relative), doubled; the second covers fp32
/// accumulation-order differences between two correct kernels, which do not scale with the
/// element itself when terms cancel. A NaN never passes.
template <class Ref>
Comparison compare(const std::vector<uint16_t>& c, const std::vector<Ref>& ref) {
  Comparison cmp;
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) den += static_cast<double>(ref[i]) * ref[i];
  const double ref_rms = std::sqrt(den / static_cast<double>(ref.empty() ? 1 : ref.size()));
  for (size_t i = 0; i < ref.size(); ++i) {
    const double got = marlin::half_to_float(c[i]);
    const double want = ref[i];
    const double err = std::fabs(got - want);
    num += (got - want) * (got - want);
    if (!(err <= std::ldexp(std::fabs(want), -10) + std::ldexp(ref_rms, -12))) {
      if (cmp.bad++ == 0) {
        cmp.first_bad = i;
        cmp.first_got = got;
        cmp.first_want = want;
      }
    }
  }
  cmp.rel_l2 = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
  if (std::isnan(cmp.rel_l2)) cmp.rel_l2 = INFINITY;
  return cmp;
}

/// Asserts MEASURING.md's pass rule: relative L2 error <= 2e-3 and no element beyond the bound.
#define MARLIN_EXPECT_CLOSE(problem, c, ref)                                               \
  do {                                                                                     \
    const auto marlin_cmp_ = ::marlin_test::compare((c), (ref));                           \
    EXPECT_LE(marlin_cmp_.rel_l2, 2e-3) << (problem).describe();                           \
    EXPECT_EQ(marlin_cmp_.bad, 0u)                                                         \
        << (problem).describe() << ": first bad element " << marlin_cmp_.first_bad         \
        << " (row " << marlin_cmp_.first_bad / (problem).n << ", col "                     \
        << marlin_cmp_.first_bad % (problem).n << ") got " << marlin_cmp_.first_got        \
        << " want " << marlin_cmp_.first_want;                                             \
  } while (0)

}  // namespace marlin_test
