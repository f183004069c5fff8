#!/usr/bin/env bash
# CiteFix's correction methods on SynSciQA_test's GPT-3.5 answers, read by SmolLM2-135M-Instruct
# (the model methods), each scored against the golden sources next to its chance level, with
# the added time per answer: once on the answers as written, once on the same answers with every
# citation swapped to another of the example's sources (swap_citations.py, seeded), where the
# right documents are known to be lost. Writes experiments/citefix/results/ (a method already
# scored there is not run again; delete the folder to start over) and prints the tables that
# experiments/citefix.md records. ask_model, at chance on the answers as written, is left out of
# the swapped condition (it takes minutes per 40 answers). Each method's summary.json carries its
# paired test against the answers it corrected.
#
#   experiments/citefix/run.sh [N] [DTYPE]      # first N test questions (default 40), bfloat16
set -euo pipefail
cd "$(dirname "$0")/../.."
N=${1:-40}
DTYPE=${2:-bfloat16}
OUT=experiments/citefix/results
BIN=build/citeforge
mkdir -p "$OUT"
ALL=$(mktemp)
trap 'rm -f "$ALL"' EXIT
"$BIN" data import synsciqa --input datasets/synsciqa/SynSciQA_test.csv \
  --golden datasets/synsciqa/SynSciQA_test_with_golden_sources.csv --out "$ALL" 2>/dev/null
head -n "$N" "$ALL" >"$OUT/examples.jsonl"
MODEL=(--model weights/SmolLM2-135M-Instruct.Q4_1.gguf --chat smollm2 --template evidence_named
       --dtype "$DTYPE")
python3 experiments/citefix/swap_citations.py "$OUT/examples.jsonl" gpt-35 "$OUT/swapped.jsonl"
# The answers as written, as an answers file: each correction is tested against the answers it
# corrected, paired on the same questions (score --baseline).
python3 -c 'import json, sys
for line in open(sys.argv[1]):
    e = json.loads(line)
    print(json.dumps({"id": e["id"], "answer": e["references"]["gpt-35"]}))' \
  "$OUT/examples.jsonl" >"$OUT/written.jsonl"
for condition in written swapped; do
  dir="$OUT/$condition"
  mkdir -p "$dir"
  if [ "$condition" = written ]; then answers=(--reference gpt-35); else answers=(--answers "$OUT/swapped.jsonl"); fi
  grep -qs '"paired"' "$dir/score_none/summary.json" ||
    "$BIN" score --data "$OUT/examples.jsonl" "${answers[@]}" --out "$dir/score_none" >/dev/null
  methods=(keyword keyword_bm25 bertscore attention ask_model)
  [ "$condition" = swapped ] && methods=(keyword keyword_bm25 bertscore attention)
  for method in "${methods[@]}"; do
    [ -f "$dir/score_$method/summary.json" ] &&
      grep -q '"paired"' "$dir/score_$method/summary.json" && continue
    extra=()
    case $method in bertscore | attention | ask_model) extra=("${MODEL[@]}") ;; esac
    [ -f "$dir/fixed_$method.jsonl" ] ||
      "$BIN" fix-citations --data "$OUT/examples.jsonl" "${answers[@]}" --method "$method" \
        "${extra[@]}" --out "$dir/fixed_$method.jsonl" 2>"$dir/fix_$method.log" | tee "$dir/fix_$method.txt"
    "$BIN" score --data "$OUT/examples.jsonl" --answers "$dir/fixed_$method.jsonl" \
      --baseline "$OUT/$condition.jsonl" --out "$dir/score_$method" >/dev/null
  done
done
python3 experiments/citefix/table.py "$OUT" "$N" "$DTYPE"
