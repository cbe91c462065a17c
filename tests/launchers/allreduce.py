# A Gloo all-reduce from the environment Tessel sets: `worker OUT` is one rank; `launch OUT`
# is one task per node doing what torchrun does (its parser reads PET_*, one worker per process).
import datetime
import json
import os
import subprocess
import sys


def worker(out):
    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=90))
    value = torch.tensor([float(dist.get_rank() + 1)])
    dist.all_reduce(value)
    names = [None] * dist.get_world_size()
    dist.all_gather_object(names, os.environ.get("TESSEL_NODE", ""))
    result = {
        "env_rank": int(os.environ["RANK"]),
        "rank": dist.get_rank(),
        "world_size": dist.get_world_size(),
        "local_rank": int(os.environ["LOCAL_RANK"]),
        "node": os.environ.get("TESSEL_NODE", ""),
        "nodes_by_rank": names,
        "sum": value.item(),
    }
    dist.barrier()
    dist.destroy_process_group()
    path = os.path.join(out, "rank%d.json" % result["rank"])
    with open(path + ".tmp", "w") as f:
        json.dump(result, f)
    os.rename(path + ".tmp", path)


def launch(out):
    import torch.distributed.run as run

    config, _, _ = run.config_from_args(run.get_args_parser().parse_args([__file__]))
    if config.min_nodes != config.max_nodes:
        sys.exit("launch: nnodes %d:%d is not fixed" % (config.min_nodes, config.max_nodes))
    nnodes, nproc = config.max_nodes, config.nproc_per_node
    node_rank = config.rdzv_configs["rank"]
    addr, port = config.rdzv_endpoint.rsplit(":", 1)
    procs = []
    for local in range(nproc):
        env = dict(os.environ)
        env.update(
            RANK=str(node_rank * nproc + local),
            WORLD_SIZE=str(nnodes * nproc),
            LOCAL_RANK=str(local),
            LOCAL_WORLD_SIZE=str(nproc),
            GROUP_RANK=str(node_rank),
            MASTER_ADDR=addr,
            MASTER_PORT=port,
        )
        procs.append(subprocess.Popen([sys.executable, __file__, "worker", out], env=env))
    # Like torchrun: the first failure stops the other local processes.
    running = {p.pid: p for p in procs}
    while running:
        pid, status = os.wait()
        if running.pop(pid, None) is None:
            continue
        code = os.waitstatus_to_exitcode(status)
        if code != 0:
            for p in running.values():
                p.kill()
            sys.exit("launch: a worker exited %d" % code)


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("worker", "launch"):
        sys.exit("usage: allreduce.py worker|launch OUT_DIR")
    (worker if sys.argv[1] == "worker" else launch)(sys.argv[2])
