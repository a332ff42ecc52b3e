#!/usr/bin/env bash
# How long `planc check` takes on the largest example, against the cost of
# starting the process at all (`planc --version`, measured in the same run).
#
#   bench/check-speed.sh [--runs N] [--planc PATH] [PLAN]
#
# Defaults: 5 runs, build/bin/planc, examples/gpt3-175b.plan. Prints the best and
# the median wall time of each command, and the best check time less start-up.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
runs=5 planc=$ROOT/build/bin/planc plan=$ROOT/examples/gpt3-175b.plan
while (($#)); do
  case $1 in
    --runs) runs=$2; shift 2 ;;
    --planc) planc=$2; shift 2 ;;
    -h|--help) sed -n '2,8p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "check-speed.sh: unknown option '$1'" >&2; exit 2 ;;
    *) plan=$1; shift ;;
  esac
done
if [[ ! -x $planc ]]; then
  echo "check-speed.sh: no planc at $planc (build it: scripts/build.sh)" >&2
  exit 2
fi

exec /usr/bin/python3 - "$runs" "$planc" "$plan" <<'PY'
import os, statistics, subprocess, sys, time

runs, planc, plan = int(sys.argv[1]), sys.argv[2], sys.argv[3]

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
        ('planc check ' + rel, timed([planc, 'check', plan]))]
width = max(len(r[0]) for r in rows)
print('%-*s  %9s  %11s  %4s' % (width, 'command', 'best (ms)', 'median (ms)', 'runs'))
for name, t in rows:
    print('%-*s  %9.1f  %11.1f  %4d' % (width, name, min(t), statistics.median(t), len(t)))
print('%-*s  %9.1f' % (width, 'check less start-up (best)', min(rows[1][1]) - min(rows[0][1])))
PY
