"""Runs a compiled plan on one core at nice 10 beside a process that keeps
that core busy (about a tenth of the core is left to it), so that its steps
take many times the predicted step whatever else the machine does, and
prints what it prints.

    beside-busy.py EXE [OPTIONS...]
"""
import os
import subprocess
import sys

core = min(os.sched_getaffinity(0))


def on_the_core():
    os.sched_setaffinity(0, {core})


busy = subprocess.Popen([sys.executable, '-c', 'while True: pass'], preexec_fn=on_the_core)
try:
    run = subprocess.run(sys.argv[1:], preexec_fn=lambda: (on_the_core(), os.nice(10)), stdout=subprocess.PIPE,
                         text=True)
    sys.stdout.write(run.stdout)
    if run.returncode != 0:
        sys.exit('%s ended with status %d' % (sys.argv[1], run.returncode))
finally:
    busy.kill()
    busy.wait()
