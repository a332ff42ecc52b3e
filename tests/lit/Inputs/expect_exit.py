"""expect_exit.py N CMD [ARGS...]: run CMD, pass its stdout and stderr through,
and exit 0 only if CMD exited with status N. A command killed by a signal (a
crash) never matches."""
import subprocess
import sys


def main():
    if len(sys.argv) < 3:
        sys.stderr.write('usage: expect_exit.py N CMD [ARGS...]\n')
        return 2
    expected = int(sys.argv[1])
    proc = subprocess.run(sys.argv[2:], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    sys.stdout.buffer.write(proc.stdout)
    sys.stderr.buffer.write(proc.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    if proc.returncode < 0:
        sys.stderr.write('expect_exit: %s was killed by signal %d\n'
                         % (sys.argv[2], -proc.returncode))
        return 1
    if proc.returncode != expected:
        sys.stderr.write('expect_exit: %s exited with %d, expected %d\n'
                         % (sys.argv[2], proc.returncode, expected))
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
