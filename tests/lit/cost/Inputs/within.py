"""Reads `planc check --json` on stdin and compares the predicted hardware
FLOP/s per device (model FLOPs plus recompute, the count Narayanan et al.
2021 report) with a published figure: prints the two and whether the
prediction is within the tolerance; exits 1 when it is not."""
import argparse
import json
import sys

parser = argparse.ArgumentParser()
parser.add_argument("--published", type=float, required=True, help="TFLOP/s per device")
parser.add_argument("--tolerance", type=float, default=0.2)
args = parser.parse_args()
report = json.load(sys.stdin)
if report.get("verdict") not in ("fits", "low_headroom"):
    print("the plan does not fit:", report.get("verdict"))
    sys.exit(1)
time = report["time"]
predicted = time["hardware_flops"] / time["step_s"] / time["devices"] / 1e12
error = predicted / args.published - 1
ok = abs(error) <= args.tolerance
print("predicted %.1f TFLOP/s per device, published %.0f: %+.1f%%, %s %d%%" %
      (predicted, args.published, error * 100, "within" if ok else "NOT within", round(args.tolerance * 100)))
sys.exit(0 if ok else 1)
