#!/usr/bin/env bash
# Tessel vs Slurm 22.05 on this machine, same workloads, one run (~5-10 min).
#   bench/slurm/run.sh [BUILD_DIR]     (root: installs slurm-wlm + munge with apt-get if missing)
# 1. builds tessel-scheduler, tessel-agent, the fake hl-smi, bench_stamp and bench_submit in
#    BUILD_DIR (default build-bench, configured with -DTESSEL_WORKERS=OFF) if they are missing;
# 2. WORKLOAD=short (default): starts a loopback Slurm with default scheduler settings
#    (slurm_cluster.sh: slurmctld + NODES slurmd, 8 gpu GRES each) and runs compare.py
#    (short-job throughput, submit-to-start latency, submissions/s with 1 and 16 clients,
#    both systems) and bench_submit (Tessel's REST with keep-alive C++ clients, for the
#    server's own ceiling); prints the table and ratios;
# 3. WORKLOAD=mixed: starts a loopback Slurm tuned for throughput
#    (SchedulerParameters=$TUNED below) and runs compare.py --workload mixed (MIXED_JOBS
#    jobs of 1/2/4/8 cards sleeping 0.5-2.5 s: makespan and card utilisation, both systems).
#    WORKLOAD=all runs short, then mixed, each on its own fresh Slurm.
# Env: NODES (4), JOBS (500), SECONDS_PER_RATE (10), WORKLOAD (short|mixed|all),
#      MIXED_JOBS (160), SEED (1).
# SMOKE=1 (ctest bench_smoke_slurm): tiny sizes (1 node, 5 jobs, 1 s per rate, 8 mixed
# jobs); where Slurm is missing or we are not root, it checks compare.py's flags and
# exits 77 (skipped) instead of installing anything.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:-$root/build-bench}
if [[ ${SMOKE:-0} == 1 ]]; then
  : "${NODES:=1}" "${JOBS:=5}" "${SECONDS_PER_RATE:=1}" "${MIXED_JOBS:=8}"
  python3 "$here/compare.py" --help >/dev/null
  if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null || [[ $(id -u) != 0 ]]; then
    echo "run.sh: smoke skipped: needs root and slurm-wlm + munge installed" >&2
    exit 77
  fi
fi
nodes=${NODES:-4} jobs=${JOBS:-500} secs=${SECONDS_PER_RATE:-10}
workload=${WORKLOAD:-short} mixed_jobs=${MIXED_JOBS:-160} seed=${SEED:-1}
TUNED=batch_sched_delay=0,sched_min_interval=0,default_queue_depth=1000,bf_interval=1
case $workload in short|mixed|all) ;; *) echo "run.sh: WORKLOAD must be short, mixed or all" >&2; exit 2;; esac

if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
  [[ $(id -u) == 0 ]] || { echo "run.sh: slurm-wlm and munge are missing; run as root to install" >&2; exit 1; }
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends slurm-wlm munge
fi
[[ $(id -u) == 0 ]] || { echo "run.sh: needs root (slurmd runs jobs as root here, mknod for fake GPUs)" >&2; exit 1; }

if [[ ! -x $build/bin/tessel-scheduler || ! -x $build/bin/tessel-agent || ! -x $build/fake/habana/hl-smi ||
      ! -x $build/bin/bench_stamp ]]; then
  [[ ${SMOKE:-0} != 1 ]] || { echo "run.sh: smoke: binaries missing in $build (no build in smoke mode)" >&2; exit 1; }
  [[ -f $build/build.ninja ]] || cmake -S "$root" -B "$build" -G Ninja -DTESSEL_WORKERS=OFF -DCMAKE_BUILD_TYPE=Release
  # Reconfigure: a build directory configured before bench/turnaround existed has no bench_stamp.
  cmake "$build" >/dev/null
  cmake --build "$build" --target tessel-scheduler tessel-agent fake-hl-smi bench_submit bench_stamp
fi

slurm_dir=
stop_slurm() {
  [[ -n $slurm_dir ]] || return 0
  "$here/slurm_cluster.sh" stop "$slurm_dir"
  rm -rf "$slurm_dir"
  slurm_dir=
}
start_slurm() {  # start_slurm [SchedulerParameters]
  stop_slurm
  slurm_dir=$(mktemp -d /tmp/tessel-vs-slurm.XXXXXX)
  SCHED_PARAMS=${1:-} "$here/slurm_cluster.sh" start "$slurm_dir" "$nodes"
  export SLURM_CONF=$slurm_dir/slurm.conf
}
trap stop_slurm EXIT

echo "== $(date -u +%FT%TZ)  nproc=$(nproc)  cpu=$(lscpu | sed -n 's/^Model name: *//p')"
echo "== slurm $(slurmctld -V | awk '{print $2}'), $nodes nodes x 8 gpu; tessel $(git -C "$root" rev-parse --short HEAD) (binaries from $build), $nodes agents x 8 cards"
if [[ $workload == short || $workload == all ]]; then
  start_slurm
  echo "== short jobs (Slurm's default SchedulerParameters)"
  python3 "$here/compare.py" --build "$build" --slurm-dir "$slurm_dir" --nodes "$nodes" --jobs "$jobs" --seconds "$secs"
  if [[ -x $build/bench/scheduler/bench_submit ]]; then
    echo "== tessel REST ceiling (bench_submit, C++ keep-alive clients)"
    "$build/bench/scheduler/bench_submit" "$secs"
  elif [[ -x $build/bin/bench_submit ]]; then
    echo "== tessel REST ceiling (bench_submit, C++ keep-alive clients)"
    "$build/bin/bench_submit" "$secs"
  fi
fi
if [[ $workload == mixed || $workload == all ]]; then
  start_slurm "$TUNED"
  echo "== mixed workload (Slurm SchedulerParameters=$TUNED; Tessel default flags)"
  python3 "$here/compare.py" --workload mixed --build "$build" --slurm-dir "$slurm_dir" --nodes "$nodes" \
    --mixed-jobs "$mixed_jobs" --seed "$seed"
fi
