"""The Markdown table of experiments/citefix/run.sh: one row per correction method (none = the
answers as written), precision / recall / F1 with their 95% intervals, the chance precision of
citing as many documents at random, points re-cited and the added milliseconds per answer."""
import json
import re
import sys
from pathlib import Path

out, n, dtype = Path(sys.argv[1]), sys.argv[2], sys.argv[3]


def cell(summary, name):
    m = summary[name]
    return f"{100 * m['mean']:.1f} [{100 * m['ci_low']:.1f}, {100 * m['ci_high']:.1f}]"


for condition, title in [("written", "as written"), ("swapped", "with every citation swapped")]:
    print(f"\nSynSciQA_test, first {n} questions, GPT-3.5 answers {title}; model methods read by "
            f"SmolLM2-135M-Instruct in {dtype}.\n")
    print("| method | precision | recall | F1 | chance precision | points re-cited | ms per answer |")
    print("|---|---|---|---|---|---|---|")
    for method in ["none", "keyword", "keyword_bm25", "bertscore", "attention", "ask_model"]:
        path = out / condition / f"score_{method}" / "summary.json"
        if not path.exists():
            continue
        summary = json.loads(path.read_text())
        recited, ms = "-", "-"
        if method != "none":
            line = (out / condition / f"fix_{method}.txt").read_text()
            m = re.search(r"(\d+) cited points, (\d+) re-cited.*?([\d.]+) ms per answer", line)
            recited, ms = f"{m.group(2)} of {m.group(1)}", f"{float(m.group(3)):.0f}"
        print(f"| {method} | {cell(summary, 'precision')} | {cell(summary, 'recall')} | "
              f"{cell(summary, 'f1')} | {100 * summary['chance_precision']['mean']:.1f} | "
              f"{recited} | {ms} |")
