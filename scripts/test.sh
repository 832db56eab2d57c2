#!/usr/bin/env bash
# Installs what is missing, builds with warnings as errors, runs clang-tidy on the changed files
# and every test, then (run without arguments, as CI does) the sanitizer stage, "sanitize
# core+io": scripts/sanitize.sh on the core and IO suites (ASan, UBSan, LeakSanitizer on core),
# the subset that fits CI's 30 minutes (docs/RELIABILITY.md, "Sanitizers", has the figures and
# what is left out). GPIX_SANITIZE_STAGE=0 skips it; GPIX_SANITIZE_LAYERS (core io plugin ui)
# and GPIX_FUZZ_SECONDS (per fuzz target; 0: none) widen it. Then the stage "tsan":
# ThreadSanitizer on the concurrency suites (scripts/sanitize.sh tsan, a core-only build of its
# own, about 5 minutes on two idle cores); GPIX_TSAN_STAGE=0 skips it.
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
cd ..
if (($# == 0)) && [ "${GPIX_SANITIZE_STAGE:-1}" != 0 ]; then
  echo "== sanitize ${GPIX_SANITIZE_LAYERS:-core io}"
  GPIX_SANITIZE_LAYERS=${GPIX_SANITIZE_LAYERS:-core io} scripts/sanitize.sh "${GPIX_FUZZ_SECONDS:-0}"
fi
if (($# == 0)) && [ "${GPIX_TSAN_STAGE:-1}" != 0 ]; then
  echo "== tsan (concurrency suites)"
  scripts/sanitize.sh tsan
fi
