"""Reads the notes of an over-budget `planc check` on stdin and checks that
the fixes that fit come first, in order of their predicted step time."""
import re
import sys

UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6}
times, seen_over = [], False
for line in sys.stdin:
    m = re.match(r"note: fix \d+: .*: peak .* \((fits[^)]*|over)\); step ([0-9.]+) (s|ms|us) predicted", line)
    if not m:
        continue
    if m.group(1) == "over":
        seen_over = True
        continue
    if seen_over:
        sys.exit("a fix that fits comes after one that does not: " + line.strip())
    times.append(float(m.group(2)) * UNITS[m.group(3)])
if times != sorted(times):
    sys.exit("fitting fixes are not in order of predicted step time: %s" % times)
print("%d fitting fixes in order of predicted step time" % len(times))
