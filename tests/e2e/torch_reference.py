"""The interpreter's training step against PyTorch, in f64.

    torch_reference.py --planc build/bin/planc [--plan examples/tiny-gpt.plan]
                       [--steps 5] [--workdir DIR] [--set block.key=value ...]
                       [--case NAME] [--compiled EXECUTABLE]

Runs `planc run PLAN --target=interp --dtype=f64 --steps N --dump DIR` with
the --set options, builds the same GPT in PyTorch as lib/std writes it
(gpt.plan's attention, mlp and lm_loss over nn.plan's embedding, positional
and layernorm), loads the dumped initial parameters and batches, trains it the
way the plan's schedule does, and checks:

  step 0    the loss and every gradient within 1e-6 (relative, as
            max|planc - torch| / max|torch| per tensor)
  N steps   of AdamW with the plan's hyper-parameters (learning-rate warm-up
            and decay as planc's lr_schedule documents them, global-norm
            clipping as torch.nn.utils.clip_grad_norm_): every loss within
            1e-6 and every step's learning rate within 1e-12
  the end   every parameter after the N steps (planc's final.safetensors)
            within 1e-6, relative as above

The weight decay goes where the plan's weight_decay_params says, as nanoGPT's
configure_optimizers groups the parameters: `matrices` (planc's default), one
group of the tensors of 2 or more dims with the plan's weight_decay and one of
the rest (biases, layernorm weights) with none; `all`, every tensor in one
group with the weight decay. Over a few steps the choice moves the losses
less than their tolerance, but the layernorm weights (ones, and shrunk by
lr x weight_decay per step where decayed) by far more than theirs: the final
parameters are what tells the two rules apart.

With --compiled, the executable `planc build` made of the same plan (f32)
trains the same steps on the same batches from the same seed, and its losses
must equal torch's within 1e-4 relative (COMPILED_TOL: f32 against f64 over
the run); so must every parameter of the checkpoint it writes after the last
step.

One step is the whole global batch (train.global_batch rows, the rows of the
dumped batch-<step>.safetensors) cut into m = global_batch / (micro_batch x dp)
micro-batches of micro_batch rows per data-parallel rank: rank d's micro-batch
j is rows [(d*m + j)*b, (d*m + j + 1)*b), b = micro_batch. Each micro-batch's
loss (the mean over its tokens) is back-propagated scaled by 1/(m*dp), so the
accumulated gradient is that of the mean loss over all m*dp micro-batches, and
the step's loss is the mean of the micro-batches' losses; clipping and AdamW
act on the accumulated gradient. The micro-batches are taken in planc's row
order, so torch adds the same partial sums in the same order as planc. Any
other order or split would do as well: equal micro-batches' mean of means is
the mean, and f64 sums in another order differ near 1e-16, far below the
tolerances; the order is matched anyway so that what differs is only what
planc computes differently. With global_batch = micro_batch and dp = 1 this
is one forward and one backward.

The model's dims and the train settings are read from the plan's text, with
the same --set options applied, not from planc, so a setting planc misreads
shows up as a mismatch. A --set this reading does not model and that changes
the math (another optimizer, say) is refused. The plan must have no dropout
(tiny-gpt has p = 0): planc's Philox masks are not torch's.
Prints one `PASS` or `FAIL` line with the largest differences last; exits 1 on
a mismatch, 2 when it cannot run.
"""
import argparse
import json
import math
import os
import re
import struct
import subprocess
import sys
import tempfile

import numpy as np
import torch
import torch.nn.functional as F

GRAD_TOL = 1e-6
LOSS_TOL = 1e-6
PARAM_TOL = 1e-6
LR_TOL = 1e-12
COMPILED_TOL = 1e-4
LAYERNORM_EPS = 1e-5  # std.nn's layernorm default

# ---------------------------------------------------------------------------
# safetensors, read with the standard library and numpy alone
# ---------------------------------------------------------------------------

NUMPY_DTYPES = {'F64': '<f8', 'F32': '<f4', 'F16': '<f2', 'I64': '<i8', 'I32': '<i4',
                'U8': 'u1', 'U16': '<u2', 'U32': '<u4', 'BOOL': '?'}


def read_safetensors(path):
    with open(path, 'rb') as f:
        data = f.read()
    if len(data) < 8:
        raise ValueError('%s: too short for a safetensors header' % path)
    (n,) = struct.unpack('<Q', data[:8])
    if n > len(data) - 8:
        raise ValueError('%s: header runs past the end of the file' % path)
    header = json.loads(data[8:8 + n].decode('utf-8'))
    body = data[8 + n:]
    out = {}
    for name, entry in header.items():
        if name == '__metadata__':
            continue
        begin, end = entry['data_offsets']
        raw = body[begin:end]
        if entry['dtype'] == 'BF16':  # the high half of an f32
            bits = np.frombuffer(raw, dtype='<u2').astype(np.uint32) << 16
            array = bits.view(np.float32)
        else:
            array = np.frombuffer(raw, dtype=NUMPY_DTYPES[entry['dtype']])
        out[name] = array.reshape(entry['shape'])
    return out

# ---------------------------------------------------------------------------
# The plan's settings, from its text and the --set options
# ---------------------------------------------------------------------------

MESH_AXES = ('dp', 'tp', 'pp', 'cp', 'ep')
WEIGHT_DECAY_PARAMS = ('matrices', 'all')


class CannotRun(Exception):
    """The plan or a --set option is one this reference cannot mirror (exit 2)."""


def setting(text, name, default=None, cast=float):
    m = re.search(r'\b%s\s*=\s*([-+0-9.eE]+)' % re.escape(name), text)
    if m:
        return cast(m.group(1))
    if default is None:
        raise CannotRun('no `%s = ...` in the plan' % name)
    return default


def mesh_axes(text):
    """The axes a `mesh(dp = 2, pp = 2)` writes, as {axis: count}."""
    return {axis: int(count) for axis, count in re.findall(r'\b(\w+)\s*=\s*(\d+)', text)}


def number(key, value, cast):
    """A --set value: a number, or arithmetic on literals as the plan allows."""
    if not re.fullmatch(r'[-+*/%0-9.eE() ]+', value):
        raise CannotRun('--set %s=%s: not a number' % (key, value))
    return cast(eval(value, {'__builtins__': {}}))  # digits and operators only


# The --set keys this reading models: (block.key, what it sets, how the value reads).
NUMERIC_OVERRIDES = {
    'train.global_batch': ('global_batch', int), 'train.micro_batch': ('micro_batch', int),
    'train.steps': ('steps', int), 'train.clip_grad_norm': ('clip', float),
    'train.optimizer.lr': ('lr', float), 'train.optimizer.eps': ('eps', float),
    'train.optimizer.weight_decay': ('weight_decay', float), 'train.optimizer.warmup': ('warmup', int),
    'train.optimizer.min_lr': ('min_lr', float), 'cluster.nodes': ('nodes', int),
    'cluster.gpus_per_node': ('gpus_per_node', int), 'parallel.pipeline.micro_batches': ('micro_batches', int),
}
# Keys that change where the step runs or where its inputs come from, not its math: the batches
# and initial parameters are read from planc's dump and --dtype=f64 overrides the precision.
LAYOUT_ONLY = re.compile(r'(cluster\..*|parallel\.(zero|sequence_parallel|balance|recompute|bucket|overlap)(\..*)?'
                         r'|train\.(seed|data|precision)(\..*)?)$')


def apply_override(s, option):
    key, sep, value = option.partition('=')
    key, value = key.strip(), value.strip()
    if not sep:
        raise CannotRun('--set expects block.key=value, got %r' % option)
    if key in NUMERIC_OVERRIDES:
        name, cast = NUMERIC_OVERRIDES[key]
        s[name] = number(key, value, cast)
    elif key == 'parallel.mesh':
        m = re.fullmatch(r'mesh\s*\((.*)\)', value)
        if not m:
            raise CannotRun('--set parallel.mesh=%s: not a mesh(...)' % value)
        s['mesh'] = mesh_axes(m.group(1))
    elif key.startswith('parallel.mesh.') and key.split('.')[2] in MESH_AXES:
        s['mesh'][key.split('.')[2]] = number(key, value, int)
    elif key == 'parallel.pipeline':
        m = re.search(r'\bmicro_batches\s*=\s*(\d+)', value)
        s['micro_batches'] = int(m.group(1)) if m else 0
    elif key == 'train.optimizer.decay':
        s['decay'] = value
    elif key == 'train.optimizer.weight_decay_params':
        if value not in WEIGHT_DECAY_PARAMS:
            raise CannotRun('--set %s=%s: not one of %s' % (key, value, ', '.join(WEIGHT_DECAY_PARAMS)))
        s['weight_decay_params'] = value
    elif key == 'train.optimizer.betas':
        m = re.fullmatch(r'\(\s*([-+0-9.eE]+)\s*,\s*([-+0-9.eE]+)\s*\)', value)
        if not m:
            raise CannotRun('--set %s=%s: not a (b1, b2) pair' % (key, value))
        s['betas'] = (float(m.group(1)), float(m.group(2)))
    elif not LAYOUT_ONLY.match(key):
        raise CannotRun('--set %s changes the step in a way this reference does not model' % key)


def plan_settings(path, overrides=()):
    text = open(path).read()
    text = re.sub(r'//[^\n]*', '', text)
    s = {name: setting(text, name, cast=int) for name in ('vocab', 'seq', 'hidden', 'heads', 'layers')}
    s['lr'] = setting(text, 'lr')
    betas = re.search(r'\bbetas\s*=\s*\(\s*([-+0-9.eE]+)\s*,\s*([-+0-9.eE]+)\s*\)', text)
    s['betas'] = (float(betas.group(1)), float(betas.group(2))) if betas else (0.9, 0.999)
    s['eps'] = setting(text, 'eps', 1e-8)
    s['weight_decay'] = setting(text, 'weight_decay', 0.0)
    rule = re.search(r'\bweight_decay_params\s*=\s*(\w+)', text)
    s['weight_decay_params'] = rule.group(1) if rule else 'matrices'
    if s['weight_decay_params'] not in WEIGHT_DECAY_PARAMS:
        raise CannotRun('weight_decay_params = %s is not one of %s'
                        % (s['weight_decay_params'], ', '.join(WEIGHT_DECAY_PARAMS)))
    s['warmup'] = setting(text, 'warmup', 0, int)
    s['min_lr'] = setting(text, 'min_lr', 0.0)
    s['steps'] = setting(text, 'steps', cast=int)
    s['clip'] = setting(text, 'clip_grad_norm', 0.0)
    decay = re.search(r'\bdecay\s*=\s*(\w+)', text)
    s['decay'] = decay.group(1) if decay else 'constant'
    if not re.search(r'\boptimizer\s+adamw\b', text):
        raise CannotRun('the plan\'s optimizer is not adamw')
    if re.search(r'\bp\s*=\s*0?\.\d*[1-9]', text):
        raise CannotRun('the plan has dropout; its masks cannot match torch\'s')
    # The batch and the mesh, 0 where the plan does not write them (docs/language.md 9.5 derives them).
    s['global_batch'] = setting(text, 'global_batch', 0, int)
    s['micro_batch'] = setting(text, 'micro_batch', 1, int)
    s['micro_batches'] = setting(text, 'micro_batches', 0, int)
    s['nodes'] = setting(text, 'nodes', 0, int)
    s['gpus_per_node'] = setting(text, 'gpus_per_node', 0, int)
    mesh = re.search(r'\bmesh\s*\(([^)]*)\)', text)
    s['mesh'] = mesh_axes(mesh.group(1)) if mesh else {}
    for option in overrides:
        apply_override(s, option)
    derive_batch(s)
    return s


def derive_batch(s):
    """dp, global_batch and m (micro-batches per dp rank) as planc settles them (language.md 9.5)."""
    mesh = s['mesh']
    if 'dp' in mesh:
        s['dp'] = mesh['dp']
    elif s['nodes'] or s['gpus_per_node']:
        others = 1
        for axis in MESH_AXES[1:]:
            others *= mesh.get(axis, 1)
        devices = max(s['nodes'], 1) * max(s['gpus_per_node'], 1)
        s['dp'] = devices // others if devices % others == 0 else 1
    else:
        s['dp'] = 1  # the cluster is as large as the mesh's other axes
    if not s['global_batch']:
        s['global_batch'] = s['micro_batch'] * s['dp'] * max(s['micro_batches'], 1)
    rows = s['micro_batch'] * s['dp']
    if s['global_batch'] % rows:
        raise CannotRun('global_batch %d is not divisible by micro_batch x dp = %d x %d'
                         % (s['global_batch'], s['micro_batch'], s['dp']))
    s['m'] = s['global_batch'] // rows


def parameter_groups(P, s):
    """torch.optim's groups as the plan's weight_decay_params decays them (nanoGPT's
    configure_optimizers for `matrices`: dim >= 2 decayed, the rest not)."""
    names = sorted(P)
    if s['weight_decay_params'] == 'all':
        return [{'params': [P[k] for k in names], 'weight_decay': s['weight_decay']}]
    return [{'params': [P[k] for k in names if P[k].dim() >= 2], 'weight_decay': s['weight_decay']},
            {'params': [P[k] for k in names if P[k].dim() < 2], 'weight_decay': 0.0}]


def decided(name, s):
    """The elements of parameter `name` that its gradient decides: all but the keys' third of
    b_qkv. A bias on the keys adds q . b_k to every score of a query, which softmax ignores, so its
    gradient is 0 but for rounding; Adam divides that noise by its own size and moves each such
    element by up to lr a step, differently in f32 and f64 (verify leaves such elements out too)."""
    if not name.endswith('attention.b_qkv'):
        return slice(None)
    d = s['hidden'] // s['heads']
    columns = np.arange(3 * s['hidden']).reshape(s['heads'], 3, d)  # [heads, 3, d], as forward() reads it
    return np.concatenate([columns[:, 0].ravel(), columns[:, 2].ravel()])


def compare_params(label, got, P, s, tolerance, failures):
    """Every parameter of `got` (name -> array) against torch's; returns (worst difference, name)."""
    worst = (0.0, '')
    for name in sorted(P):
        if name not in got:
            failures.append('%s: no parameter %s' % (label, name))
            continue
        want = P[name].detach().numpy()
        if got[name].shape != want.shape:
            failures.append('%s: %s has shape %s, torch\'s %s' % (label, name, list(got[name].shape), list(want.shape)))
            continue
        keep = decided(name, s)
        rel = relative(got[name].astype(np.float64)[keep], want[keep])
        worst = max(worst, (rel, name))
        if rel > tolerance:
            failures.append('%s: %s differs by %.3g relative' % (label, name, rel))
    print('%s: %d parameters compared, largest relative difference %.3g (%s)' % (label, len(P), worst[0], worst[1]))
    return worst


def learning_rate(s, step):
    """planc's lr_schedule of the 1-based `step` (ir/ops/Optimizer.cpp)."""
    if s['warmup'] > 0 and step <= s['warmup']:
        return s['lr'] * step / s['warmup']
    if s['decay'] == 'constant':
        return s['lr']
    p = min(1.0, (step - s['warmup']) / (s['steps'] - s['warmup']))
    frac = 0.5 * (1 + math.cos(math.pi * p)) if s['decay'] == 'cosine' else 1 - p
    return s['min_lr'] + (s['lr'] - s['min_lr']) * frac

# ---------------------------------------------------------------------------
# The model, as lib/std writes it
# ---------------------------------------------------------------------------


def forward(P, s, tokens, targets):
    h, heads = s['hidden'], s['heads']
    d = h // heads
    b, t = tokens.shape
    x = P['wte.weight'][tokens] + P['wpe.weight']  # embedding + positional [seq, h]
    causal = torch.ones(t, t, dtype=torch.bool).triu(1)
    for i in range(s['layers']):
        blk = 'blocks.%d.' % i
        a = F.layer_norm(x, (h,), P[blk + 'ln_1.weight'], P[blk + 'ln_1.bias'], LAYERNORM_EPS)
        # qkv columns are laid out head by head: [heads, 3, d].
        qkv = (a @ P[blk + 'attention.w_qkv'] + P[blk + 'attention.b_qkv']).view(b, t, heads, 3 * d)
        q = qkv[..., 0:d].transpose(1, 2)
        k = qkv[..., d:2 * d].transpose(1, 2)
        v = qkv[..., 2 * d:3 * d].transpose(1, 2)
        scores = (q @ k.transpose(2, 3)) / math.sqrt(d)
        scores = scores.masked_fill(causal, float('-inf'))
        ctx = (torch.softmax(scores, -1) @ v).transpose(1, 2).reshape(b, t, h)
        x = x + ctx @ P[blk + 'attention.w_o'] + P[blk + 'attention.b_o']
        m = F.layer_norm(x, (h,), P[blk + 'ln_2.weight'], P[blk + 'ln_2.bias'], LAYERNORM_EPS)
        hidden = F.gelu(m @ P[blk + 'mlp.w_in'] + P[blk + 'mlp.b_in'], approximate='tanh')
        x = x + hidden @ P[blk + 'mlp.w_out'] + P[blk + 'mlp.b_out']
    x = F.layer_norm(x, (h,), P['ln_f.weight'], P['ln_f.bias'], LAYERNORM_EPS)
    logits = x @ P['wte.weight'].t()  # the head tied to the embedding
    return F.cross_entropy(logits.reshape(-1, s['vocab']), targets.reshape(-1))

# ---------------------------------------------------------------------------


def relative(a, b):
    scale = float(np.max(np.abs(b))) if b.size else 0.0
    diff = float(np.max(np.abs(a - b))) if b.size else 0.0
    return diff / scale if scale > 0 else diff


def accumulated_step(P, s, tokens, targets):
    """Forward and backward of one step's global batch as the schedule runs it (see the header):
    leaves the gradient of the mean loss over the m*dp micro-batches in P's .grad and returns the
    step's loss, the mean of the micro-batches' losses."""
    b, m, dp = s['micro_batch'], s['m'], s['dp']
    losses = []
    for d in range(dp):
        for j in range(m):
            rows = slice((d * m + j) * b, (d * m + j + 1) * b)
            loss = forward(P, s, tokens[rows], targets[rows])
            (loss / (m * dp)).backward()
            losses.append(loss.item())
    return sum(losses) / len(losses)


def compare_step0(dump, P, loss, failures):
    """The step-0 loss and every gradient; returns (loss difference, (worst gradient difference, name))."""
    dumped = read_safetensors(os.path.join(dump, 'step-0.safetensors'))
    rel_loss = relative(np.array(dumped['loss']), np.array(loss))
    print('step 0 loss: planc %.15g torch %.15g relative difference %.3g' % (float(dumped['loss']), loss, rel_loss))
    if rel_loss > GRAD_TOL:
        failures.append('step 0 loss differs by %.3g relative' % rel_loss)
    worst = (0.0, '')
    for name in sorted(P):
        key = 'grad.' + name
        if key not in dumped:
            failures.append('no %s in step-0.safetensors' % key)
            continue
        if dumped[key].shape != tuple(P[name].shape):
            failures.append('%s has shape %s, the parameter %s' % (key, list(dumped[key].shape), list(P[name].shape)))
            continue
        rel = relative(dumped[key], P[name].grad.numpy())
        worst = max(worst, (rel, name))
        if rel > GRAD_TOL:
            failures.append('%s differs by %.3g relative' % (key, rel))
    print('step 0 gradients: %d compared, largest relative difference %.3g (%s)' % (len(P), worst[0], worst[1]))
    return rel_loss, worst


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--planc', required=True)
    ap.add_argument('--plan', default=os.path.join(os.path.dirname(__file__), '..', '..', 'examples', 'tiny-gpt.plan'))
    ap.add_argument('--steps', type=int, default=5)
    ap.add_argument('--workdir')
    ap.add_argument('--set', action='append', default=[], metavar='KEY=VALUE',
                    help='a setting override passed to planc and applied to this reading of the plan (repeatable)')
    ap.add_argument('--case', default='', help='the name the PASS/FAIL line gives this run')
    ap.add_argument('--compiled',
                    help='an executable planc build made of the plan: its losses and final parameters are compared too')
    args = ap.parse_args()
    case = args.case or os.path.basename(args.plan)

    try:
        s = plan_settings(args.plan, args.set)
    except CannotRun as e:
        print('FAIL %s: torch_reference: %s' % (case, e))
        return 2
    print('torch: global_batch %d = dp %d x %d micro-batch(es) of %d rows'
          % (s['global_batch'], s['dp'], s['m'], s['micro_batch']))
    work = args.workdir or tempfile.mkdtemp(prefix='torch-reference-')
    dump = os.path.join(work, 'dump')
    cmd = [args.planc, 'run', args.plan, '--target=interp', '--dtype=f64', '--steps', str(args.steps), '--dump', dump]
    for option in args.set:
        cmd += ['--set', option]
    print('$ ' + ' '.join(cmd), flush=True)
    run = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
    sys.stdout.write(run.stdout)
    if run.returncode != 0:
        print('FAIL %s: planc run exited with %d' % (case, run.returncode))
        return 2

    torch.set_default_dtype(torch.float64)
    init = read_safetensors(os.path.join(dump, 'init.safetensors'))
    P = {name: torch.tensor(array, dtype=torch.float64, requires_grad=True) for name, array in init.items()}
    # The plan's dims agree with the dumped parameters.
    assert P['wte.weight'].shape == (s['vocab'], s['hidden']), P['wte.weight'].shape
    assert P['wpe.weight'].shape == (s['seq'], s['hidden']), P['wpe.weight'].shape
    expected = 4 + s['layers'] * 12
    if len(P) != expected:
        print('FAIL %s: %d parameters dumped, the model has %d' % (case, len(P), expected))
        return 1
    logged = json.load(open(os.path.join(dump, 'losses.json')))
    planc_losses, planc_lrs = logged['loss'], logged.get('lr', [])

    params = [P[k] for k in sorted(P)]
    opt = torch.optim.AdamW(parameter_groups(P, s), lr=s['lr'], betas=s['betas'], eps=s['eps'])
    print('torch: weight decay %g on %s of %d tensors (weight_decay_params = %s)'
          % (s['weight_decay'], ', '.join('%d' % len(g['params']) for g in opt.param_groups if g['weight_decay'] > 0)
             or 'none', len(params), s['weight_decay_params']))
    failures = []
    torch_losses = []
    rel_loss0, worst_grad = 0.0, (0.0, '')
    for step in range(args.steps):
        batch = read_safetensors(os.path.join(dump, 'batch-%d.safetensors' % step))
        shape = [s['global_batch'], s['seq']]
        if list(batch['tokens'].shape) != shape or list(batch['targets'].shape) != shape:
            failures.append('batch-%d.safetensors holds tokens %s and targets %s; the step\'s global batch is %s'
                            % (step, list(batch['tokens'].shape), list(batch['targets'].shape), shape))
            break
        tokens = torch.tensor(batch['tokens'].astype(np.int64))
        targets = torch.tensor(batch['targets'].astype(np.int64))
        opt.zero_grad()
        loss = accumulated_step(P, s, tokens, targets)
        torch_losses.append(loss)
        if step == 0:
            rel_loss0, worst_grad = compare_step0(dump, P, loss, failures)

        if s['clip'] > 0:
            torch.nn.utils.clip_grad_norm_(params, s['clip'])
        for group in opt.param_groups:
            group['lr'] = learning_rate(s, step + 1)
        opt.step()

    worst = 0.0
    for step, (a, b) in enumerate(zip(planc_losses, torch_losses)):
        rel = abs(a - b) / abs(b)
        worst = max(worst, rel)
        print('step %d loss: planc %.15g torch %.15g relative difference %.3g' % (step, a, b, rel))
        if rel > LOSS_TOL:
            failures.append('step %d loss differs by %.3g relative' % (step, rel))
    worst_lr = 0.0
    for step, a in enumerate(planc_lrs[:args.steps]):
        b = learning_rate(s, step + 1)
        rel = abs(a - b) / abs(b) if b else abs(a)
        worst_lr = max(worst_lr, rel)
        if rel > LR_TOL:
            failures.append('step %d learning rate: planc %.15g, the schedule %.15g' % (step, a, b))
    if len(planc_losses) != args.steps or len(planc_lrs) != args.steps:
        failures.append('planc logged %d losses and %d learning rates for %d steps'
                        % (len(planc_losses), len(planc_lrs), args.steps))
    final = os.path.join(dump, 'final.safetensors')
    worst_param = compare_params('parameters after %d steps' % args.steps,
                                 read_safetensors(final) if os.path.exists(final) else {}, P, s, PARAM_TOL, failures)

    worst_compiled = worst_compiled_param = None
    if args.compiled:
        metrics = os.path.join(work, 'compiled.jsonl')
        if os.path.exists(metrics):
            os.remove(metrics)
        checkpoints = os.path.join(work, 'compiled-ckpt')
        cmd = [args.compiled, '--steps', str(args.steps), '--metrics', metrics, '--log-every', '10', '--sample', '0',
               '--checkpoint-every', str(args.steps), '--checkpoint-dir', checkpoints]
        print('$ ' + ' '.join(cmd), flush=True)
        ran = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                             errors='replace')
        sys.stdout.write(ran.stdout)
        compiled = [json.loads(line)['loss'] for line in open(metrics)] if ran.returncode == 0 else []
        if len(compiled) != args.steps:
            failures.append('the compiled executable ran %d of %d steps (exit %d)' % (len(compiled), args.steps,
                                                                                    ran.returncode))
        worst_compiled = 0.0
        for step, (a, b) in enumerate(zip(compiled, torch_losses)):
            rel = abs(a - float(b)) / abs(float(b))
            worst_compiled = max(worst_compiled, rel)
            if rel > COMPILED_TOL:
                failures.append('step %d: the compiled loss %.9g differs from torch\'s %.9g by %.3g relative'
                                % (step, a, float(b), rel))
        print('compiled (f32) against torch (f64): largest relative loss difference %.3g over %d steps'
              % (worst_compiled, len(compiled)))
        # One rank: its checkpoint file holds every parameter whole, by path.
        written = os.path.join(checkpoints, 'step-%08d' % args.steps, 'rank-0.safetensors')
        worst_compiled_param = compare_params('compiled parameters after %d steps' % args.steps,
                                              read_safetensors(written) if os.path.exists(written) else {}, P, s,
                                              COMPILED_TOL, failures)

    for f in failures:
        print('  mismatch: ' + f)
    if torch_losses:
        found = 'step-0 loss %.3g, gradients %.3g (%s), %d steps\' losses %.3g, lr %.3g, parameters %.3g (%s)' % (
            rel_loss0, worst_grad[0], worst_grad[1], len(torch_losses), worst, worst_lr, worst_param[0], worst_param[1])
        if worst_compiled is not None:
            found += ', compiled losses %.3g, parameters %.3g (tolerance %g)' % (
                worst_compiled, worst_compiled_param[0], COMPILED_TOL)
    else:
        found = 'nothing compared (%s)' % (failures[0] if failures else 'no steps run')
    print('%s %s: %s (tolerances: loss and gradients %g, losses %g, lr %g, parameters %g)'
          % ('FAIL' if failures else 'PASS', case, found, GRAD_TOL, LOSS_TOL, LR_TOL, PARAM_TOL))
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
