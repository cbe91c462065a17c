#!/usr/bin/env python3
"""Scheduler failover: how long after losing its leader a set of replicas accepts work again.

Starts its own PostgreSQL 15 (initdb + pg_ctl in a temp dir, TCP on a free loopback port,
fsync on as initdb leaves it) and N replicas of BUILD/bin/tessel-scheduler on loopback,
each with --advertise http://127.0.0.1:PORT and otherwise default flags (lease 3 s, renewal
and follower tries every 1 s) unless --lease / --lease-renew are given. For each run and
each event it waits a random 0 to --lease-renew s (so the signal lands anywhere in the
leader's renewal cycle) and signals the leader:

  kill9    SIGKILL: a follower takes the lease once it expires.
  sigstop  SIGSTOP (a paused process, a frozen VM): as kill9, then SIGCONT; the old
           leader must step down (it exits 3); a submission sent to it as it wakes
           must not be acknowledged.
  sigterm  SIGTERM, a clean stop: the leader releases the lease and notifies followers.

and measures, from the signal,
  to first 201       a client that POSTs a trivial job ({"command": ["true"]}) to every
                     replica URL every 20 ms (one thread per URL, 307s followed, but not
                     to a replica that did not answer its latest request) gets its
                     first 201;
  to healthz leader  another replica's /healthz says role leader at a newer epoch;
  (sigstop) from SIGCONT until the old leader has exited, and whether its /healthz still
  said leader at its old epoch meanwhile; (sigterm) until the old leader exited.
The signalled replica is started again (same port) and the next run waits for one leader
and N-1 followers that agree on it. At the end every acknowledged job must be in the
database. Prints a table; --json OUT writes every sample.

Usage: bench/failover/takeover.py --build BUILD [--runs 20] [--replicas 3]
       bench/failover/takeover.py --build BUILD --smoke   (1 run, 2 replicas, lease 1 s)
Needs BUILD/bin/tessel-scheduler and /usr/lib/postgresql/15/bin (exit 77 without it).
Not run in CI except --smoke. Results: bench/RESULTS.md.
"""
import argparse
import http.client
import json
import os
import pwd
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "e2e"))
import e2e  # noqa: E402

PG_BIN = "/usr/lib/postgresql/15/bin"
EVENTS = ("kill9", "sigstop", "sigterm")
SIGNALS = {"kill9": signal.SIGKILL, "sigstop": signal.SIGSTOP, "sigterm": signal.SIGTERM}
POLL_S = 0.02
# A live replica on loopback answers in milliseconds; a paused one never does. Long
# enough not to cut off a slow first commit of a new leader, short enough that a client
# stuck on the paused leader tries again a few times during a takeover.
REQUEST_TIMEOUT_S = 1.0
MAX_HOPS = 3  # As the CLI: at most 3 redirects.
JOB = json.dumps({"command": ["true"]}).encode()


class Error(Exception):
    """A run that cannot go on: the message is printed on one line."""


# --- PostgreSQL ---------------------------------------------------------------------


class Postgres:
    """A PostgreSQL server in DIR/pg, as the postgres user when this process is root
    (PostgreSQL refuses to run as root)."""

    def __init__(self, workdir):
        self.dir = os.path.join(workdir, "pg")
        self.data = os.path.join(self.dir, "data")
        self.log = os.path.join(self.dir, "server.log")
        self.port = 0
        self.running = False
        os.mkdir(self.dir)
        if os.geteuid() == 0:
            # workdir is mkdtemp's (root's, mode 0700): postgres must get through it.
            pw = pwd.getpwnam("postgres")
            for d in (workdir, self.dir):
                os.chown(d, pw.pw_uid, pw.pw_gid)

    def _run(self, argv, what):
        argv = [os.path.join(PG_BIN, argv[0])] + argv[1:]
        if os.geteuid() == 0:
            argv = ["/usr/sbin/runuser", "-u", "postgres", "--"] + argv
        r = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            raise Error(f"{what} failed (exit {r.returncode}): {(r.stderr or r.stdout).strip()[-300:]}")

    def start(self):
        self._run(["initdb", "-D", self.data, "-U", "tessel", "--auth=trust", "-E", "UTF8", "--no-locale"], "initdb")
        with open(os.path.join(self.data, "postgresql.conf"), "a") as f:
            f.write(f"listen_addresses = '127.0.0.1'\nunix_socket_directories = '{self.dir}'\n")
        # A free port can be taken between choosing and binding it: try a few.
        for attempt in range(5):
            self.port = free_port()
            self.running = True  # Even when interrupted while it starts: stop() then stops it.
            try:
                self._run(["pg_ctl", "-D", self.data, "-l", self.log, "-w", "-t", "60", "-o", f"-p {self.port}",
                           "start"], "pg_ctl start")
                return
            except Error:
                if attempt == 4:
                    raise

    def uri(self, db):
        return f"postgresql://tessel@127.0.0.1:{self.port}/{db}"

    def psql(self, db, sql):
        r = subprocess.run([os.path.join(PG_BIN, "psql"), "-X", "-q", "-t", "-A", "-v", "ON_ERROR_STOP=1", "-d",
                            self.uri(db), "-c", sql], capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            raise Error(f"psql -c '{sql}' failed: {r.stderr.strip()}")
        return r.stdout

    def stop(self):
        if not self.running:
            return
        self.running = False
        try:
            self._run(["pg_ctl", "-D", self.data, "-m", "immediate", "-w", "stop"], "pg_ctl stop")
        except (Error, subprocess.TimeoutExpired):
            kill_postmaster(self.data)


def kill_postmaster(data):
    """When pg_ctl cannot stop it: SIGKILL the postmaster named in its pid file."""
    try:
        with open(os.path.join(data, "postmaster.pid")) as f:
            os.kill(int(f.readline()), signal.SIGKILL)
    except (OSError, ValueError):
        pass


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- replicas -----------------------------------------------------------------------


class Replica:
    """One tessel-scheduler replica; start() again after it died reuses its port (and so
    its URL), or takes a new one when that is taken."""

    def __init__(self, name, binary, db_uri, extra_args, workdir):
        self.name, self.binary, self.db_uri, self.extra_args, self.workdir = name, binary, db_uri, extra_args, workdir
        self.port = 0
        self.proc = None
        self.starts = 0

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    @property
    def log(self):
        return os.path.join(self.workdir, f"{self.name}.{self.starts}.log")

    def start(self):
        for attempt in range(5):
            if attempt > 0 or self.port == 0:
                self.port = free_port()
            self.starts += 1
            out = os.path.join(self.workdir, f"{self.name}.{self.starts}.out")
            with open(out, "w") as o, open(self.log, "w") as e:
                self.proc = subprocess.Popen(
                    [self.binary, "--listen", f"127.0.0.1:{self.port}", "--db", self.db_uri, "--advertise", self.url,
                     "--log-level", "info"] + self.extra_args, stdout=o, stderr=e, start_new_session=True)
            if wait_listening(self.proc, out, time.monotonic() + 30):
                return
        raise Error(f"replica {self.name} did not start; see {self.log}")

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def signal(self, sig):
        if self.alive():
            self.proc.send_signal(sig)

    def kill(self):
        """SIGKILL (also when stopped) and reap."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
        if self.proc is not None:
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass


def wait_listening(proc, out, deadline):
    """True once the replica printed "listening on" (it then answers), False when it
    exited first (its port was taken) or the deadline passed."""
    while time.monotonic() < deadline:
        with open(out) as f:
            if any(line.startswith("listening on ") for line in f):
                return True
        if proc.poll() is not None:
            return False
        time.sleep(POLL_S)
    proc.kill()
    proc.wait()
    return False


def healthz(url, timeout=REQUEST_TIMEOUT_S):
    """GET /healthz: its JSON, or None when there is no answer."""
    status, body, _ = http_call("GET", url + "/healthz", None, timeout)
    if status != 200:
        return None
    try:
        return json.loads(body)
    except ValueError:
        return None


def http_call(method, url, body, timeout):
    """(status, body, Location); status 0 when no answer came (refused, reset, timed out)."""
    u = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=timeout)
    try:
        conn.request(method, u.path or "/", body=body, headers={"Content-Type": "application/json"})
        r = conn.getresponse()
        return r.status, r.read(), r.getheader("Location")
    except (OSError, http.client.HTTPException):
        return 0, b"", None
    finally:
        conn.close()


def steady_leader(replicas, deadline):
    """Waits for one leader and every other replica a follower of it at the same epoch:
    (leader, epoch). Raises Error at the deadline."""
    seen = {}
    while time.monotonic() < deadline:
        seen = {r.name: healthz(r.url) for r in replicas}
        leaders = [r for r in replicas if (seen[r.name] or {}).get("role") == "leader"]
        if len(leaders) == 1:
            lead = leaders[0]
            epoch = seen[lead.name].get("epoch")
            if all(r is lead or (seen[r.name] or {}).get("role") == "follower" and seen[r.name].get("epoch") == epoch
                   and seen[r.name].get("leader") == lead.url for r in replicas):
                return lead, epoch
        time.sleep(POLL_S)
    raise Error(f"no steady leader: {json.dumps(seen)}")


# --- the client ---------------------------------------------------------------------


class Submitter:
    """A client that tries every replica URL: one thread per URL POSTs a job every POLL_S
    and follows 307s (at most MAX_HOPS). A redirect is followed only to a replica whose
    own thread's latest request was answered: not to a paused leader, where the request
    would hang for REQUEST_TIMEOUT_S and the first 201 would measure this client's
    timeout rather than the takeover. Each replica's own thread keeps asking it."""

    def __init__(self, urls, t0, deadline):
        self.urls, self.t0, self.deadline = urls, t0, deadline
        self.answering = {u: False for u in urls}  # Its own thread's latest request was answered.
        self.guard = threading.Lock()
        self.done = threading.Event()
        self.first = None  # (ms after t0, replica URL that answered 201)
        self.acked = []  # ids of every 201 (several threads can get one)
        self.statuses = {}  # status -> count, 0 = no answer
        self.threads = [threading.Thread(target=self._loop, args=(u,), daemon=True) for u in urls]

    def start(self):
        for t in self.threads:
            t.start()

    def stop(self):
        self.done.set()
        for t in self.threads:
            t.join(REQUEST_TIMEOUT_S * (MAX_HOPS + 2))

    def _loop(self, url):
        while not self.done.is_set() and time.monotonic() < self.deadline:
            self._attempt(url)
            self.done.wait(POLL_S)

    def _attempt(self, url):
        target = url + "/v1/jobs"
        for hop in range(MAX_HOPS + 1):
            base = origin(target)
            with self.guard:
                if hop > 0 and not self.answering.get(base):
                    return
            status, body, location = http_call("POST", target, JOB, REQUEST_TIMEOUT_S)
            self._count(status, body, base, time.monotonic(), own=hop == 0)
            if status != 307 or not location or self.done.is_set():
                return
            target = urllib.parse.urljoin(target, location)

    def _count(self, status, body, base, t, own):
        with self.guard:
            if own:
                self.answering[base] = status > 0
            self.statuses[status] = self.statuses.get(status, 0) + 1
            if status != 201:
                return
            try:
                self.acked.append(json.loads(body)["id"])
            except (ValueError, KeyError, TypeError):
                self.acked.append(None)
            if self.first is None:
                self.first = ((t - self.t0) * 1000, base)
                self.done.set()


def origin(url):
    u = urllib.parse.urlsplit(url)
    return f"{u.scheme}://{u.netloc}"


# --- one event ----------------------------------------------------------------------


def run_event(event, replicas, leader, epoch, lease, rng):
    """Signals the leader and measures; the old leader has exited (and is reaped) when
    this returns. Returns (sample dict, acknowledged ids)."""
    others = [r for r in replicas if r is not leader]
    # Each run follows the last takeover by about the same time, and the new leader
    # renews in step with its takeover: without a random wait every signal would land at
    # the same point of the renewal cycle, and the lease left at the signal (the figure
    # measured) would hardly vary.
    phase = rng.uniform(0, lease.renew)
    time.sleep(phase)
    sample = {"event": event, "old_leader": leader.name, "old_epoch": epoch, "phase_ms": phase * 1000}
    deadline = time.monotonic() + 3 * lease.total + 10
    t0 = time.monotonic()
    leader.signal(SIGNALS[event])
    client = Submitter([r.url for r in replicas], t0, deadline)
    client.start()
    healthz_ms, new_leader = None, None
    try:
        while time.monotonic() < deadline and (client.first is None or healthz_ms is None):
            if healthz_ms is None:
                for r in others:
                    h = healthz(r.url)
                    if h and h.get("role") == "leader" and h.get("epoch", 0) > epoch:
                        healthz_ms, new_leader = (time.monotonic() - t0) * 1000, r
                        sample.update(new_leader=r.name, new_epoch=h["epoch"])
                        break
            time.sleep(POLL_S)
    finally:
        client.stop()
    sample["first_201_ms"] = client.first[0] if client.first else None
    sample["first_201_from"] = name_of(replicas, client.first[1]) if client.first else None
    sample["healthz_leader_ms"] = healthz_ms
    sample["statuses"] = {str(k): v for k, v in sorted(client.statuses.items())}
    problems = []
    if client.first is None:
        problems.append("no 201 before the deadline")
    elif new_leader is not None and client.first[1] != new_leader.url:
        problems.append(f"first 201 from {sample['first_201_from']}, not the new leader {new_leader.name}")
    if healthz_ms is None:
        problems.append("no other replica said leader before the deadline")
    if event == "sigstop":
        problems += after_sigcont(leader, epoch, sample)
    elif event == "sigterm":
        problems += wait_exit(leader, t0, sample, "old_exit_ms", 10)
    else:
        leader.kill()
    sample["problems"] = problems
    return sample, [i for i in client.acked if i]


def after_sigcont(old, epoch, sample):
    """SIGCONT the paused leader; polls its /healthz until it exits. Records how long it
    took, its exit status, how often it still said leader at its old epoch, and why the
    log says it stepped down."""
    t = time.monotonic()
    old.signal(signal.SIGCONT)
    # A write sent to it as it wakes, beside the /healthz polls: it must not be acknowledged.
    post = {}
    writer = threading.Thread(target=lambda: post.update(status=http_call("POST", old.url + "/v1/jobs", JOB, 5)[0]),
                              daemon=True)
    writer.start()
    claims, deadline = 0, t + 15
    while old.alive() and time.monotonic() < deadline:
        h = healthz(old.url, timeout=0.5)
        if h and h.get("role") == "leader" and h.get("epoch") == epoch:
            claims += 1
        time.sleep(POLL_S)
    sample["old_leader_claims_after_cont"] = claims
    problems = wait_exit(old, t, sample, "old_exit_after_cont_ms", 0)
    writer.join(6)
    sample["old_leader_post_after_cont"] = post.get("status")
    if post.get("status") == 201:
        problems.append("the old leader acknowledged a submission after SIGCONT")
    if sample.get("old_exit_code") not in (None, 3):
        problems.append(f"old leader exited {sample['old_exit_code']}, not 3 (stepping down)")
    sample["step_down_reason"] = step_down_reason(old.log)
    return problems


def wait_exit(r, t, sample, key, timeout):
    """Waits up to timeout s more for r to exit: sample[key] = ms since t, its exit code."""
    try:
        r.proc.wait(timeout=max(timeout, 0.001))
    except subprocess.TimeoutExpired:
        r.kill()
        sample[key] = None
        return [f"{r.name} did not exit"]
    sample[key] = (time.monotonic() - t) * 1000
    sample["old_exit_code"] = r.proc.returncode
    return []


def step_down_reason(log):
    try:
        with open(log) as f:
            m = re.search(r"leader lease lost: (.*?); stepping down", f.read())
    except OSError:
        return None
    if not m:
        return None
    # "a write found epoch N" (fenced write) or "another replica leads (...)" (renewal).
    return "fenced write" if m.group(1).startswith("a write found") else "renewal"


def name_of(replicas, url):
    return next((r.name for r in replicas if r.url == url), url)


# --- the whole benchmark ------------------------------------------------------------


class Lease:
    def __init__(self, lease, renew):
        self.lease, self.renew = lease, renew

    @property
    def total(self):
        return self.lease + self.renew


def run(a, workdir):
    pg = Postgres(workdir)
    replicas = []
    try:
        pg.start()
        pg.psql("postgres", "CREATE DATABASE failover")
        extra = []
        if a.lease is not None:
            extra += ["--lease", f"{a.lease:g}"]
        if a.lease_renew is not None:
            extra += ["--lease-renew", f"{a.lease_renew:g}"]
        lease = Lease(a.lease or 3.0, a.lease_renew or 1.0)
        binary = os.path.join(a.build, "bin", "tessel-scheduler")
        for i in range(a.replicas):
            replicas.append(Replica(chr(ord("a") + i), binary, pg.uri("failover"), extra, workdir))
            replicas[-1].start()
        samples, acked, aborted = [], [], None
        rng = random.Random(a.seed)
        steady_s = 20 + 3 * lease.total
        try:
            for run_no in range(a.runs):
                for event in a.events:
                    leader, epoch = steady_leader(replicas, time.monotonic() + steady_s)
                    sample, ids = run_event(event, replicas, leader, epoch, lease, rng)
                    sample["run"] = run_no
                    samples.append(sample)
                    acked += ids
                    if not a.quiet:
                        print(progress_line(sample), flush=True)
                    leader.start()
            steady_leader(replicas, time.monotonic() + steady_s)
        except Error as e:
            aborted = str(e)  # What was measured so far is still reported.
        in_db = set(pg.psql("failover", "SELECT key FROM jobs").split())
        return samples, acked, in_db, aborted
    finally:
        for r in replicas:
            r.kill()
        pg.stop()


def progress_line(s):
    def ms(v):
        return "-" if v is None else f"{v:.0f}"
    extra = ""
    if s["event"] == "sigstop":
        extra = (f", old leader exit {s.get('old_exit_code')} {ms(s.get('old_exit_after_cont_ms'))} ms after SIGCONT "
                 f"({s.get('step_down_reason')}, {s.get('old_leader_claims_after_cont')} healthz leader)")
    return (f"run {s['run'] + 1} {s['event']:8} {s['old_leader']}->{s.get('new_leader', '?')}: first 201 "
            f"{ms(s['first_201_ms'])} ms, healthz leader {ms(s['healthz_leader_ms'])} ms{extra}"
            + (f"  PROBLEM: {'; '.join(s['problems'])}" if s["problems"] else ""))


def report(a, samples, acked, in_db):
    lease = f"lease {a.lease:g} s" if a.lease else "lease 3 s (default)"
    renew = f"renew {a.lease_renew:g} s" if a.lease_renew else "renew 1 s (default)"
    print(f"== scheduler failover: {a.replicas} replicas of {os.path.join(a.build, 'bin', 'tessel-scheduler')}, "
          f"{lease}, {renew}, PostgreSQL 15 on loopback; {a.runs} runs per event; "
          f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}")
    print(f"{'event':8} {'runs':>4} {'failed':>6} | {'first 201 ms: p50':>17} {'p90':>6} {'max':>6} | "
          f"{'healthz leader ms: p50':>22} {'p90':>6} {'max':>6}")
    failed = 0
    for event in a.events:
        rows = [s for s in samples if s["event"] == event]
        bad = sum(1 for s in rows if s["problems"])
        failed += bad
        f = e2e.percentiles([s["first_201_ms"] for s in rows if s["first_201_ms"] is not None])
        h = e2e.percentiles([s["healthz_leader_ms"] for s in rows if s["healthz_leader_ms"] is not None])
        print(f"{event:8} {len(rows):4} {bad:6} | {f[50]:17.0f} {f[90]:6.0f} {f['max']:6.0f} | "
              f"{h[50]:22.0f} {h[90]:6.0f} {h['max']:6.0f}")
    stops = [s for s in samples if s["event"] == "sigstop"]
    if stops:
        cont = e2e.percentiles([s["old_exit_after_cont_ms"] for s in stops if s.get("old_exit_after_cont_ms") is not None])
        codes = sorted({str(s.get("old_exit_code")) for s in stops})
        reasons = {}
        for s in stops:
            reasons[str(s.get("step_down_reason"))] = reasons.get(str(s.get("step_down_reason")), 0) + 1
        claims = sum(s.get("old_leader_claims_after_cont", 0) for s in stops)
        print(f"sigstop: the old leader exited {cont[50]:.0f} ms (p50), {cont['max']:.0f} ms (max) after SIGCONT, "
              f"exit status {'/'.join(codes)}, stepped down by {json.dumps(reasons)}; its /healthz said leader at "
              f"its old epoch {claims} times after SIGCONT")
    missing = [i for i in acked if i not in in_db]
    print(f"jobs: {len(acked)} acknowledged (201), {len(missing)} of them missing from the database, "
          f"{len(in_db) - len(set(acked) & in_db)} in the database without a 201 seen by the client")
    for s in samples:
        if s["problems"]:
            print(f"FAILED run {s['run'] + 1} {s['event']}: {'; '.join(s['problems'])}")
    return failed + len(missing)


class Parser(argparse.ArgumentParser):
    def error(self, message):
        self.exit(2, f"{self.prog}: {message}\n")


def parse_args():
    ap = Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(e2e.ROOT, "build"))
    ap.add_argument("--runs", type=int, default=20, help="runs of each event (default 20)")
    ap.add_argument("--replicas", type=int, default=3, help="scheduler replicas (default 3)")
    ap.add_argument("--events", default=",".join(EVENTS), help="comma-separated, of " + ", ".join(EVENTS))
    ap.add_argument("--lease", type=float, default=None, help="replicas' --lease (default: theirs, 3 s)")
    ap.add_argument("--lease-renew", type=float, default=None, help="replicas' --lease-renew (default: theirs, 1 s)")
    ap.add_argument("--smoke", action="store_true", help="1 run, 2 replicas, --lease 1 --lease-renew 0.25")
    ap.add_argument("--seed", type=int, default=1, help="of the random wait before each signal (default 1)")
    ap.add_argument("--json", metavar="OUT", help="write every sample to OUT")
    ap.add_argument("--keep", action="store_true", help="keep the run's directory (replica logs)")
    ap.add_argument("--quiet", action="store_true", help="no line per run")
    a = ap.parse_args()
    if a.smoke:
        a.runs, a.replicas = 1, 2
        a.lease = 1.0 if a.lease is None else a.lease
        a.lease_renew = 0.25 if a.lease_renew is None else a.lease_renew
    a.events = [e for e in a.events.split(",") if e]
    if not a.events or any(e not in EVENTS for e in a.events):
        ap.error(f"--events: expected a comma-separated list of {', '.join(EVENTS)}")
    if a.runs < 1:
        ap.error("--runs must be at least 1")
    if a.replicas < 2:
        ap.error("--replicas must be at least 2 (one to take over)")
    if (a.lease is not None and a.lease <= 0) or (a.lease_renew is not None and a.lease_renew <= 0):
        ap.error("--lease and --lease-renew must be positive")
    if 2 * (a.lease_renew or 1.0) > (a.lease or 3.0):
        ap.error("--lease-renew must be at most half of --lease (the scheduler refuses otherwise)")
    return a


def main():
    a = parse_args()
    binary = os.path.join(a.build, "bin", "tessel-scheduler")
    if not os.access(binary, os.X_OK):
        print(f"takeover: {binary} is missing: cmake --build {a.build} --target tessel-scheduler", file=sys.stderr)
        return 1
    if not all(os.access(os.path.join(PG_BIN, t), os.X_OK) for t in ("initdb", "pg_ctl", "psql")):
        print(f"takeover: skipped: no PostgreSQL 15 server binaries in {PG_BIN} (install postgresql-15)")
        return 77
    if os.geteuid() == 0 and not has_user("postgres"):
        print("takeover: skipped: running as root, but there is no postgres user to run PostgreSQL as")
        return 77
    # A SIGTERM to this script cleans up as Ctrl-C does.
    signal.signal(signal.SIGTERM, interrupt)
    workdir = tempfile.mkdtemp(prefix="tessel-failover-")
    try:
        samples, acked, in_db, aborted = run(a, workdir)
    except Error as e:
        print(f"takeover: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("takeover: interrupted", file=sys.stderr)
        return 130
    finally:
        if a.keep:
            print(f"takeover: kept {workdir}", file=sys.stderr)
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    failures = report(a, samples, acked, in_db)
    if aborted:
        print(f"takeover: stopped early: {aborted}", file=sys.stderr)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"args": vars(a), "utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                       "loadavg": os.getloadavg(), "aborted": aborted, "samples": samples,
                       "acknowledged": len(acked), "in_database": len(in_db)}, f, indent=1)
    return 1 if failures or aborted else 0


def interrupt(signum, frame):
    raise KeyboardInterrupt()


def has_user(name):
    try:
        pwd.getpwnam(name)
        return True
    except KeyError:
        return False


if __name__ == "__main__":
    sys.exit(main())
