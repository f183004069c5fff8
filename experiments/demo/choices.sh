#!/usr/bin/env bash
# The demo record's "Choices": two SFT-only runs of configs/demo.yaml on the same world (96 of its
# training examples, 2 epochs), one with the template and learning rate the demo uses
# (rage_numeric_key_last, 1e-3) and one with rage_numeric at 5e-4, then the paired test of the
# first's epoch-2 answers against the second's on the same test and test_ood questions
# (`citeforge score --baseline`), Holm-adjusted over its 6 tests by `citeforge holm`.
#
#   experiments/demo/choices.sh OUT_DIR      # about 10 minutes a run on a 2-core CPU
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:?usage: choices.sh OUT_DIR}
mkdir -p "$out"
build/citeforge run configs/demo.yaml --out "$out/key_last_lr1e-3" --set 'settings=[sft]' \
  --set sft.max_examples=96 --set threads=1 >"$out/key_last_lr1e-3.log" 2>&1
build/citeforge run configs/demo.yaml --out "$out/numeric_lr5e-4" --set 'settings=[sft]' \
  --set sft.max_examples=96 --set data.template=rage_numeric --set sft.lr=5.0e-4 \
  --set threads=1 >"$out/numeric_lr5e-4.log" 2>&1
for t in test test_ood; do
  build/citeforge score --data "$out/key_last_lr1e-3/data/$t.jsonl" \
    --answers "$out/key_last_lr1e-3/eval/sft-2/$t.h5" \
    --baseline "$out/numeric_lr5e-4/eval/sft-2/$t.h5" --out "$out/paired_$t" >/dev/null
done
python3 - "$out" <<'PY'
import json, subprocess, sys
out = sys.argv[1]
metrics = ("f1", "precision", "recall")
tests = {t: json.load(open(f"{out}/paired_{t}/summary.json"))["paired"]["base"] for t in ("test", "test_ood")}
raw = [tests[t][m]["p"] for t in tests for m in metrics]
holm = json.loads(subprocess.run(["build/citeforge", "holm", *map(repr, raw)], check=True,
                                 capture_output=True, text=True).stdout)["p_holm"]
print("| test set | F1 | precision | recall |")
print("|---|---|---|---|")
i = 0
for t in tests:
    cells = []
    for m in metrics:
        d = tests[t][m]
        cells.append(f"{100 * d['difference']:+.1f} [{100 * d['ci_low']:+.1f}, {100 * d['ci_high']:+.1f}], p = {holm[i]:.2g}")
        i += 1
    print(f"| {t} | " + " | ".join(cells) + " |")
print()
print("rage_numeric_key_last at lr 1e-3 minus rage_numeric at lr 5e-4, epoch 2, paired on the same "
      "questions: difference [95% bootstrap interval], sign-flip p Holm-adjusted over the 6 tests.")
PY
