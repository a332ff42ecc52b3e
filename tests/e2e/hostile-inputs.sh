#!/usr/bin/env bash
# `planc check` on inputs that are not plans, or are built to exhaust the stack,
# the memory or the clock. Every case must exit with status 1 within 5 s and say
# why: a `file:line:col: error: ` line, or an `error:` line naming the file
# (a name too long to quote whole by its beginning: diagnostics quote an excerpt).
# Never a crash, a hang or a usage error.
#
#   PLANC=build/bin/planc tests/e2e/hostile-inputs.sh
#
# planc runs with its address space capped (PLANC_HOSTILE_VMEM_KB, default 8 GiB)
# so that a case that reads without bound fails here instead of exhausting the
# machine; set it to `unlimited` for a sanitizer build.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PLANC=${PLANC:-$ROOT/build/bin/planc}
LIMIT_S=5
VMEM_KB=${PLANC_HOSTILE_VMEM_KB:-8388608}

if [[ ! -x $PLANC ]]; then
  echo "hostile-inputs.sh: no planc at $PLANC (build it: scripts/build.sh)" >&2
  exit 2
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/planc-hostile.XXXXXX")
cleanup() { chmod -R u+rwx "$tmp" 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT

# Inputs made by a seeded generator, so every run sees the same bytes.
/usr/bin/python3 - "$tmp" <<'PY'
import os, random, sys
d = sys.argv[1]
def write(name, data):
    with open(os.path.join(d, name), 'wb') as f:
        f.write(data if isinstance(data, bytes) else data.encode())
def model(expr):
    return 'model m {\n  loss = ' + expr + '\n}\n'
rng = random.Random(20240601)
write('empty.plan', b'')
write('blank.plan', b' \n\t\n  \n')
with open(os.path.join(d, 'a-100mb.plan'), 'wb') as f:
    block = b'a' * (1 << 20)
    for _ in range(100):
        f.write(block)
write('parens-100k.plan', model('(' * 100000 + '1' + ')' * 100000))
write('parens-100k-unclosed.plan', model('(' * 100000 + '1'))
write('brackets-100k.plan', 'model m {\n  input t : f32[' + '[' * 100000 + '1' + ']' * 100000 + ']\n}\n')
write('unary-minus-1e6.plan', model('-' * 1000000 + '1'))
write('sum-10mb.plan', 'model m {\n  let n = 1' + '+1' * 5000000 + '\n  loss = n\n}\n')
write('long-identifier-1mb.plan', model('a' * (1 << 20)))
write('garbage-64k.bin', bytes(rng.randrange(256) for _ in range(1 << 16)))
write('garbage-no-nul-64k.bin', bytes(rng.randrange(1, 256) for _ in range(1 << 16)))
printable = [chr(c) for c in range(32, 127)] + ['\n']
write('garbage-ascii-1mb.plan', ''.join(rng.choice(printable) for _ in range(1 << 20)))
write('invalid-utf8.plan', b'model m {\n  loss = \xff\xfe 1\n}\n')
write('nul-inside.plan', b'model m {\n  loss = 1\x00\n}\n')
write('cycle-a.plan', 'import "cycle-b.plan"\n' + model('1'))
write('cycle-b.plan', 'import "cycle-a.plan"\nlayer f(x: [n]) {\n  return x\n}\n')
write('self-import.plan', 'import "self-import.plan"\n' + model('1'))
write('import-dev-zero.plan', 'import "/dev/zero"\n' + model('1'))
write('repeat-huge.plan', 'model m {\n  input t : f32[4]\n  x = t\n  repeat 1000000000000 {\n'
      '    x = x + 1\n  }\n  loss = sum(x, 0)\n}\n')
write('repeat-nested-1e9.plan',
      'model m {\n  input t : f32[4]\n  x = t\n'
      '  repeat 1000 {\n    repeat 1000 {\n      repeat 1000 {\n        x = x + 1\n'
      '      }\n    }\n  }\n  loss = sum(x, 0)\n}\n')
PY
mkdir "$tmp/a-directory.plan"

pass=0 fail=0

# case NAME FILE: planc check FILE must exit 1 within LIMIT_S with an error naming it.
case_() {
  local name=$1 file=$2 rc=0 t0 dt
  t0=$(date +%s%N)
  ( ulimit -v "$VMEM_KB"; exec timeout -k 1 "$LIMIT_S" "$PLANC" check "$file" ) \
    </dev/null >"$tmp/out" 2>"$tmp/err" || rc=$?
  dt=$(( ($(date +%s%N) - t0) / 1000000 ))
  local why=
  if ((rc == 124)); then
    why="no exit within $LIMIT_S s"
  elif ((rc > 128)); then
    why="killed by signal $((rc - 128))"
  elif ((rc != 1)); then
    why="exit status $rc, expected 1"
  elif ! grep -qE '^[^:]+:[0-9]+:[0-9]+: error: ' "$tmp/err" &&
       ! grep -E 'error:' "$tmp/err" | grep -F -- "$(basename -- "$file")" >/dev/null &&
       ! grep -E 'error:' "$tmp/err" | grep -F -- "${file:0:200}" >/dev/null; then
    why="no 'file:line:col: error:' line and no error line naming the file"
  fi
  if [[ -z $why ]]; then
    pass=$((pass + 1))
    printf 'ok    %6d ms  %s\n' "$dt" "$name"
  else
    fail=$((fail + 1))
    printf 'FAIL  %6d ms  %s: %s\n' "$dt" "$name" "$why"
    printf '      $ %s check %s\n' "$PLANC" "$file"
    head -c 2000 "$tmp/err" | head -n 8 | sed 's/^/      | /'
  fi
}

case_ "a directory"                         "$tmp/a-directory.plan"
case_ "a missing file"                      "$tmp/no-such-file.plan"
if [[ $(id -u) -ne 0 ]]; then
  cp "$ROOT/examples/tiny-gpt.plan" "$tmp/unreadable.plan"
  chmod 000 "$tmp/unreadable.plan"
  case_ "an unreadable file (mode 000)"     "$tmp/unreadable.plan"
else
  echo "skip            an unreadable file (mode 000): root reads it anyway; see /proc/self/mem below"
fi
# Root can read any file, so these stand in for it: a path through a regular
# file (ENOTDIR), a name longer than PATH_MAX, and a /proc file whose reads fail.
case_ "a path through a file (ENOTDIR)"     "$tmp/empty.plan/x.plan"
case_ "a path longer than PATH_MAX"         "$tmp/$(printf 'x%.0s' {1..5000}).plan"
case_ "/proc/self/mem (reads fail with EIO)" /proc/self/mem
case_ "an endless device (/dev/zero)"       /dev/zero
case_ "an empty file"                       "$tmp/empty.plan"
case_ "a file of blanks"                    "$tmp/blank.plan"
case_ "100 MB of 'a'"                       "$tmp/a-100mb.plan"
case_ "100k nested parentheses"             "$tmp/parens-100k.plan"
case_ "100k unclosed parentheses"           "$tmp/parens-100k-unclosed.plan"
case_ "100k nested brackets in a shape"     "$tmp/brackets-100k.plan"
case_ "1e6 unary minus signs"               "$tmp/unary-minus-1e6.plan"
case_ "a 10 MB expression 1+1+...+1"        "$tmp/sum-10mb.plan"
case_ "a 1 MB identifier"                   "$tmp/long-identifier-1mb.plan"
case_ "64 KiB of random bytes"              "$tmp/garbage-64k.bin"
case_ "64 KiB of random bytes without NUL"  "$tmp/garbage-no-nul-64k.bin"
case_ "1 MiB of random printable text"      "$tmp/garbage-ascii-1mb.plan"
case_ "invalid UTF-8 in a plan"             "$tmp/invalid-utf8.plan"
case_ "a NUL byte in a plan"                "$tmp/nul-inside.plan"
case_ "an import cycle"                     "$tmp/cycle-a.plan"
case_ "a file importing itself"             "$tmp/self-import.plan"
case_ "import \"/dev/zero\""                "$tmp/import-dev-zero.plan"
case_ "repeat 10^12"                        "$tmp/repeat-huge.plan"
case_ "nested repeats of 10^9 statements"   "$tmp/repeat-nested-1e9.plan"

echo "hostile inputs: $((pass + fail)) cases, $fail failing"
((fail == 0))
