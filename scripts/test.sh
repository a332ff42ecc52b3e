#!/usr/bin/env bash
# Installs what is missing, builds planc and runs every test group:
#
#   unit        GoogleTest unit tests (build/bin/planc-unittests)
#   lit         the lit + FileCheck suite (tests/lit), which also installs the build and
#               builds examples/embed and a C program against it (tests/lit/install) and
#               compares the docs' generated regions with planc's output (tests/lit/docs)
#   e2e/*       the end-to-end scripts tests/e2e/*.sh (hostile inputs, mutated plans,
#               the schedule SVG screenshot in headless Chromium, ...)
#   asan unit, asan lit   the same two again, built with clang's AddressSanitizer + UBSan
#               (build-asan/)
#   fuzz        libFuzzer for PLANC_FUZZ_SECONDS (default 120) in all, split over two
#               targets of the same sanitized build: plan-fuzz (.plan text through the frontend and the memory
#               check; seeds examples/*.plan, lib/std/*.plan) and ir-fuzz (textual IR
#               through the parser and plan-opt's passes; seeds the lit suite's .ir files)
#
#   scripts/test.sh [--quick]     --quick skips the sanitizer build and the fuzzer
#
# Two lanes share the machine: the build of build/ and its groups in front;
# behind them, at the lowest priority, the sanitized build, its two groups and
# the fuzzer, which take the CPU time the front lane leaves (its groups often
# wait on one compiler or one process) and all of it once the front lane ends.
# The back lane's output is printed when it ends.
#
# The last line is `N passed, N failed` over the groups, after a summary of each
# group's time and, under `why:`, each failed group's FAIL and error lines; the
# exit status is 0 only if every group passed.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

quick=0
for arg in "$@"; do
  case $arg in
    --quick) quick=1 ;;
    -h|--help) sed -n '2,/^[^#]/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "test.sh: unknown argument '$arg' (try --help)" >&2; exit 2 ;;
  esac
done

FUZZ_SECONDS=${PLANC_FUZZ_SECONDS:-120}
PYTHON=/usr/bin/python3
export NO_COLOR=1 GTEST_COLOR=no PLANC_SOURCE_DIR=$ROOT

t_all=$(date +%s%N)
# The lane a function runs in (main, asan): its scratch files are its own.
lane=main

# cpu_of CMD...: runs CMD (a function or a program) and writes the CPU seconds
# (user + system) of everything it ran to $bg/cpu.$lane; returns CMD's status. The
# summary prints them beside the wall time: on two shared cores the wall time
# of a group depends on what runs beside it, its CPU time much less.
cpu_of() {
  local rc=0
  "$@" || rc=$?
  # `times`' second line: the children's user and system time, e.g. "1m2.500s 0m3.250s".
  # (Not `times | ...`: the left side of a pipe is a new process, whose children are none.)
  times >"$bg/times.$lane"
  sed -n 2p "$bg/times.$lane" | awk '{ t = 0; for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); t += a[1] * 60 + a[2] } printf "%.1f\n", t }' >"$bg/cpu.$lane"
  return $rc
}
cpu_seconds() { cat "$bg/cpu.$lane" 2>/dev/null || echo -; }

# record STATUS WALL CPU NAME: one line of the summary. Both lanes append to
# the same files (one short write each), in the order the lines happen; a
# group also appends passed, failed or skipped to $bg/counts.
record() { printf '%-7s %7s %1s %8s %1s  %s\n' "$1" "$2" "${2:+s}" "$3" "${3:+s}" "$4" >>"$bg/results"; }

seconds_since() { # start-in-ns -> "12.3"
  local d=$(( $(date +%s%N) - $1 ))
  printf '%d.%d' $((d / 1000000000)) $((d / 100000000 % 10))
}

# step NAME CMD...: something the groups need (setup, a build); not counted.
step() {
  local name=$1; shift
  echo "=== $name"
  local t0 rc=0 dt
  t0=$(date +%s%N)
  rm -f "$bg/cpu.$lane"
  (cpu_of "$@") || rc=$?
  dt=$(seconds_since "$t0")
  if ((rc == 0)); then
    echo "=== $name: done (${dt} s)"
    record done "$dt" "$(cpu_seconds)" "$name"
  else
    echo "=== $name: FAILED (exit $rc, ${dt} s)"
    record FAILED "$dt" "$(cpu_seconds)" "$name"
  fi
  return $rc
}

# group NAME CMD...: one counted test group.
group() {
  local name=$1; shift
  echo
  echo "=== $name"
  local t0 rc=0 dt log
  log=$(mktemp "$bg/group-XXXXXX.log")
  t0=$(date +%s%N)
  # Also kept, so the summary can say why a group failed (pipefail: the
  # group's status, not tee's).
  rm -f "$bg/cpu.$lane"
  cpu_of "$@" 2>&1 | tee "$log" || rc=$?
  dt=$(seconds_since "$t0")
  if ((rc == 0)); then
    echo "=== $name: passed (${dt} s)"
    record passed "$dt" "$(cpu_seconds)" "$name"
    echo passed >>"$bg/counts"
  else
    echo "=== $name: FAILED (exit $rc, ${dt} s)"
    record FAILED "$dt" "$(cpu_seconds)" "$name"
    echo failed >>"$bg/counts"
    printf '  %s\n' "$name:$(failure_lines "$log")" >>"$bg/why"
  fi
}

# failure_lines LOG: the lines of a failed group's output that say why (its
# FAIL and error lines, else its last lines), short enough for a summary.
failure_lines() {
  local lines
  lines=$(grep -E 'FAIL|[Ee]rror|Assertion|Sanitizer|Timed out' "$1" 2>/dev/null | grep -v '^=== ' | tail -n 8) ||
    true
  [[ -n $lines ]] || lines=$(tail -n 8 "$1" 2>/dev/null)
  printf '\n%s' "$lines" | cut -c1-240 | sed '1!s/^/    /'
}

# not_run NAME REASON: a group that could not run because a step failed.
not_run() {
  echo "=== $1: FAILED (not run: $2)"
  record FAILED - - "$1 (not run: $2)"
  echo failed >>"$bg/counts"
}

skip() {
  echo "=== $1: skipped ($2)"
  record skipped - - "$1 ($2)"
  echo skipped >>"$bg/counts"
}

finish() {
  echo
  echo "=== summary (total $(seconds_since "$t_all") s)"
  printf '  %-7s %9s %10s    %s\n' "" wall cpu ""
  sed 's/^/  /' "$bg/results"
  if [[ -s $bg/why ]]; then
    echo "why:"
    cat "$bg/why"
  fi
  local passed failed skipped
  passed=$(grep -cx passed "$bg/counts" || true)
  failed=$(grep -cx failed "$bg/counts" || true)
  skipped=$(grep -cx skipped "$bg/counts" || true)
  if ((skipped)); then
    echo "$passed passed, $failed failed, $skipped skipped"
  else
    echo "$passed passed, $failed failed"
  fi
  if ((failed)); then exit 1; fi
  exit 0
}

unit_tests() { # BUILD_DIR
  local bin=$1/bin/planc-unittests
  if [[ ! -x $bin ]]; then
    echo "no $bin: tests/unit has no tests, or the build did not make them"
    return 1
  fi
  # Two shards side by side (GoogleTest's own sharding: every test in exactly
  # one), so that the tests take both cores; each shard's output after both end.
  local shard rc=0 pids=()
  for shard in 0 1; do
    GTEST_TOTAL_SHARDS=2 GTEST_SHARD_INDEX=$shard timeout 900 "$bin" --gtest_brief=1 >"$bg/unit-$lane-$shard.log" 2>&1 &
    pids+=($!)
  done
  for shard in 0 1; do
    wait "${pids[$shard]}" || rc=1
    cat "$bg/unit-$lane-$shard.log"
  done
  return $rc
}

lit_tests() { # BUILD_DIR [TIMEOUT_SECONDS]
  timeout "${2:-1200}" "$PYTHON" "$LIT" -sv "$1/tests/lit"
}

# One libFuzzer target for some seconds: run_fuzzer NAME SECONDS DICT SEED_FILES...
run_fuzzer() {
  local name=$1 seconds=$2 dict=$3
  shift 3
  local dir=build-asan/fuzz/$name
  local seeds=$dir/seeds corpus=$dir/corpus artifacts=$dir/artifacts log=$dir/fuzz.log
  rm -rf "$seeds" "$artifacts"
  mkdir -p "$seeds" "$corpus" "$artifacts"
  cp "$@" "$seeds"/ || return 1
  echo "$name for $seconds s: corpus $corpus, seeds $seeds, log $log"
  # New inputs go to the first folder (kept between runs); the seeds are read only.
  local rc=0
  timeout $((seconds + 300)) "build-asan/bin/$name" \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 \
    -dict="$dict" -artifact_prefix="$artifacts/" -print_final_stats=1 \
    "$corpus" "$seeds" >"$log" 2>&1 || rc=$?
  if ((rc == 0)); then
    grep -E '^(#[0-9]+[[:space:]]+DONE|stat::(number_of_executed_units|new_units_added|peak_rss_mb))' "$log" || true
    return 0
  fi
  tail -n 80 "$log"
  local a
  for a in "$artifacts"/*; do
    [[ -e $a ]] || continue
    echo "reproduce: build-asan/bin/$name $a"
  done
  return 1
}

# The fuzzing time is split in two halves: the .plan frontend and memory
# check, and the textual IR and the passes. The two run side by side, a
# libFuzzer process keeping one core, so the group takes half the time and
# both cores all of it (the back lane runs alone by then).
fuzz() {
  local plan_seconds=$((FUZZ_SECONDS - FUZZ_SECONDS / 2))
  local ir_seconds=$((FUZZ_SECONDS - plan_seconds))
  local rc=0 ir_job=
  if ((ir_seconds > 0)); then
    mapfile -t ir_seeds < <(find tests/lit -name '*.ir')
    run_fuzzer ir-fuzz "$ir_seconds" tests/fuzz/ir.dict "${ir_seeds[@]}" >"$bg/ir-fuzz.out" 2>&1 &
    ir_job=$!
  fi
  run_fuzzer plan-fuzz "$plan_seconds" tests/fuzz/plan.dict examples/*.plan lib/std/*.plan || rc=1
  if [[ -n $ir_job ]]; then
    wait "$ir_job" || rc=1
    cat "$bg/ir-fuzz.out"
  fi
  return $rc
}

# --- setup --------------------------------------------------------------------
# Scratch files of the run (group logs, CPU times, the summary's lines).
bg=$(mktemp -d)
back=
# (No bare `a && b` here: under set -e a failing last command of the trap
# would become the script's exit status.)
trap 'if [[ -n $back ]]; then kill -- -"$back" 2>/dev/null || kill "$back" 2>/dev/null || true; fi; rm -rf "$bg"' EXIT
e2e_scripts=(tests/e2e/*.sh)
[[ -e ${e2e_scripts[0]} ]] || e2e_scripts=()

if ! step setup bash scripts/setup.sh; then
  for g in unit lit "${e2e_scripts[@]}" "asan unit" "asan lit" fuzz; do not_run "${g#tests/}" "setup failed"; done
  finish
fi
LIT=$(llvm-config-14 --prefix)/build/utils/lit/lit.py

# --- the back lane: AddressSanitizer + UBSan, then libFuzzer ------------------
back_lane() {
  lane=asan
  # The lowest priority for everything of this lane: the front lane's groups
  # run as fast as alone.
  renice -n 19 -p "$BASHPID" >/dev/null
  if step "build (build-asan/, beside the front lane)" bash scripts/build.sh --asan --quiet; then
    # abort_on_error: a report ends in SIGABRT, so `not` in lit tests cannot hide it.
    # quarantine_size_mb=64: freed memory is reused sooner than after ASan's
    # default 256 MiB (tests/lit/lit.cfg.py says why; the same options).
    export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1:strict_string_checks=1:quarantine_size_mb=64}
    export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1:abort_on_error=1}
    group "asan unit" unit_tests build-asan
    # Longer: at the lowest priority, beside the front lane, and sanitized.
    group "asan lit" lit_tests build-asan 2700
    unset ASAN_OPTIONS UBSAN_OPTIONS
    if ((FUZZ_SECONDS <= 0)); then
      skip fuzz "PLANC_FUZZ_SECONDS=$FUZZ_SECONDS"
    else
      group "fuzz ${FUZZ_SECONDS} s" fuzz
    fi
  else
    not_run "asan unit" "build failed"; not_run "asan lit" "build failed"; not_run fuzz "build failed"
  fi
}

if ((quick)); then
  skip "asan unit" --quick; skip "asan lit" --quick; skip fuzz --quick
else
  # Its own process group, so that the trap ends all of it.
  set -m
  back_lane >"$bg/back-lane.log" 2>&1 &
  back=$!
  set +m
fi

# --- the front lane: build/ and its groups -----------------------------------
if step "build (build/)" bash scripts/build.sh --quiet; then
  group unit unit_tests build
  group lit lit_tests build
  for script in "${e2e_scripts[@]}"; do
    name=${script#tests/}
    group "${name%.sh}" env PLANC="$ROOT/build/bin/planc" bash "$script"
  done
else
  for g in unit lit "${e2e_scripts[@]}"; do g=${g#tests/}; not_run "${g%.sh}" "build failed"; done
fi

if [[ -n $back ]]; then
  echo
  echo "=== waiting for the back lane (build-asan/, asan unit, asan lit, fuzz)"
  wait "$back" || true
  back=
  cat "$bg/back-lane.log"
fi

finish
