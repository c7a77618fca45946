// marlin_read_probe: how fast the GPU streams each bench layer's packed weights when nothing
// is computed, in back-to-back calls. It bounds what any W4A16 kernel that reads its weights
// after the previous call can reach, and so says which part of target 1 (bench/README.md) is
// reachable at all (bench/NOTES.md, "What an empty read of the weights takes").
//
// Per layer (the 4-bit codes of K x N only, rotated over copies that exceed the L2, as the bench
// rotates them), both under programmatic dependent launch as marlin's kernels run on sm_90:
//  - stream: every thread reads 16-byte vectors of the flat buffer, kInFlight at a time, after
//    prefetching its first lines into L2 before the wait for the previous call;
//  - decode: the decode kernel's access pattern and pipeline without its math: K tiles of the
//    128 x 128 decode tile (8 k16 rows of 1 KB, N / 2 vectors apart) striped over a grid of two
//    CTAs per SM in slice order, kStages cp.async stages, one CTA barrier per tile. Its
//    residency is held to two CTAs per SM, as the decode kernel's is, by unused dynamic shared
//    memory (kDecodePad): with its 32 KB of stages and few registers more would share an SM,
//    which read 0.1-0.7 us slower on six of the nine bench layers (bench/NOTES.md, run 110);
//  - the same decode read with each tile's group-128 scale row as well (256 bytes, one 16-byte
//    copy by each of 16 threads into the tile's stage), as the grouped decode kernel copies it:
//    from pack_scales' layout, rows of all N columns per K group (a slice's rows N * 2 bytes
//    apart), and from a layout that keeps each slice's rows contiguous (one row after the
//    other along K), to tell what the scale rows' reads cost apart from the kernel's math.
// Prints a markdown table: the memory floor of the codes at the measured copy bandwidth (as
// marlin_bench computes it), target 1's bound (1.05 x floor + 1.5 us, for the codes alone), and
// the reads.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <vector>

#include "bench_util.cuh"
#include "marlin/kernel/tile_config.hpp"
#include "marlin/ptx/cp_async.cuh"
#include "marlin/ptx/pdl.cuh"
#include "shapes.hpp"

namespace {

using marlin_bench::cuda_check;

constexpr int kThreads = 256;
constexpr int kInFlight = 4;  // 16-byte loads in flight per thread of `stream_read`
// The decode tile (kTileConfigs[0]: 128 columns x 128 K): 64 vectors per k16 row, 8 rows.
constexpr marlin::TileConfig kTile = marlin::kTileConfigs[0];
constexpr int kRowVecs = kTile.tile_n() / 2;          // 16-byte vectors per k16 row: 64
constexpr int kTileVecs = kTile.k_blocks * kRowVecs;  // 512
constexpr int kTileN = kTile.tile_n(), kTileK = kTile.tile_k();
static_assert(kRowVecs == 64 && kTileVecs % kThreads == 0, "the decode tile's 8 KB");

// Unused dynamic shared memory of decode_read, so that with its 32 KB of stages at most two of
// its CTAs fit an SM (80 KB each of 228 KB), as at most two of the decode kernel's do.
constexpr int kDecodePad = 48 * 1024;

__device__ int g_sink;  // keeps the reads live

/// Where decode_read finds each tile's scale row, if it reads them.
enum class ScaleRows {
  kNone,
  kByGroup,  ///< [k / 128][n] fp16, as pack_scales lays them out: a slice's rows n * 2 bytes apart
  kBySlice,  ///< [n / 128][k / 128][128] fp16: a slice's rows one after the other
};

/// Reads `n_vec` vectors of `p`, grid-strided, kInFlight loads per thread in flight.
__global__ void __launch_bounds__(kThreads) stream_read(const int4* __restrict__ p,
                                                        long long n_vec) {
  marlin::ptx::launch_dependents();
  const long long stride = static_cast<long long>(gridDim.x) * kThreads;
  long long i = static_cast<long long>(blockIdx.x) * kThreads + threadIdx.x;
  if (threadIdx.x % 8 == 0) {  // one prefetch per 128-byte line of the first two rounds
    for (int u = 0; u < 2 * kInFlight && i + u * stride < n_vec; ++u) {
      marlin::ptx::prefetch_l2(p + i + u * stride);
    }
  }
  marlin::ptx::grid_dependency_wait();
  int acc = 0;
  for (; i + (kInFlight - 1) * stride < n_vec; i += kInFlight * stride) {
    int4 v[kInFlight];  // [load in flight]
#pragma unroll
    for (int u = 0; u < kInFlight; ++u) v[u] = __ldcs(p + i + u * stride);
#pragma unroll
    for (int u = 0; u < kInFlight; ++u) acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
  }
  for (; i < n_vec; i += stride) {
    const int4 v = __ldcs(p + i);
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x2468ace0) g_sink = acc;
}

/// Reads the K tiles of the decode tile over a k x n packed layout ([k / 16][n / 2] vectors),
/// striped over the grid in slice order, through a kStages-deep cp.async pipeline. As in the
/// decode kernel, each thread's copy addresses advance by a constant per tile and the loop is
/// unrolled over the stages, so that the probe's own index arithmetic stays off the path.
/// With kRows other than kNone, threads 0-15 also copy each tile's scale row (kRowScaleVecs
/// vectors of `scales`) into the tile's stage.
template <ScaleRows kRows>
__global__ void __launch_bounds__(kThreads, 2) decode_read(const int4* __restrict__ b,
                                                           const int4* __restrict__ scales, int n,
                                                           int k) {
  constexpr int kRowScaleVecs = kTileN * 2 / 16;  // a tile's scale row: 16 vectors
  __shared__ int4 stages[marlin::kStages][kTileVecs];  // [stage][k16 row][vector]
  __shared__ int4 scale_stages[marlin::kStages][kRowScaleVecs];  // [stage][vector]
  constexpr int kAhead = marlin::kStages - 1;
  constexpr int kPerThread = kTileVecs / kThreads;
  marlin::ptx::launch_dependents();
  const int k_tiles = k / kTileK;
  const long long total = static_cast<long long>(k_tiles) * (n / kTileN);
  const long long per_cta = (total + gridDim.x - 1) / gridDim.x;
  const long long begin = per_cta * blockIdx.x;
  const long long count = min(total, begin + per_cta) - begin;
  const int t = static_cast<int>(threadIdx.x);
  const std::size_t tile_step = static_cast<std::size_t>(kTile.k_blocks) * (n / 2);
  // The next tile to load, (slice, kt), and its first vector (row 0, column 0 of the tile).
  int slice = static_cast<int>(begin / k_tiles), kt = static_cast<int>(begin % k_tiles);
  const int4* next = b + kt * tile_step + static_cast<std::size_t>(slice) * kRowVecs;
  // The next tile's scale row: its K group's row of all n columns, or the slice's kt-th row.
  const std::size_t group_step = static_cast<std::size_t>(n) * 2 / 16;
  const int4* next_scales =
      kRows == ScaleRows::kByGroup
          ? scales + kt * group_step + static_cast<std::size_t>(slice) * kRowScaleVecs
          : scales + static_cast<std::size_t>(begin) * kRowScaleVecs;
  auto offset = [&](int j) {  // this thread's vector t + j * kThreads within a tile
    const int v = t + j * kThreads;
    return static_cast<std::size_t>(v / kRowVecs) * (n / 2) + v % kRowVecs;
  };
  if (t % 8 == 0) {  // the first tiles' lines into L2 before the wait (assumes one slice)
    for (int u = 0; u < kAhead && u < count; ++u) {
      for (int j = 0; j < kPerThread; ++j) marlin::ptx::prefetch_l2(next + u * tile_step + offset(j));
    }
  }
  marlin::ptx::grid_dependency_wait();
  auto load = [&](int stage) {
#pragma unroll
    for (int j = 0; j < kPerThread; ++j) {
      marlin::ptx::cp_async_cg_16(&stages[stage][t + j * kThreads], next + offset(j), true);
    }
    if constexpr (kRows != ScaleRows::kNone) {
      if (t < kRowScaleVecs) {
        marlin::ptx::cp_async_cg_16(&scale_stages[stage][t], next_scales + t, true);
      }
    }
    if (++kt == k_tiles) {
      kt = 0;
      ++slice;
      next = b + static_cast<std::size_t>(slice) * kRowVecs;
      if constexpr (kRows == ScaleRows::kByGroup) {
        next_scales = scales + static_cast<std::size_t>(slice) * kRowScaleVecs;
      }
    } else {
      next += tile_step;
      if constexpr (kRows == ScaleRows::kByGroup) next_scales += group_step;
    }
    if constexpr (kRows == ScaleRows::kBySlice) next_scales += kRowScaleVecs;
  };
#pragma unroll
  for (int u = 0; u < kAhead; ++u) {
    if (u < count) load(u);
    marlin::ptx::cp_async_commit_group();
  }
  int acc = 0;
  for (long long u0 = 0; u0 < count; u0 += marlin::kStages) {
#pragma unroll
    for (int s = 0; s < marlin::kStages; ++s) {
      const long long u = u0 + s;
      if (u < count) {
        marlin::ptx::cp_async_wait_group<kAhead - 1>();
        __syncthreads();  // tile u landed for all threads; tile u - 1's stage is free
        if (u + kAhead < count) load((s + kAhead) % marlin::kStages);
        marlin::ptx::cp_async_commit_group();
        const int4 x = stages[s][t];
        acc ^= x.x ^ x.y ^ x.z ^ x.w;
        if constexpr (kRows != ScaleRows::kNone) acc ^= scale_stages[s][t % kRowScaleVecs].x;
      }
    }
  }
  if (acc == 0x2468ace0) g_sink = acc;
}

/// Launches `kernel` with programmatic stream serialization where the device has it (sm_90+).
template <class... Args>
void launch(bool pdl, int grid, int smem, void (*kernel)(Args...), Args... args) {
  cudaLaunchConfig_t config{};
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  config.gridDim = dim3(static_cast<unsigned>(grid));
  config.blockDim = dim3(kThreads);
  config.dynamicSmemBytes = static_cast<std::size_t>(smem);
  config.attrs = &attr;
  config.numAttrs = pdl ? 1 : 0;
  cuda_check(cudaLaunchKernelEx(&config, kernel, args...), "cudaLaunchKernelEx");
}

/// Microseconds per call of `calls` back-to-back calls of `call(i)` (after 5 untimed ones),
/// the median of 5 such batches.
template <class Call>
double us_per_call(Call call) {
  constexpr int kCalls = 40, kBatches = 5;
  cudaEvent_t start, stop;
  cuda_check(cudaEventCreate(&start), "cudaEventCreate");
  cuda_check(cudaEventCreate(&stop), "cudaEventCreate");
  std::vector<double> us;
  int i = 0;
  for (int w = 0; w < 5; ++w) call(i++);
  for (int batch = 0; batch < kBatches; ++batch) {
    cuda_check(cudaEventRecord(start), "cudaEventRecord");
    for (int c = 0; c < kCalls; ++c) call(i++);
    cuda_check(cudaEventRecord(stop), "cudaEventRecord");
    cuda_check(cudaEventSynchronize(stop), "batch");
    float ms = 0.0f;
    cuda_check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    us.push_back(1e3 * ms / kCalls);
  }
  (void)cudaEventDestroy(start);
  (void)cudaEventDestroy(stop);
  std::sort(us.begin(), us.end());
  return us[us.size() / 2];
}

/// Device copy bandwidth as marlin_bench measures it: a 2 GiB device-to-device copy, bytes
/// read plus written over the median time of 10.
double copy_bandwidth() {
  constexpr std::size_t kBytes = std::size_t{2} << 30;
  marlin_bench::DeviceBuffer src(kBytes), dst(kBytes);
  cuda_check(cudaMemset(src.get(), 0x5A, kBytes), "cudaMemset");
  const double us = us_per_call([&](int) {
    cuda_check(cudaMemcpyAsync(dst.get(), src.get(), kBytes, cudaMemcpyDeviceToDevice),
               "cudaMemcpyAsync");
  });
  return 2.0 * static_cast<double>(kBytes) / (1e-6 * us);
}

int run() {
  int device = 0, sms = 0, major = 0;
  cuda_check(cudaGetDevice(&device), "cudaGetDevice");
  cuda_check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "attribute");
  cuda_check(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device),
             "attribute");
  const bool pdl = major >= 9;
  for (auto kernel : {decode_read<ScaleRows::kNone>, decode_read<ScaleRows::kByGroup>,
                      decode_read<ScaleRows::kBySlice>}) {
    cuda_check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    kDecodePad),
               "cudaFuncSetAttribute");
  }
  const double bandwidth = copy_bandwidth();
  std::printf("copy bandwidth %.1f GB/s; %d SMs; programmatic dependent launch %s\n\n",
              bandwidth / 1e9, sms, pdl ? "on" : "off (before sm_90)");
  std::printf("| shape K×N | codes MB | floor µs | 1.05 floor + 1.5 µs | stream read µs (grid) "
              "| decode-pattern read µs | with scale rows µs: floor, by group, by slice |\n"
              "|---|---:|---:|---:|---:|---:|---|\n");
  for (const marlin_bench::Shape& s : marlin_bench::kShapes) {
    const std::size_t bytes = static_cast<std::size_t>(s.k) * s.n / 2;
    const int copies = marlin_bench::rotation_copies(bytes);
    marlin_bench::DeviceBuffer codes(bytes * copies);
    cuda_check(cudaMemset(codes.get(), 0x37, bytes * copies), "cudaMemset");
    auto copy = [&](int i) { return codes.at<const int4>((i % copies) * bytes); };
    // One group-128 scale row per K tile and 128 columns, rotated with the codes.
    const std::size_t scale_bytes = static_cast<std::size_t>(s.k / 128) * s.n * 2;
    marlin_bench::DeviceBuffer scales(scale_bytes * copies);
    cuda_check(cudaMemset(scales.get(), 0x21, scale_bytes * copies), "cudaMemset");
    auto scale_copy = [&](int i) { return scales.at<const int4>((i % copies) * scale_bytes); };
    const long long n_vec = static_cast<long long>(bytes / 16);
    double stream_us = 0.0;
    int stream_grid = 0;
    for (int per_sm : {2, 4}) {  // the best of two grids
      const double us = us_per_call(
          [&](int i) { launch(pdl, per_sm * sms, 0, stream_read, copy(i), n_vec); });
      if (stream_grid == 0 || us < stream_us) {
        stream_us = us;
        stream_grid = per_sm * sms;
      }
    }
    auto decode_us = [&](auto kernel) {
      return us_per_call([&](int i) {
        launch(pdl, 2 * sms, kDecodePad, kernel, copy(i), scale_copy(i), s.n, s.k);
      });
    };
    const double plain_us = decode_us(decode_read<ScaleRows::kNone>);
    const double by_group_us = decode_us(decode_read<ScaleRows::kByGroup>);
    const double by_slice_us = decode_us(decode_read<ScaleRows::kBySlice>);
    const double floor_us = 1e6 * static_cast<double>(bytes) / bandwidth;
    const double scaled_floor_us = 1e6 * static_cast<double>(bytes + scale_bytes) / bandwidth;
    std::printf("| %d×%d | %.1f | %.2f | %.2f | %.2f (%d) | %.2f | %.2f, %.2f, %.2f |\n", s.k,
                s.n, bytes / 1e6, floor_us, 1.05 * floor_us + 1.5, stream_us, stream_grid,
                plain_us, scaled_floor_us, by_group_us, by_slice_us);
  }
  cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  return 0;
}

}  // namespace

int main() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::printf("marlin_read_probe: no CUDA device\n");
    return 0;
  }
  try {
    return run();
  } catch (const marlin_bench::BenchError& e) {
    std::printf("marlin_read_probe: %s\n", e.what());
    return 1;
  }
}
