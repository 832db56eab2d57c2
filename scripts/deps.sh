#!/usr/bin/env bash
# Installs what gpix needs on Debian 12 / Ubuntu, only where something is missing (dpkg-dev and
# file for the Debian packages' dependencies, clang-tidy for scripts/tidy.sh).
set -euo pipefail
packages=(cmake ninja-build g++ pkg-config qt6-base-dev qt6-base-dev-tools ocl-icd-opencl-dev
          opencl-headers pocl-opencl-icd clinfo xvfb xauth xdotool libinsighttoolkit5-dev
          libdlpack-dev
          libtiff-dev python3-numpy python3-scipy python3-skimage python3-tifffile
          python3-matplotlib dpkg-dev file clang-tidy libclang-rt-14-dev libjpeg-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  echo "gpix: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
