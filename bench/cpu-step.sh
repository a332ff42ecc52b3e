#!/usr/bin/env bash
# The CPU backend's speed: the step time of GPT-2 124M (bench/gpt2-124m-cpu.plan: batch 4 x
# context 64, f32, AdamW) compiled by `planc build`, against the same model in PyTorch on the
# CPU (bench/gpt2_torch.py, Debian's python3-torch) and against OpenBLAS's sgemm rate on this
# machine (bench/sgemm-rate.c, a 1024^3 sgemm), all measured in one run with the same threads.
# The plan is compiled twice, as written and with --fusion=aggressive (docs/fusion.md). Also
# tiny-gpt's steps per second. Reports, for the better of the two builds:
#
#   ratio      compiled step / PyTorch step (the goal of the CPU-backend issue: <= 0.5)
#   fraction   the step's FLOP rate / the sgemm rate (the goal: >= 0.55)
#
# and the fused executable's --profile (time per kernel class).
#
#   bench/cpu-step.sh [--steps N] [--threads T] [--planc PATH]
#
# Defaults: 4 steps (the best after the first), 2 threads, build/bin/planc. Reports only; exits
# 1 if a run fails.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
steps=4 threads=2 planc=$ROOT/build/bin/planc
while (($#)); do
  case $1 in
    --steps) steps=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --planc) planc=$2; shift 2 ;;
    -h|--help) sed -n '2,17p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "cpu-step.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "building GPT-2 124M (as written and fused) and tiny-gpt with planc build ..."
"$planc" build "$ROOT/bench/gpt2-124m-cpu.plan" -o "$work/gpt2" 2>/dev/null
"$planc" build "$ROOT/bench/gpt2-124m-cpu.plan" --fusion=aggressive -o "$work/gpt2-fused" 2>/dev/null
"$planc" build "$ROOT/examples/tiny-gpt.plan" -o "$work/tiny" 2>/dev/null
# The sgemm rate of the OpenBLAS the executables linked (the OpenMP-threaded one where it is installed).
blas=$(ldd "$work/gpt2" | awk '/libopenblas/ {print $3; exit}')
cc -O2 "$ROOT/bench/sgemm-rate.c" "${blas:--lopenblas}" ${blas:+-Wl,-rpath,"$(dirname "$blas")"} -o "$work/sgemm-rate"

export OMP_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads
sgemm=$("$work/sgemm-rate" 1024 1024 1024 | awk '{print $(NF-1)}')
"$work/gpt2" --steps "$steps" --threads "$threads" --sample 0 --metrics "$work/gpt2.jsonl" >"$work/gpt2.log"
"$work/gpt2-fused" --steps "$steps" --threads "$threads" --sample 0 --metrics "$work/fused.jsonl" --profile \
  >"$work/fused.log"
flops=$(sed -n 's/.* parameters, \([0-9.e+]*\) FLOP a step.*/\1/p' "$work/gpt2.log")
/usr/bin/python3 "$ROOT/bench/gpt2_torch.py" "$threads" "$steps" >"$work/torch.log"
"$work/tiny" --steps 50 --threads "$threads" --metrics "$work/tiny.jsonl" >/dev/null

/usr/bin/python3 - "$work" "$sgemm" "$flops" "$threads" <<'PY'
import json, sys
work, sgemm, flops, threads = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
def best(name):
    return min(json.loads(l)['seconds'] for l in list(open(work + '/' + name))[1:])
plain, fused = best('gpt2.jsonl'), best('fused.jsonl')
ours = min(plain, fused)
torch = float(open(work + '/torch.log').read().split('torch best step')[1].split()[0])
tiny = sorted(json.loads(l)['seconds'] for l in open(work + '/tiny.jsonl'))[25]
rate = flops / ours / 1e9
print('GPT-2 124M, B 4, T 64, f32, AdamW, %s threads: %.3g FLOP a step' % (threads, flops))
print('  compiled (planc build)  %.3f s a step  %.1f GFLOP/s' % (plain, flops / plain / 1e9))
print('  compiled, fused         %.3f s a step  %.1f GFLOP/s  (--fusion=aggressive)' % (fused, flops / fused / 1e9))
print('  PyTorch                 %.3f s a step  %.1f GFLOP/s' % (torch, flops / torch / 1e9))
print('  OpenBLAS sgemm 1024^3   %.1f GFLOP/s' % sgemm)
print('  ratio compiled / PyTorch  %.2f   (goal <= 0.5)' % (ours / torch))
print('  fraction of sgemm rate    %.2f   (goal >= 0.55)' % (rate / sgemm))
print('tiny-gpt: %.1f steps/s (median of 50)' % (1 / tiny))
PY
sed -n '/^profile:/,$p' "$work/fused.log"
