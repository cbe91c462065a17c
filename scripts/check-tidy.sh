#!/usr/bin/env bash
# clang-tidy check: every C++ source of agent/, api/, cli/, common/, scheduler/ and
# tools/ (as compiled in BUILD_DIR, default build/, which must have been configured:
# it holds compile_commands.json) against the repository's .clang-tidy, where every
# enabled check is an error. Lists the findings and exits 1 on any. The tests,
# benches and the LibTorch workers are not checked (their headers make clang-tidy
# several times slower).
# Usage: scripts/check-tidy.sh [BUILD_DIR]. Environment: JOBS (default nproc),
# CLANG_TIDY (default clang-tidy; CI uses Debian 12's, version 14).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
jobs=${JOBS:-$(nproc)}
clang_tidy=${CLANG_TIDY:-clang-tidy}

command -v "$clang_tidy" >/dev/null || { echo "tidy: $clang_tidy not found (scripts/setup.sh installs it)"; exit 1; }
[[ -f $build/compile_commands.json ]] || { echo "tidy: $build/compile_commands.json missing (configure $build first)"; exit 1; }

files=()
while IFS= read -r f; do files+=("$f"); done < <(
  git ls-files -- 'agent/*.cpp' 'api/*.cpp' 'cli/*.cpp' 'common/*.cpp' 'scheduler/*.cpp' 'tools/*.cpp' |
    while IFS= read -r f; do
      # Only what this build compiles (a file of a disabled option is not in the database).
      grep -qF "\"$PWD/$f\"" "$build/compile_commands.json" && echo "$f"
    done
)
((${#files[@]})) || { echo "tidy: no sources found in $build/compile_commands.json"; exit 1; }

out=$(mktemp)
trap 'rm -f "$out"' EXIT
printf '%s\n' "${files[@]}" |
  xargs -P "$jobs" -n 4 "$clang_tidy" -p "$build" --quiet --warnings-as-errors='*' >"$out" 2>/dev/null || true
if grep -q ': error: ' "$out"; then
  grep -E ': (error|note): ' "$out" | grep -v 'warnings generated' | head -200
  echo "tidy: $(grep -c ': error: ' "$out") finding(s) in ${#files[@]} files ($("$clang_tidy" --version | grep -m1 version))"
  exit 1
fi
echo "tidy: ${#files[@]} files ok"
