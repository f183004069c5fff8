#!/usr/bin/env bash
# Paired tests a run's own tables do not hold: the selected SFT+PPO checkpoint against the selected
# SFT one, and the SFT checkpoint against the citation baselines (the base's answers re-cited by
# BM25 and by citing every document), each on the same questions of test and test_ood
# (`citeforge score --baseline`). Prints a Markdown table; points with 95% paired bootstrap
# intervals and unadjusted sign-flip p-values.
#
#   experiments/demo/compare_settings.sh RUN_DIR [SFT_EPOCH] [SFT+PPO_EPOCH]   # default 2 and 1
set -euo pipefail
cd "$(dirname "$0")/../.."
run=${1:?usage: compare_settings.sh RUN_DIR [SFT_EPOCH] [SFT+PPO_EPOCH]}
sft=${2:-2} chained=${3:-1}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "| test set | answers | against | F1 | precision | recall |"
echo "|---|---|---|---|---|---|"
for t in test test_ood; do
  for pair in "sft+ppo-$chained:sft-$sft" "sft-$sft:base-0/$t+cite_all" "sft-$sft:base-0/$t+cite_bm25"; do
    answers=${pair%%:*} against=${pair#*:}
    case $against in base-0/*) baseline="$run/eval/$against.h5" ;; *) baseline="$run/eval/$against/$t.h5" ;; esac
    out="$work/$t-${answers}-${against//\//_}"
    build/citeforge score --data "$run/data/$t.jsonl" --answers "$run/eval/$answers/$t.h5" \
      --baseline "$baseline" --out "$out" >/dev/null
    python3 - "$out/summary.json" "$t" "$answers" "${against#base-0/}" <<'PY'
import json, sys
paired = json.load(open(sys.argv[1]))["paired"]["base"]
def cell(m):
    t = paired[m]
    p = "p < 0.001" if t["p"] < 0.001 else f"p = {t['p']:.2g}"
    return f"{100 * t['difference']:+.1f} [{100 * t['ci_low']:+.1f}, {100 * t['ci_high']:+.1f}], {p}"
print(f"| {sys.argv[2]} | {sys.argv[3]} | {sys.argv[4]} | {cell('f1')} | {cell('precision')} | "
      f"{cell('recall')} |")
PY
  done
done
