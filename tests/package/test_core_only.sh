#!/usr/bin/env bash
# The smallest configuration (GPIX_WITH_APPS=OFF, GPIX_WITH_IO=OFF) configures and has the
# targets it should: no ITK, no gpix plugin, no programs; the host interface, the widgets,
# tests and benchmarks on. What differs from the full build is the configuration, so that is what is
# checked: the targets that exist, and, with Ninja, the compile commands of the core set
# (gpix_core, gpix_samples): present, and free of Qt's and ITK's include paths. No source reads
# these options and the full build compiles every library with warnings as errors, so
# compiling the core set again here (103 s of CI's serial time at -O0) found nothing more; with
# another generator it is still compiled.
# Usage: test_core_only.sh SOURCE_DIR OUT_DIR [CMAKE_ARGS...] (-G GENERATOR among them)
set -euo pipefail
src=$1
out=$2
shift 2
rm -rf "$out"
mkdir -p "$out"
cmake -S "$src" -B "$out" -DGPIX_WITH_APPS=OFF -DGPIX_WITH_IO=OFF -DGPIX_WERROR=ON \
  -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-O0 "$@" >"$out/configure.log" 2>&1 || {
  cat "$out/configure.log"
  exit 1
}
failed=0
fail() { echo "FAIL: $*"; failed=1; }
grep -q "^ITK_DIR:" "$out/CMakeCache.txt" && fail "ITK was looked for with GPIX_WITH_IO=OFF"
targets=$(cmake --build "$out" --target help)
has() { grep -qE "(^|[ ./])$1(:| |$)" <<<"$targets"; }
for t in gpix_io gpix_qt gpix_plugin gpix_cli gpix_viewer; do
  has $t && fail "target $t exists with GPIX_WITH_APPS=OFF GPIX_WITH_IO=OFF"
done
for t in gpix_core gpix_samples gpix_host gpix_ui; do
  has $t || fail "target $t is missing with GPIX_WITH_APPS=OFF GPIX_WITH_IO=OFF"
done
if [ -f "$out/build.ninja" ]; then
  cmds=$(ninja -C "$out" -t commands gpix_core gpix_samples | grep -E -- " -c [^ ]+\.cpp" || true)
  for obj in gpix_core.dir/src/array.cpp.o gpix_samples.dir/samples.cpp.o; do
    grep -q "$obj" <<<"$cmds" || fail "no compile command for $obj"
  done
  bad=$(grep -iE -- "-(I|isystem) ?[^ ]*(qt6|/itk)" <<<"$cmds" | head -1 || true)
  [ -z "$bad" ] || fail "the core set compiles against Qt or ITK: $bad"
else
  cmake --build "$out" --parallel "$(nproc)" --target gpix_core gpix_samples
fi
exit $failed
