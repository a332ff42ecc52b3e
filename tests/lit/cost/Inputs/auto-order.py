"""Reads `planc auto`'s stderr: the best plans must be in order of predicted
step time and each within the budget."""
import re
import sys

UNITS = {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40}
SECONDS = {"s": 1.0, "ms": 1e-3, "us": 1e-6}
budget, plans = None, []
for line in sys.stdin:
    m = re.search(r"budget ([0-9.]+) (\w+)$", line.strip())
    if m and line.startswith("planc auto:"):
        budget_text = m.group(1) + " " + m.group(2)
        budget = float(m.group(1)) * UNITS[m.group(2)]
    m = re.match(r"\s+([0-9.]+) (\w+)( \(over budget\))?, ([0-9.]+) (s|ms|us) per step", line)
    if m:
        plans.append((float(m.group(1)) * UNITS[m.group(2)], m.group(3) is not None,
                      float(m.group(4)) * SECONDS[m.group(5)]))
if budget is None or not plans:
    sys.exit("no budget or no plans in the input")
fits = all(not over and size <= budget * 1.0005 for size, over, _ in plans)
times = [t for _, _, t in plans]
print("%d plans, %s, %s" % (len(plans), "all within " + budget_text if fits else "NOT all within the budget",
                            "fastest first" if times == sorted(times) else "NOT fastest first"))
