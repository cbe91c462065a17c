#!/usr/bin/env bash
# Throughput of tessel-train / tessel-infer (LibTorch C++) against the same
# model in Python PyTorch (Debian python3-torch): same architecture, batch,
# context and thread count, in one run. Prints a table with ratios.
#
# Usage: bench/workers/run.sh [BUILD_DIR]   (default: build; binaries in BUILD_DIR/bin)
# Env: PYTHON (/usr/bin/python3), THREADS (1), STEPS (40), BATCH (16), CONTEXT (128), LAYERS (4),
#      HEADS (4), DIM (128), NEW_TOKENS (256), PROMPTS (3).
# SMOKE=1 (ctest bench_smoke_workers): tiny sizes, a few seconds; the Python side is
# skipped with a message where `import torch` fails (nothing is installed).
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD_DIR=${1:-build}
SMOKE=${SMOKE:-0}
if [[ $SMOKE == 1 ]]; then
  : "${STEPS:=7}" "${BATCH:=2}" "${CONTEXT:=16}" "${LAYERS:=1}" "${HEADS:=2}" "${DIM:=16}" "${NEW_TOKENS:=8}" "${PROMPTS:=1}"
fi
THREADS=${THREADS:-1} STEPS=${STEPS:-40} BATCH=${BATCH:-16} CONTEXT=${CONTEXT:-128}
LAYERS=${LAYERS:-4} HEADS=${HEADS:-4} DIM=${DIM:-128} NEW_TOKENS=${NEW_TOKENS:-256} PROMPTS=${PROMPTS:-3}
SKIP=5
# Debian's python3-torch lives in /usr/bin/python3's dist-packages (not a pyenv python).
PY=${PYTHON:-/usr/bin/python3}
DATA=tests/fixtures/text/gpl-3.txt
TRAIN=$BUILD_DIR/bin/tessel-train
INFER=$BUILD_DIR/bin/tessel-infer

have_torch=1
if ! "$PY" -c 'import torch' 2>/dev/null; then
  if [[ $SMOKE == 1 ]]; then
    echo "run.sh: $PY cannot import torch: Python reference skipped (smoke)" >&2
    have_torch=0
  else
    echo "installing python3-torch with apt" >&2
    apt-get install -y python3-torch >&2
  fi
fi
for bin in "$TRAIN" "$INFER"; do
  [[ -x $bin ]] || { echo "run.sh: $bin not built (cmake --build $BUILD_DIR --target tessel-train tessel-infer)" >&2; exit 1; }
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
model=(--layers "$LAYERS" --heads "$HEADS" --dim "$DIM" --context "$CONTEXT")

# C++ training: tokens/s over the steps after the first SKIP (log every step).
"$TRAIN" --data "$DATA" --out "$work/ckpt" --steps "$STEPS" --batch-size "$BATCH" "${model[@]}" \
  --threads "$THREADS" --log-every 1 --device cpu > "$work/train.jsonl"
cpp_train=$(python3 - "$work/train.jsonl" "$SKIP" "$STEPS" "$BATCH" "$CONTEXT" <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if '"loss"' in l]
skip, steps, batch, ctx = map(int, sys.argv[2:])
t0 = next(l["elapsed_s"] for l in lines if l["step"] == skip)
t1 = lines[-1]["elapsed_s"]
print((steps - skip) * batch * ctx / (t1 - t0))
PY
)
py_train=nan
[[ $have_torch == 0 ]] || py_train=$("$PY" bench/workers/torch_ref.py --mode train --data "$DATA" --steps "$STEPS" --skip "$SKIP" \
  --batch-size "$BATCH" "${model[@]}" --threads "$THREADS" | python3 -c 'import json,sys; print(json.load(sys.stdin)["tokens_per_s"])')

# C++ generation: greedy, KV cache, NEW_TOKENS per prompt; time inside the process.
for _ in $(seq "$PROMPTS"); do echo '{"prompt": "This License applies to"}'; done > "$work/prompts.jsonl"
"$INFER" --checkpoint "$work/ckpt" --input "$work/prompts.jsonl" --max-new-tokens "$NEW_TOKENS" \
  --threads "$THREADS" --device cpu > "$work/gen.jsonl"
cpp_gen=$(python3 -c '
import json, sys
ls = [json.loads(l) for l in open(sys.argv[1])]
print(sum(l["tokens"] for l in ls) / sum(l["elapsed_s"] for l in ls))' "$work/gen.jsonl")
py_gen=nan
[[ $have_torch == 0 ]] || py_gen=$("$PY" bench/workers/torch_ref.py --mode generate "${model[@]}" --threads "$THREADS" \
  --prompts "$PROMPTS" --new-tokens "$NEW_TOKENS" | python3 -c 'import json,sys; print(json.load(sys.stdin)["tokens_per_s"])')

python3 - "$cpp_train" "$py_train" "$cpp_gen" "$py_gen" <<PY
import sys
ct, pt, cg, pg = map(float, sys.argv[1:])
print("config: layers=$LAYERS heads=$HEADS dim=$DIM context=$CONTEXT batch=$BATCH threads=$THREADS steps=$STEPS (first $SKIP untimed) new_tokens=$NEW_TOKENS x $PROMPTS")
print(f"{'metric':<28}{'LibTorch C++':>14}{'PyTorch':>12}{'ratio':>8}")
print(f"{'train tokens/s':<28}{ct:>14.0f}{pt:>12.0f}{ct/pt:>8.2f}")
print(f"{'generate tokens/s (greedy)':<28}{cg:>14.1f}{pg:>12.1f}{cg/pg:>8.2f}")
PY
