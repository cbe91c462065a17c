#!/usr/bin/env python3
"""Tessel and Slurm side by side on the same machine, same workloads
(bench/e2e/e2e.py describes them): short-job throughput, submission-to-start
latency (client clock before submitting -> the job's own clock at start), and
submissions/s with 1 and 16 concurrent clients (REST POST vs `sbatch`).

Slurm must be running already (bench/slurm/slurm_cluster.sh; SLURM_CONF set);
bench/slurm/run.sh does it all. Prints one table and the Tessel/Slurm ratios.

Usage: compare.py --build BUILD --slurm-dir DIR [--nodes 4] [--jobs 500] [--seconds 10]
"""
import argparse
import concurrent.futures as cf
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "e2e"))
import e2e  # noqa: E402


def sbatch(args):
    r = subprocess.run(["sbatch", "--parsable", "-o", "/dev/null", "-e", "/dev/null"] + args,
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("sbatch: " + r.stderr.strip())
    return r.stdout.strip()


def slurm_unfinished():
    r = subprocess.run(["squeue", "-h", "-o", "%i"], capture_output=True, text=True)
    return len(r.stdout.split())


def run_slurm(slurm_dir, nodes, jobs, clients_list, seconds):
    rows = []
    starts = os.path.join(slurm_dir, "starts.txt")
    e2e.add_latency_rows(rows, "slurm", "idle submit-to-start", e2e.idle_latency(
        lambda tag: sbatch(["-G", "1", "--wrap", f"echo {tag} $(date +%s.%N) >> {starts}"]), starts))
    lat, tput = e2e.short_jobs(
        lambda tag: sbatch(["-G", "1", "--wrap", f"echo {tag} $(date +%s.%N) >> {starts}"]),
        slurm_unfinished, starts, jobs, max(clients_list))
    rows.append(("slurm", "short-job throughput (jobs/s)", tput))
    e2e.add_latency_rows(rows, "slurm", "burst submit-to-start", lat)
    hold = os.path.join(slurm_dir, "hold")
    for _ in range(nodes):
        sbatch(["-G", "8", "--wrap", f"while [ ! -e {hold} ]; do sleep 0.2; done"])
    for clients in clients_list:
        rate = e2e.submit_rate(lambda: sbatch(["-G", "8", "--wrap", "python3 train.py"]), clients, seconds)
        rows.append(("slurm", f"durable submissions/s ({clients} clients)", rate))
    open(hold, "w").close()
    subprocess.run(["scancel", "--user", os.environ.get("USER", "root")], capture_output=True)
    deadline = time.time() + 60
    while slurm_unfinished() and time.time() < deadline:
        time.sleep(0.2)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", required=True)
    ap.add_argument("--slurm-dir", required=True)
    ap.add_argument("--nodes", type=int, default=4)
    ap.add_argument("--jobs", type=int, default=500)
    ap.add_argument("--clients", default="1,16")
    ap.add_argument("--seconds", type=float, default=10)
    a = ap.parse_args()
    clients = [int(x) for x in a.clients.split(",")]
    t = e2e.run_tessel(a.build, a.nodes, a.jobs, clients, a.seconds)
    s = run_slurm(a.slurm_dir, a.nodes, a.jobs, clients, a.seconds)
    print(f"{'metric':42} {'tessel':>10} {'slurm':>10} {'tessel/slurm':>13}")
    sv = {m: v for _, m, v in s}
    for _, m, v in t:
        ratio = v / sv[m] if sv.get(m) else float("nan")
        print(f"{m:42} {v:10.1f} {sv.get(m, float('nan')):10.1f} {ratio:13.2f}")
    print("(latency rows: lower is better, ratio < 1 favours Tessel; rate rows: higher is better)")


if __name__ == "__main__":
    main()
