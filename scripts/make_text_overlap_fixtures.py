#!/usr/bin/env python3
"""Writes tests/fixtures/text_overlap/cases.jsonl: ROUGE-L (rouge-score, no stemmer) and BLEU
(sacrebleu's sentence_bleu and corpus_bleu, defaults) of candidate / reference pairs, which the
C++ in rewards/text_overlap.* must reproduce (tests/rewards/test_text_overlap.cpp).

The pairs are real answers, SynSciQA_test's GPT-3.5 answer as the candidate and GPT-4's as the
reference for the first 60 questions, plus hand-made edge cases for the tokenizers (numbers with
points and commas, dashes after digits, HTML entities, symbols, non-ASCII text, empty strings)
and cases with several references. Deterministic: a rerun writes the same file.

    scripts/reference_venv.sh      # once: sacrebleu and rouge-score are in its requirements
    ~/.cache/citeforge/pyref-venv/bin/python scripts/make_text_overlap_fixtures.py
"""
import csv
import json
from pathlib import Path

import sacrebleu
from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a
from rouge_score import rouge_scorer

repo = Path(__file__).resolve().parent.parent
rows = list(csv.DictReader(open(repo / "datasets/synsciqa/SynSciQA_test.csv", encoding="utf-8")))
cases = [(r["gpt-35"], [r["gpt-4"]]) for r in rows[:60]]
cases += [
    ("The rate rose 3.5% in 2019, from 1,000 to 1,035 units.", ["It rose by 3.5 % in 2019."]),
    ("Pages 12-14 say so; see (Smith, 2020, p. 4).", ["Smith (2020, p.4) says so on pages 12-14."]),
    ("A &amp; B &lt;tag&gt; &quot;quoted&quot; <skipped> text", ['A & B <tag> "quoted" text']),
    ("Café naïve façade — déjà vu… Straße", ["cafe naive facade deja vu strasse"]),
    ("line one-\nline two\nline three", ["line oneline two line three"]),
    ("", ["Something to compare with."]),
    ("Only the candidate.", [""]),
    ("a b c d e f", ["a b c d e f"]),
    ("a b", ["a b c d e f g h"]),
    ("completely different words here", ["nothing in common at all"]),
    ("The cat sat on the mat.", ["The cat is on the mat.", "There is a cat on the mat."]),
    ("It is a guide to action.", ["It is a guide to action that ensures the military will forever heed.",
                                  "It is the guiding principle which guarantees the military forces.",
                                  "It is the practical guide for the army always to heed."]),
    ("x{y}z~[a]`b` c&d(e)+f:g@h/i", ["x y z a b c d e f g h i"]),
]
scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False)
out_dir = repo / "tests/fixtures/text_overlap"
out_dir.mkdir(parents=True, exist_ok=True)
lines = []
for candidate, references in cases:
    best = max((scorer.score(r, candidate)["rougeL"] for r in references), key=lambda s: s.fmeasure)
    lines.append(json.dumps({
        "candidate": candidate,
        "references": references,
        "rouge_l": {"precision": best.precision, "recall": best.recall, "f": best.fmeasure},
        "tokens_13a": Tokenizer13a()(candidate),
        "sentence_bleu": sacrebleu.sentence_bleu(candidate, references).score,
    }, ensure_ascii=False))
# Corpus BLEU over the real pairs (one reference each) and over all cases padded to 3 references.
real = cases[:60]
corpus_real = sacrebleu.corpus_bleu([c for c, _ in real], [[r[0] for _, r in real]]).score
(out_dir / "cases.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
(out_dir / "corpus.json").write_text(json.dumps({
    "real_pairs": 60, "corpus_bleu_real": corpus_real,
    "sacrebleu": sacrebleu.__version__}, indent=2) + "\n", encoding="utf-8")
print(f"wrote {len(lines)} cases; corpus BLEU of the real pairs {corpus_real:.4f}")
