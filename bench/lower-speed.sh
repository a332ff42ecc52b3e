#!/usr/bin/env bash
# How long lowering plus autodiff takes on the two largest models, and where
# the time goes: `plan-opt X.plan --passes=autodiff --time-passes`, which must
# stay under 2 s per plan.
#
#   bench/lower-speed.sh [--runs N] [--plan-opt PATH] [--limit SECONDS] [PLAN...]
#
# Defaults: 5 runs, build/bin/plan-opt, a 2 s limit, examples/llama2-7b.plan and
# examples/gpt3-175b.plan. Per plan, the best and median wall time of
#   start-up   plan-opt --help (loading the process)
#   lower      plan-opt X.plan: frontend, lowering, verifying, printing
#   autodiff   plan-opt X.plan --passes=autodiff (as above, plus the pass, the
#              verifier after it, and printing the larger module)
# then the split of the best autodiff run: start-up, frontend and lowering,
# the pass itself (from --time-passes), and the rest. Exits 1 if a plan's best
# autodiff run takes longer than the limit.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
runs=5 planopt=$ROOT/build/bin/plan-opt limit=2.0 plans=()
while (($#)); do
  case $1 in
    --runs) runs=$2; shift 2 ;;
    --plan-opt) planopt=$2; shift 2 ;;
    --limit) limit=$2; shift 2 ;;
    -h|--help) sed -n '2,17p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "lower-speed.sh: unknown option '$1'" >&2; exit 2 ;;
    *) plans+=("$1"); shift ;;
  esac
done
((${#plans[@]})) || plans=("$ROOT/examples/llama2-7b.plan" "$ROOT/examples/gpt3-175b.plan")
if [[ ! -x $planopt ]]; then
  echo "lower-speed.sh: no plan-opt at $planopt (build it: scripts/build.sh)" >&2
  exit 2
fi

exec /usr/bin/python3 - "$runs" "$planopt" "$limit" "${plans[@]}" <<'PY'
import os, re, statistics, subprocess, sys, time

runs, planopt, limit, plans = int(sys.argv[1]), sys.argv[2], float(sys.argv[3]), sys.argv[4:]

def timed(args):
    """Wall times in s of `runs` runs after one warm-up run, and the last stderr."""
    out, err = [], b''
    for i in range(runs + 1):
        t0 = time.perf_counter()
        p = subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        dt = time.perf_counter() - t0
        if p.returncode != 0:
            sys.stderr.write('lower-speed.sh: %s exited with %d\n%s'
                             % (' '.join(args), p.returncode, p.stderr.decode(errors='replace')))
            sys.exit(1)
        if i:                       # the first run only warms the page cache
            out.append(dt)
            err = p.stderr
    return out, err.decode(errors='replace')

def pass_seconds(report, name):
    m = re.search(r'^\s*([0-9.]+)\s+[0-9.]+%\s+' + re.escape(name) + r'\s*$', report, re.M)
    return float(m.group(1)) if m else float('nan')

startup, _ = timed([planopt, '--help'])
failed = False
for plan in plans:
    rel = os.path.relpath(plan)
    lower, _ = timed([planopt, plan, '-o', os.devnull])
    grad, report = timed([planopt, plan, '--passes=autodiff', '--time-passes', '-o', os.devnull])
    rows = [('start-up', startup), ('lower', lower), ('lower + autodiff', grad)]
    print('%s' % rel)
    print('  %-18s  %9s  %11s' % ('plan-opt', 'best (ms)', 'median (ms)'))
    for name, t in rows:
        print('  %-18s  %9.1f  %11.1f' % (name, 1000 * min(t), 1000 * statistics.median(t)))
    best, s, lo = min(grad), min(startup), min(lower)
    p = pass_seconds(report, 'autodiff')
    print('  where the best lower + autodiff run goes:')
    for name, t in (('process start-up', s), ('frontend and lowering (+ verify, print)', lo - s),
                    ('the autodiff pass', p), ('verify after it, print the backward ops', best - lo - p)):
        print('    %-42s %8.1f ms  %5.1f%%' % (name, 1000 * t, 100 * t / best))
    verdict = 'ok' if best < limit else 'TOO SLOW'
    print('  %s: %.3f s against a limit of %.1f s\n' % (verdict, best, limit))
    failed |= best >= limit
sys.exit(1 if failed else 0)
PY
