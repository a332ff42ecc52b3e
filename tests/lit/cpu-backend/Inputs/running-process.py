"""Starts a compiled plan with the waits of its threads left to it, and once
it trains prints what ps and top see of it: its name (the kernel's comm),
its argv[0], and what it chose for its threads' waits (in the environment of
the process it started again as, runtime/ThreadPools.h). Then ends it.

    running-process.py EXE
"""
import os
import subprocess
import sys

exe = sys.argv[1]
env = {k: v for k, v in os.environ.items()
       if k not in ('OMP_WAIT_POLICY', 'GOMP_SPINCOUNT', 'KMP_BLOCKTIME', 'OPENBLAS_THREAD_TIMEOUT',
                    'PLANC_THREAD_WAITS')}
p = subprocess.Popen([exe, '--steps', '1000000000', '--log-every', '1000000000', '--sample', '0'],
                     stdout=subprocess.PIPE, env=env, text=True)
try:
    for line in p.stdout:
        if line.startswith('arena'):  # printed once it has settled its threads
            break
    else:
        sys.exit('%s ended before it trained (status %s)' % (exe, p.wait()))
    proc = '/proc/%d/' % p.pid
    print('comm:', open(proc + 'comm').read().strip())
    print('argv[0]:', open(proc + 'cmdline').read().split('\0')[0])
    environ = dict(e.split('=', 1) for e in open(proc + 'environ').read().split('\0') if '=' in e)
    print('PLANC_THREAD_WAITS:', environ.get('PLANC_THREAD_WAITS', '(not set)'))
    set_for_waits = [k for k in ('OMP_WAIT_POLICY', 'GOMP_SPINCOUNT', 'KMP_BLOCKTIME') if k in environ]
    print('waits set:', ' '.join(set_for_waits) or '(none)')
finally:
    p.kill()
    p.wait()
