#!/usr/bin/env bash
# `planc run --target=interp` trains tiny-gpt: on the synthetic data (a seeded
# Markov chain, about 1.1 nats of entropy against ln 256 = 5.55 for a model
# that knows nothing) the mean loss of steps 25-29 is clearly below step 0's.
# The dump holds every file of every step, and no temporary file is left.
#
#   PLANC=build/bin/planc tests/e2e/train-tiny-gpt.sh
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PLANC=${PLANC:-$ROOT/build/bin/planc}
STEPS=30

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$PLANC" run "$ROOT/examples/tiny-gpt.plan" --target=interp --steps "$STEPS" --dump "$work/dump" | tee "$work/log"

/usr/bin/python3 - "$work" "$STEPS" <<'PY'
import json, os, sys
work, steps = sys.argv[1], int(sys.argv[2])
dump = os.path.join(work, 'dump')
losses = json.load(open(os.path.join(dump, 'losses.json')))['loss']
logged = [float(l.split()[3]) for l in open(os.path.join(work, 'log')) if l.startswith('step ')]
problems = []
if len(losses) != steps or len(logged) != steps:
    problems.append('%d losses in losses.json and %d logged, for %d steps' % (len(losses), len(logged), steps))
if any(abs(a - b) > 1e-6 for a, b in zip(losses, logged)):
    problems.append('the log and losses.json disagree')
expected = {'init.safetensors', 'losses.json', 'final.safetensors'}
expected |= {'batch-%d.safetensors' % i for i in range(steps)}
expected |= {'step-%d.safetensors' % i for i in range(steps)}
files = set(os.listdir(dump))
if files != expected:
    problems.append('dump files: missing %s, unexpected %s' % (sorted(expected - files), sorted(files - expected)))
first, last = losses[0], sum(losses[-5:]) / 5
print('loss: step 0 %.4f, mean of the last 5 steps %.4f (%.4f lower)' % (first, last, first - last))
if not last < first - 0.2:
    problems.append('the loss did not fall by 0.2 in %d steps' % steps)
for p in problems:
    print('train-tiny-gpt: ' + p)
sys.exit(1 if problems else 0)
PY
