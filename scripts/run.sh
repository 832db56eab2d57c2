#!/usr/bin/env bash
# Installs what is missing, builds, and opens gpix on its embedded sample image.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
scripts/build.sh
if [ -x build/bin/gpix-viewer ]; then
  exec build/bin/gpix-viewer "$@"
fi
build/bin/gpix devices
exec build/bin/gpix info sample "$@"
