#!/usr/bin/env python3
"""Citation precision / recall of the documents a base model names in words.

With `data.reading_sources: prose` the built base answers "The X eats crabs, as documents 1 and
3 say." and never cites in the [n] form the metrics read, so its citation F1 shows only the
unanswerable questions. This scores the documents it *names* with the same rules (DESIGN.md §3:
no relevant document and none named is P = R = 1), i.e. how well the base locates the evidence
before SFT teaches it to cite.

  python3 scripts/demo_prose_attribution.py RUN_DIR base-0 [validation test test_ood]

Needs h5py (PyPI); reads only the run directory.
"""
import json
import re
import sys

import h5py

NAMED = re.compile(r"as documents? ([\d, and]+) says?")


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
        relevant = {}
        with open(f"{run}/data/{test_set}.jsonl") as f:
            for line in f:
                example = json.loads(line)
                relevant[example["id"]] = {
                    s["key"] for s in example["sources"] if s["label"] == "relevant"
                }
        with h5py.File(f"{run}/eval/{evaluation}/{test_set}.h5") as archive:
            ids = [i.decode() for i in archive["ids"]]
            generations = [g.decode() for g in archive["generations"]]
        precision = recall = 0.0
        for example_id, answer in zip(ids, generations):
            match = NAMED.search(answer)
            named = {int(k) for k in re.findall(r"\d+", match.group(1))} if match else set()
            p, r = score(named, relevant[example_id])
            precision += p
            recall += r
        n = len(ids)
        print(f"{evaluation} {test_set}: named-document precision {precision / n:.3f}, "
              f"recall {recall / n:.3f} over {n} answers")


if __name__ == "__main__":
    main()
