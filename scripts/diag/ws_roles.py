#!/usr/bin/env python3
"""Edits a copy of marlin's headers so that the warp-specialized kernel (gemm_kernel_ws) runs
only one of its two roles, for timing each apart (bench/NOTES.md, session 27: the 32-row tile
at M = 17-32 taken apart). The results of such a build are wrong by design; only its times
mean something.
  feed     the computing warpgroups wait for each stage's `full` barrier and release the stage
           as the kernel does, without dequantizing or multiplying (accumulators zeroed; the
           epilogues run as they are): the time of the tensor copies alone.
  compute  the copy thread arrives on each stage's `full` barrier without copying anything, so
           the computing warpgroups dequantize and multiply whatever the stages hold: the time
           of the computing warps alone.
  check    both edits in memory, nothing written: whether the kernel still has their anchors
           (a CTest runs it, so that a kernel edit that moves them is noticed).
  compile  both edits on copies of the headers under <work-dir>, each compiled for sm_90a
           with <nvcc> on a few of the kernel's instances (a CTest runs it where the build
           targets sm_90a: an edit that still finds its anchors may no longer compile).
    ws_roles.py {feed|compute|check} <include-dir>    (feed, compute: edits it in place)
    ws_roles.py compile <include-dir> <nvcc> <work-dir>
Fails, naming the anchor or showing the compiler's errors, when an edit no longer applies."""
import shutil
import subprocess
import sys


def insert(text, anchor, before="", after=""):
    if text.count(anchor) != 1:
        sys.exit(f"ws_roles.py: anchor found {text.count(anchor)} times, not once: {anchor!r}")
    return text.replace(anchor, before + anchor + after)


def edit(mode, text):
    if mode == "feed":
        # Skip each stage's dequantization and wgmmas; release the previous stage as they would.
        release = ("      if (u > 0) "
                   "ptx::mbarrier_arrive(&empty_bar[(s + kDepth - 1) % kDepth]);\n")
        text = insert(text, "#pragma unroll\n      for (int half = 0; half < 2; ++half) {\n",
                      before="      (void)b_tile;\n      (void)a_desc;\n" + release +
                             "      if constexpr (false) {\n")
        text = insert(text, "        if (half == 0 && u > 0) "
                            "ptx::mbarrier_arrive(&empty_bar[(s + kDepth - 1) % kDepth]);\n"
                            "      }\n",
                      after="      }\n")
        return insert(text, "  uint32_t frags[2][2][kStrips][4];",
                      before="  detail_kernel::zero(acc);\n")
    # compute: a plain arrival completes the stage's phase (the barrier expects one arrival).
    indent = " " * 14
    text = insert(text, indent + "ptx::mbarrier_arrive_expect_tx(&full_bar[s], kStageBytes);\n",
                  before=indent + "ptx::mbarrier_arrive(&full_bar[s]);\n" +
                         indent + "if constexpr (false) {\n")
    last_copy = " " * 36 + "kt * G::kTileK / kGroupSize, &full_bar[s]);\n" + indent + "}\n"
    return insert(text, last_copy, after=indent + "}\n")


# Instances for `compile`: the 32-row tile plain and pushing and the 64-row tile (four computing
# warpgroups each), the 256-row tile (two), both scale modes.
INSTANCES = ((2, 16, "true", "false"), (2, 16, "false", "true"), (4, 16, "false", "false"),
             (16, 8, "true", "false"))


def compile_edits(include, nvcc, work):
    unit = f"{work}/ws_instances.cu"
    shutil.rmtree(work, ignore_errors=True)
    for m in ("feed", "compute"):
        shutil.copytree(include, f"{work}/{m}/include")
        path = f"{work}/{m}/include/marlin/kernel/gemm_kernel_ws.cuh"
        text = open(path, encoding="utf-8").read()
        open(path, "w", encoding="utf-8").write(edit(m, text))
    with open(unit, "w", encoding="utf-8") as f:
        f.write('#include "marlin/marlin.cuh"\n')
        for mb, nb, grouped, push in INSTANCES:
            f.write(f"template __global__ void marlin::kernel::gemm_kernel_ws<{mb}, {nb}, "
                    f"{grouped}, {push}>(const __grid_constant__ marlin::kernel::WsParams);\n")
    for m in ("feed", "compute"):
        run = subprocess.run([nvcc, "-std=c++17", "-O3", "-DNDEBUG",
                              "--generate-code=arch=compute_90a,code=[sm_90a]", "-cubin",
                              "-I", f"{work}/{m}/include", "-o", f"{work}/{m}.cubin", unit],
                             capture_output=True, text=True)
        if run.returncode != 0:
            sys.exit(f"ws_roles.py: the {m} build does not compile:\n{run.stdout}{run.stderr}")
    print(f"ws_roles.py: the feed and compute builds compile ({len(INSTANCES)} instances each)")


if len(sys.argv) == 5 and sys.argv[1] == "compile":
    compile_edits(sys.argv[2], sys.argv[3], sys.argv[4])
    sys.exit(0)
if len(sys.argv) != 3 or sys.argv[1] not in ("feed", "compute", "check"):
    sys.exit(__doc__)
mode, include = sys.argv[1], sys.argv[2]
path = f"{include}/marlin/kernel/gemm_kernel_ws.cuh"
source = open(path, encoding="utf-8").read()
if mode == "check":
    for m in ("feed", "compute"):
        edit(m, source)
    print("ws_roles.py: every anchor found once")
else:
    open(path, "w", encoding="utf-8").write(edit(mode, source))
