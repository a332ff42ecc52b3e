"""Reads `planc auto`'s progress lines ("<plan>: 61.6 GiB (estimated 59.8
GiB), 15.08 s (estimated 14.70 s)") and checks each estimate's relative
error against the tolerances given (memory, time)."""
import re
import sys

UNITS = {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40, "s": 1.0, "ms": 1e-3, "us": 1e-6}
mem_tol, time_tol = float(sys.argv[1]), float(sys.argv[2])
pat = re.compile(r": ([0-9.]+) (\w+) \(estimated ([0-9.]+) (\w+)\), ([0-9.]+) (\w+) \(estimated ([0-9.]+) (\w+)\)")
rows = []
for line in sys.stdin:
    m = pat.search(line)
    if m:
        v = [float(m.group(i)) * UNITS[m.group(i + 1)] for i in (1, 3, 5, 7)]
        rows.append(v)
mem_ok = all(abs(est / real - 1) <= mem_tol for real, est, _, _ in rows)
time_ok = all(abs(est / real - 1) <= time_tol for _, _, real, est in rows)
for real, est, t, te in rows:
    if abs(est / real - 1) > mem_tol or abs(te / t - 1) > time_tol:
        print("off: memory %.3g vs %.3g, time %.3g vs %.3g" % (est, real, te, t))
print("%d candidates analysed in full; estimates within %d%% in memory: %s, within %d%% in time: %s" %
      (len(rows), round(mem_tol * 100), mem_ok, round(time_tol * 100), time_ok))
