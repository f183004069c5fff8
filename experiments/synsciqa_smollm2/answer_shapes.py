"""What a run's answers look like beyond their citation scores: per evaluation archive, how many
answers contain a parenthesised year (the shape of a named citation, whether or not it names a
source of the prompt), how many repeat a sentence word for word (greedy decoding caught in a
loop), how many say the sources do not answer the question (SynSciQA++'s abstention, in the
teacher's wording), how many run to 180 words or more, and the mean length in words.

    pip install h5py
    python3 experiments/synsciqa_smollm2/answer_shapes.py runs/smollm2_synsciqa_cpu
"""
import glob
import re
import sys

import h5py

YEAR_IN_PARENTHESES = re.compile(r"\([^()]*\b(1[89]|20)\d\d\b[^()]*\)")
ABSTAINING = re.compile(r"(do|does) not (provide|contain|mention)|cannot be (given|answered)")


def repeats_a_sentence(answer):
    sentences = [s.strip() for s in re.split(r"(?<=[.!?])\s+", answer) if len(s.strip()) > 20]
    return len(sentences) != len(set(sentences))


print("| archive | answers | with a parenthesised year | repeating a sentence | abstaining | 180+ words | mean words |")
print("|---|--:|--:|--:|--:|--:|--:|")
for path in sorted(glob.glob(f"{sys.argv[1]}/eval/*/*.h5")):
    if "+" in path.rsplit("/", 1)[-1]:  # corrected answers: the same text with other citations
        continue
    with h5py.File(path, "r") as archive:
        answers = [a.decode() if isinstance(a, bytes) else a for a in archive["generations"][:]]
    words = [len(a.split()) for a in answers]
    print(f"| {path.split('/eval/')[1]} | {len(answers)} "
          f"| {sum(bool(YEAR_IN_PARENTHESES.search(a)) for a in answers)} "
          f"| {sum(repeats_a_sentence(a) for a in answers)} "
          f"| {sum(bool(ABSTAINING.search(a)) for a in answers)} "
          f"| {sum(w >= 180 for w in words)} | {sum(words) / len(words):.1f} |")
