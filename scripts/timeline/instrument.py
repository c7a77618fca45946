#!/usr/bin/env python3
"""Writes a copy of marlin's headers whose GEMM kernel stamps %globaltimer per CTA, for
timeline.cu. Thread 0 of every CTA records, per call (the CTA's own call count, up to 64):
0 entry, 1 the return of the wait for the previous grid, 2 the first tile landed, 3 the main
loop done, 4 the in-CTA reduction done (in the warp-specialized push variant: its sums in the
output tile, before its C stores), 5 the tile written (C, exchange or partial); in the
warp-specialized kernel's cluster splits also 6 the first cluster barrier passed and 7 just
before the last one (a split of 2: its pushes issued; 3 or more: its sum and C stores done;
the push variant of 3 or more, which has no last barrier: the others' vectors received); in
the push variant also 8 its own vectors pushed (before its wait) and 9 its own sums in the
output tile (before the CTA barrier that stamp 4 follows); and the SM it ran on (%smid, g_sm).
The mma.sync kernel keeps its stamps in shared memory and writes them at its end; the
warp-specialized kernel's stamps wait for the atomic that gives the call index (~0.5 µs on a
call that does not overlap the previous one; bench/NOTES.md, session 37).
    instrument.py <include-dir> <out-dir>    (out-dir/marlin/... is replaced)
Fails, naming the anchor, when the kernel source no longer has a line it instruments."""
import shutil
import sys

src, dst = sys.argv[1], sys.argv[2]
shutil.rmtree(dst, ignore_errors=True)
shutil.copytree(src, dst)
path = f"{dst}/marlin/kernel/gemm_kernel.cuh"
text = open(path, encoding="utf-8").read()


def insert(anchor, before="", after=""):
    global text
    if text.count(anchor) != 1:
        sys.exit(f"instrument.py: anchor found {text.count(anchor)} times, not once: {anchor!r}")
    text = text.replace(anchor, before + anchor + after)


STAMPS = """}  // namespace marlin::kernel
namespace marlin::kernel {
__device__ unsigned long long g_tl[64][512][10];  // [call][CTA][stamp], ns
__device__ int g_tl_calls[512];                   // calls seen per CTA index
__device__ int g_sm[64][512];                     // [call][CTA]: the SM it ran on
__device__ __forceinline__ unsigned long long tl_now() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
__device__ __forceinline__ int tl_smid() {
  int sm;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
  return sm;
}
}  // namespace marlin::kernel
#define TL_BY(thread, i)                                                              \\
  do {                                                                                \\
    if (threadIdx.x == (thread) && tl_call < 64) g_tl[tl_call][blockIdx.x][i] = tl_now(); \\
  } while (0)
#define TL(i) TL_BY(0, i)
#define TLS(i)                                       \\
  do {                                               \\
    if (threadIdx.x == 0) tl_sh[i] = tl_now();       \\
  } while (0)
namespace marlin::kernel {
"""
insert("template <int kMBlocks, int kNBlocks, int kKBlocks, bool kGrouped, bool kWgmma,\n"
       "          bool kEightRows = false, DecodePipeline kPipeline = DecodePipeline::kCtaWide>\n"
       "__global__", before=STAMPS)
# The mma.sync kernel keeps its stamps in shared memory (TLS) and writes them, with its SM, once
# at its end: a stamp that waited for the call index's atomic would delay the CTA's start by
# that atomic's round trip (~0.5 µs when the call is not overlapped with the previous one).
insert("  using G = Geometry<kMBlocks, kNBlocks, kKBlocks, kGrouped, kWgmma, kPipeline>;\n"
       "  extern __shared__ int4 smem_raw[];\n",
       after="  __shared__ unsigned long long tl_sh[10];\n"
             "  if (threadIdx.x == 0) {\n"
             "    for (int i = 0; i < 10; ++i) tl_sh[i] = 0;\n"
             "  }\n")
insert("  ptx::launch_dependents();\n",
       after="  int tl_call = 0;\n"
             "  if (threadIdx.x == 0) tl_call = atomicAdd(&g_tl_calls[blockIdx.x], 1);\n"
             "  TLS(0);\n")
insert("      ptx::grid_dependency_wait();\n", after="      TLS(1);\n")
insert("          auto issue_copies", before="          if (t == 0) TLS(2);\n")
insert("    __syncthreads();  // the pipeline's shared memory becomes the reduction tile\n",
       after="    TLS(3);\n")
insert("    write_tile<G, kRedTiles>(params, sh_red, sh_exchange, slice, k_begin, k_end, rows,\n"
       "                             is_last_arrival);\n",
       before="    TLS(4);\n", after="    TLS(5);\n")
insert("#else\n  (void)params;\n  MARLIN_UNSUPPORTED_ARCH();\n#endif\n}",
       before="  if (threadIdx.x == 0 && tl_call < 64) {\n"
              "    for (int i = 0; i < 10; ++i) g_tl[tl_call][blockIdx.x][i] = tl_sh[i];\n"
              "    g_sm[tl_call][blockIdx.x] = tl_smid();\n"
              "  }\n")
open(path, "w", encoding="utf-8").write(text)

# The warp-specialized kernel: the same stamps, recorded by the first computing thread (thread
# 128); 2 and 3 are those of the CTA's last segment, 4 is the in-CTA reduction done (in a
# striped segment: its arrival on its slice's counter), 5 the segment written (or, for a CTA
# that does not sum a striped slice, its partial stored).
path = f"{dst}/marlin/kernel/gemm_kernel_ws.cuh"
text = open(path, encoding="utf-8").read()
insert("template <int kMBlocks, int kNBlocks, bool kGrouped, bool kPush = false>\n__global__",
       before="#define TLW(i) TL_BY(128, i)\n")
insert("  const int tid = static_cast<int>(threadIdx.x);\n  // The role",
       after="\n  int tl_call = 0;\n"
             "  if (threadIdx.x == 128) tl_call = atomicAdd(&g_tl_calls[blockIdx.x], 1);\n"
             "  TLW(0);\n"
             "  if (threadIdx.x == 128 && tl_call < 64) g_sm[tl_call][blockIdx.x] = tl_smid();\n"
             "  // The role")
insert("  ptx::grid_dependency_wait();  // before A, the scales, the workspace or C are touched\n",
       after="  TLW(1);\n")
insert("      ptx::mbarrier_wait_parity(&full_bar[s], (full_parity >> s) & 1);\n",
       after="      if (u == 0) TLW(2);\n")
insert("    ptx::wgmma_wait_group<0>();\n", after="    TLW(3);\n")
insert("    const int col0 = n_tile * G::kTileN;\n", before="    TLW(4);\n")
insert("participants;\n      }\n      ptx::named_barrier_sync(1, kComputeThreads);\n",
       after="      TLW(4);\n")
insert("        continue;  // the stages were released above\n", before="        TLW(5);\n")
# The split ends step by step (bench/NOTES.md, session 24 runs 131-132): 6 after the first
# cluster barrier of a split's sum, 7 before its last one.
insert("        ptx::cluster_sync();  // both CTAs are past their loops: their stages may be "
       "written\n", after="        TLW(6);\n")
insert("        ptx::cluster_sync();  // the other rank's vectors have landed\n",
       before="        TLW(7);\n")
insert("      ptx::cluster_sync();\n      const int ranks = part.split;\n",
       after="      TLW(6);\n")
insert("      // No CTA leaves while another still reads its shared memory.",
       before="      TLW(7);\n")
insert("      ptx::cluster_wait();  // every rank has started: its received_bar is initialized\n",
       after="      TLW(6);\n")
insert("      ptx::mbarrier_wait_parity<ptx::WaitScope::kCluster>(&received_bar, 0);\n",
       before="      TLW(8);\n", after="      TLW(7);\n")
insert("      ptx::named_barrier_sync(1, kComputeThreads);\n"
       "      // This rank's rows of C: per owned vector", before="      TLW(9);\n")
insert("      // This rank's rows of C: per owned vector", before="      TLW(4);\n")
insert("    // The reduction tile has been read: the copy thread may refill the stages.\n"
       "    ptx::named_barrier_sync(1, kComputeThreads);\n"
       "    if (ctid == 0) ptx::mbarrier_arrive(&red_done_bar);\n", after="    TLW(5);\n")
open(path, "w", encoding="utf-8").write(text)
