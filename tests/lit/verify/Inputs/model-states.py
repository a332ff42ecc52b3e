"""Prints each pipeline stage's model states from `planc check --json`, one line a stage."""
import json
import sys

for stage in json.load(open(sys.argv[1]))["stages"]:
    s = stage["model_states"]
    print(f"stage {stage['stage']}: parameters {s['parameters']} gradients {s['gradients']} "
          f"optimizer_state {s['optimizer_state']}")
