#!/usr/bin/env python3
"""The performance issue's four targets over one marlin_bench JSON report (the gemm/ grid's
medians), as bench/README.md's summary gives them:
  1. M <= 16: time / (1.05 x memory floor + 1.5 us), met at <= 1;
  2. 32 <= M <= 128: time / (1.15 x max(memory, mma.sync floor) + 1.5 us), met at <= 1;
  3. M >= 256: speedup over cuBLAS fp16, met at >= 1;
  4. the error against cuBLAS (fp32 accumulation), met at <= 1.5e-4 with group scales and
     <= 5e-4 per-channel.
    scripts/targets.py bench.json
Prints each target's range, median and the cases that meet it, the medians per M for targets 2
and 3, the SM clock of each target's cases where the report has it, and the host time per
call. Reads the report with bench/plot.py's loader."""
import argparse
import json
import math
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))
from plot import load  # noqa: E402  (bench/plot.py: the reports' one parser)


def span(values):
    return f"{min(values):.2f}-{max(values):.2f}, median {statistics.median(values):.3f}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("report")
    args = parser.parse_args()
    context, loaded, _ = load(args.report, "gemm")
    cases = [dict(c["median"], k=k, n=n, m=m, group=g)
             for (k, n, m, g), c in loaded.items() if "median" in c]
    print(f"copy bandwidth {context.get('copy_bandwidth_GBps', '?')} GB/s, constant weights "
          f"{context.get('constant_weights', '?')}")
    t1, t2, t3, by_m2, by_m3 = [], [], [], {}, {}
    clocks = {1: [], 2: [], 3: []}  # target -> the cases' (sm_mhz, cublas_sm_mhz, power_capped)
    err = {True: [], False: []}
    host, plan = [], []
    for c in cases:
        m, us = c["m"], c["marlin_us"]
        label = f"{c['k']}x{c['n']} m{m} g{c['group']}"
        target = None
        if m <= 16:
            target = 1
            t1.append((us / (1.05 * c["mem_floor_us"] + 1.5), label))
        elif 32 <= m <= 128:
            target = 2
            ratio = us / (1.15 * max(c["mem_floor_us"], c["mma_floor_us"]) + 1.5)
            t2.append((ratio, label))
            by_m2.setdefault(m, []).append(ratio)
        elif m >= 256:
            target = 3
            t3.append((c["cublas_us"] / us, label))
            by_m3.setdefault(m, []).append(c["cublas_us"] / us)
        err[c["group"] != -1].append(c["rel_err_cublas"])
        clock = (c["sm_mhz"], c["cublas_sm_mhz"], c["power_capped"])
        if target is not None and all(math.isfinite(x) for x in clock):
            clocks[target].append(clock)
    if t1:
        values = [r for r, _ in t1]
        met = [f"{lab} {r:.3f}" for r, lab in t1 if r <= 1]
        print(f"target 1: {span(values)}; met {len(met)} of {len(t1)}: {', '.join(met)}")
    if t2:
        values = [r for r, _ in t2]
        medians = ", ".join(f"M={m} {statistics.median(v):.2f}" for m, v in sorted(by_m2.items()))
        print(f"target 2: {span(values)}; met {sum(r <= 1 for r in values)} of {len(t2)}; "
              f"medians {medians}")
    if t3:
        values = [r for r, _ in t3]
        per_m = ", ".join(f"{m} {min(v):.2f}-{max(v):.2f} ({statistics.median(v):.3f})"
                          for m, v in sorted(by_m3.items()))
        print(f"target 3: speedup {span(values)}; met {sum(r >= 1 for r in values)} of "
              f"{len(t3)}; by M {per_m}")
    print(f"target 4: group scales max {max(err[True], default=0):.3g}, per-channel max "
          f"{max(err[False], default=0):.3g}")
    for target, values in clocks.items():
        if values:
            mhz, cublas_mhz, capped = (statistics.median(v) for v in zip(*values))
            print(f"target {target} SM clock: marlin median {mhz:.0f} MHz (cases "
                  f"{min(v[0] for v in values):.0f}-{max(v[0] for v in values):.0f}), cuBLAS "
                  f"{cublas_mhz:.0f} MHz; under the power cap in {100 * capped:.0f} % of "
                  f"marlin's samples (median case)")
    # Host times are not among plot.py's counters: the gemm/ cases' median rows.
    with open(args.report, encoding="utf-8") as f:
        for b in json.load(f).get("benchmarks", []):
            if b.get("name", "").startswith("gemm/") and b.get("aggregate_name") == "median":
                host.append(b["host_us"])
                plan.append(b["plan_host_us"])
    print(f"host us: {min(host):.1f}-{max(host):.1f}, median {statistics.median(host):.1f}; "
          f"planning {min(plan):.2f}-{max(plan):.2f}, median {statistics.median(plan):.2f}")


if __name__ == "__main__":
    main()
