#!/usr/bin/env python3
"""Summarize a marlin_bench JSON report: a markdown table and two plots.

    marlin_bench --benchmark_out=results.json --benchmark_out_format=json
    python3 bench/plot.py results.json                 # table on stdout, PNGs next to the JSON
    python3 bench/plot.py results.json --family quick  # the smoke subset
    python3 bench/plot.py results.json --no-plots      # table only

Every number is the median over the repetitions of a case (Google Benchmark's `_median`
aggregate rows; counters included). The spread column is (max - min) / median of marlin's
time over the repetitions, from the `_min` / `_max` aggregates the binary adds; "fp16 floor"
is rel_err_fp16, the error of the fp32 reference rounded to fp16 (the least rel_err possible);
"vs cuBLAS" is rel_err_cublas, the error against cuBLAS's own fp16 result (fp32 accumulation,
fp16 output), the reference the performance issue's accuracy target names.
Where the report has clock samples, a last column "SM MHz" gives marlin's and cuBLAS's median
SM clock of the case (marlin/cuBLAS).

The table needs only the standard library; the plots need matplotlib, which is imported
only when plotting, so the table also works where matplotlib is not installed.

Plots (one subplot per group size, log2 M on the x axis, one line per (K, N) shape):
  speedup.png     cuBLAS fp16 time / marlin time
  frac_floor.png  floor time / marlin time (1.0 = at the floor)
"""

import argparse
import json
import math
import os
import re
import statistics
import sys

# gemm/k4096_n6144/m16/g128/iterations:10/repeats:5/manual_time
NAME_RE = re.compile(r"^(?P<family>\w+)/k(?P<k>\d+)_n(?P<n>\d+)/m(?P<m>\d+)/g(?P<g>-?\d+)(/|$)")

COUNTERS = ("marlin_us", "cublas_us", "mem_floor_us", "mma_floor_us", "floor_us",
            "frac_floor", "speedup", "GBps", "TFLOPs", "rel_err", "rel_err_fp16",
            "rel_err_cublas", "sm_mhz", "power_capped", "cublas_sm_mhz")


def group_label(g):
    return "per-channel (g=-1)" if g == -1 else f"g={g}"


def load(path, family):
    """Returns (context, cases, shape_order): cases maps (k, n, m, g) to a dict with
    'median' (counter -> value), 'spread' (float or None) and 'label' (the case's label: its
    plan), or 'error' (message)."""
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    raw = {}
    shape_order = []
    for b in data.get("benchmarks", []):
        match = NAME_RE.match(b.get("run_name") or b.get("name", ""))
        if not match or match["family"] != family:
            continue
        k, n, m, g = (int(match[x]) for x in ("k", "n", "m", "g"))
        if (k, n) not in shape_order:
            shape_order.append((k, n))
        entry = raw.setdefault((k, n, m, g), {"aggregates": {}, "runs": []})
        if b.get("error_occurred"):
            entry["error"] = b.get("error_message") or "error"
        elif b.get("run_type") == "aggregate":
            entry["aggregates"][b.get("aggregate_name")] = b
        else:
            entry["runs"].append(b)

    cases = {}
    for key, entry in raw.items():
        if "error" in entry:
            cases[key] = {"error": entry["error"]}
            continue
        aggs, runs = entry["aggregates"], entry["runs"]
        if "median" in aggs:
            median = {c: aggs["median"].get(c, math.nan) for c in COUNTERS}
        elif runs:  # run without aggregates (e.g. --benchmark_repetitions=1)
            median = {c: statistics.median(r.get(c, math.nan) for r in runs) for c in COUNTERS}
        else:
            continue
        spread = None
        if "min" in aggs and "max" in aggs:
            lo, hi = aggs["min"].get("marlin_us"), aggs["max"].get("marlin_us")
        elif len(runs) > 1:
            lo = min(r.get("marlin_us", math.nan) for r in runs)
            hi = max(r.get("marlin_us", math.nan) for r in runs)
        else:
            lo = hi = None
        if lo is not None and hi is not None and median["marlin_us"] > 0:
            spread = (hi - lo) / median["marlin_us"]
        label = (aggs["median"] if "median" in aggs else runs[0]).get("label", "")
        cases[key] = {"median": median, "spread": spread, "label": label}
    return data.get("context", {}), cases, shape_order


def fmt_us(x):
    """Microseconds with about four significant digits."""
    if x is None or math.isnan(x):
        return "n/a"
    if abs(x) < 10:
        return f"{x:.3f}"
    if abs(x) < 100:
        return f"{x:.2f}"
    if abs(x) < 1000:
        return f"{x:.1f}"
    return f"{x:.0f}"


def clock_cell(c):
    """marlin's and cuBLAS's median SM clock of one case, "1755/1980" (n/a without samples)."""
    if not (math.isfinite(c["sm_mhz"]) and math.isfinite(c["cublas_sm_mhz"])):
        return "n/a"
    return f"{c['sm_mhz']:.0f}/{c['cublas_sm_mhz']:.0f}"


def print_table(context, cases, shape_order, out=sys.stdout):
    device = context.get("device", "unknown device")
    bw = context.get("copy_bandwidth_GBps", "?")
    print(f"Device: {device}; copy bandwidth {bw} GB/s (measured in the run); "
          f"mma.sync floor {context.get('mma_floor_TFLOPs', '635')} TFLOP/s; "
          f"CUDA driver {context.get('cuda_driver_version', '?')}; {context.get('date', '')}",
          file=out)
    print("", file=out)
    # The SM clock column (marlin's / cuBLAS's median MHz) where the report has clock samples;
    # it comes last, so the columns before it keep their places (scripts/compare_tables.py).
    clocks = any(math.isfinite(c["median"]["sm_mhz"]) for c in cases.values() if "median" in c)
    print("| shape K×N | M | group | marlin µs | spread | cuBLAS µs | floor µs | bound "
          "| frac floor | speedup | rel_err | fp16 floor | vs cuBLAS |" +
          (" SM MHz |" if clocks else ""), file=out)
    print("|---|---:|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|" +
          ("---:|" if clocks else ""), file=out)
    groups = sorted({key[3] for key in cases}, key=lambda g: (g == -1, g))
    for g in groups:
        for k, n in shape_order:
            for m in sorted(key[2] for key in cases if key[:2] == (k, n) and key[3] == g):
                case = cases[(k, n, m, g)]
                shape = f"{k}×{n}"
                if "error" in case:
                    print(f"| {shape} | {m} | {g} | error: {case['error']} |"
                          " | | | | | | | | |" + (" |" if clocks else ""), file=out)
                    continue
                c = case["median"]
                bound = "mem" if c["mem_floor_us"] >= c["mma_floor_us"] else "mma"
                spread = "n/a" if case["spread"] is None else f"{100 * case['spread']:.1f}%"
                print(f"| {shape} | {m} | {g} | {fmt_us(c['marlin_us'])} | {spread} "
                      f"| {fmt_us(c['cublas_us'])} | {fmt_us(c['floor_us'])} | {bound} "
                      f"| {c['frac_floor']:.2f} | {c['speedup']:.2f} | {c['rel_err']:.2e} "
                      f"| {c['rel_err_fp16']:.2e} | {c['rel_err_cublas']:.2e} |" +
                      (f" {clock_cell(c)} |" if clocks else ""), file=out)


def render_plots(cases, shape_order, out_dir, family):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot.py: matplotlib is not installed; skipping the plots "
              "(pip install matplotlib). The table above is complete.", file=sys.stderr)
        return []
    groups = sorted({key[3] for key in cases}, key=lambda g: (g == -1, g))
    if not groups:
        return []
    written = []
    for counter, ylabel, reference, name in (
            ("speedup", "speedup over cuBLAS fp16 (×)", 1.0, "speedup.png"),
            ("frac_floor", "fraction of floor (floor / time)", 1.0, "frac_floor.png")):
        fig, axes = plt.subplots(1, len(groups), figsize=(6.5 * len(groups), 4.8),
                                 sharey=True, squeeze=False)
        top = reference
        for ax, g in zip(axes[0], groups):
            all_m = set()
            for k, n in shape_order:
                points = sorted((key[2], cases[key]["median"][counter]) for key in cases
                                if key[:2] == (k, n) and key[3] == g and "median" in cases[key])
                if not points:
                    continue
                ms, ys = zip(*points)
                all_m.update(ms)
                top = max([top] + [y for y in ys if not math.isnan(y)])
                ax.plot(ms, ys, marker="o", markersize=3, label=f"{k}×{n}")
            ax.set_xscale("log", base=2)
            if all_m:
                ticks = sorted(all_m)
                ax.set_xticks(ticks)
                ax.set_xticklabels([str(t) for t in ticks], fontsize=8)
            ax.axhline(reference, color="gray", linestyle="--", linewidth=1)
            ax.set_xlabel("M (batch rows)")
            ax.set_title(group_label(g))
            ax.grid(True, which="major", alpha=0.3)
        axes[0][0].set_ylabel(ylabel)
        # The floor uses the copy bandwidth; streaming reads alone reach a few % more
        # (MEASURING.md), so a fraction slightly above 1 is possible and must stay visible.
        axes[0][0].set_ylim(0, 1.08 * top)
        axes[0][-1].legend(title="K×N", fontsize=8, loc="best")
        fig.suptitle(f"marlin_bench ({family}): {ylabel}")
        fig.tight_layout()
        path = os.path.join(out_dir, name)
        fig.savefig(path, dpi=120)
        plt.close(fig)
        written.append(path)
    return written


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("json", help="Google Benchmark JSON (--benchmark_out=FILE)")
    parser.add_argument("--family", default="gemm", help="case prefix: gemm (default) or quick")
    parser.add_argument("--out-dir", help="where to write the PNGs (default: next to the JSON)")
    parser.add_argument("--no-plots", action="store_true", help="print the table only")
    args = parser.parse_args()

    context, cases, shape_order = load(args.json, args.family)
    if not cases:
        print(f"plot.py: no '{args.family}/...' cases in {args.json}", file=sys.stderr)
        return 1
    print_table(context, cases, shape_order)
    if not args.no_plots:
        out_dir = args.out_dir or os.path.dirname(os.path.abspath(args.json))
        os.makedirs(out_dir, exist_ok=True)
        for path in render_plots(cases, shape_order, out_dir, args.family):
            print(f"plot.py: wrote {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
