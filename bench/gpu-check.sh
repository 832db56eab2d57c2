#!/usr/bin/env bash
# The GPU machine's check of the core on every device (CUDA, NVIDIA OpenCL, PoCL). Run as
# root from the repository root, with a build carried over from the development machine
# (that machine has no OpenCL headers): at least BUILD_DIR/bin/gpu_check and
# BUILD_DIR/core/libgpix_core.so* (the binaries find the library through LD_LIBRARY_PATH
# below, since the build's absolute run path differs there).
#   bench/gpu-check.sh [BUILD_DIR [gpu_check options]]      (default: build)
# It needs no Qt and no network. It registers NVIDIA's OpenCL driver with the ICD loader,
# prints the device list, and runs bench/gpu_check.cpp, which ends with "N passed, M failed".
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
[ $# -gt 0 ] && shift

echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "host: $(hostname)"
if git rev-parse --git-dir >/dev/null 2>&1; then
  echo "commit: $(git rev-parse --short HEAD)$(git diff --quiet HEAD 2>/dev/null || echo ' (with local changes)')"
fi
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader

# NVIDIA's OpenCL driver is installed but not registered there (see /work/shared/NOTES.md).
have_nv_opencl() {
  ldconfig -p 2>/dev/null | grep -q 'libnvidia-opencl\.so\.1' ||
    [ -e /usr/local/nvidia/lib64/libnvidia-opencl.so.1 ]
}
if [ -w / ] && ! [ -e /etc/OpenCL/vendors/nvidia.icd ] && have_nv_opencl; then
  mkdir -p /etc/OpenCL/vendors && echo libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
  echo "registered /etc/OpenCL/vendors/nvidia.icd"
fi
# libcuda.so.1 lives outside the loader's path on that machine (gpix searches there too, but
# NVIDIA's OpenCL driver needs it on the path), and so may NVRTC and its builtins library.
export LD_LIBRARY_PATH="$PWD/$build/core:/usr/local/nvidia/lib64:/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

if [ -x "$build/bin/gpix" ]; then
  echo "== $build/bin/gpix devices"
  "$build/bin/gpix" devices || echo "(gpix devices failed: exit $?; it needs QtCore, which that machine may lack)"
fi
if ! [ -x "$build/bin/gpu_check" ]; then
  echo "$build/bin/gpu_check not found: build it with 'cmake --build $build --target gpu_check'"
  echo "0 passed, 1 failed"
  exit 1
fi
echo "== $build/bin/gpu_check"
"$build/bin/gpu_check" "$@"
