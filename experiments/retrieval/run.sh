#!/usr/bin/env bash
# LLM-retEval's two sides on the shipped data: BM25 over each data set's whole corpus judged by
# Recall/Precision/F1@k against the relevant sources, and, with SmolLM2-135M-Instruct, the
# answers from the retrieved passages compared with the answers from the gold sources.
# Writes experiments/retrieval/results/ and prints the tables of experiments/retrieval.md.
#
#   experiments/retrieval/run.sh [N]     # N questions for the answer comparison (default 20)
set -euo pipefail
cd "$(dirname "$0")/../.."
N=${1:-20}
BIN=build/citeforge
OUT=experiments/retrieval/results
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
mkdir -p "$OUT"
"$BIN" data import synsciqa --input datasets/synsciqa/SynSciQA_test.csv \
  --golden datasets/synsciqa/SynSciQA_test_with_golden_sources.csv --out "$TMP/synsciqa_test.jsonl" 2>/dev/null >/dev/null
"$BIN" data import synsciqa --input datasets/synsciqa/GenSearch_test.csv \
  --golden datasets/synsciqa/GenSearch_test_with_golden_sources.csv --out "$TMP/gensearch_test.jsonl" 2>/dev/null >/dev/null
"$BIN" data synth --seed 1 --out "$TMP/synth" >/dev/null
cp "$TMP/synth/test.jsonl" "$TMP/synth_test.jsonl"
cp "$TMP/synth/test_ood.jsonl" "$TMP/synth_test_ood.jsonl"
for set in synsciqa_test gensearch_test synth_test synth_test_ood; do
  for k in 1 3 5 10; do
    [ -f "$OUT/$set-k$k/summary.json" ] && continue
    "$BIN" evaluate-retriever --data "$TMP/$set.jsonl" --k "$k" --out "$OUT/$set-k$k" >/dev/null
  done
done
head -n "$N" "$TMP/synsciqa_test.jsonl" >"$TMP/answers.jsonl"
"$BIN" evaluate-retriever --data "$TMP/answers.jsonl" --k 3 \
  --model weights/SmolLM2-135M-Instruct.Q4_1.gguf --chat smollm2 --template evidence_named \
  --dtype bfloat16 --max-new-tokens 128 --out "$OUT/answers-synsciqa_test-k3" 2>/dev/null
python3 - "$OUT" <<'PY'
import json, sys
from pathlib import Path
out = Path(sys.argv[1])
print("| data set | passages | questions (without gold) | k | Recall@k | Precision@k | F1@k |")
print("|---|---|---|---|---|---|---|")
for s in ["synsciqa_test", "gensearch_test", "synth_test", "synth_test_ood"]:
    for k in [1, 3, 5, 10]:
        j = json.loads((out / f"{s}-k{k}" / "summary.json").read_text())
        print(f"| {s} | {j['passages']} | {j['questions']} ({j['questions_without_gold']}) | {k} | "
              f"{j['recall_at_k']:.3f} | {j['precision_at_k']:.3f} | {j['f1_at_k']:.3f} |")
j = json.loads((out / "answers-synsciqa_test-k3" / "summary.json").read_text())
print(f"\nAnswers from the top 3 BM25 passages vs from the gold sources, first "
      f"{j['answers_compared']} SynSciQA_test questions: ROUGE-L F {j['answer_rouge_l']:.3f}, "
      f"exact match {j['answer_exact_match']:.3f}; from 3 random passages ROUGE-L F "
      f"{j['answer_rouge_l_random_passages']:.3f}; Recall@3 on these {j['recall_at_k']:.3f}.")
PY
