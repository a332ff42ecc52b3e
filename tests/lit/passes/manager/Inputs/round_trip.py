"""Round trip of the textual IR on every example plan.

    round_trip.py PLANC PLAN_OPT EXAMPLES_DIR

For each examples/*.plan: the forward IR `planc emit --emit=ir` prints must
come back byte for byte through `plan-opt -` (parse, verify, print), and so
must the IR after autodiff and after autodiff plus the optimizer. Prints one
line per example and module; exits 1 on the first difference, showing it.
"""
import difflib
import glob
import os
import subprocess
import sys


def run(args, stdin=None):
    p = subprocess.run(args, input=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if p.returncode != 0:
        sys.exit('%s exited with %d:\n%s' % (' '.join(args), p.returncode, p.stderr.decode(errors='replace')))
    return p.stdout


def check(name, text, plan_opt):
    again = run([plan_opt, '-'], stdin=text)
    if again != text:
        diff = difflib.unified_diff(text.decode().splitlines(), again.decode().splitlines(),
                                    'printed', 'parsed and printed again', lineterm='', n=1)
        sys.exit('%s: the IR does not round-trip:\n%s' % (name, '\n'.join(list(diff)[:40])))
    print('%s: round-trips (%d lines)' % (name, text.count(b'\n')))


def main():
    planc, plan_opt, examples = sys.argv[1:4]
    plans = sorted(glob.glob(os.path.join(examples, '*.plan')))
    if not plans:
        sys.exit('no examples in %s' % examples)
    for plan in plans:
        base = os.path.basename(plan)
        check(base + ' forward', run([planc, 'emit', '--emit=ir', plan]), plan_opt)
        check(base + ' autodiff', run([plan_opt, plan, '--passes=autodiff']), plan_opt)
        check(base + ' autodiff,optimizer', run([plan_opt, plan, '--passes=autodiff,optimizer']), plan_opt)


main()
