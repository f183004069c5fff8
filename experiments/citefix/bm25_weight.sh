#!/usr/bin/env bash
# Chooses keyword_bm25's weight w on validation data, as the CiteFix paper leaves it out: the
# SynSciQA++ training set (never a test set), its teacher answers ('response') with every
# citation swapped to another source of the example (swap_citations.py, seeded), corrected with
# each w; the labels are the silver ones, the sources the teacher cited. Prints F1 per w.
#
#   experiments/citefix/bm25_weight.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=build/citeforge
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
"$BIN" data import synsciqa --input datasets/synsciqa/SynSciQA++.json --out "$DIR/val.jsonl" \
  2>/dev/null >/dev/null
python3 experiments/citefix/swap_citations.py "$DIR/val.jsonl" response "$DIR/swapped.jsonl"
echo "| w | precision | recall | F1 |"
echo "|---|---|---|---|"
for w in 0 0.1 0.25 0.5 1 2 4; do
  "$BIN" fix-citations --data "$DIR/val.jsonl" --answers "$DIR/swapped.jsonl" \
    --method keyword_bm25 --bm25-weight "$w" --out "$DIR/fixed.jsonl" >/dev/null
  "$BIN" score --data "$DIR/val.jsonl" --answers "$DIR/fixed.jsonl" --out "$DIR/score" >/dev/null
  python3 - "$DIR/score/summary.json" "$w" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
cell = lambda m: f"{100 * s[m]['mean']:.1f} [{100 * s[m]['ci_low']:.1f}, {100 * s[m]['ci_high']:.1f}]"
print(f"| {sys.argv[2]} | {cell('precision')} | {cell('recall')} | {cell('f1')} |")
PY
done
