# Sourced by scripts/sanitize.sh and scripts/fuzz.sh (from the repository root): the one
# sanitizer build both use, so that CI compiles core and IO under the sanitizers once.
# Sanitizer builds keep line tables only (-g1: file and line in every report). The ASan +
# UBSan build compiles at -Og: UBSan's checks made GCC's -O1 slow (core's segmentation.cpp:
# 21 s at -O1 with both sanitizers, 13 s with ASan alone, 13 s at -Og with both; a third off
# the heavy sources of every layer), and -Og still runs the suites and fuzz inputs optimised
# (AddressSanitizer advises -O1 for speed; -O0 would slow the fuzz runs most). The TSan build
# too (GPIX_TSAN_OPT): 12-18% off its compiles (segmentation.cpp 10.4 s at -O1, 8.4 at -Og),
# and its runs are PoCL's uninstrumented compiles more than gpix's code. Warnings do not fail
# them (GPIX_SANITIZE_WERROR=ON makes them): the release build with -Werror is the warnings
# gate, and GCC warns differently at these levels.
san_opt=${GPIX_SANITIZE_OPT:--Og -g1 -DNDEBUG}
tsan_opt=${GPIX_TSAN_OPT:--Og -g1 -DNDEBUG}
san_werror=${GPIX_SANITIZE_WERROR:-OFF}
launcher=()
if command -v ccache >/dev/null && [ "${GPIX_CCACHE:-1}" != 0 ]; then
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-true}
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
# Every libFuzzer target (fuzz/CMakeLists.txt).
all_fuzz_targets=(fuzz_read_tiff fuzz_read_png fuzz_read_jpeg fuzz_read_nrrd fuzz_read_mha
                  fuzz_read_nii fuzz_read_niigz fuzz_raw fuzz_api fuzz_dlpack fuzz_cli_args
                  fuzz_workflow fuzz_plugin_manifest)
# configure_asan_build DIR: ASan + UBSan + GCC's comparison tracing (GPIX_FUZZ implies
# GPIX_SANITIZE), for the suites and the fuzz targets alike.
configure_asan_build() {
  cmake -S . -B "$1" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPIX_FUZZ=ON \
    -DGPIX_WERROR="$san_werror" -DGPIX_WITH_CUDA=OFF -DGPIX_BUILD_BENCH=OFF "${launcher[@]}" \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=$san_opt" "-DCMAKE_C_FLAGS_RELWITHDEBINFO=$san_opt" >/dev/null
}
