#!/usr/bin/env python3
"""The main loops of marlin's kernels in SASS, without a GPU: per kernel and architecture, the
registers and the instructions of each tile step (the span from one CTA barrier to the next
that holds tensor-core instructions: HMMA for mma.sync, HGMMA for wgmma), so that a change can
be checked for what it does to the hot loop before it is measured (bench/NOTES.md, session 23:
a change outside the decode loop that moves the loop's schedule measures as +-3-5 % on its own).
Two builds are compared kernel by kernel: registers, instruction count, step lengths and the
code itself (its text without addresses). The warp-specialized kernels synchronize their loop
through mbarriers, so their steps are spans of the rest of the code, not loop steps.

    scripts/sass_loops.py FILE [--kernel REGEX] [--arch ARCH]       one build: every kernel
    scripts/sass_loops.py BASE NEW [--kernel REGEX] [--arch ARCH]   two: the kernels that differ

FILE is an object, executable or cubin built by nvcc, e.g. (about a minute per architecture):
    nvcc -std=c++17 -O3 -DNDEBUG --generate-code=arch=compute_90a,code=[sm_90a] \\
         -Iinclude -Itests -c tests/tools/gemm_once.cu -o /tmp/new.o
Needs cuobjdump and nvdisasm on PATH: the CUDA toolkit's, or PyPI's nvidia-cuda-cuobjdump and
nvidia-cuda-nvdisasm wheels (`pip download --no-deps` them and unzip; the tools are in
nvidia/cu13/bin). The step counts are static: instructions in the span, taken branches or not.
"""
import argparse
import collections
import re
import subprocess
import sys

Kernel = collections.namedtuple("Kernel", "regs steps total digest")


def run(args):
    try:
        return subprocess.run(args, capture_output=True, text=True, check=True).stdout
    except FileNotFoundError:
        sys.exit(f"sass_loops: {args[0]} not found on PATH (see --help)")
    except subprocess.CalledProcessError as err:
        sys.exit(f"sass_loops: {' '.join(args)} failed:\n{err.stderr}")


def demangle(names):
    out = run(["c++filt"] + list(names)).splitlines() if names else []
    return dict(zip(names, out))


def function_lines(option, path):
    """(arch, mangled name, line) for each line of `cuobjdump option path` inside a function."""
    arch, name = None, None
    for line in run(["cuobjdump", option, path]).splitlines():
        if m := re.match(r"arch = (sm_\w+)", line):
            arch, name = m.group(1), None
        elif m := re.match(r"\s*Function\s*:?\s*(\S+?):?\s*$", line):
            name = m.group(1)
        elif name:
            yield arch, name, line


def registers(path):
    """{(arch, mangled name): registers} from cuobjdump -res-usage."""
    regs = {}
    for arch, name, line in function_lines("-res-usage", path):
        if m := re.match(r"\s*REG:(\d+)", line):
            regs[(arch, name)] = int(m.group(1))
    return regs


def steps(path):
    """{(arch, mangled name): ([instructions per tensor-core step], instructions in all, a hash
    of the code without addresses)} from cuobjdump -sass."""
    code = collections.defaultdict(list)
    for arch, name, line in function_lines("-sass", path):
        if m := re.match(r"\s*/\*[0-9a-f]{4,}\*/\s+(.*?);", line):
            code[(arch, name)].append(m.group(1))
    out = {}
    for key, instrs in code.items():
        bars = [i for i, ins in enumerate(instrs) if "BAR.SYNC" in ins]
        spans = []
        for begin, end in zip(bars, bars[1:]):
            body = instrs[begin:end]
            if any(re.search(r"\bHG?MMA\.", ins) for ins in body):
                spans.append(end - begin)
        text = "\n".join(re.sub(r"0x[0-9a-f]+", "", ins) for ins in instrs)
        out[key] = (spans, len(instrs), hash(text))
    return out


def load(path):
    regs, spans = registers(path), steps(path)
    return {key: Kernel(regs.get(key), *spans.get(key, ([], 0, 0)))
            for key in set(regs) | set(spans)}


def describe(kernel):
    shown = " ".join(str(n) for n in kernel.steps[:12])
    more = f" (+{len(kernel.steps) - 12} more)" if len(kernel.steps) > 12 else ""
    return f"{kernel.regs} regs, {kernel.total} instructions; steps {shown}{more}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 1)[1])
    parser.add_argument("files", nargs="+", metavar="FILE")
    parser.add_argument("--kernel", default=".", help="regex on the demangled kernel name")
    parser.add_argument("--arch", help="only this architecture, e.g. sm_90a")
    args = parser.parse_args()
    if len(args.files) > 2:
        parser.error("one file, or two to compare")
    builds = [load(path) for path in args.files]
    keys = sorted(set().union(*builds), key=lambda k: (k[0] or "", k[1]))
    names = demangle(sorted({name for _, name in keys}))
    pattern = re.compile(args.kernel)
    differing = 0
    for arch, name in keys:
        pretty = names.get(name, name)
        if not pattern.search(pretty) or (args.arch and arch != args.arch):
            continue
        kernels = [build.get((arch, name)) for build in builds]
        if len(builds) == 2 and kernels[0] == kernels[1]:
            continue
        differing += len(builds) == 2
        print(f"{arch} {pretty}")
        for path, kernel in zip(args.files, kernels):
            print(f"    {path}: {describe(kernel) if kernel else 'absent'}")
    if len(builds) == 2:
        print(f"{differing} kernel(s) differ (code, registers or step lengths)")


if __name__ == "__main__":
    main()
