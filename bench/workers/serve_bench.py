#!/usr/bin/env python3
"""Serving throughput of `tessel-infer --serve` (continuous batching) with 1, 4
and 16 concurrent clients, against the same server with --max-batch 1 (one
request decoded at a time), in one run on one checkpoint.

Trains a checkpoint with tessel-train (the model flags below, few steps: the
weights do not change the cost), starts the server for each --max-batch value,
and has C client threads each send --requests POST /v1/completions (greedy,
--max-tokens new tokens, distinct prompts). Reports generated tokens/s over the
wall time of each (server, C) cell.

Usage: bench/workers/serve_bench.py --build BUILD [--clients 1,4,16] [--requests 4]
       [--max-tokens 64] [--layers 4 --heads 4 --dim 128 --context 128] [--threads 1]
       [--precision fp32|bf16]   (tessel-infer's; the checkpoint is the same)
       [--smoke]   (tiny model, few tokens: a few seconds; ctest bench_smoke_workers_serve)
Results: bench/workers/RESULTS.md.
"""
import argparse
import concurrent.futures as cf
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def post(port, body):
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as r:
        return json.load(r)


def serve(infer, ckpt, max_batch, threads, precision):
    p = subprocess.Popen([infer, "--checkpoint", ckpt, "--serve", "--port", "0", "--threads", str(threads),
                          "--device", "cpu", "--precision", precision,
                          "--max-batch", str(max_batch), "--max-queue", "1024",
                          # The prompts may pass the (small) context: only its window is read.
                          "--max-prompt-tokens", "4096"],
                         stdout=subprocess.PIPE, text=True)
    port = json.loads(p.stdout.readline())["port"]
    ready = json.loads(p.stdout.readline())
    if ready.get("event") != "ready" or ready.get("precision") != precision:
        p.kill()
        sys.exit(f"serve_bench: server not ready: {ready}")
    return p, port


def cell(port, clients, requests, max_tokens):
    def client(c):
        n = 0
        for r in range(requests):
            out = post(port, {"prompt": f"Client {c} request {r}: This License", "max_tokens": max_tokens})
            n += out["usage"]["completion_tokens"]
        return n

    post(port, {"prompt": "warm-up", "max_tokens": 4})
    t0 = time.monotonic()
    with cf.ThreadPoolExecutor(clients) as pool:
        tokens = sum(pool.map(client, range(clients)))
    return tokens / (time.monotonic() - t0)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--clients", default="1,4,16")
    ap.add_argument("--requests", type=int, default=4, help="requests per client")
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--context", type=int, default=128)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
    ap.add_argument("--smoke", action="store_true")
    a = ap.parse_args()
    if a.smoke:
        a.clients, a.requests, a.max_tokens = "1,4", 1, 4
        a.layers, a.heads, a.dim, a.context = 1, 2, 16, 16
    clients = [int(c) for c in a.clients.split(",")]
    train, infer = (os.path.join(a.build, "bin", b) for b in ("tessel-train", "tessel-infer"))
    for b in (train, infer):
        if not os.access(b, os.X_OK):
            sys.exit(f"serve_bench: {b} not built (cmake --build {a.build} --target tessel-train tessel-infer)")

    with tempfile.TemporaryDirectory() as work:
        ckpt = os.path.join(work, "ckpt")
        subprocess.run([train, "--data", os.path.join(ROOT, "tests/fixtures/text/gpl-3.txt"), "--out", ckpt,
                        "--steps", "2", "--batch-size", "2", "--layers", str(a.layers), "--heads", str(a.heads),
                        "--dim", str(a.dim), "--context", str(a.context), "--threads", str(a.threads),
                        "--device", "cpu"], check=True, stdout=subprocess.DEVNULL)
        rates = {}
        for max_batch in (1, max(clients)):
            p, port = serve(infer, ckpt, max_batch, a.threads, a.precision)
            try:
                for c in clients:
                    rates[(max_batch, c)] = cell(port, c, a.requests, a.max_tokens)
            finally:
                p.terminate()
                p.wait(30)

    print(f"config: layers={a.layers} heads={a.heads} dim={a.dim} context={a.context} threads={a.threads} "
          f"max_tokens={a.max_tokens} requests/client={a.requests} precision={a.precision} (greedy, non-streamed)")
    batched = max(clients)
    print(f"{'clients':>8}{'one at a time tok/s':>22}{f'batched (max {batched}) tok/s':>28}{'ratio':>8}")
    for c in clients:
        one, many = rates[(1, c)], rates[(batched, c)]
        print(f"{c:>8}{one:>22.0f}{many:>28.0f}{many / one:>8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
