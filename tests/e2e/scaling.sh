#!/usr/bin/env bash
# `planc check` (the memory check included) on generated plans at 1x, 10x and
# 100x of several shapes (statements, a chain of products, dead statements in
# a repeated layer, a GPT of 12 to 1,200 layers), valid and erroneous: time
# must grow near-linearly, the GPT's time per layer stay about the same and
# its `repeat N` and N blocks cost alike (ratios of CPU times, not absolute
# times; see scaling.py).
#
#   PLANC=build/bin/planc tests/e2e/scaling.sh
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PLANC=${PLANC:-$ROOT/build/bin/planc}
exec /usr/bin/python3 "$ROOT/tests/e2e/scaling.py" --planc "$PLANC"
