#!/usr/bin/python3
"""Scaling test of `planc check`: time grows near-linearly with the plan.

Generates plans of 1k, 10k and 100k statements of several kinds, valid and
erroneous, times the whole `planc check` (the memory check included) on each,
and requires for every kind that

    time(100k) / time(10k) <= --max-ratio (default 25)

Linear growth gives at most 10 (less, as start-up is paid once); quadratic
growth gives 100. A ratio rather than a time, so that a slow machine passes
and a superlinear path fails. The exit status must be the kind's (0 for the
valid plans, 1 for the erroneous ones), every run within --timeout seconds.

  /usr/bin/python3 tests/e2e/scaling.py --planc build/bin/planc
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time

# Statements of at most five tokens: 100k of them stay under the token limit.
HEADER = 'model m {\n  input x : f32[batch, 16]\n'
FOOTER = '  loss = sum(sum(h, 1), 0)\n}\n'


def dead(n):
    """Statements nothing reads: removed before the expensive passes."""
    body = ''.join('  d%d = -x\n' % i for i in range(n))
    return HEADER + '  h = x\n' + body + FOOTER


def dead_in_repeat(n):
    """The same, in a layer repeated four times."""
    body = ''.join('    d%d = -h\n' % i for i in range(n // 4))
    return HEADER + '  h = x\n  repeat 4 {\n    h = h + 1.0\n' + body + '  }\n' + FOOTER


def live_chain(n):
    """Every statement feeds the loss: forward, backward and memory plan grow with it."""
    body = '  h = -h\n' * n
    return HEADER + '  h = x\n' + body + FOOTER


def unknown_name(n):
    """One erroneous line copied n times: past the error limit nothing is analysed."""
    body = '  y = nothing_here\n' * n
    return HEADER + '  h = x\n' + body + FOOTER


def syntax_error(n):
    body = '  y = x +\n' * n
    return HEADER + '  h = x\n' + body + FOOTER


def bad_shape(n):
    body = ''.join('  e%d = x @ x\n' % i for i in range(n))
    return HEADER + '  h = x\n' + body + FOOTER


KINDS = [
    ('dead statements', dead, 0),
    ('dead statements in a repeat', dead_in_repeat, 0),
    ('live chain', live_chain, 0),
    ('unknown name copied', unknown_name, 1),
    ('syntax error copied', syntax_error, 1),
    ('shape error per line', bad_shape, 1),
]


def run(planc, path, timeout):
    start = time.perf_counter()
    try:
        proc = subprocess.run([planc, 'check', '--quiet', path], stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, None, b''
    return time.perf_counter() - start, proc.returncode, proc.stderr


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--planc', default=os.environ.get('PLANC', 'build/bin/planc'))
    ap.add_argument('--sizes', default='1000,10000,100000', help='statement counts (1000,10000,100000)')
    ap.add_argument('--max-ratio', type=float, default=25.0,
                    help='largest allowed time(largest) / time(second largest) (25)')
    ap.add_argument('--timeout', type=float, default=60.0, help='seconds per run (60)')
    ap.add_argument('--repeat', type=int, default=2, help='runs per plan; the fastest counts (2)')
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(',')]

    failures = 0
    with tempfile.TemporaryDirectory(prefix='planc-scaling-') as tmp:
        for name, make, want in KINDS:
            times = []
            for n in sizes:
                path = os.path.join(tmp, 'plan-%d.plan' % n)
                with open(path, 'w') as f:
                    f.write(make(n))
                best = None
                for _ in range(args.repeat):
                    t, rc, err = run(args.planc, path, args.timeout)
                    if t is None:
                        print('FAIL %s, %d statements: no exit within %g s' % (name, n, args.timeout))
                        failures += 1
                        break
                    if rc != want:
                        print('FAIL %s, %d statements: exit %d, expected %d' % (name, n, rc, want))
                        print('\n'.join('    | ' + l for l in err.decode('utf-8', 'replace').splitlines()[-6:]))
                        failures += 1
                        break
                    best = t if best is None else min(best, t)
                times.append(best)
            shown = ', '.join('%dk: %s' % (n // 1000, '-' if t is None else '%.3f s' % t) for n, t in zip(sizes, times))
            if None in times:
                print('%-30s %s' % (name, shown))
                continue
            ratio = times[-1] / max(times[-2], 1e-3)
            ok = ratio <= args.max_ratio
            failures += not ok
            print('%-30s %s; ratio %.1f%s' % (name, shown, ratio, '' if ok else '  FAIL (> %g)' % args.max_ratio))
    print('scaling: %d failure(s)' % failures)
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
