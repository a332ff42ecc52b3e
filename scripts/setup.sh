#!/usr/bin/env bash
# Installs the Debian 12 packages planc needs to build and test. Idempotent: when
# everything is already installed it only asks dpkg and returns (well under 2 s);
# `apt-get update` runs only when something is missing.
set -euo pipefail

PACKAGES=(
  # build
  g++ cmake ninja-build ccache
  # parser generator (the `antlr4` script runs on Java) and its C++ runtime
  antlr4 default-jre-headless libantlr4-runtime-dev
  # LLVM Support/ADT, FileCheck + lit + not, clang 14 and its libFuzzer/sanitizer runtimes
  llvm-14-dev llvm-14-tools clang-14 libclang-rt-14-dev
  # OpenMP for clang 14: the sanitized clang build (build-asan/) compiles the programs planc build writes with it
  libomp-14-dev
  # libraries
  nlohmann-json3-dev libgtest-dev
  # test scripts (tests/e2e, lit) run with Debian's python; PyTorch is the
  # reference numerics of tests/e2e/torch-reference.sh
  python3 python3-numpy python3-torch
  # tests/lit/check-memory validates `planc check --json` against docs/memory-check.schema.json
  python3-jsonschema
  # headless browser: tests/e2e/schedule-svg-screenshot.sh renders the
  # schedule Gantt chart (--emit=schedule-svg) and checks the screenshot
  chromium
  # the CPU backend's GEMMs: generated kernels call OpenBLAS's cblas_sgemm
  libopenblas-dev
  # OpenBLAS threaded by OpenMP (not the default one): the executables link it, so their
  # GEMMs run on the kernels' own OpenMP threads (docs/cpu-backend.md, "Threads")
  libopenblas0-openmp
  # the runtime's communicator between ranks (runtime/MpiCommunicator.h) and
  # mpirun, which launches a plan of several ranks
  libopenmpi-dev openmpi-bin
)

missing=()
# One dpkg-query call for all packages; unknown packages print nothing for them.
status=$(dpkg-query -W -f='${Package} ${db:Status-Abbrev}\n' "${PACKAGES[@]}" 2>/dev/null || true)
for p in "${PACKAGES[@]}"; do
  if ! grep -qE "^${p//+/\\+}(:[a-z0-9]+)? ii " <<<"$status"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "setup: all ${#PACKAGES[@]} packages present"
  exit 0
fi

echo "setup: installing ${missing[*]}"
SUDO=()
if [[ $(id -u) -ne 0 ]]; then
  if command -v sudo >/dev/null; then
    SUDO=(sudo)
  else
    echo "setup: error: not root and no sudo; install as root: apt-get install ${missing[*]}" >&2
    exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" apt-get update -qq
"${SUDO[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" </dev/null
echo "setup: done"
