#!/usr/bin/env bash
# The CPU backend end to end (`planc build`, docs/cpu-backend.md):
#
#   equal      the compiled step equals the interpreter's, every step's loss within 1e-5
#              relative, for tiny-gpt (as written and with 2 micro-batches accumulated), a
#              one-rank tiny-llama (rmsnorm, rope, grouped heads, SwiGLU) and a model of other
#              shapes written here (odd sizes, untied head, dropout, SGD with momentum); in
#              bf16 and f16 (master weights f32) within 1e-3
#   fused      the same models built with fusion = aggressive (fused groups, flash attention,
#              steps folded into the next kernel) equal the interpreter
#   scaling    f16 with a loss scale far too large: the first steps overflow and are skipped
#              (the log says so, the scale halves), training recovers, and the losses are the
#              interpreter's
#   arena      the executable allocates exactly `planc check --json`'s arena
#   threads    the executable links the OpenMP-threaded OpenBLAS (one pool of threads)
#   resume     a run resumed from a checkpoint gives bit-identical losses; keep = 2 keeps two
#   kill       kill -9 while checkpointing every step leaves a checkpoint that resumes
#   errors     bad data, bad options and bad checkpoints end with a message and status 1 or 2
#   hostile    data paths and checkpoint folders with quotes, backslashes, */, ??/, a newline,
#              $(...) and non-ASCII build and run; nothing runs, the folder has its exact name
#   mesh       a plan of several ranks builds, and its executable started without mpirun
#              says how to start it (tests/e2e/mpi.sh runs such plans)
#   init-from  safetensors files of Hugging Face Llama and GPT-2 names start tiny-llama and tiny-gpt where the same
#              numbers under planc's names do
#   sample     tiny-gpt trained 300 steps on text writes mostly printable text with --sample;
#              the same checkpoint sampled again (--steps 0 --resume) writes the same bytes
#
#   PLANC=build/bin/planc tests/e2e/cpu-backend.sh
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PLANC=${PLANC:-$ROOT/build/bin/planc}
PY=/usr/bin/python3
# Builds at -O1 compile in about half the time of the default -O3; what is
# checked here is numbers, not speed (bench/ measures -O3).
OPT=(-O1)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
# What a failure elsewhere may depend on: the CPU and the thread settings.
echo "cpu-backend: $(nproc) CPUs ($(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')), OMP_NUM_THREADS=${OMP_NUM_THREADS-unset}, CXX=${CXX-unset}"
failures=0
fail() {
  echo "cpu-backend: FAIL: $*"
  failures=$((failures + 1))
}

# compare NAME PLAN STEPS [--set ...]: build, run, and compare with the interpreter.
compare() {
  local name=$1 plan=$2 steps=$3 tol=${TOL:-1e-5}
  shift 3
  "$PLANC" build "${OPT[@]}" "$plan" -o "$name" "$@" 2>"$name.build.log" || { cat "$name.build.log"; fail "$name: build"; return; }
  ./"$name" --steps "$steps" --metrics "$name.jsonl" >"$name.log" || { cat "$name.log"; fail "$name: run"; return; }
  "$PLANC" run "$plan" --target=interp --steps "$steps" "$@" >"$name.interp.log" || { fail "$name: interp"; return; }
  "$PY" - "$name" "$tol" <<'PY' || fail "$name: losses differ from the interpreter's"
import json, sys
name, tol = sys.argv[1], float(sys.argv[2])
compiled = [json.loads(l)['loss'] for l in open(name + '.jsonl')]
interp = [float(l.split()[3]) for l in open(name + '.interp.log') if l.startswith('step ')]
worst = max(abs(a - b) / abs(b) for a, b in zip(compiled, interp))
print('%-10s %d steps, losses %.4f -> %.4f, largest relative difference from the interpreter %.2e'
      % (name, len(compiled), compiled[0], compiled[-1], worst))
# The interpreter prints six decimals: 5e-7 absolute of rounding on top of the tolerance.
ok = len(compiled) == len(interp) > 0 and all(abs(a - b) <= tol * abs(b) + 5e-7 for a, b in zip(compiled, interp))
sys.exit(0 if ok else 1)
PY
}

# A model of other shapes: odd sizes, an untied head, dropout, SGD with momentum.
cat >odd.plan <<'EOF'
import std.gpt

model odd_lm {
  let vocab = 37, seq = 10, hidden = 24, heads = 3
  input tokens : i32[batch, seq]
  input targets : i32[batch, seq]
  x = dropout(embedding(tokens, vocab, hidden) as wte + positional(seq, hidden) as wpe, 0.1)
  x = x + attention(layernorm(x) as ln_1, heads, causal = true, p = 0.1)
  x = x + mlp(layernorm(x) as ln_2, ffn = 40, p = 0.1)
  logits = linear(layernorm(x) as ln_f, vocab, bias = false) as head
  loss = cross_entropy(logits, targets)
}

train {
  global_batch = 6, micro_batch = 3, steps = 50, seed = 3
  optimizer sgd(lr = 0.05, momentum = 0.9, weight_decay = 0.01)
  clip_grad_norm = 0.5
}
EOF
sed -e 's/mesh(pp = 2, tp = 2)/mesh(dp = 1)/' -e 's/pipeline 1f1b(micro_batches = 4)//' \
  -e 's/gpus_per_node = 4/gpus_per_node = 1/' "$ROOT/examples/tiny-llama.plan" >llama1.plan

echo "=== equal"
compare gpt "$ROOT/examples/tiny-gpt.plan" 20
compare gpt-accum "$ROOT/examples/tiny-gpt.plan" 10 --set train.global_batch=8
compare llama llama1.plan 20
compare odd odd.plan 10
TOL=1e-3 compare gpt-bf16 "$ROOT/examples/tiny-gpt.plan" 8 --set train.precision=bf16
TOL=1e-3 compare gpt-f16 "$ROOT/examples/tiny-gpt.plan" 8 --set train.precision=f16

echo "=== fused"
# fusion = aggressive (docs/fusion.md): fused elementwise groups, flash attention, and steps
# computed inside the next kernel (a residual add in the first pass of the norm after it, the
# clipped gradient inside the optimizer's update).
for model in "gpt $ROOT/examples/tiny-gpt.plan" "llama llama1.plan" "odd odd.plan"; do
  read -r name plan <<<"$model"
  "$PLANC" emit --emit=kernels --set train.fusion=aggressive "$plan" >"$name-fused.kernels" ||
    fail "$name-fused: emit kernels"
  grep -q "computes step [0-9]* ([a-z_]*) \(in its first pass\|where it reads\)" "$name-fused.kernels" ||
    fail "$name-fused: no step folded into the next kernel"
  compare "$name-fused" "$plan" 10 --set train.fusion=aggressive
done

echo "=== scaling"
TOL=1e-3 compare overflow "$ROOT/examples/tiny-gpt.plan" 30 \
  --set 'train.precision=f16(loss_scale = dynamic(scale = 1e9, growth_interval = 10))'
"$PY" - <<'PY' || fail "scaling: no skipped steps and recovery"
import json
steps = [json.loads(l) for l in open('overflow.jsonl')]
skipped = [s['step'] for s in steps if s['skipped']]
print('skipped steps', skipped, '; loss scale', steps[0]['loss_scale'], '->', steps[-1]['loss_scale'])
assert skipped[:3] == [0, 1, 2], skipped                 # 1e9 overflows f16 at once
assert steps[1]['loss_scale'] == steps[0]['loss_scale'] / 2   # and backs off by half
assert len(skipped) < len(steps) - 10                    # then most steps train
assert sum(s['loss'] for s in steps[-5:]) / 5 < steps[0]['loss'] - 0.1
PY
grep -q "skipped: gradients overflowed at loss scale 1e+09" overflow.log || fail "scaling: the log does not say"

echo "=== arena"
"$PLANC" check --json "$ROOT/examples/tiny-gpt.plan" >check.json || fail "arena: planc check --json exited $?"
ledger=$("$PY" -c 'import json,sys; print(json.load(open("check.json"))["peak_arena_bytes"])') || ledger=unknown
grep -q "^arena: .* ($ledger bytes); the ledger's figure: .* ($ledger bytes)$" gpt.log ||
  fail "arena: planc check says $ledger bytes; the executable: $(grep '^arena' gpt.log)"

echo "=== threads"
# scripts/setup.sh installs Debian's OpenBLAS threaded by OpenMP, and the executables link it:
# their GEMMs run on the kernels' own OpenMP threads (docs/cpu-backend.md, "Threads").
# (ldd's output read whole first: `ldd | grep -q` under pipefail fails when grep
# exits at the match before ldd has written the rest.)
libs=$(ldd ./gpt)
grep 'openblas-openmp/libopenblas\.so' <<<"$libs" >/dev/null || fail "threads: gpt links $(grep openblas <<<"$libs")"

echo "=== resume"
./gpt --steps 8 --checkpoint-every 2 --checkpoint-keep 2 --checkpoint-dir ck --metrics full.jsonl >full.log 2>&1 ||
  fail "resume: the run that checkpoints: $(tail -3 full.log)"
ls ck >ck.list 2>&1 || true
[[ $(cat ck.list | tr '\n' ' ') == "step-00000006 step-00000008 " ]] || fail "resume: kept $(cat ck.list | tr '\n' ' ')"
./gpt --steps 8 --resume ck/step-00000006 --metrics resumed.jsonl >resume.log 2>&1 ||
  fail "resume: the resumed run: $(tail -3 resume.log)"
grep -q "^resumed from ck/step-00000006: 6 steps done" resume.log || fail "resume: $(head -1 resume.log)"
"$PY" - <<'PY' || fail "resume: losses are not bit-identical"
import json
full = {json.loads(l)['step']: l.split('"seconds"')[0] for l in open('full.jsonl')}
resumed = [l.split('"seconds"')[0] for l in open('resumed.jsonl')]
steps = [json.loads(l.split(', "seconds"')[0] + '}')['step'] for l in open('resumed.jsonl')]
print('resumed steps', steps)
assert steps == [6, 7] and all(full[s] == r for s, r in zip(steps, resumed))
PY

echo "=== kill"
./gpt --steps 100000 --checkpoint-every 1 --checkpoint-keep 3 --checkpoint-dir kk --log-every 1000 >kill-run.log 2>&1 &
pid=$!
# Once a few checkpoints are complete, kill it (while it writes the next one, most likely).
for _ in $(seq 600); do
  [[ $(ls kk/*/index.json 2>/dev/null | wc -l) -ge 2 ]] && break
  sleep 0.1
done
sleep 0.3
kill -9 "$pid" 2>/dev/null || fail "kill: the run ended before it was killed: $(tail -3 kill-run.log)"
wait "$pid" 2>/dev/null || true
# --steps 1 is below the steps done: nothing runs, but the newest complete checkpoint must load.
./gpt --resume kk --checkpoint-every 0 --steps 1 >kill.log 2>&1 || true
grep -q "^resumed from kk/step-" kill.log || { cat kill.log; fail "kill: the newest complete checkpoint does not load"; }

echo "=== errors"
expect() { # expect STATUS PATTERN CMD...: the command exits with STATUS and its stderr has PATTERN
  local status=$1 pattern=$2 rc=0
  shift 2
  "$@" >err.out 2>err.log || rc=$?
  if [[ $rc != "$status" ]] || ! grep -qF -- "$pattern" err.log; then
    fail "errors: '$*' exited $rc with: $(cat err.log)"
  fi
}
expect 1 "cannot read text data file 'missing.txt'" ./gpt --data text:missing.txt --steps 1
printf 'abc' >short.txt
expect 1 "short.txt" ./gpt --data text:short.txt --steps 1
expect 2 "unknown option '--stpes'" ./gpt --stpes 3
expect 2 "option --steps takes a non-negative integer" ./gpt --steps -3
expect 2 "unknown source 'csv'" ./gpt --data csv:x
mkdir -p empty
expect 1 "holds no complete checkpoint" ./gpt --resume empty --steps 1
expect 1 "is a checkpoint of plan 'tiny_gpt', not of 'tiny_llama'" ./llama --resume ck --steps 1
head -c 100 ck/step-00000008/rank-0.safetensors >trunc.safetensors
cp -r ck/step-00000008 truncated && cp trunc.safetensors truncated/rank-0.safetensors
expect 1 "truncated/rank-0.safetensors" ./gpt --resume truncated --steps 9
expect 2 "option --temperature takes a number >= 0" ./gpt --temperature -1
expect 2 "build needs an output file" "$PLANC" build "$ROOT/examples/tiny-gpt.plan"

echo "=== init-from"
# The same numbers under the plan's names and under Hugging Face Llama's (the plan follows std.hf's
# hf_llama: nn.Linear's weights transposed, a rotary table the map ignores) start the same run,
# and likewise for GPT-2's names (hf_gpt2); a tensor of the wrong shape is an error naming it.
# One script writes both families' files. (tests/e2e/hf-weights.sh: every layout, the way back.)
"$PY" - <<'PY' || fail "init-from: the script that writes the safetensors files failed"
import json, struct
import numpy as np
def write(path, tensors):
    header, data = {}, b''
    for name, a in tensors.items():
        b = np.ascontiguousarray(a, dtype=np.float32).tobytes()
        header[name] = {'dtype': 'F32', 'shape': list(a.shape), 'data_offsets': [len(data), len(data) + len(b)]}
        data += b
    h = json.dumps(header).encode()
    h += b' ' * (-len(h) % 8)
    open(path, 'wb').write(struct.pack('<Q', len(h)) + h + data)
rng = np.random.default_rng(5)
L, H, KV, F, V = 2, 64, 32, 172, 256   # tiny-llama
ours, hf = {}, {}
def both(mine, theirs, shape, transposed=False, scale=0.05, offset=0.0):
    a = (rng.standard_normal(shape) * scale + offset).astype(np.float32)
    ours[mine] = a
    hf[theirs] = np.ascontiguousarray(a.T) if transposed else a
both('tok_embeddings.weight', 'model.embed_tokens.weight', (V, H))
both('norm.weight', 'model.norm.weight', (H,), offset=1.0)
both('output.weight', 'lm_head.weight', (H, V), True)
for i in range(L):
    both('blocks.%d.attention_norm.weight' % i, 'model.layers.%d.input_layernorm.weight' % i, (H,), offset=1.0)
    both('blocks.%d.ffn_norm.weight' % i, 'model.layers.%d.post_attention_layernorm.weight' % i, (H,), offset=1.0)
    for w, proj, shape in (('wq', 'q', (H, H)), ('wk', 'k', (H, KV)), ('wv', 'v', (H, KV)), ('wo', 'o', (H, H))):
        both('blocks.%d.llama_attention.%s' % (i, w), 'model.layers.%d.self_attn.%s_proj.weight' % (i, proj), shape, True)
    for w, proj, shape in (('w1', 'gate', (H, F)), ('w3', 'up', (H, F)), ('w2', 'down', (F, H))):
        both('blocks.%d.swiglu.%s' % (i, w), 'model.layers.%d.mlp.%s_proj.weight' % (i, proj), shape, True)
hf['model.layers.0.self_attn.rotary_emb.inv_freq'] = np.ones(16, np.float32)
write('our-names.safetensors', ours)
write('hf-names.safetensors', hf)
hf['model.layers.1.self_attn.k_proj.weight'] = np.zeros((H, H), np.float32)
write('hf-bad.safetensors', hf)
# GPT-2's names (GPT2LMHeadModel with its `transformer.` prefix): c_attn's columns are
# [3, heads, d] where std.gpt's w_qkv has [heads, 3, d] (tiny-gpt: 4 heads of 16), and its
# position table is longer than the plan's context (the first 64 of 128 rows are taken); the
# mask buffers and the tied lm_head are skipped.
rng = np.random.default_rng(7)
L, H, N, S, V = 2, 64, 4, 64, 256   # tiny-gpt
D = H // N
ours, hf = {}, {}
def both(mine, theirs, shape, scale=0.05, offset=0.0, qkv=False):
    a = (rng.standard_normal(shape) * scale + offset).astype(np.float32)
    ours[mine] = a
    if qkv:   # ours [..., heads, 3, d] -> Hugging Face's [..., 3, heads, d]
        lead = a.shape[:-1]
        a = np.swapaxes(a.reshape(lead + (N, 3, D)), -3, -2).reshape(lead + (3 * H,))
    hf['transformer.' + theirs] = np.ascontiguousarray(a)
both('wte.weight', 'wte.weight', (V, H))
positions = (rng.standard_normal((2 * S, H)) * 0.02).astype(np.float32)
ours['wpe.weight'] = positions[:S]
hf['transformer.wpe.weight'] = positions
both('ln_f.weight', 'ln_f.weight', (H,), offset=1.0)
both('ln_f.bias', 'ln_f.bias', (H,))
for i in range(L):
    for ln in ('ln_1', 'ln_2'):
        both('blocks.%d.%s.weight' % (i, ln), 'h.%d.%s.weight' % (i, ln), (H,), offset=1.0)
        both('blocks.%d.%s.bias' % (i, ln), 'h.%d.%s.bias' % (i, ln), (H,))
    both('blocks.%d.attention.w_qkv' % i, 'h.%d.attn.c_attn.weight' % i, (H, 3 * H), qkv=True)
    both('blocks.%d.attention.b_qkv' % i, 'h.%d.attn.c_attn.bias' % i, (3 * H,), qkv=True)
    both('blocks.%d.attention.w_o' % i, 'h.%d.attn.c_proj.weight' % i, (H, H))
    both('blocks.%d.attention.b_o' % i, 'h.%d.attn.c_proj.bias' % i, (H,))
    both('blocks.%d.mlp.w_in' % i, 'h.%d.mlp.c_fc.weight' % i, (H, 4 * H))
    both('blocks.%d.mlp.b_in' % i, 'h.%d.mlp.c_fc.bias' % i, (4 * H,))
    both('blocks.%d.mlp.w_out' % i, 'h.%d.mlp.c_proj.weight' % i, (4 * H, H))
    both('blocks.%d.mlp.b_out' % i, 'h.%d.mlp.c_proj.bias' % i, (H,))
    hf['transformer.h.%d.attn.bias' % i] = np.tril(np.ones((S, S), np.float32))
hf['lm_head.weight'] = hf['transformer.wte.weight']
write('gpt-ours.safetensors', ours)
write('gpt-hf.safetensors', hf)
hf['transformer.h.1.attn.c_attn.weight'] = np.zeros((H, 2 * H), np.float32)
write('gpt-hf-bad.safetensors', hf)
PY
./llama --init-from our-names.safetensors --steps 3 --metrics ours.jsonl >init-ours.log 2>&1 ||
  fail "init-from: $(tail -3 init-ours.log)"
./llama --init-from hf-names.safetensors --steps 3 --metrics hf.jsonl >init-hf.log 2>&1 ||
  fail "init-from: $(tail -3 init-hf.log)"
cmp -s <(cut -d, -f1-2 ours.jsonl) <(cut -d, -f1-2 hf.jsonl) || fail "init-from: Hugging Face names train another model"
grep -q "loaded 21 tensors of 'hf-names.safetensors' by the name map 'hf_llama', 1 passed over as tied or ignored; 0 parameters keep" \
  init-hf.log || fail "init-from: $(grep loaded init-hf.log)"
expect 1 "tensor 'model.layers.1.self_attn.k_proj.weight' has shape [64, 64], but the plan's 'blocks.1.llama_attention.wk' is [64, 32] (the file's [32, 64], transposed)" \
  ./llama --init-from hf-bad.safetensors --steps 1
./gpt --init-from gpt-ours.safetensors --steps 3 --sample 0 --metrics gpt-ours.jsonl >init-gpt-ours.log 2>&1 ||
  fail "init-from: $(tail -3 init-gpt-ours.log)"
./gpt --init-from gpt-hf.safetensors --steps 3 --sample 0 --metrics gpt-hf.jsonl >init-gpt-hf.log 2>&1 ||
  fail "init-from: $(tail -3 init-gpt-hf.log)"
cmp -s <(cut -d, -f1-2 gpt-ours.jsonl) <(cut -d, -f1-2 gpt-hf.jsonl) || fail "init-from: GPT-2 names train another model"
grep -q "loaded 28 tensors of 'gpt-hf.safetensors' by the name map 'hf_gpt2', 3 passed over as tied or ignored; 'transformer.wpe.weight': its first 64 of 128 rows; 0 parameters keep" \
  init-gpt-hf.log || fail "init-from: $(grep loaded init-gpt-hf.log)"
expect 1 "tensor 'transformer.h.1.attn.c_attn.weight' has shape [64, 128], but the plan's 'blocks.1.attention.w_qkv' is [64, 192]" \
  ./gpt --init-from gpt-hf-bad.safetensors --steps 1

echo "=== hostile"
mkdir -p hostile
hostile_dir=$'ck "q" \\ */ ??/ $(touch pwned) \xc3\xa9\nsecond line'
hostile_data=$'data "q" \\ */ ??/ $(touch pwned) \xc3\xa9.txt'
# (Its slashes make folders: the path is the plan's, folders and all.)
mkdir -p "hostile/$(dirname "$hostile_data")"
head -c 20000 "$ROOT/README.md" >"hostile/$hostile_data"
# The plan spells them with the language's escapes: \" and \\.
"$PY" - "$ROOT/examples/tiny-gpt.plan" "$hostile_data" "$hostile_dir" <<'PY' >hostile/model.plan || fail "hostile: writing the plan"
import re, sys
plan, data, folder = sys.argv[1], sys.argv[2], sys.argv[3]
esc = lambda s: s.replace('\\', '\\\\').replace('"', '\\"').replace('\n', '\\n')
text = open(plan).read()
text = re.sub(r'  data synthetic.*', lambda m: '  data text("%s")\n  checkpoint(every = 1, dir = "%s", keep = 1)'
              % (esc(data), esc(folder)), text)
sys.stdout.write(text)
PY
(cd hostile && "$PLANC" build "${OPT[@]}" model.plan -o model --keep-source 2>build.log && ./model --steps 2 >run.log) ||
  fail "hostile: $(cat hostile/build.log hostile/run.log 2>/dev/null | tail -5)"
[[ -e hostile/pwned || -e pwned ]] && fail "hostile: \$(...) ran"
[[ -f "hostile/$hostile_dir/step-00000002/index.json" ]] || fail "hostile: no checkpoint in the exact folder: $(ls hostile)"
grep -c "??/" hostile/model.cpp >/dev/null && fail "hostile: a trigraph reached the source"

echo "=== sample"
# The README's text (base-files puts it on every Debian machine); else the docs' ASCII.
text=/usr/share/common-licenses/GPL-3
if [[ ! -r $text ]]; then
  text=docs.txt
  cat "$ROOT"/docs/*.md | LC_ALL=C tr -cd '\11\12\40-\176' >"$text"
fi
./gpt --data "text:$text" --steps 300 --log-every 300 --checkpoint-every 300 --checkpoint-dir sk \
  --sample 200 --temperature 0 >sample1.log 2>sample1.err || fail "sample: training: $(tail -3 sample1.err)"
./gpt --resume sk --steps 0 --sample 200 --temperature 0 >sample2.log 2>sample2.err ||
  fail "sample: from the checkpoint: $(tail -3 sample2.err)"
"$PY" - <<'PY' || fail "sample: the text is not printable or not reproduced from the checkpoint"
a = open('sample1.log', 'rb').read().split(b'top-k 200):\n', 1)[1]
b = open('sample2.log', 'rb').read().split(b'top-k 200):\n', 1)[1]
printable = sum(32 <= c < 127 or c in (9, 10) for c in a) / max(1, len(a))
print('sample: %d bytes, %.0f%% printable: %r' % (len(a), 100 * printable, a[:60]))
assert len(a) == 201 and a == b and printable > 0.9
PY
expect 1 "--prompt is empty" ./gpt --steps 0 --sample 5 --prompt ""
echo "=== mesh"
"$PLANC" build "${OPT[@]}" "$ROOT/examples/tiny-llama.plan" -o mesh 2>mesh.build.log || fail "mesh: build: $(cat mesh.build.log)"
expect 1 "runs on a mesh of 4 ranks" ./mesh --steps 1

echo
if ((failures)); then
  echo "cpu-backend: $failures failed"
  exit 1
fi
echo "cpu-backend: all passed"
