#!/usr/bin/env bash
# Set-up plus the main job: builds Tessel, starts a scheduler with its embedded
# database and two simulated 8-card Gaudi 2 nodes (agents with the fake hl-smi),
# submits a 2-node training job, a 4-card job and a 1-card inference job, shows
# the cluster while they run and the results after, then stops what it started.
# Environment: DEMO_DIR (default: a new temp folder), JOBS (build parallelism).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
scripts/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTESSEL_DEBUG_INFO=OFF -DCMAKE_INSTALL_PREFIX=/usr >/dev/null
cmake --build build -j "${JOBS:-$(nproc)}" --target tessel-scheduler tessel-agent tessel-supervisor tessel fake-hl-smi tessel-train tessel-infer

bin=$root/build/bin
demo=${DEMO_DIR:-$(mktemp -d /tmp/tessel-demo.XXXXXX)}
mkdir -p "$demo"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  # Supervisors outlive agents on purpose; stop the ones this demo started.
  pkill -f "tessel-supervisor.*$demo" 2>/dev/null || true
}
trap cleanup EXIT

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

fake_hl_smi=$root/build/fake/habana/hl-smi
fixture=$root/tests/fixtures/hl-smi/gaudi2-hl225-8.csv


say "one node's inventory, as the agent reads it (fake hl-smi, Gaudi 2, index order != module order)"
FAKE_HL_SMI_FIXTURE=$fixture "$bin/tessel-agent" inventory --vendor habana --hl-smi "$fake_hl_smi" | head -40

say "starting tessel-scheduler (embedded SQLite at $demo/tessel.db)"
"$bin/tessel-scheduler" --listen 127.0.0.1:0 --db "$demo/tessel.db" --heartbeat-timeout 5 >"$demo/scheduler.out" 2>"$demo/scheduler.log" &
pids+=($!)
for _ in $(seq 100); do grep -q '^listening on' "$demo/scheduler.out" && break; sleep 0.1; done
addr=$(sed -n 's/^listening on //p' "$demo/scheduler.out")
[[ -n $addr ]] || { cat "$demo/scheduler.log"; echo "demo: scheduler did not start" >&2; exit 1; }
export TESSEL_SERVER=http://$addr
echo "scheduler at $TESSEL_SERVER"

# An agent running as root refuses to start until told its jobs' user. The demo's jobs
# write into $demo, which belongs to whoever runs the demo: as root, say so.
run_as=()
[[ $EUID -eq 0 ]] && run_as=(--run-as root)
for node in gaudi-a gaudi-b; do
  FAKE_HL_SMI_FIXTURE=$fixture "$bin/tessel-agent" --scheduler "$TESSEL_SERVER" --node "$node" \
    --address 127.0.0.1 --listen 127.0.0.1:0 --state-dir "$demo/$node" --vendor habana \
    --hl-smi "$fake_hl_smi" --heartbeat-interval 1 --isolation none "${run_as[@]}" >"$demo/$node.out" 2>"$demo/$node.log" &
  pids+=($!)
done
for _ in $(seq 100); do
  [[ $("$bin/tessel" nodes -o json | grep -c '"state": "ready"') -ge 2 ]] && break
  sleep 0.1
done

tessel() { "$bin/tessel" "$@"; }
say "tessel nodes"
tessel nodes
say "tessel inventory"
tessel inventory

text=/usr/share/common-licenses/GPL-3
say "submitting: a 2-node training job (2 cards per node), a 4-card job, then a 1-card inference job"
train=$(tessel submit --name train-2node --nodes 2 --devices 2 --time-limit 10m -- \
  "$bin/tessel-train" --data "$text" --out "$demo/ckpt" --steps 80 --checkpoint-every 40 --lr 0.005 --threads 1)
quad=$(tessel submit --name quad --devices 4 --per-device --time-limit 5m -- \
  sh -c 'echo "rank $RANK/$WORLD_SIZE local $LOCAL_RANK module $HLS_MODULE_ID visible modules $HABANA_VISIBLE_MODULES devices $HABANA_VISIBLE_DEVICES"; sleep 2')
echo "train: $train   quad: $quad"
say "tessel jobs (while running)"
tessel jobs
say "tessel nodes (cards in use)"
tessel nodes
say "training log, rank 0 (following until it ends)"
tessel logs "$train" --rank 0 -f | tail -n 8
tessel wait "$train"

printf '{"prompt": "GNU GENERAL PUBLIC "}\n{"prompt": "This program is free software"}\n' >"$demo/prompts.jsonl"
infer=$(tessel submit --name infer --devices 1 -- \
  "$bin/tessel-infer" --checkpoint "$demo/ckpt" --input "$demo/prompts.jsonl" --max-new-tokens 48 --temperature 0.8 --top-k 20 --seed 7)
tessel wait "$infer" || true
tessel wait "$quad" || true

say "tessel jobs --all (finished)"
tessel jobs --all
say "the 4-card job: one process per card, each with its own module"
tessel logs "$quad" --rank 0; tessel logs "$quad" --rank 3
say "the inference job's completions"
tessel logs "$infer"
say "checkpoints written by the 2-node training job"
ls -l "$demo/ckpt"
say "done; stopping the scheduler and agents (state kept in $demo)"
