#!/usr/bin/env bash
# The interpreter's training step on tiny-gpt equals PyTorch's in f64 (see torch_reference.py): the
# step-0 loss and every gradient within 1e-6 relative, and 5 AdamW steps of losses and the
# parameters after them within 1e-6, in four cases of the same model, and the compiled executable
# (compiled, below: its losses and the parameters of its last checkpoint) within 1e-4:
#
#   plan          the plan as written: one micro-batch of 4 rows per step, one device; weight decay
#                 on the tensors of 2 or more dims only (planc's default, nanoGPT's parameter groups)
#   decay-all     the same with weight_decay_params = all: weight decay on every tensor, one group
#   accumulate    global_batch 16 in micro-batches of 4 on dp = 1: 4 micro-batches accumulated
#   dp2-pp2       the same batch on mesh(dp = 2, pp = 2) (4 devices): 2 micro-batches per dp rank
#                 through a 2-stage pipeline, the dp ranks' gradients all-reduced
#
# The last two check that accumulation and the parallel layout leave the step's math alone: torch
# runs the same micro-batches on one device, and the gradients must be the mean loss's. Each case
# prints one PASS or FAIL line with its largest differences; the script fails if any case does.
#
#   PLANC=build/bin/planc tests/e2e/torch-reference.sh
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PLANC=${PLANC:-$ROOT/build/bin/planc}
PYTHON=/usr/bin/python3

if ! "$PYTHON" -c 'import torch, numpy' 2>/dev/null; then
  echo "torch-reference: $PYTHON cannot import torch and numpy; install python3-torch (scripts/setup.sh does)" >&2
  exit 1
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

verdicts=()
failed=0
# run_case NAME [--set KEY=VALUE ...]: one run of torch_reference.py, its verdict kept for the summary.
run_case() {
  local name=$1
  shift
  local log="$work/$name.log" rc=0
  mkdir -p "$work/$name"
  echo "=== $name"
  "$PYTHON" "$ROOT/tests/e2e/torch_reference.py" --planc "$PLANC" \
    --plan "$ROOT/examples/tiny-gpt.plan" --steps 5 --workdir "$work/$name" --case "$name" "$@" \
    >"$log" 2>&1 || rc=$?
  cat "$log"
  local verdict
  verdict=$(grep -E '^(PASS|FAIL) ' "$log" | tail -n 1 || true)
  if [[ $rc -ne 0 || $verdict != PASS* ]]; then
    failed=1
    [[ $verdict == FAIL* ]] || verdict="FAIL $name: torch_reference.py exited with $rc"
  fi
  verdicts+=("$verdict")
}

batch=(--set train.global_batch=16 --set train.micro_batch=4)
run_case plan
run_case decay-all --set train.optimizer.weight_decay_params=all
run_case accumulate "${batch[@]}"
run_case dp2-pp2 "${batch[@]}" --set 'parallel.mesh=mesh(dp = 2, pp = 2)' --set cluster.gpus_per_node=4
# The executable planc build makes (f32) against torch (f64): 50 AdamW steps.
"$PLANC" build "$ROOT/examples/tiny-gpt.plan" -o "$work/tiny-gpt" 2>"$work/build.log" || cat "$work/build.log"
run_case compiled --steps 50 --compiled "$work/tiny-gpt"

echo "=== summary"
printf '%s\n' "${verdicts[@]}"
exit "$failed"
