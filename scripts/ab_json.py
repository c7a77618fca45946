#!/usr/bin/env python3
"""Same-call A/B of marlin_bench JSON reports: per case, the variant's median time over the
base's in each pass (`raw`), the same ratio normalized by cuBLAS in the same case (`norm`:
(marlin / cuBLAS) of the variant over that of the base; at M >= 1024, and on the largest layers
from M = 128, the GPU's power cap and state move marlin and cuBLAS together between passes),
marlin's SM clock in each pass as base/variant MHz where the reports have it (`sm_mhz`) with
the ratio of cycles (time x clock, `cyc`: what a clock-bound call's ratio is at equal clocks),
and the plan labels where they differ. Then medians over the cases whose plan moved and over
the others (of cycles too, over the cases with clocks), and the cuBLAS control.
    scripts/ab_json.py base1.json var1.json [base2.json var2.json ...] [--moved] [--family F]
Passes are pairs (base, variant) run in the same call, best in both orders; --moved prints
only the cases whose plan label differs; --family picks the bench family (default gemm).
Reads the reports with bench/plot.py's loader (standard library only)."""
import argparse
import math
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))
from plot import load  # noqa: E402  (bench/plot.py: the reports' one parser)


def plan_of(case):
    return case["label"].split(" copies")[0]


def summary(name, values):
    if not values:
        return f"{name}: none"
    return (f"{name}: median x{statistics.median(values):.4f} (min {min(values):.3f}, "
            f"max {max(values):.3f}), {len(values)} cases")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("reports", nargs="+", help="base1 var1 [base2 var2 ...]")
    parser.add_argument("--moved", action="store_true", help="only cases whose plan moved")
    parser.add_argument("--family", default="gemm")
    args = parser.parse_args()
    if len(args.reports) % 2:
        parser.error("reports come in pairs: base, variant")
    reports = [load(path, args.family)[1] for path in args.reports]
    passes = list(zip(reports[0::2], reports[1::2]))
    base0, var0 = passes[0]
    raw_moved, raw_same, norm_moved, norm_same, control = [], [], [], [], []
    cyc_moved, cyc_same = [], []
    for key in base0:
        if not all("median" in b.get(key, {}) and "median" in v.get(key, {}) for b, v in passes):
            continue  # missing, or an error in some pass
        pairs = [(b[key]["median"], v[key]["median"]) for b, v in passes]
        raw = [v["marlin_us"] / b["marlin_us"] for b, v in pairs]
        norm = [(v["marlin_us"] / v["cublas_us"]) / (b["marlin_us"] / b["cublas_us"])
                for b, v in pairs]
        control += [v["cublas_us"] / b["cublas_us"] for b, v in pairs]
        moved = plan_of(base0[key]) != plan_of(var0[key])
        (raw_moved if moved else raw_same).append(statistics.median(raw))
        (norm_moved if moved else norm_same).append(statistics.median(norm))
        clocked = all(math.isfinite(x["sm_mhz"]) for pair in pairs for x in pair)
        cyc = [(v["marlin_us"] * v["sm_mhz"]) / (b["marlin_us"] * b["sm_mhz"])
               for b, v in pairs] if clocked else []
        if clocked:
            (cyc_moved if moved else cyc_same).append(statistics.median(cyc))
        if args.moved and not moved:
            continue
        k, n, m, g = key
        line = (f"{f'k{k}_n{n}/m{m}/g{g}':30s} {pairs[0][0]['marlin_us']:9.2f} "
                f"{pairs[0][1]['marlin_us']:9.2f}  raw " + " ".join(f"{r:.3f}" for r in raw) +
                "  norm " + " ".join(f"{r:.3f}" for r in norm))
        if clocked:
            line += ("  MHz " + " ".join(f"{b['sm_mhz']:.0f}/{v['sm_mhz']:.0f}" for b, v in pairs)
                     + "  cyc " + " ".join(f"{r:.3f}" for r in cyc))
        if moved:
            line += f"  | {plan_of(base0[key])} -> {plan_of(var0[key])}"
        print(line)
    print(summary("moved plans, raw", raw_moved))
    print(summary("moved plans, norm", norm_moved))
    print(summary("same plans, raw", raw_same))
    print(summary("same plans, norm", norm_same))
    if cyc_moved or cyc_same:
        print(summary("moved plans, cycles", cyc_moved))
        print(summary("same plans, cycles", cyc_same))
    print(summary("cuBLAS control", control))


if __name__ == "__main__":
    main()
