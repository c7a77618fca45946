#!/usr/bin/env bash
# One full check on a GPU host, in one call: configure and build for the local GPU's arch
# (default 90) with Ninja, run the whole CTest suite (host, gpu, slow), compute-sanitizer
# (memcheck, racecheck, synccheck, initcheck) over tests/sanitize.sh's shapes, the example, and the full benchmark
# (JSON + markdown table). Results go to $OUT (or ./h200-out; at most 8 files, as the device tool returns); a summary prints last.
#   scripts/h200_check.sh [arch]
set -uo pipefail
arch=${1:-90a}
out=${OUT:-$PWD/h200-out}
mkdir -p "$out"
build=build/h200
{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="$arch" \
    -DMARLIN_WARNINGS_AS_ERRORS=ON >/tmp/configure.log 2>&1 || { cat /tmp/configure.log; exit 1; }
  cmake --build "$build" -j 16 >/tmp/build.log 2>&1 || { tail -40 /tmp/build.log; exit 1; }
} 2>&1 | tee "$out/env.txt"
ctest --test-dir "$build" -j 12 --output-on-failure -LE 'example|sanitize' >"$out/ctest.log" 2>&1
ctest_rc=$?
tests/sanitize.sh "$build/tests/gemm_once" >"$out/sanitize.log" 2>&1
san_rc=$?
"$build/examples/marlin_example" >"$out/example.log" 2>&1
ex_rc=$?
"$build/bench/marlin_bench" --benchmark_out="$out/bench.json" --benchmark_out_format=json \
  >/tmp/bench.log 2>&1
bench_rc=$?
python3 bench/plot.py "$out/bench.json" --out-dir "$out" >"$out/table.md" 2>&1
echo "==== ctest (rc $ctest_rc)"; grep -E "tests passed|Total Test time|Failed|\*\*\*" "$out/ctest.log" | tail -12
echo "==== sanitize (rc $san_rc)"; cat "$out/sanitize.log"
echo "==== example (rc $ex_rc)"; tail -4 "$out/example.log"
echo "==== bench (rc $bench_rc)"; tail -5 /tmp/bench.log; head -30 "$out/table.md"
