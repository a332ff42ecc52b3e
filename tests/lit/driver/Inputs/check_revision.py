"""Reads `planc --version` on stdin and says whether its revision names a
commit of the source tree ROOT: `revision of this tree`, or what is wrong.

    planc --version | check_revision.py ROOT
"""
import re
import subprocess
import sys


def git(*args):
    try:
        return subprocess.run(['git', '-C', sys.argv[1]] + list(args), stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True).returncode == 0
    except OSError:  # no git at all: the build could not read a revision either
        return False


line = sys.stdin.read()
m = re.search(r'\(([^()]+)\)\s*$', line)
if not m:
    sys.exit('no revision in %r' % line)
revision = m.group(1)
in_git = git('rev-parse', '--git-dir')
if revision == 'unknown':
    print('revision of this tree' if not in_git else 'unknown, but %s is a git checkout' % sys.argv[1])
elif git('rev-parse', '--verify', '--quiet', revision + '^{commit}'):
    print('revision of this tree')
else:
    print('%r is no commit of %s' % (revision, sys.argv[1]))
