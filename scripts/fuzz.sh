#!/usr/bin/env bash
# Builds the libFuzzer targets and runs each for SECONDS (default 30) from the seed corpora in
# fuzz/corpus/ (every seed runs first, then new inputs until the time is up), with a 10 s
# bound on any one input (a slower read is a finding, as a hang would be; 120 s for the API
# target, which compiles kernels) and 2 GB of memory.
#   scripts/fuzz.sh [SECONDS] [TARGET...]
# The targets live in the sanitizer build (build-asan/, GPIX_FUZZ=ON: ASan, UBSan and GCC's
# comparison tracing), the same build scripts/sanitize.sh runs the suites from, so that CI
# compiles core and IO under the sanitizers once. GPIX_FUZZ_BUILD names another folder.
# New inputs go to BUILD/fuzz-corpus/, never into the repository's seeds; findings (crash-*,
# timeout-*, oom-*) to BUILD/findings/, and the script fails on any.
# GPIX_FUZZ_RUNS=N (CI sets it): N inputs per target from a fixed random seed (GPIX_FUZZ_SEED,
# default 1) instead of whatever a time budget reaches, SECONDS then only a cap. CI's run must
# be reproducible: a random run on a fresh clone found a different old reader bug now and then
# and refused an unrelated change; exploring is what the long runs without it are for.
# GPIX_FUZZ_JOBS (default: the cores) targets run at once; each one's report is printed, in
# the targets' order, when it ends. One at a time left a core of CI's two idle for the two
# minutes the targets take.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-30}
shift || true
build=${GPIX_FUZZ_BUILD:-build-asan}
# The build of scripts/sanitize.sh: one build folder for both.
source scripts/sanitizer-build.sh
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=("${all_fuzz_targets[@]}")
fi
# GPIX_FUZZ_NO_BUILD=1: run what is built (scripts/sanitize.sh has just built it).
if [ "${GPIX_FUZZ_NO_BUILD:-0}" != 1 ]; then
  configure_asan_build "$build"
  cmake --build "$build" --parallel "$(nproc)" --target "${targets[@]}"
fi
# PoCL's own allocations at exit are not gpix's (the API target runs kernels on it).
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
mkdir -p "$build"/findings
# run_target T: one target's run; its report goes to BUILD/T.report, its exit status to
# BUILD/T.rc.
run_target() {
  local t=$1 seeds timeout work runs
  local -a fixed=()
  seeds=fuzz/corpus/${t#fuzz_read_}
  [ "$t" = fuzz_raw ] && seeds=fuzz/corpus/raw
  [ "$t" = fuzz_api ] && seeds=fuzz/corpus/api
  [ "$t" = fuzz_dlpack ] && seeds=fuzz/corpus/dlpack
  [ "$t" = fuzz_cli_args ] && seeds=fuzz/corpus/cli_args
  [ "$t" = fuzz_workflow ] && seeds=fuzz/corpus/workflow
  [ "$t" = fuzz_plugin_manifest ] && seeds=fuzz/corpus/manifest
  # The API target compiles each new kernel variant on PoCL (seconds each, more on busy cores):
  # a compile is not a hang, so its bound is wider.
  timeout=10
  [ "$t" = fuzz_api ] && timeout=120
  [ "$t" = fuzz_dlpack ] && timeout=60  # its pushes may build staging kernels on PoCL
  work=$build/fuzz-corpus/$t
  if [ -n "${GPIX_FUZZ_RUNS:-}" ]; then
    # fuzz_api a third as many: its inputs compile kernels on PoCL (1000 of them took 18 s in
    # a fresh-clone CI run, 3000 of a reader 1-3 s). Its sequence is the same only up to its
    # background compiles and the kernel disk cache, which change what code an input
    # reaches; the readers' runs repeat exactly for one binary. A change to any code a target
    # links can change its sequence: stop 42's run met a JPEG no earlier run had. (Its memory:
    # docs/RELIABILITY.md.)
    runs=$GPIX_FUZZ_RUNS
    [ "$t" = fuzz_api ] && runs=$((runs / 3))
    fixed=(-runs="$runs" -seed="${GPIX_FUZZ_SEED:-1}")
  fi
  mkdir -p "$work"
  local start=$SECONDS rc=0
  {
    echo "== $t: ${GPIX_FUZZ_RUNS:+${runs} runs (seed ${GPIX_FUZZ_SEED:-1}) within }${seconds}s from $seeds ($(ls "$seeds" | wc -l) seeds, $(ls "$work" | wc -l) found before)"
    "$build"/fuzz/"$t" "$work" "$seeds" -max_total_time="$seconds" "${fixed[@]}" \
      -timeout=$timeout -use_value_profile=1 -rss_limit_mb=2048 -max_len=65536 \
      -print_final_stats=1 -artifact_prefix="$build"/findings/"$t"- 2>"$build"/"$t".log || {
      rc=1
      tail -40 "$build"/"$t".log
    }
    grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "$build"/"$t".log || true
    echo "== $t: $((SECONDS - start)) s"
  } >"$build/$t.report" 2>&1
  echo $rc >"$build/$t.rc"
}
njobs=${GPIX_FUZZ_JOBS:-$(nproc)}
for t in "${targets[@]}"; do
  rm -f "$build/$t.rc"
  while (($(jobs -rp | wc -l) >= njobs)); do wait -n || true; done
  run_target "$t" &
done
wait
status=0
for t in "${targets[@]}"; do
  cat "$build/$t.report"
  [ "$(cat "$build/$t.rc" 2>/dev/null)" = 0 ] || status=1
done
exit $status
