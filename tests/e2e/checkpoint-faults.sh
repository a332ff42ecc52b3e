#!/usr/bin/env bash
# Checkpoints under faults (docs/checkpoints.md, "What is verified" and "Which is newest,
# and what retention keeps"): each case ends with a clear error and status 1 (2 for bad
# options), or does exactly what the docs say -- never a crash, never a silent change.
#
#   index      a negative or huge block shape, a negative step, an unknown format: an
#              error naming the index, on --resume and on planc convert (not an abort)
#   metadata   a whole rank file of step 2 inside step 3, and under dp 2 rank 1's file of
#              another step: refused, naming the file and the step
#   presence   a 3-layer checkpoint into the 2-layer plan, resumed or as planc convert's
#              file through --init-from: an error, or with --drop-unused-tensors a load
#              that names what it dropped
#   options    --init-from with --resume is an error
#   newest     step-9 and step-abc never beat step-00000005; a warning names them
#   retention  a rollback into the same folder, and a fresh run into another run's folder,
#              stop before training with the folder untouched; keep never removes the
#              checkpoint resumed from; an unwritable folder is found before step 0
#   convert    a flipped data byte in a checkpoint, or in planc convert's file (both ways
#              and through --init-from): an error naming the file and the tensor
#   fuzz       random byte flips in data, headers and index, random edits of index
#              fields: a clear error or bit-identical losses (CHECKPOINT_FUZZ_TRIALS, 24)
#
#   PLANC=build/bin/planc tests/e2e/checkpoint-faults.sh
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PLANC=${PLANC:-$ROOT/build/bin/planc}
PY=/usr/bin/python3
TRIALS=${CHECKPOINT_FUZZ_TRIALS:-24}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
MPIRUN=(mpirun --oversubscribe)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
failures=0
section() { echo "=== $1 (at $SECONDS s)"; }
fail() {
  echo "checkpoint-faults: FAIL: $*"
  failures=$((failures + 1))
}
# expect STATUS TEXT CMD...: the command exits with STATUS and prints TEXT
expect() {
  local want=$1 text=$2 rc=0
  shift 2
  "$@" >expect.log 2>&1 || rc=$?
  [[ $rc == "$want" ]] || fail "'$*' exited $rc, not $want: $(tail -3 expect.log)"
  grep -qF -- "$text" expect.log || fail "'$*' does not say '$text': $(tail -3 expect.log)"
}
# edit FILE PYTHON: applies the Python statement to the JSON `j` of FILE.
edit() {
  "$PY" - "$1" "$2" <<'PY'
import json, sys
path, statement = sys.argv[1], sys.argv[2]
j = json.load(open(path))
exec(statement)
json.dump(j, open(path, 'w'), indent=2)
PY
}
listing() { (cd "$1" && ls -d step-* | tr '\n' ' '); }

GPT=$ROOT/examples/tiny-gpt.plan
"$PLANC" build -O1 "$GPT" -o gpt 2>build.log || { cat build.log; exit 1; }
"$PLANC" build -O1 "$GPT" --dim layers=3 -o gpt3 2>>build.log || { cat build.log; exit 1; }
# The reference: 6 steps, a checkpoint every 2 (steps 2, 4 and 6).
./gpt --steps 6 --checkpoint-every 2 --checkpoint-dir ck --metrics full.jsonl >full.log 2>&1 ||
  { cat full.log; exit 1; }

section index
cp -r ck/step-00000004 neg
edit neg/index.json 'j["tensors"]["wte.weight"]["files"][0]["block"][0] = -256'
expect 1 "is not within its shape" ./gpt --resume neg --steps 6
expect 1 "is not within its shape" "$PLANC" convert neg -o neg.safetensors
cp -r ck/step-00000004 huge
edit huge/index.json 'j["tensors"]["wte.weight"]["shape"] = [2**40, 2**40]'
expect 1 "whose size overflows" ./gpt --resume huge --steps 6
expect 1 "whose size overflows" "$PLANC" convert huge -o huge.safetensors
cp -r ck/step-00000004 negstep
edit negstep/index.json 'j["step"] = -3'
expect 1 "its step -3 is not a number of steps done" ./gpt --resume negstep --steps 6
cp -r ck/step-00000004 future
edit future/index.json 'j["format"] = "planc-checkpoint-9"'
expect 1 "its format 'planc-checkpoint-9' is not one this build reads" ./gpt --resume future --steps 6
cp -r ck/step-00000004 edited
edit edited/index.json 'j["seed"] = 7'
expect 1 "edited/index.json' does not match its checksum" ./gpt --resume edited --steps 6

section metadata
cp -r ck/step-00000004 mixed
cp ck/step-00000002/rank-0.safetensors mixed/
expect 1 "mixed/rank-0.safetensors': its metadata says step 2, but 'mixed/index.json' says 4" \
  ./gpt --resume mixed --steps 6
"$PLANC" build -O1 "$GPT" --set train.global_batch=8 --set train.micro_batch=1 --set parallel.mesh.dp=2 \
  --set cluster.gpus_per_node=2 -o dp2 2>>build.log || { cat build.log; exit 1; }
timeout 300 "${MPIRUN[@]}" -np 2 ./dp2 --steps 4 --checkpoint-every 1 --checkpoint-dir dpck >dp.log 2>&1 ||
  fail "metadata: the dp 2 run: $(tail -3 dp.log)"
cp dpck/step-00000003/rank-1.safetensors dpck/step-00000004/
expect 1 "rank-1.safetensors': its metadata says step 3, but" \
  timeout 300 "${MPIRUN[@]}" -np 2 ./dp2 --steps 6 --resume dpck/step-00000004

section presence
./gpt3 --steps 2 --checkpoint-every 2 --checkpoint-dir ck3 >ck3.log 2>&1 || fail "presence: $(tail -3 ck3.log)"
expect 1 "that plan 'tiny_gpt' does not have ('blocks.2." ./gpt --resume ck3 --steps 4
grep -qF -- "--drop-unused-tensors resumes without them" expect.log || fail "presence: no way out: $(cat expect.log)"
expect 0 "resumed from ck3/step-00000002: 2 steps done (" ./gpt --resume ck3 --steps 3 --drop-unused-tensors
grep -q "tensors the plan lacks dropped: 'blocks.2." expect.log || fail "presence: not named: $(head -3 expect.log)"
# The other way: the 2-layer checkpoint lacks the third layer.
expect 1 "has no tensor 'blocks.2." ./gpt3 --resume ck --steps 6
# --init-from of the 3-layer checkpoint as one file (planc convert's, the plan's own names):
# the third layer's 12 parameters and their 24 Adam states are not passed over silently either.
"$PLANC" convert ck3/step-00000002 -o whole3.safetensors >convert3.log 2>&1 || fail "presence: $(cat convert3.log)"
expect 1 "--init-from: 'whole3.safetensors' holds 36 tensors that plan 'tiny_gpt' does not have ('blocks.2." \
  ./gpt --init-from whole3.safetensors --steps 1
grep -qF -- "and 33 more): a checkpoint of a larger model or of another optimizer? --drop-unused-tensors loads without them" \
  expect.log || fail "presence: --init-from names no way out: $(cat expect.log)"
grep -q "^step " expect.log && fail "presence: --init-from trained before refusing"
expect 0 "loaded the parameters of 'whole3.safetensors' (36 tensors the plan lacks dropped: 'blocks.2." \
  ./gpt --init-from whole3.safetensors --steps 1 --drop-unused-tensors

section options
expect 2 "--init-from and --resume cannot be used together" ./gpt --resume ck --init-from x.safetensors
expect 2 "--drop-unused-tensors applies to --resume and --init-from only" ./gpt --drop-unused-tensors

section newest
./gpt --steps 5 --checkpoint-every 5 --checkpoint-dir names >names.log 2>&1 || fail "newest: $(tail -3 names.log)"
./gpt --steps 9 --checkpoint-every 9 --checkpoint-dir other9 >/dev/null 2>&1 || fail "newest: the step-9 run"
mv other9/step-00000009 names/step-9
mkdir names/step-abc
expect 0 "resumed from names/step-00000005: 5 steps done" ./gpt --resume names --steps 5
grep -qF "warning: 'names/step-9' is not a checkpoint" expect.log || fail "newest: no warning: $(cat expect.log)"
grep -qF "warning: 'names/step-abc' is not a checkpoint" expect.log || fail "newest: no warning: $(cat expect.log)"

section retention
./gpt --steps 10 --checkpoint-every 1 --checkpoint-keep 3 --checkpoint-dir roll >roll.log 2>&1 ||
  fail "retention: $(tail -3 roll.log)"
[[ $(listing roll) == "step-00000008 step-00000009 step-00000010 " ]] || fail "retention: kept $(listing roll)"
# A rollback into the same folder would overwrite steps 9 and 10 of the abandoned run.
expect 1 "the checkpoint folder 'roll' already holds 'roll/step-00000009' (step 9), past the step 8" \
  ./gpt --resume roll/step-00000008 --steps 12 --checkpoint-every 1 --checkpoint-keep 3 --checkpoint-dir roll
grep -q "^step " expect.log && fail "retention: the rollback trained before stopping"
[[ $(listing roll) == "step-00000008 step-00000009 step-00000010 " ]] || fail "retention: rollback left $(listing roll)"
# A fresh run into that folder.
expect 1 "past the step 0 this run starts from" ./gpt --steps 4 --checkpoint-every 1 --checkpoint-dir roll
# Into another folder, the rollback runs; resuming the newest of a folder and going on keeps
# the checkpoint resumed from, whatever keep says.
expect 0 "resumed from roll/step-00000008: 8 steps done" \
  ./gpt --resume roll/step-00000008 --steps 12 --checkpoint-every 1 --checkpoint-keep 1 --checkpoint-dir fork
[[ $(listing fork) == "step-00000012 " ]] || fail "retention: fork kept $(listing fork)"
./gpt --resume roll --steps 13 --checkpoint-every 1 --checkpoint-keep 1 --checkpoint-dir roll >on.log 2>&1 ||
  fail "retention: resuming the newest: $(tail -3 on.log)"
[[ $(listing roll) == "step-00000010 step-00000013 " ]] || fail "retention: resumed run kept $(listing roll)"
# An unwritable folder is found before the first step, not when the first checkpoint is due.
echo x >afile
expect 1 "cannot create the checkpoint folder 'afile/ck'" ./gpt --steps 3 --checkpoint-every 100 --checkpoint-dir afile/ck
grep -q "^step " expect.log && fail "retention: trained before finding the folder unwritable"

section convert
"$PLANC" convert ck/step-00000004 -o whole.safetensors >convert.log 2>&1 || fail "convert: $(cat convert.log)"
cp -r ck/step-00000004 flipped
"$PY" - flipped/rank-0.safetensors <<'PY'
import sys
p = sys.argv[1]
b = bytearray(open(p, 'rb').read())
b[-5] ^= 0x40  # a byte of the last tensor's data (wte.weight.adam_v)
open(p, 'wb').write(b)
PY
expect 1 "flipped/rank-0.safetensors': tensor 'wte.weight.adam_v' does not match its checksum" \
  "$PLANC" convert flipped -o flipped.safetensors
expect 1 "flipped/rank-0.safetensors': tensor 'wte.weight.adam_v' does not match its checksum" ./gpt --resume flipped --steps 6
cp whole.safetensors whole-flipped.safetensors
"$PY" - whole-flipped.safetensors <<'PY'
import sys
p = sys.argv[1]
b = bytearray(open(p, 'rb').read())
b[-5] ^= 0x40
open(p, 'wb').write(b)
PY
expect 1 "tensor 'wte.weight.adam_v' does not match its checksum" "$PLANC" convert whole-flipped.safetensors -o back
expect 1 "tensor 'wte.weight.adam_v' does not match its checksum" ./gpt --init-from whole-flipped.safetensors --steps 1
"$PLANC" convert whole.safetensors -o back >/dev/null 2>&1 || fail "convert: back"
./gpt --resume back --steps 6 --metrics back.jsonl >back.log 2>&1 || fail "convert: resume: $(tail -3 back.log)"

section fuzz
./gpt --resume ck/step-00000004 --steps 6 --metrics intact.jsonl --checkpoint-every 0 --sample 0 >intact.log 2>&1 ||
  fail "fuzz: the intact checkpoint: $(tail -3 intact.log)"
"$PY" "$ROOT/tests/e2e/checkpoint_fuzz.py" ./gpt ck/step-00000004 6 intact.jsonl "$TRIALS" "${CHECKPOINT_FUZZ_SEED:-1}" \
  "" "$PLANC" || fail "fuzz: a crash or a silent change (above)"

echo "checkpoint-faults: $failures failures (at $SECONDS s)"
((failures == 0))
