#!/usr/bin/env bash
# Hugging Face weights in and out of compiled plans (docs/checkpoints.md, "Hugging Face weights,
# in and out"), against a PyTorch reference written from transformers' conventions
# (hf_reference.py):
#
#   llama, qwen2, gpt2, neox   tests/e2e/hf/<family>.plan, each following its std.hf name map, on
#              one rank and under mpirun at dp 2, tp 2, pp 2 and dp 2 x tp 2: a file of
#              Hugging Face names read with --init-from and written back with planc convert --to
#              is byte-equal; 20 AdamW steps with weight decay match torch's losses within 1e-4
#              and its trained weights; config.json describes the model
#   refused    what must not load silently: a Qwen2 file (q/k/v biases) into a Llama plan, a file
#              with a layer more, a missing tensor, a tied head that differs from the embedding,
#              Hugging Face names into a plan that follows no map; a conversion to another map,
#              of a plan without one, or over another model's config.json
#
#   PLANC=build/bin/planc tests/e2e/hf-weights.sh [family...]
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PLANC=${PLANC:-$ROOT/build/bin/planc}
PY=/usr/bin/python3
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none

if ! "$PY" -c 'import torch, numpy' 2>/dev/null; then
  echo "hf-weights: $PY cannot import torch and numpy; install python3-torch (scripts/setup.sh does)" >&2
  exit 1
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

failed=0
fail() {
  echo "FAIL $*"
  failed=1
}
# expect CODE TEXT CMD...: CMD exits with CODE and its output contains TEXT.
expect() {
  local code=$1 text=$2 rc=0
  shift 2
  "$@" >expect.log 2>&1 || rc=$?
  if [[ $rc -ne $code ]] || ! grep -qF -- "$text" expect.log; then
    fail "refused: '$*' exited $rc (wanted $code) without '$text':"
    tail -n 5 expect.log
  else
    echo "ok: $(grep -F -m1 -- "$text" expect.log | cut -c1-200)"
  fi
}

families=("$@")
((${#families[@]})) || families=(llama qwen2 gpt2 neox)
for family in "${families[@]}"; do
  echo "=== $family"
  rc=0
  "$PY" "$ROOT/tests/e2e/hf_reference.py" --planc "$PLANC" --family "$family" \
    --plan "$ROOT/tests/e2e/hf/$family.plan" --workdir "$work/$family" || rc=$?
  ((rc == 0)) || fail "$family: hf_reference.py exited with $rc"
done

echo "=== refused"
[[ -f llama/hf.safetensors && -f qwen2/hf.safetensors && -x llama/one/model && -x qwen2/one/model ]] || {
  echo "refused: needs the llama and qwen2 runs above"
  exit 1
}
ROOT=$ROOT "$PY" - <<'PY' || fail "refused: the script that writes the files failed"
import os, sys
import numpy as np
sys.path.insert(0, os.path.join(os.environ['ROOT'], 'tests', 'e2e'))
from hf_reference import read_safetensors, write_safetensors
llama = dict(read_safetensors('llama/hf.safetensors'))
qwen2 = dict(read_safetensors('qwen2/hf.safetensors'))
more = dict(llama)
for name, a in llama.items():
    if name.startswith('model.layers.1.'):
        more[name.replace('model.layers.1.', 'model.layers.2.')] = a
write_safetensors('three-layers.safetensors', more)
missing = dict(llama)
del missing['model.norm.weight']
write_safetensors('missing.safetensors', missing)
untied = dict(qwen2)
untied['lm_head.weight'] = qwen2['model.embed_tokens.weight'] * 2
write_safetensors('untied.safetensors', untied)
PY
expect 1 "tensor 'model.layers.0.self_attn.k_proj.bias' has no name in the plan's name map 'hf_llama'" \
  llama/one/model --init-from qwen2/hf.safetensors --steps 1
expect 1 "tensor 'model.layers.2.input_layernorm.weight' has no name in the plan's name map 'hf_llama'" \
  llama/one/model --init-from three-layers.safetensors --steps 1
expect 1 "'missing.safetensors': no tensor 'model.norm.weight' (the plan's 'norm.weight')" \
  llama/one/model --init-from missing.safetensors --steps 1
expect 1 "tensor 'lm_head.weight' differs from 'model.embed_tokens.weight', but the plan ties it to 'tok_embeddings.weight'" \
  qwen2/one/model --init-from untied.safetensors --steps 1
# The pipeline's first stage (rank 0 logs) reads its own tensors, the embedding and layer 0's
# nine, and passes over the second stage's: layer 1's nine, the final norm and the head.
expect 0 "loaded 10 tensors of 'llama/hf.safetensors' by the name map 'hf_llama', 11 for the other pipeline stages" \
  mpirun --oversubscribe -np 2 llama/pp2/model --init-from llama/hf.safetensors --steps 0
# A plan that follows no map is told how to read Hugging Face's names.
sed -e '/names = hf_llama/d' "$ROOT/tests/e2e/hf/llama.plan" >plain.plan
"$PLANC" build plain.plan -O0 -o plain >plain.build.log 2>&1 || fail "refused: build of plain.plan: $(tail -3 plain.build.log)"
expect 1 "has no tensor named as a parameter of the plan (its first is 'lm_head.weight'); a file of Hugging Face names loads through a name map the plan follows: add \`names = hf_llama\`" \
  ./plain --init-from llama/hf.safetensors --steps 1
./plain --steps 0 --checkpoint-dir plain-ck >plain.log 2>&1 || fail "refused: plain --steps 0: $(tail -3 plain.log)"
expect 1 "plan 'small_llama' follows no name map, so its checkpoints have no other names" \
  "$PLANC" convert plain-ck --to hf-llama -o plain-out/model.safetensors
expect 1 "plan 'small_llama' follows the name map 'hf_llama', not 'hf-gpt2'" \
  "$PLANC" convert llama/one/ck --to hf-gpt2 -o other/model.safetensors
mkdir -p clash && echo '{"model_type": "bert"}' >clash/config.json
expect 1 "'clash/config.json' exists and is another model's config; write into another folder" \
  "$PLANC" convert llama/one/ck --to hf-llama -o clash/model.safetensors
[[ ! -e clash/model.safetensors ]] || fail "refused: the conversion wrote clash/model.safetensors before refusing"
expect 2 "--to writes a checkpoint folder under other names" \
  "$PLANC" convert llama/hf.safetensors --to hf-llama -o x.safetensors

exit "$failed"
