#!/usr/bin/env python3
"""Checks that the README.md `citeforge export` writes is a model card the Hugging Face hub reads.

For each exported directory it loads README.md with huggingface_hub.ModelCard (which parses the
YAML front matter into ModelCardData and fails on malformed metadata), checks the fields a card
of citeforge must carry (base_model, library_name, license, and license_name where the licence is
`other`, pipeline_tag, tags with "citeforge", datasets where a run is known), and, given the run
directory, that every F1 cell of the card's evaluation table equals results.json for the
exported checkpoint. It exits non-zero on the first failure.

    scripts/reference_venv.sh            # once
    ~/.cache/citeforge/pyref-venv/bin/python scripts/check_model_card.py EXPORT_DIR \
        [--run RUN_DIR --checkpoint NAME]
"""

import argparse
import json
import sys
from pathlib import Path

from huggingface_hub import ModelCard


def fail(message):
    print(f"check_model_card: {message}", file=sys.stderr)
    sys.exit(1)


def percent_with_interval(metric):
    return f"{100 * metric['mean']:.1f} [{100 * metric['ci_low']:.1f}, {100 * metric['ci_high']:.1f}]"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("export_dir")
    parser.add_argument("--run", help="the run directory the checkpoint came from")
    parser.add_argument("--checkpoint", help="the checkpoint's name in the run, e.g. sft-2")
    args = parser.parse_args()
    path = Path(args.export_dir) / "README.md"
    card = ModelCard.load(path)
    data = card.data.to_dict()
    for field in ("base_model", "library_name", "license", "pipeline_tag", "tags"):
        if not data.get(field):
            fail(f"{path}: front matter lacks {field}")
    if data["library_name"] not in ("peft", "transformers"):
        fail(f"{path}: library_name {data['library_name']!r}")
    if data["license"] == "other" and not data.get("license_name"):
        fail(f"{path}: license other without license_name")
    if "citeforge" not in data["tags"]:
        fail(f"{path}: tags lack citeforge")
    rows = 0
    if args.run:
        if not data.get("datasets"):
            fail(f"{path}: a run's card lacks datasets")
        results = json.loads((Path(args.run) / "results.json").read_text())
        for record in results:
            if record["checkpoint"] != f"checkpoints/{args.checkpoint}" or "+" in record["test_set"]:
                continue
            cell = percent_with_interval(record["metrics"]["f1"])
            line = next((l for l in card.text.splitlines()
                         if l.startswith("|") and l.split("|")[1].strip() == record["test_set"]),
                        None)
            if line is None or cell not in line:
                fail(f"{path}: the {record['test_set']} row does not show F1 {cell}")
            rows += 1
        if rows == 0:
            fail(f"{path}: no evaluation of {args.checkpoint} in {args.run}/results.json")
    print(f"check_model_card: {path} parses as a model card (huggingface_hub "
          f"{__import__('huggingface_hub').__version__}): base_model {data['base_model']!r}, "
          f"library_name {data['library_name']}, license {data['license']}"
          + (f"; {rows} test sets' F1 equal results.json" if args.run else ""))


if __name__ == "__main__":
    main()
