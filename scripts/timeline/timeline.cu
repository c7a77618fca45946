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
// CTAs entered while a CTA of the previous call still ran on the same SM.
// Stamps: entry, wait (return of the wait for the previous grid), tile0 (first tile landed),
// loop (main loop done), reduce (in-CTA reduction done), end (tile written).
#include <cuda_runtime.h>
#include <marlin/marlin.cuh>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
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

static double med(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int main(int argc, char** argv) {
  if (argc != 5) {
    std::printf("usage: %s m n k group\n", argv[0]);
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
  std::printf("timeline m=%d n=%d k=%d g=%d: %d CTAs, %d copies, events %.2f us per call\n", m, n,
              k, g, ctas, copies, 1000.0 * ms / kLaunches);
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
  return 0;
}
