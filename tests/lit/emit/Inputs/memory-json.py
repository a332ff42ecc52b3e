import json
import sys

plan = json.load(open(sys.argv[1]))
stages = plan["stages"]
keys = {"parameters", "gradients", "optimizer_state", "activations", "temporaries", "communication"}
print("stages", len(stages))
print("ranks", [s["ranks"] for s in stages])
print("categories sum to the peak:",
      all(set(s["at_peak"]) == keys and sum(s["at_peak"].values()) == s["peak_bytes"] for s in stages))
print("arena >= peak:", all(s["arena_bytes"] >= s["peak_bytes"] for s in stages))
print("timeline peaks at the peak:", all(max(s["timeline_bytes"]) == s["peak_bytes"] for s in stages))
print("peak stage", plan["peak_stage"], "work", stages[plan["peak_stage"]]["peak_at"]["work"])
