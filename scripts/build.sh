#!/usr/bin/env bash
# Configures (CMake + Ninja, through ccache) and builds planc.
#
#   scripts/build.sh [--asan|--fuzz] [--quiet] [TARGET...]
#
#   (default)  build/       g++, -O2 with line tables, everything (planc, unit tests, ...)
#   --asan     build-asan/  clang 14, -O1 with line tables and assertions, AddressSanitizer + UBSan;
#                           everything, the libFuzzer targets (plan-fuzz, ir-fuzz) included
#   --fuzz     build-asan/  the same build, only the fuzz targets
#   --quiet    the build log goes to <dir>/build.log; its tail is printed if the build fails
#
# CMake runs again only when the folder is not configured yet or the options
# below changed; Ninja itself re-runs CMake when a CMakeLists.txt changes.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

variant=normal quiet=0 targets=()
for arg in "$@"; do
  case $arg in
    --asan) variant=asan ;;
    --fuzz) variant=fuzz ;;
    --quiet) quiet=1 ;;
    -h|--help) sed -n '2,12p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "build.sh: unknown option '$arg'" >&2; exit 2 ;;
    *) targets+=("$arg") ;;
  esac
done

case $variant in
  normal)
    dir=build
    # -g1 (line tables: backtraces and profiles name file and line) compiles
    # about 30% faster than -g; rebuild with -g for a debugger's variables.
    args=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG"
          "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" -DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++
          -DPLANC_SANITIZE=OFF -DPLANC_FUZZ=OFF -DPLANC_TESTS=ON) ;;
  asan|fuzz)
    # One sanitized build serves the sanitized tests and the fuzzers (a second
    # full build would cost CI as much again): clang, whose libFuzzer the fuzz
    # targets need. Debug keeps assert() on; -O1 keeps it fast enough to test;
    # line tables (-g1) are what the sanitizers' reports need.
    dir=build-asan
    args=(-DCMAKE_BUILD_TYPE=Debug "-DCMAKE_C_FLAGS_DEBUG=-O1 -g1" "-DCMAKE_CXX_FLAGS_DEBUG=-O1 -g1"
          -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14
          -DPLANC_SANITIZE=ON -DPLANC_FUZZ=ON -DPLANC_TESTS=ON)
    if [[ $variant == fuzz ]] && ((${#targets[@]} == 0)); then targets=(plan-fuzz ir-fuzz); fi ;;
esac

# ccache: key on paths relative to the checkout, so another clone of the
# repository (CI) reuses what this one compiled.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$ROOT}
export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}

stamp=$dir/.planc-configure
wanted="${args[*]}"
if [[ ! -f $dir/build.ninja || ! -f $dir/CMakeCache.txt || ! -f $stamp || "$(cat "$stamp")" != "$wanted" ]]; then
  echo "build.sh: configuring $dir/"
  rm -f "$stamp"
  if ((quiet)); then
    mkdir -p "$dir"
    if ! cmake -G Ninja -S . -B "$dir" "${args[@]}" >"$dir/configure.log" 2>&1; then
      tail -n 60 "$dir/configure.log" >&2
      echo "build.sh: cmake failed (log: $dir/configure.log)" >&2
      exit 1
    fi
  else
    cmake -G Ninja -S . -B "$dir" "${args[@]}"
  fi
  printf '%s' "$wanted" >"$stamp"
fi

echo "build.sh: ninja -C $dir ${targets[*]}"
if ((quiet)); then
  if ! ninja -C "$dir" "${targets[@]}" >"$dir/build.log" 2>&1; then
    if grep -q '^FAILED:' "$dir/build.log"; then
      grep -A15 '^FAILED:' "$dir/build.log" | head -n 100 >&2
    else
      tail -n 40 "$dir/build.log" >&2
    fi
    echo "build.sh: build failed (log: $dir/build.log)" >&2
    exit 1
  fi
else
  ninja -C "$dir" "${targets[@]}"
fi
