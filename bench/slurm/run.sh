#!/usr/bin/env bash
# Tessel vs Slurm 22.05 on this machine, same workloads, one run (~5-10 min).
#   bench/slurm/run.sh [BUILD_DIR]     (root: installs slurm-wlm + munge with apt-get if missing)
# 1. builds tessel-scheduler, tessel-agent, the fake hl-smi and bench_submit in BUILD_DIR
#    (default build-bench, configured with -DTESSEL_WORKERS=OFF) if they are missing;
# 2. starts a loopback Slurm (slurm_cluster.sh: slurmctld + NODES slurmd, 8 gpu GRES each);
# 3. runs compare.py (short-job throughput, submit-to-start latency, submissions/s with
#    1 and 16 clients, both systems) and bench_submit (Tessel's REST with keep-alive C++
#    clients, for the server's own ceiling); prints the table and ratios.
# Env: NODES (4), JOBS (500), SECONDS_PER_RATE (10).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:-$root/build-bench}
nodes=${NODES:-4} jobs=${JOBS:-500} secs=${SECONDS_PER_RATE:-10}

if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
  [[ $(id -u) == 0 ]] || { echo "run.sh: slurm-wlm and munge are missing; run as root to install" >&2; exit 1; }
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends slurm-wlm munge
fi
[[ $(id -u) == 0 ]] || { echo "run.sh: needs root (slurmd runs jobs as root here, mknod for fake GPUs)" >&2; exit 1; }

if [[ ! -x $build/bin/tessel-scheduler || ! -x $build/bin/tessel-agent || ! -x $build/fake/habana/hl-smi ]]; then
  [[ -f $build/build.ninja ]] || cmake -S "$root" -B "$build" -G Ninja -DTESSEL_WORKERS=OFF -DCMAKE_BUILD_TYPE=Release
  cmake --build "$build" --target tessel-scheduler tessel-agent fake-hl-smi bench_submit
fi

slurm_dir=$(mktemp -d /tmp/tessel-vs-slurm.XXXXXX)
trap '"$here/slurm_cluster.sh" stop "$slurm_dir"; rm -rf "$slurm_dir"' EXIT
"$here/slurm_cluster.sh" start "$slurm_dir" "$nodes"
export SLURM_CONF=$slurm_dir/slurm.conf

echo "== $(date -u +%FT%TZ)  nproc=$(nproc)  cpu=$(lscpu | sed -n 's/^Model name: *//p')"
echo "== slurm $(slurmctld -V | awk '{print $2}'), $nodes nodes x 8 gpu; tessel $(git -C "$root" rev-parse --short HEAD), $nodes agents x 8 cards"
python3 "$here/compare.py" --build "$build" --slurm-dir "$slurm_dir" --nodes "$nodes" --jobs "$jobs" --seconds "$secs"
if [[ -x $build/bench/scheduler/bench_submit ]]; then
  echo "== tessel REST ceiling (bench_submit, C++ keep-alive clients)"
  "$build/bench/scheduler/bench_submit" "$secs"
elif [[ -x $build/bin/bench_submit ]]; then
  echo "== tessel REST ceiling (bench_submit, C++ keep-alive clients)"
  "$build/bin/bench_submit" "$secs"
fi
