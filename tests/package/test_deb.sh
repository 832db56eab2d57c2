#!/usr/bin/env bash
# Builds the Debian packages with CPack and checks them without installing them: the files
# each holds, the dependencies dpkg-shlibdeps declared, and that gpix and gpix-viewer run from
# the unpacked gpix package alone (they find its libraries and plugin relative to /usr/bin).
# Usage: test_deb.sh BUILD_DIR OUT_DIR (CPACK names the cpack program; default: the one on PATH)
set -euo pipefail
build=$1
out=$2
cpack=${CPACK:-cpack}
for tool in "$cpack" dpkg-deb dpkg-shlibdeps file; do
  command -v "$tool" >/dev/null || { echo "FAIL: $tool is missing (scripts/deps.sh installs it)"; exit 1; }
done
rm -rf "$out"
mkdir -p "$out"
"$cpack" --config "$build/CPackConfig.cmake" -G DEB -B "$out" >"$out/cpack.log" 2>&1 || {
  cat "$out/cpack.log"
  exit 1
}
shopt -s nullglob
runtime=("$out"/gpix_*.deb)
dev=("$out"/gpix-dev_*.deb)
if [ ${#runtime[@]} != 1 ] || [ ${#dev[@]} != 1 ]; then
  echo "FAIL: expected one gpix and one gpix-dev package in $out"
  ls "$out"
  exit 1
fi
echo "built $(basename "${runtime[0]}") ($(du -k "${runtime[0]}" | cut -f1) KiB), $(basename "${dev[0]}")"

failed=0
fail() { echo "FAIL: $*"; failed=1; }
# has PACKAGE_LISTING PATH: the listing (dpkg-deb -c) holds PATH exactly.
has() { grep -qE " \./${2//./\\.}( |$)" <<<"$1"; }

files=$(dpkg-deb -c "${runtime[0]}")
for f in usr/bin/gpix usr/bin/gpix-viewer usr/lib/gpix/plugins/libgpix_plugin.so \
         usr/lib/libgpix_core.so.0 usr/lib/libgpix_io.so.0 usr/lib/libgpix_qt.so.0 \
         usr/lib/libgpix_host.so.0 usr/lib/libgpix_ui.so.0; do
  has "$files" "$f" || fail "gpix lacks /$f"
done
grep -q "\./usr/include/" <<<"$files" && fail "gpix holds headers (they belong in gpix-dev)"
has "$files" usr/lib/libgpix_core.so && fail "gpix holds libgpix_core.so (it belongs in gpix-dev)"

depends=$(dpkg-deb -f "${runtime[0]}" Depends)
echo "gpix Depends: $depends"
# From dpkg-shlibdeps (the libraries the programs and the plugin link), and the OpenCL driver.
for p in libc6 'libstdc\+\+6' libqt6core6 libqt6gui6 libqt6widgets6 ocl-icd-libopencl1 \
         'libinsighttoolkit5\.[0-9]+' libtiff6 'pocl-opencl-icd \| opencl-icd'; do
  grep -qE "(^|, )$p( |,|$)" <<<"$depends" || fail "gpix does not depend on $p"
done
grep -q "gpix" <<<"$depends" && fail "gpix depends on itself or gpix-dev"

dev_files=$(dpkg-deb -c "${dev[0]}")
for f in usr/include/gpix/gpix.h usr/include/gpix/version.h usr/include/gpix/itk.h \
         usr/include/gpix/qimage.h usr/include/gpix/plugin_api.h usr/include/gpix/ui/image_view.h \
         usr/lib/cmake/gpix/gpixConfig.cmake usr/lib/cmake/gpix/gpixConfigVersion.cmake \
         usr/lib/cmake/gpix/gpix_coreTargets.cmake usr/lib/cmake/gpix/gpix_uiTargets.cmake \
         usr/lib/libgpix_core.so usr/lib/libgpix_ui.so; do
  has "$dev_files" "$f" || fail "gpix-dev lacks /$f"
done
grep -q "\./usr/bin/" <<<"$dev_files" && fail "gpix-dev holds programs"
dev_depends=$(dpkg-deb -f "${dev[0]}" Depends)
echo "gpix-dev Depends: $dev_depends"
version=$(dpkg-deb -f "${runtime[0]}" Version)
for p in "gpix (= $version)" libdlpack-dev qt6-base-dev libinsighttoolkit5-dev; do
  grep -qF "$p" <<<"$dev_depends" || fail "gpix-dev does not depend on $p"
done

# The unpacked package runs on its own: no LD_LIBRARY_PATH, no build tree, no user plugins.
root="$out/root"
dpkg-deb -x "${runtime[0]}" "$root"
export QT_QPA_PLATFORM=offscreen
unset LD_LIBRARY_PATH GPIX_PLUGIN_PATH
export XDG_DATA_HOME="$out/data"
for f in "$root/usr/bin/gpix" "$root/usr/bin/gpix-viewer" "$root/usr/lib/gpix/plugins/libgpix_plugin.so"; do
  file "$f" | grep -q "ELF.*, stripped" || fail "$f is not a stripped ELF file"
  missing=$(ldd "$f" | grep "not found" || true)
  [ -z "$missing" ] || fail "$f: $missing"
  # gpix's own libraries come from the package, not from the build tree or the system.
  ldd "$f" | grep -E "libgpix_[a-z]+\.so" | grep -qv "=> $root/usr/" && fail "$f loads gpix libraries from outside the package"
done
"$root/usr/bin/gpix" devices || fail "gpix devices"
"$root/usr/bin/gpix" info sample:nuclei_2d >"$out/info.txt" || fail "gpix info sample"
grep -q "uint16\|u16" "$out/info.txt" || fail "gpix info sample printed: $(cat "$out/info.txt")"
"$root/usr/bin/gpix-viewer" --help >"$out/help.txt" 2>&1 || fail "gpix-viewer --help"
# The viewer, as on a desktop, loads the gpix plugin from ../lib/gpix/plugins (Qt's library log
# names the file) and opens the sample through it.
QT_LOGGING_RULES="qt.core.library.debug=true" "$root/usr/bin/gpix-viewer" --screenshot "$out/shot.png" \
  >"$out/viewer.log" 2>&1 || fail "gpix-viewer --screenshot: $(cat "$out/viewer.log")"
[ -s "$out/shot.png" ] || fail "gpix-viewer made no screenshot"
grep -q "\"$root/usr/lib/gpix/plugins/libgpix_plugin.so\" loaded library" "$out/viewer.log" ||
  fail "gpix-viewer did not load the packaged plugin: $(grep gpix_plugin "$out/viewer.log")"
exit $failed
