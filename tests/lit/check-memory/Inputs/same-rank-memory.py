"""Compares the per-rank memory of two `planc check --json` ledgers.

Each stage's plan stands for every rank of that pipeline stage; two plans
that differ only by their data-parallel size run the same program per rank,
so everything a stage reports but its rank list must be equal. Prints one
line per stage ("pp=S same, N ranks and M ranks") or the keys that differ.
"""
import json
import sys

a, b = (json.load(open(path)) for path in sys.argv[1:3])
if len(a['stages']) != len(b['stages']):
    print('stages differ: %d and %d' % (len(a['stages']), len(b['stages'])))
    sys.exit(1)
for x, y in zip(a['stages'], b['stages']):
    differ = sorted(k for k in set(x) | set(y) if k != 'ranks' and x.get(k) != y.get(k))
    if differ:
        print('pp=%d differs in %s' % (x['stage'], ', '.join(differ)))
    else:
        print('pp=%d same, %d ranks and %d ranks' % (x['stage'], len(x['ranks']), len(y['ranks'])))
print('peak_arena_bytes', 'same' if a['peak_arena_bytes'] == b['peak_arena_bytes'] else 'differs')
