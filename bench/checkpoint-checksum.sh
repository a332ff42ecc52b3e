#!/usr/bin/env bash
# What checkpoints' checksums cost (docs/checkpoints.md, "What is verified"):
# a rank file of MiB MiB of f32 tensors written atomically (as a checkpoint
# writes it: synced to disk) and read back, with the CRC-32C of every tensor,
# of the header and of the whole file computed and verified, and without;
# best of RUNS, both measured in the same run, so the ratio holds on any
# machine. Also the CRC-32C rate alone.
#
#   bench/checkpoint-checksum.sh [--mib MiB] [--runs N] [--build DIR]
#
# Defaults: 512 MiB, 3 runs, build/ (its runtime library). Exits 1 if a step
# fails.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mib=512 runs=3 build=$ROOT/build
while (($#)); do
  case $1 in
    --mib) mib=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    -h|--help) sed -n '2,12p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "checkpoint-checksum.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
g++ -O2 -std=c++17 -I"$ROOT" "$ROOT/bench/checkpoint-checksum.cpp" "$build/runtime/libplanc_runtime.a" \
  -o "$work/checkpoint-checksum"
"$work/checkpoint-checksum" "$mib" "$runs" "$work"
