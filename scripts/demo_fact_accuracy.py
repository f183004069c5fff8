#!/usr/bin/env python3
"""How often an evaluated answer of the synthetic world states the right fact.

The synthetic teacher's answers end with the fact and then the citations ("The Belbeldor eats
crabs [1][3]."), so the word right before the first citation of the gold answer is the fact.
This counts the generations that contain that word, per test set of one evaluation.

  python3 scripts/demo_fact_accuracy.py runs/demo sft-1 [validation test test_ood]

Needs h5py (PyPI); reads only the run directory.
"""
import json
import sys

import h5py


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    run, evaluation = sys.argv[1], sys.argv[2]
    for test_set in sys.argv[3:] or ["validation", "test", "test_ood"]:
        with open(f"{run}/data/{test_set}.jsonl") as f:
            gold = {}
            for line in f:
                example = json.loads(line)
                gold[example["id"]] = example["references"]["gold"]
        with h5py.File(f"{run}/eval/{evaluation}/{test_set}.h5") as archive:
            ids = [i.decode() for i in archive["ids"]]
            generations = [g.decode() for g in archive["generations"]]
        right = 0
        for example_id, answer in zip(ids, generations):
            words = gold[example_id].split("[")[0].split()
            right += bool(words) and words[-1].strip(".") in answer
        print(f"{evaluation} {test_set}: fact stated in {right}/{len(ids)} answers "
              f"({right / len(ids):.0%})")


if __name__ == "__main__":
    main()
