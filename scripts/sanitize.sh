#!/usr/bin/env bash
# The sanitizer stage: one build with AddressSanitizer and UndefinedBehaviorSanitizer (GCC,
# build-asan/, GPIX_FUZZ=ON: GCC's comparison tracing too) of the suites of the layers named in
# GPIX_SANITIZE_LAYERS (default: core io plugin ui) and of the libFuzzer targets; the suites run
# with a subset of dtypes, LeakSanitizer on the core suites, then a bounded libFuzzer run of
# every fuzz target over its seed corpus plus FUZZ_SECONDS of new inputs (scripts/fuzz.sh, on
# the same build: core and IO are compiled once for both).
#   scripts/sanitize.sh [FUZZ_SECONDS]     (default 20 per target; 0 skips fuzzing)
#   scripts/sanitize.sh tsan               ThreadSanitizer (build-tsan/, core and IO) on the
#                                          concurrency suites; PoCL's own reports are
#                                          suppressed by name in scripts/tsan.supp
# CI (scripts/test.sh) runs all of it, the fuzz targets with a fixed number of new inputs from
# a fixed seed (GPIX_FUZZ_RUNS, GPIX_FUZZ_SEED: scripts/fuzz.sh), FUZZ_SECONDS then a cap.
# The figures and what each part costs: docs/RELIABILITY.md, "Sanitizers".
set -euo pipefail
cd "$(dirname "$0")/.."
# Compile options, ccache and the ASan build's configuration: shared with scripts/fuzz.sh.
source scripts/sanitizer-build.sh

if [ "${1:-}" = tsan ]; then
  # The suites where several threads share gpix objects: eight threads of mixed work on one and
  # two devices, the staging copy threads, concurrent compiles in the program cache, its
  # background compiles and evictions, tiled runs with several workers on one and on two
  # devices, and eight threads reading, writing and failing to read files of every format at
  # once (the IO layer is built for it; ITK, libtiff and zlib themselves are not
  # instrumented).
  cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPIX_SANITIZE_THREAD=ON \
    -DGPIX_WERROR=$san_werror -DGPIX_WITH_CUDA=OFF -DGPIX_BUILD_BENCH=OFF -DGPIX_WITH_IO=ON \
    -DGPIX_WITH_UI=OFF -DGPIX_WITH_APPS=OFF "${launcher[@]}" \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=$tsan_opt" "-DCMAKE_C_FLAGS_RELWITHDEBINFO=$tsan_opt" >/dev/null
  cmake --build build-tsan --parallel "$(nproc)" --target test_core_stress test_core_copy_threads \
    test_kernel_cache test_kernel_tiers test_core_tiled test_io_formats test_io_bad
  cd build-tsan
  # halt_on_error: the first report fails the run. second_deadlock_stack names both paths of a
  # lock-order report. ignore_noninstrumented_modules: memory accesses that PoCL and its LLVM
  # make through intercepted functions (memcpy, ...) are not tracked (their locks still are):
  # with them, compiling kernels under TSan took minutes per kernel.
  export TSAN_OPTIONS="suppressions=$PWD/../scripts/tsan.supp:halt_on_error=1:second_deadlock_stack=1:history_size=4:ignore_noninstrumented_modules=1"
  export QT_QPA_PLATFORM=offscreen
  # QtTest's own watchdog (5 minutes per test function) would stop a slow function; the runs
  # below are bounded by their work, not a clock.
  export QTEST_FUNCTION_TIMEOUT=3600000
  # One run at a time, each timed: under TSan threads run several times slower, and the
  # figures in docs/RELIABILITY.md are per run. "pthread pthread": two PoCL devices.
  runs=(
    "|test_core_stress|"
    "pthread pthread|test_core_stress|two_devices"
    "|test_core_copy_threads|"
    "pthread pthread|test_core_copy_threads|two_devices"
    "|test_kernel_cache|concurrent_compiles"
    "|test_kernel_tiers|evicts_least_recently_used tiers_are_bit_identical failed_background_compile_reaches_the_caller"
    "|test_core_tiled|sources_and_sinks"
    "pthread pthread|test_core_tiled|sources_and_sinks folds"
    "|test_io_formats|concurrent_reads_and_writes"
    "|test_io_bad|concurrent_failures"
  )
  for r in "${runs[@]}"; do
    IFS='|' read -r devices suite args <<<"$r"
    echo "== tsan: $suite ${args:-(all)}${devices:+ on POCL_DEVICES=\"$devices\"}"
    start=$SECONDS
    # shellcheck disable=SC2086  # args: test function names, split on purpose
    if [ -n "$devices" ]; then
      POCL_DEVICES=$devices "tests/$suite" $args
    else
      "tests/$suite" $args
    fi
    echo "== tsan: $suite passed in $((SECONDS - start)) s"
  done
  exit 0
fi

fuzz_seconds=${1:-20}
configure_asan_build build-asan
fuzz_targets=()
if [ "$fuzz_seconds" != 0 ]; then
  fuzz_targets=("${all_fuzz_targets[@]}")
fi

# The suites, by layer. Left out for time: the filter and kernel suites (every filter x dtype x
# layout compiles and runs PoCL kernels, an hour under ASan), test_core_tiled, test_ui_display,
# the CLI, install, package and build-tree suites (programs and cmake runs, not new code paths).
core=(test_core_types test_core_device test_core_array test_core_stats test_core_memory
      test_core_copy_threads test_core_backend_errors test_core_handles test_core_dlpack)
io=(test_io_bad test_io_formats test_io_tiff test_io_stream)
plugin=(test_plugin_loader test_plugin_formats)
ui=(test_ui_render test_ui_widgets test_ui_viewer test_ui_workflow_export)
layers=(${GPIX_SANITIZE_LAYERS:-core io plugin ui})
suites=()
for l in "${layers[@]}"; do
  case $l in
    core) suites+=("${core[@]}") ;;
    io) suites+=("${io[@]}") ;;
    plugin) suites+=("${plugin[@]}") ;;
    ui) suites+=("${ui[@]}") ;;
    *) echo "sanitize: unknown layer '$l' in GPIX_SANITIZE_LAYERS (core io plugin ui)"; exit 2 ;;
  esac
done
extra=()
[[ " ${layers[*]} " == *" io "* ]] && extra+=(gpix_cli)
[[ " ${layers[*]} " == *" plugin "* || " ${layers[*]} " == *" ui "* ]] && extra+=(gpix_cli gpix_plugin)
cmake --build build-asan --parallel "$(nproc)" --target "${suites[@]}" "${extra[@]}" \
  "${fuzz_targets[@]}"

regex() {
  local IFS='|'
  echo "^($*)\$"
}
export QT_QPA_PLATFORM=offscreen
# The per-dtype rows keep one dtype of each kind and width class; the sanitizers look at host
# code, which the dtypes share through templates.
export GPIX_TEST_DTYPES=${GPIX_TEST_DTYPES:-u8,i16,f32,f64}
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
supp=$PWD/scripts/lsan.supp
cd build-asan
others=()
for t in "${suites[@]}"; do [[ " ${core[*]} " == *" $t "* ]] || others+=("$t"); done
# LeakSanitizer on the core suites: whatever gpix allocates must be freed. Other libraries'
# memory held to exit may be suppressed by name in scripts/lsan.supp, never gpix's.
if [[ " ${layers[*]} " == *" core "* ]]; then
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
    LSAN_OPTIONS=suppressions=$supp:print_suppressions=0 \
    ctest --output-on-failure --parallel "$(nproc)" -R "$(regex "${core[@]}")"
fi
# The others without leak checking: ITK's NRRD reader leaks its error strings on corrupt files
# (test_io_bad), and Qt's widgets and plugins keep caches to exit.
if ((${#others[@]})); then
  ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 \
    ctest --output-on-failure --parallel "$(nproc)" -R "$(regex "${others[@]}")"
fi
cd ..
if [ "$fuzz_seconds" != 0 ]; then
  GPIX_FUZZ_NO_BUILD=1 GPIX_FUZZ_BUILD=build-asan scripts/fuzz.sh "$fuzz_seconds" "${fuzz_targets[@]}"
fi
