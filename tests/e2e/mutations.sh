#!/usr/bin/env bash
# Mutated example plans must be rejected with a diagnostic or accepted, never
# crash, hang or exit 2 (see mutations.py).
#
#   PLANC=build/bin/planc PLANC_MUTANTS=2000 tests/e2e/mutations.sh
#
# 2000 mutants (250 per example) by default, about two and a half minutes of
# CPU time; a larger PLANC_MUTANTS searches longer. In-process, the
# coverage-guided plan-fuzz target tries far more plans per second.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PLANC=${PLANC:-$ROOT/build/bin/planc}
save_dir=$(dirname "$PLANC")/../e2e-mutation-failures
rm -rf "$save_dir"

exec /usr/bin/python3 "$ROOT/tests/e2e/mutations.py" --planc "$PLANC" \
  --count "${PLANC_MUTANTS:-2000}" --jobs 2 --save-dir "$save_dir" "$ROOT"/examples/*.plan
