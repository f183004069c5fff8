#!/usr/bin/env bash
# Batch-1 decode against llama.cpp in alternating turns, for a machine whose speed moves from one
# minute to the next: each turn runs llama.cpp's decode (experiments/bench/side_by_side_python.py
# --part llamacpp, 5 repetitions, on the same GGUF) and then citeforge's
# (build/bench_decode --part decode --batches 1, fp32 and bf16, 5 repetitions), so every pair
# shares a minute. OUT/llamacpp_N.json and OUT/citeforge_N.json hold turn N;
# experiments/bench/decode_turns_table.py OUT prints the table.
#
#   experiments/bench/decode_turns.sh OUT [TURNS=6] [PYTHON=~/.cache/citeforge/bench-venv/bin/python]
#
# The llama.cpp side reads a batch file written by bench_side_by_side (the prompts both sides
# share); it is made first, in OUT/batch.json, if missing.
set -euo pipefail
out="${1:?usage: decode_turns.sh OUT [TURNS] [PYTHON]}"
turns="${2:-6}"
python="${3:-$HOME/.cache/citeforge/bench-venv/bin/python}"
cd "$(dirname "$0")/../.."
[ -x build/bench_decode ] || { echo "no build/bench_decode: build it first" >&2; exit 1; }
mkdir -p "$out"
if [ ! -s "$out/batch.json" ]; then
  # The batch file is written before any part runs; the run is stopped once it exists.
  build/bench_side_by_side --part sft --threads 2 --reps 1 --dtype float32 \
    --write-batch "$out/batch.json" >/dev/null 2>&1 &
  writer=$!
  for _ in $(seq 1 300); do [ -s "$out/batch.json" ] && break; sleep 1; done
  kill "$writer" 2>/dev/null || true
  wait "$writer" 2>/dev/null || true
  [ -s "$out/batch.json" ] || { echo "bench_side_by_side wrote no batch file" >&2; exit 1; }
fi
for n in $(seq 1 "$turns"); do
  "$python" experiments/bench/side_by_side_python.py --part llamacpp --threads 2 --reps 5 \
    --batch-file "$out/batch.json" --new-tokens 32 --batch 8 >"$out/llamacpp_$n.json"
  build/bench_decode --part decode --batches 1 --reps 5 --out "$out/citeforge_$n.md" \
    2>"$out/citeforge_$n.log"
  rm -f "$out/citeforge_$n.md"  # the JSON beside it holds the numbers
done
