#!/usr/bin/env python3
"""docs/memory.md's padded-shard table: docs/plans/gpt-7.5b.plan's model states
per rank under ZeRO-1, -2 and -3 at data-parallel degrees that divide none of
its dims, against Rajbhandari et al.'s formulas.

    zero-padding-table.py

One `planc check --json` per cell (`model_states` of the one stage); Ψ is the
trainable parameter count, the bf16 parameters of ZeRO-1 (held whole) over 2
bytes. A cell is the rank's bytes in GB and how far above the formula ZeRO's
per-tensor padding puts it. scripts/gen-docs.py runs it; the planc on PATH
answers.
"""
import concurrent.futures
import json
import os
import subprocess

PLAN = 'docs/plans/gpt-7.5b.plan'
DEGREES = [3, 6, 48, 1000]
FORMULA = {1: lambda psi, n: 4 * psi + 12 * psi / n,
           2: lambda psi, n: 2 * psi + 14 * psi / n,
           3: lambda psi, n: 16 * psi / n}


def model_states(case):
    n, zero = case
    args = ['planc', 'check', PLAN, '--json', '--budget', '100000GiB']
    for s in ('cluster.nodes=%d' % n, 'parallel.mesh.dp=%d' % n, 'train.global_batch=%d' % n,
              'parallel.zero=%d' % zero):
        args += ['--set', s]
    out = subprocess.run(args, check=True, stdout=subprocess.PIPE, text=True).stdout
    return json.loads(out)['stages'][0]['model_states']


def cell(total, formula):
    gb = total / 1e9
    over = 100 * (total / formula - 1)
    return '%s GB (+%s%%)' % ('%.2f' % gb if gb >= 1 else '%.3f' % gb, '%.2f' % over if over < 1 else '%.1f' % over)


def main():
    cases = [(n, zero) for n in DEGREES for zero in (1, 2, 3)]
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        states = dict(zip(cases, pool.map(model_states, cases)))
    psi = states[DEGREES[0], 1]['parameters'] // 2
    print('| N_d | ZeRO-1: 4Ψ + 12Ψ/N | ZeRO-2: 2Ψ + 14Ψ/N | ZeRO-3: 16Ψ/N |')
    print('|---|---|---|---|')
    for n in DEGREES:
        print('| %d | %s |' % (n, ' | '.join(cell(sum(states[n, z].values()), FORMULA[z](psi, n)) for z in (1, 2, 3))))
    print()
    print('Ψ = {:,} trainable parameters.'.format(psi))


if __name__ == '__main__':
    main()
