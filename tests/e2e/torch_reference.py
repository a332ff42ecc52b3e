"""The interpreter's training step against PyTorch, in f64.

    torch_reference.py --planc build/bin/planc [--plan examples/tiny-gpt.plan]
                       [--steps 5] [--workdir DIR]

Runs `planc run PLAN --target=interp --dtype=f64 --steps N --dump DIR`, builds
the same GPT in PyTorch as lib/std writes it (gpt.plan's attention, mlp and
lm_loss over nn.plan's embedding, positional and layernorm), loads the dumped
initial parameters and batches, and checks:

  step 0    the loss and every gradient within 1e-6 (relative, as
            max|planc - torch| / max|torch| per tensor)
  N steps   of AdamW with the plan's hyper-parameters (learning-rate warm-up
            and decay as planc's lr_schedule documents them, global-norm
            clipping as torch.nn.utils.clip_grad_norm_): every loss within 1e-5

The model's dims and the train settings are read from the plan's text, not
from planc, so a setting planc misreads shows up as a mismatch. The plan must
have no dropout (tiny-gpt has p = 0): planc's Philox masks are not torch's.
Exits 1 with the differences on a mismatch, 2 when it cannot run.
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
LOSS_TOL = 1e-5
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
# The plan's settings, from its text
# ---------------------------------------------------------------------------


def setting(text, name, default=None, cast=float):
    m = re.search(r'\b%s\s*=\s*([-+0-9.eE]+)' % re.escape(name), text)
    if m:
        return cast(m.group(1))
    if default is None:
        raise SystemExit('torch_reference: no `%s = ...` in the plan' % name)
    return default


def plan_settings(path):
    text = open(path).read()
    text = re.sub(r'//[^\n]*', '', text)
    s = {name: setting(text, name, cast=int) for name in ('vocab', 'seq', 'hidden', 'heads', 'layers')}
    s['lr'] = setting(text, 'lr')
    betas = re.search(r'\bbetas\s*=\s*\(\s*([-+0-9.eE]+)\s*,\s*([-+0-9.eE]+)\s*\)', text)
    s['betas'] = (float(betas.group(1)), float(betas.group(2))) if betas else (0.9, 0.999)
    s['eps'] = setting(text, 'eps', 1e-8)
    s['weight_decay'] = setting(text, 'weight_decay', 0.0)
    s['warmup'] = setting(text, 'warmup', 0, int)
    s['min_lr'] = setting(text, 'min_lr', 0.0)
    s['steps'] = setting(text, 'steps', cast=int)
    s['clip'] = setting(text, 'clip_grad_norm', 0.0)
    decay = re.search(r'\bdecay\s*=\s*(\w+)', text)
    s['decay'] = decay.group(1) if decay else 'constant'
    if not re.search(r'\boptimizer\s+adamw\b', text):
        raise SystemExit('torch_reference: the plan\'s optimizer is not adamw')
    if re.search(r'\bp\s*=\s*0?\.\d*[1-9]', text):
        raise SystemExit('torch_reference: the plan has dropout; its masks cannot match torch\'s')
    return s


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


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--planc', required=True)
    ap.add_argument('--plan', default=os.path.join(os.path.dirname(__file__), '..', '..', 'examples', 'tiny-gpt.plan'))
    ap.add_argument('--steps', type=int, default=5)
    ap.add_argument('--workdir')
    args = ap.parse_args()

    s = plan_settings(args.plan)
    work = args.workdir or tempfile.mkdtemp(prefix='torch-reference-')
    dump = os.path.join(work, 'dump')
    cmd = [args.planc, 'run', args.plan, '--target=interp', '--dtype=f64', '--steps', str(args.steps), '--dump', dump]
    print('$ ' + ' '.join(cmd), flush=True)
    run = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
    sys.stdout.write(run.stdout)
    if run.returncode != 0:
        print('torch_reference: planc run exited with %d' % run.returncode)
        return 2

    torch.set_default_dtype(torch.float64)
    init = read_safetensors(os.path.join(dump, 'init.safetensors'))
    P = {name: torch.tensor(array, dtype=torch.float64, requires_grad=True) for name, array in init.items()}
    # The plan's dims agree with the dumped parameters.
    assert P['wte.weight'].shape == (s['vocab'], s['hidden']), P['wte.weight'].shape
    assert P['wpe.weight'].shape == (s['seq'], s['hidden']), P['wpe.weight'].shape
    expected = 4 + s['layers'] * 12
    if len(P) != expected:
        print('torch_reference: %d parameters dumped, the model has %d' % (len(P), expected))
        return 1
    planc_losses = json.load(open(os.path.join(dump, 'losses.json')))['loss']

    params = [P[k] for k in sorted(P)]
    opt = torch.optim.AdamW(params, lr=s['lr'], betas=s['betas'], eps=s['eps'], weight_decay=s['weight_decay'])
    failures = []
    torch_losses = []
    for step in range(args.steps):
        batch = read_safetensors(os.path.join(dump, 'batch-%d.safetensors' % step))
        tokens = torch.tensor(batch['tokens'].astype(np.int64))
        targets = torch.tensor(batch['targets'].astype(np.int64))
        opt.zero_grad()
        loss = forward(P, s, tokens, targets)
        loss.backward()
        torch_losses.append(loss.item())

        if step == 0:
            dumped = read_safetensors(os.path.join(dump, 'step-0.safetensors'))
            worst = (0.0, '')
            rel = relative(np.array(dumped['loss']), np.array(loss.item()))
            print('step 0 loss: planc %.15g torch %.15g relative difference %.3g'
                  % (float(dumped['loss']), loss.item(), rel))
            if rel > GRAD_TOL:
                failures.append('step 0 loss differs by %.3g relative' % rel)
            for name in sorted(P):
                key = 'grad.' + name
                if key not in dumped:
                    failures.append('no %s in step-0.safetensors' % key)
                    continue
                rel = relative(dumped[key], P[name].grad.numpy())
                worst = max(worst, (rel, name))
                if rel > GRAD_TOL:
                    failures.append('%s differs by %.3g relative' % (key, rel))
            print('step 0 gradients: %d compared, largest relative difference %.3g (%s)'
                  % (len(P), worst[0], worst[1]))

        if s['clip'] > 0:
            torch.nn.utils.clip_grad_norm_(params, s['clip'])
        for group in opt.param_groups:
            group['lr'] = learning_rate(s, step + 1)
        opt.step()

    worst = 0.0
    for step, (a, b) in enumerate(zip(planc_losses, torch_losses)):
        rel = abs(a - b) / abs(b)
        worst = max(worst, rel)
        print('step %d loss: planc %.12f torch %.12f relative difference %.3g' % (step, a, b, rel))
        if rel > LOSS_TOL:
            failures.append('step %d loss differs by %.3g relative' % (step, rel))
    if len(planc_losses) != args.steps:
        failures.append('planc logged %d losses for %d steps' % (len(planc_losses), args.steps))
    print('%d AdamW steps: largest relative loss difference %.3g' % (args.steps, worst))

    if failures:
        print('torch_reference: MISMATCH with PyTorch:')
        for f in failures:
            print('  ' + f)
        return 1
    print('torch_reference: planc matches PyTorch (gradients within %g, losses within %g)' % (GRAD_TOL, LOSS_TOL))
    return 0


if __name__ == '__main__':
    sys.exit(main())
