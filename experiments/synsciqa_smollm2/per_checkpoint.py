"""Every evaluated checkpoint of a run side by side, per test set: source quality and F1 with their
95% intervals and chance references, distinct citations and answer length. `citeforge tables`
shows each setting's selected checkpoint only; reading how the scores move across epochs, and
which epoch each test set would select, needs all of them.

    python3 experiments/synsciqa_smollm2/per_checkpoint.py runs/smollm2_synsciqa_epochs [test_set ...]

Without test sets, every uncorrected one in the run's results.json. Only the standard library.
"""
import json
import sys

ORDER = {"base": 0, "sft": 1, "ppo": 2, "sft+ppo": 3}


def pct(metric):
    return f"{100 * metric['mean']:.1f} [{100 * metric['ci_low']:.1f}, {100 * metric['ci_high']:.1f}]"


def main():
    run = sys.argv[1]
    with open(f"{run}/results.json") as f:
        records = json.load(f)
    sets = sys.argv[2:] or sorted({r["test_set"] for r in records if "+" not in r["test_set"]})
    for test_set in sets:
        rows = sorted((r for r in records if r["test_set"] == test_set),
                      key=lambda r: (ORDER.get(r["stage"], 9), r["epoch"]))
        if not rows:
            sys.exit(f"{run}/results.json: no records for test set '{test_set}'")
        print(f"\n{test_set} (n = {rows[0]['metrics']['f1']['count']})\n")
        print("| stage | epoch | source quality | chance | F1 | F1 chance | distinct cited | words |")
        print("|---|--:|--:|--:|--:|--:|--:|--:|")
        for r in rows:
            m = r["metrics"]
            print(f"| {r['stage']} | {r['epoch']} | {pct(m['source_quality'])} "
                  f"| {100 * m['chance_source_quality']['mean']:.1f} | {pct(m['f1'])} "
                  f"| {100 * m['chance_f1']['mean']:.1f} | {m['distinct_citations']['mean']:.2f} "
                  f"| {m['answer_length']['mean']:.1f} |")
        # Which epoch of each trained setting this set would select, by source quality and by F1.
        for metric in ("source_quality", "f1"):
            picks = []
            for stage in sorted({r["stage"] for r in rows} - {"base"}, key=lambda s: ORDER.get(s, 9)):
                best = max((r for r in rows if r["stage"] == stage),
                           key=lambda r: (r["metrics"][metric]["mean"], -r["epoch"]))
                picks.append(f"{stage} {best['epoch']}")
            print(f"\nselected on {test_set} by {metric}: {', '.join(picks)}")


if __name__ == "__main__":
    main()
