"""The first fix of an over-budget `planc check --json` (argv[1]) must fit
and be predicted at least as fast as each of the other plans' (argv[2:])."""
import json
import os
import sys

over = json.load(open(sys.argv[1]))
first = over["fixes"][0]
out = ["first fix fits: %s" % first["fits"]]
for path in sys.argv[2:]:
    other = json.load(open(path))
    name = ".".join(os.path.basename(path).split(".")[-2:])
    out.append("as fast as %s: %s" % (name, first["step_s"] <= other["time"]["step_s"] * (1 + 1e-9)))
print("; ".join(out))
