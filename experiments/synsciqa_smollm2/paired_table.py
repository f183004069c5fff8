"""The paired tests of a run's results.json, per test set, for the three metrics this record reads:
source quality, F1 and precision of each trained checkpoint against its chance reference and
against the base on the same questions (and the no-model baselines, the base's answers re-cited
by rule, likewise), and each correction of a trained checkpoint against the same answers
uncorrected. `citeforge tables` shows F1, precision and recall; source quality's paired tests are
in results.json only, and this prints them beside the others.

    python3 experiments/synsciqa_smollm2/paired_table.py RUN_DIR > RUN_DIR/paired_tests.md

The p-values are Holm-adjusted over every p-value the output shows (the family is this file),
which is stricter than the run's tables, whose family is one test set's table; the adjustment is
`citeforge holm`'s (build/citeforge), the rule of those tables. Otherwise only the standard library.
"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # experiments/, for paired_cells
from paired_cells import holm, interval_cell, paired_cell  # noqa: E402

ORDER = {"base": 0, "sft": 1, "ppo": 2, "sft+ppo": 3}
METRICS = [("source_quality", "source quality"), ("f1", "F1"), ("precision", "precision")]


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: paired_table.py RUN_DIR")
    path = f"{sys.argv[1]}/results.json"
    try:
        with open(path) as f:
            records = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"{path}: {e}")
    def kind(r):  # 0: a checkpoint's own answers or a no-model baseline; 1: a correction
        correction = r["test_set"].partition("+")[2]
        return 1 if correction and not correction.startswith("cite_") else 0

    records.sort(key=lambda r: (r["test_set"].partition("+")[0], kind(r),
                                ORDER.get(r["stage"], 9), r["epoch"], r["test_set"]))
    # Rows: (test set, title, [(label, metric value, [paired test or None per column])]).
    # The first pass collects every p-value, the second prints them adjusted.
    cells, ps = [], []

    def test_of(r, against, metric):
        paired = r.get("paired", {})
        # A baseline's answers are the base's re-cited: its test against them is "uncorrected".
        if against == "base" and "base" not in paired:
            against = "uncorrected"
        t = paired.get(against, {}).get(metric)
        if t is None:
            return None
        ps.append(t["p"])
        return (t, len(ps) - 1)

    for r in records:
        set_name, _, correction = r["test_set"].partition("+")
        if r["stage"] == "base" and not correction:
            continue  # the base is the reference: nothing to pair it with but itself
        if r["stage"] == "base" and kind(r) == 1:
            continue  # the base cites (almost) nothing a correction could move
        against = ["uncorrected"] if kind(r) == 1 else ["chance", "base"]
        row = [(label, interval_cell(r["metrics"][m]), [test_of(r, a, m) for a in against])
               for m, label in METRICS]
        cells.append((set_name, correction, r, against, row))
    adjusted = holm(ps)

    print("Paired tests of the run's `results.json`: the mean per-question difference in points, its 95% paired "
          "bootstrap interval and the sign-flip p-value, Holm-adjusted over all "
          f"{len(ps)} p-values of this file.\n")
    current = None
    for set_name, correction, r, against, row in cells:
        if (set_name, tuple(against)) != current:
            current = (set_name, tuple(against))
            n = r["metrics"]["f1"]["count"]
            heads = " | ".join(f"{label} − {a}" for _, label in METRICS for a in against)
            what = "corrections" if against == ["uncorrected"] else "checkpoints and baselines"
            print(f"\n{set_name} (n = {n}), {what}\n")
            values = " | ".join(label for _, label in METRICS)
            print(f"| checkpoint | re-cited by | {values} | {heads} |")
            print("|---|---|" + "---|" * (len(METRICS) * (1 + len(against))))
        values = " | ".join(v for _, v, _ in row)
        tests = " | ".join("-" if t is None else paired_cell(t[0], adjusted[t[1]])
                           for _, _, column in row for t in column)
        print(f"| {r['stage']} {r['epoch']} | {correction or 'none'} | {values} | {tests} |")


if __name__ == "__main__":
    main()
