#!/usr/bin/env bash
# Executables on a busy machine: the step time of a compiled plan alone and beside one busy
# process (a shell loop that never sleeps, started by this script), in the same
# run, rounds alternating between the two. Plans: GPT-2 124M (bench/gpt2-124m-cpu.plan, built with
# --fusion=aggressive as bench/cpu-step.sh's faster build) and tiny-gpt (examples/tiny-gpt.plan),
# one rank each, each run twice a round: with the waits the executable chooses at start-up
# (runtime/ThreadPools.h) and with OpenMP's default spin (GOMP_SPINCOUNT=300000, what the
# executables did before they chose). Last, tiny-gpt as dp = 4 (global batch 16: 4 rows a rank)
# under `mpirun --oversubscribe`, 4 ranks on this machine's cores, with the chosen waits and with
# the default spin. Reports:
#
#   step       each run's median step after the first, the best of the rounds
#   slowdown   beside the busy process / alone (the goal for GPT-2 with the chosen waits: <= 1.5)
#
# and the load average before and after (other work on the machine changes every figure). A run
# that collapses is stopped after --limit seconds and judged by the steps it finished ("> LIMIT"
# when none after the first).
#
#   bench/busy-machine.sh [--rounds N] [--threads T] [--limit S] [--planc PATH]
#
# Defaults: 2 rounds, 2 threads, 120 s, build/bin/planc. Reports only; exits 1 if a run fails.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
rounds=2 threads=2 limit=120 planc=$ROOT/build/bin/planc
while (($#)); do
  case $1 in
    --rounds) rounds=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --limit) limit=$2; shift 2 ;;
    --planc) planc=$2; shift 2 ;;
    -h|--help) sed -n '2,22p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "busy-machine.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
done
[[ -x $planc ]] || { echo "busy-machine.sh: no planc at $planc (build it: scripts/build.sh)" >&2; exit 2; }
work=$(mktemp -d)
busy=
trap '[[ -n $busy ]] && kill "$busy" 2>/dev/null; rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
# The executables choose their waits: nothing of the caller's may choose for them.
unset OMP_WAIT_POLICY GOMP_SPINCOUNT KMP_BLOCKTIME OPENBLAS_THREAD_TIMEOUT PLANC_THREAD_WAITS
export OMP_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads

echo "building GPT-2 124M (fused), tiny-gpt and tiny-gpt at dp = 4 with planc build ..."
"$planc" build "$ROOT/bench/gpt2-124m-cpu.plan" --fusion=aggressive -o "$work/gpt2" 2>/dev/null
"$planc" build "$ROOT/examples/tiny-gpt.plan" -o "$work/tiny" 2>/dev/null
"$planc" build "$ROOT/examples/tiny-gpt.plan" --set train.global_batch=16 --set parallel.mesh.dp=4 \
  --set cluster.gpus_per_node=4 -o "$work/tiny-dp4" 2>/dev/null
echo "load average before: $(cut -d' ' -f1-4 /proc/loadavg)"

# run NAME WAITS COMMAND...: one run of at most $limit seconds, its steps in
# $work/NAME.WAITS.<round>.jsonl.
round=0
run() {
  local name=$1 waits=$2; shift 2
  local env=(GOMP_SPINCOUNT=300000)
  [[ $waits == chosen ]] && env=()
  local status=0
  timeout "$limit" env "${env[@]}" "$@" --threads "$threads" --sample 0 \
    --metrics "$work/$name.$waits.$round.jsonl" >/dev/null || status=$?
  ((status == 0 || status == 124)) || { echo "busy-machine.sh: $name ($waits waits) failed" >&2; exit 1; }
  touch "$work/$name.$waits.$round.jsonl"
}
for ((round = 0; round < rounds; round++)); do
  for beside in alone busy; do
    if [[ $beside == busy ]]; then
      sh -c 'while :; do :; done' &
      busy=$!
    fi
    for waits in chosen default; do
      run "gpt2-$beside" "$waits" "$work/gpt2" --steps 4
      run "tiny-$beside" "$waits" "$work/tiny" --steps 40
    done
    if [[ $beside == busy ]]; then
      kill "$busy"
      wait "$busy" 2>/dev/null || true
      busy=
    fi
  done
  for waits in chosen default; do
    run dp4 "$waits" mpirun --oversubscribe -np 4 "$work/tiny-dp4" --steps 20
  done
done
echo "load average after:  $(cut -d' ' -f1-4 /proc/loadavg)"

/usr/bin/python3 - "$work" "$rounds" "$threads" "$limit" <<'PY'
import glob, json, statistics, sys
work, rounds, threads, limit = sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4])
def step(name):
    """The median step after the first of each round's run; the best round (the limit: none)."""
    runs = []
    for path in glob.glob('%s/%s.*.jsonl' % (work, name)):
        seconds = [json.loads(l)['seconds'] for l in list(open(path))[1:]]
        if seconds:
            runs.append(statistics.median(seconds))
    return min(runs) if runs else float('inf')
def ratio(a, b):
    return '%8.2fx' % (a / b) if a != float('inf') and b != float('inf') else '     n/a '
def show(s):
    if s == float('inf'):
        return '> %g s' % limit
    return '%.3f s' % s if s >= 1 else '%.2f ms' % (s * 1e3)
print('one rank, %s threads, alone and beside one busy process (best of %d rounds):' % (threads, rounds))
print('  %-48s %10s %10s %9s' % ('', 'alone', 'beside', 'slowdown'))
for plan, label in (('gpt2', 'GPT-2 124M, fused'), ('tiny', 'tiny-gpt')):
    for waits, how in (('chosen', 'waits chosen at start-up'), ('default', "OpenMP's default spin (before)")):
        alone, busy = step('%s-alone.%s' % (plan, waits)), step('%s-busy.%s' % (plan, waits))
        goal = '   (goal <= 1.5)' if plan == 'gpt2' and waits == 'chosen' else ''
        print('  %-48s %10s %10s %s%s' % ('%s, %s' % (label, how), show(alone), show(busy), ratio(busy, alone), goal))
chosen, default = step('dp4.chosen'), step('dp4.default')
print('tiny-gpt at dp = 4, 4 ranks under mpirun --oversubscribe, %s threads each:' % threads)
print('  waits chosen at start-up %s, OpenMP\'s default spin %s: %s' % (show(chosen), show(default),
      ratio(default, chosen).strip()))
PY
