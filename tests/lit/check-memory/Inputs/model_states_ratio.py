"""Prints the per-rank model states of a `planc check --json` ledger against
another's, next to ZeRO's formula for the same ratio (Rajbhandari et al.):
  ratio <measured, 3 digits> paper <formula, 3 digits> <within 1%|off>
Usage: model_states_ratio.py ONE.json MANY.json ZERO N"""
import json
import sys


def states(path):
    ledger = json.load(open(path))
    return max(sum(s["model_states"].values()) for s in ledger["stages"])


one, many, zero, n = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
ratio = states(many) / states(one)
paper = {0: 16, 1: 4 + 12 / n, 2: 2 + 14 / n, 3: 16 / n}[zero] / 16
# Padding only adds; at dims this large against N it adds well under 1%.
verdict = "within 1%" if paper <= ratio <= paper * 1.01 else "off"
print("ratio %.3f paper %.3f %s" % (ratio, paper, verdict))
