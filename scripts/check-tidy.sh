#!/usr/bin/env bash
# clang-tidy check: the C++ sources of agent/, api/, cli/, common/, scheduler/ and
# tools/ (as compiled in BUILD_DIR, default build/, which must have been configured:
# it holds compile_commands.json) against the repository's .clang-tidy, where every
# enabled check is an error. Lists the findings and exits 1 on any. The tests,
# benches and the LibTorch workers are not checked (their headers make clang-tidy
# several times slower).
#
# Two scopes:
#   --all        every source (the full check; run it before updating .ci/tidy-clean).
#   --since REV  the sources changed since commit REV, and for each changed header one
#                source that includes it (the .cpp of the same name when there is one,
#                else the first in the build's dependency log, ninja -t deps, so BUILD_DIR
#                must have been built): .clang-tidy's HeaderFilterRegex reports a header's
#                findings through any source that includes it. A source whose own text is
#                unchanged is not re-checked for a header's change; the compiler checks
#                those uses, and --all catches the rest. A change to .clang-tidy checks
#                everything. REV missing from the clone: everything.
# Without a scope: --since the commit in .ci/tidy-clean when that file exists, else --all.
# Usage: scripts/check-tidy.sh [BUILD_DIR] [--all | --since REV]
# Environment: JOBS (default nproc), CLANG_TIDY (default clang-tidy; CI uses Debian 12's, 14).
set -euo pipefail
cd "$(dirname "$0")/.."
build=build
scope=default
since=
while (($#)); do
  case $1 in
    --all) scope=all ;;
    --since) since=${2:?--since needs a commit}; scope=since; shift ;;
    -*) echo "tidy: unknown option $1"; exit 2 ;;
    *) build=$1 ;;
  esac
  shift
done
jobs=${JOBS:-$(nproc)}
clang_tidy=${CLANG_TIDY:-clang-tidy}

command -v "$clang_tidy" >/dev/null || { echo "tidy: $clang_tidy not found (scripts/setup.sh installs it)"; exit 1; }
[[ -f $build/compile_commands.json ]] || { echo "tidy: $build/compile_commands.json missing (configure $build first)"; exit 1; }

if [[ $scope == default ]]; then
  if [[ -f .ci/tidy-clean ]]; then
    since=$(tr -d '[:space:]' <.ci/tidy-clean)
    scope=since
  else
    scope=all
  fi
fi
if [[ $scope == since ]] && ! git cat-file -e "$since^{commit}" 2>/dev/null; then
  echo "tidy: commit $since is not in this clone: checking every source"
  scope=all
fi

files=()
while IFS= read -r f; do files+=("$f"); done < <(
  git ls-files -- 'agent/*.cpp' 'api/*.cpp' 'cli/*.cpp' 'common/*.cpp' 'scheduler/*.cpp' 'tools/*.cpp' |
    while IFS= read -r f; do
      # Only what this build compiles (a file of a disabled option is not in the database).
      grep -qF "\"$PWD/$f\"" "$build/compile_commands.json" && echo "$f"
    done
)
((${#files[@]})) || { echo "tidy: no sources found in $build/compile_commands.json"; exit 1; }
total=${#files[@]}

if [[ $scope == since ]]; then
  changed=$(git diff --name-only "$since" -- . ; git ls-files --others --exclude-standard)
  if grep -qx '.clang-tidy' <<<"$changed"; then
    echo "tidy: .clang-tidy changed since $since: checking every source"
  else
    # Each object's inputs, as "SOURCE<TAB>DEPENDENCY" lines with repository-relative
    # paths; for every changed header, the source to check it through.
    selected=$(
      ninja -C "$build" -t deps 2>/dev/null | awk -v root="$PWD/" -v rel="$(realpath --relative-to="$build" .)/" '
        /^[^ ].*: #deps/ { src = ""; first = 1; next }
        /^    / {
          path = substr($0, 5)
          if (index(path, root) == 1) path = substr(path, length(root) + 1)
          else if (index(path, rel) == 1) path = substr(path, length(rel) + 1)
          else if (path ~ /^\//) next
          if (first) { src = path; first = 0 }
          if (src != "") print src "\t" path
        }' |
        awk -F'\t' '
          NR == FNR { if ($0 ~ /\.(hpp|h)$/) changed[$0] = 1; next }
          !($2 in changed) || $1 ~ /^tests\// || $1 ~ /^bench\// || $1 ~ /^workers\// { next }
          {
            stem = $2; sub(/\.(hpp|h)$/, "", stem); sub(/.*\//, "", stem)
            base = $1; sub(/\.cpp$/, "", base); sub(/.*\//, "", base)
            if (!($2 in pick) || (base == stem && !($2 in same))) { pick[$2] = $1; if (base == stem) same[$2] = 1 }
          }
          END { for (h in pick) print pick[h] }' <(printf '%s\n' "$changed") - |
        sort -u
    )
    kept=()
    for f in "${files[@]}"; do
      if grep -qxF "$f" <<<"$changed" || grep -qxF "$f" <<<"$selected"; then kept+=("$f"); fi
    done
    files=("${kept[@]+"${kept[@]}"}")
    echo "tidy: ${#files[@]} of $total sources to check for the changes since $(git rev-parse --short "$since") (changed sources, and one source per changed header)"
    ((${#files[@]})) || { echo "tidy: nothing to check"; exit 0; }
  fi
fi

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
