#!/usr/bin/env bash
# Installs what is missing, builds planc and checks the GPT-2 124M example:
# diagnostics, the plan summary and the memory per rank.
#
#   scripts/run-example.sh [extra planc check options, e.g. --set parallel.zero=1]
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

bash scripts/setup.sh
bash scripts/build.sh --quiet planc
echo "\$ build/bin/planc check examples/gpt2-124m.plan $*"
exec build/bin/planc check examples/gpt2-124m.plan "$@"
