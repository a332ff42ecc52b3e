#!/usr/bin/env bash
# How long building and printing the execution plan of the largest example
# takes: `planc emit X.plan --emit=exec` (frontend, training step,
# partitioning, the memory plan with every placement kept, the plan's builder
# and its verifier, then the text of every rank class's program). In the same
# run, as references: `planc --version` (process start-up), `planc check
# --no-memory` (the frontend alone) and `planc emit --emit=memory` (the same
# compile up to the memory plan, totals only), so the best run splits into
# start-up, frontend, compiling to the memory plan, and what the execution
# plan adds (placements kept, builder, verifier, text).
#
#   bench/exec-speed.sh [--runs N] [--planc PATH] [--limit S] [PLAN]
#
# Defaults: 3 runs (best of them, after one warm-up run), build/bin/planc,
# examples/gpt3-175b.plan, a limit of 2 s (set for a 2-core machine) on the
# best wall time of the emit command. Exits 1 if the limit is missed or planc
# fails, 2 on a usage error.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
runs=3 planc=$ROOT/build/bin/planc limit=2.0 plan=$ROOT/examples/gpt3-175b.plan
while (($#)); do
  case $1 in
    --runs) runs=$2; shift 2 ;;
    --planc) planc=$2; shift 2 ;;
    --limit) limit=$2; shift 2 ;;
    -h|--help) sed -n '2,17p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "exec-speed.sh: unknown option '$1'" >&2; exit 2 ;;
    *) plan=$1; shift ;;
  esac
done
if ! [[ $runs =~ ^[1-9][0-9]*$ ]]; then
  echo "exec-speed.sh: --runs needs a positive integer" >&2
  exit 2
fi
if [[ ! -x $planc ]]; then
  echo "exec-speed.sh: no planc at $planc (build it: scripts/build.sh)" >&2
  exit 2
fi

exec /usr/bin/python3 - "$runs" "$planc" "$limit" "$plan" <<'PY'
import os, resource, statistics, subprocess, sys, time

runs, planc, limit, plan = int(sys.argv[1]), sys.argv[2], float(sys.argv[3]), sys.argv[4]

def timed(args, count_bytes=False):
    """Wall times in s of `runs` runs after one warm-up run, and the bytes printed."""
    out, printed = [], 0
    for i in range(runs + 1):
        t0 = time.perf_counter()
        p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        n = 0
        while True:
            chunk = p.stdout.read(1 << 20)
            if not chunk:
                break
            n += len(chunk)
        err = p.stderr.read()
        p.wait()
        dt = time.perf_counter() - t0
        if p.returncode != 0:
            sys.stderr.write('exec-speed.sh: %s exited with %d\n%s'
                             % (' '.join(args), p.returncode, err.decode(errors='replace')))
            sys.exit(1)
        if i:                       # the first run only warms the page cache
            out.append(dt)
        printed = n
    return out, printed

rel = os.path.relpath(plan)
startup, _ = timed([planc, '--version'])
check, _ = timed([planc, 'check', plan, '--no-memory'])
memory, _ = timed([planc, 'emit', plan, '--emit=memory'])
emit, printed = timed([planc, 'emit', plan, '--emit=exec'])
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024.0

print(rel)
print('  %-44s  %9s  %11s  %4s' % ('command', 'best (ms)', 'median (ms)', 'runs'))
for name, t in (('planc --version  (process start-up)', startup), ('planc check --no-memory', check),
                ('planc emit --emit=memory', memory), ('planc emit --emit=exec', emit)):
    print('  %-44s  %9.1f  %11.1f  %4d' % (name, 1000 * min(t), 1000 * statistics.median(t), len(t)))
best, s, c, mem = min(emit), min(startup), min(check), min(memory)
print('  where the best emit run goes:')
for name, t in (('process start-up', s), ('frontend (check less start-up)', c - s),
                ('compiling to the memory plan', mem - c),
                ('the execution plan (placements, build, verify, text)', best - mem)):
    print('    %-52s %8.1f ms  %5.1f%%' % (name, 1000 * t, 100 * t / best))
print('  text: %.1f MB; largest resident set of the runs: %.0f MB' % (printed / 1e6, rss))
print('  exec / memory (best): %.2fx' % (best / mem))
ok = best < limit
print('  %s: %.3f s against a limit of %.1f s (%.0f%% of it)'
      % ('ok' if ok else 'TOO SLOW', best, limit, 100 * best / limit))
sys.exit(0 if ok else 1)
PY
