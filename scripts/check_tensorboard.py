#!/usr/bin/env python3
"""Reads a run's TensorBoard event files with TensorBoard's own reader (EventAccumulator) and
checks them against the run's metrics.jsonl and results.json.

For every stage under RUN/tensorboard/ it checks that
  - every number of every metrics.jsonl record (the last record of each (stage, step) counts:
    a resumed run repeats the steps after its checkpoint) is a scalar of the same tag at the same
    step, equal to it rounded to float32 (TensorBoard's simple_value);
  - no training tag has a step that metrics.jsonl does not, nor two values at one step (a resumed
    run's orphaned steps are hidden by its SessionLog START);
  - every aggregate of results.json (mean, ci_low, ci_high) is eval/<test set>/<metric>[/ci_*] at
    the record's epoch;
  - the resolved config is there as text.
With --make-run DIR it first makes such a run: tests/fixtures/configs/tiny.yaml with SFT, PPO and
SFT+PPO, killed during SFT (CITEFORGE_KILL_AT=sft:5, after the checkpoint at step 4) and resumed.
It exits non-zero on the first mismatch.

    scripts/reference_venv.sh            # once
    ~/.cache/citeforge/pyref-venv/bin/python scripts/check_tensorboard.py RUN_DIR [--make-run]
"""

import argparse
import json
import os
import shutil
import struct
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

REPO = Path(__file__).resolve().parents[1]
CITEFORGE = REPO / "build" / "citeforge"


def fail(message):
    print(f"check_tensorboard: {message}", file=sys.stderr)
    sys.exit(1)


def f32(value):
    return struct.unpack("f", struct.pack("f", value))[0]


def flatten(value, tag, out):
    if isinstance(value, bool) or value is None:
        return
    if isinstance(value, (int, float)):
        out[tag] = float(value)
    elif isinstance(value, dict):
        for key, inner in value.items():
            flatten(inner, f"{tag}/{key}", out)


def make_run(run):
    if run.exists():
        shutil.rmtree(run)
    args = [str(CITEFORGE), "run", "tests/fixtures/configs/tiny.yaml", "--out", str(run),
            "--set", "settings=[sft, ppo, sft+ppo]"]
    killed = subprocess.run(args, cwd=REPO, env={**os.environ, "CITEFORGE_KILL_AT": "sft:5"},
                            capture_output=True, text=True)
    if killed.returncode == 0:
        fail("the run was not killed at sft:5")
    resumed = subprocess.run(args, cwd=REPO, capture_output=True, text=True)
    if resumed.returncode != 0:
        fail(f"the resumed run failed:\n{resumed.stderr[-2000:]}")


def expected_training(run):
    """(stage, tag) -> {step: value}, the last record of each step winning."""
    expected = defaultdict(dict)
    repeated = 0
    seen = set()
    for line in (run / "metrics.jsonl").read_text().splitlines():
        record = json.loads(line)
        if "event" in record:
            continue
        step = record.get("step", record.get("iteration"))
        numbers = {}
        for key, value in record.items():
            if key not in ("stage", "step", "iteration"):
                flatten(value, key, numbers)
        if (record["stage"], step) in seen:
            repeated += 1
        seen.add((record["stage"], step))
        for tag, value in numbers.items():
            expected[(record["stage"], tag)][step] = value
    return expected, repeated


def expected_evaluations(run):
    expected = defaultdict(dict)
    for record in json.loads((run / "results.json").read_text()):
        for metric, a in record["metrics"].items():
            if a["mean"] is None:
                continue
            prefix = f"eval/{record['test_set']}/{metric}"
            expected[(record["stage"], prefix)][record["epoch"]] = a["mean"]
            for bound in ("ci_low", "ci_high"):
                if a[bound] is not None:
                    expected[(record["stage"], f"{prefix}/{bound}")][record["epoch"]] = a[bound]
    return expected


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("run")
    parser.add_argument("--make-run", action="store_true")
    args = parser.parse_args()
    run = Path(args.run)
    if args.make_run:
        make_run(run)
    board = {}
    for stage_dir in sorted((run / "tensorboard").iterdir()):
        acc = EventAccumulator(str(stage_dir), size_guidance={"scalars": 0, "tensors": 0})
        acc.Reload()
        if "config" not in acc.Tags()["tensors"]:
            fail(f"{stage_dir}: no config text")
        for tag in acc.Tags()["scalars"]:
            events = acc.Scalars(tag)
            board[(stage_dir.name, tag)] = {e.step: e.value for e in events}
            if not tag.startswith("eval/") and len(events) != len({e.step for e in events}):
                fail(f"{stage_dir}: {tag} has two values at one step (a resumed run's orphans)")
    training, repeated = expected_training(run)
    evaluations = expected_evaluations(run)
    checked = 0
    for source, expected in (("metrics.jsonl", training), ("results.json", evaluations)):
        for (stage, tag), steps in expected.items():
            seen = board.get((stage, tag))
            if seen is None:
                fail(f"{source}: {stage} {tag} is not in the event files")
            for step, value in steps.items():
                if step not in seen:
                    fail(f"{source}: {stage} {tag} step {step} is not in the event files")
                if seen[step] != f32(value):
                    fail(f"{source}: {stage} {tag} step {step}: {seen[step]} in the event files, "
                         f"{value} in {source}")
                checked += 1
            if source == "metrics.jsonl" and set(seen) != set(steps):
                fail(f"{stage} {tag}: steps {sorted(set(seen) - set(steps))} only in the event files")
    resumes = sum('"event":"resume"' in l for l in (run / "metrics.jsonl").read_text().splitlines())
    print(f"check_tensorboard: {run}: {checked} values of metrics.jsonl and results.json equal "
          f"TensorBoard's (EventAccumulator, tensorboard "
          f"{__import__('tensorboard').__version__}) in {len({s for s, _ in board})} stages; "
          f"{resumes} resume(s), {repeated} repeated step record(s) resolved to the last")


if __name__ == "__main__":
    main()
