"""Applies every fix `planc check --json` says fits, and checks the plan again.

  apply-fixes.py PLANC PLAN [CHECK OPTIONS...]

Runs `PLANC check --json OPTIONS PLAN`, then for each fix whose `fits` is
true `PLANC check --quiet OPTIONS --set S... PLAN` with the fix's --set
values; prints one line per fix with the exit status (0: the changed plan
checks and fits) and the new peak the check reports against the claimed one.
"""
import json
import subprocess
import sys

planc, plan, options = sys.argv[1], sys.argv[2], sys.argv[3:]
report = json.loads(subprocess.run([planc, 'check', '--json'] + options + [plan],
                                   stdout=subprocess.PIPE, stderr=subprocess.DEVNULL).stdout)
print('verdict', report['verdict'])
for n, fix in enumerate(report['fixes'], 1):
    if not fix['fits']:
        continue
    sets = [a for s in fix['set'] for a in ('--set', s)]
    run = subprocess.run([planc, 'check', '--json', '-w'] + options + sets + [plan],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    again = json.loads(run.stdout)
    same = again['peak_arena_bytes'] == fix['peak_arena_bytes']
    print('fix %d: %s: exit %d, verdict %s, peak as claimed: %s' % (n, fix['change'], run.returncode,
                                                                   again['verdict'], same))
