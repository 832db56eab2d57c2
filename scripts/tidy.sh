#!/usr/bin/env bash
# clang-tidy with the checks of .clang-tidy (any finding fails) on C++ files of the build.
#   scripts/tidy.sh [--build DIR] [FILE...]   the files given
#   scripts/tidy.sh [--build DIR] --all       every source file of the build
#   scripts/tidy.sh [--build DIR]             what this branch changes: the files that differ
#     from the merge base with main (origin/main), or on main itself those of the last commit
#     (a merge brings all of its branch's), at most GPIX_TIDY_MAX_FILES (default 40) of them
# A changed header is checked through the sources of the same name (foo.h -> foo.cpp); findings
# in project headers show through any checked source that includes them (HeaderFilterRegex).
# Needs a configured build (compile_commands.json); files the build does not compile are skipped.
# GCC is the compiler that judges the code: a file clang cannot compile (Debian's ITK headers
# accept no other compiler; clang 14 lacks lambda captures of structured bindings) is listed as
# not checked, and clang's own warnings are not errors here.
set -euo pipefail
cd "$(dirname "$0")/.."
build=build
if [ "${1:-}" = --build ]; then
  build=$2
  shift 2
fi
[ -f "$build/compile_commands.json" ] || { echo "tidy: no $build/compile_commands.json (build first)"; exit 1; }
tidy=$(command -v clang-tidy || command -v clang-tidy-14 || true)
[ -n "$tidy" ] || { echo "tidy: clang-tidy is missing (scripts/deps.sh installs it)"; exit 1; }

# Every project source the build compiles (not the generated or moc files in the build tree).
mapfile -t compiled < <(python3 - "$build/compile_commands.json" "$PWD" <<'EOF'
import json, os, sys
root = sys.argv[2] + "/"
for e in json.load(open(sys.argv[1])):
    f = os.path.normpath(os.path.join(e["directory"], e["file"]))
    if f.startswith(root) and not f[len(root):].startswith("build"):
        print(f[len(root):])
EOF
)

if [ "${1:-}" = --all ]; then
  files=("${compiled[@]}")
elif (($#)); then
  files=("$@")
else
  base=""
  for ref in origin/main main; do
    if git rev-parse -q --verify "$ref^{commit}" >/dev/null; then
      base=$(git merge-base HEAD "$ref" || true)
      break
    fi
  done
  if [ -z "$base" ] || [ "$base" = "$(git rev-parse HEAD)" ]; then
    base=$(git rev-parse -q --verify HEAD~1 || true)
  fi
  [ -n "$base" ] || { echo "tidy: no history to compare with; nothing checked"; exit 0; }
  mapfile -t changed < <(git diff --name-only --diff-filter=d "$base" -- '*.cpp' '*.h')
  files=()
  for f in "${changed[@]}"; do
    if [[ $f == *.h ]]; then
      stem=$(basename "$f" .h)
      for c in "${compiled[@]}"; do [[ $(basename "$c") == "$stem.cpp" ]] && files+=("$c"); done
    else
      files+=("$f")
    fi
  done
  max=${GPIX_TIDY_MAX_FILES:-40}
  if ((${#files[@]} > max)); then
    echo "tidy: ${#files[@]} files changed since ${base:0:10}; checking the first $max"
    files=("${files[@]:0:max}")
  fi
fi

# Only sources in the build; each once.
declare -A in_build=()
for c in "${compiled[@]}"; do in_build[$c]=1; done
declare -A seen=()
check=()
for f in "${files[@]}"; do
  if [ -z "${in_build[$f]:-}" ]; then
    echo "tidy: skipping $f (not compiled by $build)"
  elif [ -z "${seen[$f]:-}" ]; then
    seen[$f]=1
    check+=("$f")
  fi
done
((${#check[@]})) || { echo "tidy: no C++ source to check"; exit 0; }
echo "tidy: checking ${#check[@]} file(s) with $("$tidy" --version | grep -o 'version [0-9.]*')"

out=$(mktemp -d)
db=$(mktemp -d)
trap 'rm -rf "$out" "$db"' EXIT
# The suites compile with a GCC precompiled header (cmake/GpixTest.cmake), which clang cannot
# read: clang-tidy gets their commands without it (each suite includes what it uses).
python3 - "$build/compile_commands.json" "$db/compile_commands.json" <<'EOF'
import json, re, sys
entries = json.load(open(sys.argv[1]))
for e in entries:
    if "command" in e:
        e["command"] = re.sub(r" -Winvalid-pch| -include \S*cmake_pch\.hxx", "", e["command"])
json.dump(entries, open(sys.argv[2], "w"))
EOF
export tidy db out
# shellcheck disable=SC2317  # one runs through xargs
one() {  # a log (the file's name, then clang-tidy's output) for each file that did not pass
  local log
  log="$out/$(tr / _ <<<"$1")"
  echo "$1" >"$log"
  if "$tidy" -p "$db" --quiet --extra-arg=-Wno-error "$1" >>"$log" 2>&1; then
    rm "$log"
  fi
}
export -f one
# shellcheck disable=SC2016  # $1 is one's argument, expanded by that bash
printf '%s\n' "${check[@]}" | xargs -P "$(nproc)" -I{} bash -c 'one "$1"' _ {}

failed=0
for log in "$out"/*; do
  [ -e "$log" ] || continue
  if grep -q "\[clang-diagnostic-error\]" "$log"; then
    echo "tidy: not checked, clang cannot compile $(head -1 "$log"): $(grep -m1 "error:" "$log")"
  else
    tail -n +2 "$log" | grep -v "warnings\? generated\.$"
    failed=1
  fi
done
exit $failed
