#!/usr/bin/python3
"""Scaling test of `planc check`: time grows near-linearly with the plan.

Generates plans of several kinds at three sizes (1x, 10x and 100x of each
kind's base), valid and erroneous, runs the whole `planc check` (the memory
check included) on each, and requires for every kind that

    cpu(100x) / cpu(10x) <= --max-ratio (default 25)

Linear growth gives at most 10 (less, as start-up is paid once); quadratic
growth gives 100. A ratio rather than a time, so that a slow machine passes
and a superlinear path fails. CPU time (user + system, of the planc process)
is what is compared: on a busy machine it moves less than the wall clock.
The exit status must be the kind's (0 for the valid plans, 1 for the
erroneous ones), every run within --timeout seconds, and no run of a plan
whose model is small may hold more than --max-rss MiB (default 1024).

The kinds are the shapes that were slow once: statements of every sort
(100k of them), a 1.7 MB chain of 119k `x = x * 1.0`, 3,000 dead statements
in a repeated layer (also compared with the same plan without them), and a
GPT written with `repeat N` and with N blocks written out (12, 120 and 1,200
layers). For the GPT the time per layer must stay about the same:

    (cpu(1,200) / 1,200) / (cpu(120) / 120) <= --max-layer-growth (2.5)

(quadratic growth gives 10; at 1,200 layers the check's working set is a
quarter of a GiB, and its time per layer measures 1.7 to 2.3 times that at
120 on a shared 2-core machine, with a flat profile of hash-table lookups
and malloc rather than one phase that grows), and the two ways of writing it must cost about
the same: cpu(blocks) / cpu(repeat) at 1,200 layers within --max-form-ratio
(1.5) either way. --large runs the GPT at 96, 960 and 9,600 layers instead
(minutes; not in CI) and prints the time and memory per layer.

  /usr/bin/python3 tests/e2e/scaling.py --planc build/bin/planc
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

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


def chain_of_products(n):
    """The chain that took 8.8 CPU-s at 119k statements (1.7 MB)."""
    return HEADER + '  h = x\n' + '  h = h * 1.0\n' * n + FOOTER


def tiny_gpt():
    with open(os.path.join(ROOT, 'examples', 'tiny-gpt.plan')) as f:
        return f.read()


REPEAT_HEAD = '  repeat layers {\n'
BLOCK = ('  x = x + attention(layernorm(x), heads, causal = true, p = p)\n'
         '  x = x + mlp(layernorm(x), ffn = 4 * hidden, p = p)\n')


def dead_in_repeated_layer(n):
    """n statements nothing reads, in the body of tiny-gpt's layer repeated 96 times."""
    src = tiny_gpt().replace('layers = 2', 'layers = 96')
    i = src.index(REPEAT_HEAD) + len(REPEAT_HEAD)
    return src[:i] + ''.join('    d%d = x * 2.0\n' % k for k in range(n)) + src[i:]


def layers_as_repeat(n):
    return tiny_gpt().replace('layers = 2', 'layers = %d' % n)


def layers_as_blocks(n):
    """The same model with its n layers written out one by one."""
    src = tiny_gpt()
    start = src.index(REPEAT_HEAD)
    end = src.index('  }\n', start) + len('  }\n')
    return src[:start] + BLOCK * n + src[end:]


STATEMENTS = [1000, 10000, 100000]
LAYERS = [12, 120, 1200]
LARGE_LAYERS = [96, 960, 9600]

# name, generator, expected exit status, sizes, whether the model is small
KINDS = [
    ('dead statements', dead, 0, STATEMENTS, True),
    ('dead statements in a repeat', dead_in_repeat, 0, STATEMENTS, True),
    ('live chain', live_chain, 0, STATEMENTS, True),
    ('unknown name copied', unknown_name, 1, STATEMENTS, True),
    ('syntax error copied', syntax_error, 1, STATEMENTS, True),
    ('shape error per line', bad_shape, 1, STATEMENTS, True),
    ('chain of x * 1.0', chain_of_products, 0, [1190, 11900, 119000], True),
    ('dead in a repeated layer', dead_in_repeated_layer, 0, [30, 300, 3000], True),
    ('layers as repeat N', layers_as_repeat, 0, LAYERS, False),
    ('layers as N blocks', layers_as_blocks, 0, LAYERS, False),
]


def run(planc, path, timeout):
    """(cpu seconds, exit status, stderr, peak resident MiB) of one check;
    (None, None, b'', None) past the timeout."""
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen([planc, 'check', '--quiet', path], stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=err)
        deadline = time.monotonic() + timeout
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                proc.kill()
                os.wait4(proc.pid, 0)
                return None, None, b'', None
            time.sleep(0.01)
        proc.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        return usage.ru_utime + usage.ru_stime, proc.returncode, err.read(), usage.ru_maxrss / 1024.0


def measure(args, tmp, make, n, want, small, label):
    """The least CPU time of --repeat runs and the number of failures."""
    path = os.path.join(tmp, 'plan-%d.plan' % n)
    with open(path, 'w') as f:
        f.write(make(n))
    best, rss = None, 0.0
    for _ in range(args.repeat):
        t, rc, err, peak = run(args.planc, path, args.timeout)
        if t is None:
            print('FAIL %s, n = %d: no exit within %g s' % (label, n, args.timeout))
            return None, 1
        if rc != want:
            print('FAIL %s, n = %d: exit %d, expected %d' % (label, n, rc, want))
            print('\n'.join('    | ' + l for l in err.decode('utf-8', 'replace').splitlines()[-6:]))
            return None, 1
        best = t if best is None else min(best, t)
        rss = max(rss, peak)
    if small and rss > args.max_rss:
        print('FAIL %s, n = %d: %.0f MiB resident, more than %g' % (label, n, rss, args.max_rss))
        return best, 1
    if not small:
        peaks[(label, n)] = rss
    return best, 0


peaks = {}  # (kind, size) -> peak resident MiB of the plans whose model is not small


def check_layers(args, cpu, sizes):
    """The GPT's time per layer from the middle size to the largest, and its
    two spellings against each other; the number of failures."""
    failures = 0
    for name in ('layers as repeat N', 'layers as N blocks'):
        if name not in cpu:
            continue
        per = [t / n for t, n in zip(cpu[name], sizes)]
        growth = per[-1] / max(per[-2], 1e-6)
        ok = growth <= args.max_layer_growth
        failures += not ok
        # Memory per layer as what each added layer costs: the peak also
        # holds what any plan holds (the standard library, the tables).
        added = (peaks.get((name, sizes[-1]), 0.0) - peaks.get((name, sizes[-2]), 0.0)) * 1024 / (sizes[-1] - sizes[-2])
        print('%-30s per layer %s ms; growth %.2f%s; %.0f KiB per added layer' % (
            name, ', '.join('%.2f' % (1000 * p) for p in per), growth,
            '' if ok else '  FAIL (> %g)' % args.max_layer_growth, added))
    if 'layers as repeat N' in cpu and 'layers as N blocks' in cpu:
        repeat, blocks = cpu['layers as repeat N'][-1], cpu['layers as N blocks'][-1]
        ratio = blocks / max(repeat, 1e-3)
        ok = 1 / args.max_form_ratio <= ratio <= args.max_form_ratio
        failures += not ok
        print('%-30s blocks / repeat at %d layers: %.2f%s' % ('layers, two spellings', sizes[-1], ratio,
              '' if ok else '  FAIL (outside 1/%g .. %g)' % (args.max_form_ratio, args.max_form_ratio)))
    return failures


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--planc', default=os.environ.get('PLANC', 'build/bin/planc'))
    ap.add_argument('--max-ratio', type=float, default=25.0,
                    help='largest allowed cpu(100x) / cpu(10x) (25)')
    ap.add_argument('--max-dead-ratio', type=float, default=4.0,
                    help='largest allowed cpu(3,000 dead statements in a repeated layer) / cpu(none) (4)')
    ap.add_argument('--max-rss', type=float, default=1024.0,
                    help='MiB a plan with a small model may hold at its peak (1024)')
    ap.add_argument('--timeout', type=float, default=120.0, help='seconds per run (120)')
    ap.add_argument('--repeat', type=int, default=2, help='runs per plan; the fastest counts (2)')
    ap.add_argument('--max-layer-growth', type=float, default=2.5,
                    help='largest allowed growth of the GPT\'s cpu time per layer from 120 to 1,200 layers (2.5)')
    ap.add_argument('--max-form-ratio', type=float, default=1.5,
                    help='largest allowed cpu(N blocks) / cpu(repeat N), either way (1.5)')
    ap.add_argument('--large', action='store_true',
                    help='only the GPT, at 96, 960 and 9,600 layers (minutes)')
    ap.add_argument('--only', default='', help='run only the kinds whose name contains this')
    args = ap.parse_args()

    kinds = KINDS
    if args.large:
        kinds = [(name, make, want, LARGE_LAYERS, small) for name, make, want, sizes, small in KINDS
                 if sizes is LAYERS]
        args.timeout = max(args.timeout, 600.0)
    failures = 0
    largest = {}
    cpu = {}
    layer_sizes = LARGE_LAYERS if args.large else LAYERS
    with tempfile.TemporaryDirectory(prefix='planc-scaling-') as tmp:
        for name, make, want, sizes, small in kinds:
            if args.only not in name:
                continue
            times = []
            for n in sizes:
                t, failed = measure(args, tmp, make, n, want, small, name)
                failures += failed
                times.append(t)
            shown = ', '.join('%d: %s' % (n, '-' if t is None else '%.3f s' % t) for n, t in zip(sizes, times))
            if None in times:
                print('%-30s %s' % (name, shown))
                continue
            largest[name] = times[-1]
            cpu[name] = times
            ratio = times[-1] / max(times[-2], 1e-3)
            ok = ratio <= args.max_ratio
            failures += not ok
            print('%-30s %s; ratio %.1f%s' % (name, shown, ratio, '' if ok else '  FAIL (> %g)' % args.max_ratio))
        # Dead statements go before lowering: 3,000 of them in a layer
        # repeated 96 times cost about twice the plan without them (9 times
        # when each was lowered 96 times and removed again).
        if 'dead in a repeated layer' in largest:
            base, failed = measure(args, tmp, dead_in_repeated_layer, 0, 0, True, 'no dead statements')
            failures += failed
            if base is not None:
                ratio = largest['dead in a repeated layer'] / max(base, 1e-3)
                ok = ratio <= args.max_dead_ratio
                failures += not ok
                print('%-30s %.3f s without them; ratio %.1f%s' % ('dead in a repeated layer', base, ratio,
                      '' if ok else '  FAIL (> %g)' % args.max_dead_ratio))
        failures += check_layers(args, cpu, layer_sizes)
    print('scaling: %d failure(s)' % failures)
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
