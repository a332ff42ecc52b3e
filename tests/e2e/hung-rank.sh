#!/usr/bin/env bash
# A rank that hangs ends the job within --comm-timeout (docs/ranks.md): tiny-gpt on
# dp 2 x pp 2 (4 ranks: collectives, sends and receives, the loss broadcast from rank 1,
# checkpoints every 2 steps) is run TRIALS times, and each trial stops one rank (SIGSTOP),
# rank after rank, at a moment that changes from trial to trial:
#
#   step-end     at a step's loss broadcast: between two steps
#   collective   at one of the step's collectives: during a step
#   checkpoint   while it writes its file of a checkpoint
#   random       from outside (kill -STOP) at a random moment once training runs
#   send         at one of the pipeline's sends: during a step
#   init         before MPI_Init: at start-up
#   finalize     before MPI_Finalize: at shutdown
#
# (tests/e2e/stop-rank.c, preloaded into the ranks, stops the chosen rank at the chosen
# moment.) Every trial must end within the timeout + SLACK seconds of the stop, with a
# non-zero status, an error naming the rank, the training step the log prints (or
# start-up / shutdown), the operation and the ranks waited for, and no process left.
#
#   TRIALS=20 COMM_TIMEOUT=3 SLACK=7 PLANC=build/bin/planc tests/e2e/hung-rank.sh
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PLANC=${PLANC:-$ROOT/build/bin/planc}
PY=/usr/bin/python3
TRIALS=${TRIALS:-7}
LIMIT=${COMM_TIMEOUT:-3}
SLACK=${SLACK:-7}
RANKS=4
EVERY=2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none

work=$(mktemp -d)
MODEL=$work/hung-model
# Processes of this test's model still running (by their id): none should be.
leftovers() { pgrep -f "^$MODEL " || true; }
cleanup() {
  for pid in $(leftovers); do kill -9 "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
cd "$work"
failures=0
fail() {
  echo "hung-rank: FAIL: $*"
  failures=$((failures + 1))
}

"$PLANC" build -O1 "$ROOT/examples/tiny-gpt.plan" --set train.global_batch=8 --set train.micro_batch=2 \
  --set cluster.gpus_per_node=$RANKS --set parallel.mesh.dp=2 --set parallel.mesh.pp=2 \
  --set 'parallel.pipeline=1f1b(micro_batches = 2)' -o "$MODEL" 2>build.log || { cat build.log; exit 1; }
mpicc -shared -fPIC -O1 -o libstop-rank.so "$ROOT/tests/e2e/stop-rank.c" -ldl || { echo "cannot build the shim"; exit 1; }

moments=(step-end collective checkpoint random send init finalize)
longest=0
for ((i = 0; i < TRIALS; i++)); do
  rank=$((i % RANKS)) moment=${moments[i % ${#moments[@]}]} steps=1000000 at=
  case $moment in
    step-end) at=step-end:$((2 + RANDOM % 6)) ;;
    collective) at=collective:$((2 + RANDOM % 60)) ;;
    checkpoint) at=checkpoint:$((1 + RANDOM % 3)) ;;
    send) at=send:$((1 + RANDOM % 40)) ;;
    init) at=init ;;
    finalize) at=finalize steps=3 ;;
  esac
  rm -f stamp
  timeout -s KILL $((LIMIT + SLACK + 60)) mpirun --oversubscribe -np $RANKS -x LD_PRELOAD="$work/libstop-rank.so" \
    -x PLANC_TEST_STOP_RANK=$rank -x PLANC_TEST_STOP_AT="$at" -x PLANC_TEST_STOP_STAMP="$work/stamp" \
    "$MODEL" --steps $steps --comm-timeout "$LIMIT" --checkpoint-every $EVERY --checkpoint-dir "ck$i" \
    >"trial$i.log" 2>&1 &
  job=$!
  if [[ $moment == random ]]; then
    # Once training runs, a random moment within the next second.
    for _ in $(seq 300); do
      grep -q "^step 1 " "trial$i.log" && break
      sleep 0.1
    done
    sleep "0.$((RANDOM % 10))$((RANDOM % 10))"
    victim=
    for pid in $(leftovers); do
      tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$rank" && victim=$pid
    done
    if [[ -z $victim ]]; then
      fail "trial $i: rank $rank is not running: $(tail -3 "trial$i.log")"
      wait "$job" || true
      continue
    fi
    date +%s.%N >stamp
    kill -STOP "$victim"
    at="a random moment (after $(grep -c '^step ' "trial$i.log") step lines)"
  fi
  rc=0
  wait "$job" || rc=$?
  ended=$(date +%s.%N)
  left=$(leftovers)
  [[ -f stamp ]] || { fail "trial $i: rank $rank never reached $at (status $rc): $(tail -3 "trial$i.log")"; continue; }
  took=$("$PY" -c "print('%.1f' % ($ended - $(cat stamp)))")
  echo "trial $i: rank $rank stopped at $at; the job ended $took s later, status $rc"
  { grep "^error: rank" "trial$i.log" || true; } | head -3 | sed 's/^/  /'
  "$PY" -c "import sys; sys.exit(0 if $took <= $LIMIT + $SLACK else 1)" ||
    fail "trial $i: the job took $took s to end (the limit is $LIMIT s + $SLACK)"
  ((rc != 0)) || fail "trial $i: the job exited 0"
  if [[ -n $left ]]; then
    fail "trial $i: processes left behind: $(echo $left)"
    for pid in $left; do kill -9 "$pid" 2>/dev/null || true; done
  fi
  # The errors name the phase (the training step the log prints), the operation and the ranks.
  "$PY" - "trial$i.log" "$moment" "$rank" "$steps" "$EVERY" <<'PY' || fail "trial $i: the error does not say where: $(grep error "trial$i.log" | head -3)"
import re, sys
log, moment, rank, steps, every = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
text = open(log).read()
logged = [int(s) for s in re.findall(r'^step (\d+)  loss', text, re.M)]
last = logged[-1] if logged else -1
form = re.compile(r'^error: rank (\d+), (start-up|step (\d+)|the checkpoint after step (\d+)|shutdown after step (\d+))'
                  r'(, op \d+ \([a-z_]+[^)]*\))?: (.+): waited \d+ s for (rank|ranks) [0-9][0-9, and]*'
                  r'(, which has died or hangs|; one of them has died or hangs) \(--comm-timeout \d+\)$')
errors = [l for l in text.splitlines() if l.startswith('error: rank')]
matched = [form.match(l) for l in errors]
if not errors or not all(matched):
    print('  not of the form: %s' % [l for l, m in zip(errors, matched) if not m] if errors else '  no error')
    sys.exit(1)
# The stopped rank may speak too, when the launcher's SIGCONT wakes it to end it.
if all(int(m.group(1)) == rank for m in matched):
    sys.exit('  only the stopped rank %d reported' % rank)
for m in matched:
    phase, step, ckpt, down = m.group(2), m.group(3), m.group(4), m.group(5)
    if moment == 'init' and phase != 'start-up':
        sys.exit('  not at start-up: ' + phase)
    if moment == 'finalize' and down != str(steps - 1):
        sys.exit('  not at shutdown after the last step: ' + phase)
    if moment == 'checkpoint' and (ckpt is None or (int(ckpt) + 1) % every):
        sys.exit('  not at a checkpoint: ' + phase)
    # A training step, not an op index: the step the log was at, or the next.
    n = step or ckpt
    if n is not None and not last <= int(n) <= last + 2:
        sys.exit('  step %s, but the log was at step %d' % (n, last))
PY
  longest=$("$PY" -c "print(max($longest, $took))")
done

echo
if ((failures)); then
  echo "hung-rank: $failures checks failed over $TRIALS trials ($SECONDS s)"
  exit 1
fi
echo "hung-rank: all $TRIALS trials ended within $longest s of the stop (--comm-timeout $LIMIT) ($SECONDS s)"
