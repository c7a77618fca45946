#!/usr/bin/env python3
"""Compares two markdown tables written by bench/plot.py (before, after): per case, the time
ratio after/before of marlin and of cuBLAS (the control), then medians per batch range.
    scripts/compare_tables.py before.md after.md [--rows]"""
import statistics
import sys


def rows(path):
    out = {}
    for line in open(path, encoding="utf-8"):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 12 or not cells[1].isdigit():
            continue
        key = (cells[0], int(cells[1]), cells[2])
        out[key] = (float(cells[3]), float(cells[5]), float(cells[8]), float(cells[9]))
    return out


def main():
    before, after = rows(sys.argv[1]), rows(sys.argv[2])
    show = "--rows" in sys.argv
    ranges = {"M<=16": lambda m: m <= 16, "32<=M<=128": lambda m: 32 <= m <= 128,
              "M>=256": lambda m: m >= 256}
    ratios = {name: ([], []) for name in ranges}
    for key in sorted(after, key=lambda k: (k[0], k[2], k[1])):
        if key not in before:
            continue
        (mb, cb, _, _), (ma, ca, fa, sa) = before[key], after[key]
        if show:
            print(f"{key[0]:>12} M={key[1]:<5} g={key[2]:>4}: marlin {mb:9.2f} -> {ma:9.2f} "
                  f"(x{ma / mb:.3f})  cuBLAS x{ca / cb:.3f}  frac_floor {fa:.2f} speedup {sa:.2f}")
        for name, test in ranges.items():
            if test(key[1]):
                ratios[name][0].append(ma / mb)
                ratios[name][1].append(ca / cb)
    for name, (m, c) in ratios.items():
        if m:
            print(f"{name:>11}: marlin time x{statistics.median(m):.3f} (min {min(m):.3f}, "
                  f"max {max(m):.3f}); cuBLAS x{statistics.median(c):.3f}; {len(m)} cases")


if __name__ == "__main__":
    main()
