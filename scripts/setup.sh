#!/usr/bin/env bash
# Installs the Debian 12 packages Tessel needs to build, test and run its demo, and
# the npm packages of the console's browser test and linter (tests/browser:
# puppeteer-core, which drives Debian's chromium and downloads no browser, and ESLint).
# Idempotent: installs only what is missing. Needs root (or sudo), Debian's archive
# and the npm registry.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git ca-certificates openssl
  clang libclang-rt-14-dev clang-format clang-tidy lld
  libgtest-dev libgmock-dev
  libsqlite3-dev libsystemd-dev systemd
  libpq-dev postgresql-15
  libboost-dev libboost-filesystem-dev libboost-system-dev libssl-dev
  libcpp-httplib-dev nlohmann-json3-dev libcli11-dev libspdlog-dev libfmt-dev
  libtorch-dev libgloo-dev
  # Debian's LibTorch multiplies matrices through libblas.so.3, which is the reference
  # BLAS unless an optimized one is installed (perf: 45 % of tessel-infer's time in
  # its sgemm_). OpenBLAS built for OpenMP: it follows LibTorch's thread count (--threads),
  # and unlike Debian's serial build it gives threads multiplying at once the right
  # products (tests/workers/blas_test.cpp).
  libopenblas0-openmp
  dpkg-dev fakeroot file
  iproute2 procps psmisc curl python3
  python3-torch
  # Jobs in containers (issue 29): podman as the agent runs it, with runc (crun, the
  # package's default, refuses cgroup v1/hybrid hosts like CI's) and catatonit (podman
  # --init: a job's SIGTERM reaches it); busybox-static builds the tests' image locally
  # (podman import), as no registry is reachable from CI.
  podman runc crun catatonit busybox-static
  nodejs chromium fonts-dejavu-core
)
# Debian's npm, unless an npm came with another nodejs build (which conflicts with it).
command -v npm >/dev/null || packages+=(npm)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo=""
  if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The browser test's and the linter's npm packages, exactly as locked; again only when the lock changed.
browser=$(dirname "$0")/../tests/browser
if ! cmp -s "$browser/package-lock.json" "$browser/node_modules/.tessel-lock" 2>/dev/null; then
  echo "setup: npm ci in tests/browser"
  (cd "$browser" && npm ci --no-audit --no-fund --loglevel=error && cp package-lock.json node_modules/.tessel-lock)
fi
