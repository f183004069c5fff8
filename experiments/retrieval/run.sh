#!/usr/bin/env bash
# LLM-retEval's two sides on the shipped data: BM25 over each data set's whole corpus judged by
# Recall/Precision/F1@k against the relevant sources, and, with SmolLM2-135M-Instruct, answers in
# HAGRID's scenarios (given sources, retrieve-then-generate, generate-then-retrieve, and random
# passages as the chance level) scored for citations and against a reference answer, and
# compared with the answers from the given sources by ROUGE-L, exact match and the model as judge.
# Writes experiments/retrieval/results/ and prints the tables of experiments/retrieval.md.
#
#   experiments/retrieval/run.sh [N]     # N questions per data set for the answers (default 20)
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
# The answers: the first N questions of each set, BM25 over the set's whole corpus.
answers() {  # set template reference
  [ -f "$OUT/answers-$1-k3/summary.json" ] && return
  "$BIN" evaluate-retriever --data "$TMP/$1.jsonl" --k 3 --limit "$N" \
    --model weights/SmolLM2-135M-Instruct.Q4_1.gguf --chat smollm2 --template "$2" \
    --reference "$3" --dtype bfloat16 --max-new-tokens 128 --out "$OUT/answers-$1-k3" 2>/dev/null
}
answers synsciqa_test evidence_named gpt-4
answers gensearch_test evidence_named gpt-4
answers synth_test rage_numeric gold
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
def m(j, key):
    v = j.get(key)
    if isinstance(v, dict): v = v.get("mean")
    digits = {"bleu": 1, "answer_length": 1, "distinct_citations": 2}.get(key, 3)
    return "-" if v is None else f"{v:.{digits}f}"
def paired(sc):
    t = sc.get("paired", {}).get("chance", {}).get("f1")
    if not t or t.get("difference") is None: return "-"
    pts = lambda v: f"{100 * v:+.1f}"
    return f"{pts(t['difference'])} [{pts(t['ci_low'])}, {pts(t['ci_high'])}], p = {t['p_holm']:.2g}"
print("\n| data set | scenario | P | R | F1 | chance F1 | F1 - chance, paired (Holm p) | citations | words | overlap P / R with ref. | ROUGE-L vs ref. | BLEU vs ref. |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
for s in ["synsciqa_test", "gensearch_test", "synth_test"]:
    j = json.loads((out / f"answers-{s}-k3" / "summary.json").read_text())["answers"]
    for name, sc in j["scenarios"].items():
        print(f"| {s} ({j['scenarios']['given'].get('reference', j['questions'])}) | {name} | {m(sc,'precision')} | {m(sc,'recall')} | {m(sc,'f1')} | "
              f"{m(sc,'chance_f1')} | {paired(sc)} | {m(sc,'distinct_citations')} | {m(sc,'answer_length')} | "
              f"{m(sc,'overlap_precision') + ' / ' + m(sc,'overlap_recall') if 'overlap_precision' in sc else '-'} | "
              f"{m(sc,'rouge_l')} | {m(sc,'bleu')} |")
print("\n| data set | answers compared with the given-sources answers | ROUGE-L | exact match | judge agrees | judge log-odds |")
print("|---|---|---|---|---|---|")
for s in ["synsciqa_test", "gensearch_test", "synth_test"]:
    j = json.loads((out / f"answers-{s}-k3" / "summary.json").read_text())["answers"]
    for name, c in j["compared_with_given"].items():
        print(f"| {s} | {name} | {m(c,'rouge_l')} | {m(c,'exact_match')} | {m(c,'judge_agrees')} | {m(c,'judge_log_odds')} |")
PY
