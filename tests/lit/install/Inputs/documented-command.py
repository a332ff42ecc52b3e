"""Prints a command as a document writes it, made runnable here, so a test runs what the reader is told.

    documented-command.py FILE PATTERN [FROM=TO ...] [-- EXTRA ...]

The command is the first one in FILE that starts with PATTERN: up to a closing backtick, a
`#` comment or the end of its line. Each FROM=TO replaces FROM (the document's /opt/planc,
app.c, ...) in it; EXTRA arguments are appended. Exits 1 when FILE has no such command.
"""
import re
import shlex
import sys

args = sys.argv[1:]
extra = []
if '--' in args:
    extra = args[args.index('--') + 1:]
    args = args[:args.index('--')]
path, pattern, pairs = args[0], args[1], args[2:]
for line in open(path, encoding='utf-8'):
    at = line.find(pattern)
    if at < 0:
        continue
    command = re.split(r'`|\s#', line[at:].rstrip('\n'))[0].strip()
    for pair in pairs:
        old, new = pair.split('=', 1)
        command = command.replace(old, new)
    print(' '.join([command] + [shlex.quote(e) for e in extra]))
    sys.exit(0)
print('%s: no command starting with %r' % (path, pattern), file=sys.stderr)
sys.exit(1)
