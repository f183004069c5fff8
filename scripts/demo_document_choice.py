#!/usr/bin/env python3
"""Which documents an evaluation's answers point to, scored against the gold labels.

An answer points to documents either by citing them ("... [1][3].") or, for a base built with
`data.reading_sources: prose`, by naming them in words ("..., as documents 1 and 3 say."),
which the citation metrics do not count. This scores the documents pointed to with the
citation rules of docs/design.md §3 (no relevant document and none named: P = R = 1) and prints how
often each kind of document (relevant, seemingly relevant, irrelevant) is pointed to. A model
that locates the evidence points to relevant documents far more often than to the others; one
that guesses points to every kind at about the same rate, and scores about what the same
number of documents drawn at random scores (printed alongside).

  python3 scripts/demo_document_choice.py RUN_DIR EVALUATION [validation test test_ood]

EVALUATION is a folder of RUN_DIR/eval, e.g. base-0 or sft-1. Needs h5py (PyPI); reads only
the run directory.
"""
import json
import random
import re
import sys
from collections import Counter

import h5py

NAMED = re.compile(r"as documents? ([\d, and]+) says?")
CITED = re.compile(r"\[(\d+)\]")


def pointed_to(answer):
    match = NAMED.search(answer)
    if match:
        return {int(k) for k in re.findall(r"\d+", match.group(1))}
    return {int(k) for k in CITED.findall(answer)}


def score(named, relevant):
    if not relevant:
        return (1.0, 1.0) if not named else (0.0, 0.0)
    if not named:
        return 0.0, 0.0
    hits = len(named & relevant)
    return hits / len(named), hits / len(relevant)


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    run, evaluation = sys.argv[1], sys.argv[2]
    for test_set in sys.argv[3:] or ["validation", "test", "test_ood"]:
        labels = {}
        with open(f"{run}/data/{test_set}.jsonl") as f:
            for line in f:
                example = json.loads(line)
                labels[example["id"]] = {s["key"]: s["label"] for s in example["sources"]}
        with h5py.File(f"{run}/eval/{evaluation}/{test_set}.h5") as archive:
            ids = [i.decode() for i in archive["ids"]]
            generations = [g.decode() for g in archive["generations"]]
        precision = recall = 0.0
        chance_precision = chance_recall = 0.0
        rng = random.Random(0)
        draws = 200
        shown, chosen = Counter(), Counter()
        for example_id, answer in zip(ids, generations):
            named = pointed_to(answer)
            relevant = {k for k, label in labels[example_id].items() if label == "relevant"}
            p, r = score(named, relevant)
            precision += p
            recall += r
            # The same number of documents, drawn at random.
            keys = sorted(labels[example_id])
            for _ in range(draws):
                p, r = score(set(rng.sample(keys, min(len(named), len(keys)))), relevant)
                chance_precision += p / draws
                chance_recall += r / draws
            for key, label in labels[example_id].items():
                shown[label] += 1
                chosen[label] += key in named
        n = len(ids)
        print(f"{evaluation} {test_set}: precision {precision / n:.3f}, recall {recall / n:.3f} "
              f"of the documents pointed to, over {n} answers")
        print(f"  as many documents drawn at random: precision {chance_precision / n:.3f}, "
              f"recall {chance_recall / n:.3f}")
        print("  share pointed to, by label: " + ", ".join(
            f"{label} {chosen[label] / shown[label]:.2f} ({chosen[label]}/{shown[label]})"
            for label in sorted(shown)))


if __name__ == "__main__":
    main()
