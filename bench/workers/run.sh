#!/usr/bin/env bash
# Throughput of tessel-train / tessel-infer (LibTorch C++) against the same
# model in Python PyTorch (Debian python3-torch): same architecture, batch,
# context and thread count, in one run, in fp32 and in bf16 (--precision bf16
# on both sides). Prints a table with ratios: C++/Python per precision, and
# bf16/fp32 per side.
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

# One precision's four figures: C++ and Python training, C++ and Python generation.
bench_precision() {
  local precision=$1 dir="$work/$1"
  mkdir -p "$dir"
  # C++ training: tokens/s over the steps after the first SKIP (log every step).
  "$TRAIN" --data "$DATA" --out "$dir/ckpt" --steps "$STEPS" --batch-size "$BATCH" "${model[@]}" \
    --threads "$THREADS" --log-every 1 --device cpu --precision "$precision" > "$dir/train.jsonl"
  grep -q "\"precision\":\"$precision\"" "$dir/train.jsonl" || { echo "run.sh: tessel-train did not run in $precision" >&2; exit 1; }
  cpp_train=$(python3 - "$dir/train.jsonl" "$SKIP" "$STEPS" "$BATCH" "$CONTEXT" <<'PY'
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
    --batch-size "$BATCH" "${model[@]}" --threads "$THREADS" --precision "$precision" | python3 -c 'import json,sys; print(json.load(sys.stdin)["tokens_per_s"])')

  # C++ generation: greedy, KV cache, NEW_TOKENS per prompt; time inside the process.
  for _ in $(seq "$PROMPTS"); do echo '{"prompt": "This License applies to"}'; done > "$dir/prompts.jsonl"
  "$INFER" --checkpoint "$dir/ckpt" --input "$dir/prompts.jsonl" --max-new-tokens "$NEW_TOKENS" \
    --threads "$THREADS" --device cpu --precision "$precision" > "$dir/gen.jsonl"
  cpp_gen=$(python3 -c '
import json, sys
ls = [json.loads(l) for l in open(sys.argv[1])]
print(sum(l["tokens"] for l in ls) / sum(l["elapsed_s"] for l in ls))' "$dir/gen.jsonl")
  py_gen=nan
  [[ $have_torch == 0 ]] || py_gen=$("$PY" bench/workers/torch_ref.py --mode generate "${model[@]}" --threads "$THREADS" \
    --prompts "$PROMPTS" --new-tokens "$NEW_TOKENS" --precision "$precision" | python3 -c 'import json,sys; print(json.load(sys.stdin)["tokens_per_s"])')
  echo "$cpp_train $py_train $cpp_gen $py_gen"
}

# fp32 then bf16, back to back in one run: each precision trains its own checkpoint
# (same seed) and generates from it.
fp32=$(bench_precision fp32)  # an assignment: set -e stops the run when it fails
bf16=$(bench_precision bf16)
read -r f_ct f_pt f_cg f_pg <<< "$fp32"
read -r b_ct b_pt b_cg b_pg <<< "$bf16"

python3 - "$f_ct" "$f_pt" "$f_cg" "$f_pg" "$b_ct" "$b_pt" "$b_cg" "$b_pg" <<PY
import sys
f_ct, f_pt, f_cg, f_pg, b_ct, b_pt, b_cg, b_pg = map(float, sys.argv[1:])
print("config: layers=$LAYERS heads=$HEADS dim=$DIM context=$CONTEXT batch=$BATCH threads=$THREADS steps=$STEPS (first $SKIP untimed) new_tokens=$NEW_TOKENS x $PROMPTS")
print(f"{'metric':<28}{'LibTorch C++':>14}{'PyTorch':>12}{'C++/Py':>8}")
for name, c, p in [("train tokens/s fp32", f_ct, f_pt), ("train tokens/s bf16", b_ct, b_pt),
                   ("generate tokens/s fp32", f_cg, f_pg), ("generate tokens/s bf16", b_cg, b_pg)]:
    print(f"{name:<28}{c:>14.0f}{p:>12.0f}{c/p:>8.2f}")
print(f"{'bf16/fp32':<28}{'C++':>14}{'PyTorch':>12}")
print(f"{'train':<28}{b_ct/f_ct:>14.2f}{b_pt/f_pt:>12.2f}")
print(f"{'generate':<28}{b_cg/f_cg:>14.2f}{b_pg/f_pg:>12.2f}")
PY
