#!/usr/bin/env bash
# Whether `planc check` costs the same at every data-parallel size: GPT-3
# 175B (examples/gpt3-175b.plan) on t = 8, p = 8 with 96 micro-batches of 1
# per dp rank, at dp = 1, 16 and 128 (64, 1024 and 8192 GPUs; global batch
# 96 x dp, so 1536 at the 1024 GPUs of dp = 16), under the interleaved
# schedule (v = 3) and 1F1B, all measured in the same run. Ranks that differ
# only by their dp coordinate run the same program, so the analysis must not
# grow with dp: the table gives each time and the ratio dp=128 / dp=1 per
# schedule, and beside the wall times the CPU time (user + system; the
# memory planner plans the pipeline stages on all cores), which a shared
# machine's load disturbs less.
#
#   bench/dp-scaling.sh [--runs N] [--planc PATH] [--limit S] [--ratio R]
#
# Defaults: 3 runs of each (best of them, after one warm-up run),
# build/bin/planc, a limit of 1.0 s on every best wall time (set for a 2-core
# machine) and of 1.25 on each ratio of wall times. Exits 1 if a limit is
# missed or planc fails, 2 on a usage error.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
runs=3 planc=$ROOT/build/bin/planc limit=1.0 ratio=1.25
while (($#)); do
  case $1 in
    --runs) runs=$2; shift 2 ;;
    --planc) planc=$2; shift 2 ;;
    --limit) limit=$2; shift 2 ;;
    --ratio) ratio=$2; shift 2 ;;
    -h|--help) sed -n '2,18p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "dp-scaling.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
if [[ ! -x $planc ]]; then
  echo "dp-scaling.sh: no planc at $planc (build it: scripts/build.sh)" >&2
  exit 2
fi
if ! [[ $runs =~ ^[1-9][0-9]*$ ]]; then
  echo "dp-scaling.sh: --runs needs a positive integer" >&2
  exit 2
fi

exec /usr/bin/python3 - "$runs" "$planc" "$limit" "$ratio" "$ROOT/examples/gpt3-175b.plan" <<'PY'
import resource, statistics, subprocess, sys, time

runs, planc, limit, ratio_limit, plan = int(sys.argv[1]), sys.argv[2], float(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
schedules = [('interleaved', 'interleaved(v = 3, micro_batches = 96)'), ('1f1b', '1f1b(micro_batches = 96)')]
dps = [1, 16, 128]

def command(dp, schedule):
    # 8 GPUs a node: the cluster grows with dp; each dp rank keeps 96 micro-batches.
    return [planc, 'check', plan, '--set', 'parallel.mesh=mesh(dp = %d, pp = 8, tp = 8)' % dp,
            '--set', 'cluster.nodes=%d' % (8 * dp), '--set', 'train.global_batch=%d' % (96 * dp),
            '--set', 'parallel.pipeline=' + schedule]

# Interleave the configurations run by run, so a change in the machine's load
# touches every one of them alike.
times = {(s, dp): [] for s, _ in schedules for dp in dps}
cpu = {(s, dp): [] for s, _ in schedules for dp in dps}  # user + system
for r in range(runs):
    for name, schedule in schedules:
        for dp in dps:
            args = command(dp, schedule)
            if r == 0:
                subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # warm-up
            r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            p = subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            dt = (time.perf_counter() - t0) * 1000
            r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu[(name, dp)].append((r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime) * 1000)
            if p.returncode != 0:
                sys.stderr.write('dp-scaling.sh: %s exited with %d\n%s'
                                 % (' '.join(args), p.returncode, p.stderr.decode(errors='replace')))
                sys.exit(1)
            times[(name, dp)].append(dt)

print('planc check examples/gpt3-175b.plan, t = 8, p = 8, 96 micro-batches per dp rank')
print('%-12s %5s %6s %9s %11s %13s %4s' % ('schedule', 'dp', 'GPUs', 'best (ms)', 'median (ms)', 'best CPU (ms)', 'runs'))
failed = []
for name, _ in schedules:
    for dp in dps:
        t = times[(name, dp)]
        print('%-12s %5d %6d %9.1f %11.1f %13.1f %4d'
              % (name, dp, 64 * dp, min(t), statistics.median(t), min(cpu[(name, dp)]), len(t)))
        if min(t) / 1000 > limit:
            failed.append('%s at dp = %d took %.2f s, over the limit of %.2f s' % (name, dp, min(t) / 1000, limit))
    r = min(times[(name, 128)]) / min(times[(name, 1)])
    print('%-12s dp=128 / dp=1: %.2f (CPU %.2f)' % (name, r, min(cpu[(name, 128)]) / min(cpu[(name, 1)])))
    if r > ratio_limit:
        failed.append('%s: dp=128 / dp=1 is %.2f, over the limit of %.2f' % (name, r, ratio_limit))
for f in failed:
    print('dp-scaling.sh: ' + f)
if failed:
    sys.exit(1)
print('within the limits: %.2f s each, ratio %.2f' % (limit, ratio_limit))
PY
