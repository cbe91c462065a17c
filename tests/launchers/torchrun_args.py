# What torchrun (torch.distributed.run) would launch, resolved by its own parser from
# the environment alone. Usage: torchrun_args.py [TORCHRUN_FLAG...]; prints one line.
import json
import sys

import torch.distributed.run as run

args = run.get_args_parser().parse_args(sys.argv[1:] + ["train.py"])
config, _, _ = run.config_from_args(args)
resolved = {
    "nnodes": args.nnodes,
    "node_rank": args.node_rank,
    "master_addr": args.master_addr,
    "master_port": args.master_port,
    "nproc_per_node": args.nproc_per_node,
    "rdzv_backend": config.rdzv_backend,
    "rdzv_endpoint": config.rdzv_endpoint,
    "min_nodes": config.min_nodes,
    "max_nodes": config.max_nodes,
    "launch_nproc_per_node": config.nproc_per_node,
    "launch_node_rank": config.rdzv_configs.get("rank"),
}
print("torchrun-args: " + json.dumps(resolved, sort_keys=True), flush=True)
