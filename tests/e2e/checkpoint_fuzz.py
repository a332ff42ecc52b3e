"""The corrupted-checkpoint fuzzer of tests/e2e/checkpoint-faults.sh.

    checkpoint_fuzz.py EXE CHECKPOINT STEPS BASELINE TRIALS SEED [KINDS] [PLANC]

Each trial copies the step folder CHECKPOINT, damages the copy once, and
resumes EXE from it for STEPS steps. The damage is one of KINDS (comma-
separated; default all): `data` (a random byte of a rank file's tensor data
replaced), `header` (a byte of a rank file's header), `index` (a byte of
index.json), `field` (a field of index.json edited to another value of its
kind or of another kind, with its checksum left stale or written anew). A
trial passes when the run ends with status 1 and an `error:` line, or with
status 0 and losses bit-identical to BASELINE (the metrics of the intact
checkpoint's run: a damaged byte the run never reads, say): a crash, a hang,
another status, or other losses is a failure. With PLANC, every fourth trial
also converts the damaged checkpoint, which must succeed or fail the same way.
Prints one line per failure and a summary; exits 1 on any failure.
"""
import json
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile

_TABLE = []
for _b in range(256):
    _c = _b
    for _ in range(8):
        _c = (_c >> 1) ^ (0x82F63B78 if _c & 1 else 0)
    _TABLE.append(_c)


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc = (crc >> 8) ^ _TABLE[(crc ^ b) & 0xFF]
    return crc ^ 0xFFFFFFFF


def losses(path):
    """The step and loss of every line, as written (all digits)."""
    out = []
    for line in open(path):
        entry = json.loads(line)
        out.append((entry['step'], repr(entry['loss'])))
    return out


def rank_files(folder):
    return sorted(f for f in os.listdir(folder) if f.endswith('.safetensors'))


def header_end(path):
    with open(path, 'rb') as f:
        return 8 + struct.unpack('<Q', f.read(8))[0]


def replace_byte(path, lo, hi, rng):
    with open(path, 'r+b') as f:
        at = rng.randrange(lo, hi)
        f.seek(at)
        old = f.read(1)[0]
        new = rng.choice([b for b in range(256) if b != old])
        f.seek(at)
        f.write(bytes([new]))
    return '%s byte %d: %02x -> %02x' % (os.path.basename(path), at, old, new)


def leaves(node, path=()):
    """Every (path, value) of a JSON tree, the containers included."""
    yield path, node
    if isinstance(node, dict):
        for k, v in node.items():
            yield from leaves(v, path + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from leaves(v, path + (i,))


def edited(value, rng):
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return rng.choice([value + 1, value - 1, -value - 1, 0, 2**40, -(2**62), 2**63, 1.5, str(value), None])
    if isinstance(value, str):
        choices = [value + 'x', value[:-1], '', 'planc-checkpoint-9', 0]
        if value:
            i = rng.randrange(len(value))
            choices.append(value[:i] + chr(rng.randrange(32, 127)) + value[i + 1:])
        return rng.choice(choices)
    if isinstance(value, list):
        return rng.choice([value[:-1], value + [value[-1] if value else 1], [], {}, 3])
    if isinstance(value, dict):
        return rng.choice([{}, [], None])
    return 0


def edit_field(path, rng):
    index = json.load(open(path))
    spots = [(p, v) for p, v in leaves(index) if p and p[-1] != 'checksum']
    where, value = rng.choice(spots)
    parent = index
    for key in where[:-1]:
        parent = parent[key]
    new = edited(value, rng)
    if rng.random() < 0.2 and isinstance(parent, dict):
        del parent[where[-1]]
        what = 'removed'
    else:
        parent[where[-1]] = new
        what = '%s -> %s' % (json.dumps(value)[:40], json.dumps(new)[:40])
    fresh = rng.random() < 0.5 and 'checksum' in index
    if fresh:  # a careful editor: the checksum written anew
        rest = {k: v for k, v in index.items() if k != 'checksum'}
        text = json.dumps(rest, separators=(',', ':'), sort_keys=True, ensure_ascii=False)
        index['checksum'] = '%08x' % crc32c(text.encode())
    json.dump(index, open(path, 'w'), indent=2)
    return 'index %s: %s%s' % ('/'.join(map(str, where)), what, ' (checksum rewritten)' if fresh else '')


def damage(folder, kind, rng):
    if kind in ('data', 'header'):
        f = os.path.join(folder, rng.choice(rank_files(folder)))
        end = header_end(f)
        lo, hi = (end, os.path.getsize(f)) if kind == 'data' else (0, end)
        return replace_byte(f, lo, hi, rng)
    index = os.path.join(folder, 'index.json')
    if kind == 'index':
        return replace_byte(index, 0, os.path.getsize(index), rng)
    return edit_field(index, rng)


def outcome(cmd, what, baseline=None, metrics=None):
    """'error', 'same', or the failure."""
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, errors='replace', timeout=120)
    except subprocess.TimeoutExpired:
        return 'HANG: ' + what
    err = p.stderr.strip().splitlines()
    if p.returncode == 1 and any(l.startswith(('error:', 'planc: error:')) for l in err) and \
            not any('terminate called' in l or 'Assertion' in l or 'Sanitizer' in l for l in err):
        return 'error'
    if p.returncode == 0:
        if baseline is None or losses(metrics) == baseline:
            return 'same'
        return 'SILENT CHANGE: %s: losses %s, not %s' % (what, losses(metrics), baseline)
    return 'CRASH (status %d): %s: %s' % (p.returncode, what, ' | '.join(err[-3:]))


def main():
    exe, checkpoint, steps, baseline_path, trials, seed = sys.argv[1:7]
    kinds = sys.argv[7].split(',') if len(sys.argv) > 7 and sys.argv[7] else ['data', 'header', 'index', 'field']
    planc = sys.argv[8] if len(sys.argv) > 8 else None
    baseline = losses(baseline_path)
    rng = random.Random(int(seed))
    counts, failures = {}, []
    work = tempfile.mkdtemp()
    try:
        for t in range(int(trials)):
            kind = kinds[t % len(kinds)]
            trial = os.path.join(work, 'step-%08d' % t)
            shutil.copytree(checkpoint, trial)
            what = damage(trial, kind, rng)
            metrics = os.path.join(work, 'm.jsonl')
            if os.path.exists(metrics):
                os.remove(metrics)
            got = outcome([exe, '--resume', trial, '--steps', steps, '--metrics', metrics, '--checkpoint-every', '0',
                           '--sample', '0'], what, baseline, metrics)
            counts[(kind, got if got in ('error', 'same') else 'FAIL')] = \
                counts.get((kind, got if got in ('error', 'same') else 'FAIL'), 0) + 1
            if got not in ('error', 'same'):
                failures.append(got)
                print(got)
            if planc and t % 4 == 0:
                out = os.path.join(work, 'whole.safetensors')
                conv = outcome([planc, 'convert', trial, '-o', out], 'convert: ' + what)
                if conv not in ('error', 'same'):
                    failures.append(conv)
                    print(conv)
                if os.path.exists(out):
                    os.remove(out)
            shutil.rmtree(trial)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for kind in kinds:
        print('fuzz %-6s %3d trials: %3d clear errors, %3d bit-identical, %d failures' % (
            kind, sum(v for (k, _), v in counts.items() if k == kind), counts.get((kind, 'error'), 0),
            counts.get((kind, 'same'), 0), counts.get((kind, 'FAIL'), 0)))
    sys.exit(1 if failures else 0)


if __name__ == '__main__':
    main()
