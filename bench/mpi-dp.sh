#!/usr/bin/env bash
# Data parallelism over MPI on this machine: GPT-2 124M's shape cut to 2 layers
# (bench/gpt2-124m-cpu.plan --dim layers=2: batch 4 x context 64, f32, AdamW), compiled once as
# one rank and once as dp = 2 (2 processes under mpirun), every process on one thread, measured
# in one run. Reports:
#
#   speedup      one rank's step time / dp 2's step time (best steps after the first)
#   efficiency   speedup / 2
#   hidden       from dp 2's --trace on rank 0: the share of communication time (each
#                collective from its start to its completion) that the step did not spend
#                waiting for it: 1 - wait / communication
#
#   bench/mpi-dp.sh [--steps N] [--planc PATH]
#
# Defaults: 5 steps, build/bin/planc. Reports only; exits 1 if a run fails.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
steps=5 planc=$ROOT/build/bin/planc
while (($#)); do
  case $1 in
    --steps) steps=$2; shift 2 ;;
    --planc) planc=$2; shift 2 ;;
    -h|--help) sed -n '2,16p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "mpi-dp.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
plan=$ROOT/bench/gpt2-124m-cpu.plan
common=(--dim layers=2 --set train.micro_batch=2)

echo "building GPT-2 124M's shape with 2 layers as one rank and as dp = 2 ..."
"$planc" build "$plan" "${common[@]}" -o "$work/one" 2>/dev/null
"$planc" build "$plan" "${common[@]}" --set parallel.mesh.dp=2 --set cluster.gpus_per_node=2 -o "$work/dp2" 2>/dev/null

"$work/one" --steps "$steps" --threads 1 --metrics "$work/one.jsonl" >"$work/one.log"
mpirun --oversubscribe --bind-to core -np 2 "$work/dp2" --steps "$steps" --threads 1 --metrics "$work/dp2.jsonl" \
  --trace "$work/trace.json" --trace-steps "$steps" >"$work/dp2.log"

/usr/bin/python3 - "$work" <<'PY'
import json, sys
work = sys.argv[1]
def best(name):
    return min(json.loads(l)['seconds'] for l in list(open(work + '/' + name))[1:])
one, dp2 = best('one.jsonl'), best('dp2.jsonl')
events = [e for e in json.load(open(work + '/trace.json'))['traceEvents']
          if e['ph'] == 'X' and e['pid'] == 0 and e['args'].get('step') != '0']
comm = sum(e['dur'] for e in events if e.get('cat') == 'collective')
wait = sum(e['dur'] for e in events if e.get('cat') == 'wait')
print('GPT-2 124M shape, 2 layers, B 4, T 64, f32, AdamW, one thread per process')
print('  one rank        %.3f s a step' % one)
print('  dp 2 (mpirun)   %.3f s a step' % dp2)
print('  speedup %.2f, efficiency %.2f' % (one / dp2, one / dp2 / 2))
print('  communication on rank 0: %.3f s, waited %.3f s: %.0f%% hidden' % (comm / 1e6, wait / 1e6,
      100 * (1 - wait / comm) if comm else 0))
PY
