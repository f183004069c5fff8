"""The comparison of training and correction on one run: each selected checkpoint (base, SFT,
PPO, SFT+PPO) as it answered and after citation correction, with the chance references and the
time each correction adds per answer.

    python3 experiments/citefix/demo_table.py RUN_DIR RUN_LOG

RUN_DIR is a `citeforge run` directory evaluated with eval.corrections; RUN_LOG the run's output
(stderr), where each corrected evaluation's summary line gives its milliseconds per answer (the
last such line per evaluation is used). The best correction of a checkpoint is the one with the
highest F1 on the run's validation set, so the choice is made without the test sets.
"""
import json
import re
import sys
from pathlib import Path

run, log = Path(sys.argv[1]), Path(sys.argv[2])
results = json.loads((run / "results.json").read_text())
selection = json.loads((run / "selection.json").read_text())
validation = selection["validation"]
by_key = {(r["stage"], r["epoch"], r["test_set"]): r["metrics"] for r in results}
ms = {}
line = re.compile(r"^\[eval\] (\S+)-(\d+) (\S+)\+(\S+) .*?(\d+) ms per answer\)")
for text in log.read_text(errors="replace").splitlines():
    m = line.match(text)
    if m:
        ms[(m.group(1), int(m.group(2)), m.group(3), m.group(4))] = int(m.group(5))
methods = sorted({t.split("+", 1)[1] for (_, _, t) in by_key if "+" in t})
test_sets = sorted({t for (_, _, t) in by_key if "+" not in t and "@" not in t and t != validation})


def cell(metrics, name):
    a = metrics.get(name)
    if not a or a.get("mean") is None:
        return "-"
    if "ci_low" in a and not name.startswith("chance"):
        return f"{100 * a['mean']:.1f} [{100 * a['ci_low']:.1f}, {100 * a['ci_high']:.1f}]"
    return f"{100 * a['mean']:.1f}"


def best_method(stage, epoch):
    scored = [(by_key[(stage, epoch, f"{validation}+{m}")]["f1"]["mean"], m)
              for m in methods if (stage, epoch, f"{validation}+{m}") in by_key]
    return max(scored)[1] if scored else None


titles = {"base": "Base", "sft": "SFT", "ppo": "PPO", "sft+ppo": "SFT+PPO"}
for test in test_sets:
    print(f"\n{test}\n")
    print("| checkpoint | correction | F1 | chance F1 | precision | chance P | recall | chance R | ms per answer |")
    print("|---|---|---|---|---|---|---|---|---|")
    for s in selection["selected"]:
        stage, epoch = s["setting"], s["epoch"]
        rows = [None] + (methods if stage == "base" else [best_method(stage, epoch)])
        for method in rows:
            name = test if method is None else f"{test}+{method}"
            metrics = by_key.get((stage, epoch, name))
            if metrics is None:
                continue
            label = "none" if method is None else (method if stage == "base" else f"{method} (best on {validation})")
            cost = "-" if method is None else str(ms.get((stage, epoch, test, method), "?"))
            print(f"| {titles[stage]} {epoch} | {label} | {cell(metrics, 'f1')} | {cell(metrics, 'chance_f1')} | "
                  f"{cell(metrics, 'precision')} | {cell(metrics, 'chance_precision')} | "
                  f"{cell(metrics, 'recall')} | {cell(metrics, 'chance_recall')} | {cost} |")
