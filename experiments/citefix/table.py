"""The Markdown table of experiments/citefix/run.sh: one row per correction method (none = the
answers as written), precision / recall / F1 with their 95% intervals, the chance precision of
citing as many documents at random, the paired difference in F1 from the answers the method
corrected (same questions; 95% paired bootstrap interval and sign-flip p, Holm-adjusted over the
methods of one table, by `citeforge holm`), points re-cited and the added milliseconds per answer."""
import json
import re
import subprocess
import sys
from pathlib import Path

out, n, dtype = Path(sys.argv[1]), sys.argv[2], sys.argv[3]


def holm(ps):
    """Holm-adjusted p-values by `citeforge holm`, the rule the run's own tables use."""
    if not ps:
        return []
    citeforge = Path(__file__).resolve().parents[2] / "build" / "citeforge"
    result = subprocess.run([str(citeforge), "holm", *map(repr, ps)], check=True,
                            capture_output=True, text=True)
    return json.loads(result.stdout)["p_holm"]


def paired_cell(test, p):
    if test is None:
        return "-"
    d, lo, hi = (100 * test[k] for k in ("difference", "ci_low", "ci_high"))
    p_text = "p < 0.001" if p < 0.001 else f"p = {p:.2g}"
    return f"{d:+.1f} [{lo:+.1f}, {hi:+.1f}], {p_text}"


def cell(summary, name):
    m = summary[name]
    return f"{100 * m['mean']:.1f} [{100 * m['ci_low']:.1f}, {100 * m['ci_high']:.1f}]"


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
        print(f"| {method} | {cell(summary, 'precision')} | {cell(summary, 'recall')} | "
              f"{cell(summary, 'f1')} | {100 * summary['chance_precision']['mean']:.1f} | "
              f"{paired_cell(tests.get(method), adjusted.get(method, 1.0))} | {recited} | {ms} |")
    print(f"\nF1 − as given: paired on the same questions, Holm-adjusted over the {len(tested)} "
          "methods of this table.")
