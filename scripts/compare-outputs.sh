#!/usr/bin/env bash
# Records what planc prints for every example and every test model, or
# compares it with a recording: a restructuring of the compiler must leave
# every byte the same.
#
#   scripts/compare-outputs.sh record <dir> [planc]   write the outputs into <dir>
#   scripts/compare-outputs.sh compare <dir> [planc]  run again, diff against <dir>
#
# planc defaults to build/bin/planc. Each case is one command line on one
# plan; its stdout, stderr and exit status go to <dir>/<case>.{out,err,rc}.
# The largest examples (gpt3-175b, 13b) skip the emits that print the whole
# partitioned step, which take minutes and megabytes. The seconds a `planc
# run` step took are left out, and so are the progress lines of a slow step
# (scripts/progress-lines.ere).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mode=${1:-} dir=${2:-}
planc=${3:-$ROOT/build/bin/planc}
if [[ $mode != record && $mode != compare ]] || [[ -z $dir ]]; then
  sed -n '2,13p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
  exit 2
fi
[[ -x $planc ]] || { echo "compare-outputs: no planc at $planc" >&2; exit 2; }

out=$dir
if [[ $mode == compare ]]; then
  [[ -d $dir ]] || { echo "compare-outputs: no recording in $dir" >&2; exit 2; }
  out=$(mktemp -d)
  trap 'rm -rf "$out"' EXIT
fi
mkdir -p "$out"

cd "$ROOT"
plans=(examples/*.plan tests/lit/verify/Inputs/*.plan)
small=(examples/tiny-gpt.plan examples/tiny-llama.plan tests/lit/verify/Inputs/*.plan)
big='gpt3-175b|13b-8gpu'

# The progress lines that appear only when a step is slow on this machine.
progress=()
while IFS= read -r pattern; do
  [[ -z $pattern || $pattern == '#'* ]] || progress+=(-e "\#${pattern//#/\\#}#d")
done <scripts/progress-lines.ere

# Runs planc with the given arguments and records the case under a name.
run_case() {
  local name=$1; shift
  local rc=0
  "$planc" "$@" >"$out/$name.out" 2>"$out/$name.err" || rc=$?
  sed -i -E "${progress[@]}" "$out/$name.err"
  echo "$rc" >"$out/$name.rc"
}

n=0
for plan in "${plans[@]}"; do
  base=$(basename "$plan" .plan)
  run_case "$base.check" check "$plan"
  run_case "$base.check-json" check --json "$plan"
  for what in ir ir-train memory mesh schedule schedule-svg; do
    run_case "$base.emit-$what" emit --emit=$what "$plan"
  done
  run_case "$base.emit-memory-json" emit --emit=memory --json "$plan"
  if [[ ! $base =~ $big ]]; then
    run_case "$base.emit-ir-partitioned" emit --emit=ir-partitioned "$plan"
    run_case "$base.emit-comm" emit --emit=comm "$plan"
    run_case "$base.emit-ir-rank0" emit --emit=ir-rank --rank 0 "$plan"
    run_case "$base.emit-kernels" emit --emit=kernels "$plan"
    run_case "$base.emit-kernels-cuda" emit --emit=kernels-cuda "$plan"
  fi
  run_case "$base.verify-structure" verify --structure-only "$plan"
  n=$((n + 1))
done
for plan in "${small[@]}"; do
  base=$(basename "$plan" .plan)
  run_case "$base.verify" verify "$plan"
  run_case "$base.run" run --steps 2 "$plan"
  # The wall time of a step is the one thing that may differ.
  sed -i -E 's/  [0-9.]+ s$//' "$out/$base.run.out"
done
echo "compare-outputs: $n plans, $(ls "$out" | grep -c '\.rc$') cases" >&2

if [[ $mode == compare ]]; then
  if diff -r "$dir" "$out" >"$out.diff" 2>&1; then
    echo "compare-outputs: every output is byte-identical to $dir" >&2
    rm -f "$out.diff"
  else
    echo "compare-outputs: outputs differ from $dir:" >&2
    head -n 80 "$out.diff" >&2
    rm -f "$out.diff"
    exit 1
  fi
fi
