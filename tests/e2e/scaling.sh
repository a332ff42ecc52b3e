#!/usr/bin/env bash
# `planc check` (the memory check included) on generated plans of 1k, 10k and
# 100k statements, valid and erroneous: time must grow near-linearly (a ratio
# of times, not an absolute time; see scaling.py).
#
#   PLANC=build/bin/planc tests/e2e/scaling.sh
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PLANC=${PLANC:-$ROOT/build/bin/planc}
exec /usr/bin/python3 "$ROOT/tests/e2e/scaling.py" --planc "$PLANC"
