// marlin_bench: marlin::gemm against cuBLAS fp16 and against the floor of each GEMM.
//
// One Google Benchmark case per (shape, m, group size): `gemm/k<K>_n<N>/m<M>/g<128|-1>` over
// the whole grid of shapes.hpp, plus a smoke subset under `quick/`. Each case times marlin and
// cuBLAS fp16 (cublasGemmEx, fp32 accumulation) in the same iterations, reports both and the
// floor (memory or mma.sync, from the device copy bandwidth measured at start-up), and the
// relative error of marlin against cuBLAS with fp32 output and against cuBLAS's own fp16 output
// on the same dequantized weights, and the SM clock sampled (NVML) while each library's timed
// batches ran.
// The method (rotation, batches, medians) is in bench/README.md, after the project's MEASURING.md.
#include <benchmark/benchmark.h>
#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <marlin/marlin.cuh>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "bench_util.cuh"
#include "shapes.hpp"

namespace marlin_bench {
namespace {

// Timed iterations per repetition; each times one batch of marlin and one of cuBLAS. Cases
// whose mma.sync floor exceeds kLongCaseUs (each launch is then a batch of its own) run
// kLongIterations, so that no case takes much more than half a second.
constexpr int kIterations = 10;
constexpr int kLongIterations = 5;
constexpr double kLongCaseUs = 1000.0;
// Repetitions per case; the README and plot.py use the median over them.
constexpr int kRepetitions = 5;
// A batch lasts about this long on the GPU (microseconds) ...
constexpr double kTargetBatchUs = 1000.0;
// ... within these launch counts: enough launches that event resolution (~0.5 us) does not
// matter for the shortest kernels, one launch for the longest.
constexpr int kMaxBatch = 50;
constexpr int kMinBatch = 1;
// Calls per timed batch with MARLIN_BENCH_ISOLATED (each one alone, after an L2 flush).
constexpr int kIsolatedBatch = 20;

struct Case {
  std::string name;  // the Google Benchmark name, e.g. gemm/k4096_n4096/m16/g128
  int m;
  int n;
  int k;
  int group;  // 128, or -1 for one scale per column
};

/// The device data of one (k, n, group): marlin's packed weights and scales, and cuBLAS's
/// dequantized fp16 weights, each replicated for rotation. Copy 0 of both holds the same
/// random codes and scales, so copy 0 also serves the accuracy check; the other copies are
/// device-side duplicates of copy 0 (different addresses are all that rotation needs).
class Workload {
 public:
  /// Makes (k, n, group) current; keeps everything when it already is. Host packing is
  /// cached per (k, n) (codes do not depend on the group size).
  void prepare(int k, int n, int group, cudaStream_t stream) {
    if (k == k_ && n == n_ && group == group_) return;
    marlin_buf_.reset();
    cublas_buf_.reset();
    k_ = n_ = group_ = 0;
    if (k != host_k_ || n != host_n_) make_host_weights(k, n);
    upload(k, n, group, stream);
    k_ = k;
    n_ = n;
    group_ = group;
  }

  const void* b(int copy) const { return marlin_buf_.at<void>(copy * marlin_stride_); }
  const void* scales(int copy) const {
    return marlin_buf_.at<void>(copy * marlin_stride_ + b_offset_scales_);
  }
  const __half* w16(int copy) const { return cublas_buf_.at<__half>(copy * cublas_stride_); }
  int marlin_copies() const { return marlin_copies_; }
  int cublas_copies() const { return cublas_copies_; }

 private:
  // Random codes (uniform 0..15), packed with marlin::pack_weights.
  void make_host_weights(int k, int n) {
    host_k_ = host_n_ = 0;
    const std::size_t count = static_cast<std::size_t>(k) * n;  // a multiple of 16
    codes_.resize(count);
    const std::uint64_t seed = mix64(static_cast<std::uint64_t>(k) << 32 | n);
    for (std::size_t i = 0; i < count; i += 16) {
      const std::uint64_t bits = mix64(seed ^ mix64(i));
      for (int j = 0; j < 16; ++j) {
        codes_[i + j] = static_cast<std::uint8_t>((bits >> (4 * j)) & 0xF);
      }
    }
    if (const marlin::Status st = marlin::pack_weights(codes_.data(), k, n, packed_);
        st != marlin::Status::kSuccess) {
      throw BenchError(std::string("pack_weights: ") + marlin::to_string(st));
    }
    host_k_ = k;
    host_n_ = n;
  }

  void upload(int k, int n, int group, cudaStream_t stream) {
    // Scales uniform in [0.005, 0.015): row-major [rows][n] for the dequantization, permuted
    // for the kernel.
    const int rows = marlin::scale_rows(k, group);
    std::vector<std::uint16_t> scales(static_cast<std::size_t>(rows) * n);
    const std::uint64_t seed = mix64(static_cast<std::uint64_t>(k) << 40 ^
                                     static_cast<std::uint64_t>(n) << 8 ^
                                     static_cast<std::uint64_t>(group & 0xFF));
    for (std::size_t i = 0; i < scales.size(); ++i) {
      const float u = static_cast<float>(mix64(seed ^ mix64(i)) >> 40) * (1.0f / 16777216.0f);
      scales[i] = marlin::float_to_half(0.005f + 0.01f * u);
    }
    std::vector<std::uint16_t> packed_scales;
    if (const marlin::Status st = marlin::pack_scales(scales.data(), k, n, group, packed_scales);
        st != marlin::Status::kSuccess) {
      throw BenchError(std::string("pack_scales: ") + marlin::to_string(st));
    }

    // marlin: [copies][packed weights | packed scales], each part 256-byte aligned.
    const std::size_t b_bytes = packed_.size() * sizeof(std::uint32_t);
    const std::size_t s_bytes = packed_scales.size() * sizeof(std::uint16_t);
    b_offset_scales_ = align256(b_bytes);
    marlin_stride_ = b_offset_scales_ + align256(s_bytes);
    marlin_copies_ = rotation_copies(b_bytes + s_bytes);
    marlin_buf_ = DeviceBuffer(marlin_copies_ * marlin_stride_);
    // Every copy is ordered on `stream` (a non-blocking stream: it does not wait for the
    // legacy default stream that a plain cudaMemcpy would use).
    cuda_check(cudaMemcpyAsync(marlin_buf_.get(), packed_.data(), b_bytes, cudaMemcpyHostToDevice,
                               stream),
               "upload packed weights");
    cuda_check(cudaMemcpyAsync(marlin_buf_.at<void>(b_offset_scales_), packed_scales.data(),
                               s_bytes, cudaMemcpyHostToDevice, stream),
               "upload packed scales");
    for (int c = 1; c < marlin_copies_; ++c) {
      cuda_check(cudaMemcpyAsync(marlin_buf_.at<void>(c * marlin_stride_), marlin_buf_.get(),
                                 marlin_stride_, cudaMemcpyDeviceToDevice, stream),
                 "replicate packed weights");
    }

    // cuBLAS: [copies][k][n] fp16, copy 0 dequantized on the device from the same codes.
    const std::size_t w_bytes = static_cast<std::size_t>(k) * n * sizeof(__half);
    cublas_stride_ = align256(w_bytes);
    cublas_copies_ = rotation_copies(w_bytes);
    cublas_buf_ = DeviceBuffer(cublas_copies_ * cublas_stride_);
    {
      DeviceBuffer codes_dev(codes_.size());
      DeviceBuffer scales_dev(scales.size() * sizeof(std::uint16_t));
      cuda_check(cudaMemcpyAsync(codes_dev.get(), codes_.data(), codes_.size(),
                                 cudaMemcpyHostToDevice, stream),
                 "upload codes");
      cuda_check(cudaMemcpyAsync(scales_dev.get(), scales.data(), scales_dev.bytes(),
                                 cudaMemcpyHostToDevice, stream),
                 "upload scales");
      dequantize_kernel<<<2048, 256, 0, stream>>>(codes_dev.get<std::uint8_t>(),
                                                  scales_dev.get<__half>(), k, n,
                                                  group == -1 ? k : group,
                                                  cublas_buf_.get<__half>());
      cuda_check(cudaGetLastError(), "dequantize_kernel");
      cuda_check(cudaStreamSynchronize(stream), "dequantize_kernel");
    }
    for (int c = 1; c < cublas_copies_; ++c) {
      cuda_check(cudaMemcpyAsync(cublas_buf_.at<void>(c * cublas_stride_), cublas_buf_.get(),
                                 w_bytes, cudaMemcpyDeviceToDevice, stream),
                 "replicate fp16 weights");
    }
    cuda_check(cudaStreamSynchronize(stream), "replicate weights");
  }

  int k_ = 0, n_ = 0, group_ = 0;  // current device data
  int host_k_ = 0, host_n_ = 0;    // current host data
  std::vector<std::uint8_t> codes_;    // [k][n] codes 0..15
  std::vector<std::uint32_t> packed_;  // [k/16][2n] words (marlin::pack_weights)
  DeviceBuffer marlin_buf_;
  DeviceBuffer cublas_buf_;
  std::size_t marlin_stride_ = 0, b_offset_scales_ = 0, cublas_stride_ = 0;
  int marlin_copies_ = 0, cublas_copies_ = 0;
};

/// Grows `buf` to at least `bytes` (contents not kept).
void ensure(DeviceBuffer& buf, std::size_t bytes) {
  if (buf.bytes() >= bytes) return;
  buf.reset();
  buf = DeviceBuffer(bytes);
}

/// Accuracy of one case: against the exact (fp32-output) reference, and against cuBLAS's own
/// fp16 result (fp32 accumulation, fp16 output), the reference the performance issue names.
struct Accuracy {
  double rel_err = 0.0;         // ||C - ref|| / ||ref||
  double rel_floor = 0.0;       // ||fp16(ref) - ref|| / ||ref||: the best any fp16 C can do
  double rel_err_cublas = 0.0;  // ||C - C16|| / ||C16||, C16 = cuBLAS fp16 output
  double cublas_rel_err = 0.0;  // ||C16 - ref|| / ||ref||: cuBLAS's own error
};

/// All the measurements of one case, taken in one go when Google Benchmark first runs it.
///
/// Why not one repetition per call: Google Benchmark aborts the whole program when the
/// repetitions of a case disagree on their iteration count, which is what a failure in a later
/// repetition (skipped, 0 iterations) after successful ones would produce, and the JSON report
/// would be lost. Measuring every repetition up front means a failure can only happen in the
/// first call, and then every repetition reports it. Each call then replays its repetition.
struct CaseResult {
  bool measured = false;
  std::string error;  // non-empty: the case failed, every repetition is skipped with this
  Accuracy accuracy;
  int marlin_batch = 1;   // launches per timed batch
  int cublas_batch = 1;
  int marlin_copies = 0;  // rotation copies
  int cublas_copies = 0;
  std::vector<std::vector<std::pair<double, double>>> reps;  // [rep][iter] {marlin, cuBLAS} us
  std::vector<std::pair<ClockStats, ClockStats>> clocks;  // [rep] {marlin, cuBLAS} SM clock
  std::vector<double> marlin_host_us, cublas_host_us;  // host us per call, every timed batch
  double plan_host_us = 0.0;  // host us per marlin::workspace_bytes call (planning, no launch)
  std::string plan;           // the launch marlin::gemm<> plans (plan_summary)
  std::size_t next_rep = 0;
};

/// The launch a plan describes, for the label: path and CTA tile (`wgmma 128x256`, `mma
/// 16x128`, `mma 8x128` for the 16-row tile's eight-row kernel; `wgmma-ws` where the
/// warp-specialized kernel runs; a decode kernel's warp-private pipeline adds `wp`, or `wp128`
/// with 128-byte K groups of A: detail::select_decode_pipeline), then how the tiles are spread:
/// `whole` (one CTA per slice), `whole runs of R on G` (G CTAs, R whole slices each),
/// `split S` (a cluster of S CTAs per slice), `whole W then split S` (the warpgroup kernel's
/// hybrid: W slices one CTA each, the rest split), `runs of R whole then split S on G` (hybrid
/// runs: G CTAs, R whole slices each, then a share of a split slice) or `striped G` (G CTAs
/// over the K-first order of tiles).
std::string plan_summary(const marlin::detail::Plan& plan) {
  const marlin::detail::Partition& p = plan.part;
  const char* const path =
      marlin::detail::launches_ws(plan) ? "wgmma-ws " : plan.wgmma ? "wgmma " : "mma ";
  const int rows = plan.eight_rows ? marlin::detail::kEightRowsMaxRows : 16 * plan.m_blocks;
  std::string s = std::string(path) + std::to_string(rows) + "x" +
                  std::to_string(plan.tile.tile_n());
  if (!plan.wgmma && plan.m_blocks == 1) {
    switch (plan.pipeline) {
      case marlin::DecodePipeline::kCtaWide: break;
      case marlin::DecodePipeline::kWarpPrivate: s += " wp"; break;
      case marlin::DecodePipeline::kWarpPrivateA128: s += " wp128"; break;
    }
  }
  if (p.split > 0 && p.runs > 0) {  // hybrid runs (make_hybrid_runs)
    return s + " runs of " + std::to_string(p.runs) + " whole then split " +
           std::to_string(p.split) + " on " + std::to_string(p.grid);
  }
  if (p.split > 0 && p.whole > 0) {
    return s + " whole " + std::to_string(p.whole) + " then split " + std::to_string(p.split);
  }
  if (p.split > 0) return s + " split " + std::to_string(p.split);
  if (p.grid == p.slices && p.iters == p.k_tiles) return s + " whole";
  if (p.iters % p.k_tiles == 0) {  // runs of whole slices (make_whole_runs)
    return s + " whole runs of " + std::to_string(p.iters / p.k_tiles) + " on " +
           std::to_string(p.grid);
  }
  return s + " striped " + std::to_string(p.grid);
}

/// Everything the cases share; created in main once a GPU is known to be there.
struct Context {
  cudaStream_t stream{};
  cublasHandle_t cublas{};
  std::unique_ptr<BatchTimer> timer;
  double bandwidth = 0.0;  // bytes/s, device-to-device copy
  Workload workload;
  DeviceBuffer a, c, c_cublas, ref, sums, workspace;  // grow-only per-problem buffers
  std::map<std::string, CaseResult> results;  // by case name
  // MARLIN_BENCH_ZERO_WORKSPACE=1: zero the workspace before every case, not only when it
  // grows (a diagnostic for the workspace contract; see bench/README.md).
  bool zero_workspace_per_case = false;
  // MARLIN_BENCH_ISOLATED=1: time each call alone after reading `flush` (twice the L2) instead
  // of batches of calls back to back (see bench/README.md).
  bool isolated = false;
  // MARLIN_BENCH_CONSTANT_WEIGHTS=1: marlin's calls promise constant weights
  // (GemmArgs::constant_weights; see bench/README.md).
  bool constant_weights = false;
  DeviceBuffer flush, flush_sink;
  int flush_blocks = 0;
  // The SM clock sampler the timer uses; null with MARLIN_BENCH_CLOCKS=0 or without NVML.
  std::unique_ptr<ClockSampler> clocks;

  Context() {
    cuda_check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
    cublas_check(cublasCreate(&cublas), "cublasCreate");
    cublas_check(cublasSetStream(cublas, stream), "cublasSetStream");
    timer = std::make_unique<BatchTimer>(stream);
  }
  ~Context() {
    timer.reset();
    (void)cublasDestroy(cublas);
    (void)cudaStreamDestroy(stream);
  }
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
};

Context* g_context = nullptr;

// Launches per timed batch for a kernel of `us_per_launch`.
int batch_for(double us_per_launch) {
  const double launches = kTargetBatchUs / std::max(us_per_launch, 1e-3);
  return static_cast<int>(std::clamp(launches, double{kMinBatch}, double{kMaxBatch}));
}

// Median of `v` (0 when empty).
double median_of(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return 0.5 * (v[(n - 1) / 2] + v[n / 2]);
}

// The worse of two checks of one case (NaN wins).
Accuracy worse(const Accuracy& x, const Accuracy& y) {
  Accuracy w;
  w.rel_err = std::isnan(x.rel_err) || std::isnan(y.rel_err) ? std::nan("")
                                                             : std::max(x.rel_err, y.rel_err);
  w.rel_floor = std::max(x.rel_floor, y.rel_floor);
  w.rel_err_cublas = std::isnan(x.rel_err_cublas) || std::isnan(y.rel_err_cublas)
                         ? std::nan("")
                         : std::max(x.rel_err_cublas, y.rel_err_cublas);
  w.cublas_rel_err = std::max(x.cublas_rel_err, y.cublas_rel_err);
  return w;
}

// C (row-major, M x N, of type `c_type`) = A · W through cublasGemmEx with fp32 accumulation,
// the call the baseline is timed with: column-major Cᵀ = Wᵀ · Aᵀ. `what` names it in errors.
void cublas_gemm(Context& ctx, const Case& cs, const __half* w, void* c, cudaDataType_t c_type,
                 const char* what) {
  const float alpha = 1.0f, beta = 0.0f;
  cublas_check(cublasGemmEx(ctx.cublas, CUBLAS_OP_N, CUBLAS_OP_N, cs.n, cs.m, cs.k, &alpha, w,
                            CUDA_R_16F, cs.n, ctx.a.get(), CUDA_R_16F, cs.k, &beta, c, c_type,
                            cs.n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
               what);
}

// Relative L2 error of marlin's C against cuBLAS with fp32 accumulation and fp32 output on the
// dequantized fp16 weights of rotation copy 0 (`args` must point at copy 0), and against
// cuBLAS's fp16 output of the same product (fp32 accumulation; the timed baseline's call). C is
// poisoned with NaN first, so an element marlin does not write makes the error NaN. `when`
// names the check in the message printed for non-finite outputs.
Accuracy relative_error(Context& ctx, const Case& cs, const marlin::GemmArgs& args,
                        const char* when) {
  const std::size_t mn = static_cast<std::size_t>(cs.m) * cs.n;
  cuda_check(cudaMemsetAsync(ctx.c.get(), 0xFF, mn * sizeof(__half), ctx.stream), "poison C");
  const marlin::Status st =
      marlin::gemm<>(args, ctx.workspace.get(), ctx.workspace.bytes(), ctx.stream);
  if (st != marlin::Status::kSuccess) {
    throw BenchError(std::string("marlin::gemm: ") + marlin::to_string(st));
  }
  cublas_gemm(ctx, cs, ctx.workload.w16(0), ctx.ref.get(), CUDA_R_32F,
              "cublasGemmEx (fp32 reference)");
  cublas_gemm(ctx, cs, ctx.workload.w16(0), ctx.c_cublas.get(), CUDA_R_16F,
              "cublasGemmEx (fp16 reference)");
  cuda_check(cudaMemsetAsync(ctx.sums.get(), 0, kErrorSums * sizeof(double), ctx.stream),
             "memset");
  squared_error_kernel<<<1024, 256, 0, ctx.stream>>>(ctx.c.get<__half>(), ctx.ref.get<float>(),
                                                     ctx.c_cublas.get<__half>(), mn,
                                                     ctx.sums.get<double>());
  cuda_check(cudaGetLastError(), "squared_error_kernel");
  double sums[kErrorSums] = {};
  cuda_check(cudaMemcpyAsync(sums, ctx.sums.get(), sizeof(sums), cudaMemcpyDeviceToHost,
                             ctx.stream),
             "copy error sums");
  cuda_check(cudaStreamSynchronize(ctx.stream), "accuracy check");
  if (sums[2] > 0) {
    std::fprintf(stderr,
                 "marlin_bench: %s (check %s): %.0f of %zu outputs are NaN or inf (unwritten "
                 "or overflowed); rel_err is NaN\n",
                 cs.name.c_str(), when, sums[2], mn);
  }
  Accuracy acc;
  acc.rel_err = std::sqrt(sums[0] / sums[1]);
  acc.rel_floor = std::sqrt(sums[3] / sums[1]);
  acc.rel_err_cublas = std::sqrt(sums[4] / sums[5]);
  acc.cublas_rel_err = std::sqrt(sums[6] / sums[1]);
  return acc;
}

// Prepares the data of `cs` and measures `repetitions` x `iterations` batches of each library.
void measure_case(Context& ctx, const Case& cs, int repetitions, int iterations, CaseResult& r) {
  ctx.workload.prepare(cs.k, cs.n, cs.group, ctx.stream);
  const std::size_t m = cs.m, n = cs.n, k = cs.k;
  ensure(ctx.a, m * k * sizeof(__half));
  ensure(ctx.c, m * n * sizeof(__half));
  ensure(ctx.c_cublas, m * n * sizeof(__half));
  ensure(ctx.ref, m * n * sizeof(float));
  ensure(ctx.sums, kErrorSums * sizeof(double));
  fill_uniform_half(ctx.a.get<__half>(), m * k, mix64(m << 32 | k), -1.0f, 1.0f, ctx.stream);

  marlin::GemmArgs args;
  args.m = cs.m;
  args.n = cs.n;
  args.k = cs.k;
  args.a = ctx.a.get();
  args.b = ctx.workload.b(0);
  args.scales = ctx.workload.scales(0);
  args.c = ctx.c.get();
  args.group_size = cs.group;
  args.constant_weights = ctx.constant_weights;
  if (const marlin::Status st = marlin::can_implement(args); st != marlin::Status::kSuccess) {
    throw BenchError(std::string("can_implement: ") + marlin::to_string(st));
  }
  // The workspace is zeroed when (re)allocated and then reused by every case: the contract on
  // marlin::workspace_bytes says each completed call leaves it ready for the next, of any shape.
  const std::size_t ws_bytes = marlin::workspace_bytes(args);
  const bool grown = ctx.workspace.bytes() < ws_bytes;
  if (grown) ensure(ctx.workspace, ws_bytes);
  if ((grown || ctx.zero_workspace_per_case) && ctx.workspace.bytes() > 0) {
    cuda_check(cudaMemsetAsync(ctx.workspace.get(), 0, ctx.workspace.bytes(), ctx.stream),
               "zero workspace");
  }

  int marlin_copy = 0;
  auto run_marlin = [&] {
    args.b = ctx.workload.b(marlin_copy);
    args.scales = ctx.workload.scales(marlin_copy);
    marlin_copy = (marlin_copy + 1) % ctx.workload.marlin_copies();
    const marlin::Status st =
        marlin::gemm<>(args, ctx.workspace.get(), ctx.workspace.bytes(), ctx.stream);
    if (st != marlin::Status::kSuccess) {
      throw BenchError(std::string("marlin::gemm: ") + marlin::to_string(st));
    }
  };
  int cublas_copy = 0;
  auto run_cublas = [&] {
    const __half* w = ctx.workload.w16(cublas_copy);
    cublas_copy = (cublas_copy + 1) % ctx.workload.cublas_copies();
    cublas_gemm(ctx, cs, w, ctx.c_cublas.get(), CUDA_R_16F, "cublasGemmEx");
  };

  // Accuracy on copy 0 (args.b and args.scales still point there).
  r.accuracy = relative_error(ctx, cs, args, "before timing");
  r.marlin_copies = ctx.workload.marlin_copies();
  r.cublas_copies = ctx.workload.cublas_copies();
  // One call of each outside a held batch first. The first launch of a kernel can load its
  // module (CUDA's lazy loading, the default), and loading may synchronize the context: inside
  // a batch it would wait for the hold kernel, which waits for it (BatchTimer then times out).
  // The fp32-output reference above does not load cuBLAS's fp16-output kernel.
  run_marlin();
  run_cublas();
  cuda_check(cudaStreamSynchronize(ctx.stream), "first calls");
  // A timed batch: `count` calls back to back behind a held stream, or (MARLIN_BENCH_ISOLATED)
  // one at a time, each after an L2 flush.
  auto flush = [&] {
    read_flush_kernel<<<ctx.flush_blocks, 256, 0, ctx.stream>>>(
        ctx.flush.get<int4>(), ctx.flush.bytes() / sizeof(int4), ctx.flush_sink.get<int>());
    cuda_check(cudaGetLastError(), "read_flush_kernel");
  };
  auto time_batch = [&](auto& launch, int count) {
    return ctx.isolated ? ctx.timer->time_isolated(launch, flush, count)
                        : ctx.timer->time_batch(launch, count);
  };
  // Batch sizes from a short timed warm-up of each library (a fixed count for isolated calls,
  // whose events bracket one call each).
  r.marlin_batch = ctx.isolated ? kIsolatedBatch : batch_for(time_batch(run_marlin, 3));
  r.cublas_batch = ctx.isolated ? kIsolatedBatch : batch_for(time_batch(run_cublas, 3));

  r.reps.assign(repetitions, {});
  r.clocks.assign(repetitions, {});
  for (int j = 0; j < repetitions; ++j) {
    time_batch(run_marlin, r.marlin_batch);  // warm-up, untimed
    time_batch(run_cublas, r.cublas_batch);
    // Both libraries in every iteration, so that they see the same clocks and temperature.
    for (int i = 0; i < iterations; ++i) {
      const double marlin_us = time_batch(run_marlin, r.marlin_batch);
      r.marlin_host_us.push_back(ctx.timer->last_host_us());
      r.clocks[j].first.merge(ctx.timer->last_clock());
      const double cublas_us = time_batch(run_cublas, r.cublas_batch);
      r.cublas_host_us.push_back(ctx.timer->last_host_us());
      r.clocks[j].second.merge(ctx.timer->last_clock());
      r.reps[j].emplace_back(marlin_us, cublas_us);
    }
  }

  // Host cost of planning alone: marlin::workspace_bytes runs the argument checks, the device
  // query and the plan that gemm<> runs, without the launch.
  {
    constexpr int kPlanCalls = 200;
    std::size_t sink = 0;
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kPlanCalls; ++i) sink += marlin::workspace_bytes(args);
    const std::chrono::duration<double, std::micro> host = std::chrono::steady_clock::now() -
                                                           start;
    if (sink != static_cast<std::size_t>(kPlanCalls) * ws_bytes) {
      throw BenchError("marlin::workspace_bytes changed between calls");
    }
    r.plan_host_us = host.count() / kPlanCalls;
  }
  {
    marlin::detail::DeviceInfo dev;
    marlin::detail::Plan plan;
    if (marlin::detail::query_device(dev) != marlin::Status::kSuccess ||
        marlin::detail::make_plan<marlin::AutoTile>(args, dev, plan) != marlin::Status::kSuccess) {
      throw BenchError("marlin::detail::make_plan failed where gemm<> succeeded");
    }
    r.plan = plan_summary(plan);
  }

  // Once more after all the timed launches, so that a call which leaves the workspace unready
  // for the next one of the same shape shows in rel_err too; the worse check is reported.
  args.b = ctx.workload.b(0);
  args.scales = ctx.workload.scales(0);
  r.accuracy = worse(r.accuracy, relative_error(ctx, cs, args, "after timing"));
}

void run_case(benchmark::State& state, const Case& cs) {
  Context& ctx = *g_context;
  CaseResult& r = ctx.results[cs.name];
  if (!r.measured) {
    r.measured = true;
    try {
      measure_case(ctx, cs, kRepetitions, static_cast<int>(state.max_iterations), r);
    } catch (const BenchError& e) {
      r.error = e.what();
      std::fprintf(stderr, "marlin_bench: %s: %s\n", cs.name.c_str(), e.what());
    }
  }
  if (!r.error.empty()) {
    state.SkipWithError(r.error.c_str());
    return;
  }
  // Repetition `next_rep` of the stored ones (wraps around if run more often than measured).
  const std::size_t rep_index = r.next_rep++ % r.reps.size();
  const auto& rep = r.reps[rep_index];
  std::size_t i = 0;
  double marlin_sum = 0.0, cublas_sum = 0.0;
  for (auto _ : state) {
    const auto [marlin_us, cublas_us] = rep[i++ % rep.size()];
    state.SetIterationTime(marlin_us * 1e-6);
    marlin_sum += marlin_us;
    cublas_sum += cublas_us;
  }

  const double marlin_us = marlin_sum / static_cast<double>(state.iterations());
  const double cublas_us = cublas_sum / static_cast<double>(state.iterations());
  const Floor floor = gemm_floor(cs.m, cs.n, cs.k, cs.group, ctx.bandwidth);
  state.counters["marlin_us"] = marlin_us;
  state.counters["cublas_us"] = cublas_us;
  state.counters["mem_floor_us"] = floor.mem_us;
  state.counters["mma_floor_us"] = floor.mma_us;
  state.counters["floor_us"] = floor.us;
  state.counters["frac_floor"] = floor.us / marlin_us;
  state.counters["speedup"] = cublas_us / marlin_us;
  state.counters["GBps"] = floor.bytes / (marlin_us * 1e3);
  state.counters["TFLOPs"] = gemm_flops(cs.m, cs.n, cs.k) / (marlin_us * 1e6);
  state.counters["host_us"] = median_of(r.marlin_host_us);
  state.counters["cublas_host_us"] = median_of(r.cublas_host_us);
  state.counters["plan_host_us"] = r.plan_host_us;
  state.counters["rel_err"] = r.accuracy.rel_err;
  state.counters["rel_err_fp16"] = r.accuracy.rel_floor;
  state.counters["rel_err_cublas"] = r.accuracy.rel_err_cublas;
  state.counters["cublas_rel_err"] = r.accuracy.cublas_rel_err;
  // The SM clock over this repetition's timed batches (none without a sampler): marlin's mean
  // and lowest sample in MHz and its shares of samples under the power cap and under another
  // slowdown; cuBLAS's mean and power-cap share.
  if (const auto& [mc, cc] = r.clocks[rep_index]; mc.samples > 0 && cc.samples > 0) {
    state.counters["sm_mhz"] = mc.mean_mhz();
    state.counters["sm_mhz_min"] = mc.min_mhz;
    state.counters["power_capped"] = mc.power_capped_share();
    state.counters["slowed"] = mc.slowed_share();
    state.counters["cublas_sm_mhz"] = cc.mean_mhz();
    state.counters["cublas_power_capped"] = cc.power_capped_share();
  }
  state.SetLabel("plan " + r.plan + " copies " + std::to_string(r.marlin_copies) + "/" +
                 std::to_string(r.cublas_copies) + " batch " +
                 std::to_string(r.marlin_batch) + "/" + std::to_string(r.cublas_batch));
}

double min_of(const std::vector<double>& v) {
  return v.empty() ? 0.0 : *std::min_element(v.begin(), v.end());
}
double max_of(const std::vector<double>& v) {
  return v.empty() ? 0.0 : *std::max_element(v.begin(), v.end());
}

std::string group_name(int group) { return group == -1 ? "g-1" : "g" + std::to_string(group); }

void register_case(const std::string& family, const Shape& shape, int m, int group) {
  const std::string name = family + "/k" + std::to_string(shape.k) + "_n" +
                           std::to_string(shape.n) + "/m" + std::to_string(m) + "/" +
                           group_name(group);
  const Case cs{name, m, shape.n, shape.k, group};
  benchmark::RegisterBenchmark(name.c_str(), [cs](benchmark::State& st) { run_case(st, cs); })
      ->UseManualTime()
      ->Unit(benchmark::kMicrosecond)
      ->Iterations(1e6 * gemm_flops(m, shape.n, shape.k) / kMmaFlopsPerSecond > kLongCaseUs
                       ? kLongIterations
                       : kIterations)
      ->Repetitions(kRepetitions)
      // The console shows the aggregates; the JSON file also holds each repetition's row, so
      // that a repetition's time can be read against its own clock (scripts/clock_spread.py).
      ->DisplayAggregatesOnly(true)
      ->ComputeStatistics("min", min_of)
      ->ComputeStatistics("max", max_of);
}

// Parses environment variable `name`, if set and not empty, as a comma-separated list:
// `item(p, end)` reads one item at p, sets *end past it and says whether it is valid. Returns
// false, with a message naming what was `expected`, when an item is invalid or is not followed
// by a comma or the end; `set` says whether the variable gave a list.
template <class Item>
bool env_list(const char* name, const char* expected, bool& set, Item item) {
  const char* env = std::getenv(name);
  set = env != nullptr && *env != '\0';
  for (const char* p = set ? env : ""; *p != '\0';) {
    char* end = nullptr;
    if (!item(p, &end) || (*end != ',' && *end != '\0')) {
      std::fprintf(stderr, "marlin_bench: %s=\"%s\": expected %s separated by commas\n", name,
                   env, expected);
      return false;
    }
    p = *end == ',' ? end + 1 : end;
  }
  return true;
}

// The batch sizes of the gemm/ grid: kBatches, or the list in MARLIN_BENCH_BATCHES (e.g.
// "48,96"). Returns false, with a message, on a malformed list.
bool grid_batches(std::vector<int>& batches) {
  std::vector<int> listed;
  bool set = false;
  const bool ok = env_list("MARLIN_BENCH_BATCHES", "batch sizes 1..65536", set,
                           [&](const char* p, char** end) {
                             const long m = std::strtol(p, end, 10);
                             listed.push_back(static_cast<int>(m));
                             return *end != p && m >= 1 && m <= 65536;
                           });
  if (set) {
    batches = listed;
  } else {
    batches.assign(kBatches.begin(), kBatches.end());
  }
  return ok;
}

// The weight shapes of the gemm/ grid: kShapes, or the list of K x N in MARLIN_BENCH_SHAPES
// (e.g. "2048x8192,4096x1024"). Returns false, with a message, on a malformed list or a shape
// that marlin::can_implement refuses (checked as an empty problem: no device needed).
bool grid_shapes(std::vector<Shape>& shapes) {
  std::vector<Shape> listed;
  bool set = false;
  const bool ok = env_list(
      "MARLIN_BENCH_SHAPES", "K x N pairs that marlin::gemm takes, such as 4096x1024", set,
      [&](const char* p, char** end) {
        const long k = std::strtol(p, end, 10);
        if (*end == p || **end != 'x') return false;
        const char* q = *end + 1;
        const long n = std::strtol(q, end, 10);
        if (*end == q || k < 1 || k > INT32_MAX || n < 1 || n > INT32_MAX) return false;
        marlin::GemmArgs args;
        args.k = static_cast<int>(k);
        args.n = static_cast<int>(n);
        args.group_size = 128;
        if (const marlin::Status st = marlin::can_implement(args); st != marlin::Status::kSuccess) {
          std::fprintf(stderr, "marlin_bench: MARLIN_BENCH_SHAPES: %ldx%ld: %s\n", k, n,
                       marlin::to_string(st));
          return false;
        }
        listed.push_back(Shape{args.k, args.n, "MARLIN_BENCH_SHAPES"});
        return true;
      });
  if (set) {
    shapes = listed;
  } else {
    shapes.assign(kShapes.begin(), kShapes.end());
  }
  return ok;
}

// Shape-major, then group, then m: consecutive cases share their weights (Workload::prepare).
void register_all(const std::vector<Shape>& shapes, const std::vector<int>& batches) {
  for (const Shape& shape : shapes) {
    for (int group : kGroups) {
      for (int m : batches) register_case("gemm", shape, m, group);
    }
  }
  for (const Shape& shape : kQuickShapes) {
    for (int group : kGroups) {
      for (int m : kQuickBatches) register_case("quick", shape, m, group);
    }
  }
}

// Device-to-device copy bandwidth: a 2 GiB cudaMemcpyAsync, bytes read + written, median of 10
// after 3 warm-up copies (MEASURING.md's method). Returns bytes per second.
double measure_copy_bandwidth(cudaStream_t stream) {
  constexpr std::size_t kBytes = std::size_t{2} << 30;
  constexpr int kWarmup = 3, kTimed = 10;
  DeviceBuffer src(kBytes), dst(kBytes);
  cuda_check(cudaMemsetAsync(src.get(), 0x5A, kBytes, stream), "memset");
  cuda_check(cudaMemsetAsync(dst.get(), 0, kBytes, stream), "memset");
  cudaEvent_t start, stop;
  cuda_check(cudaEventCreate(&start), "cudaEventCreate");
  cuda_check(cudaEventCreate(&stop), "cudaEventCreate");
  std::vector<double> seconds;
  for (int i = 0; i < kWarmup + kTimed; ++i) {
    cuda_check(cudaEventRecord(start, stream), "cudaEventRecord");
    cuda_check(cudaMemcpyAsync(dst.get(), src.get(), kBytes, cudaMemcpyDeviceToDevice, stream),
               "cudaMemcpyAsync");
    cuda_check(cudaEventRecord(stop, stream), "cudaEventRecord");
    cuda_check(cudaEventSynchronize(stop), "copy");
    float ms = 0.0f;
    cuda_check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    if (i >= kWarmup) seconds.push_back(1e-3 * ms);
  }
  (void)cudaEventDestroy(start);
  (void)cudaEventDestroy(stop);
  return 2.0 * static_cast<double>(kBytes) / median_of(seconds);
}

// Whether --benchmark_list_tests is on (read before Initialize removes it from argv).
bool list_tests_requested(int argc, char** argv) {
  constexpr const char* kFlag = "--benchmark_list_tests";
  const std::size_t len = std::strlen(kFlag);
  bool on = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], kFlag, len) != 0) continue;
    const char* rest = argv[i] + len;
    if (*rest == '\0') {
      on = true;
    } else if (*rest == '=') {
      const std::string v(rest + 1);
      on = !(v == "false" || v == "0" || v == "no" || v == "f" || v == "n");
    }
  }
  return on;
}

std::string format(const char* fmt, double value) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), fmt, value);
  return buf;
}

}  // namespace
}  // namespace marlin_bench

int main(int argc, char** argv) {
  using namespace marlin_bench;
  const bool list_only = list_tests_requested(argc, argv);
  std::vector<int> batches;
  std::vector<Shape> shapes;
  if (!grid_batches(batches) || !grid_shapes(shapes)) return 2;
  register_all(shapes, batches);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  // No filter (or ".") means the full grid; quick/ repeats part of it and runs only when asked.
  std::string filter = benchmark::GetBenchmarkFilter();
  if (filter.empty() || filter == ".") filter = "^gemm/";

  if (list_only) {
    benchmark::RunSpecifiedBenchmarks(filter);
    benchmark::Shutdown();
    return 0;
  }

  // Diagnostics go to stderr: stdout may be the JSON report (--benchmark_format=json).
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "marlin_bench: no CUDA GPU found; nothing to measure (skipped).\n");
    benchmark::Shutdown();
    return 0;
  }
  cudaDeviceProp prop{};
  int device = 0, driver = 0, runtime = 0, clock_khz = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaGetDeviceProperties(&prop, device) != cudaSuccess ||
      cudaDriverGetVersion(&driver) != cudaSuccess ||
      cudaRuntimeGetVersion(&runtime) != cudaSuccess ||
      cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, device) != cudaSuccess) {
    std::fprintf(stderr, "marlin_bench: cannot query the CUDA device.\n");
    return 1;
  }
  if (prop.major < 8) {
    std::fprintf(stderr, "marlin_bench: %s is sm_%d%d; marlin needs sm_80 or newer (skipped).\n",
                 prop.name, prop.major, prop.minor);
    benchmark::Shutdown();
    return 0;
  }

  int rc = 0;
  try {
    Context ctx;
    g_context = &ctx;
    const char* zero_ws = std::getenv("MARLIN_BENCH_ZERO_WORKSPACE");
    ctx.zero_workspace_per_case = zero_ws != nullptr && *zero_ws != '\0' &&
                                  std::strcmp(zero_ws, "0") != 0;
    const char* isolated = std::getenv("MARLIN_BENCH_ISOLATED");
    ctx.isolated = isolated != nullptr && *isolated != '\0' && std::strcmp(isolated, "0") != 0;
    const char* constant = std::getenv("MARLIN_BENCH_CONSTANT_WEIGHTS");
    ctx.constant_weights =
        constant != nullptr && *constant != '\0' && std::strcmp(constant, "0") != 0;
    // MARLIN_BENCH_CLOCKS=0: no clock sampling (to check that sampling moves no time).
    const char* clocks = std::getenv("MARLIN_BENCH_CLOCKS");
    std::string clock_note = "off (MARLIN_BENCH_CLOCKS=0)";
    if (clocks == nullptr || std::strcmp(clocks, "0") != 0) {
      char bus_id[32] = {};
      cuda_check(cudaDeviceGetPCIBusId(bus_id, sizeof(bus_id), device), "cudaDeviceGetPCIBusId");
      ctx.clocks = std::make_unique<ClockSampler>(bus_id);
      if (ctx.clocks->available()) {
        ctx.timer->set_clock_sampler(ctx.clocks.get());
        clock_note = "NVML, every " + std::to_string(BatchTimer::kClockSamplePeriod.count()) +
                     " us during each timed batch";
      } else {
        clock_note = "unavailable: " + ctx.clocks->why_unavailable();
        std::fprintf(stderr, "marlin_bench: no SM clock samples (%s)\n",
                     ctx.clocks->why_unavailable().c_str());
        ctx.clocks.reset();
      }
    }
    if (ctx.isolated) {
      ensure(ctx.flush, 2 * static_cast<std::size_t>(prop.l2CacheSize) + (16u << 20));
      ensure(ctx.flush_sink, sizeof(int));
      cuda_check(cudaMemsetAsync(ctx.flush.get(), 0, ctx.flush.bytes(), ctx.stream), "memset");
      ctx.flush_blocks = 4 * prop.multiProcessorCount;
    }
    ctx.bandwidth = measure_copy_bandwidth(ctx.stream);
    std::fprintf(stderr,
                 "marlin_bench: %s, %d SMs, L2 %d MiB; device copy bandwidth %.1f GB/s "
                 "(2 GiB device-to-device, read + written, median of 10)\n",
                 prop.name, prop.multiProcessorCount, prop.l2CacheSize >> 20,
                 ctx.bandwidth * 1e-9);

    benchmark::AddCustomContext("device", prop.name);
    benchmark::AddCustomContext("compute_capability",
                                std::to_string(prop.major) + "." + std::to_string(prop.minor));
    benchmark::AddCustomContext("sm_count", std::to_string(prop.multiProcessorCount));
    benchmark::AddCustomContext("l2_bytes", std::to_string(prop.l2CacheSize));
    benchmark::AddCustomContext("global_memory_bytes", std::to_string(prop.totalGlobalMem));
    benchmark::AddCustomContext("peak_sm_clock_mhz", std::to_string(clock_khz / 1000));
    benchmark::AddCustomContext("cuda_driver_version", std::to_string(driver));
    benchmark::AddCustomContext("cuda_runtime_version", std::to_string(runtime));
    benchmark::AddCustomContext("marlin_version", std::to_string(MARLIN_VERSION_MAJOR) + "." +
                                                      std::to_string(MARLIN_VERSION_MINOR) + "." +
                                                      std::to_string(MARLIN_VERSION_PATCH));
    benchmark::AddCustomContext("copy_bandwidth_GBps", format("%.1f", ctx.bandwidth * 1e-9));
    benchmark::AddCustomContext("mma_floor_TFLOPs", format("%.0f", kMmaFlopsPerSecond * 1e-12));
    benchmark::AddCustomContext("rotation_min_bytes", std::to_string(kRotationBytes));
    benchmark::AddCustomContext("workspace_zeroed",
                                ctx.zero_workspace_per_case ? "every case" : "on growth only");
    benchmark::AddCustomContext("timing", ctx.isolated
                                              ? "isolated calls, each after an L2 flush"
                                              : "batches of calls back to back");
    benchmark::AddCustomContext("constant_weights", ctx.constant_weights ? "true" : "false");
    benchmark::AddCustomContext("sm_clock_samples", clock_note);

    benchmark::RunSpecifiedBenchmarks(filter);
    g_context = nullptr;
  } catch (const BenchError& e) {
    std::fprintf(stderr, "marlin_bench: %s\n", e.what());
    g_context = nullptr;
    rc = 1;
  }
  benchmark::Shutdown();
  return rc;
}
