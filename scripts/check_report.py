#!/usr/bin/env python3
"""Renders a run's report.html in headless Chromium and checks its Table 2 numbers against the
run's results.json.

Chromium (Debian's `chromium`: apt-get install chromium) loads the page from disk with every
request sent to a closed port, writes a screenshot (OUT.png) and the DOM it rendered; every
row of every "Table 2: <test set>" table in that DOM is looked up in results.json by its setting,
epoch and test set (a "Base + <baseline>" row by its <test set>+<baseline> set), and its F1,
precision and recall cells (mean and 95% interval, in percent) and chance columns must equal the
record's numbers. Standard library only; exits non-zero on the first mismatch.

    scripts/check_report.py RUN_DIR [--screenshot OUT.png]
"""

import argparse
import json
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

STAGES = {"Base": "base", "SFT": "sft", "PPO": "ppo", "SFT+PPO": "sft+ppo"}


def fail(message):
    print(f"check_report: {message}", file=sys.stderr)
    sys.exit(1)


class Tables(HTMLParser):
    """Each table as (the heading before it, its rows of cell texts)."""

    def __init__(self):
        super().__init__()
        self.tables, self.heading, self.text, self.row = [], "", None, None
        self.in_heading = False

    def handle_starttag(self, tag, attrs):
        if tag in ("h2", "h3"):
            self.in_heading, self.heading = True, ""
        elif tag == "table":
            self.tables.append((self.heading, []))
        elif tag == "tr":
            self.row = []
        elif tag in ("td", "th"):
            self.text = ""

    def handle_endtag(self, tag):
        if tag in ("h2", "h3"):
            self.in_heading = False
        elif tag in ("td", "th") and self.row is not None:
            self.row.append(self.text.strip())
            self.text = None
        elif tag == "tr" and self.row is not None:
            self.tables[-1][1].append(self.row)
            self.row = None

    def handle_data(self, data):
        if self.in_heading:
            self.heading += data
        if self.text is not None:
            self.text += data


def percent(a):
    return f"{100 * a['mean']:.1f}" if a["mean"] is not None else "–"


def with_interval(a):
    if a["mean"] is None:
        return "–"
    return f"{100 * a['mean']:.1f} [{100 * a['ci_low']:.1f}, {100 * a['ci_high']:.1f}]"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("run")
    parser.add_argument("--screenshot", default=None)
    args = parser.parse_args()
    run = Path(args.run).resolve()
    page = run / "report.html"
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        fail("no chromium on PATH (apt-get install chromium)")
    common = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
              "--proxy-server=127.0.0.1:9", "--window-size=1400,6000"]
    shot = Path(args.screenshot or run / "report.png").resolve()
    subprocess.run(common + [f"--screenshot={shot}", page.as_uri()], check=True,
                   capture_output=True, timeout=120)
    dom = subprocess.run(common + ["--dump-dom", page.as_uri()], check=True, capture_output=True,
                         text=True, timeout=120).stdout
    tables = Tables()
    tables.feed(dom)
    results = json.loads((run / "results.json").read_text())
    index = {(r["stage"], r["epoch"], r["test_set"]): r["metrics"] for r in results}
    checked = 0
    for heading, rows in tables.tables:
        if not heading.startswith("Table 2: "):
            continue
        test_set = heading[len("Table 2: "):].strip()
        header = rows[0]
        if header[:3] != ["Tuning", "Epoch", "F1"]:
            continue  # the paired table under it
        for row in rows[1:]:
            cells = dict(zip(header, row))
            title, _, baseline = cells["Tuning"].partition(" + ")
            key = (STAGES[title], int(cells["Epoch"]),
                   f"{test_set}+{baseline}" if baseline else test_set)
            metrics = index.get(key)
            if metrics is None:
                fail(f"{page}: row {key} is not in results.json")
            for column, metric, form in (("F1", "f1", with_interval),
                                         ("Precision", "precision", with_interval),
                                         ("Recall", "recall", with_interval),
                                         ("F1 chance", "chance_f1", percent),
                                         ("P chance", "chance_precision", percent),
                                         ("R chance", "chance_recall", percent)):
                expected = form(metrics[metric])
                if cells[column] != expected:
                    fail(f"{page}: {key} {column} shows {cells[column]!r}, results.json "
                         f"{expected!r}")
                checked += 1
    if checked == 0:
        fail(f"{page}: no Table 2 rendered")
    print(f"check_report: {page} rendered by {Path(chromium).name} (screenshot {shot}); "
          f"{checked} Table 2 cells equal results.json")


if __name__ == "__main__":
    main()
