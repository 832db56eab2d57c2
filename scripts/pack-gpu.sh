#!/usr/bin/env bash
# Packs what the GPU machine needs to run gpix's test suites and benchmarks there: the built
# programs (stripped), libgpix_core, the ctest files, and the Qt/ICU libraries the QtTest
# suites need (the GPU machine has no Qt). Paths inside the archive are absolute build paths,
# so RPATHs and ctest files work unchanged after `tar -xJf ... -C /`.
#   scripts/pack-gpu.sh [build-dir]   ->   .carry/gpu.tar.xz
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(realpath "${1:-build}")
# The GPU machine runs what this build prebuilt for its cards (core/gpix/cuda-kernels.bin): a
# build configured for "native" on a machine without an NVIDIA GPU holds none, and there every
# CUDA program would compile with NVRTC at its first use: first calls of 0.6-1.9 s instead of
# about 1 ms (bench/RESULTS.md, 2026-11-28). GPIX_PACK_ANY_ARCH=1 packs such a build anyway.
archs=$(sed -n 's/^GPIX_CUDA_ARCHITECTURES:STRING=//p' "$build/CMakeCache.txt" 2>/dev/null || true)
if [ "${GPIX_PACK_ANY_ARCH:-0}" != 1 ] && [ -n "$archs" ] && { [ "$archs" = none ] ||
  { [ "$archs" = native ] && ! nvidia-smi -L >/dev/null 2>&1; }; }; then
  echo "pack-gpu: $build prebuilt CUDA kernels for '$archs', which is none here; configure it" \
    "with -DGPIX_CUDA_ARCHITECTURES=90 (the H100 and H200), or set GPIX_PACK_ANY_ARCH=1" >&2
  exit 1
fi
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
dest="$stage$build"
mkdir -p "$dest/gpu-libs"
copy() { mkdir -p "$dest/$(dirname "$1")"; cp -a "$build/$1" "$dest/$1"; }
cd "$build"
# The viewer and the GUI/IO suites need Qt widgets and ITK IO: they are tested here, not there.
for f in bin/gpix bin/gpu_check bin/cross_backend bin/bench_* tests/test_* tests/*.so core/libgpix_core.so* core/gpix/cuda-kernels.bin core/gpix-prebuild-kernels io/libgpix_io.so*; do
  case "$f" in tests/test_ui_* | tests/test_plugin_* | tests/test_io_* | tests/test_qimage) continue ;; esac
  [ -e "$f" ] && [ ! -d "$f" ] && copy "$f"
done
find . -name CTestTestfile.cmake | while read -r f; do copy "$f"; done
# The commit the binaries were built from (the GPU machine's copy of the tree has its own
# .git, which does not say), with "+dirty" when the working tree had changes.
cd - >/dev/null
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
git diff --quiet HEAD 2>/dev/null || commit="$commit+dirty"
echo "$commit" > "$dest/GPU_COMMIT"
cd "$build"
find "$dest" -type f -executable -exec strip --strip-debug {} + 2>/dev/null || true
# Shared libraries that Ubuntu 24.04 lacks or has in other versions (none for a build of only the
# core and the benchmarks, e.g. bench_grid for the suite: grep then finds nothing).
for exe in "$dest"/tests/test_* "$dest"/bin/*; do
  [ -e "$exe" ] || continue
  ldd "$exe" 2>/dev/null | awk '/=> \//{print $3}'
done | sort -u | { grep -v -E "^$build|/(libc|libm|libstdc\+\+|libgcc_s|libOpenCL|libz|libgomp|ld-linux[^/]*|libpthread|libdl|librt)\.so" || true; } |
  while read -r lib; do cp -L "$lib" "$dest/gpu-libs/"; done
cd - >/dev/null
mkdir -p .carry
tar -C "$stage" -cJf .carry/gpu.tar.xz "${build#/}"
ls -la .carry/gpu.tar.xz
