"""The Markdown table of experiments/citefix/run.sh: one row per correction method (none = the
answers as written), precision / recall / F1 with their 95% intervals, the chance precision of
citing as many documents at random, the paired difference in F1 from the answers the method
corrected (same questions; 95% paired bootstrap interval and sign-flip p, Holm-adjusted over the
methods of one table, by `citeforge holm`), points re-cited and the added milliseconds per answer."""
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # experiments/, for paired_cells
from paired_cells import holm, interval_cell, paired_cell  # noqa: E402

out, n, dtype = Path(sys.argv[1]), sys.argv[2], sys.argv[3]


for condition, title in [("written", "as written"), ("swapped", "with every citation swapped")]:
    print(f"\nSynSciQA_test, first {n} questions, GPT-3.5 answers {title}; model methods read by "
            f"SmolLM2-135M-Instruct in {dtype}.\n")
    print("| method | precision | recall | F1 | chance precision | F1 − as given | points re-cited "
          "| ms per answer |")
    print("|---|---|---|---|---|---|---|---|")
    summaries = {}
    for method in ["none", "keyword", "keyword_bm25", "bertscore", "attention", "ask_model"]:
        path = out / condition / f"score_{method}" / "summary.json"
        if path.exists():
            summaries[method] = json.loads(path.read_text())
    tests = {m: s.get("paired", {}).get("base", {}).get("f1") for m, s in summaries.items()
             if m != "none"}
    tested = [m for m, t in tests.items() if t is not None]
    adjusted = dict(zip(tested, holm([tests[m]["p"] for m in tested])))
    for method, summary in summaries.items():
        recited, ms = "-", "-"
        if method != "none":
            line = (out / condition / f"fix_{method}.txt").read_text()
            m = re.search(r"(\d+) cited points, (\d+) re-cited.*?([\d.]+) ms per answer", line)
            recited, ms = f"{m.group(2)} of {m.group(1)}", f"{float(m.group(3)):.0f}"
        intervals = " | ".join(interval_cell(summary[m]) for m in ("precision", "recall", "f1"))
        print(f"| {method} | {intervals} | {100 * summary['chance_precision']['mean']:.1f} | "
              f"{paired_cell(tests.get(method), adjusted.get(method, 1.0))} | {recited} | {ms} |")
    print(f"\nF1 − as given: paired on the same questions, Holm-adjusted over the {len(tested)} "
          "methods of this table.")
