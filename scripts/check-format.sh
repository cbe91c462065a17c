#!/usr/bin/env bash
# Format check: every tracked C++ file (*.cpp, *.hpp, *.h, *.cc, from `git ls-files`)
# must be formatted as the repository's .clang-format says. Reformats nothing: it
# lists each file that differs and exits 1. Fix a file with `clang-format -i FILE`.
# Environment: CLANG_FORMAT (default clang-format; CI uses Debian 12's, version 14,
# and other versions may format some constructs differently), JOBS (default nproc).
set -euo pipefail
cd "$(dirname "$0")/.."

clang_format=${CLANG_FORMAT:-clang-format}
command -v "$clang_format" >/dev/null || { echo "format: $clang_format not found (scripts/setup.sh installs it)"; exit 1; }
[[ -f .clang-format ]] || { echo "format: .clang-format missing"; exit 1; }
"$clang_format" --style=file --dump-config >/dev/null || { echo "format: .clang-format is not valid for $clang_format"; exit 1; }

list_files() {
  if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git ls-files -z -- '*.cpp' '*.hpp' '*.h' '*.cc'
  else
    # Not a git checkout (an exported tree): every such file outside build folders.
    echo "format: not a git checkout; checking every C++ file outside build*/" >&2
    find . \( -path './build*' -o -path './.git' \) -prune -o -type f \
      \( -name '*.cpp' -o -name '*.hpp' -o -name '*.h' -o -name '*.cc' \) -printf '%P\0'
  fi
}

files=()
while IFS= read -r -d '' f; do
  [[ -f $f ]] && files+=("$f")  # Skips tracked files deleted in the work tree.
done < <(list_files)
((${#files[@]})) || { echo "format: no C++ files found"; exit 1; }

# Every core checks a share of the files; each prints the names of those that differ.
bad=()
while IFS= read -r f; do bad+=("$f"); done < <(
  printf '%s\0' "${files[@]}" |
    xargs -0 -P "${JOBS:-$(nproc)}" -n 16 sh -c \
      'cf=$1; shift; for f; do "$cf" --style=file --dry-run -Werror "$f" >/dev/null 2>&1 || echo "$f"; done' \
      _ "$clang_format" | sort
)

if ((${#bad[@]})); then
  echo "format: ${#bad[@]} of ${#files[@]} files differ from .clang-format ($("$clang_format" --version | head -1)):"
  printf '  %s\n' "${bad[@]}"
  echo "format: see the changes with: $clang_format --style=file FILE | diff FILE -"
  exit 1
fi
echo "format: ${#files[@]} files ok"
