#!/usr/bin/env bash
# Copies the small result files of a seed sweep (`citeforge run ... --seeds`) into
# experiments/demo/ for the record: seeds.md and seeds.json, and per run its resolved config,
# results.json, selection.json, tables, metrics.jsonl (the training log: losses, PPO's rewards
# and KL) and builds.jsonl (the binary each sitting of the run used). The evaluation archives and
# checkpoints stay in the run directories.
#
#   experiments/demo/collect.sh runs/demo_seeds
set -euo pipefail
cd "$(dirname "$0")/../.."
sweep=${1:?usage: collect.sh SWEEP_DIR}
dest=experiments/demo
cp "$sweep/seeds.md" "$sweep/seeds.json" "$dest/"
for run in "$sweep"/world*/seed* "$sweep"/seed*; do
  [ -f "$run/selection.json" ] || continue
  to="$dest/runs/${run#"$sweep"/}"
  mkdir -p "$to/tables"
  cp "$run/config.resolved.yaml" "$run/results.json" "$run/selection.json" "$run/metrics.jsonl" \
    "$to/"
  [ ! -f "$run/builds.jsonl" ] || cp "$run/builds.jsonl" "$to/"
  cp "$run"/tables/*.md "$to/tables/"
done
