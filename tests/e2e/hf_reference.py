"""Hugging Face weights in and out of a compiled plan, under every layout, against PyTorch.

    hf_reference.py --planc build/bin/planc --family llama|qwen2|gpt2|neox --plan PLAN
                    --workdir DIR [--layouts one,dp2,tp2,pp2,dp2tp2] [--steps 20]

The reference is written from Hugging Face's conventions, not from planc: the models are
transformers' LlamaForCausalLM, Qwen2ForCausalLM, GPT2LMHeadModel and GPTNeoXForCausalLM as their
modeling code computes them (nn.Linear's [out, in] weights, rotate_half RoPE with cos/sin of
cat(freqs, freqs), repeat_kv for grouped heads, GPT-2's Conv1D [in, out] weights with c_attn split
q | k | v, gelu_new, a head tied to the embedding; NeoX's query_key_value of [heads, 3, d] rows,
rotary on rotary_pct of each head, the parallel residual), built from the config.json planc writes for
the plan's name map (as from_pretrained builds a model from its config), and trained with
torch.optim.AdamW over the parameter groups of transformers' Trainer (weight decay on every
parameter but biases and LayerNorm / RMSNorm weights) and clip_grad_norm_, in f64.

The weights start as a safetensors file of Hugging Face names (random, f32, with the extras
real files hold: GPT-2's mask buffers, a position table longer than the plan's context, a
rotary table, a tied lm_head equal to the embedding). For each layout (one rank; under mpirun
dp 2, tp 2, pp 2 and dp 2 x tp 2) the plan is built and

  round trip  --init-from the file, --steps 0 writes the weights as a checkpoint, and
              `planc convert --to` writes them back under the same names: every tensor the
              map names is byte-equal to the file's (GPT-2's position table: its first rows)
  train       --init-from the file, 20 steps of AdamW with weight decay on the batches the
              plan draws (planc run --dump writes them): every step's loss within 1e-4
              relative of torch's; the checkpoint after the last step, written back under
              Hugging Face's names, holds torch's trained weights within WEIGHT_TOL

and config.json must describe the model the reference was meant to be (REFERENCE_CONFIG).
Prints one PASS or FAIL line per layout; exits 1 on a mismatch, 2 when it cannot run.
"""
import argparse
import json
import math
import os
import re
import struct
import subprocess
import sys

import numpy as np
import torch
import torch.nn.functional as F

LOSS_TOL = 1e-4
# f32 against f64 after 20 AdamW steps: a tensor within WEIGHT_TOL of its largest value, or
# within 1% of the farthest AdamW can move a weight (lr x steps): where a gradient is near zero
# by symmetry (a key bias: softmax ignores what it adds to every score but for RoPE's turn),
# Adam's normalisation turns f32's rounding into lr-sized steps of either sign. A misplaced or
# mistransposed tensor, or a decay applied where it should not be, is far above both.
WEIGHT_TOL = 1e-4
TRAVEL_TOL = 0.01
MPIRUN = ['mpirun', '--oversubscribe']
LAYOUTS = {
    'one': (1, 'mesh(dp = 1)', []),
    'dp2': (2, 'mesh(dp = 2)', []),
    'tp2': (2, 'mesh(tp = 2)', []),
    'pp2': (2, 'mesh(pp = 2)', ['parallel.pipeline=1f1b(micro_batches = 4)']),
    'dp2tp2': (4, 'mesh(dp = 2, tp = 2)', []),
}
# What each test plan's config.json must say: the model the reference means.
REFERENCE_CONFIG = {
    'llama': {'model_type': 'llama', 'vocab_size': 98, 'hidden_size': 48, 'intermediate_size': 80,
              'num_hidden_layers': 2, 'num_attention_heads': 6, 'num_key_value_heads': 2, 'rms_norm_eps': 1e-5,
              'rope_theta': 10000.0, 'tie_word_embeddings': False, 'hidden_act': 'silu'},
    'qwen2': {'model_type': 'qwen2', 'vocab_size': 64, 'hidden_size': 40, 'intermediate_size': 72,
              'num_hidden_layers': 2, 'num_attention_heads': 4, 'num_key_value_heads': 2, 'rms_norm_eps': 1e-6,
              'rope_theta': 1e6, 'tie_word_embeddings': True, 'hidden_act': 'silu'},
    'gpt2': {'model_type': 'gpt2', 'vocab_size': 72, 'n_embd': 48, 'n_layer': 2, 'n_head': 4, 'n_positions': 16,
             'n_inner': 192, 'layer_norm_epsilon': 1e-5, 'activation_function': 'gelu_new'},
    'neox': {'model_type': 'gpt_neox', 'vocab_size': 80, 'hidden_size': 64, 'num_hidden_layers': 2,
             'num_attention_heads': 4, 'intermediate_size': 256, 'rotary_pct': 0.25, 'rotary_emb_base': 10000.0,
             'layer_norm_eps': 1e-5, 'use_parallel_residual': True, 'hidden_act': 'gelu_new',
             'tie_word_embeddings': False},
}
MAP_NAMES = {'llama': 'hf-llama', 'qwen2': 'hf-qwen2', 'gpt2': 'hf-gpt2', 'neox': 'hf-neox'}


class CannotRun(Exception):
    pass


# ---------------------------------------------------------------------------
# safetensors with numpy
# ---------------------------------------------------------------------------

DTYPES = {'F64': '<f8', 'F32': '<f4', 'I32': '<i4', 'I64': '<i8', 'U16': '<u2', 'U32': '<u4'}


def read_safetensors(path, raw=False):
    data = open(path, 'rb').read()
    n = struct.unpack('<Q', data[:8])[0]
    header = json.loads(data[8:8 + n])
    out = {}
    for name, info in header.items():
        if name == '__metadata__':
            continue
        a, b = info['data_offsets']
        blob = data[8 + n + a:8 + n + b]
        out[name] = (info['dtype'], info['shape'], blob) if raw else \
            np.frombuffer(blob, dtype=DTYPES[info['dtype']]).reshape(info['shape'])
    return out


def write_safetensors(path, tensors):
    header, data = {'__metadata__': {'format': 'pt'}}, b''
    for name, a in sorted(tensors.items()):
        b = np.ascontiguousarray(a, dtype=np.float32).tobytes()
        header[name] = {'dtype': 'F32', 'shape': list(a.shape), 'data_offsets': [len(data), len(data) + len(b)]}
        data += b
    h = json.dumps(header).encode()
    h += b' ' * (-len(h) % 8)
    with open(path, 'wb') as f:
        f.write(struct.pack('<Q', len(h)) + h + data)


# ---------------------------------------------------------------------------
# Hugging Face weights, as the hub's files hold them
# ---------------------------------------------------------------------------

def hf_weights(family, c, rng):
    """Random weights under transformers' state_dict names and shapes, with the file's extras;
    returns (tensors, names the map must skip)."""
    w = {}

    def normal(shape, std=0.05, mean=0.0):
        return (rng.standard_normal(shape) * std + mean).astype(np.float32)

    if family in ('llama', 'qwen2'):
        h, v, f = c['hidden_size'], c['vocab_size'], c['intermediate_size']
        d = h // c['num_attention_heads']
        kv = c['num_key_value_heads'] * d
        w['model.embed_tokens.weight'] = normal((v, h), 0.3)
        for i in range(c['num_hidden_layers']):
            p = 'model.layers.%d.' % i
            w[p + 'input_layernorm.weight'] = normal((h,), 0.1, 1.0)
            w[p + 'post_attention_layernorm.weight'] = normal((h,), 0.1, 1.0)
            w[p + 'self_attn.q_proj.weight'] = normal((h, h), 0.15)
            w[p + 'self_attn.k_proj.weight'] = normal((kv, h), 0.15)
            w[p + 'self_attn.v_proj.weight'] = normal((kv, h), 0.15)
            w[p + 'self_attn.o_proj.weight'] = normal((h, h), 0.15)
            if family == 'qwen2':
                w[p + 'self_attn.q_proj.bias'] = normal((h,), 0.1)
                w[p + 'self_attn.k_proj.bias'] = normal((kv,), 0.1)
                w[p + 'self_attn.v_proj.bias'] = normal((kv,), 0.1)
            w[p + 'mlp.gate_proj.weight'] = normal((f, h), 0.15)
            w[p + 'mlp.up_proj.weight'] = normal((f, h), 0.15)
            w[p + 'mlp.down_proj.weight'] = normal((h, f), 0.15)
        w['model.norm.weight'] = normal((h,), 0.1, 1.0)
        extras = {'model.layers.0.self_attn.rotary_emb.inv_freq': np.ones(d // 2, np.float32)}
        if c['tie_word_embeddings']:
            extras['lm_head.weight'] = w['model.embed_tokens.weight'].copy()
        else:
            w['lm_head.weight'] = normal((v, h), 0.15)
        return w, extras
    if family == 'neox':
        h, v, f = c['hidden_size'], c['vocab_size'], c['intermediate_size']
        w['gpt_neox.embed_in.weight'] = normal((v, h), 0.3)
        for i in range(c['num_hidden_layers']):
            p = 'gpt_neox.layers.%d.' % i
            for ln in ('input_layernorm', 'post_attention_layernorm'):
                w[p + ln + '.weight'] = normal((h,), 0.1, 1.0)
                w[p + ln + '.bias'] = normal((h,), 0.05)
            w[p + 'attention.query_key_value.weight'] = normal((3 * h, h), 0.15)
            w[p + 'attention.query_key_value.bias'] = normal((3 * h,), 0.05)
            w[p + 'attention.dense.weight'] = normal((h, h), 0.15)
            w[p + 'attention.dense.bias'] = normal((h,), 0.05)
            w[p + 'mlp.dense_h_to_4h.weight'] = normal((f, h), 0.15)
            w[p + 'mlp.dense_h_to_4h.bias'] = normal((f,), 0.05)
            w[p + 'mlp.dense_4h_to_h.weight'] = normal((h, f), 0.15)
            w[p + 'mlp.dense_4h_to_h.bias'] = normal((h,), 0.05)
        w['gpt_neox.final_layer_norm.weight'] = normal((h,), 0.1, 1.0)
        w['gpt_neox.final_layer_norm.bias'] = normal((h,), 0.05)
        w['embed_out.weight'] = normal((v, h), 0.15)
        rot = int(h // c['num_attention_heads'] * c['rotary_pct'])
        return w, {'gpt_neox.layers.%d.attention.rotary_emb.inv_freq' % i: np.ones(rot // 2, np.float32)
                   for i in range(c['num_hidden_layers'])}
    h, v, s = c['n_embd'], c['vocab_size'], c['n_positions']
    w['wte.weight'] = normal((v, h), 0.3)
    w['wpe.weight'] = normal((2 * s, h), 0.1)  # longer than the plan's context: the map crops it
    for i in range(c['n_layer']):
        p = 'h.%d.' % i
        for ln in ('ln_1', 'ln_2'):
            w[p + ln + '.weight'] = normal((h,), 0.1, 1.0)
            w[p + ln + '.bias'] = normal((h,), 0.05)
        w[p + 'attn.c_attn.weight'] = normal((h, 3 * h), 0.15)
        w[p + 'attn.c_attn.bias'] = normal((3 * h,), 0.05)
        w[p + 'attn.c_proj.weight'] = normal((h, h), 0.15)
        w[p + 'attn.c_proj.bias'] = normal((h,), 0.05)
        w[p + 'mlp.c_fc.weight'] = normal((h, c['n_inner']), 0.15)
        w[p + 'mlp.c_fc.bias'] = normal((c['n_inner'],), 0.05)
        w[p + 'mlp.c_proj.weight'] = normal((c['n_inner'], h), 0.15)
        w[p + 'mlp.c_proj.bias'] = normal((h,), 0.05)
    w['ln_f.weight'] = normal((h,), 0.1, 1.0)
    w['ln_f.bias'] = normal((h,), 0.05)
    extras = {'h.%d.attn.bias' % i: np.tril(np.ones((s, s), np.float32)).reshape(1, 1, s, s)
              for i in range(c['n_layer'])}
    extras['lm_head.weight'] = w['wte.weight'].copy()
    return w, extras


# ---------------------------------------------------------------------------
# The models, as transformers' modeling code computes them
# ---------------------------------------------------------------------------

def rms_norm(x, weight, eps):  # LlamaRMSNorm / Qwen2RMSNorm
    return weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))


def rotate_half(x):
    x1, x2 = x[..., :x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def causal_attention(q, k, v):  # [b, heads, s, d]
    s, d = q.shape[2], q.shape[3]
    scores = q @ k.transpose(2, 3) / math.sqrt(d)
    mask = torch.triu(torch.ones(s, s, dtype=torch.bool), 1)
    return torch.softmax(scores.masked_fill(mask, float('-inf')), dim=-1) @ v


def llama_logits(W, c, tokens):
    b, s = tokens.shape
    heads, kvh = c['num_attention_heads'], c['num_key_value_heads']
    d = c['hidden_size'] // heads
    eps = c['rms_norm_eps']
    inv_freq = 1.0 / (c['rope_theta'] ** (torch.arange(0, d, 2, dtype=torch.float64) / d))
    freqs = torch.arange(s, dtype=torch.float64)[:, None] * inv_freq[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos(), emb.sin()
    x = W['model.embed_tokens.weight'][tokens]
    for i in range(c['num_hidden_layers']):
        p = 'model.layers.%d.' % i
        hs = rms_norm(x, W[p + 'input_layernorm.weight'], eps)

        def proj(name, n):
            y = F.linear(hs, W[p + 'self_attn.%s_proj.weight' % name], W.get(p + 'self_attn.%s_proj.bias' % name))
            return y.view(b, s, n, d).transpose(1, 2)
        q, k, v = proj('q', heads), proj('k', kvh), proj('v', kvh)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        rep = heads // kvh  # repeat_kv
        k = k[:, :, None].expand(b, kvh, rep, s, d).reshape(b, heads, s, d)
        v = v[:, :, None].expand(b, kvh, rep, s, d).reshape(b, heads, s, d)
        ctx = causal_attention(q, k, v).transpose(1, 2).reshape(b, s, heads * d)
        x = x + F.linear(ctx, W[p + 'self_attn.o_proj.weight'])
        hs = rms_norm(x, W[p + 'post_attention_layernorm.weight'], eps)
        gate = F.silu(F.linear(hs, W[p + 'mlp.gate_proj.weight'])) * F.linear(hs, W[p + 'mlp.up_proj.weight'])
        x = x + F.linear(gate, W[p + 'mlp.down_proj.weight'])
    x = rms_norm(x, W['model.norm.weight'], eps)
    head = W['model.embed_tokens.weight'] if c['tie_word_embeddings'] else W['lm_head.weight']
    return F.linear(x, head)


def gelu_new(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


def gpt2_logits(W, c, tokens):
    b, s = tokens.shape
    h, heads, eps = c['n_embd'], c['n_head'], c['layer_norm_epsilon']
    d = h // heads
    x = W['wte.weight'][tokens] + W['wpe.weight'][:s]
    for i in range(c['n_layer']):
        p = 'h.%d.' % i
        a = F.layer_norm(x, (h,), W[p + 'ln_1.weight'], W[p + 'ln_1.bias'], eps)
        qkv = a @ W[p + 'attn.c_attn.weight'] + W[p + 'attn.c_attn.bias']  # Conv1D: x @ w + b
        q, k, v = (t.view(b, s, heads, d).transpose(1, 2) for t in qkv.split(h, dim=2))
        ctx = causal_attention(q, k, v).transpose(1, 2).reshape(b, s, h)
        x = x + ctx @ W[p + 'attn.c_proj.weight'] + W[p + 'attn.c_proj.bias']
        m = F.layer_norm(x, (h,), W[p + 'ln_2.weight'], W[p + 'ln_2.bias'], eps)
        m = gelu_new(m @ W[p + 'mlp.c_fc.weight'] + W[p + 'mlp.c_fc.bias'])
        x = x + m @ W[p + 'mlp.c_proj.weight'] + W[p + 'mlp.c_proj.bias']
    x = F.layer_norm(x, (h,), W['ln_f.weight'], W['ln_f.bias'], eps)
    return F.linear(x, W['wte.weight'])  # GPT2LMHeadModel ties lm_head to wte


def weight_parts(family, c, name, got, want):
    """The parts of a trained tensor compared apart, where a part's gradient is exactly zero and
    f32's rounding moves it where f64 does not: the key bias (softmax ignores what it adds to every
    score of a row). GPT-2 has no RoPE to turn it; NeoX turns a quarter of it, which moves a little."""
    if family == 'gpt2' and name.endswith('attn.c_attn.bias'):  # q | k | v
        g, w = got.reshape(3, -1), want.reshape(3, -1)
    elif family == 'neox' and name.endswith('query_key_value.bias'):  # rows [heads, 3, d]
        g = got.reshape(c['num_attention_heads'], 3, -1).transpose(1, 0, 2)
        w = want.reshape(c['num_attention_heads'], 3, -1).transpose(1, 0, 2)
    else:
        return {name: (got, want, False)}
    return {name + '[q]': (g[0], w[0], False), name + '[k]': (g[1], w[1], True), name + '[v]': (g[2], w[2], False)}


def neox_logits(W, c, tokens):
    """GPTNeoXForCausalLM: query_key_value's rows are [heads, 3, d]; rotary on the first
    rotary_pct of each head; with use_parallel_residual, x + attention(ln_1(x)) + mlp(ln_2(x))."""
    b, s = tokens.shape
    h, heads, eps = c['hidden_size'], c['num_attention_heads'], c['layer_norm_eps']
    d = h // heads
    rot = int(d * c['rotary_pct'])
    inv_freq = 1.0 / (c['rotary_emb_base'] ** (torch.arange(0, rot, 2, dtype=torch.float64) / rot))
    freqs = torch.arange(s, dtype=torch.float64)[:, None] * inv_freq[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos(), emb.sin()

    def rotary(t):
        return torch.cat((t[..., :rot] * cos + rotate_half(t[..., :rot]) * sin, t[..., rot:]), dim=-1)
    act = {'gelu_new': gelu_new, 'gelu': F.gelu}[c['hidden_act']]
    x = W['gpt_neox.embed_in.weight'][tokens]
    for i in range(c['num_hidden_layers']):
        p = 'gpt_neox.layers.%d.' % i
        a = F.layer_norm(x, (h,), W[p + 'input_layernorm.weight'], W[p + 'input_layernorm.bias'], eps)
        qkv = F.linear(a, W[p + 'attention.query_key_value.weight'], W[p + 'attention.query_key_value.bias'])
        qkv = qkv.view(b, s, heads, 3 * d).permute(0, 2, 1, 3)
        q, k, v = rotary(qkv[..., :d]), rotary(qkv[..., d:2 * d]), qkv[..., 2 * d:]
        ctx = causal_attention(q, k, v).permute(0, 2, 1, 3).reshape(b, s, h)
        attn = F.linear(ctx, W[p + 'attention.dense.weight'], W[p + 'attention.dense.bias'])
        m = F.layer_norm(x, (h,), W[p + 'post_attention_layernorm.weight'], W[p + 'post_attention_layernorm.bias'], eps)
        m = F.linear(act(F.linear(m, W[p + 'mlp.dense_h_to_4h.weight'], W[p + 'mlp.dense_h_to_4h.bias'])),
                     W[p + 'mlp.dense_4h_to_h.weight'], W[p + 'mlp.dense_4h_to_h.bias'])
        x = x + attn + m  # use_parallel_residual (REFERENCE_CONFIG asks for it)
    x = F.layer_norm(x, (h,), W['gpt_neox.final_layer_norm.weight'], W['gpt_neox.final_layer_norm.bias'], eps)
    return F.linear(x, W['embed_out.weight'])


def trainer_decays(name):
    """transformers' Trainer: no weight decay for biases and LayerNorm / RMSNorm weights."""
    return not (name.endswith('bias') or 'norm' in name or 'layernorm' in name or '.ln_' in name or
                name.startswith('ln_'))


def torch_reference(family, c, weights, batches, opt):
    W = {n: torch.tensor(a.astype(np.float64), requires_grad=True) for n, a in weights.items()}
    if family == 'gpt2':  # the plan's context: GPT2Model reads wpe's first s rows, so those train
        W['wpe.weight'] = torch.tensor(weights['wpe.weight'][:c['n_positions']].astype(np.float64),
                                       requires_grad=True)
    groups = [{'params': [W[n] for n in sorted(W) if trainer_decays(n)], 'weight_decay': opt['weight_decay']},
              {'params': [W[n] for n in sorted(W) if not trainer_decays(n)], 'weight_decay': 0.0}]
    optim = torch.optim.AdamW(groups, lr=opt['lr'], betas=opt['betas'], eps=opt['eps'])
    losses = []
    logits_of = {'gpt2': gpt2_logits, 'neox': neox_logits}.get(family, llama_logits)
    for tokens, targets in batches:
        optim.zero_grad()
        logits = logits_of(W, c, tokens)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(list(W.values()), opt['clip'])
        optim.step()
        losses.append(loss.item())
    return losses, {n: t.detach().numpy() for n, t in W.items()}


# ---------------------------------------------------------------------------
# planc
# ---------------------------------------------------------------------------

def run(cmd, log, cwd=None, timeout=600):
    with open(log, 'w') as f:
        r = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, cwd=cwd, timeout=timeout)
    if r.returncode != 0:
        tail = open(log).read()[-1500:]
        raise RuntimeError('%s exited with %d:\n%s' % (' '.join(cmd), r.returncode, tail))


def plan_config(planc, plan, work):
    """The config.json the plan's name map writes (planc emit --emit=names)."""
    log = os.path.join(work, 'names.txt')
    run([planc, 'emit', '--emit=names', plan], log)
    text = open(log).read()
    if 'config.json:\n' not in text:
        raise CannotRun('planc emit --emit=names %s printed no config.json' % plan)
    return json.loads(text.split('config.json:\n', 1)[1])


def optimizer_settings(plan):
    """lr, betas, eps and weight decay of the plan's `optimizer adamw(...)`, and its clipping."""
    text = open(plan).read()
    call = re.search(r'optimizer\s+adamw\(([^)]*\([^)]*\)[^)]*|[^)]*)\)', text)
    clip = re.search(r'\bclip_grad_norm\s*=\s*([0-9.eE+-]+)', text)
    if not call or not clip:
        raise CannotRun('the plan has no optimizer adamw(...) and clip_grad_norm')
    args = call.group(1)

    def number(key):
        m = re.search(r'\b%s\s*=\s*([0-9.eE+-]+)' % key, args)
        if not m:
            raise CannotRun('the plan\'s adamw has no %s' % key)
        return float(m.group(1))
    betas = re.search(r'betas\s*=\s*\(([0-9.]+),\s*([0-9.]+)\)', args)
    return {'lr': number('lr'), 'weight_decay': number('weight_decay'), 'eps': number('eps'),
            'clip': float(clip.group(1)), 'betas': (float(betas.group(1)), float(betas.group(2)))}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--planc', required=True)
    ap.add_argument('--family', required=True, choices=sorted(REFERENCE_CONFIG))
    ap.add_argument('--plan', required=True)
    ap.add_argument('--workdir', required=True)
    ap.add_argument('--layouts', default='one,dp2,tp2,pp2,dp2tp2')
    ap.add_argument('--steps', type=int, default=20)
    args = ap.parse_args()
    torch.set_default_dtype(torch.float64)
    work = os.path.abspath(args.workdir)
    os.makedirs(work, exist_ok=True)
    family, steps = args.family, args.steps
    map_name = MAP_NAMES[family]

    c = plan_config(args.planc, args.plan, work)
    wrong = {k: (c.get(k), v) for k, v in REFERENCE_CONFIG[family].items()
             if not (c.get(k) == v or (isinstance(v, float) and isinstance(c.get(k), (int, float))
                                       and abs(c[k] - v) <= 1e-12 * abs(v)))}
    if wrong:
        print('FAIL %s config.json: %s (planc, expected)' % (family, wrong))
        return 1
    print('config.json of %s: %s' % (family, json.dumps({k: c[k] for k in sorted(REFERENCE_CONFIG[family])})))

    rng = np.random.default_rng(2024)
    weights, extras = hf_weights(family, c, rng)
    hf_file = os.path.join(work, 'hf.safetensors')
    write_safetensors(hf_file, {**weights, **extras})

    # The batches the plan draws: the interpreter writes every step's.
    dump = os.path.join(work, 'dump')
    run([args.planc, 'run', args.plan, '--target=interp', '--steps', str(steps), '--dump', dump],
        os.path.join(work, 'dump.log'))
    batches = []
    for step in range(steps):
        b = read_safetensors(os.path.join(dump, 'batch-%d.safetensors' % step))
        batches.append((torch.tensor(b['tokens'].astype(np.int64)), torch.tensor(b['targets'].astype(np.int64))))
    opt = optimizer_settings(args.plan)
    losses, trained = torch_reference(family, c, weights, batches, opt)
    print('torch (f64, Hugging Face conventions): losses %.6f -> %.6f over %d steps' % (losses[0], losses[-1], steps))

    source = read_safetensors(hf_file, raw=True)
    failed = False
    for layout in args.layouts.split(','):
        ranks, mesh, extra = LAYOUTS[layout]
        d = os.path.join(work, layout)
        os.makedirs(d, exist_ok=True)
        sets = ['--set', 'parallel.mesh=' + mesh, '--set', 'cluster.gpus_per_node=%d' % ranks]
        for e in extra:
            sets += ['--set', e]
        exe = os.path.join(d, 'model')
        problems = []
        try:
            run([args.planc, 'build', args.plan, '-O1', '-o', exe] + sets, os.path.join(d, 'build.log'))
            launch = (MPIRUN + ['-np', str(ranks)] if ranks > 1 else []) + [exe, '--init-from', hf_file]
            # Round trip: the weights as loaded, written back under the file's names.
            run(launch + ['--steps', '0', '--checkpoint-dir', os.path.join(d, 'rt')], os.path.join(d, 'rt.log'), cwd=d)
            out = os.path.join(d, 'rt-hf', 'model.safetensors')
            os.makedirs(os.path.dirname(out), exist_ok=True)
            run([args.planc, 'convert', os.path.join(d, 'rt'), '--to', map_name, '-o', out],
                os.path.join(d, 'rt-convert.log'))
            back = read_safetensors(out, raw=True)
            if set(back) != set(weights):
                problems.append('round trip names: %s' % sorted(set(back) ^ set(weights)))
            for name, (dtype, shape, blob) in back.items():
                want = source.get(name)
                if want is None:
                    continue
                if name == 'wpe.weight':  # cropped to the plan's context
                    rows = c['n_positions']
                    want = (want[0], [rows] + want[1][1:], want[2][:rows * int(np.prod(want[1][1:])) * 4])
                if (dtype, list(shape), blob) != (want[0], list(want[1]), want[2]):
                    problems.append('round trip: %s differs' % name)
            if json.load(open(os.path.join(d, 'rt-hf', 'config.json'))) != c:
                problems.append('round trip: config.json is not the plan\'s')
            # Training: the losses, then the trained weights under Hugging Face's names.
            metrics = os.path.join(d, 'metrics.jsonl')
            run(launch + ['--steps', str(steps), '--metrics', metrics, '--checkpoint-every', str(steps),
                          '--checkpoint-dir', os.path.join(d, 'ck')], os.path.join(d, 'train.log'), cwd=d)
            got = [json.loads(line)['loss'] for line in open(metrics)]
            worst_loss = max(abs(a - b) / abs(b) for a, b in zip(got, losses)) if len(got) == steps else float('inf')
            if worst_loss > LOSS_TOL:
                problems.append('losses: largest relative difference %.2e (%d of %d steps)' % (worst_loss, len(got), steps))
            out = os.path.join(d, 'trained-hf', 'model.safetensors')
            os.makedirs(os.path.dirname(out), exist_ok=True)
            run([args.planc, 'convert', os.path.join(d, 'ck'), '--to', map_name, '-o', out],
                os.path.join(d, 'trained-convert.log'))
            final = read_safetensors(out)
            worst_weight, worst_name = 0.0, ''
            travel = TRAVEL_TOL * opt['lr'] * steps
            for name, t in trained.items():
                for part, (got_part, want_part, free) in weight_parts(family, c, name, final[name], t).items():
                    diff = float(np.max(np.abs(got_part.astype(np.float64) - want_part)))
                    # A part whose gradient is exactly zero moves only by rounding noise, which Adam
                    # scales up to lr a step: bounded by the farthest it can go.
                    allowed = opt['lr'] * steps if free else max(WEIGHT_TOL * float(np.max(np.abs(want_part))), travel)
                    if diff / allowed > worst_weight:
                        worst_weight, worst_name = diff / allowed, part
            if worst_weight > 1:
                problems.append('trained weights: %s differs by %.2f of its tolerance' % (worst_name, worst_weight))
        except (RuntimeError, subprocess.TimeoutExpired, KeyError, ValueError) as e:
            problems.append(str(e))
            worst_loss = worst_weight = float('nan')
        verdict = 'FAIL' if problems else 'PASS'
        failed |= bool(problems)
        print('%s %s %s (%d rank%s): round trip byte-equal, losses within %.1e (largest %.2e), '
              'trained weights within tolerance (largest %.2f of it)%s'
              % (verdict, family, layout, ranks, '' if ranks == 1 else 's', LOSS_TOL, worst_loss,
                 worst_weight, ''.join('\n  ' + p for p in problems)))
    return 1 if failed else 0


if __name__ == '__main__':
    try:
        sys.exit(main())
    except CannotRun as e:
        print('CANNOT RUN: %s' % e)
        sys.exit(2)
