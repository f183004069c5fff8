#!/usr/bin/env bash
# Answer attributability (evidence-QA Eq. 2) judged by SmolLM2-135M-Instruct: the judge's
# threshold chosen on pairs from N SynSciQA++ answers (their citations passed the paper's
# attributability filter) and checked on held-out pairs, then GPT-3.5's and GPT-4's answers to
# the first M questions of SynSciQA_test and GenSearch_test judged, each beside its chance level.
# Writes experiments/attributability/results/ and prints the table of experiments/attributability.md.
#
#   experiments/attributability/run.sh [N] [M]     # defaults 150 and 40
set -euo pipefail
cd "$(dirname "$0")/../.."
N=${1:-150}
M=${2:-40}
BIN=build/citeforge
OUT=experiments/attributability/results
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
mkdir -p "$OUT"
MODEL="--model weights/SmolLM2-135M-Instruct.Q4_1.gguf --chat smollm2 --dtype bfloat16"
"$BIN" data import synsciqa --input datasets/synsciqa/SynSciQA++.json --out "$TMP/train.jsonl" >/dev/null 2>&1
head -n "$N" "$TMP/train.jsonl" >"$TMP/labelled.jsonl"
for set in SynSciQA_test GenSearch_test; do
  "$BIN" data import synsciqa --input "datasets/synsciqa/$set.csv" \
    --golden "datasets/synsciqa/${set}_with_golden_sources.csv" --out "$TMP/$set.jsonl" >/dev/null 2>&1
done
# The threshold, once, on the labelled pairs; then every answer set judged with it.
if [ ! -f "$OUT/SynSciQA_test-gpt-35/summary.json" ]; then
  "$BIN" judge-attributability --data "$TMP/SynSciQA_test.jsonl" --reference gpt-35 --limit "$M" \
    --calibrate "$TMP/labelled.jsonl" --calibrate-reference response $MODEL \
    --out "$OUT/SynSciQA_test-gpt-35" 2>/dev/null
fi
T=$(python3 -c "import json; print(json.load(open('$OUT/SynSciQA_test-gpt-35/summary.json'))['threshold'])")
for run in SynSciQA_test:gpt-4 GenSearch_test:gpt-35 GenSearch_test:gpt-4; do
  set=${run%%:*}; ref=${run##*:}
  [ -f "$OUT/$set-$ref/summary.json" ] && continue
  "$BIN" judge-attributability --data "$TMP/$set.jsonl" --reference "$ref" --limit "$M" \
    --threshold "$T" $MODEL --out "$OUT/$set-$ref" 2>/dev/null
done
python3 - "$OUT" <<'PY'
import json, sys
from pathlib import Path
out = Path(sys.argv[1])
c = json.loads((out / "SynSciQA_test-gpt-35" / "summary.json").read_text())["calibration"]
print(f"threshold {c['threshold']:.3f} (log-odds), chosen on {c['chosen_on']['supported_pairs']} + "
      f"{c['chosen_on']['unsupported_pairs']} pairs: balanced accuracy {c['chosen_on']['balanced_accuracy']:.3f}, "
      f"AUC {c['chosen_on']['auc']:.3f}; held out {c['held_out']['supported_pairs']} + "
      f"{c['held_out']['unsupported_pairs']} pairs: balanced accuracy {c['held_out']['balanced_accuracy']:.3f}, "
      f"AUC {c['held_out']['auc']:.3f}\n")
print("| answers | judged (without citation) | attributability [95% CI] | chance [95% CI] | sentences entailed | unformatted |")
print("|---|---|---|---|---|---|")
for name in ["SynSciQA_test-gpt-35", "SynSciQA_test-gpt-4", "GenSearch_test-gpt-35", "GenSearch_test-gpt-4"]:
    j = json.loads((out / name / "summary.json").read_text())
    a, ch = j["attributability"], j["chance_attributability"]
    print(f"| {name} | {a['count']} ({j['answers_without_citation']}) | {a['mean']:.3f} [{a['ci_low']:.3f}, {a['ci_high']:.3f}] | "
          f"{ch['mean']:.3f} [{ch['ci_low']:.3f}, {ch['ci_high']:.3f}] | {j['entailed']} / {j['sentences']} | {j['unformatted']} |")
PY
