#!/usr/bin/env bash
# gpix-viewer's command line without a display: --help and --version answer, and an unknown
# --device stops with its reason and status 2 instead of opening on another device.
#   viewer_cli.sh PATH-TO-gpix-viewer
set -u
viewer=$1
fail() { echo "FAIL: $*"; exit 1; }
out=$(env -u DISPLAY -u WAYLAND_DISPLAY -u QT_QPA_PLATFORM "$viewer" --help 2>&1) ||
  fail "--help exited with $? without a display: $out"
grep -q -- "--device" <<<"$out" || fail "--help does not list --device: $out"
env -u DISPLAY -u WAYLAND_DISPLAY -u QT_QPA_PLATFORM "$viewer" --version >/dev/null 2>&1 ||
  fail "--version failed without a display"
err=$(env -u DISPLAY -u WAYLAND_DISPLAY QT_QPA_PLATFORM=offscreen "$viewer" --device nosuch-device 2>&1)
code=$?
[ "$code" = 2 ] || fail "--device nosuch-device exited with $code (want 2): $err"
grep -q "nosuch-device" <<<"$err" || fail "the error does not name the device asked for: $err"
echo "PASS: viewer command line"
