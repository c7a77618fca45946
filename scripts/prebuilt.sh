#!/usr/bin/env bash
# Builds here (no GPU needed) what one call on the GPU host runs, so that its device time goes to
# running: the working tree's full build (tests, tools, example, bench; warnings as errors) and a
# marlin_bench per A/B variant; then, on the GPU host, runs them in one go.
#
#   scripts/prebuilt.sh pack [name=<ref>[:<cuda flags>] ...]   # here, from the repository root
#   scripts/prebuilt.sh check                                   # there; carry build/prebuilt
#
# pack: `<ref>` is a commit, branch or `.` (the working tree); e.g. base=main
#   tail2=.:-DMARLIN_WGMMA_STRIPED_TAIL=2. Writes build/prebuilt/: tests.tar.xz (the
#   executables of the full build), bench_<name>.xz, lib/ (the Google Benchmark library the
#   benches link: this machine's 1.7, not the host's 1.8) and MANIFEST. Takes about 5 minutes
#   on 2 cores plus about a minute per variant. ARCH (default 90a) picks the architecture.
# check: configures build/dev there and unpacks the executables into it (ctest then runs them
#   as built here), runs the CTest suite, compute-sanitizer memcheck and racecheck on the GPU
#   tests that SAN_FILTER names (a --gtest_filter; none if unset), the A/B (passes base, var,
#   var, base for each variant against the first one: scripts/ab_json.py; MARLIN_BENCH_BATCHES
#   and AB_FILTER, a --benchmark_filter, narrow it) and, with GRID=1, the full grid of the
#   tree's own bench (plot.py, targets.py). Results go to $OUT (the device tool's folder, else
#   build/prebuilt-out): logs and a summary, and prebuilt.tgz with the JSON reports. Exits 1
#   if the suite fails, or a sanitizer run reports an error or runs no test.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dir=$root/build/prebuilt
mode=${1:?usage: prebuilt.sh pack [name=ref[:flags] ...] | check}
shift

# The commit checked out, and whether the working tree (untracked files too) differs from it.
tree_label() {
  echo "$(git -C "$root" rev-parse --short HEAD)$([[ -n $(git -C "$root" status --porcelain) ]] &&
    echo ' + uncommitted changes')"
}

pack() {
  set -e
  local arch=${ARCH:-90a} full=$root/build/prebuilt-full
  rm -rf "$dir" && mkdir -p "$dir/lib"
  cmake -S "$root" -B "$full" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CUDA_ARCHITECTURES="$arch" -DMARLIN_WARNINGS_AS_ERRORS=ON >"$dir/configure.log"
  cmake --build "$full" >"$dir/build.log"
  echo "full build: $(grep -ci 'warning' "$dir/build.log" || true) warning lines"
  (cd "$full" && find bench examples tests -maxdepth 1 -type f \
    \( -perm -u+x -o -name '*.so' \) | tar -cJf "$dir/tests.tar.xz" -T -)
  for variant in "$@"; do
    local name=${variant%%=*} spec=${variant#*=}
    local ref=${spec%%:*} flags= src=$root
    [[ $spec == *:* ]] && flags=${spec#*:}
    if [[ $ref != . ]]; then
      src=$root/build/prebuilt-src-$name
      rm -rf "$src" && mkdir -p "$src"
      git -C "$root" archive "$ref" | tar -xf - -C "$src"
    fi
    cmake -S "$src" -B "$root/build/prebuilt-$name" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_CUDA_ARCHITECTURES="$arch" -DMARLIN_BUILD_TESTS=OFF -DMARLIN_BUILD_EXAMPLES=OFF \
      -DCMAKE_CUDA_FLAGS="$flags" >"$dir/configure_$name.log"
    cmake --build "$root/build/prebuilt-$name" --target marlin_bench >"$dir/build_$name.log"
    xz -c "$root/build/prebuilt-$name/bench/marlin_bench" >"$dir/bench_$name.xz"
    local label
    label=$(tree_label)
    [[ $ref == . ]] || label=$(git -C "$root" rev-parse --short "$ref")
    echo "$name $label flags '$flags'" >>"$dir/VARIANTS"
  done
  ldd "$full/bench/marlin_bench" | awk '/libbenchmark/ {print $3}' |
    xargs -r -I{} cp -L {} "$dir/lib/"
  {
    echo "tree: $(tree_label), arch $arch, packed $(date -u +%FT%TZ)"
    cat "$dir/VARIANTS" 2>/dev/null || true
  } >"$dir/MANIFEST"
  cat "$dir/MANIFEST"
  du -sh "$dir"
}

check() {
  local out=${OUT:-$root/build/prebuilt-out} start failed=0
  start=$(date +%s)
  mkdir -p "$out" "$out/reports"
  stamp() { echo "[$(( $(date +%s) - start )) s] $*"; }
  cat "$dir/MANIFEST"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu \
    --format=csv,noheader
  export LD_LIBRARY_PATH=$dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  cd "$root"
  cmake -S . -B build/dev -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CUDA_ARCHITECTURES="${ARCH:-90a}" -DMARLIN_WARNINGS_AS_ERRORS=ON \
    >"$out/configure.log" 2>&1 || { tail -20 "$out/configure.log"; return 1; }
  tar -xJf "$dir/tests.tar.xz" -C build/dev
  stamp configured
  timeout "${CTEST_TIMEOUT:-300}" ctest --test-dir build/dev -j 12 --output-on-failure \
    -LE 'example|sanitize' >"$out/ctest.log" 2>&1
  local rc=$?
  echo "ctest rc $rc"
  if (( rc == 124 )); then
    # Stopped at its limit: name the tests that had started and not ended.
    echo "ctest stopped at its ${CTEST_TIMEOUT:-300} s limit; still running:" $(awk '
      /^ *Start +[0-9]+: / {sub(":", "", $2); run[$2] = $3}
      /Test +#[0-9]+: / {n = $0; sub(/.*#/, "", n); sub(/:.*/, "", n); delete run[n]}
      END {for (n in run) print run[n]}' "$out/ctest.log")
  fi
  (( rc == 0 )) || failed=1
  grep -E "tests passed|Total Test time|\*\*\*Failed|Failed  " "$out/ctest.log" | tail -12
  stamp ctest
  if [[ -n ${SAN_FILTER:-} ]]; then
    local sanitizer tool
    sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer | head -1)
    for tool in memcheck racecheck; do
      timeout "${SAN_TIMEOUT:-120}" "$sanitizer" --tool "$tool" --error-exitcode 9 \
        build/dev/tests/marlin_gpu_tests --gtest_filter="$SAN_FILTER" >"$out/$tool.log" 2>&1
      rc=$?
      (( rc == 124 )) && rc="124 (stopped at its ${SAN_TIMEOUT:-120} s limit)"
      # A filter that selects nothing, or only tests that skip, passes in GoogleTest: a run that
      # checked nothing counts as a failure.
      if [[ $rc == 0 ]] && ! grep -q '^\[  PASSED  \] [1-9]' "$out/$tool.log"; then
        rc='0, but no test passed'
      fi
      echo "$tool rc $rc: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|PASSED|SKIPPED|FAILED' \
        "$out/$tool.log" | tr '\n' ' ')"
      [[ $rc == 0 ]] || failed=1
      stamp "$tool"
    done
  fi
  local names=() name
  if [[ -f $dir/VARIANTS ]]; then
    while read -r name _; do names+=("$name"); done <"$dir/VARIANTS"
  fi
  if (( ${#names[@]} >= 2 )); then
    for name in "${names[@]}"; do xz -dc "$dir/bench_$name.xz" >"build/bench_$name" &&
      chmod +x "build/bench_$name"; done
    run_bench() {
      timeout "${AB_TIMEOUT:-120}" "build/bench_$1" --benchmark_filter="${AB_FILTER:-.}" \
        --benchmark_out="$out/reports/$2.json" --benchmark_out_format=json \
        >"$out/reports/$2.log" 2>&1 || echo "$2: rc $?"
      stamp "$2"
    }
    local base=${names[0]} pairs
    for name in "${names[@]:1}"; do
      run_bench "$base" "$base-p1-vs-$name"; run_bench "$name" "$name-p1"
      run_bench "$name" "$name-p2"; run_bench "$base" "$base-p2-vs-$name"
      pairs=("$out/reports/$base-p1-vs-$name.json" "$out/reports/$name-p1.json"
             "$out/reports/$base-p2-vs-$name.json" "$out/reports/$name-p2.json")
      python3 scripts/ab_json.py "${pairs[@]}" >"$out/ab_$name.txt" 2>&1
    done
  fi
  if [[ ${GRID:-0} == 1 ]]; then
    (unset MARLIN_BENCH_BATCHES; timeout "${GRID_TIMEOUT:-150}" build/dev/bench/marlin_bench \
      --benchmark_out="$out/reports/grid.json" --benchmark_out_format=json \
      >"$out/reports/grid.log" 2>&1) || echo "grid: rc $?"
    python3 bench/plot.py "$out/reports/grid.json" --out-dir "$out/reports" \
      >"$out/reports/table.md" 2>&1
    python3 scripts/targets.py "$out/reports/grid.json" >"$out/targets.txt" 2>&1
    stamp grid
  fi
  (cd "$out" && tar -czf prebuilt.tgz reports && rm -rf reports)
  for name in "${names[@]:1}"; do echo "==== A/B $name"; tail -20 "$out/ab_$name.txt"; done
  [[ -f $out/targets.txt ]] && { echo "==== targets"; head -30 "$out/targets.txt"; }
  stamp "done (suite and sanitizers: $( (( failed )) && echo FAILED || echo passed))"
  return "$failed"
}

case $mode in
  pack) pack "$@" ;;
  check) check ;;
  *) echo "usage: prebuilt.sh pack [name=ref[:flags] ...] | check" >&2; exit 2 ;;
esac
