#!/usr/bin/env bash
# Builds the Debian packages from an existing build tree (configured with
# -DCMAKE_INSTALL_PREFIX=/usr), checks their contents and dependencies, and, as
# root, installs them with apt-get, checks the installed units and binaries,
# then purges them again.   Usage: scripts/test-packages.sh BUILD_DIR
set -euo pipefail
build=$(realpath "${1:-build}")
root=$(cd "$(dirname "$0")/.." && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

fail() { echo "test-packages: $*" >&2; exit 1; }

(cd "$out" && cpack -G DEB --config "$build/CPackConfig.cmake" -B "$out" >/dev/null) || fail "cpack failed"
shopt -s nullglob
debs=("$out"/*.deb)
((${#debs[@]} >= 3)) || fail "expected at least 3 packages, got ${#debs[@]}"

contains() { dpkg-deb -c "$1" | awk '{print $6}' | grep -qx "$2" || fail "$(basename "$1") lacks $2"; }
deb_of() { local d; for d in "${debs[@]}"; do [[ $(dpkg-deb -f "$d" Package) == "$1" ]] && { echo "$d"; return; }; done; fail "no $1 package"; }

sched=$(deb_of tessel-scheduler)
agent=$(deb_of tessel-agent)
contains "$sched" ./usr/bin/tessel-scheduler
contains "$sched" ./usr/lib/systemd/system/tessel-scheduler.service
contains "$sched" ./etc/tessel/scheduler.conf
contains "$agent" ./usr/bin/tessel-agent
contains "$agent" ./usr/bin/tessel-supervisor
contains "$agent" ./usr/lib/systemd/system/tessel-agent.service
contains "$agent" ./etc/tessel/agent.conf
dpkg-deb -f "$sched" Depends | grep -q libsqlite3 || fail "tessel-scheduler does not depend on libsqlite3"
dpkg-deb -f "$sched" Depends | grep -q libpq5 || fail "tessel-scheduler does not depend on libpq5"
dpkg-deb -f "$sched" Depends | grep -q adduser || fail "tessel-scheduler does not depend on adduser"
dpkg-deb -I "$sched" postinst >/dev/null || fail "tessel-scheduler has no postinst"
if [[ -n ${TESSEL_EXPECT_WORKERS:-} ]]; then
  workers=$(deb_of tessel-workers)
  contains "$workers" ./usr/bin/tessel-train
  dpkg-deb -f "$workers" Depends | grep -q libtorch || fail "tessel-workers does not depend on libtorch"
fi
echo "test-packages: contents and dependencies ok (${#debs[@]} packages)"

if [[ $(id -u) -ne 0 || ${TESSEL_PACKAGE_INSTALL:-1} == 0 ]]; then
  echo "test-packages: not root (or TESSEL_PACKAGE_INSTALL=0): install check skipped"
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get install -y -qq "${debs[@]}" >/dev/null || fail "apt-get install failed"
names=$(for d in "${debs[@]}"; do dpkg-deb -f "$d" Package; done)
cleanup_install() { apt-get purge -y -qq $names >/dev/null 2>&1 || true; }
trap 'cleanup_install; rm -rf "$out"' EXIT
getent passwd tessel >/dev/null || fail "postinst did not create the tessel user"
getent passwd tessel-jobs >/dev/null || fail "postinst did not create the tessel-jobs user"
grep -q '^TESSEL_AGENT_ARGS=--run-as tessel-jobs' /etc/tessel/agent.conf || fail "agent.conf does not name the jobs' user"
[[ -L /etc/systemd/system/multi-user.target.wants/tessel-scheduler.service ]] || fail "tessel-scheduler.service not enabled"
[[ -L /etc/systemd/system/multi-user.target.wants/tessel-agent.service ]] || fail "tessel-agent.service not enabled"
/usr/bin/tessel-scheduler --help >/dev/null || fail "installed tessel-scheduler does not run"
/usr/bin/tessel-agent --help >/dev/null || fail "installed tessel-agent does not run"
"$root/tests/systemd/verify-units.sh" "$root" /usr/bin >/dev/null || fail "installed units do not verify"
echo "test-packages: installed with apt-get, units enabled, binaries run; purging"
