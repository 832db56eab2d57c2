#!/usr/bin/env bash
# Builds the libFuzzer targets (ASan + UBSan, build-fuzz/) and runs each for
# SECONDS (default 30) from the seed corpora in fuzz/corpus/, with a 10 s bound on any one
# input (a slower read is a finding, as a hang would be) and 2 GB of memory.
#   scripts/fuzz.sh [SECONDS] [TARGET...]
# New inputs go to build-fuzz/corpus/, never into the repository's seeds; findings
# (crash-*, timeout-*, oom-*) to build-fuzz/findings/, and the script fails on any.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-30}
shift || true
cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DGPIX_FUZZ=ON -DGPIX_WITH_UI=OFF -DGPIX_WITH_APPS=OFF -DGPIX_BUILD_TESTS=OFF \
  -DGPIX_BUILD_BENCH=OFF -DGPIX_WITH_CUDA=OFF >/dev/null
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(fuzz_read_tiff fuzz_read_png fuzz_read_jpeg fuzz_read_nrrd fuzz_read_mha
           fuzz_read_nii fuzz_read_niigz fuzz_raw fuzz_api)
fi
cmake --build build-fuzz --parallel "$(nproc)" --target "${targets[@]}"
# PoCL's own allocations at exit are not gpix's (the API target runs kernels on it).
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
mkdir -p build-fuzz/findings
status=0
for t in "${targets[@]}"; do
  seeds=fuzz/corpus/${t#fuzz_read_}
  [ "$t" = fuzz_raw ] && seeds=fuzz/corpus/raw
  [ "$t" = fuzz_api ] && seeds=fuzz/corpus/api
  work=build-fuzz/corpus/$t
  mkdir -p "$work"
  echo "== $t: ${seconds}s from $seeds"
  if ! build-fuzz/fuzz/"$t" "$work" "$seeds" -max_total_time="$seconds" -timeout=10 -use_value_profile=1 \
       -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
       -artifact_prefix=build-fuzz/findings/"$t"- 2>build-fuzz/"$t".log; then
    status=1
    tail -40 build-fuzz/"$t".log
  fi
  grep -E "stat::number_of_executed_units|stat::peak_rss_mb" build-fuzz/"$t".log || true
done
exit $status
