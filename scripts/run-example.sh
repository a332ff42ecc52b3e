#!/usr/bin/env bash
# Installs what is missing, builds planc, checks the GPT-2 124M example (its
# diagnostics and the plan summary) and trains the tiny GPT example for 20
# steps on the reference interpreter, printing the loss of every step.
#
#   scripts/run-example.sh [extra planc check options, e.g. --set parallel.zero=1]
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

bash scripts/setup.sh
bash scripts/build.sh --quiet planc
echo "\$ build/bin/planc check examples/gpt2-124m.plan $*"
build/bin/planc check examples/gpt2-124m.plan "$@"
echo
echo "\$ build/bin/planc run examples/tiny-gpt.plan --target=interp --steps 20"
exec build/bin/planc run examples/tiny-gpt.plan --target=interp --steps 20
