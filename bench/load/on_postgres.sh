#!/usr/bin/env bash
# bench_load against a tessel-scheduler leader on PostgreSQL (issue 12): starts its own
# PostgreSQL 15 (initdb + pg_ctl in a temp dir, TCP on a loopback port, fsync on as
# initdb leaves it; as root through runuser -u postgres), runs
#   BUILD/bin/bench_load --nodes N --db postgresql://... ARGS...
# on an empty database, and stops the server again. Not run in CI.
# Usage: bench/load/on_postgres.sh BUILD N [bench_load args...]
# Exit 77 when PostgreSQL 15's binaries are missing (scripts/setup.sh installs them).
set -euo pipefail
[[ $# -ge 2 ]] || { echo "usage: $0 BUILD NODES [bench_load args...]" >&2; exit 2; }
build=$1 nodes=$2
shift 2
pg=/usr/lib/postgresql/15/bin
[[ -x $pg/initdb && -x $pg/pg_ctl ]] || { echo "on_postgres: $pg/initdb and pg_ctl are needed" >&2; exit 77; }
[[ -x $build/bin/bench_load ]] || { echo "on_postgres: $build/bin/bench_load not built" >&2; exit 2; }

dir=$(mktemp -d /tmp/tessel-load-pg.XXXXXX)
as_pg=()
if [[ $(id -u) == 0 ]]; then
  chown postgres: "$dir"
  as_pg=(/usr/sbin/runuser -u postgres --)
fi
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cleanup() {
  "${as_pg[@]}" "$pg/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap cleanup EXIT
"${as_pg[@]}" "$pg/initdb" -D "$dir/data" -U tessel --auth=trust -E UTF8 --no-locale >/dev/null
printf "listen_addresses = '127.0.0.1'\nunix_socket_directories = '%s'\nmax_connections = 50\n" "$dir" \
  >>"$dir/data/postgresql.conf"
"${as_pg[@]}" "$pg/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 -o "-p $port" start >/dev/null
"$build/bin/bench_load" --nodes "$nodes" --db "postgresql://tessel@127.0.0.1:$port/postgres" "$@"
