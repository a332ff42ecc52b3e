#!/usr/bin/env python3
"""A markdown table of one plan's communication at several ZeRO stages.

    zero-comm-table.py [--dtype] PLAN STAGES [--set block.key=value ...]

Runs `planc emit PLAN --emit=comm --set parallel.zero=N ...` for each stage N of
STAGES (comma-separated) and prints one row per stage: the collectives of the
busiest rank grouped by op and phase (with --dtype, by dtype too), phase by
phase in step order, and the bytes it sends per step, also as a multiple of the
first stage's. docs/parallel.md's ZeRO tables are its output
(scripts/gen-docs.py); the planc on PATH runs.
"""
import argparse
import re
import subprocess
import sys

TOTAL = re.compile(r'^  total: (\d+) ops, S \S+ bytes, sent (\S+) bytes$')
OP = re.compile(r'^  (\d+)\s+(\S+)\s+(\S+)\s+(\d+)\s+(\S+)\s+(\w+)\[')


def comm(plan, stage, sets):
    """[(dtype, op, phase)] and the bytes sent, of the rank class that sends the most."""
    args = ['planc', 'emit', plan, '--emit=comm', '--set', 'parallel.zero=%d' % stage]
    for s in sets:
        args += ['--set', s]
    out = subprocess.run(args, check=True, stdout=subprocess.PIPE, text=True).stdout
    busiest, ops = None, []
    for line in out.split('\n'):
        m = OP.match(line)
        if m:
            ops.append((m.group(6), m.group(2), m.group(5)))
            continue
        m = TOTAL.match(line)
        if m:
            sent = float(m.group(2))
            if busiest is None or sent > busiest[1]:
                busiest = (ops, sent)
            ops = []
    if busiest is None:
        sys.exit('zero-comm-table: `%s` lists no collectives' % ' '.join(args))
    return busiest


PHASES = ['forward', 'backward', 'optimizer']


def describe(ops, with_dtype):
    """"1 all_reduce (forward), 28 reduce_scatter (backward)": counts by phase in step order, then by
    first appearance."""
    counts = {}
    for dtype, op, phase in ops:
        key = ('%s %s' % (dtype, op) if with_dtype else op, phase)
        counts[key] = counts.get(key, 0) + 1
    order = sorted(counts, key=lambda k: PHASES.index(k[1]) if k[1] in PHASES else len(PHASES))
    return ', '.join('%d %s (%s)' % (counts[k], k[0], k[1]) for k in order)


def number(b):
    return '{:,}'.format(int(b)) if b == int(b) else '{:,.1f}'.format(b)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--dtype', action='store_true', help='group the collectives by dtype too')
    parser.add_argument('--set', action='append', default=[], dest='sets', help='an override for every run')
    parser.add_argument('plan')
    parser.add_argument('stages', help='ZeRO stages, comma-separated: 0,1,2,3')
    args = parser.parse_args()

    rows = [(int(s), comm(args.plan, int(s), args.sets)) for s in args.stages.split(',')]
    first = rows[0][1][1]
    print('| zero | ops | collectives (phase) | bytes sent per rank | × zero %d |' % rows[0][0])
    print('|---|---|---|---|---|')
    for stage, (ops, sent) in rows:
        print('| %d | %d | %s | %s | %.2f |' % (stage, len(ops), describe(ops, args.dtype), number(sent), sent / first))


if __name__ == '__main__':
    main()
