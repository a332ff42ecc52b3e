#!/usr/bin/env bash
# How long partitioning the largest example takes: `planc emit X.plan
# --emit=ir-partitioned --time-passes` (frontend, lowering, the training step,
# then the partitioning passes: recompute, ZeRO, sharding propagation,
# pipeline stages, the deadlock check; the placed step is printed, not
# unrolled). In the same run, as references: `planc --version` (process
# start-up) and `planc check X.plan` (the frontend alone), so the best run
# splits into start-up, frontend, the passes and the rest, and the ratio to
# `planc check` says how partitioning compares with checking the plan on
# whatever machine this runs on.
#
#   bench/partition-speed.sh [--runs N] [--planc PATH] [--limit S] [PLAN]
#
# Defaults: 5 runs (best of them, after one warm-up run), build/bin/planc,
# examples/gpt3-175b.plan, a limit of 2 s (set for a 2-core machine) on the
# best wall time of the emit command. Exits 1 if the limit is missed or planc
# fails, 2 on a usage error.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
runs=5 planc=$ROOT/build/bin/planc limit=2.0 plan=$ROOT/examples/gpt3-175b.plan
while (($#)); do
  case $1 in
    --runs) runs=$2; shift 2 ;;
    --planc) planc=$2; shift 2 ;;
    --limit) limit=$2; shift 2 ;;
    -h|--help) sed -n '2,18p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "partition-speed.sh: unknown option '$1'" >&2; exit 2 ;;
    *) plan=$1; shift ;;
  esac
done
if ! [[ $runs =~ ^[1-9][0-9]*$ ]]; then
  echo "partition-speed.sh: --runs needs a positive integer" >&2
  exit 2
fi
if [[ ! -x $planc ]]; then
  echo "partition-speed.sh: no planc at $planc (build it: scripts/build.sh)" >&2
  exit 2
fi

exec /usr/bin/python3 - "$runs" "$planc" "$limit" "$plan" <<'PY'
import os, re, statistics, subprocess, sys, time

runs, planc, limit, plan = int(sys.argv[1]), sys.argv[2], float(sys.argv[3]), sys.argv[4]

def timed(args):
    """Wall times in s of `runs` runs after one warm-up run, and the stderr of the best."""
    out, best_err, best = [], b'', None
    for i in range(runs + 1):
        t0 = time.perf_counter()
        p = subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        dt = time.perf_counter() - t0
        if p.returncode != 0:
            sys.stderr.write('partition-speed.sh: %s exited with %d\n%s'
                             % (' '.join(args), p.returncode, p.stderr.decode(errors='replace')))
            sys.exit(1)
        if i:                       # the first run only warms the page cache
            out.append(dt)
            if best is None or dt < best:
                best, best_err = dt, p.stderr
    return out, best_err.decode(errors='replace')

def reports(text):
    """The --time-passes tables in order: a list of (total, [(pass, seconds)])."""
    out = []
    for block in re.split(r'^=+-+=+\n\s*pass execution time\n=+-+=+\n', text, flags=re.M)[1:]:
        m = re.search(r'^\s*total:\s*([0-9.]+) s', block, re.M)
        rows = [(name, float(s)) for s, name in
                re.findall(r'^\s*([0-9.]+)\s+[0-9.]+%\s+(\S+)\s*$', block, re.M)]
        out.append((float(m.group(1)) if m else sum(s for _, s in rows), rows))
    return out

rel = os.path.relpath(plan)
startup, _ = timed([planc, '--version'])
check, _ = timed([planc, 'check', plan])
emit, err = timed([planc, 'emit', plan, '--emit=ir-partitioned', '--time-passes'])
tables = reports(err)
if len(tables) < 2:
    sys.stderr.write('partition-speed.sh: expected two --time-passes tables (training step, '
                     'partitioning) on stderr, found %d:\n%s' % (len(tables), err))
    sys.exit(1)
(step_total, step_rows), (part_total, part_rows) = tables[0], tables[-1]

print(rel)
print('  %-44s  %9s  %11s  %4s' % ('command', 'best (ms)', 'median (ms)', 'runs'))
for name, t in (('planc --version  (process start-up)', startup), ('planc check', check),
                ('planc emit --emit=ir-partitioned', emit)):
    print('  %-44s  %9.1f  %11.1f  %4d' % (name, 1000 * min(t), 1000 * statistics.median(t), len(t)))

best, s, c = min(emit), min(startup), min(check)
print('  partitioning passes (best emit run):')
for name, sec in part_rows:
    print('    %-42s %8.1f ms' % (name, 1000 * sec))
print('    %-42s %8.1f ms' % ('total', 1000 * part_total))
print('  where the best emit run goes:')
rest = best - c - step_total - part_total
for name, t in (('process start-up', s), ('frontend (check less start-up)', c - s),
                ('training step (autodiff, optimizer, ...)', step_total),
                ('partitioning passes', part_total),
                ('the rest (lowering, verify, printing)', rest)):
    print('    %-42s %8.1f ms  %5.1f%%' % (name, 1000 * t, 100 * t / best))
print('  emit / check (best): %.2fx; emit / start-up: %.1fx' % (best / c, best / s))
ok = best < limit
print('  %s: %.3f s against a limit of %.1f s (%.0f%% of it)'
      % ('ok' if ok else 'TOO SLOW', best, limit, 100 * best / limit))
sys.exit(0 if ok else 1)
PY
