#!/usr/bin/env bash
# Starts (or stops) a loopback Slurm 22.05 cluster for the benchmarks:
# one slurmctld and one slurmd per simulated node (slurmd -N NAME, distinct ports,
# all on 127.0.0.1), 8 `gpu` GRES per node. Slurm 22.05 ignores a gpu GRES declared
# with Count only (the node registers 0 GPUs and goes INVAL), so each node gets 8
# fake device files: character devices with /dev/null's numbers (mknod, root).
#   slurm_cluster.sh start DIR NODES     writes DIR/slurm.conf, starts munged if needed
#   slurm_cluster.sh stop DIR            stops the daemons started from DIR (by pid file)
# Env SCHED_PARAMS: a SchedulerParameters= value for slurm.conf (default: none, Slurm's
# defaults), e.g. the throughput settings run.sh uses for the mixed workload:
#   SCHED_PARAMS=batch_sched_delay=0,sched_min_interval=0,default_queue_depth=1000,bf_interval=1
# Everyone using this cluster must export SLURM_CONF=DIR/slurm.conf.
set -euo pipefail
cmd=$1 dir=$2
host=$(hostname -s)

stop() {
  for f in "$dir"/pids/*.pid; do
    [[ -f $f ]] || continue
    pid=$(cat "$f")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$f"
  done
}

if [[ $cmd == stop ]]; then stop; exit 0; fi

nodes=${3:-4}
mkdir -p "$dir"/{state,pids,log,dev}
for i in $(seq 0 7); do [[ -c $dir/dev/gpu$i ]] || mknod "$dir/dev/gpu$i" c 1 3; done
for i in $(seq 1 "$nodes"); do mkdir -p "$dir/spool-sn$i"; done
{
  cat <<CONF
ClusterName=tbench
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=16817
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool-%n
SlurmctldPidFile=$dir/pids/slurmctld.pid
SlurmdPidFile=$dir/pids/slurmd-%n.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
ReturnToService=2
SlurmdParameters=config_overrides
MaxJobCount=100000
MinJobAge=300
PartitionName=bench Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
CONF
  [[ -z ${SCHED_PARAMS:-} ]] || echo "SchedulerParameters=$SCHED_PARAMS"
  for i in $(seq 1 "$nodes"); do
    echo "NodeName=sn$i NodeHostname=$host NodeAddr=127.0.0.1 Port=$((17000 + i)) CPUs=8 RealMemory=1000 Gres=gpu:8 State=UNKNOWN"
  done
} >"$dir/slurm.conf"
echo "NodeName=sn[1-$nodes] Name=gpu File=$dir/dev/gpu[0-7]" >"$dir/gres.conf"
export SLURM_CONF=$dir/slurm.conf

if ! munge -n >/dev/null 2>&1; then
  mkdir -p /run/munge && chown munge:munge /run/munge
  runuser -u munge -- /usr/sbin/munged
fi
slurmctld -f "$dir/slurm.conf" -i
for i in $(seq 1 "$nodes"); do slurmd -f "$dir/slurm.conf" -N "sn$i"; done
for _ in $(seq 300); do
  idle=$(sinfo -h -N -t idle -o %N 2>/dev/null | sort -u | wc -l)
  [[ $idle -ge $nodes ]] && exit 0
  sleep 0.2
done
echo "slurm_cluster.sh: nodes did not become idle:" >&2
sinfo -N -l >&2 || true
tail -n 20 "$dir"/log/*.log >&2
exit 1
