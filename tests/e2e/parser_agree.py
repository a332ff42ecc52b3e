#!/usr/bin/python3
"""The direct parser and the ANTLR path agree: same AST, same diagnostics.

frontend/DirectParser.h is the fast path of parsing; on any text it does not
handle, the ANTLR path runs (PLANC_PARSER=antlr forces it). For every .plan
file given, both paths must give byte-identical `planc emit --emit=ast`
output (stdout, stderr, exit status); for mutants of them (made as
tests/e2e/mutations.py makes them), that and identical `planc check
--no-memory` output too. Each run is a process, so the mutants here are a
few hundred at most; tests/unit/frontend/DirectParserTest.cpp compares the
two paths in one process on thousands, every source range included.

  /usr/bin/python3 tests/e2e/parser_agree.py --planc build/bin/planc --mutants 50 FILE...
"""

import argparse
import concurrent.futures
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mutations  # noqa: E402


def run(planc, args, path, antlr):
    env = dict(os.environ, NO_COLOR='1')
    if antlr:
        env['PLANC_PARSER'] = 'antlr'
    else:
        env.pop('PLANC_PARSER', None)
    p = subprocess.run([planc] + args + [path], capture_output=True, env=env, timeout=60,
                       cwd=os.path.dirname(path))
    return p.returncode, p.stdout, p.stderr


def disagreement(planc, path, check=True):
    """None when both paths agree on `path`, else what differs."""
    for args in [['emit', '--emit=ast']] + ([['check', '--no-memory']] if check else []):
        direct, antlr = run(planc, args, path, False), run(planc, args, path, True)
        if direct != antlr:
            return '%s: direct (exit %d)\n%s%s\nANTLR (exit %d)\n%s%s' % (
                ' '.join(args), direct[0], direct[1].decode(errors='replace')[-2000:],
                direct[2].decode(errors='replace')[-2000:], antlr[0],
                antlr[1].decode(errors='replace')[-2000:], antlr[2].decode(errors='replace')[-2000:])
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('files', nargs='+', help='.plan files: compared, and the seeds of the mutants')
    ap.add_argument('--planc', required=True)
    ap.add_argument('--mutants', type=int, default=50)
    ap.add_argument('--seed', type=int, default=7)
    ap.add_argument('-j', '--jobs', type=int, default=2)
    args = ap.parse_args()
    planc = os.path.abspath(args.planc)

    failures = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as ex:
        files = [os.path.abspath(f) for f in args.files]
        for path, diff in zip(files, ex.map(lambda f: disagreement(planc, f, check=False), files)):
            if diff:
                failures.append((path, diff))
        print('parser-agree: %d files, %d disagree' % (len(files), len(failures)))

        # Mutants of the seeds that are plans of their own (not lit tests' inputs).
        seeds_paths = [f for f in files if '/tests/lit/' not in f]
        workroot = tempfile.mkdtemp(prefix='planc-parser-agree-')
        try:
            seeds = []
            for path, d in mutations.copy_seed_folders(seeds_paths, workroot):
                try:
                    seeds.append(mutations.Seed(path, d))
                except UnicodeDecodeError:
                    pass
            pool = sorted({t for s in seeds for k, t in s.tokens if k in ('ident', 'punct', 'string')}
                          | set(mutations.EXTRA_TOKENS))

            def one(index):
                seed, applied, data = mutations.make_mutant(seeds, pool, args.seed, index)
                path = os.path.join(seed.workdir, 'mutant-%05d.plan' % index)
                with open(path, 'wb') as f:
                    f.write(data)
                try:
                    return index, path, data, disagreement(planc, path)
                finally:
                    os.unlink(path)

            bad = 0
            for index, path, data, diff in ex.map(one, range(args.mutants)):
                if diff:
                    bad += 1
                    failures.append(('mutant %d (--seed %d)' % (index, args.seed),
                                     diff + '\n--- mutant ---\n' + data.decode(errors='replace')[:3000]))
            print('parser-agree: %d mutants, %d disagree' % (args.mutants, bad))
        finally:
            shutil.rmtree(workroot, ignore_errors=True)

    for what, diff in failures[:5]:
        print('=== %s\n%s' % (what, diff))
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
