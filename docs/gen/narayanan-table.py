#!/usr/bin/env python3
"""docs/cost.md's agreement table: the predicted hardware FLOP/s per GPU of
each row of Narayanan et al. 2021, Table 1 (GPT on A100s, 1.7B to 1T
parameters), beside the published figure.

    narayanan-table.py

One `planc check --json` of tests/lit/cost/Inputs/megatron-gpt.plan per row,
the row's dims with --dim and its mesh and batch with --set, as the tests
tests/lit/cost/narayanan-table1-*.test run them. scripts/gen-docs.py runs it;
the planc on PATH answers.
"""
import json
import subprocess

PLAN = 'tests/lit/cost/Inputs/megatron-gpt.plan'
# params (B), heads, hidden, layers, t, p, GPUs, batch, published TFLOP/s, micro-batch
ROWS = [
    ('1.7', 24, 2304, 24, 1, 1, 32, 512, 137, 4),
    ('3.6', 32, 3072, 30, 2, 1, 64, 512, 138, 4),
    ('7.5', 32, 4096, 36, 4, 1, 128, 512, 142, 4),
    ('18.4', 48, 6144, 40, 8, 1, 256, 1024, 135, 4),
    ('39.1', 64, 8192, 48, 8, 2, 512, 1536, 138, 2),
    ('76.1', 80, 10240, 60, 8, 4, 1024, 1792, 140, 2),
    ('145.6', 96, 12288, 80, 8, 8, 1536, 2304, 148, 1),
    ('310.1', 128, 16384, 96, 8, 16, 1920, 2160, 155, 1),
    ('529.6', 128, 20480, 105, 8, 35, 2520, 2520, 163, 1),
    ('1008', 160, 25600, 128, 8, 64, 3072, 3072, 163, 1),
]


def main():
    print('| parameters (B) | t | p | GPUs | batch | published TFLOP/s | predicted | error | MFU | bubble |')
    print('|---|---|---|---|---|---|---|---|---|---|')
    for params, a, h, l, t, p, n, batch, published, mb in ROWS:
        dp = n // (t * p)
        out = subprocess.run(
            ['planc', 'check', '--json', PLAN, '--dim', 'hidden=%d' % h, '--dim', 'heads=%d' % a,
             '--dim', 'layers=%d' % l, '--set', 'parallel.mesh=mesh(dp = %d, pp = %d, tp = %d)' % (dp, p, t),
             '--set', 'cluster.nodes=%d' % (n // 8), '--set', 'train.global_batch=%d' % batch,
             '--set', 'train.micro_batch=%d' % mb],
            check=True, stdout=subprocess.PIPE, text=True).stdout
        time = json.loads(out)['time']
        predicted = time['hardware_flops'] / time['step_s'] / time['devices'] / 1e12
        print('| %s | %d | %d | %d | %d | %d | %.1f | %+.1f%% | %.1f%% | %.1f%% |' % (
            params, t, p, n, batch, published, predicted, (predicted / published - 1) * 100, time['mfu'] * 100,
            time['bubble_fraction'] * 100))


if __name__ == '__main__':
    main()
