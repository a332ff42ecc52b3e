#!/usr/bin/env python3
"""docs/memory.md's 7B tables: examples/llama2-7b.plan on one device.

    llama7b-tables.py states        the model states against the lecture notes' 16 bytes per parameter
    llama7b-tables.py activations   activations and arena per sequence, micro-batch and recompute

Each measurement is one `planc check --json` of the plan on one device with
ZeRO and data parallelism off and a budget large enough that no fixes are
searched (ONE_DEVICE below). The recompute columns are the unfused layer the
notes count (`--fusion=none`: the s x s scores stored); the last column is
planc's default, flash attention. scripts/gen-docs.py runs it; the planc on
PATH answers.
"""
import concurrent.futures
import json
import os
import subprocess
import sys

PLAN = 'examples/llama2-7b.plan'
ONE_DEVICE = ['cluster.nodes=1', 'cluster.gpus_per_node=1', 'parallel.mesh=mesh(dp = 1)', 'parallel.zero=0']
GIB = 2**30


def measure(sets, dims=(), fusion='none'):
    args = ['planc', 'check', PLAN, '--json', '--budget', '1000GiB', '-w', '--fusion=' + fusion]
    for s in ONE_DEVICE + sets:
        args += ['--set', s]
    for d in dims:
        args += ['--dim', d]
    return json.loads(subprocess.run(args, check=True, stdout=subprocess.PIPE, text=True).stdout)


def states():
    j = measure(['parallel.recompute=none', 'train.global_batch=1'])
    ms = j['stages'][0]['model_states']

    def amount(b, gib=True):
        text = '{:,} B = {:.1f} GB'.format(b, b / 1e9)
        return text + (' ({:.1f} GiB)'.format(b / GIB) if gib else '')

    print('| item | bytes/parameter | the notes, 7B | planc, 6.74B (`--json` `model_states`) | recompute reduces it |')
    print('|---|---|---|---|---|')
    print('| parameters (bf16) | 2 | 14 GB | %s | no |' % amount(ms['parameters']))
    print('| gradients (bf16) | 2 | 14 GB | %s | no |' % amount(ms['gradients'], gib=False))
    print('| master + Adam m, v (f32) | 12 | 84 GB | %s | no |' % amount(ms['optimizer_state']))
    print('| activations | with b and s | not counted | the table below | yes |')


def activations():
    # (recompute, fusion) per column: the unfused layer's three, then flash
    # attention without recompute.
    columns = [('none', 'none'), ('selective', 'none'), ('full', 'none'), ('none', 'aggressive')]
    cases = [(s, b, c) for s in (1024, 2048, 4096) for b in (1, 4) for c in columns]
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        results = list(pool.map(lambda c: measure(['train.micro_batch=%d' % c[1], 'train.global_batch=%d' % c[1],
                                                   'parallel.recompute=%s' % c[2][0]], ['seq=%d' % c[0]],
                                                  fusion=c[2][1]), cases))
    cell = {}
    for (s, b, c), j in zip(cases, results):
        peak = j['stages'][j['peak_stage']]
        cell[s, b, c] = (peak['at_peak']['activations'] / GIB, j['peak_arena_bytes'] / GIB)
    print('| s × b | none: activations / arena | selective | full | flash attention (the default), none |')
    print('|---|---|---|---|---|')
    for s in (1024, 2048, 4096):
        for b in (1, 4):
            print('| %d × %d | %s |' % (s, b, ' | '.join('%.1f / %.1f' % cell[s, b, c] for c in columns)))


if __name__ == '__main__':
    if sys.argv[1:] == ['states']:
        states()
    elif sys.argv[1:] == ['activations']:
        activations()
    else:
        sys.exit(__doc__)
