"""Reads `planc check --json` and checks that its "time" object agrees with
itself: the busiest stage's total is the step, MFU <= HFU, MFU is model
FLOPs over step x devices x peak, and the breakdown of every stage fits in
the step (the hidden communication runs beside the compute, and
recompute is part of the compute)."""
import json
import sys

t = json.load(open(sys.argv[1]))["time"]
step = t["step_s"]
busiest = t["stages"][t["busiest_stage"]]
mfu_ok = abs(t["mfu"] - t["model_flops"] / (step * t["devices"] * t["peak_flops"])) < 1e-9
fits = all(sum(v for k, v in s["breakdown"].items() if k not in ("recompute_s", "comm_hidden_s")) <= step * (1 + 1e-9) for s in t["stages"])
print("stages %d, busiest total == step: %s, mfu <= hfu: %s, mfu == model/(step x devices x peak): %s, "
      "categories within the step: %s" % (len(t["stages"]), abs(busiest["total_s"] - step) < 1e-9 * step,
                                          t["mfu"] <= t["hfu"], mfu_ok, fits))
