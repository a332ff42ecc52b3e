#!/usr/bin/env bash
# How long `planc check` takes on the largest example: the plan checks, then
# partitioning and the memory planner over every pipeline stage and
# micro-batch (the ledger), which must stay under a limit (1 s by default, set
# for a 2-core machine). In the same run, as references: `planc --version`
# (process start-up) and `planc check --no-memory` (the frontend alone), so
# the best run splits into start-up, frontend and the memory check, and the
# ratio of the two checks says what the ledger costs on whatever machine this
# runs on.
#
#   bench/check-speed.sh [--runs N] [--planc PATH] [--limit S] [PLAN]
#
# Defaults: 5 runs (best of them, after one warm-up run), build/bin/planc,
# examples/gpt3-175b.plan, a limit of 1.0 s on the best wall time of
# `planc check`. Exits 1 if the limit is missed or planc fails, 2 on a usage
# error.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
runs=5 planc=$ROOT/build/bin/planc limit=1.0 plan=$ROOT/examples/gpt3-175b.plan
while (($#)); do
  case $1 in
    --runs) runs=$2; shift 2 ;;
    --planc) planc=$2; shift 2 ;;
    --limit) limit=$2; shift 2 ;;
    -h|--help) sed -n '2,16p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "check-speed.sh: unknown option '$1'" >&2; exit 2 ;;
    *) plan=$1; shift ;;
  esac
done
if [[ ! -x $planc ]]; then
  echo "check-speed.sh: no planc at $planc (build it: scripts/build.sh)" >&2
  exit 2
fi

if ! [[ $runs =~ ^[1-9][0-9]*$ ]]; then
  echo "check-speed.sh: --runs needs a positive integer" >&2
  exit 2
fi

exec /usr/bin/python3 - "$runs" "$planc" "$limit" "$plan" <<'PY'
import os, statistics, subprocess, sys, time

runs, planc, limit, plan = int(sys.argv[1]), sys.argv[2], float(sys.argv[3]), sys.argv[4]

def timed(args):
    """Wall times in ms of `runs` runs (after one warm-up run); fails on a bad exit."""
    out = []
    for i in range(runs + 1):
        t0 = time.perf_counter()
        p = subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        dt = (time.perf_counter() - t0) * 1000
        if p.returncode != 0:
            sys.stderr.write('check-speed.sh: %s exited with %d\n%s'
                             % (' '.join(args), p.returncode, p.stderr.decode(errors='replace')))
            sys.exit(1)
        if i:                       # the first run only warms the page cache
            out.append(dt)
    return out

rel = os.path.relpath(plan)
rows = [('planc --version  (process start-up)', timed([planc, '--version'])),
        ('planc check --no-memory ' + rel, timed([planc, 'check', '--no-memory', plan])),
        ('planc check ' + rel, timed([planc, 'check', plan]))]
width = max(len(r[0]) for r in rows)
print('%-*s  %9s  %11s  %4s' % (width, 'command', 'best (ms)', 'median (ms)', 'runs'))
for name, t in rows:
    print('%-*s  %9.1f  %11.1f  %4d' % (width, name, min(t), statistics.median(t), len(t)))
start, frontend, check = (min(r[1]) for r in rows)
print('%-*s  %9.1f' % (width, 'frontend (best, less start-up)', frontend - start))
print('%-*s  %9.1f' % (width, 'memory check (best, less frontend)', check - frontend))
print('%-*s  %9.2f' % (width, 'check / check --no-memory', check / frontend))
if check / 1000 > limit:
    print('check-speed.sh: planc check took %.2f s, over the limit of %.2f s' % (check / 1000, limit))
    sys.exit(1)
print('within the limit of %.2f s' % limit)
PY
