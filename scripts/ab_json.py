#!/usr/bin/env python3
"""Same-call A/B of marlin_bench JSON reports: per case, the variant's median time over the
base's in each pass (`raw`), the same ratio normalized by cuBLAS in the same case (`norm`:
(marlin / cuBLAS) of the variant over that of the base; at M >= 1024, and on the largest layers
from M = 128, the GPU's power cap and state move marlin and cuBLAS together between passes),
and the plan labels where they differ. Then medians over the cases whose plan moved and over
the others, and the cuBLAS control.
    scripts/ab_json.py base1.json var1.json [base2.json var2.json ...] [--moved]
Passes are pairs (base, variant) run in the same call, best in both orders; --moved prints
only the cases whose plan label differs. Standard library only."""
import json
import statistics
import sys


def load(path):
    """Median rows of a report: run name (without the iteration suffix) -> row."""
    out = {}
    for row in json.load(open(path, encoding="utf-8"))["benchmarks"]:
        if row.get("aggregate_name") == "median":
            out[row["run_name"].split("/iterations:")[0]] = row
    return out


def plan_of(row):
    return row.get("label", "").split(" copies")[0]


def summary(name, values):
    if not values:
        return f"{name}: none"
    return (f"{name}: median x{statistics.median(values):.4f} (min {min(values):.3f}, "
            f"max {max(values):.3f}), {len(values)} cases")


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    moved_only = "--moved" in sys.argv
    if len(args) < 2 or len(args) % 2:
        sys.exit(__doc__)
    passes = [(load(args[i]), load(args[i + 1])) for i in range(0, len(args), 2)]
    base0, var0 = passes[0]
    raw_moved, raw_same, norm_moved, norm_same, control = [], [], [], [], []
    for name in base0:
        if not all(name in b and name in v for b, v in passes):
            continue
        raw = [v[name]["marlin_us"] / b[name]["marlin_us"] for b, v in passes]
        norm = [(v[name]["marlin_us"] / v[name]["cublas_us"]) /
                (b[name]["marlin_us"] / b[name]["cublas_us"]) for b, v in passes]
        control += [v[name]["cublas_us"] / b[name]["cublas_us"] for b, v in passes]
        moved = plan_of(base0[name]) != plan_of(var0[name])
        (raw_moved if moved else raw_same).append(statistics.median(raw))
        (norm_moved if moved else norm_same).append(statistics.median(norm))
        if moved_only and not moved:
            continue
        case = name[len("gemm/"):] if name.startswith("gemm/") else name
        line = (f"{case:30s} {base0[name]['marlin_us']:9.2f} "
                f"{var0[name]['marlin_us']:9.2f}  raw " + " ".join(f"{r:.3f}" for r in raw) +
                "  norm " + " ".join(f"{r:.3f}" for r in norm))
        if moved:
            line += f"  | {plan_of(base0[name])} -> {plan_of(var0[name])}"
        print(line)
    print(summary("moved plans, raw", raw_moved))
    print(summary("moved plans, norm", norm_moved))
    print(summary("same plans, raw", raw_same))
    print(summary("same plans, norm", norm_same))
    print(summary("cuBLAS control", control))


if __name__ == "__main__":
    main()
