#!/usr/bin/env python3
"""Card turnaround: from a task's exit to the first instruction of the next queued job on
the same cards.

A real tessel-scheduler and one real tessel-agent on loopback (default flags: the agent
heartbeats at the scheduler's default interval), one node with 8 fake Gaudi 2 cards.
N jobs that each want all 8 cards are queued at once (one client, in order), so they run
one after another on the same cards. Each job is bench_stamp (bench/turnaround/bench_stamp.cpp,
no shell): it appends "start <CLOCK_REALTIME ns>" to DIR/<TESSEL_JOB_ID> as its first
action, sleeps --sleep seconds and appends "end <ns>" just before it exits. With jobs
ordered by start time,

    turnaround_i = start(job i+1) - end(job i)          (N-1 samples)

which covers the task's exit, the supervisor and agent noticing it, the scheduler hearing of
it and freeing the cards, placing the next job, the agent getting the assignment and
starting the next task (exec included).

Usage: bench/turnaround/turnaround.py --build BUILD [--jobs 50] [--sleep 0.1]
Needs BUILD/bin/{tessel-scheduler,tessel-agent,bench_stamp} and BUILD/fake/habana/hl-smi
(cmake --build BUILD --target tessel-scheduler tessel-agent fake-hl-smi bench_stamp).
Not run in CI. Results: bench/RESULTS.md.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "e2e"))
import e2e  # noqa: E402


def stamp_bin(build):
    path = os.path.join(build, "bin", "bench_stamp")
    if not os.access(path, os.X_OK):
        raise SystemExit(f"{path} is missing: cmake --build {build} --target bench_stamp")
    return path


def read_stamps(directory):
    """{job id: (start_ns, end_ns or None)} from bench_stamp's files in directory."""
    out = {}
    for name in os.listdir(directory):
        start = end = None
        try:
            with open(os.path.join(directory, name)) as f:
                for line in f:
                    parts = line.split()
                    if len(parts) == 2 and parts[0] == "start" and start is None:
                        start = int(parts[1])
                    elif len(parts) == 2 and parts[0] == "end":
                        end = int(parts[1])
        except OSError:
            continue
        if start is not None:
            out[name] = (start, end)
    return out


def wait_stamps(directory, ids, unfinished, timeout):
    """Waits until every job in ids has an end stamp, or nothing is left to run (a job
    failed), or timeout. Returns read_stamps(directory)."""
    deadline = time.time() + timeout
    next_ask = time.time() + 2
    while True:
        stamps = read_stamps(directory)
        if all(i in stamps and stamps[i][1] is not None for i in ids):
            return stamps
        if time.time() > deadline:
            print(f"timed out: {sum(1 for i in ids if stamps.get(i, (0, None))[1])} of {len(ids)} jobs ended",
                  file=sys.stderr)
            return stamps
        # Asking the system (REST, squeue) loads it: only every 2 s, to notice failed jobs.
        if time.time() > next_ask:
            if unfinished() == 0:
                time.sleep(0.5)  # an end stamp can land just after the job is reported done
                return read_stamps(directory)
            next_ask = time.time() + 2
        time.sleep(0.1)


def fmt_row(label, p):
    return f"{label:28} {p[50]:10.1f} {p[90]:10.1f} {p[99]:10.1f} {p['max']:10.1f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(e2e.ROOT, "build-bench"))
    ap.add_argument("--jobs", type=int, default=50)
    ap.add_argument("--sleep", type=float, default=0.1, help="seconds each job sleeps between its stamps")
    ap.add_argument("--heartbeat-interval", type=float, default=None,
                    help="agent --heartbeat-interval (default: the scheduler's)")
    ap.add_argument("--timeout", type=float, default=None, help="seconds to wait for all jobs (default 15 x jobs)")
    ap.add_argument("--keep", action="store_true", help="keep the run's directory (logs, stamps)")
    a = ap.parse_args()
    if a.jobs < 2:
        ap.error("--jobs must be at least 2")
    stamp = stamp_bin(a.build)

    c = e2e.TesselCluster(a.build, agents=1, heartbeat_interval=a.heartbeat_interval)
    try:
        stamps_dir = os.path.join(c.dir, "stamps")
        os.makedirs(stamps_dir)
        command = [stamp, stamps_dir] + ([f"{a.sleep:g}"] if a.sleep > 0 else [])
        t_submit = time.time()
        ids = [c.submit({"command": command, "devices": 8, "name": f"turn{i:04d}"}) for i in range(a.jobs)]
        t_submitted = time.time()
        stamps = wait_stamps(stamps_dir, ids, c.unfinished, a.timeout or 15.0 * a.jobs)
        t_done = time.time()
        failed = []
        for state in ("failed", "cancelled"):
            st, body = c.api.call("GET", f"/v1/jobs?state={state}&limit=1000")
            if st == 200:
                failed += [j["id"] for j in body["jobs"]]
        if a.keep:
            kept = tempfile.mkdtemp(prefix="tessel-turnaround-")
            shutil.copytree(c.dir, kept, dirs_exist_ok=True)
            print(f"run directory copied to {kept}")
    finally:
        c.close()

    done = sorted((s, e, i) for i, (s, e) in stamps.items() if i in set(ids) and e is not None)
    turn = [(done[k + 1][0] - done[k][1]) / 1e6 for k in range(len(done) - 1)]
    overlaps = sum(1 for t in turn if t < 0)
    print(f"== card turnaround: tessel {git_rev()} (binaries from {a.build}), 1 agent x 8 Gaudi 2 cards, {a.jobs} x 8-card jobs "
          f"(bench_stamp, sleep {a.sleep:g} s), heartbeat interval "
          f"{a.heartbeat_interval if a.heartbeat_interval else 'default'}")
    print(f"jobs ended {len(done)}/{a.jobs}, failed/cancelled {len(failed)}, submitted in "
          f"{(t_submitted - t_submit) * 1000:.0f} ms, all done after {t_done - t_submit:.1f} s")
    if done:
        first = (done[0][0] / 1e9 - t_submit) * 1000
        print(f"first submission to first start: {first:.1f} ms")
    if overlaps:
        print(f"WARNING: {overlaps} jobs started before the previous one ended (cards shared?)")
    if not turn:
        print("no turnaround samples")
        return 1
    p = e2e.percentiles(turn)
    mean = sum(turn) / len(turn)
    print(f"{'metric (ms)':28} {'p50':>10} {'p90':>10} {'p99':>10} {'max':>10}")
    print(fmt_row(f"turnaround ({len(turn)} samples)", p))
    print(f"mean {mean:.1f} ms, min {min(turn):.1f} ms")
    return 0 if len(done) == a.jobs and not failed else 1


def git_rev():
    try:
        r = subprocess.run(["git", "-C", e2e.ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
        return r.stdout.strip() or "?"
    except OSError:
        return "?"


if __name__ == "__main__":
    sys.exit(main())
