#!/usr/bin/env python3
"""docs/parallel.md's schedule table: the replayed step time and bubble of each
pipeline schedule on tests/lit/emit/Inputs/pipeline.plan (p = 4, m = 8), beside
the published formula.

    schedule-table.py

One `planc emit --emit=schedule --set parallel.pipeline=...` per row; its last
two lines are the step time and the bubble fraction. scripts/gen-docs.py runs
it; the planc on PATH answers.
"""
import re
import subprocess

PLAN = 'tests/lit/emit/Inputs/pipeline.plan'
# (how the table names it, the --set value, what the papers say for p = 4, m = 8)
ROWS = [
    ('`gpipe`', 'gpipe(micro_batches = 8)', '(p−1)/(m+p−1) = 3/11'),
    ('`1f1b`', '1f1b(micro_batches = 8)', '3/11'),
    ('`interleaved` (v = 2)', 'interleaved(v = 2, micro_batches = 8)',
     '(p−1)/(v·m) of ideal = 3/16, i.e. 3/19 of the step'),
    ('`zero_bubble`', 'zero_bubble(micro_batches = 8)', ''),
]


def replay(schedule):
    out = subprocess.run(['planc', 'emit', PLAN, '--emit=schedule', '--set', 'parallel.pipeline=' + schedule],
                         check=True, stdout=subprocess.PIPE, text=True).stdout
    step = re.search(r'^step time: (\S+)$', out, re.M).group(1)
    bubble = re.search(r'^bubble fraction: (\S+)', out, re.M).group(1)
    return step, bubble


def main():
    print('| schedule (`--set parallel.pipeline=...`) | step time | bubble fraction | published |')
    print('|---|---|---|---|')
    for name, schedule, published in ROWS:
        step, bubble = replay(schedule)
        print('| %s | %s | %s | %s |' % (name, step, bubble, published))


if __name__ == '__main__':
    main()
