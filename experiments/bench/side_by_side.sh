#!/usr/bin/env bash
# citeforge next to the Python stack on the same machine, model, token ids and thread count:
# SmolLM2-135M-Instruct (the embedded default), one QLoRA SFT step, prefill and decode at batch
# 1 and 32 (transformers, and llama.cpp on the GGUF's own Q4_1 at batch 1), one PPO iteration,
# and each part's peak resident memory, with the base in fp32 and in bf16 on both sides. Every part runs in a fresh process; each number is the
# median of --reps repetitions after a warm-up. Writes the table with the ratios.
#
#   experiments/bench/side_by_side.sh [--threads 2] [--reps 5]
#                                     [--out experiments/bench/results/side_by_side_cpu.md]
#
# Needs build/bench_side_by_side (scripts/setup.sh builds it) and the Python venv described at
# the top of experiments/bench/requirements-side-by-side.txt. Run it on an idle machine: the
# JSON records the load average at the start of the Python side.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo"
threads=2 reps=5 out=experiments/bench/results/side_by_side_cpu.md
while [ $# -gt 0 ]; do
  case "$1" in
    --threads) threads="$2"; shift 2 ;;
    --reps) reps="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    *) echo "side_by_side.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
build="${CITEFORGE_BUILD_DIR:-$repo/build}"
python="${CITEFORGE_BENCH_PYTHON:-${CITEFORGE_CACHE:-$HOME/.cache/citeforge}/bench-venv/bin/python}"
[ -x "$build/bench_side_by_side" ] || { echo "no $build/bench_side_by_side: run scripts/setup.sh" >&2; exit 1; }
[ -x "$python" ] || { echo "no $python: see experiments/bench/requirements-side-by-side.txt" >&2; exit 1; }
work="$(mktemp -d)"
echo "side_by_side: results of each part in $work" >&2

# Each side in fp32 and in bf16 (LoRA adapters in fp32 on both sides). citeforge first: its
# SFT part also writes the token ids both sides use.
"$build/bench_side_by_side" --part sft --threads "$threads" --reps "$reps" --dtype float32 \
  --write-batch "$work/batch.json" >"$work/citeforge_sft_float32.json"
# The Python side's PPO prompts are the whole rendered prompts the rollout sees, not the cut
# generation ones; answers end at EOS on both sides (citeforge's rollout stops there), and the
# table shows each side's answer length so the work can be compared.
python3 -c 'import json, sys; b = json.load(open(sys.argv[1])); b["prompts"] = b["ppo_prompts"]
json.dump(b, open(sys.argv[2], "w"))' "$work/batch.json" "$work/batch_ppo.json"
for dtype in float32 bfloat16; do
  for part in sft generate ppo; do
    [ "$part/$dtype" = sft/float32 ] && continue
    "$build/bench_side_by_side" --part "$part" --threads "$threads" --reps "$reps" \
      --dtype "$dtype" >"$work/citeforge_${part}_$dtype.json"
  done
  # The Python side on the same ids: generation prompts of 128 tokens, 32 new tokens; PPO with
  # citeforge's bench settings (batch 8, minibatch 4, one epoch, LoRA r 64).
  for part in sft generate ppo; do
    batch="$work/batch.json"
    [ "$part" = ppo ] && batch="$work/batch_ppo.json"
    "$python" experiments/bench/side_by_side_python.py --part "$part" --threads "$threads" \
      --reps "$reps" --batch-file "$batch" --new-tokens 32 --batch 8 --dtype "$dtype" \
      --ppo-lora-r 64 --ppo-epochs 1 --ppo-minibatch 4 --ppo-allow-eos \
      >"$work/python_${part}_$dtype.json"
  done
done
"$python" experiments/bench/side_by_side_python.py --part llamacpp --threads "$threads" \
  --reps "$reps" --batch-file "$work/batch.json" --new-tokens 32 --batch 8 \
  >"$work/python_llamacpp.json"
python3 experiments/bench/side_by_side_table.py "$work" \
  "experiments/bench/side_by_side.sh --threads $threads --reps $reps" >"$out"
cat "$out"
