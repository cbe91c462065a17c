#!/usr/bin/env bash
# Set-up plus every test: installs missing Debian packages, checks the formatting of
# every tracked C++ file (scripts/check-format.sh), builds everything, runs clang-tidy
# on the non-test sources and headers changed since .ci/tidy-clean (scripts/check-tidy.sh) and ctest on the tests the sanitizer
# build cannot run (LibTorch, browser, systemd units, benchmark smoke runs);
# then one ASan+UBSan build (clang, with its lock checks: -Wthread-safety, and libFuzzer's
# coverage instrumentation) of everything that does not link LibTorch: its tests run
# under the sanitizers, then each libFuzzer target of the same build for a bounded time
# (JOBS targets at once).
# Environment: JOBS (build parallelism, default nproc), FUZZ_SECONDS (per target, default 12),
# SKIP_ASAN=1 / SKIP_FUZZ=1 to shorten local runs (CI runs everything).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
jobs=${JOBS:-$(nproc)}
fuzz_seconds=${FUZZ_SECONDS:-12}

step() { printf '\n==> %s (%s)\n' "$*" "$(date +%T)"; }

step "set-up"
scripts/setup.sh

step "format (clang-format, .clang-format)"
scripts/check-format.sh

step "docs: every link between Markdown files reaches a file and a heading"
python3 scripts/check-doc-links.py .

# Each test is built and run once: the sanitizer build below runs every test it can,
# so this build carries only the rest (TESSEL_TEST_SET=unsanitized: LibTorch workers,
# browser, systemd units, benchmark smoke runs); without that build, all of them.
test_set=$([[ ${SKIP_ASAN:-0} == 1 ]] && echo all || echo unsanitized)
step "build (-O2 without debug info: TESSEL_DEBUG_INFO=OFF; with LibTorch workers; tests: $test_set)"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTESSEL_DEBUG_INFO=OFF -DCMAKE_INSTALL_PREFIX=/usr \
  -DTESSEL_TEST_SET="$test_set" >/dev/null
cmake --build build -j "$jobs"

# The sources changed since the last full clean check (.ci/tidy-clean); the full check
# is scripts/check-tidy.sh build --all (docs/contributing.md says when to run it).
step "clang-tidy (.clang-tidy, every finding an error; sources changed since .ci/tidy-clean)"
scripts/check-tidy.sh build

step "tests"
ctest --test-dir build --output-on-failure -j "$jobs" --timeout 600

step "Debian packages (cpack, contents, apt-get install)"
TESSEL_EXPECT_WORKERS=1 scripts/test-packages.sh build

# The sanitizer build is also the fuzz build (one configuration, built once): the fuzz
# targets link libFuzzer, everything else carries its coverage hooks, unused outside it.
fuzz_build=build-asan
if [[ ${SKIP_ASAN:-0} != 1 ]]; then
  step "build with ASan+UBSan, clang's lock checks and the fuzz targets (clang, no LibTorch)"
  # clang, so the build also runs -Wthread-safety (TESSEL_THREAD_SAFETY) as an error. A
  # cache left by a gcc build of build-asan keeps its compiler: drop it.
  if [[ -f build-asan/CMakeCache.txt ]] && ! grep -q '^CMAKE_CXX_COMPILER:.*clang++' build-asan/CMakeCache.txt; then
    rm -rf build-asan
  fi
  CC=clang CXX=clang++ cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DTESSEL_WORKERS=OFF \
    -DTESSEL_SANITIZE=ON -DTESSEL_FUZZ="$([[ ${SKIP_FUZZ:-0} != 1 ]] && echo ON || echo OFF)" >/dev/null
  cmake --build build-asan -j "$jobs"
  step "tests under ASan+UBSan"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build-asan --output-on-failure -j "$jobs" --timeout 900 -LE no_sanitizer
elif [[ ${SKIP_FUZZ:-0} != 1 ]]; then
  step "build the fuzz targets (clang, libFuzzer, ASan+UBSan)"
  fuzz_build=build-fuzz
  CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DTESSEL_WORKERS=OFF -DTESSEL_FUZZ=ON >/dev/null
  cmake --build build-fuzz -j "$jobs" --target fuzz_all
fi

if [[ ${SKIP_FUZZ:-0} != 1 ]]; then
  step "fuzz targets (libFuzzer), ${fuzz_seconds}s each, ${jobs} at once"
  shopt -s nullglob
  fuzzers=()
  for fuzzer in "$fuzz_build"/bin/fuzz_*; do [[ -x $fuzzer && -f $fuzzer ]] && fuzzers+=("$fuzzer"); done
  ((${#fuzzers[@]})) || { echo "fuzz: no fuzz targets were built"; exit 1; }
  # One target: its seed corpus copied to a temp dir (libFuzzer adds to it), its log
  # printed only when it finds something.
  fuzz_one() {
    local fuzzer=$1 name corpus
    name=$(basename "$fuzzer")
    corpus=$(mktemp -d)
    if [[ -d tests/fuzz/corpus/$name ]]; then cp -r "tests/fuzz/corpus/$name/." "$corpus/"; fi
    echo "fuzz: $name"
    if ! "$fuzzer" -max_total_time="$FUZZ_SECONDS" -timeout=10 -rss_limit_mb=2048 -print_final_stats=0 \
      "$corpus" 2>"$corpus.log"; then
      tail -50 "$corpus.log"
      echo "fuzz: $name FAILED"
      rm -rf "$corpus" "$corpus.log"
      return 1
    fi
    rm -rf "$corpus" "$corpus.log"
  }
  export -f fuzz_one
  export FUZZ_SECONDS=$fuzz_seconds
  printf '%s\n' "${fuzzers[@]}" | xargs -P "$jobs" -I{} bash -c 'fuzz_one "$1"' _ {} ||
    { echo "fuzz: a target failed (above)"; exit 1; }
fi

step "all tests passed"
