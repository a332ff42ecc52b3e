#!/usr/bin/python3
"""Mutation test of `planc check`: broken plans get diagnostics, never crashes.

Makes N deterministic mutants of seed plans (tokens deleted, duplicated,
swapped, replaced; numbers changed to 0, -1, huge, 1e400, ...; lines and
bracketed blocks copied, up to 300 times, as tests/e2e/scaling.py does up to
100k statements; text truncated; random bytes inserted, including invalid
UTF-8 and NUL; brackets unbalanced), runs the whole `planc check` on each
(the memory check included) with a time limit, and requires:

  * the exit status is 0 or 1: never a signal, never 2 (a usage error cannot
    come from a file argument), never the time limit. The limit (--timeout,
    5 s) is on the CPU time planc uses, so that a loaded machine does not fail
    a mutant that a quiet one checks in time; a wall-clock limit twelve times
    as long still catches a planc that waits without computing;
  * with status 1, stderr has at least one `file:line:col: error: ` line;
  * no sanitizer report on stderr (when run against a sanitizer build).

Mutants that are still valid plans (status 0) are allowed and counted.

  /usr/bin/python3 tests/e2e/mutations.py --planc build/bin/planc examples/*.plan
  /usr/bin/python3 tests/e2e/mutations.py --planc build/bin/planc --only 1234 examples/*.plan

Mutant i depends only on --seed, i and the seed files, so `--only i` makes and
runs the same mutant again; failing mutants are also saved to --save-dir.
"""

import argparse
import collections
import concurrent.futures
import os
import math
import random
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time

DIAGNOSTIC_RE = re.compile(rb'^[^:\n]+:\d+:\d+: error: ', re.MULTILINE)
SANITIZER_RE = re.compile(rb'ERROR: AddressSanitizer|ERROR: LeakSanitizer|runtime error: ')

TOKEN_RE = re.compile(r'''
    (?P<ws>\s+)
  | (?P<comment>//[^\n]*|/\*.*?(?:\*/|$))
  | (?P<string>"(?:[^"\\\n]|\\.)*")
  | (?P<number>(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)
  | (?P<ident>@?[A-Za-z_][A-Za-z0-9_]*)
  | (?P<punct>\.\.\.|==|!=|<=|>=|.)
''', re.VERBOSE | re.DOTALL)

SPECIAL_NUMBERS = [
    '0', '-1', '1', '99999999999999999999', '1e400', '-1e400', '1e-400', '0.0', '-0',
    '9223372036854775807', '9223372036854775808', '-9223372036854775808',
    '18446744073709551616', '4294967296', '2147483648', '1e308', '1e18', '0.5', '3', '7',
    '1000000000', '123456789012', '0x10', '1.', '.5', '1e', '00',
]
BRACKETS = '()[]{}'
# Byte strings inserted by the `bytes` mutation.
BYTE_SNIPPETS = [
    b'\x00', b'\x00\x00\x00', b'\xff', b'\xfe\xff', b'\xc0\x80', b'\xc3', b'\xe2\x82',
    b'\xed\xa0\x80', b'\xf4\x90\x80\x80', b'\xf8\x88\x80\x80\x80', b'\x80', b'\xbf\xbf',
    b'\xef\xbb\xbf', b'\x1b[31m', b'\r', b'\t', b'\x7f', b'\x0b\x0c',
    '\u03bb'.encode(), '\u202e'.encode(), '\U0001f600'.encode(), '\u00a0'.encode(),
    b'"', b'/*', b'*/', b'//', b'\\', b'@', b'@ ', b'...', b'%',
]
EXTRA_TOKENS = [
    'model', 'layer', 'train', 'cluster', 'parallel', 'import', 'let', 'input', 'param',
    'repeat', 'as', 'if', 'else', 'return', 'enum', 'true', 'false', 'and', 'or', 'not',
    '@shard', '@recompute', '@precision', '@stage', '@frozen', '@bogus', 'loss', 'batch',
    'f32', 'bf16', 'i32', 'dp', 'tp', 'pp', 'zero', 'mesh', '=', ',', ':', '.', '@', '*', '/',
    '-', '+', '%', '...', '80 GiB', '"x.plan"', '"/dev/null"', 'std.gpt', 'std.nope',
]


def tokenize(text):
    return [[m.lastgroup, m.group()] for m in TOKEN_RE.finditer(text)]


def significant(tokens):
    return [i for i, (kind, _) in enumerate(tokens) if kind not in ('ws', 'comment')]


# --- mutations on tokens: each changes `tokens` in place, returns False if it could not apply

def m_delete(rng, tokens, pool):
    idx = significant(tokens)
    if not idx:
        return False
    start = rng.choice(idx)
    span = [i for i in idx if i >= start][:rng.choice((1, 1, 1, 2, 3))]
    for i in reversed(span):
        del tokens[i]
    return True


def m_duplicate(rng, tokens, pool):
    idx = significant(tokens)
    if not idx:
        return False
    k = rng.randrange(len(idx))
    span = idx[k:k + rng.choice((1, 1, 2, 3, 5))]
    copy = [list(t) for t in tokens[span[0]:span[-1] + 1]]
    tokens[span[-1] + 1:span[-1] + 1] = [['ws', ' ']] + copy
    return True


def m_swap(rng, tokens, pool):
    idx = significant(tokens)
    if len(idx) < 2:
        return False
    if rng.random() < 0.5:
        k = rng.randrange(len(idx) - 1)
        a, b = idx[k], idx[k + 1]
    else:
        a, b = rng.sample(idx, 2)
    tokens[a], tokens[b] = tokens[b], tokens[a]
    return True


def m_number(rng, tokens, pool):
    idx = [i for i, (kind, _) in enumerate(tokens) if kind == 'number']
    if not idx:
        return False
    tokens[rng.choice(idx)][1] = rng.choice(SPECIAL_NUMBERS)
    return True


def m_brackets(rng, tokens, pool):
    idx = [i for i, (_, text) in enumerate(tokens) if text in BRACKETS]
    if idx and rng.random() < 0.5:
        del tokens[rng.choice(idx)]
    else:
        pos = rng.randrange(len(tokens) + 1)
        tokens.insert(pos, ['punct', rng.choice(BRACKETS) * rng.choice((1, 1, 2, 5))])
    return True


def m_insert_token(rng, tokens, pool):
    pos = rng.randrange(len(tokens) + 1)
    tokens[pos:pos] = [['ws', ' '], ['ident', rng.choice(pool)], ['ws', ' ']]
    return True


def m_replace_ident(rng, tokens, pool):
    idx = [i for i, (kind, _) in enumerate(tokens) if kind == 'ident']
    if not idx:
        return False
    tokens[rng.choice(idx)][1] = rng.choice(pool)
    return True


# --- mutations on lines: each returns the new text, or None if it could not apply.
# A line or a block copied many times is how a generated plan goes wrong, and
# the check must stay near-linear in it (copies past the error limit cost
# nothing more).

COPIES = (1, 1, 2, 3, 10, 100, 300)


def t_duplicate_lines(rng, text):
    lines = text.splitlines(keepends=True)
    if not lines:
        return None
    start = rng.randrange(len(lines))
    run = lines[start:start + rng.choice((1, 1, 2, 3))]
    copies = rng.choice(COPIES)
    return ''.join(lines[:start] + run * (copies + 1) + lines[start + len(run):])


def t_duplicate_block(rng, text):
    """Copies a bracketed block: from a line with '{' through its matching '}'."""
    lines = text.splitlines(keepends=True)
    opens = [i for i, line in enumerate(lines) if '{' in line]
    if not opens:
        return None
    start = rng.choice(opens)
    depth, end = 0, None
    for i in range(start, len(lines)):
        depth += lines[i].count('{') - lines[i].count('}')
        if depth <= 0:
            end = i
            break
    if end is None:
        return None
    block = lines[start:end + 1]
    copies = rng.choice(COPIES[:-1])
    return ''.join(lines[:end + 1] + block * copies + lines[end + 1:])


# --- mutations on bytes: each returns the new bytes

def b_truncate(rng, data):
    return data[:rng.randrange(len(data) + 1)]


def b_insert_bytes(rng, data):
    pos = rng.randrange(len(data) + 1)
    if rng.random() < 0.6:
        junk = rng.choice(BYTE_SNIPPETS)
    else:
        junk = bytes(rng.randrange(256) for _ in range(rng.randint(1, 16)))
    return data[:pos] + junk + data[pos:]


def b_flip(rng, data):
    if not data:
        return data
    out = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        out[rng.randrange(len(out))] ^= 1 << rng.randrange(8)
    return bytes(out)


TOKEN_MUTATIONS = {
    'delete': m_delete, 'duplicate': m_duplicate, 'swap': m_swap, 'number': m_number,
    'brackets': m_brackets, 'insert-token': m_insert_token, 'replace-ident': m_replace_ident,
}
LINE_MUTATIONS = {'dup-lines': t_duplicate_lines, 'dup-block': t_duplicate_block}
BYTE_MUTATIONS = {'truncate': b_truncate, 'bytes': b_insert_bytes, 'flip': b_flip}
WEIGHTS = {
    'delete': 4, 'duplicate': 3, 'swap': 3, 'number': 4, 'brackets': 3, 'insert-token': 2,
    'replace-ident': 2, 'dup-lines': 2, 'dup-block': 1, 'truncate': 2, 'bytes': 3, 'flip': 1,
}
ORDER = {'token': 0, 'line': 1, 'byte': 2}


def stage(name):
    return 'byte' if name in BYTE_MUTATIONS else 'line' if name in LINE_MUTATIONS else 'token'


class Seed:
    def __init__(self, path, workdir):
        self.path = path
        self.text = open(path, encoding='utf-8').read()
        self.tokens = tokenize(self.text)
        self.workdir = workdir      # holds copies of the seed's sibling .plan files


def make_mutant(seeds, pool, base_seed, index):
    """Mutant `index`: (seed, list of mutation names, bytes). Deterministic."""
    rng = random.Random('%d:%d' % (base_seed, index))
    seed = rng.choice(seeds)
    names = list(WEIGHTS)
    chosen = rng.choices(names, weights=[WEIGHTS[n] for n in names],
                         k=rng.choice((1, 1, 1, 2, 2, 3)))
    # Token mutations first (on tokens), then line mutations (on the text),
    # then byte mutations (on the encoding).
    chosen.sort(key=lambda n: ORDER[stage(n)])
    tokens = [list(t) for t in seed.tokens]
    applied = []
    data = None
    text = None
    for name in chosen:
        if name in TOKEN_MUTATIONS:
            if TOKEN_MUTATIONS[name](rng, tokens, pool):
                applied.append(name)
        elif name in LINE_MUTATIONS:
            if text is None:
                text = ''.join(t for _, t in tokens)
            changed = LINE_MUTATIONS[name](rng, text)
            if changed is not None:
                text = changed
                applied.append(name)
        else:
            if data is None:
                data = (text if text is not None else ''.join(t for _, t in tokens)).encode('utf-8')
            data = BYTE_MUTATIONS[name](rng, data)
            applied.append(name)
    if data is None:
        data = (text if text is not None else ''.join(t for _, t in tokens)).encode('utf-8')
    return seed, applied, data


def cpu_limit(seconds):
    """For preexec_fn: planc is killed (SIGXCPU) past `seconds` of CPU time."""
    limit = max(1, math.ceil(seconds))
    return lambda: resource.setrlimit(resource.RLIMIT_CPU, (limit, limit + 1))


def run_planc(planc, path, timeout):
    """Returns (verdict, detail, returncode, stderr): verdict is 'rejected', 'valid' or 'FAIL'."""
    env = dict(os.environ, NO_COLOR='1')
    env.pop('TERM', None)
    wall = max(60.0, 12 * timeout)
    try:
        # The whole check, the memory check included: a mutant that passes the
        # frontend is partitioned and planned like any plan.
        proc = subprocess.run([planc, 'check', path], stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              timeout=wall, env=env, cwd=os.path.dirname(path),
                              preexec_fn=cpu_limit(timeout))
    except subprocess.TimeoutExpired as e:
        return 'FAIL', 'no exit within %g s of wall-clock time' % wall, None, e.stderr or b''
    except OSError as e:
        return 'FAIL', 'cannot run %s: %s' % (planc, e), None, b''
    rc, err = proc.returncode, proc.stderr
    if rc in (-signal.SIGXCPU, -signal.SIGKILL):
        return 'FAIL', 'more than %g s of CPU time' % timeout, rc, err
    if rc < 0:
        return 'FAIL', 'killed by signal %d' % -rc, rc, err
    if SANITIZER_RE.search(err):
        return 'FAIL', 'sanitizer report (exit %d)' % rc, rc, err
    if rc == 0:
        return 'valid', '', rc, err
    if rc != 1:
        return 'FAIL', 'exit status %d (expected 0 or 1)' % rc, rc, err
    if not DIAGNOSTIC_RE.search(err):
        return 'FAIL', 'exit status 1 without a "file:line:col: error: " line', rc, err
    return 'rejected', '', rc, err



def copy_seed_folders(paths, workroot):
    """(path, folder) for each seed in sorted order: the folder a copy, under
    workroot, of the .plan files beside the seed, so that its relative
    imports still resolve where its mutants are written."""
    dirs = {}
    for path in sorted(paths):
        d = os.path.dirname(os.path.abspath(path))
        if d not in dirs:
            dirs[d] = os.path.join(workroot, str(len(dirs)))
            os.mkdir(dirs[d])
            for name in os.listdir(d):
                if name.endswith('.plan'):
                    shutil.copy(os.path.join(d, name), dirs[d])
        yield path, dirs[d]

def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('seeds', nargs='+', help='seed .plan files')
    ap.add_argument('--planc', default=os.environ.get('PLANC', 'build/bin/planc'))
    ap.add_argument('-n', '--count', type=int, default=2000, help='number of mutants (2000)')
    ap.add_argument('--seed', type=int, default=1, help='random seed (1)')
    ap.add_argument('-j', '--jobs', type=int, default=2, help='parallel runs (2)')
    ap.add_argument('--timeout', type=float, default=5.0, help='seconds of CPU time per run (5)')
    ap.add_argument('--only', type=int, action='append', metavar='I',
                    help='run only mutant I (repeatable)')
    ap.add_argument('--save-dir', help='where failing mutants are written (default: a new temp folder)')
    ap.add_argument('--show', type=int, default=5, help='failures printed in full (5)')
    args = ap.parse_args()

    planc = os.path.abspath(args.planc)
    if not os.access(planc, os.X_OK):
        print('mutations.py: no planc at %s (build it: scripts/build.sh)' % planc, file=sys.stderr)
        return 2

    workroot = tempfile.mkdtemp(prefix='planc-mutants-')
    try:
        seeds = [Seed(path, d) for path, d in copy_seed_folders(args.seeds, workroot)]
        pool = sorted({t for s in seeds for k, t in s.tokens if k in ('ident', 'punct', 'string')}
                      | set(EXTRA_TOKENS))
        indices = args.only or list(range(args.count))

        def one(index):
            seed, applied, data = make_mutant(seeds, pool, args.seed, index)
            path = os.path.join(seed.workdir, 'mutant-%05d.plan' % index)
            with open(path, 'wb') as f:
                f.write(data)
            verdict, detail, rc, err = run_planc(planc, path, args.timeout)
            os.unlink(path)
            return index, seed, applied, data, verdict, detail, err

        start = time.time()
        verdicts = collections.Counter()
        by_mutation = collections.defaultdict(collections.Counter)
        failures = []
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as ex:
            for index, seed, applied, data, verdict, detail, err in ex.map(one, indices):
                verdicts[verdict] += 1
                for name in set(applied):
                    by_mutation[name][verdict] += 1
                if verdict == 'FAIL':
                    failures.append((index, seed, applied, data, detail, err))
        elapsed = time.time() - start

        print('mutations: %d mutants of %d seed file(s), seed %d, %d worker(s), %.1f s'
              % (len(indices), len(seeds), args.seed, args.jobs, elapsed))
        print('  rejected with a diagnostic (exit 1): %5d' % verdicts['rejected'])
        print('  still valid plans (exit 0):          %5d' % verdicts['valid'])
        print('  failures:                            %5d' % verdicts['FAIL'])
        print('  by mutation (mutants / still valid / failures):')
        for name in WEIGHTS:
            c = by_mutation.get(name)
            if c:
                print('    %-14s %5d %5d %5d' % (name, sum(c.values()), c['valid'], c['FAIL']))

        if failures:
            save = args.save_dir or tempfile.mkdtemp(prefix='planc-mutation-failures-')
            os.makedirs(save, exist_ok=True)
            failures.sort(key=lambda f: f[0])
            for index, seed, applied, data, detail, err in failures:
                with open(os.path.join(save, 'mutant-%05d.plan' % index), 'wb') as f:
                    f.write(data)
            print('\n%d failure(s); mutants saved in %s' % (len(failures), save))
            for index, seed, applied, data, detail, err in failures[:args.show]:
                saved = os.path.join(save, 'mutant-%05d.plan' % index)
                print('\n--- mutant %d: %s' % (index, detail))
                print('    seed %s, mutations: %s' % (seed.path, ', '.join(applied) or 'none'))
                print('    reproduce: %s check %s' % (args.planc, saved))
                print('           or: %s %s --planc %s --seed %d --only %d %s'
                      % (sys.executable, sys.argv[0], args.planc, args.seed, index,
                         ' '.join(args.seeds)))
                tail = err.decode('utf-8', 'replace').splitlines()[-12:]
                for line in tail:
                    print('    | ' + line[:200])
            return 1
        return 0
    finally:
        shutil.rmtree(workroot, ignore_errors=True)


if __name__ == '__main__':
    sys.exit(main())
