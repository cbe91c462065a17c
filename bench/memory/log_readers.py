#!/usr/bin/env python3
"""How much memory does the scheduler take while many clients read one big log?
Not run in CI; see bench/RESULTS.md.

A real tessel-scheduler and one real tessel-agent on loopback (bench/e2e/e2e.py's
TesselCluster: fake hl-smi, 8 cards). One job writes --mb MB to its log and ends.
Then --clients clients each open GET /v1/jobs/ID/logs at once (the scheduler's log
proxy to the agent's log server, no follow) and read it, each at most
--read-mb MB (0: to its end) within --seconds, on one asyncio loop of raw sockets
(no thread per client); a reader that is slower than the log makes the proxy wait
for it, which is what bounds the scheduler's buffers. A monitor samples the
scheduler's and the agent's RSS every 50 ms. Prints the RSS before, the highest
sampled while reading, VmHWM, bytes read, readers that finished, errors.

Usage: bench/memory/log_readers.py --build BUILD_DIR [--clients 1200] [--mb 500]
       [--read-mb 50] [--seconds 60]
"""
import argparse
import asyncio
import os
import resource
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "e2e"))
from e2e import TesselCluster  # noqa: E402


def status_kib(pid, field):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


class Monitor(threading.Thread):
    def __init__(self, pids):
        super().__init__(daemon=True)
        self.pids = pids
        self.peak = {p: 0 for p in pids}
        self.stop = threading.Event()

    def run(self):
        while not self.stop.is_set():
            for p in self.pids:
                self.peak[p] = max(self.peak[p], status_kib(p, "VmRSS"))
            time.sleep(0.05)


async def read_log(port, path, limit_bytes, deadline, stats):
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), 30)
        writer.write(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
        await writer.drain()
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 60)
        status = int(head.split(b" ", 2)[1])
        if status != 200:
            stats["errors"][status] = stats["errors"].get(status, 0) + 1
            writer.close()
            return
        got = 0
        while limit_bytes == 0 or got < limit_bytes:
            left = deadline - time.monotonic()
            if left <= 0:
                stats["cut"] += 1
                break
            chunk = await asyncio.wait_for(reader.read(65536), left)
            if not chunk:
                stats["finished"] += 1
                break
            got += len(chunk)
        else:
            stats["finished"] += 1
        stats["bytes"] += got
        writer.close()
    except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError, ValueError) as e:
        key = type(e).__name__
        stats["errors"][key] = stats["errors"].get(key, 0) + 1


async def readers(port, path, clients, limit_bytes, seconds):
    stats = {"bytes": 0, "finished": 0, "cut": 0, "errors": {}}
    deadline = time.monotonic() + seconds
    await asyncio.gather(*(read_log(port, path, limit_bytes, deadline, stats) for _ in range(clients)))
    return stats


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--clients", type=int, default=1200)
    ap.add_argument("--mb", type=int, default=500)
    ap.add_argument("--read-mb", type=int, default=50)
    ap.add_argument("--seconds", type=int, default=60)
    a = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = max(soft, min(hard, 4 * a.clients + 1024))
    resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))  # Inherited by the scheduler and agent.
    c = TesselCluster(os.path.abspath(a.build), agents=1)
    try:
        n = a.mb * 1000 * 1000
        job = c.submit({"command": ["sh", "-c", f"yes 'tessel log line of sixty-four bytes, padded to that size....' | head -c {n}"],
                        "devices": 1})
        t0 = time.time()
        while True:
            st, body = c.api.call("GET", f"/v1/jobs/{job}")
            if body["state"] in ("succeeded", "failed", "cancelled"):
                break
            if time.time() - t0 > 600:
                raise RuntimeError("the log job did not end")
            time.sleep(0.2)
        if body["state"] != "succeeded":
            raise RuntimeError(f"the log job ended {body['state']}: {body.get('reason')}")
        agent_pid = c.procs[1].pid
        before = {p: status_kib(p, "VmRSS") for p in (c.sched.pid, agent_pid)}
        mon = Monitor([c.sched.pid, agent_pid])
        mon.start()
        t1 = time.monotonic()
        stats = asyncio.run(readers(c.port, f"/v1/jobs/{job}/logs", a.clients, a.read_mb * 1000 * 1000, a.seconds))
        took = time.monotonic() - t1
        mon.stop.set()
        mon.join()
        mib = lambda kib: kib / 1024  # noqa: E731
        print(f"log {a.mb} MB; {a.clients} clients, each up to {a.read_mb or 'all'} MB within {a.seconds} s")
        print(f"read {stats['bytes'] / 1e6:.0f} MB in {took:.1f} s ({stats['bytes'] / 1e6 / took:.0f} MB/s); "
              f"finished {stats['finished']}, cut at the deadline {stats['cut']}, errors {stats['errors']}")
        for name, pid in (("scheduler", c.sched.pid), ("agent", agent_pid)):
            print(f"{name}: RSS before {mib(before[pid]):.1f} MiB, max while reading {mib(mon.peak[pid]):.1f} MiB, "
                  f"VmHWM {mib(status_kib(pid, 'VmHWM')):.1f} MiB")
    finally:
        c.close()


if __name__ == "__main__":
    main()
