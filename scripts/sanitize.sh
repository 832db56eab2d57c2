#!/usr/bin/env bash
# The sanitizer stage: a build with AddressSanitizer and UndefinedBehaviorSanitizer (GCC,
# build-asan/) of the suites of the layers named in GPIX_SANITIZE_LAYERS (default: core io plugin
# ui), run with a subset of dtypes, LeakSanitizer on the core suites, then a bounded libFuzzer
# run of every fuzz target from its seeds (scripts/fuzz.sh, its own build-fuzz/).
#   scripts/sanitize.sh [FUZZ_SECONDS]     (default 20 per target; 0 skips fuzzing)
# CI (scripts/test.sh) runs the subset that fits its budget: core and io, no fuzzing.
# The figures and what each part costs: docs/RELIABILITY.md, "Sanitizers".
set -euo pipefail
cd "$(dirname "$0")/.."
fuzz_seconds=${1:-20}
launcher=()
if command -v ccache >/dev/null && [ "${GPIX_CCACHE:-1}" != 0 ]; then
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-true}
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPIX_SANITIZE=ON \
  -DGPIX_WERROR=ON -DGPIX_WITH_CUDA=OFF -DGPIX_BUILD_BENCH=OFF "${launcher[@]}" >/dev/null

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
cmake --build build-asan --parallel "$(nproc)" --target "${suites[@]}" "${extra[@]}"

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
if [ "$fuzz_seconds" != 0 ]; then scripts/fuzz.sh "$fuzz_seconds"; fi
