#!/usr/bin/env python3
"""End-to-end benchmark of Tessel on loopback: a real tessel-scheduler and a few
real tessel-agents (fake hl-smi, 8 Gaudi 2 cards each), short jobs.

Workloads (the same ones bench/slurm/compare.py runs on Slurm):
  submit    durable submissions/s: C concurrent clients POST /v1/jobs for S
            seconds (a 201 means the job is on disk); every job asks for 8 cards
            of a cluster that has none free, so nothing runs meanwhile.
  idle      20 one-card jobs, one at a time on an idle cluster: submission-to-start
            latency without queueing.
  short     N one-card jobs that only record the time they started, submitted by
            C clients as fast as they can: submission-to-start latency
            percentiles (client clock before the POST -> the job's own clock at
            start, same machine) and throughput (N / time from the first
            submission to the last job finished).

Usage: bench/e2e/e2e.py --build BUILD_DIR [--agents 4] [--jobs 500] [--clients 16]
Not run in CI. Results: bench/RESULTS.md.
"""
import argparse
import concurrent.futures as cf
import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def percentiles(values, ps=(50, 90, 99)):
    v = sorted(values)
    if not v:
        return {p: float("nan") for p in ps} | {"max": float("nan")}
    out = {p: v[min(len(v) - 1, int(p / 100 * len(v)))] for p in ps}
    out["max"] = v[-1]
    return out


class Http:
    """One keep-alive connection per thread."""

    def __init__(self, base):
        self.base = base

    def call(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.base + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status, json.loads(r.read() or b"null")
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"null")


class TesselCluster:
    """Scheduler + agents as child processes in a temp dir."""

    def __init__(self, build, agents=4, heartbeat_interval=None, workdir=None):
        self.build = build
        self.dir = workdir or tempfile.mkdtemp(prefix="tessel-e2e-")
        os.makedirs(self.dir, exist_ok=True)
        self.procs = []
        bin_ = os.path.join(build, "bin")
        hl_smi = os.path.join(build, "fake", "habana", "hl-smi")
        fixture = os.path.join(ROOT, "tests", "fixtures", "hl-smi", "gaudi2-hl225-8.csv")
        out = open(os.path.join(self.dir, "scheduler.out"), "w+")
        self.sched = subprocess.Popen(
            [os.path.join(bin_, "tessel-scheduler"), "--listen", "127.0.0.1:0", "--db",
             os.path.join(self.dir, "tessel.db"), "--log-level", "warn"],
            stdout=out, stderr=open(os.path.join(self.dir, "scheduler.log"), "w"))
        self.procs.append(self.sched)
        self.port = self._wait_port(os.path.join(self.dir, "scheduler.out"))
        self.url = f"http://127.0.0.1:{self.port}"
        self.api = Http(self.url)
        self.nodes = []
        for i in range(agents):
            node = f"e2e-{i}"
            args = [os.path.join(bin_, "tessel-agent"), "--scheduler", self.url, "--node", node,
                    "--address", "127.0.0.1", "--listen", "127.0.0.1:0", "--state-dir",
                    os.path.join(self.dir, node), "--vendor", "habana", "--hl-smi", hl_smi,
                    "--sysfs-root", os.path.join(self.dir, "sysfs"), "--log-level", "warn",
                    "--isolation", "none"]
            if heartbeat_interval:
                args += ["--heartbeat-interval", str(heartbeat_interval)]
            if os.geteuid() == 0:  # A root agent needs to be told its jobs' user.
                args += ["--run-as", "root"]
            env = dict(os.environ, FAKE_HL_SMI_FIXTURE=fixture)
            self.procs.append(subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL,
                                               stderr=open(os.path.join(self.dir, node + ".log"), "w")))
            self.nodes.append(node)
        deadline = time.time() + 30
        while time.time() < deadline:
            st, body = self.api.call("GET", "/v1/nodes")
            if st == 200 and sum(n["state"] == "ready" for n in body["nodes"]) == agents:
                break
            time.sleep(0.1)
        else:
            raise RuntimeError("agents did not become ready; see " + self.dir)

    @staticmethod
    def _wait_port(path):
        deadline = time.time() + 30
        while time.time() < deadline:
            with open(path) as f:
                for line in f:
                    if line.startswith("listening on "):
                        return int(line.rsplit(":", 1)[1])
            time.sleep(0.05)
        raise RuntimeError("scheduler did not start")

    def submit(self, spec):
        st, body = self.api.call("POST", "/v1/jobs", spec)
        if st != 201:
            raise RuntimeError(f"submit: {st} {body}")
        return body["id"]

    def unfinished(self):
        n = 0
        for state in ("pending", "assigned", "running"):
            st, body = self.api.call("GET", f"/v1/jobs?state={state}&limit=1000")
            n += len(body["jobs"])
        return n

    def close(self):
        for p in self.procs:
            p.send_signal(signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()
        # Supervisors outlive agents by design: stop those of this run (by pid).
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    if self.dir.encode() in f.read():
                        os.kill(int(pid), signal.SIGKILL)
            except OSError:
                pass
        shutil.rmtree(self.dir, ignore_errors=True)


def submit_rate(submit_one, clients, seconds):
    """Durable submissions/s with `clients` threads for `seconds`."""
    stop = time.time() + seconds
    counts = [0] * clients

    def worker(k):
        while time.time() < stop:
            submit_one()
            counts[k] += 1

    t0 = time.time()
    with cf.ThreadPoolExecutor(clients) as ex:
        list(ex.map(worker, range(clients)))
    return sum(counts) / (time.time() - t0)


def short_jobs(submit_one, unfinished, starts_file, jobs, clients, timeout=600):
    """Submits `jobs` jobs that append '<tag> <start time>' to starts_file.
    submit_one(tag) submits one job. Returns (latencies_ms, jobs_per_s)."""
    open(starts_file, "w").close()
    submitted = {}
    lock = threading.Lock()
    t_first = time.time()

    def one(i):
        tag = f"t{i:06d}"
        t = time.time()
        submit_one(tag)
        with lock:
            submitted[tag] = t

    with cf.ThreadPoolExecutor(clients) as ex:
        list(ex.map(one, range(jobs)))
    deadline = time.time() + timeout
    while time.time() < deadline:
        with open(starts_file) as f:
            started = sum(1 for _ in f)
        if started >= jobs and unfinished() == 0:
            break
        time.sleep(0.05)
    t_done = time.time()
    lat = []
    with open(starts_file) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 2 and parts[0] in submitted:
                lat.append((float(parts[1]) - submitted[parts[0]]) * 1000)
    return lat, len(lat) / (t_done - t_first)


def idle_latency(submit_one, starts_file, samples=20, timeout=30):
    """Submission-to-start latency on an idle cluster: one job at a time, each
    submitted once the previous one has started. Returns latencies in ms."""
    open(starts_file, "w").close()
    lat = []
    for i in range(samples):
        tag = f"idle{i:04d}"
        t = time.time()
        submit_one(tag)
        deadline = time.time() + timeout
        while time.time() < deadline:
            with open(starts_file) as f:
                hit = [ln for ln in f if ln.startswith(tag + " ")]
            if hit:
                lat.append((float(hit[0].split()[1]) - t) * 1000)
                break
            time.sleep(0.005)
    return lat


def add_latency_rows(rows, system, label, lat):
    p = percentiles(lat)
    rows.append((system, f"{label} p50 (ms)", p[50]))
    rows.append((system, f"{label} p90 (ms)", p[90]))
    rows.append((system, f"{label} max (ms)", p["max"]))


def tessel_short_spec(starts_file, tag):
    return {"command": ["/bin/sh", "-c", f'echo {tag} $(date +%s.%N) >> {starts_file}'], "devices": 1}


def run_tessel(build, agents, jobs, clients_list, seconds, heartbeat_interval=None):
    rows = []
    # submit: one agent-less cluster is not possible (agents are cheap): 8-card jobs
    # on a cluster whose cards are held by one long job per node.
    c = TesselCluster(build, agents=agents, heartbeat_interval=heartbeat_interval)
    try:
        starts = os.path.join(c.dir, "starts.txt")
        add_latency_rows(rows, "tessel", "idle submit-to-start",
                         idle_latency(lambda tag: c.submit(tessel_short_spec(starts, tag)), starts))
        lat, tput = short_jobs(lambda tag: c.submit(tessel_short_spec(starts, tag)), c.unfinished, starts, jobs,
                               max(clients_list))
        rows.append(("tessel", "short-job throughput (jobs/s)", tput))
        add_latency_rows(rows, "tessel", "burst submit-to-start", lat)
        hold = os.path.join(c.dir, "hold")
        for _ in range(agents):
            c.submit({"command": ["/bin/sh", "-c", f"while [ ! -e {hold} ]; do sleep 0.2; done"], "devices": 8})
        big = {"command": ["python3", "train.py"], "devices": 8, "name": "bench"}
        for clients in clients_list:
            local = threading.local()

            def submit_one():
                if not hasattr(local, "api"):
                    local.api = Http(c.url)
                st, _ = local.api.call("POST", "/v1/jobs", big)
                if st != 201:
                    raise RuntimeError(st)

            rows.append(("tessel", f"durable submissions/s ({clients} clients)", submit_rate(submit_one, clients, seconds)))
        open(hold, "w").close()
    finally:
        c.close()
    return rows


def print_rows(rows):
    print(f"{'system':8} {'metric':42} {'value':>10}")
    for system, metric, value in rows:
        print(f"{system:8} {metric:42} {value:10.1f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--agents", type=int, default=4)
    ap.add_argument("--jobs", type=int, default=500)
    ap.add_argument("--clients", default="1,16")
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--heartbeat-interval", type=float, default=None)
    a = ap.parse_args()
    print_rows(run_tessel(a.build, a.agents, a.jobs, [int(x) for x in a.clients.split(",")], a.seconds,
                          a.heartbeat_interval))


if __name__ == "__main__":
    main()
