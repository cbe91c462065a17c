#!/usr/bin/env bash
# Runs systemd-analyze verify on the shipped units. ExecStart binaries are
# pointed at this build's (or /bin/true) so the check does not need an install.
set -euo pipefail
src=$1
bindir=${2:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for unit in "$src"/systemd/*.service; do
  name=$(basename "$unit")
  bin=$(sed -n 's#^ExecStart=\(/usr/bin/[^ ]*\).*#\1#p' "$unit")
  repl=/bin/true
  if [[ -n $bindir && -x $bindir/$(basename "$bin") ]]; then repl=$bindir/$(basename "$bin"); fi
  sed "s#$bin#$repl#" "$unit" >"$tmp/$name"
done
out=$(systemd-analyze verify "$tmp"/*.service 2>&1) || { echo "$out"; exit 1; }
# verify exits 0 on some warnings; treat any line about our units as a failure.
if grep -E "tessel-(scheduler|agent)\.service" <<<"$out"; then exit 1; fi
for want in "Type=notify" "WatchdogSec=" "Restart=on-failure" "StateDirectory=" "EnvironmentFile=-/etc/tessel/"; do
  for unit in "$src"/systemd/*.service; do
    grep -q "^$want" "$unit" || { echo "$(basename "$unit"): missing $want"; exit 1; }
  done
done
grep -q '^KillMode=process' "$src/systemd/tessel-agent.service" || { echo "agent: KillMode=process missing"; exit 1; }
for want in NoNewPrivileges=yes ProtectSystem=strict ProtectHome=yes PrivateTmp=yes User=tessel; do
  grep -q "^$want" "$src/systemd/tessel-scheduler.service" || { echo "scheduler: missing $want"; exit 1; }
done
echo "units verified"
