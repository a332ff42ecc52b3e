#!/usr/bin/env bash
# The interpreter's training step on tiny-gpt equals PyTorch's in f64: the
# step-0 loss and every gradient within 1e-6 relative, and 5 AdamW steps of
# losses within 1e-5 (see torch_reference.py).
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
"$PYTHON" "$ROOT/tests/e2e/torch_reference.py" --planc "$PLANC" \
  --plan "$ROOT/examples/tiny-gpt.plan" --steps 5 --workdir "$work"
