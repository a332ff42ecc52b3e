#!/usr/bin/env bash
# The cost model against a run on this machine: `planc calibrate` measures
# it (one rank, and two ranks under mpirun for the link), then for a few
# plans the step `planc check --calibration` predicts is set beside the step
# the compiled executable takes (the best of its steps after the first, from
# --metrics). Plans: examples/tiny-gpt.plan, and GPT-2 124M's shape with 2
# layers (bench/gpt2-124m-cpu.plan) as one rank and as dp = 2 under mpirun,
# one thread per process as bench/mpi-dp.sh runs it.
#
#   bench/cost-vs-run.sh [--steps N] [--planc PATH] [--limit R]
#
# Defaults: 5 steps, build/bin/planc, a limit of 2 on the ratio either way
# (predicted / measured in [1/R, R]). Exits 1 outside it or when a step
# fails; 2 on a usage error.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
steps=5 planc=$ROOT/build/bin/planc limit=2
while (($#)); do
  case $1 in
    --steps) steps=$2; shift 2 ;;
    --planc) planc=$2; shift 2 ;;
    --limit) limit=$2; shift 2 ;;
    -h|--help) sed -n '2,14p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "cost-vs-run.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
done
[[ -x $planc ]] || { echo "cost-vs-run.sh: no planc at $planc (build it: scripts/build.sh)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1

echo "calibrating this machine (one thread, one and two ranks) ..."
"$planc" calibrate --ranks 2 -o "$work/cal.json" 2>"$work/calibrate.log" || { cat "$work/calibrate.log"; exit 1; }
tail -1 "$work/calibrate.log"

gpt2=$ROOT/bench/gpt2-124m-cpu.plan
run() { # name plan ranks [planc options...]
  local name=$1 plan=$2 ranks=$3; shift 3
  "$planc" check --json --calibration "$work/cal.json" "$plan" "$@" >"$work/$name.json" 2>/dev/null || true
  "$planc" build -O3 "$plan" "$@" -o "$work/$name" 2>/dev/null
  if ((ranks > 1)); then
    mpirun --oversubscribe --bind-to core -np "$ranks" "$work/$name" --steps "$steps" --threads 1 \
      --metrics "$work/$name.jsonl" >/dev/null
  else
    "$work/$name" --steps "$steps" --threads 1 --metrics "$work/$name.jsonl" >/dev/null
  fi
}
echo "building and running ..."
run tiny "$ROOT/examples/tiny-gpt.plan" 1
run gpt2 "$gpt2" 1 --dim layers=2 --set train.micro_batch=2
run gpt2dp2 "$gpt2" 2 --dim layers=2 --set train.micro_batch=2 --set parallel.mesh.dp=2 --set cluster.gpus_per_node=2

/usr/bin/python3 - "$work" "$limit" <<'PY'
import json, sys
work, limit = sys.argv[1], float(sys.argv[2])
bad = False
print('%-34s %12s %12s %8s' % ('plan', 'predicted', 'measured', 'ratio'))
for name, label in (('tiny', 'tiny-gpt'), ('gpt2', 'GPT-2 124M shape, 2 layers'),
                    ('gpt2dp2', '  the same, dp = 2 (mpirun)')):
    predicted = json.load(open('%s/%s.json' % (work, name)))['time']['step_s']
    measured = min(json.loads(l)['seconds'] for l in list(open('%s/%s.jsonl' % (work, name)))[1:])
    ratio = predicted / measured
    ok = 1 / limit <= ratio <= limit
    bad |= not ok
    print('%-34s %10.4f s %10.4f s %8.2f%s' % (label, predicted, measured, ratio, '' if ok else '  OUTSIDE'))
sys.exit(1 if bad else 0)
PY
