#!/usr/bin/env bash
# Installs what is missing, builds with warnings as errors, runs clang-tidy on the changed files
# and every test; then (run without arguments, as CI does) the sanitizer stages:
#   "sanitize": scripts/sanitize.sh: one build with ASan + UBSan (+ GCC's comparison tracing
#     for the fuzz targets) of the core, IO, plugin and UI suites, run with a subset of dtypes
#     (LeakSanitizer on core), then a bounded fuzz run: every fuzz target over its seed corpus
#     plus GPIX_FUZZ_RUNS (default 3000) new inputs from a fixed seed, so that the same commit
#     always meets the same inputs (scripts/fuzz.sh), within GPIX_FUZZ_SECONDS (default 30).
#   "tsan": ThreadSanitizer on the concurrency suites (scripts/sanitize.sh tsan, a core-only
#     build of its own), started beside "sanitize" at a lower priority to fill its idle core.
# GPIX_SANITIZE_STAGE=0 / GPIX_TSAN_STAGE=0 skip them; GPIX_SANITIZE_LAYERS (default core io
# plugin ui) narrows the first. Each stage's wall time is printed ("== stage NAME: N s") and
# summed at the end; docs/RELIABILITY.md ("CI") has the figures against the 30 minutes of a
# fresh clone on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
declare -a stage_times=()
stage() {  # stage NAME COMMAND...: runs and times one stage
  local name=$1 start=$SECONDS
  shift
  echo "== stage $name"
  "$@"
  stage_times+=("$name $((SECONDS - start))")
  echo "== stage $name: $((SECONDS - start)) s"
}
run_ctest() {
  (cd build && ctest --output-on-failure --parallel "$(nproc)" "$@")
}
stage deps scripts/deps.sh
stage build scripts/build.sh -DGPIX_WERROR=ON
# clang-tidy (.clang-tidy's checks) on the C++ files this branch changes; a finding fails.
stage tidy scripts/tidy.sh
export QT_QPA_PLATFORM=offscreen
# PoCL builds every kernel twice by default: a work-group function for any local size, then one
# specialised for the local size of the first launch. The suites' first launches are what CI
# waits on (PoCL compiles one kernel at a time: test_filters_neighbourhood spent 745 s of a cold
# run compiling); with the specialisation off the same cases compiled in 55 s instead of 84,
# and a warm run took 2.6 s instead of 2.2. The kernels and their results are the same.
export POCL_WORK_GROUP_SPECIALIZATION=${POCL_WORK_GROUP_SPECIALIZATION:-0}
# Where the CUDA toolkit is present, its NVRTC must compile every kernel variant.
if [ -e /usr/local/cuda/include/nvrtc.h ]; then export GPIX_REQUIRE_NVRTC=1; fi
stage ctest run_ctest "$@"
tsan_pid=
if (($# == 0)) && [ "${GPIX_TSAN_STAGE:-1}" != 0 ]; then
  # Beside the sanitize stage, at a lower priority: that stage leaves a core idle for minutes
  # (suites waiting on PoCL's single-threaded compiles, one fuzz target at a time), which the
  # TSan build and runs fill. Its output is shown when it ends.
  mkdir -p build-tsan
  (
    start=$SECONDS
    rc=0
    nice -n 5 scripts/sanitize.sh tsan >build-tsan/stage.log 2>&1 || rc=$?
    echo "$rc $((SECONDS - start))" >build-tsan/stage.rc
  ) &
  tsan_pid=$!
fi
if (($# == 0)) && [ "${GPIX_SANITIZE_STAGE:-1}" != 0 ]; then
  GPIX_FUZZ_RUNS=${GPIX_FUZZ_RUNS:-3000} stage sanitize scripts/sanitize.sh "${GPIX_FUZZ_SECONDS:-30}"
fi
if [ -n "$tsan_pid" ]; then
  start=$SECONDS
  echo "== stage tsan (ran beside sanitize; its output)"
  wait "$tsan_pid" || true
  cat build-tsan/stage.log
  read -r rc took <build-tsan/stage.rc
  stage_times+=("tsan-after-sanitize $((SECONDS - start))")
  echo "== stage tsan: $took s in all, $((SECONDS - start)) s after sanitize; exit status $rc"
  [ "$rc" = 0 ] || exit "$rc"
fi
total=0
for s in "${stage_times[@]}"; do
  echo "   ${s% *}: ${s##* } s"
  total=$((total + ${s##* }))
done
echo "== all stages: $total s ($((total / 60)) min $((total % 60)) s)"
