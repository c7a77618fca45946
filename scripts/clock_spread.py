#!/usr/bin/env python3
"""Whether the SM clock accounts for how a case's time moves between its repetitions, from a
marlin_bench JSON file with clock samples (the repetitions' own rows, which the file holds
beside the aggregates; bench/README.md, "What each case reports").

Per case and library: the spread of the time over the repetitions, (max - min) / median, the
spread of the clock (`sm_mhz`, `cublas_sm_mhz`) and the spread of their product (time x clock,
the call's length in SM cycles). A call whose time follows the clock keeps its cycles: the
product's spread is then well under the time's. A memory-bound call does not follow the clock,
nor does a call slowed by something else (a late CTA, a slower plan).

    scripts/clock_spread.py bench.json [--min-spread 0.05] [--family gemm]

Prints the cases whose time spreads by at least --min-spread (for either library), then per
library how many such cases there are and in how many of them the cycles spread by less than
half as much as the time ("the clock accounts for it"). Standard library only."""
import argparse
import json
import math
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))
from plot import NAME_RE  # noqa: E402  (bench/plot.py: the case names' one parser)

LIBRARIES = (("marlin", "marlin_us", "sm_mhz"), ("cuBLAS", "cublas_us", "cublas_sm_mhz"))


def spread(values):
    median = statistics.median(values)
    return (max(values) - min(values)) / median if median > 0 else math.nan


def repetitions(path, family):
    """(k, n, m, g) -> the case's repetition rows that carry times and clocks, in order."""
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    cases = {}
    for b in data.get("benchmarks", []):
        match = NAME_RE.match(b.get("run_name") or b.get("name", ""))
        if (not match or match["family"] != family or b.get("run_type") != "iteration" or
                b.get("error_occurred")):
            continue
        if not all(isinstance(b.get(c), (int, float)) and math.isfinite(b[c]) and b[c] > 0
                   for _, us, mhz in LIBRARIES for c in (us, mhz)):
            continue  # no clock samples in this row
        key = tuple(int(match[x]) for x in ("k", "n", "m", "g"))
        cases.setdefault(key, []).append(b)
    return cases


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("report")
    parser.add_argument("--min-spread", type=float, default=0.05,
                        help="list cases whose time spreads by at least this (default 0.05)")
    parser.add_argument("--family", default="gemm")
    args = parser.parse_args()
    cases = repetitions(args.report, args.family)
    if not cases:
        sys.exit("clock_spread: no repetition rows with clock samples in " + args.report)
    moved = {name: [] for name, _, _ in LIBRARIES}  # name -> [(time spread, cycles spread)]
    for key in sorted(cases):
        reps = cases[key]
        if len(reps) < 2:
            continue
        cells, listed = [], False
        for name, us, mhz in LIBRARIES:
            t = spread([r[us] for r in reps])
            f = spread([r[mhz] for r in reps])
            c = spread([r[us] * r[mhz] for r in reps])
            cells.append(f"{name} time {100 * t:5.1f} % clock {100 * f:5.1f} % "
                         f"cycles {100 * c:5.1f} %")
            if t >= args.min_spread:
                moved[name].append((t, c))
                listed = True
        if listed:
            k, n, m, g = key
            print(f"{f'k{k}_n{n}/m{m}/g{g}':26s} {len(reps)} reps  " + "; ".join(cells))
    for name, _, _ in LIBRARIES:
        pairs = moved[name]
        explained = sum(c < 0.5 * t for t, c in pairs)
        print(f"{name}: {len(pairs)} cases spread by {100 * args.min_spread:.0f} % or more; "
              f"in {explained} of them the cycles spread by less than half as much")


if __name__ == "__main__":
    main()
