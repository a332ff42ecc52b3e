"""Reads a calibration file of `planc calibrate` and prints what a test
checks: the GEMM curve's shape and the measured figures."""
import json
import sys

c = json.load(open(sys.argv[1]))
gemm = c["gemm"]
flops = [p[0] for p in gemm]
peaks = c.get("peak_flops", {})
out = ["gemm points %d" % len(gemm),
       "increasing: %s" % (flops == sorted(flops) and len(set(flops)) == len(flops)),
       "efficiencies in (0, 1]: %s" % all(0 < p[1] <= 1 for p in gemm),
       "peaks f32 f64 bf16 f16 positive: %s" % all(peaks.get(d, 0) > 0 for d in ("f32", "f64", "bf16", "f16")),
       "memory bandwidth positive: %s" % (c.get("memory_bandwidth", 0) > 0)]
if "intra_node" in c:
    out.append("intra_node bandwidth positive: %s" % (c["intra_node"]["bandwidth"] > 0))
else:
    out.append("no link: True")
print(", ".join(out))
