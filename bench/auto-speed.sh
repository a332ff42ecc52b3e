#!/usr/bin/env bash
# How long `planc auto` takes to search the plans of GPT-3 175B on 1024 GPUs
# (bench/gpt3-175b-1024.plan): every mesh, ZeRO stage, sequence parallel,
# recompute, micro-batch and schedule, the best analysed in full. The goal
# is 10 s on a 2-core machine. In the same run, for scale, `planc check` of
# the plan as written (one full analysis), so the ratio says how many checks
# the search costs on whatever machine this runs on. It also reports the
# predicted step of the plan the search picks against the published plan's.
#
#   bench/auto-speed.sh [--runs N] [--planc PATH] [--limit S] [PLAN]
#
# Defaults: 3 runs (best of them), build/bin/planc, the plan above, a limit
# of 10 s on the best wall time of `planc auto`. Exits 1 if the limit is
# missed, the picked plan is predicted slower than the plan as written, or
# planc fails; 2 on a usage error.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
runs=3 planc=$ROOT/build/bin/planc limit=10 plan=$ROOT/bench/gpt3-175b-1024.plan
while (($#)); do
  case $1 in
    --runs) runs=$2; shift 2 ;;
    --planc) planc=$2; shift 2 ;;
    --limit) limit=$2; shift 2 ;;
    -h|--help) sed -n '2,15p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "auto-speed.sh: unknown option '$1'" >&2; exit 2 ;;
    *) plan=$1; shift ;;
  esac
done
if [[ ! -x $planc ]]; then
  echo "auto-speed.sh: no planc at $planc (build it: scripts/build.sh)" >&2
  exit 2
fi
if ! [[ $runs =~ ^[1-9][0-9]*$ ]]; then
  echo "auto-speed.sh: --runs needs a positive integer" >&2
  exit 2
fi

exec /usr/bin/python3 - "$runs" "$planc" "$limit" "$plan" <<'PY'
import json, re, subprocess, sys, time

runs, planc, limit, plan = int(sys.argv[1]), sys.argv[2], float(sys.argv[3]), sys.argv[4]

def best_of(args, ok=(0,)):
    times, last = [], None
    for _ in range(runs):
        t0 = time.perf_counter()
        last = subprocess.run(args, capture_output=True, text=True)
        times.append(time.perf_counter() - t0)
        if last.returncode not in ok:
            sys.exit("auto-speed.sh: %s failed (%d):\n%s" % (" ".join(args[:2]), last.returncode, last.stderr[-2000:]))
    return min(times), last

check_s, check = best_of([planc, "check", "--json", plan], ok=(0, 1))
auto_s, auto = best_of([planc, "auto", plan])
written = json.loads(check.stdout)["time"]["step_s"]
m = re.search(r"^\s+1\. (.*)\n\s+(.*?), ([0-9.]+) s per step", auto.stderr, re.M)
if not m:
    sys.exit("auto-speed.sh: no best plan in planc auto's report:\n" + auto.stderr[-2000:])
picked = float(m.group(3))
searched = re.search(r"(\d+) candidate plans, (\d+) profiles, (\d+) analysed in full", auto.stderr)
print("plan: %s" % plan)
print("planc check (one full analysis): %.2f s; planc auto: %.2f s (%.1f checks); %s candidates, %s profiles, %s analysed in full"
      % (check_s, auto_s, auto_s / check_s, searched.group(1), searched.group(2), searched.group(3)))
print("predicted step: as written %.2f s; picked %.2f s (%.3fx): %s" % (written, picked, picked / written, m.group(1)))
bad = []
if auto_s > limit:
    bad.append("planc auto took %.2f s, over the %.1f s limit" % (auto_s, limit))
if picked > written * (1 + 1e-9):
    bad.append("the picked plan is predicted slower than the plan as written")
for b in bad:
    print("auto-speed.sh: " + b)
sys.exit(1 if bad else 0)
PY
