#!/usr/bin/env bash
# Stages everything one GPU call needs for the performance suite (issue 17) into one folder that
# the device tool carries: the packed binaries (scripts/pack-gpu.sh of this tree's build, which
# must hold bench_grid and libgpix_core), the suite's scripts, and the peers' wheels pinned in
# bench/peers-requirements.txt (downloaded into the wheel folder first where missing).
#   scripts/stage-suite.sh [DEST]     DEST defaults to .suite in the main checkout (the one the
#                                     device tool sends), which this adds to .git/info/exclude
# Then, from that checkout: run `bash .suite/scripts/gpu-run.sh suite` with carry [".suite"].
#   GPIX_WHEELS=DIR   where the wheels are kept (default: .whl in the main checkout)
set -euo pipefail
cd "$(dirname "$0")/.."
main=$(dirname "$(git rev-parse --path-format=absolute --git-common-dir)")
dest=${1:-$main/.suite}
wheels=${GPIX_WHEELS:-$main/.whl}
if [ ! -x build/bin/bench_grid ]; then
  echo "stage-suite: build bench_grid first (cmake --build build --target bench_grid)"
  exit 1
fi

# The wheels: pip download for the GPU machine's Python 3.12 (the device tool's README flags).
mkdir -p "$wheels"
mapfile -t pins < <(grep -v -E '^\s*(#|$)' bench/peers-requirements.txt)
for pin in "${pins[@]}"; do
  name=${pin%%==*} version=${pin##*==}
  file=$(ls "$wheels"/"${name//-/_}"-"$version"-*.whl 2>/dev/null | head -1 || true)
  if [ -z "$file" ]; then
    python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
      --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
      --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
      --platform manylinux1_x86_64 -d "$wheels" "$pin"
  fi
done

scripts/pack-gpu.sh >/dev/null
rm -rf "$dest"
mkdir -p "$dest/.carry" "$dest/bench" "$dest/scripts" "$dest/.whl"
cp .carry/gpu.tar.xz "$dest/.carry/"
cp bench/suite.py bench/suite_peers.py bench/suite_report.py bench/peers-requirements.txt \
  bench/dma_ceiling.py bench/remap_probe.py "$dest/bench/"
cp scripts/gpu-run.sh "$dest/scripts/"
for pin in "${pins[@]}"; do
  name=${pin%%==*} version=${pin##*==}
  cp "$(ls "$wheels"/"${name//-/_}"-"$version"-*.whl | head -1)" "$dest/.whl/"
done
if [ "$dest" = "$main/.suite" ]; then
  exclude="$main/.git/info/exclude"
  mkdir -p "$(dirname "$exclude")"
  grep -qx '/.suite/' "$exclude" 2>/dev/null || echo '/.suite/' >>"$exclude"
fi
du -b "$dest"/.carry/* "$dest"/.whl/* | awk '{printf "%8.1f MiB  %s\n", $1 / 1048576, $2}'
total=$(du -sb "$dest" | cut -f1)
awk -v d="$dest" -v t="$total" 'BEGIN {
  printf "stage-suite: %s holds %.1f MiB (the device tool carries 64 MiB with the tree)\n", d,
    t / 1048576 }'
[ "$total" -lt $((56 * 1048576)) ] || { echo "stage-suite: too large to carry"; exit 1; }
