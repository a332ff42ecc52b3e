#!/usr/bin/env bash
# The direct parser (the fast path) and the ANTLR path build the same AST and
# report the same diagnostics: every .plan file of the repository, and
# mutants of the examples and the standard library (see parser_agree.py;
# tests/unit/frontend/DirectParserTest.cpp does the same on thousands of
# mutants in one process).
#
#   PLANC=build/bin/planc PLANC_PARSER_MUTANTS=2000 tests/e2e/parser-agree.sh
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PLANC=${PLANC:-$ROOT/build/bin/planc}

cd "$ROOT"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files '*.plan')
else
  mapfile -t files < <(find examples lib tests bench -name '*.plan' | sort)
fi

exec /usr/bin/python3 "$ROOT/tests/e2e/parser_agree.py" --planc "$PLANC" \
  --mutants "${PLANC_PARSER_MUTANTS:-30}" --jobs 2 "${files[@]}"
