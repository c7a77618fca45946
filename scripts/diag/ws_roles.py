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
    ws_roles.py {feed|compute|check} <include-dir>    (feed, compute: edits it in place)
Fails, naming the anchor, when the kernel source no longer has a line it edits."""
import sys


def insert(text, anchor, before="", after=""):
    if text.count(anchor) != 1:
        sys.exit(f"ws_roles.py: anchor found {text.count(anchor)} times, not once: {anchor!r}")
    return text.replace(anchor, before + anchor + after)


def edit(mode, text):
    if mode == "feed":
        # Skip each stage's dequantization and wgmmas; release the previous stage as they would.
        release = ("          if (u > 0) "
                   "ptx::mbarrier_arrive(&empty_bar[(s + kDepth - 1) % kDepth]);\n")
        text = insert(text, "#pragma unroll\n          for (int half = 0; half < 2; ++half) {\n",
                      before="          (void)b_tile;\n          (void)a_tile;\n" + release +
                             "          if constexpr (false)\n")
        return insert(text, "  uint32_t frags[2][2][kStrips][4];",
                      before="  detail_kernel::zero(acc);\n")
    # compute: a plain arrival completes the stage's phase (the barrier expects one arrival).
    indent = " " * 14
    text = insert(text, indent + "ptx::mbarrier_arrive_expect_tx(&full_bar[s], kStageBytes);\n",
                  before=indent + "ptx::mbarrier_arrive(&full_bar[s]);\n" +
                         indent + "if constexpr (false) {\n")
    last_copy = " " * 36 + "kt * G::kTileK / kGroupSize, &full_bar[s]);\n" + indent + "}\n"
    return insert(text, last_copy, after=indent + "}\n")

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
