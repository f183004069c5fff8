#!/usr/bin/env python3
"""Whether a new demo run's selected checkpoints score within a recorded run's 95% intervals:
for every setting both runs selected a checkpoint of, on every test set of the record's selection,
each metric's mean in the new run against the record's mean and bootstrap interval. For a change
that moves a run's last bits (so its PPO draws), where equality cannot be asked for. Prints a
Markdown table; exits 1 if any mean falls outside. Standard library only.

    python3 experiments/demo/within_intervals.py RECORD_RUN_DIR NEW_RUN_DIR
"""
import json
import sys
from pathlib import Path

METRICS = ["f1", "precision", "recall", "reward"]


def selected(run_dir):
    path = Path(run_dir) / "selection.json"
    try:
        return {s["setting"]: s for s in json.loads(path.read_text())["selected"]}
    except (OSError, ValueError, KeyError, TypeError) as e:
        sys.exit(f"within_intervals: {path}: not a run's selection ({e})")


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__.strip().splitlines()[-1].strip())
    record, new = selected(sys.argv[1]), selected(sys.argv[2])
    print("| setting | epoch (record / new) | test set | metric | record: mean [95% interval] "
          "| new: mean | inside |")
    print("|---|---|---|---|---|---|---|")
    outside = 0
    for setting, r in record.items():
        n = new.get(setting)
        if n is None:
            print(f"| {setting} | {r['epoch']} / – | | | | not selected in the new run | |")
            outside += 1
            continue
        for test_set, scores in r["scores"].items():
            for metric in METRICS:
                a = scores[metric]
                b = n["scores"][test_set][metric]["mean"]
                inside = a["ci_low"] <= b <= a["ci_high"]
                outside += not inside
                print(f"| {setting} | {r['epoch']} / {n['epoch']} | {test_set} | {metric} | "
                      f"{100 * a['mean']:.1f} [{100 * a['ci_low']:.1f}, {100 * a['ci_high']:.1f}] | "
                      f"{100 * b:.1f} | {'yes' if inside else 'NO'} |")
    print(f"\n{outside} outside the record's intervals.")
    return 1 if outside else 0


if __name__ == "__main__":
    sys.exit(main())
