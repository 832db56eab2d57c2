#!/usr/bin/env bash
# Installs what is missing, builds with warnings as errors, runs clang-tidy on the changed files
# and every test.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
scripts/build.sh -DGPIX_WERROR=ON
# clang-tidy (.clang-tidy's checks) on the C++ files this branch changes; a finding fails.
scripts/tidy.sh
export QT_QPA_PLATFORM=offscreen
# Where the CUDA toolkit is present, its NVRTC must compile every kernel variant.
if [ -e /usr/local/cuda/include/nvrtc.h ]; then export GPIX_REQUIRE_NVRTC=1; fi
cd build
ctest --output-on-failure --parallel "$(nproc)" "$@"
