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
#               (build-asan/; it compiles while the groups above run, at the lowest priority)
#   fuzz        libFuzzer for PLANC_FUZZ_SECONDS (default 120) in all, split over two
#               targets of the same sanitized build: plan-fuzz (.plan text through the frontend and the memory
#               check; seeds examples/*.plan, lib/std/*.plan) and ir-fuzz (textual IR
#               through the parser and plan-opt's passes; seeds the lit suite's .ir files)
#
#   scripts/test.sh [--quick]     --quick skips the sanitizer build and the fuzzer
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
    -h|--help) sed -n '2,17p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "test.sh: unknown argument '$arg' (try --help)" >&2; exit 2 ;;
  esac
done

FUZZ_SECONDS=${PLANC_FUZZ_SECONDS:-120}
PYTHON=/usr/bin/python3
export NO_COLOR=1 GTEST_COLOR=no PLANC_SOURCE_DIR=$ROOT

passed=0 failed=0 skipped=0
report=() why=()
t_all=$(date +%s%N)

# cpu_of CMD...: runs CMD (a function or a program) and writes the CPU seconds
# (user + system) of everything it ran to $bg/cpu; returns CMD's status. The
# summary prints them beside the wall time: on two shared cores the wall time
# of a group depends on what runs beside it, its CPU time much less.
cpu_of() {
  local rc=0
  "$@" || rc=$?
  # `times`' second line: the children's user and system time, e.g. "1m2.500s 0m3.250s".
  # (Not `times | ...`: the left side of a pipe is a new process, whose children are none.)
  times >"$bg/times"
  sed -n 2p "$bg/times" | awk '{ t = 0; for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); t += a[1] * 60 + a[2] } printf "%.1f\n", t }' >"$bg/cpu"
  return $rc
}
cpu_seconds() { cat "$bg/cpu" 2>/dev/null || echo -; }

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
  rm -f "$bg/cpu"
  (cpu_of "$@") || rc=$?
  dt=$(seconds_since "$t0")
  if ((rc == 0)); then
    echo "=== $name: done (${dt} s)"
    report+=("$(printf '%-7s %7s s %8s s  %s' done "$dt" "$(cpu_seconds)" "$name")")
  else
    echo "=== $name: FAILED (exit $rc, ${dt} s)"
    report+=("$(printf '%-7s %7s s %8s s  %s' FAILED "$dt" "$(cpu_seconds)" "$name")")
  fi
  return $rc
}

# group NAME CMD...: one counted test group.
group() {
  local name=$1; shift
  echo
  echo "=== $name"
  local t0 rc=0 dt log
  log="$bg/group-$((passed + failed)).log"
  t0=$(date +%s%N)
  # Also kept, so the summary can say why a group failed (pipefail: the
  # group's status, not tee's).
  rm -f "$bg/cpu"
  cpu_of "$@" 2>&1 | tee "$log" || rc=$?
  dt=$(seconds_since "$t0")
  if ((rc == 0)); then
    passed=$((passed + 1))
    echo "=== $name: passed (${dt} s)"
    report+=("$(printf '%-7s %7s s %8s s  %s' passed "$dt" "$(cpu_seconds)" "$name")")
  else
    failed=$((failed + 1))
    echo "=== $name: FAILED (exit $rc, ${dt} s)"
    report+=("$(printf '%-7s %7s s %8s s  %s' FAILED "$dt" "$(cpu_seconds)" "$name")")
    why+=("$name:$(failure_lines "$log")")
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
  failed=$((failed + 1))
  echo "=== $1: FAILED (not run: $2)"
  report+=("$(printf '%-7s %7s   %8s    %s' FAILED - - "$1 (not run: $2)")")
}

skip() {
  skipped=$((skipped + 1))
  echo "=== $1: skipped ($2)"
  report+=("$(printf '%-7s %7s   %8s    %s' skipped - - "$1 ($2)")")
}

finish() {
  echo
  echo "=== summary (total $(seconds_since "$t_all") s)"
  printf '  %-7s %9s %10s    %s\n' "" wall cpu ""
  printf '  %s\n' "${report[@]}"
  if ((${#why[@]})); then
    echo "why:"
    printf '  %s\n' "${why[@]}"
  fi
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
  timeout 900 "$bin" --gtest_brief=1
}

lit_tests() { # BUILD_DIR
  timeout 1200 "$PYTHON" "$LIT" -sv "$1/tests/lit"
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

# The fuzzing time is split: the .plan frontend and memory check get the larger
# part, the textual IR and the passes the rest. The two run side by side (a
# libFuzzer process keeps one core), so the group takes the larger part.
fuzz() {
  local plan_seconds=$((FUZZ_SECONDS * 2 / 3))
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

# --- setup and the normal build ---------------------------------------------
# Scratch files of the run (group logs, CPU times, the background build's status).
bg=$(mktemp -d)
builds=
# (No bare `a && b` here: under set -e a failing last command of the trap
# would become the script's exit status.)
trap 'if [[ -n $builds ]]; then kill "$builds" 2>/dev/null || true; fi; rm -rf "$bg"' EXIT
e2e_scripts=(tests/e2e/*.sh)
[[ -e ${e2e_scripts[0]} ]] || e2e_scripts=()

if ! step setup bash scripts/setup.sh; then
  for g in unit lit "${e2e_scripts[@]}" "asan unit" "asan lit" fuzz; do not_run "${g#tests/}" "setup failed"; done
  finish
fi
LIT=$(llvm-config-14 --prefix)/build/utils/lit/lit.py

# The sanitized build (its tests' and the fuzzers') compiles beside the tests
# of build/, at the lowest priority: the tests run as fast as alone, and the
# build takes the CPU time they leave (the e2e scripts often wait on one
# compiler or one process).
background_builds() {
  if ((quick)); then return 0; fi
  local rc=0
  local t0=$(date +%s%N)
  (cpu_of nice -n 19 bash scripts/build.sh --asan --quiet) >"$bg/build-asan.log" 2>&1 || rc=$?
  # Its own times, for the summary: it ran beside the groups above.
  echo "(build-asan/ compiled in $(seconds_since "$t0") s, cpu $(cpu_seconds) s)" >>"$bg/build-asan.log"
  echo "asan $rc" >>"$bg/status"
}
# wait_build NAME: the background build NAME ("asan") ended well; prints its output.
wait_build() {
  while ! grep -q "^$1 " "$bg/status" 2>/dev/null; do
    kill -0 "$builds" 2>/dev/null || break
    sleep 2
  done
  cat "$bg/build-$1.log" 2>/dev/null || true
  grep -q "^$1 0$" "$bg/status" 2>/dev/null
}

if step "build (build/)" bash scripts/build.sh --quiet; then
  background_builds &
  builds=$!
  group unit unit_tests build
  group lit lit_tests build
  for script in "${e2e_scripts[@]}"; do
    name=${script#tests/}
    group "${name%.sh}" env PLANC="$ROOT/build/bin/planc" bash "$script"
  done
else
  for g in unit lit "${e2e_scripts[@]}"; do g=${g#tests/}; not_run "${g%.sh}" "build failed"; done
  background_builds &
  builds=$!
fi

# --- AddressSanitizer + UBSan -------------------------------------------------
if ((quick)); then
  skip "asan unit" --quick; skip "asan lit" --quick
elif step "build (build-asan/, begun beside the tests)" wait_build asan; then
  # abort_on_error: a report ends in SIGABRT, so `not` in lit tests cannot hide it.
  export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1:strict_string_checks=1}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1:abort_on_error=1}
  group "asan unit" unit_tests build-asan
  group "asan lit" lit_tests build-asan
  unset ASAN_OPTIONS UBSAN_OPTIONS
else
  not_run "asan unit" "build failed"; not_run "asan lit" "build failed"
fi

# --- libFuzzer ------------------------------------------------------------------
if ((quick)); then
  skip fuzz --quick
elif ((FUZZ_SECONDS <= 0)); then
  skip fuzz "PLANC_FUZZ_SECONDS=$FUZZ_SECONDS"
elif grep -q "^asan 0$" "$bg/status" 2>/dev/null; then
  group "fuzz ${FUZZ_SECONDS} s" fuzz
else
  not_run fuzz "build failed"
fi

finish
