"""Answers whose citations are known to be wrong, for experiments/citefix/run.sh: each named
citation of a reference answer is replaced by another source of the same example, chosen with a
fixed seed, so a correction method can be judged on how much it recovers.

    python3 swap_citations.py EXAMPLES.jsonl REFERENCE OUT.jsonl [SEED]
"""
import json
import random
import sys

examples, reference, out = sys.argv[1], sys.argv[2], sys.argv[3]
rng = random.Random(int(sys.argv[4]) if len(sys.argv) > 4 else 7)
lines = []
for line in open(examples, encoding="utf-8"):
    ex = json.loads(line)
    answer = ex["references"][reference]
    names = [s["name"] for s in ex["sources"] if s.get("name")]
    # Longest names first, so that a name inside another is not replaced within it.
    for name in sorted(set(names), key=len, reverse=True):
        others = [n for n in names if n != name]
        if others and name in answer:
            answer = answer.replace(name, "\x00%d\x00" % names.index(rng.choice(others)))
    for i, name in enumerate(names):
        answer = answer.replace("\x00%d\x00" % i, name)
    lines.append(json.dumps({"id": ex["id"], "answer": answer}, ensure_ascii=False))
open(out, "w", encoding="utf-8").write("\n".join(lines) + "\n")
