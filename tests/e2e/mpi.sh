#!/usr/bin/env bash
# Plans of several ranks compiled and run under mpirun, one process per rank
# (docs/ranks.md):
#
#   equal      each layout trains tiny-gpt as the one-rank executable does: every step's
#              loss within 1e-5 relative (f32), for dp (ZeRO 0-3, 2 and 3 ranks), tp (2
#              and 4), tp + sp, dp x tp, pp with each schedule, dp x tp x pp on 8 ranks,
#              recompute selective and full, LoRA; f16 with loss scaling skips the same
#              steps within f16's rounding; a model of other shapes (untied head, dropout)
#              on dp x tp x pp
#   arena      each rank allocates its stage's line of the ledger
#   trace      --trace on 8 ranks: one file with every rank's kernels, collectives, sends,
#              receives and waits, drawn by planc emit --emit=schedule-svg --trace
#   launch     without mpirun the executable says how to start it; a world of another size
#              is an error naming the mesh and the size; planc run --target=cpu runs a mesh
#   resume     a checkpoint of every rank resumes with the uninterrupted run's losses
#   reshard    a checkpoint loads under another plan of the model and training continues
#              as it would have: dp 2 x ZeRO 3 -> one rank (ZeRO 0) and -> pp 2, one rank
#              -> tp 2, dp 2 x tp 2 -> pp 2, tp 4 -> dp 2 x tp 2, interleaved -> 1f1b
#   convert    the sharded checkpoint as one file of whole tensors and back, which resumes
#   disk       a checkpoint folder that cannot be made, or a disk that fills up mid-write,
#              ends the job on every rank with the reason; the earlier checkpoint is intact,
#              no step folder is left looking complete, and the run resumes
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
section() { echo "=== $1 (at $SECONDS s)"; }
fail() {
  echo "mpi: FAIL: $*"
  failures=$((failures + 1))
}

GPT=$ROOT/examples/tiny-gpt.plan
UNTIED=$ROOT/tests/lit/verify/Inputs/untied-gpt.plan
# Every layout below trains the same model on the same batches of 8 rows.
BASE=(--set train.global_batch=8 --set train.micro_batch=1)
# -O1 compiles in about half the time of -O3; the numbers checked here are
# the same (bench/ measures speed).
OPT=(-O1)

# reference NAME [PLAN [--set ...]]: the one-rank executable and its 10 steps,
# what the layouts are compared with.
reference() {
  local name=$1 plan=${2:-$GPT}
  shift $(($# < 2 ? $# : 2))
  "$PLANC" build "${OPT[@]}" "$plan" "${BASE[@]}" "$@" -o "$name" 2>"$name.build.log" ||
    { cat "$name.build.log"; exit 1; }
  ./"$name" --steps 10 --metrics "$name.jsonl" >"$name.log" || { cat "$name.log"; exit 1; }
}
reference one
reference one4 "$GPT" --dim layers=4
reference one9 "$GPT" --set train.global_batch=9 --set train.micro_batch=3
reference one-lora "$GPT" --set 'train.adapters=lora(rank = 4)'
# A loss scale that overflows f16 at first: the first steps are skipped, halving the scale,
# the rest train. Overflow is decided by the last bits of f16 sums, which differ between
# layouts, so the scales tried stay away from the edge (the first six overflow, the seventh
# trains on every layout) and the scale does not grow back within the 10 steps.
F16=(--set 'train.precision=f16(loss_scale = dynamic(scale = 5e6, growth_interval = 1000))')
reference one-f16 "$GPT" "${F16[@]}"
"$PY" -c 'import json, sys
skipped = [s["step"] for s in map(json.loads, open("one-f16.jsonl")) if s.get("skipped")]
sys.exit(0 if skipped and skipped == list(range(len(skipped))) and len(skipped) <= 7 else 1)' ||
  fail "one-f16: not a few skipped steps, then training"
reference untied "$UNTIED" --set parallel.mesh.pp=1 --set cluster.gpus_per_node=1 \
  --set 'parallel.pipeline=1f1b(micro_batches = 8)'

# layout NAME RANKS [--set ...]: build, run under mpirun, compare with the one-rank run
# (REF: the reference, default one; PLAN: the model, default tiny-gpt; TOL: the
# largest relative difference of a step's loss, default 1e-5).
layout() {
  local name=$1 ranks=$2 ref=${REF:-one} plan=${PLAN:-$GPT} tol=${TOL:-1e-5} t0=$SECONDS
  shift 2
  "$PLANC" build "${OPT[@]}" "$plan" "${BASE[@]}" --set cluster.gpus_per_node="$ranks" "$@" -o "$name" \
    2>"$name.build.log" || { cat "$name.build.log"; fail "$name: build"; return; }
  timeout 300 "${MPIRUN[@]}" -np "$ranks" ./"$name" --steps 10 --metrics "$name.jsonl" >"$name.log" 2>&1 ||
    { tail -20 "$name.log"; fail "$name: run"; return; }
  "$PY" - "$name" "$ref" "$tol" "$((SECONDS - t0))" <<'PY' || fail "$name: losses differ from the one-rank run's"
import json, sys
name, ref, tol, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
one = [json.loads(l) for l in open(ref + '.jsonl')]
many = [json.loads(l) for l in open(name + '.jsonl')]
worst = max(abs(a['loss'] - b['loss']) / abs(b['loss']) for a, b in zip(many, one))
# Loss scaling skips the same steps on every layout.
skips = [s['step'] for s in many if s.get('skipped')]
same_skips = skips == [s['step'] for s in one if s.get('skipped')]
print('%-16s %d steps, losses %.4f -> %.4f, largest relative difference from one rank %.2e%s (%s s)'
      % (name, len(many), many[0]['loss'], many[-1]['loss'], worst,
         ', skipped steps %s' % skips if skips else '', seconds))
sys.exit(0 if len(many) == len(one) and worst <= tol and same_skips else 1)
PY
  # Rank 0 allocates its stage's arena: the ledger's figure.
  grep -q "^arena of rank 0 (.*): .* (\([0-9]*\) bytes); the ledger's figure: .* (\1 bytes)$" "$name.log" ||
    fail "$name: arena: $(grep '^arena' "$name.log")"
}

section equal
layout dp2 2 --set parallel.mesh.dp=2
layout dp2-zero1 2 --set parallel.mesh.dp=2 --set parallel.zero=1
layout dp2-zero2 2 --set parallel.mesh.dp=2 --set parallel.zero=2
layout dp2-zero3 2 --set parallel.mesh.dp=2 --set parallel.zero=3
REF=one9 layout dp3 3 --set parallel.mesh.dp=3 --set train.global_batch=9 --set train.micro_batch=3
layout tp2 2 --set parallel.mesh.tp=2
layout tp4 4 --set parallel.mesh.tp=4
layout tp2-sp 2 --set parallel.mesh.tp=2 --set parallel.sequence_parallel=true
layout dp2-tp2 4 --set parallel.mesh.dp=2 --set parallel.mesh.tp=2
layout pp2-1f1b 2 --set parallel.mesh.pp=2 --set 'parallel.pipeline=1f1b(micro_batches = 8)'
layout pp2-gpipe 2 --set parallel.mesh.pp=2 --set 'parallel.pipeline=gpipe(micro_batches = 8)'
layout pp2-zb 2 --set parallel.mesh.pp=2 --set 'parallel.pipeline=zero_bubble(micro_batches = 8)'
REF=one4 layout pp2-interleaved 2 --set parallel.mesh.pp=2 --set 'parallel.pipeline=interleaved(2, micro_batches = 8)' \
  --dim layers=4
REF=one4 layout pp2-1f1b-4 2 --set parallel.mesh.pp=2 --set 'parallel.pipeline=1f1b(micro_batches = 8)' --dim layers=4
layout dp2-tp2-pp2 8 --set parallel.mesh.dp=2 --set parallel.mesh.tp=2 --set parallel.mesh.pp=2 \
  --set 'parallel.pipeline=1f1b(micro_batches = 4)' --set parallel.zero=1
layout dp2-selective 2 --set parallel.mesh.dp=2 --set parallel.recompute=selective
layout tp2-full 2 --set parallel.mesh.tp=2 --set parallel.recompute=full
REF=one-lora layout dp2-tp2-lora 4 --set 'train.adapters=lora(rank = 4)' --set parallel.mesh.dp=2 --set parallel.mesh.tp=2
# f16 sums in another order on two ranks: its rounding, not f32's 1e-5.
REF=one-f16 TOL=1e-3 layout dp2-f16 2 "${F16[@]}" --set parallel.mesh.dp=2
# Another model: an untied head, dropout on the embedding (the same mask on
# every layout), 4 layers over two stages of a mesh of 8.
REF=untied PLAN=$UNTIED layout untied-dp2-tp2-pp2 8 --set parallel.mesh.dp=2 --set parallel.mesh.tp=2 \
  --set parallel.mesh.pp=2 --set 'parallel.pipeline=1f1b(micro_batches = 4)' --set parallel.zero=2

section trace
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
# The measured step under the planned schedule: a row per rank, every section drawn.
"$PLANC" emit --emit=schedule-svg "$GPT" "${BASE[@]}" --set cluster.gpus_per_node=8 --set parallel.mesh.dp=2 \
  --set parallel.mesh.tp=2 --set parallel.mesh.pp=2 --set 'parallel.pipeline=1f1b(micro_batches = 4)' \
  --set parallel.zero=1 --trace run.json >run.svg 2>svg.log || fail "schedule-svg --trace: $(tail -2 svg.log)"
grep -q "measured: step 3 of run.json (the last of 3 traced), 8 ranks" run.svg || fail "schedule-svg --trace: no title"
[[ $(grep -c '<g class="measured-rank"' run.svg) == 8 ]] || fail "schedule-svg --trace: not a row per rank"
for kind in forward backward optimizer wait communication; do
  grep -q "<rect class=\"$kind\" x=.*<title>" run.svg || fail "schedule-svg --trace: no $kind box"
done

section launch
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

section resume
"${MPIRUN[@]}" -np 2 ./dp2-zero3 --steps 10 --checkpoint-every 4 --checkpoint-dir ck --metrics full.jsonl \
  >ck.log 2>&1 || fail "resume: the run that checkpoints: $(tail -3 ck.log)"
[[ -f ck/step-00000004/index.json && -f ck/step-00000004/rank-0.safetensors && -f ck/step-00000004/rank-1.safetensors ]] ||
  fail "resume: ck/step-00000004 lacks a rank's file or the index: $(ls ck/step-00000004)"
"${MPIRUN[@]}" -np 2 ./dp2-zero3 --steps 10 --resume ck/step-00000004 --metrics resumed.jsonl >resumed.log 2>&1 ||
  fail "resume: $(tail -3 resumed.log)"
grep -q "^resumed from ck/step-00000004: 4 steps done" resumed.log || fail "resume: $(head -1 resumed.log)"

# continues REFERENCE RESUMED TOL [FIRST]: the resumed run starts at step FIRST (4) and its
# losses are the reference's for its steps.
continues() {
  "$PY" - "$@" <<'PY'
import json, sys
ref, resumed, tol = sys.argv[1], sys.argv[2], float(sys.argv[3])
first = int(sys.argv[4]) if len(sys.argv) > 4 else 4
full = {s['step']: s['loss'] for s in map(json.loads, open(ref))}
got = [json.loads(l) for l in open(resumed)]
worst = max(abs(s['loss'] - full[s['step']]) / abs(full[s['step']]) for s in got)
print('%-26s steps %d..%d, largest relative difference %.2e' % (resumed, got[0]['step'], got[-1]['step'], worst))
sys.exit(0 if got and got[0]['step'] == first and worst <= tol else 1)
PY
}
continues full.jsonl resumed.jsonl 0 || fail "resume: the losses are not the uninterrupted run's, bit for bit"

section reshard
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
# reshard FROM TO RANKS-FROM RANKS-TO REFERENCE: FROM's checkpoint after 4 steps, resumed under TO.
reshard() {
  local from=$1 to=$2 nfrom=$3 nto=$4 ref=$5
  "${MPIRUN[@]}" -np "$nfrom" ./"$from" --steps 4 --checkpoint-every 4 --checkpoint-dir "ck-$from" \
    >"ck-$from.log" 2>&1 || { fail "reshard: $from checkpoint: $(tail -3 "ck-$from.log")"; return; }
  "${MPIRUN[@]}" -np "$nto" ./"$to" --steps 10 --resume "ck-$from" --metrics "$to-from-$from.jsonl" \
    >"$to-from-$from.log" 2>&1 || { fail "reshard: $from -> $to: $(tail -3 "$to-from-$from.log")"; return; }
  continues "$ref.jsonl" "$to-from-$from.jsonl" 1e-5 || fail "reshard: $from -> $to does not continue the run"
}
reshard dp2-tp2 pp2-1f1b 4 2 one
reshard tp4 dp2-tp2 4 4 one
reshard pp2-interleaved pp2-1f1b-4 2 2 one4

section convert
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

section disk
touch not-a-folder
# (found before training, on every rank)
expect 1 "cannot create the checkpoint folder 'not-a-folder/ck': Not a directory (found before training" \
  "${MPIRUN[@]}" -np 2 ./dp2 --steps 4 --checkpoint-every 2 --checkpoint-dir not-a-folder/ck

# A disk that fills up while the step-4 checkpoint is written (tests/e2e/fail-writes.c,
# preloaded into the ranks): every rank says so, the step-2 checkpoint is untouched, the
# half-written step is not taken for a checkpoint, and the run resumes from step 2.
cc -shared -fPIC -O1 -o libfail-writes.so "$ROOT/tests/e2e/fail-writes.c" -ldl ||
  fail "disk: cannot build the full-disk shim"
expect 1 ".safetensors': No space left on device (the earlier checkpoints in 'full' are untouched)" \
  "${MPIRUN[@]}" -np 2 -x LD_PRELOAD="$PWD/libfail-writes.so" -x PLANC_TEST_FAIL_PATH=step-00000004 \
  ./dp2 --steps 6 --checkpoint-every 2 --checkpoint-dir full
# A rank names its file (the first to fail ends the job, perhaps before the other says so).
grep -qE "^error: rank [01]: step 3: cannot write 'full/step-00000004/rank-[01].safetensors'" expect.log ||
  fail "disk: no rank names its file: $(grep error expect.log)"
[[ -f full/step-00000002/index.json && ! -e full/step-00000004/index.json ]] ||
  fail "disk: full/ holds $(find full -type f | sort | tr '\n' ' ')"
"${MPIRUN[@]}" -np 2 ./dp2 --steps 10 --resume full --metrics dp2-after-full.jsonl >after-full.log 2>&1 ||
  fail "disk: resuming after the full disk: $(tail -3 after-full.log)"
grep -q "^resumed from full/step-00000002: 2 steps done" after-full.log || fail "disk: $(head -3 after-full.log)"
continues dp2.jsonl dp2-after-full.jsonl 0 2 || fail "disk: the run resumed after the full disk does not continue"

section kill
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
  echo "mpi: $failures failed ($SECONDS s)"
  exit 1
fi
echo "mpi: all passed ($SECONDS s)"
