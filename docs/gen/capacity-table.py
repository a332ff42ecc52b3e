#!/usr/bin/env python3
"""docs/memory.md's capacity exercise: examples/13b-8gpu.plan under each option.

    capacity-table.py

One `planc check examples/13b-8gpu.plan --json --budget 100000GiB --set ...` per
row (the large budget keeps the fixes out: only the plan's own ledger and cost
are wanted), printed as a markdown table: the model states of the largest
stage, the activations and the arena at the peak, whether that fits the
device, the bytes the busiest rank sends per step, the FLOPs recompute adds
and the pipeline bubble. The rows run side by side. They are the unfused
layer the notes count (`--fusion=none`: the s x s scores stored, selective
recompute recomputing them), but for the last, planc's default: flash
attention. scripts/gen-docs.py runs it; the planc on PATH answers.
"""
import concurrent.futures
import json
import os
import subprocess

PLAN = 'examples/13b-8gpu.plan'
DEVICE_GIB = 80  # the plan's a100_80gb
GIB = 2**30

# (label, --set values); the plan itself is dp = 8, zero 3, recompute selective.
ROWS = [('dp = 8, zero %d, recompute %s' % (z, r), ['parallel.zero=%d' % z, 'parallel.recompute=%s' % r])
        for z in range(4) for r in ('none', 'selective', 'full')]
ROWS += [
    ('tp = 8, sequence parallel, recompute none',
     ['parallel.mesh=mesh(tp = 8)', 'parallel.zero=0', 'parallel.sequence_parallel=true', 'parallel.recompute=none']),
    ('tp = 8, sequence parallel, recompute selective',
     ['parallel.mesh=mesh(tp = 8)', 'parallel.zero=0', 'parallel.sequence_parallel=true']),
    ('dp = 4 × tp = 2, zero 1, recompute selective', ['parallel.mesh=mesh(dp = 4, tp = 2)', 'parallel.zero=1']),
    ('pp = 8, 1F1B, recompute selective', ['parallel.mesh=mesh(pp = 8)', 'parallel.zero=0']),
    ('dp = 2 × pp = 4, zero 1, 1F1B, recompute selective', ['parallel.mesh=mesh(dp = 2, pp = 4)', 'parallel.zero=1']),
]
THE_PLAN = 'dp = 8, zero 3, recompute selective'
FLASH = 'dp = 8, zero 3, flash attention (the default fusion), recompute none'
ROWS += [(FLASH, ['parallel.recompute=none'])]


def measure(label_sets):
    label, sets = label_sets
    args = ['planc', 'check', PLAN, '--json', '--budget', '100000GiB', '-w']
    if label != FLASH:
        args += ['--fusion=none']
    for s in sets:
        args += ['--set', s]
    return json.loads(subprocess.run(args, check=True, stdout=subprocess.PIPE, text=True).stdout)


def row(label, j):
    peak = j['stages'][j['peak_stage']]
    states = max(sum(s['model_states'].values()) for s in j['stages'])
    arena = j['peak_arena_bytes']
    cost = j['cost']
    pflop = cost['recompute_flops'] / 1e15
    bubble = cost['bubble']
    if label == THE_PLAN:
        label = '**%s (the plan)**' % label
    return '| %s | %.1f | %.1f | %.1f | %s | %.0f | %s | %s |' % (
        label, states / GIB, peak['at_peak']['activations'] / GIB, arena / GIB,
        'yes' if arena <= DEVICE_GIB * GIB else 'no', cost['comm_bytes'] / GIB,
        '%.2f' % pflop if pflop else '0', '%.1f%%' % (100 * bubble) if bubble else '0')


def main():
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        results = list(pool.map(measure, ROWS))
    print('| plan | model states GiB | activations GiB | arena GiB | fits %d GiB | sent GiB/step '
          '| recompute PFLOP | bubble |' % DEVICE_GIB)
    print('|---|---|---|---|---|---|---|---|')
    for (label, _), j in zip(ROWS, results):
        print(row(label, j))


if __name__ == '__main__':
    main()
