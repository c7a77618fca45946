#!/usr/bin/env bash
# Builds marlin_bench once per variant and runs the grid of each, so that variants of a kernel
# change are compared within one GPU session (cuBLAS runs in every case as the control). A
# variant is either extra compiler flags (name=flags, e.g. the A/B-only macros) or the source
# tree with a patch applied (name=patch:<file>, e.g. `git diff main...wip/x > .ab/x.patch` with
# .ab/ carried to the GPU host). Writes <out>/bench_<name>.json, <out>/table_<name>.md and
# prints each table's head.
#   scripts/bench_variants.sh <out-dir> name=flags|patch:<file> [...]
# e.g. scripts/bench_variants.sh /tmp/out stages4= stages6=-DMARLIN_PIPELINE_STAGES=6
# FILTER=<regex> runs only the matching cases (--benchmark_filter), e.g. FILTER='/m(128|256)/'.
set -uo pipefail
out=$1
shift
mkdir -p "$out"
arch=${ARCH:-90a}
root=$PWD
jobs=$(( 16 / $# > 1 ? 16 / $# : 1 ))  # the builds share the host's cores
# Builds every variant first, all at once (one nvcc translation unit each, so in parallel they
# take about as long as one), then runs them one after another on the GPU.
build_variant() {
  local name=$1 value=$2 src=$root flags=$2
  if [[ $value == patch:* ]]; then
    flags=
    src=$root/build/src-$name
    rm -rf "$src" && mkdir -p "$src"
    tar --exclude=./build --exclude=./.git -cf - . | tar -xf - -C "$src"
    (cd "$src" && patch -p1 -s <"$root/${value#patch:}") || { echo "$name: patch failed"; return 1; }
  fi
  local build=$root/build/variant-$name
  cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CUDA_ARCHITECTURES="$arch" -DMARLIN_BUILD_TESTS=OFF -DMARLIN_BUILD_EXAMPLES=OFF \
    -DCMAKE_CUDA_FLAGS="$flags" >"$out/configure_$name.log" 2>&1 ||
    { cat "$out/configure_$name.log"; return 1; }
  cmake --build "$build" -j "$jobs" --target marlin_bench >"$out/build_$name.log" 2>&1 ||
    { tail -30 "$out/build_$name.log"; return 1; }
}
pids=()
for variant in "$@"; do
  build_variant "${variant%%=*}" "${variant#*=}" &
  pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid" || exit 1; done
for variant in "$@"; do
  name=${variant%%=*}
  value=${variant#*=}
  build=$root/build/variant-$name
  "$build/bench/marlin_bench" --benchmark_out="$out/bench_$name.json" \
    --benchmark_out_format=json --benchmark_filter="${FILTER:-.}" >"$out/run_$name.log" 2>&1 ||
    { tail -20 "$out/run_$name.log"; exit 1; }
  echo "==== variant $name ($value)"
  python3 "$root/bench/plot.py" "$out/bench_$name.json" --out-dir "$out/plots_$name" \
    >"$out/table_$name.md" 2>&1
  head -40 "$out/table_$name.md"
done
