// Timeline of back-to-back marlin::gemm calls, from the per-CTA %globaltimer stamps of an
// instrumented copy of the kernel (instrument.py; run.sh builds and runs both).
//   timeline m n k group
// Rotates weight copies over ~600 MB (so every call streams its weights from DRAM), warms up
// with 20 calls, then times 48 calls back to back on one stream (programmatic dependent
// launch as in any sequence of calls). Prints, for calls 1 and 24, each stamp's min / median /
// p90 / max over the CTAs relative to the call's first entry, then medians over calls 8-47 of
// the median and the last CTA per stamp, the gap between a call's first entry (and first
// wait return) and the previous call's last CTA end, and the entry-to-entry period; then how
// consecutive calls share the SMs under programmatic dependent launch (each CTA's %smid):
// the distribution of the period over calls 8-47, and for the slowest calls how many of their
// CTAs entered while a CTA of the previous call still ran on the same SM; last, how the CTAs'
// runs (wait return to loop end) spread, whether the slow ones are the same SMs or the same
// CTA indices from call to call, and on SMs that ran two CTAs which of the two ended first
// (report_spread; the isolated mode below prints it too).
// Stamps: entry, wait (return of the wait for the previous grid), tile0 (first tile landed),
// loop (main loop done), reduce (in-CTA reduction done), end (tile written).
//   timeline m n k group isolated
// instead times 48 calls each alone, as the benchmark's MARLIN_BENCH_ISOLATED=1 does: every
// call follows a kernel that reads twice the L2 (and does not launch its dependents early) and
// precedes a one-thread marker kernel. Each flush CTA stamps its end and the marker its start,
// so per call the chain from the flush's last CTA end to the marker's start splits into the
// CTA launch (to the first and last entry), the wait, the first tile, the loop, the end and
// the step to the next kernel. The same chain is timed with nothing between flush and marker
// (the bare step from one kernel to the next) and with cuBLAS fp16 (cublasGemmEx, as the
// benchmark calls it) in the call's place; medians over calls 8-47.
// All of it runs twice: issued on the stream, and captured as CUDA graphs (one per pass).
// With MARLIN_TIMELINE_CONSTANT_WEIGHTS=1 in the environment, every call promises
// GemmArgs::constant_weights (its first weight tiles copied before the dependency wait).
//   timeline m n k group light
// is the same with a one-warp kernel that reads nothing in the flush's place: the L2 keeps the
// call's code, A and its last writes (the weights still rotate over ~600 MB, so they come from
// memory), as after a small kernel of a model's step that does not launch its dependents early.
#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <marlin/marlin.cuh>

#include "../../bench/bench_util.cuh"  // read_flush: the benchmark's isolated-mode flush

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#define CK(x)                                                                        \
  do {                                                                               \
    cudaError_t e_ = (x);                                                            \
    if (e_ != cudaSuccess) {                                                         \
      std::printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_));         \
      std::exit(1);                                                                  \
    }                                                                                \
  } while (0)

__global__ void fill(uint32_t* p, size_t n, uint32_t seed, int mode) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    uint32_t h = uint32_t(i) * 2654435761u ^ seed;
    h ^= h >> 13;
    h *= 0x5bd1e995u;
    h ^= h >> 15;
    if (mode == 0) {
      p[i] = h;
    } else {  // two fp16 values: mode 1 in [-1, 1), mode 2 around 0.01
      float a = (h & 0xffff) / 65536.0f, b = (h >> 16) / 65536.0f;
      if (mode == 1) {
        a = 2 * a - 1;
        b = 2 * b - 1;
      } else {
        a = 0.01f + 0.005f * a;
        b = 0.01f + 0.005f * b;
      }
      __half2 v = __floats2half2_rn(a, b);
      p[i] = *reinterpret_cast<uint32_t*>(&v);
    }
  }
}

__device__ __forceinline__ unsigned long long now_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// The benchmark's L2 flush (read_flush over `count` 16-byte words), stamping the end of its
// last CTA into *end.
__global__ void flush_kernel(const int4* p, size_t count, int* sink, unsigned long long* end) {
  marlin_bench::read_flush(p, count, sink);
  __syncthreads();
  if (threadIdx.x == 0) atomicMax(end, now_ns());
}

__global__ void marker_kernel(unsigned long long* stamp) { *stamp = now_ns(); }

static double med(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Pearson correlation of two equally long series (0 when either is constant).
static double correlation(const std::vector<double>& x, const std::vector<double>& y) {
  const size_t n = x.size();
  double mx = 0, my = 0;
  for (size_t i = 0; i < n; ++i) mx += x[i] / n, my += y[i] / n;
  double sxy = 0, sxx = 0, syy = 0;
  for (size_t i = 0; i < n; ++i) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) * (x[i] - mx);
    syy += (y[i] - my) * (y[i] - my);
  }
  return sxx > 0 && syy > 0 ? sxy / std::sqrt(sxx * syy) : 0;
}

// How the CTAs' runs of one back-to-back call spread, and whether the slow ones are the same
// from call to call (bench/NOTES.md, "For the next session": the striped decode calls' loop
// ends spread over several µs). Per CTA and call: its run, from the wait's return (stamp 1)
// to its last loop's end (stamp 3), less the call's median run. Those deviations are averaged
// per SM and per CTA index over the even and over the odd calls of 8-47; the correlation of
// the two halves says how much of the spread belongs to the SM (or to the CTA's place in the
// tile space) rather than to the call. Also the runs of CTAs alone on their SM against those
// that shared it with another CTA of the call; per SM that ran two, when the first and the
// second of them ended their loops and whether the first was the one that entered first
// (bench/NOTES.md, session 38: on the H200 it is, 96-100 % of the time); and the median run
// of CTAs 0 .. SMs - 1 (the first placed on each SM) against the rest.
static void report_spread(const unsigned long long (*tl)[512][10], const int (*sm)[512],
                          int ctas, int launches) {
  constexpr int kSms = 1024;
  std::vector<double> sum_sm[2], sum_cta[2];
  std::vector<int> cnt_sm[2], cnt_cta[2];
  for (int h = 0; h < 2; ++h) {
    sum_sm[h].assign(kSms, 0);
    cnt_sm[h].assign(kSms, 0);
    sum_cta[h].assign(ctas, 0);
    cnt_cta[h].assign(ctas, 0);
  }
  std::vector<double> spread_max, spread_p90, alone, shared;
  for (int l = 8; l < launches; ++l) {
    std::vector<double> run(ctas);
    std::vector<int> per_sm(kSms, 0);
    for (int b = 0; b < ctas; ++b) {
      run[b] = (double(tl[l][b][3]) - double(tl[l][b][1])) / 1000.0;
      ++per_sm[sm[l][b] & (kSms - 1)];
    }
    const double m = med(run);
    std::vector<double> sorted = run;
    std::sort(sorted.begin(), sorted.end());
    spread_max.push_back(sorted.back() - m);
    spread_p90.push_back(sorted[sorted.size() * 9 / 10] - m);
    for (int b = 0; b < ctas; ++b) {
      const int s = sm[l][b] & (kSms - 1), h = l % 2;
      sum_sm[h][s] += run[b] - m;
      ++cnt_sm[h][s];
      sum_cta[h][b] += run[b] - m;
      ++cnt_cta[h][b];
      (per_sm[s] == 1 ? alone : shared).push_back(run[b] - m);
    }
  }
  std::vector<double> even_sm, odd_sm, even_cta, odd_cta, mean_sm;
  std::vector<int> sm_ids;
  for (int s = 0; s < kSms; ++s) {
    if (cnt_sm[0][s] == 0 || cnt_sm[1][s] == 0) continue;
    even_sm.push_back(sum_sm[0][s] / cnt_sm[0][s]);
    odd_sm.push_back(sum_sm[1][s] / cnt_sm[1][s]);
    mean_sm.push_back((sum_sm[0][s] + sum_sm[1][s]) / (cnt_sm[0][s] + cnt_sm[1][s]));
    sm_ids.push_back(s);
  }
  for (int b = 0; b < ctas; ++b) {
    even_cta.push_back(sum_cta[0][b] / std::max(1, cnt_cta[0][b]));
    odd_cta.push_back(sum_cta[1][b] / std::max(1, cnt_cta[1][b]));
  }
  std::printf("  runs (wait return to last loop end) less the call's median, launches 8-%d:\n",
              launches - 1);
  std::printf("    per call, medians: p90 CTA +%5.2f us, slowest CTA +%5.2f us\n",
              med(spread_p90), med(spread_max));
  std::printf("    even/odd calls' mean deviation correlate by SM %5.2f (%zu SMs), by CTA index "
              "%5.2f\n",
              correlation(even_sm, odd_sm), sm_ids.size(), correlation(even_cta, odd_cta));
  std::vector<size_t> order(mean_sm.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return mean_sm[a] > mean_sm[b]; });
  std::printf("    per-SM mean deviation: slowest");
  for (size_t i = 0; i < std::min<size_t>(6, order.size()); ++i)
    std::printf(" %d:%+.2f", sm_ids[order[i]], mean_sm[order[i]]);
  std::printf(" us; fastest");
  for (size_t i = order.size() - std::min<size_t>(3, order.size()); i < order.size(); ++i)
    std::printf(" %d:%+.2f", sm_ids[order[i]], mean_sm[order[i]]);
  std::printf(" us\n    CTAs alone on their SM: %zu runs, median %+.2f us; sharing it: %zu, "
              "median %+.2f us\n",
              alone.size(), med(alone), shared.size(), med(shared));
  // Per SM that ran two CTAs of the call: the first and the second of them to end their loops,
  // and whether the first to end was the one that entered first; per CTA index group (the
  // first CTA per SM the hardware places, 0 .. SMs - 1, and the rest), the median run.
  std::vector<double> first_end, second_end, lone_phase, runs_lo, runs_hi;
  int older_first = 0, pairs = 0;
  const int n_sm = int(sm_ids.size());
  for (int l = 8; l < launches; ++l) {
    std::vector<std::vector<int>> on(kSms);
    unsigned long long wait = ~0ull;
    for (int b = 0; b < ctas; ++b) {
      on[sm[l][b] & (kSms - 1)].push_back(b);
      wait = std::min(wait, tl[l][b][1]);
      (b < n_sm ? runs_lo : runs_hi).push_back((double(tl[l][b][3]) - double(tl[l][b][1])) / 1000.0);
    }
    for (int sid = 0; sid < kSms; ++sid) {
      if (on[sid].size() != 2) continue;
      const int x = on[sid][0], y = on[sid][1];
      const double ex = (double(tl[l][x][3]) - double(wait)) / 1000.0;
      const double ey = (double(tl[l][y][3]) - double(wait)) / 1000.0;
      first_end.push_back(std::min(ex, ey));
      second_end.push_back(std::max(ex, ey));
      lone_phase.push_back(std::fabs(ex - ey));
      const bool x_older = tl[l][x][0] < tl[l][y][0];
      older_first += (ex < ey) == x_older;
      ++pairs;
    }
  }
  if (pairs > 0) {
    std::vector<double> se = second_end, apart = lone_phase;
    std::sort(se.begin(), se.end());
    std::sort(apart.begin(), apart.end());
    std::printf("    SMs with two CTAs (%d SM-calls): loop ends from the first wait return, "
                "medians: first %6.2f us, second %6.2f us; the two %5.2f us apart (p90 %5.2f); "
                "the earlier-entered CTA ended first in %d%%; second ends p10 %6.2f p50 %6.2f "
                "p90 %6.2f max %6.2f us\n",
                pairs, med(first_end), med(second_end), med(apart), apart[apart.size() * 9 / 10],
                100 * older_first / pairs, se[se.size() / 10], se[se.size() / 2],
                se[se.size() * 9 / 10], se.back());
  }
  if (ctas > n_sm) {
    std::printf("    median run of CTAs 0-%d %6.2f us, of CTAs %d-%d %6.2f us\n", n_sm - 1,
                med(runs_lo), n_sm, ctas - 1, med(runs_hi));
  }
}

// Prints run_isolated's results: each stamp from the flush's end, medians over calls 8-47.
static void report_isolated(int m, int n, int k, int g, int launches, bool graph, bool light,
                            const unsigned long long* flush_end, const unsigned long long* mark) {
  std::vector<unsigned long long> fe(3 * launches), mk(3 * launches);
  CK(cudaMemcpy(fe.data(), flush_end, fe.size() * sizeof(fe[0]), cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(mk.data(), mark, mk.size() * sizeof(mk[0]), cudaMemcpyDeviceToHost));
  static unsigned long long tl[64][512][10];
  CK(cudaMemcpyFromSymbol(tl, marlin::kernel::g_tl, sizeof(tl)));
  int ctas = 0;
  while (ctas < 512 && tl[1][ctas][0] != 0) ++ctas;
  std::printf("timeline m=%d n=%d k=%d g=%d %s%s: %d CTAs; medians over calls 8-%d, us "
              "from the %s's last CTA end\n", m, n, k, g, light ? "light" : "isolated",
              graph ? ", in a CUDA graph" : "", ctas, launches - 1,
              light ? "one-warp kernel" : "flush");
  auto us = [](unsigned long long t, unsigned long long t0) { return (double(t) - double(t0)) / 1000.0; };
  std::vector<double> bare, cub, total, first_entry, last_entry, last_end, end_to_marker;
  constexpr int kStamps = 6;
  const char* names[kStamps] = {"entry", "wait", "tile0", "loop", "reduce", "end"};
  std::vector<double> st_med[kStamps], st_last[kStamps];
  for (int l = 8; l < launches; ++l) {
    bare.push_back(us(mk[launches + l], fe[launches + l]));
    cub.push_back(us(mk[2 * launches + l], fe[2 * launches + l]));
    const unsigned long long f = fe[l];
    total.push_back(us(mk[l], f));
    unsigned long long e_min = ~0ull, e_max = 0, end_max = 0;
    for (int b = 0; b < ctas; ++b) {
      e_min = std::min(e_min, tl[l][b][0]);
      e_max = std::max(e_max, tl[l][b][0]);
      end_max = std::max(end_max, tl[l][b][5]);
    }
    first_entry.push_back(us(e_min, f));
    last_entry.push_back(us(e_max, f));
    last_end.push_back(us(end_max, f));
    end_to_marker.push_back(us(mk[l], end_max));
    for (int i = 0; i < kStamps; ++i) {
      std::vector<double> v;
      for (int b = 0; b < ctas; ++b)
        if (tl[l][b][i]) v.push_back(us(tl[l][b][i], f));
      if (v.empty()) continue;
      st_med[i].push_back(med(v));
      st_last[i].push_back(*std::max_element(v.begin(), v.end()));
    }
  }
  std::printf("  end before -> marker: nothing between %6.2f, cuBLAS %6.2f, marlin %6.2f us\n",
              med(bare), med(cub), med(total));
  std::printf("  marlin: first CTA entry %6.2f, last CTA entry %6.2f, last CTA end %6.2f, "
              "last end -> marker %6.2f us\n", med(first_entry), med(last_entry), med(last_end),
              med(end_to_marker));
  for (int i = 0; i < kStamps; ++i) {
    if (st_med[i].empty()) continue;
    std::printf("    %-6s med-CTA %6.2f  last-CTA %6.2f us\n", names[i], med(st_med[i]),
                med(st_last[i]));
  }
  static int sm[64][512];
  CK(cudaMemcpyFromSymbol(sm, marlin::kernel::g_sm, sizeof(sm)));
  report_spread(tl, sm, ctas, launches);
}

// The isolated mode (see the top): flush, call, marker, 48 times; then the same with no call
// and with cuBLAS; all three issued on the stream and then as CUDA graphs.
template <class Launch>
static int run_isolated(int m, int n, int k, int g, int launches, bool light, cudaStream_t st,
                        Launch&& launch) {
  cudaDeviceProp prop{};
  CK(cudaGetDeviceProperties(&prop, 0));
  const size_t flush_bytes = 2 * size_t(prop.l2CacheSize) + (16u << 20);
  int4* flush = nullptr;
  int* sink = nullptr;
  unsigned long long *flush_end = nullptr, *mark = nullptr;
  CK(cudaMalloc(&flush, flush_bytes));
  CK(cudaMemset(flush, 0, flush_bytes));
  CK(cudaMalloc(&sink, sizeof(int)));
  CK(cudaMalloc(&flush_end, 3 * launches * sizeof(unsigned long long)));
  CK(cudaMalloc(&mark, 3 * launches * sizeof(unsigned long long)));
  CK(cudaMemset(flush_end, 0, 3 * launches * sizeof(unsigned long long)));
  // cuBLAS's fp16 weights, rotated over ~600 MB as marlin's; their values do not matter here.
  const size_t w_bytes = size_t(k) * n * 2;
  const int w_copies = int(std::max<size_t>(2, (600ull << 20) / w_bytes));
  std::vector<void*> ws16(w_copies);
  for (int i = 0; i < w_copies; ++i) {
    CK(cudaMalloc(&ws16[i], w_bytes));
    fill<<<1024, 256>>>((uint32_t*)ws16[i], w_bytes / 4, 33 + i, 1);
  }
  void *a16, *c16;
  CK(cudaMalloc(&a16, size_t(m) * k * 2));
  CK(cudaMalloc(&c16, size_t(m) * n * 2));
  fill<<<1024, 256>>>((uint32_t*)a16, size_t(m) * k / 2, 7, 1);
  cublasHandle_t h;
  // A workspace of its own, so that cuBLAS allocates nothing while a graph is captured.
  void* cublas_ws = nullptr;
  const size_t cublas_ws_bytes = 32u << 20;
  CK(cudaMalloc(&cublas_ws, cublas_ws_bytes));
  if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS || cublasSetStream(h, st) != CUBLAS_STATUS_SUCCESS ||
      cublasSetWorkspace(h, cublas_ws, cublas_ws_bytes) != CUBLAS_STATUS_SUCCESS)
    return std::printf("cublas setup failed\n"), 1;
  const float one = 1.0f, zero_f = 0.0f;
  auto cublas_call = [&](int i) {
    // Row-major C = A·W as column-major Cᵀ = Wᵀ·Aᵀ, as bench_gemm.cu.
    if (cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one, ws16[i % w_copies], CUDA_R_16F,
                     n, a16, CUDA_R_16F, k, &zero_f, c16, CUDA_R_16F, n, CUBLAS_COMPUTE_32F,
                     CUBLAS_GEMM_DEFAULT) != CUBLAS_STATUS_SUCCESS) {
      std::printf("cublasGemmEx failed\n");
      std::exit(1);
    }
  };
  for (int i = 0; i < 5; ++i) cublas_call(i);  // loads cuBLAS's kernel before the timed runs
  CK(cudaStreamSynchronize(st));
  const int flush_blocks = 4 * prop.multiProcessorCount;
  // Pass 0: marlin; pass 1: nothing; pass 2: cuBLAS. Issued on the stream, then (`graph`)
  // captured as one CUDA graph per pass and launched once.
  for (const bool graph : {false, true}) {
    std::vector<int> zero(512, 0);
    CK(cudaMemcpyToSymbol(marlin::kernel::g_tl_calls, zero.data(), 512 * sizeof(int)));
    CK(cudaMemset(flush_end, 0, 3 * launches * sizeof(unsigned long long)));
    CK(cudaDeviceSynchronize());
    for (int pass = 0; pass < 3; ++pass) {
      cudaGraph_t g_pass = nullptr;
      if (graph) CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
      for (int l = 0; l < launches; ++l) {
        if (light) {
          flush_kernel<<<1, 32, 0, st>>>(flush, 0, sink, flush_end + pass * launches + l);
        } else {
          flush_kernel<<<flush_blocks, 256, 0, st>>>(flush, flush_bytes / sizeof(int4), sink,
                                                     flush_end + pass * launches + l);
        }
        if (pass == 0) launch(l);
        if (pass == 2) cublas_call(l);
        marker_kernel<<<1, 1, 0, st>>>(mark + pass * launches + l);
      }
      if (graph) {
        CK(cudaStreamEndCapture(st, &g_pass));
        cudaGraphExec_t exec;
        CK(cudaGraphInstantiate(&exec, g_pass, 0));
        CK(cudaGraphUpload(exec, st));
        CK(cudaGraphLaunch(exec, st));
        CK(cudaStreamSynchronize(st));
        CK(cudaGraphExecDestroy(exec));
        CK(cudaGraphDestroy(g_pass));
      }
      CK(cudaStreamSynchronize(st));
    }
    CK(cudaGetLastError());
    report_isolated(m, n, k, g, launches, graph, light, flush_end, mark);
  }
  return 0;
}

int main(int argc, char** argv) {
  const bool light = argc == 6 && std::string(argv[5]) == "light";
  const bool isolated = light || (argc == 6 && std::string(argv[5]) == "isolated");
  if (argc != 5 && !isolated) {
    std::printf("usage: %s m n k group [isolated|light]\n", argv[0]);
    return 1;
  }
  const int m = atoi(argv[1]), n = atoi(argv[2]), k = atoi(argv[3]), g = atoi(argv[4]);
  const int kLaunches = 48;
  const size_t b_bytes = size_t(k) * n / 2, s_bytes = size_t(g == -1 ? 1 : k / g) * n * 2;
  const int copies = int(std::max<size_t>(2, (600ull << 20) / (b_bytes + s_bytes)));
  std::vector<void*> bs(copies), ss(copies);
  for (int i = 0; i < copies; ++i) {
    CK(cudaMalloc(&bs[i], b_bytes));
    CK(cudaMalloc(&ss[i], s_bytes));
    fill<<<1024, 256>>>((uint32_t*)bs[i], b_bytes / 4, 17 + i, 0);
    fill<<<1024, 256>>>((uint32_t*)ss[i], s_bytes / 4, 91 + i, 2);
  }
  void *a, *c;
  CK(cudaMalloc(&a, size_t(m) * k * 2));
  CK(cudaMalloc(&c, size_t(m) * n * 2));
  fill<<<1024, 256>>>((uint32_t*)a, size_t(m) * k / 2, 5, 1);
  // GemmArgs in declaration order: m, n, k, a, b, scales, c, group_size.
  marlin::GemmArgs args{m, n, k, a, bs[0], ss[0], c, g};
  // MARLIN_TIMELINE_CONSTANT_WEIGHTS=1: the caller's promise of GemmArgs::constant_weights (the
  // weights' first tiles are copied before the dependency wait), as the benchmark's
  // MARLIN_BENCH_CONSTANT_WEIGHTS=1.
  const char* constant = std::getenv("MARLIN_TIMELINE_CONSTANT_WEIGHTS");
  args.constant_weights = constant != nullptr && std::string(constant) == "1";
  const size_t ws_bytes = marlin::workspace_bytes(args);
  void* ws = nullptr;
  if (ws_bytes) {
    CK(cudaMalloc(&ws, ws_bytes));
    CK(cudaMemset(ws, 0, ws_bytes));
  }
  cudaStream_t st;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  auto launch = [&](int i) {
    args.b = bs[i % copies];
    args.scales = ss[i % copies];
    if (marlin::gemm<>(args, ws, ws_bytes, st) != marlin::Status::kSuccess) {
      std::printf("gemm failed\n");
      std::exit(1);
    }
  };
  for (int i = 0; i < 20; ++i) launch(i);
  CK(cudaStreamSynchronize(st));
  std::vector<int> zero(512, 0);
  CK(cudaMemcpyToSymbol(marlin::kernel::g_tl_calls, zero.data(), 512 * sizeof(int)));
  if (isolated) return run_isolated(m, n, k, g, kLaunches, light, st, launch);
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  CK(cudaEventRecord(e0, st));
  for (int i = 0; i < kLaunches; ++i) launch(i);
  CK(cudaEventRecord(e1, st));
  CK(cudaStreamSynchronize(st));
  float ms = 0;
  CK(cudaEventElapsedTime(&ms, e0, e1));
  static unsigned long long tl[64][512][10];
  CK(cudaMemcpyFromSymbol(tl, marlin::kernel::g_tl, sizeof(tl)));
  int ctas = 0;
  while (ctas < 512 && tl[1][ctas][0] != 0) ++ctas;
  std::printf("timeline m=%d n=%d k=%d g=%d%s: %d CTAs, %d copies, events %.2f us per call\n", m,
              n, k, g, args.constant_weights ? " constant_weights" : "", ctas, copies,
              1000.0 * ms / kLaunches);
  // Per launch, relative to its earliest entry stamp: medians and max over CTAs of each stamp.
  // 6 and 7 only in the warp-specialized kernel's cluster splits, 8 and 9 only in its push
  // variant (instrument.py); stamps no CTA recorded are left out.
  constexpr int kStamps = 10;
  const char* names[kStamps] = {"entry",  "wait", "tile0",  "loop",   "reduce",
                                "end",    "split1", "split2", "pushed", "summed"};
  std::vector<double> per[kStamps][2], gap_entry, gap_wait, period;
  for (int l = 1; l < kLaunches; ++l) {
    unsigned long long t0 = ~0ull, prev_end = 0, prev_t0 = ~0ull;
    for (int b = 0; b < ctas; ++b) {
      t0 = std::min(t0, tl[l][b][0]);
      prev_t0 = std::min(prev_t0, tl[l - 1][b][0]);
      prev_end = std::max(prev_end, tl[l - 1][b][5]);
    }
    for (int i = 0; i < kStamps; ++i) {
      std::vector<double> v;
      for (int b = 0; b < ctas; ++b)
        if (tl[l][b][i]) v.push_back((double(tl[l][b][i]) - double(t0)) / 1000.0);
      if (v.empty()) continue;
      if (l >= 8) {
        per[i][0].push_back(med(v));
        per[i][1].push_back(*std::max_element(v.begin(), v.end()));
      }
      if (l == 1 || l == 24) {
        std::sort(v.begin(), v.end());
        std::printf("  launch %2d %-6s min %6.2f med %6.2f p90 %6.2f max %6.2f us\n", l, names[i],
                    v[0], v[v.size() / 2], v[v.size() * 9 / 10], v.back());
      }
    }
    if (l >= 8) {
      unsigned long long wmin = ~0ull;
      for (int b = 0; b < ctas; ++b) wmin = std::min(wmin, tl[l][b][1]);
      gap_entry.push_back((double(t0) - double(prev_end)) / 1000.0);
      gap_wait.push_back((double(wmin) - double(prev_end)) / 1000.0);
      period.push_back((double(t0) - double(prev_t0)) / 1000.0);
    }
  }
  std::printf("  steady (launches 8-47), medians over launches:\n");
  for (int i = 0; i < kStamps; ++i) {
    if (per[i][0].empty()) continue;
    std::printf("    %-6s med-CTA %6.2f  last-CTA %6.2f us\n", names[i], med(per[i][0]),
                med(per[i][1]));
  }
  std::printf("    first entry - prev last end %6.2f us; first wait return - prev last end "
              "%6.2f us; entry-to-entry period %6.2f us\n",
              med(gap_entry), med(gap_wait), med(period));

  static int sm[64][512];
  CK(cudaMemcpyFromSymbol(sm, marlin::kernel::g_sm, sizeof(sm)));
  struct Call {
    int launch;
    double period, duration, entry_spread;
    int early;  // CTAs that entered before the previous call's last CTA on their SM ended
  };
  std::vector<Call> calls;
  for (int l = 8; l < kLaunches; ++l) {
    std::vector<unsigned long long> prev_end(1024, 0);  // [smid]
    unsigned long long prev_t0 = ~0ull;
    for (int b = 0; b < ctas; ++b) {
      const int s = sm[l - 1][b] & 1023;
      prev_end[s] = std::max(prev_end[s], tl[l - 1][b][5]);
      prev_t0 = std::min(prev_t0, tl[l - 1][b][0]);
    }
    unsigned long long t0 = ~0ull, last_entry = 0, last_end = 0;
    int early = 0;
    for (int b = 0; b < ctas; ++b) {
      t0 = std::min(t0, tl[l][b][0]);
      last_entry = std::max(last_entry, tl[l][b][0]);
      last_end = std::max(last_end, tl[l][b][5]);
      if (tl[l][b][0] < prev_end[sm[l][b] & 1023]) ++early;
    }
    calls.push_back({l, (double(t0) - double(prev_t0)) / 1000.0,
                     (double(last_end) - double(t0)) / 1000.0,
                     (double(last_entry) - double(t0)) / 1000.0, early});
  }
  std::vector<double> periods;
  for (const Call& c : calls) periods.push_back(c.period);
  std::sort(periods.begin(), periods.end());
  std::printf("  period over launches 8-47: p10 %6.2f  p50 %6.2f  p90 %6.2f  max %6.2f us\n",
              periods[periods.size() / 10], periods[periods.size() / 2],
              periods[periods.size() * 9 / 10], periods.back());
  std::sort(calls.begin(), calls.end(),
            [](const Call& a, const Call& b) { return a.period > b.period; });
  for (size_t i = 0; i < calls.size(); ++i) {
    if (i >= 5 && i + 3 < calls.size()) continue;  // the 5 slowest and the 3 fastest
    const Call& c = calls[i];
    std::printf("    launch %2d: period %6.2f us, first entry to last end %6.2f us, entries "
                "spread over %5.2f us, %3d of %d CTAs entered beside the previous call\n",
                c.launch, c.period, c.duration, c.entry_spread, c.early, ctas);
  }
  report_spread(tl, sm, ctas, kLaunches);
  return 0;
}
