#!/usr/bin/env bash
# Mutated example plans must be rejected with a diagnostic or accepted, never
# crash, hang or exit 2 (see mutations.py).
#
#   PLANC=build/bin/planc PLANC_MUTANTS=3000 tests/e2e/mutations.sh
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PLANC=${PLANC:-$ROOT/build/bin/planc}
save_dir=$(dirname "$PLANC")/../e2e-mutation-failures
rm -rf "$save_dir"

exec /usr/bin/python3 "$ROOT/tests/e2e/mutations.py" --planc "$PLANC" \
  --count "${PLANC_MUTANTS:-3000}" --jobs 2 --save-dir "$save_dir" "$ROOT"/examples/*.plan
