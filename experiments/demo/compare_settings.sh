#!/usr/bin/env bash
# Paired tests a run's own tables do not hold: the selected SFT+PPO checkpoint against the selected
# SFT one, and the SFT checkpoint against the citation baselines (the base's answers re-cited by
# BM25 and by citing every document), each on the same questions of test and test_ood
# (`citeforge score --baseline`). Prints a Markdown table; points with 95% paired bootstrap
# intervals and sign-flip p-values Holm-adjusted over the table's 18 tests.
#
#   experiments/demo/compare_settings.sh RUN_DIR [SFT_EPOCH] [SFT+PPO_EPOCH]   # default 2 and 1
set -euo pipefail
cd "$(dirname "$0")/../.."
run=${1:?usage: compare_settings.sh RUN_DIR [SFT_EPOCH] [SFT+PPO_EPOCH]}
sft=${2:-2} chained=${3:-1}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for t in test test_ood; do
  for pair in "sft+ppo-$chained:sft-$sft" "sft-$sft:base-0/$t+cite_all" "sft-$sft:base-0/$t+cite_bm25"; do
    answers=${pair%%:*} against=${pair#*:}
    case $against in base-0/*) baseline="$run/eval/$against.h5" ;; *) baseline="$run/eval/$against/$t.h5" ;; esac
    out="$work/$t-${answers}-${against//\//_}"
    build/citeforge score --data "$run/data/$t.jsonl" --answers "$run/eval/$answers/$t.h5" \
      --baseline "$baseline" --out "$out" >/dev/null
    printf '%s\t%s\t%s\t%s\n' "$t" "$answers" "${against#base-0/}" "$out/summary.json" >>"$work/rows.tsv"
  done
done
# One table, one family: the p-values are Holm-adjusted over all of its cells (as the run's own
# tables adjust theirs) by `citeforge holm`, from the exact sign-flip p-values in each summary.json.
python3 - "$work/rows.tsv" <<'PY' >"$work/raw.txt"
import json, sys
rows = [line.rstrip("\n").split("\t") for line in open(sys.argv[1])]
for r in rows:
    tests = json.load(open(r[3]))["paired"]["base"]
    print(" ".join("nan" if tests[m]["p"] is None else repr(tests[m]["p"])
                   for m in ("f1", "precision", "recall")))
PY
# shellcheck disable=SC2046
build/citeforge holm $(cat "$work/raw.txt") >"$work/holm.json"
python3 - "$work/rows.tsv" "$work/holm.json" <<'PY'
import json, sys
rows = [line.rstrip("\n").split("\t") for line in open(sys.argv[1])]
metrics = ("f1", "precision", "recall")
tests = [json.load(open(r[3]))["paired"]["base"] for r in rows]
adjusted = json.load(open(sys.argv[2]))["p_holm"]
holm = {(i, m): adjusted[3 * i + k] for i in range(len(rows)) for k, m in enumerate(metrics)}
def cell(i, m):
    t = tests[i][m]
    p = holm[(i, m)]
    shown = "no pairs" if p is None else "p < 0.001" if p < 0.001 else f"p = {p:.2g}"
    return f"{100 * t['difference']:+.1f} [{100 * t['ci_low']:+.1f}, {100 * t['ci_high']:+.1f}], {shown}"
print("| test set | answers | against | F1 | precision | recall |")
print("|---|---|---|---|---|---|")
for i, (t, answers, against, _) in enumerate(rows):
    print(f"| {t} | {answers} | {against} | {cell(i, 'f1')} | {cell(i, 'precision')} | {cell(i, 'recall')} |")
print()
print(f"Points, paired on the same questions: difference [95% bootstrap interval], sign-flip p "
      f"Holm-adjusted over the {len(adjusted)} tests of this table.")
PY
