"""GPT-2 124M in PyTorch on the CPU: the reference of bench/cpu-step.sh.

The model of bench/gpt2-124m-cpu.plan (batch 4, context 64, hidden 768, 12 heads, 12 layers,
vocabulary 50257, tied head, tanh GeLU, no dropout), AdamW with clipping, f32. Prints each
step's time and, last, `torch best step S s` over the steps after the first.

    /usr/bin/python3 bench/gpt2_torch.py [THREADS] [STEPS]
"""
import time, math, sys, torch, torch.nn as nn, torch.nn.functional as F
torch.manual_seed(0)
threads = int(sys.argv[1]) if len(sys.argv) > 1 else 2
steps = int(sys.argv[2]) if len(sys.argv) > 2 else 5
torch.set_num_threads(threads)
V, T, C, H, L, B = 50257, 64, 768, 12, 12, 4
class Block(nn.Module):
    def __init__(s):
        super().__init__()
        s.ln_1 = nn.LayerNorm(C); s.attn = nn.Linear(C, 3 * C); s.proj = nn.Linear(C, C)
        s.ln_2 = nn.LayerNorm(C); s.fc = nn.Linear(C, 4 * C); s.fc2 = nn.Linear(4 * C, C)
    def forward(s, x):
        q, k, v = s.attn(s.ln_1(x)).split(C, dim=2)
        q, k, v = [t.view(B, T, H, C // H).transpose(1, 2) for t in (q, k, v)]
        att = (q @ k.transpose(-2, -1)) / math.sqrt(C // H)
        att = att.masked_fill(torch.ones(T, T).tril() == 0, float('-inf')).softmax(-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, C)
        x = x + s.proj(y)
        return x + s.fc2(F.gelu(s.fc(s.ln_2(x)), approximate='tanh'))
class GPT(nn.Module):
    def __init__(s):
        super().__init__()
        s.wte = nn.Embedding(V, C); s.wpe = nn.Embedding(T, C)
        s.blocks = nn.ModuleList([Block() for _ in range(L)]); s.ln_f = nn.LayerNorm(C)
    def forward(s, idx, targets):
        x = s.wte(idx) + s.wpe(torch.arange(T))
        for b in s.blocks: x = b(x)
        logits = s.ln_f(x) @ s.wte.weight.t()
        return F.cross_entropy(logits.view(-1, V), targets.view(-1))
m = GPT()
for p in m.parameters():  # GPT-2's initialisation (std 0.02); the time does not depend on it
    if p.dim() > 1: nn.init.normal_(p, std=0.02)
# nanoGPT's parameter groups, as planc decays by default: tensors of 2+ dims only.
groups = [{'params': [p for p in m.parameters() if p.dim() >= 2], 'weight_decay': 0.1},
          {'params': [p for p in m.parameters() if p.dim() < 2], 'weight_decay': 0.0}]
opt = torch.optim.AdamW(groups, lr=6e-4, betas=(0.9, 0.95), eps=1e-8)
idx = torch.randint(0, V, (B, T)); tgt = torch.randint(0, V, (B, T))
times = []
for s in range(steps):
    t0 = time.perf_counter()
    opt.zero_grad(set_to_none=True)
    loss = m(idx, tgt); loss.backward()
    torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
    opt.step()
    times.append(time.perf_counter() - t0)
    print('step %d loss %.4f %.3f s' % (s, loss.item(), times[-1]), flush=True)
print('torch best step %.3f s' % min(times[1:]))
