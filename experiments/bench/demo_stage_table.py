#!/usr/bin/env python3
"""The before/after table of two demo runs timed by demo_stage_times.sh.

    python3 experiments/bench/demo_stage_table.py BEFORE.log AFTER.log

Each log is a run's stamped output (OUT/stages.log, or the committed copy of it). A stage runs
from the end of the one before to its own "done" line; evaluation is the sum of the rounds'
"done in" times, rollouts the sum of PPO's "rollout of N answers in" times (both settings).
Standard library only.
"""
import re
import sys

STAMP = re.compile(r"^\s*(\d+\.\d)\s(.*)$")
SECONDS = re.compile(r"in (?:(\d+)m)?(\d+)s")


def duration(text):
    m = SECONDS.search(text)
    return int(m.group(1) or 0) * 60 + int(m.group(2))


def stages(path):
    """Seconds of each stage, evaluation and rollouts of one stamped log."""
    marks, evaluation, rollouts, end = {}, 0, 0, None
    for line in open(path, encoding="utf-8"):
        m = STAMP.match(line)
        if not m:
            continue
        t, text = float(m.group(1)), m.group(2)
        end = t
        if text.startswith("[eval base-0 test_ood] done in"):
            marks["base"] = t
        for stage in ("sft", "ppo", "sft+ppo"):
            if text.startswith(f"[{stage}] done in"):
                marks[stage] = t
        if re.match(r"\[eval [^\]]+\] done in", text):
            evaluation += duration(text)
        if re.match(r"\[(ppo|sft\+ppo)\] iteration \d+/\d+: rollout of", text):
            rollouts += duration(text.split("elapsed")[0])
    missing = [k for k in ("base", "sft", "ppo", "sft+ppo") if k not in marks]
    if missing or end is None:
        sys.exit(f"demo_stage_table: {path}: no 'done' line for {', '.join(missing) or 'the run'}")
    return {
        "base": marks["base"],
        "sft": marks["sft"] - marks["base"],
        "ppo": marks["ppo"] - marks["sft"],
        "sft+ppo": marks["sft+ppo"] - marks["ppo"],
        "evaluation": evaluation,
        "rollouts": rollouts,
        "run": end,
    }


def shown(seconds):
    seconds = round(seconds)
    return f"{seconds // 60} m {seconds % 60:02d} s" if seconds >= 60 else f"{seconds} s"


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: demo_stage_table.py BEFORE.log AFTER.log")
    before, after = stages(sys.argv[1]), stages(sys.argv[2])
    names = {
        "base": "base evaluation (3 sets, 120 answers), with the world and the model's load",
        "sft": "SFT (36 steps of batch 8, two evaluation rounds)",
        "ppo": "PPO from the base (4 iterations of 16, one evaluation round)",
        "sft+ppo": "SFT+PPO (the same from the selected SFT checkpoint)",
        "evaluation": "all evaluation rounds (7 rounds, 840 answers)",
        "rollouts": "all PPO rollouts (8 of 16 answers)",
        "run": "whole run",
    }
    print("| stage | before | after | before / after |")
    print("|---|---|---|---|")
    for key, name in names.items():
        b, a = before[key], after[key]
        print(f"| {name} | {shown(b)} | {shown(a)} | {b / a:.2f} |")


if __name__ == "__main__":
    main()
