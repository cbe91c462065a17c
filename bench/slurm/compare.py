#!/usr/bin/env python3
"""Tessel and Slurm side by side on the same machine, same workloads.

--workload short (the default): the workloads of bench/e2e/e2e.py: short-job
throughput, submission-to-start latency (client clock before submitting -> the
job's own clock at start), and submissions/s with 1 and 16 concurrent clients
(REST POST vs `sbatch`).

--workload mixed: --mixed-jobs (160) single-node jobs of 1, 2, 4 and 8 cards
(50/25/15/10 %), each running bench_stamp (bench/turnaround/bench_stamp.cpp) that
sleeps 0.5-2.5 s (uniform, 0.01 s steps), sizes and sleeps shuffled with a fixed
--seed, all submitted at once (in order, by --mixed-clients concurrent clients) to
--nodes x 8 cards. The jobs stamp their own start and end (CLOCK_REALTIME) into
files named by their job id. Reports makespan (client clock just before the first
submission -> the last job's end) and card utilisation: sum over jobs of
cards x (end - start) / (8 x nodes x makespan). Run it against a Slurm started
with throughput settings (run.sh does: SchedulerParameters=batch_sched_delay=0,
sched_min_interval=0,default_queue_depth=1000,bf_interval=1).

Slurm must be running already (bench/slurm/slurm_cluster.sh; SLURM_CONF set);
bench/slurm/run.sh does it all. Prints one table and the Tessel/Slurm ratios.

Usage: compare.py --build BUILD --slurm-dir DIR [--nodes 4] [--jobs 500] [--seconds 10]
       compare.py --workload mixed --build BUILD --slurm-dir DIR [--nodes 4] [--mixed-jobs 160] [--seed 1]
"""
import argparse
import concurrent.futures as cf
import os
import random
import subprocess
import sys
import threading
import time

BENCH = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(BENCH, "e2e"))
sys.path.insert(0, os.path.join(BENCH, "turnaround"))
import e2e  # noqa: E402
import turnaround  # noqa: E402


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


def mixed_workload(jobs, seed):
    """[(cards, sleep_s)]: 1/2/4/8 cards at 50/25/15/10 %, sleeps uniform 0.5-2.5 s,
    order shuffled; the same list for the same (jobs, seed)."""
    rng = random.Random(seed)
    counts = {2: round(jobs * 0.25), 4: round(jobs * 0.15), 8: round(jobs * 0.10)}
    counts[1] = jobs - sum(counts.values())
    sizes = [c for c in (1, 2, 4, 8) for _ in range(counts[c])]
    rng.shuffle(sizes)
    return [(c, round(rng.uniform(0.5, 2.5), 2)) for c in sizes]


def submit_in_order(submit_one, workload, clients):
    """Submits workload[i] with submit_one(cards, sleep) by `clients` threads taking jobs in
    list order. Returns ({job id: cards}, t_first, t_last): client clock just before the
    first submission and just after the last answer."""
    ids = {}
    lock = threading.Lock()
    nxt = iter(enumerate(workload))

    def worker():
        while True:
            with lock:
                item = next(nxt, None)
            if item is None:
                return
            _, (cards, sleep_s) = item
            jid = submit_one(cards, sleep_s)
            with lock:
                ids[jid] = cards

    t_first = time.time()
    with cf.ThreadPoolExecutor(clients) as ex:
        for f in [ex.submit(worker) for _ in range(clients)]:
            f.result()
    return ids, t_first, time.time()


def mixed_rows(system, ids, stamps, t_first, t_last, cards_total, workload):
    ended = {i: stamps[i] for i in ids if i in stamps and stamps[i][1] is not None}
    rows = [(system, "jobs ended", float(len(ended)))]
    if not ended:
        return rows
    last_end = max(e for _, e in ended.values()) / 1e9
    first_start = min(s for s, _ in ended.values()) / 1e9
    makespan = last_end - t_first
    busy = sum(ids[i] * (e - s) / 1e9 for i, (s, e) in ended.items())
    rows.append((system, "submission of all jobs (ms)", 1000 * (t_last - t_first)))
    rows.append((system, "first submission to first start (ms)", 1000 * (first_start - t_first)))
    rows.append((system, "makespan (s)", makespan))
    rows.append((system, "busy card-seconds", busy))
    rows.append((system, "card utilisation (%)", 100.0 * busy / (cards_total * makespan)))
    # Sanity: cards in use at once, from the stamps (more than cards_total would mean shared cards).
    events = sorted([(s, ids[i]) for i, (s, _) in ended.items()] + [(e, -ids[i]) for i, (_, e) in ended.items()],
                    key=lambda x: (x[0], x[1]))
    peak = cur = 0
    for _, d in events:
        cur += d
        peak = max(peak, cur)
    rows.append((system, "peak cards busy at once", float(peak)))
    rows.append((system, "makespan lower bound (s)", sum(c * t for c, t in workload) / cards_total))
    return rows


def run_tessel_mixed(build, nodes, workload, clients, timeout):
    stamp = turnaround.stamp_bin(build)
    c = e2e.TesselCluster(build, agents=nodes)
    try:
        stamps_dir = os.path.join(c.dir, "stamps")
        os.makedirs(stamps_dir)
        local = threading.local()

        def submit_one(cards, sleep_s):
            if not hasattr(local, "api"):
                local.api = e2e.Http(c.url)
            st, body = local.api.call("POST", "/v1/jobs", {"command": [stamp, stamps_dir, f"{sleep_s:g}"],
                                                           "devices": cards})
            if st != 201:
                raise RuntimeError(f"submit: {st} {body}")
            return body["id"]

        ids, t_first, t_last = submit_in_order(submit_one, workload, clients)
        stamps = turnaround.wait_stamps(stamps_dir, list(ids), c.unfinished, timeout)
    finally:
        c.close()
    return mixed_rows("tessel", ids, stamps, t_first, t_last, 8 * nodes, workload)


def run_slurm_mixed(slurm_dir, build, nodes, workload, clients, timeout):
    stamp = turnaround.stamp_bin(build)
    stamps_dir = os.path.join(slurm_dir, "mixed-stamps")
    os.makedirs(stamps_dir, exist_ok=True)

    def submit_one(cards, sleep_s):
        # sbatch runs a batch script; --wrap makes it "#!/bin/sh\nexec ...": the shell
        # replaces itself with bench_stamp, whose first action is the start stamp.
        return sbatch(["-N", "1", "-n", "1", f"--gres=gpu:{cards}", "--wrap",
                       f"exec {stamp} {stamps_dir} {sleep_s:g}"]).split(";")[0]

    ids, t_first, t_last = submit_in_order(submit_one, workload, clients)
    stamps = turnaround.wait_stamps(stamps_dir, list(ids), slurm_unfinished, timeout)
    return mixed_rows("slurm", ids, stamps, t_first, t_last, 8 * nodes, workload)


def print_side_by_side(t, s, footer):
    print(f"{'metric':42} {'tessel':>10} {'slurm':>10} {'tessel/slurm':>13}")
    sv = {m: v for _, m, v in s}
    for _, m, v in t:
        ratio = v / sv[m] if sv.get(m) else float("nan")
        print(f"{m:42} {v:10.1f} {sv.get(m, float('nan')):10.1f} {ratio:13.2f}")
    print(footer)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", required=True)
    ap.add_argument("--slurm-dir", help="the Slurm cluster's directory (slurm_cluster.sh start DIR)")
    ap.add_argument("--nodes", type=int, default=4)
    ap.add_argument("--jobs", type=int, default=500)
    ap.add_argument("--clients", default="1,16")
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--workload", choices=["short", "mixed"], default="short")
    ap.add_argument("--mixed-jobs", type=int, default=160)
    ap.add_argument("--mixed-clients", type=int, default=16)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=600, help="seconds to wait for the mixed jobs, per system")
    ap.add_argument("--only", choices=["tessel", "slurm"], help="run one system only (mixed)")
    a = ap.parse_args()
    if not a.slurm_dir and not (a.workload == "mixed" and a.only == "tessel"):
        ap.error("--slurm-dir is required (except for --workload mixed --only tessel)")
    if a.workload == "mixed":
        w = mixed_workload(a.mixed_jobs, a.seed)
        sizes = {c: sum(1 for x, _ in w if x == c) for c in (1, 2, 4, 8)}
        print(f"== mixed: {len(w)} jobs ({', '.join(f'{n} x {c} cards' for c, n in sizes.items())}), "
              f"sleep 0.5-2.5 s (sum {sum(t for _, t in w):.1f} s), seed {a.seed}, {a.mixed_clients} clients, "
              f"{a.nodes} nodes x 8 cards")
        t = run_tessel_mixed(a.build, a.nodes, w, a.mixed_clients, a.timeout) if a.only != "slurm" else []
        s = run_slurm_mixed(a.slurm_dir, a.build, a.nodes, w, a.mixed_clients, a.timeout) \
            if a.only != "tessel" else []
        if not t:
            e2e.print_rows(s)
        elif not s:
            e2e.print_rows(t)
        else:
            print_side_by_side(t, s, "(makespan: lower is better; utilisation: higher is better)")
        return
    clients = [int(x) for x in a.clients.split(",")]
    t = e2e.run_tessel(a.build, a.nodes, a.jobs, clients, a.seconds)
    s = run_slurm(a.slurm_dir, a.nodes, a.jobs, clients, a.seconds)
    print_side_by_side(t, s, "(latency rows: lower is better, ratio < 1 favours Tessel; rate rows: higher is better)")


if __name__ == "__main__":
    main()
