#!/usr/bin/env bash
# Plans of several ranks compiled and run under mpirun, one process per rank
# (docs/cpu-backend.md, "Several ranks"):
#
#   equal      each layout trains tiny-gpt as the one-rank executable does: every step's
#              loss within 1e-5 relative (f32), for dp (ZeRO 0-3), tp, tp + sp, pp with
#              each schedule, dp x tp x pp on 8 ranks, and recompute
#   arena      each rank allocates its stage's line of the ledger
#   trace      --trace on 8 ranks: one file with every rank's kernels, collectives, sends,
#              receives and waits
#   launch     without mpirun the executable says how to start it; a world of another size
#              is an error naming the mesh and the size; planc run --target=cpu runs a mesh
#   resume     a checkpoint of every rank resumes with the uninterrupted run's losses
#   reshard    a checkpoint written under dp 2 x ZeRO 3 loads under one rank and under
#              pp 2, and training continues as it would have
#   convert    the sharded checkpoint as one file of whole tensors and back, which resumes
#   disk       a checkpoint folder that cannot be made ends the job on every rank with the
#              reason, and no step folder is left looking complete
#   kill       a rank killed with kill -9 mid-run ends the job, naming the rank, within 60 s
#
#   PLANC=build/bin/planc tests/e2e/mpi.sh
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PLANC=${PLANC:-$ROOT/build/bin/planc}
PY=/usr/bin/python3
# OpenMPI refuses root unless told; containers often forbid the kernel's
# cross-memory attach, so the shared-memory transport copies instead.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
MPIRUN=(mpirun --oversubscribe)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
failures=0
fail() {
  echo "mpi: FAIL: $*"
  failures=$((failures + 1))
}

GPT=$ROOT/examples/tiny-gpt.plan
# Every layout below trains the same model on the same batches of 8 rows.
BASE=(--set train.global_batch=8 --set train.micro_batch=1)

"$PLANC" build "$GPT" "${BASE[@]}" -o one 2>one.build.log || { cat one.build.log; exit 1; }
./one --steps 10 --metrics one.jsonl >one.log || { cat one.log; exit 1; }
"$PLANC" build "$GPT" "${BASE[@]}" --dim layers=4 -o one4 2>one4.build.log || { cat one4.build.log; exit 1; }
./one4 --steps 10 --metrics one4.jsonl >one4.log || { cat one4.log; exit 1; }
"$PLANC" build "$GPT" --set train.global_batch=9 --set train.micro_batch=3 -o one9 2>one9.build.log ||
  { cat one9.build.log; exit 1; }
./one9 --steps 10 --metrics one9.jsonl >one9.log || { cat one9.log; exit 1; }

# layout NAME RANKS [--set ...]: build, run under mpirun, compare with the one-rank run
# (REF=one4 for the model of 4 layers, REF=one9 for the batch of 9 rows).
layout() {
  local name=$1 ranks=$2 ref=${REF:-one}
  shift 2
  "$PLANC" build "$GPT" "${BASE[@]}" --set cluster.gpus_per_node="$ranks" "$@" -o "$name" 2>"$name.build.log" ||
    { cat "$name.build.log"; fail "$name: build"; return; }
  timeout 300 "${MPIRUN[@]}" -np "$ranks" ./"$name" --steps 10 --metrics "$name.jsonl" >"$name.log" 2>&1 ||
    { tail -20 "$name.log"; fail "$name: run"; return; }
  "$PY" - "$name" "$ref" <<'PY' || fail "$name: losses differ from the one-rank run's"
import json, sys
name, ref = sys.argv[1], sys.argv[2]
one = [json.loads(l)['loss'] for l in open(ref + '.jsonl')]
many = [json.loads(l)['loss'] for l in open(name + '.jsonl')]
worst = max(abs(a - b) / abs(b) for a, b in zip(many, one))
print('%-16s %d steps, losses %.4f -> %.4f, largest relative difference from one rank %.2e'
      % (name, len(many), many[0], many[-1], worst))
sys.exit(0 if len(many) == len(one) and worst <= 1e-5 else 1)
PY
  # Rank 0 allocates its stage's arena: the ledger's figure.
  grep -q "^arena of rank 0 (.*): .* (\([0-9]*\) bytes); the ledger's figure: .* (\1 bytes)$" "$name.log" ||
    fail "$name: arena: $(grep '^arena' "$name.log")"
}

echo "=== equal"
layout dp2 2 --set parallel.mesh.dp=2
layout dp2-zero1 2 --set parallel.mesh.dp=2 --set parallel.zero=1
layout dp2-zero2 2 --set parallel.mesh.dp=2 --set parallel.zero=2
layout dp2-zero3 2 --set parallel.mesh.dp=2 --set parallel.zero=3
REF=one9 layout dp3 3 --set parallel.mesh.dp=3 --set train.global_batch=9 --set train.micro_batch=3
layout tp2 2 --set parallel.mesh.tp=2
layout tp2-sp 2 --set parallel.mesh.tp=2 --set parallel.sequence_parallel=true
layout pp2-1f1b 2 --set parallel.mesh.pp=2 --set 'parallel.pipeline=1f1b(micro_batches = 8)'
layout pp2-gpipe 2 --set parallel.mesh.pp=2 --set 'parallel.pipeline=gpipe(micro_batches = 8)'
layout pp2-zb 2 --set parallel.mesh.pp=2 --set 'parallel.pipeline=zero_bubble(micro_batches = 8)'
REF=one4 layout pp2-interleaved 2 --set parallel.mesh.pp=2 --set 'parallel.pipeline=interleaved(2, micro_batches = 8)' \
  --dim layers=4
layout dp2-tp2-pp2 8 --set parallel.mesh.dp=2 --set parallel.mesh.tp=2 --set parallel.mesh.pp=2 \
  --set 'parallel.pipeline=1f1b(micro_batches = 4)' --set parallel.zero=1
layout dp2-selective 2 --set parallel.mesh.dp=2 --set parallel.recompute=selective
layout tp2-full 2 --set parallel.mesh.tp=2 --set parallel.recompute=full

echo "=== trace"
timeout 300 "${MPIRUN[@]}" -np 8 ./dp2-tp2-pp2 --steps 3 --trace run.json >trace.log 2>&1 || fail "trace: $(tail -3 trace.log)"
grep -q "^trace: [0-9]* events of 8 ranks written to run.json" trace.log || fail "trace: $(tail -2 trace.log)"
"$PY" - <<'PY' || fail "trace: a rank or an event kind is missing"
import json
events = [e for e in json.load(open('run.json'))['traceEvents'] if e['ph'] == 'X']
ranks = sorted({e['pid'] for e in events})
kinds = {e.get('cat') for e in events}
print('trace: %d events, ranks %s, kinds %s' % (len(events), ranks, sorted(kinds)))
assert ranks == list(range(8)), ranks
for rank in ranks:
    mine = {e.get('cat') for e in events if e['pid'] == rank}
    assert {'gemm', 'collective', 'wait'} <= mine and ({'send', 'recv'} & mine), (rank, mine)
assert {'send', 'recv', 'collective', 'wait', 'gemm', 'elementwise', 'reduction', 'layout'} <= kinds, kinds
assert all(e['dur'] >= 0 and e['ts'] >= 0 for e in events)
PY

echo "=== launch"
expect() { # STATUS TEXT CMD...: the command exits with STATUS and prints TEXT
  local want=$1 text=$2 rc=0
  shift 2
  "$@" >expect.log 2>&1 || rc=$?
  [[ $rc == "$want" ]] || fail "'$*' exited $rc, not $want: $(tail -3 expect.log)"
  grep -qF -- "$text" expect.log || fail "'$*' does not say '$text': $(tail -3 expect.log)"
}
expect 1 "runs on a mesh of 2 ranks (dp=2): start it with \`mpirun -np 2" ./dp2 --steps 1
expect 1 "runs on a mesh of 2 ranks (dp=2), but it was started on 3: use mpirun -np 2" \
  "${MPIRUN[@]}" -np 3 ./dp2 --steps 1
expect 1 "runs on a mesh of 2 ranks (dp=2), but it was started on 1" "${MPIRUN[@]}" -np 1 ./dp2 --steps 1
"$PLANC" run --target=cpu "$GPT" "${BASE[@]}" --set parallel.mesh.dp=2 --set cluster.gpus_per_node=2 --steps 2 \
  >run.log 2>&1 || fail "planc run --target=cpu on 2 ranks: $(tail -3 run.log)"
grep -q "^step 1  loss" run.log || fail "planc run --target=cpu on 2 ranks: no step lines"

echo "=== resume"
"${MPIRUN[@]}" -np 2 ./dp2-zero3 --steps 10 --checkpoint-every 4 --checkpoint-dir ck --metrics full.jsonl \
  >ck.log 2>&1 || fail "resume: the run that checkpoints: $(tail -3 ck.log)"
[[ -f ck/step-00000004/index.json && -f ck/step-00000004/rank-0.safetensors && -f ck/step-00000004/rank-1.safetensors ]] ||
  fail "resume: ck/step-00000004 lacks a rank's file or the index: $(ls ck/step-00000004)"
"${MPIRUN[@]}" -np 2 ./dp2-zero3 --steps 10 --resume ck/step-00000004 --metrics resumed.jsonl >resumed.log 2>&1 ||
  fail "resume: $(tail -3 resumed.log)"
grep -q "^resumed from ck/step-00000004: 4 steps done" resumed.log || fail "resume: $(head -1 resumed.log)"

# continues REFERENCE RESUMED TOL: the resumed run's losses are the reference's for its steps.
continues() {
  "$PY" - "$@" <<'PY'
import json, sys
ref, resumed, tol = sys.argv[1], sys.argv[2], float(sys.argv[3])
full = {s['step']: s['loss'] for s in map(json.loads, open(ref))}
got = [json.loads(l) for l in open(resumed)]
worst = max(abs(s['loss'] - full[s['step']]) / abs(full[s['step']]) for s in got)
print('%-26s steps %d..%d, largest relative difference %.2e' % (resumed, got[0]['step'], got[-1]['step'], worst))
sys.exit(0 if got and got[0]['step'] == 4 and worst <= tol else 1)
PY
}
continues full.jsonl resumed.jsonl 0 || fail "resume: the losses are not the uninterrupted run's, bit for bit"

echo "=== reshard"
./one --steps 10 --resume ck/step-00000004 --metrics one-from-zero3.jsonl >reshard1.log 2>&1 ||
  fail "reshard: dp 2 x ZeRO 3 -> one rank: $(tail -3 reshard1.log)"
continues one.jsonl one-from-zero3.jsonl 1e-5 || fail "reshard: dp 2 x ZeRO 3 -> one rank does not continue the run"
"${MPIRUN[@]}" -np 2 ./pp2-1f1b --steps 10 --resume ck/step-00000004 --metrics pp-from-zero3.jsonl >reshard2.log 2>&1 ||
  fail "reshard: dp 2 x ZeRO 3 -> pp 2: $(tail -3 reshard2.log)"
continues one.jsonl pp-from-zero3.jsonl 1e-5 || fail "reshard: dp 2 x ZeRO 3 -> pp 2 does not continue the run"
# And back: the one-rank run's checkpoint under tp 2.
./one --steps 4 --checkpoint-every 4 --checkpoint-dir ck1 >/dev/null 2>&1 || fail "reshard: one-rank checkpoint"
"${MPIRUN[@]}" -np 2 ./tp2 --steps 10 --resume ck1 --metrics tp-from-one.jsonl >reshard3.log 2>&1 ||
  fail "reshard: one rank -> tp 2: $(tail -3 reshard3.log)"
continues one.jsonl tp-from-one.jsonl 1e-5 || fail "reshard: one rank -> tp 2 does not continue the run"

echo "=== convert"
# The sharded checkpoint as one file of whole tensors, and back: the one-rank run resumes from it.
"$PLANC" convert ck/step-00000004 -o whole.safetensors >convert.log 2>&1 || fail "convert: $(cat convert.log)"
"$PY" - <<'PY' || fail "convert: the file does not hold the whole tensors"
import json, struct
raw = open('whole.safetensors', 'rb').read()
n = struct.unpack('<Q', raw[:8])[0]
header = json.loads(raw[8:8 + n])
meta = header.pop('__metadata__')
assert meta['plan'] == 'tiny_gpt' and meta['step'] == '4', meta
assert header['wte.weight']['shape'] == [256, 64], header['wte.weight']
assert header['wte.weight.adam_m']['shape'] == [256, 64]
print('convert: %d whole tensors, step %s' % (len(header), meta['step']))
PY
"$PLANC" convert whole.safetensors -o back >convert-back.log 2>&1 || fail "convert back: $(cat convert-back.log)"
./one --steps 10 --resume back --metrics one-from-file.jsonl >back.log 2>&1 || fail "convert back: $(tail -3 back.log)"
continues one.jsonl one-from-file.jsonl 1e-5 || fail "convert back: the one-rank run does not continue"
expect 1 "already holds a checkpoint" "$PLANC" convert whole.safetensors -o back
expect 1 "is not a checkpoint written by planc convert" "$PLANC" convert ck/step-00000004/rank-0.safetensors -o x

echo "=== disk"
touch not-a-folder
expect 1 "cannot create the checkpoint folder 'not-a-folder/ck/step-00000002'" \
  "${MPIRUN[@]}" -np 2 ./dp2 --steps 4 --checkpoint-every 2 --checkpoint-dir not-a-folder/ck

echo "=== kill"
# A long run; once it trains, one rank dies.
"${MPIRUN[@]}" -np 2 ./dp2 --steps 1000000 >kill.log 2>&1 &
job=$!
for _ in $(seq 100); do
  grep -q "^step 3 " kill.log && break
  sleep 0.2
done
victim=$(pgrep -f "^./dp2 --steps 1000000" | tail -1 || true)
if [[ -z $victim ]]; then
  fail "kill: the ranks did not start: $(tail -3 kill.log)"
  kill "$job" 2>/dev/null || true
else
  start=$(date +%s)
  kill -9 "$victim"
  rc=0
  timeout 90 tail --pid="$job" -f /dev/null || true
  wait "$job" || rc=$?
  took=$(($(date +%s) - start))
  echo "the job ended $took s after kill -9 of process $victim, status $rc"
  ((rc != 0)) || fail "kill: the job exited 0"
  ((took <= 60)) || fail "kill: the job took $took s to end"
  grep -qE "rank [0-9]+ .*(exited on signal 9|Killed)|killed|signal 9" kill.log || fail "kill: no rank named: $(tail -5 kill.log)"
  pgrep -f "^./dp2 --steps 1000000" >/dev/null && fail "kill: a rank is still running"
fi

echo
if ((failures)); then
  echo "mpi: $failures failed"
  exit 1
fi
echo "mpi: all passed"
