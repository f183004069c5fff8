#!/usr/bin/env python3
"""Says whether two run directories hold the same results: for checking that a change to the
code left a run's behaviour as it was (the same config run before and after), or that a rerun
reproduces a recorded one. Standard library only.

    scripts/compare_runs.py OLD_RUN_DIR NEW_RUN_DIR
    scripts/compare_runs.py --partial OLD_RUN_DIR NEW_RUN_DIR

Compared: every metric of every (stage, epoch, test set) record of OLD's results.json must be
in NEW's with the same mean, count and interval (metrics only NEW has are listed, not counted
as differences); every checkpoint file ending in .safetensors must be byte-identical; and
metrics.jsonl must hold the same records once wall-clock fields are removed. Exits 1 on any
difference, naming it.

--partial compares a run still in progress (or one killed and resumed) with a finished one:
only the results.json records and checkpoints both have, and the training records of
metrics.jsonl by (stage, step or iteration), the last one logged winning as in a resumed run;
resume events are left out. OLD may be a copy of a run's results.json, metrics.jsonl and
checkpoints alone (a recorded run in experiments/). A record that kept results.json only
(experiments/demo/runs/) is compared on it alone: the output says which parts OLD lacks."""

import json
import sys
from pathlib import Path

# Wall-clock fields differ between any two runs and say nothing about behaviour.
TIMING_FIELDS = {"elapsed_s", "tokens_per_s", "rollout_s", "reference_value_s", "update_s",
                 "iteration_s", "comm_wait_s", "comm_transfer_s"}


def results(run):
    path = run / "results.json"
    if not path.is_file():
        sys.exit(f"compare_runs: {path}: no such file (is {run} a run directory?)")
    records = json.loads(path.read_text())
    return {(r["stage"], r["epoch"], r["test_set"]): r["metrics"] for r in records}


def metrics_log(run):
    out = []
    for line in (run / "metrics.jsonl").read_text().splitlines():
        record = json.loads(line)
        out.append({k: v for k, v in record.items() if k not in TIMING_FIELDS})
    return out


def training_records(run):
    """The training records by (stage, step or iteration), the last logged winning."""
    out = {}
    for record in metrics_log(run):
        if "event" in record:
            continue
        out[(record.get("stage"), record.get("step", record.get("iteration")))] = record
    return out


def main():
    args = sys.argv[1:]
    partial = bool(args) and args[0] == "--partial"
    if partial:
        args = args[1:]
    if len(args) != 2:
        sys.exit(__doc__)
    old, new = Path(args[0]), Path(args[1])
    problems = []
    old_results, new_results = results(old), results(new)
    if partial:
        old_results = {k: v for k, v in old_results.items() if k in new_results}
        new_results = {k: v for k, v in new_results.items() if k in old_results}
    same, added = 0, set()
    for key, metrics in old_results.items():
        if key not in new_results:
            problems.append(f"results.json: {key} missing in {new}")
            continue
        for name, value in metrics.items():
            if new_results[key].get(name) != value:
                problems.append(f"results.json: {key} {name}: {value} vs "
                                f"{new_results[key].get(name)}")
            else:
                same += 1
        added |= set(new_results[key]) - set(metrics)
    for key in new_results.keys() - old_results.keys():
        problems.append(f"results.json: {key} only in {new}")

    # A recorded run may keep results.json alone: what OLD lacks is said, not compared.
    lacking = [part for part in ("checkpoints", "metrics.jsonl") if not (old / part).exists()]
    files = sorted(p.relative_to(old) for p in (old / "checkpoints").rglob("*.safetensors"))
    if partial:
        files = [f for f in files if (new / f).exists()]
    for f in files:
        if not (new / f).exists() or (old / f).read_bytes() != (new / f).read_bytes():
            problems.append(f"{f} differs")
    if "metrics.jsonl" in lacking:
        old_log = []
    elif partial:
        old_records, new_records = training_records(old), training_records(new)
        old_log = [k for k in old_records if k in new_records]
        for k in old_log:
            if old_records[k] != new_records[k]:
                problems.append(f"metrics.jsonl: {k} differs (timings removed)")
    else:
        old_log = metrics_log(old)
        if old_log != metrics_log(new):
            problems.append("metrics.jsonl differs (timings removed)")

    print(f"results.json: {len(old_results)} records, {same} metric values identical"
          + (f"; metrics only in the new run: {', '.join(sorted(added))}" if added else ""))
    print(f"checkpoints: {len(files)} .safetensors files compared byte for byte")
    print(f"metrics.jsonl: {len(old_log)} records compared without timings")
    if lacking:
        print(f"not compared, {old} has none: {', '.join(lacking)}")
    for p in problems:
        print("DIFFERENT: " + p)
    print("identical" if not problems else f"{len(problems)} differences")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
