#!/usr/bin/env bash
# Times the embedded demo stage by stage, for experiments/bench/results/demo_stage_times*.md:
# runs `citeforge run configs/demo.yaml` from CHECKOUT (its binary in CHECKOUT/build, its config
# and data) into OUT/run, and stamps every line the run prints with the seconds since it started.
# OUT/stages.log keeps the lines that mark where the time went (each "done in" line, the run's
# own [run] and [eval] lines, the tables), OUT/seconds.txt the whole run's wall time. Progress
# lines are dropped: they are most of the output and say nothing the "done in" lines do not.
#
#   experiments/bench/demo_stage_times.sh CHECKOUT OUT [--set KEY=VALUE ...]
#                                               (on an otherwise idle machine; the --set
#                                               options go to the run as they are)
#
# Two checkouts of two commits on the same machine, one after the other, give a before/after.
set -euo pipefail
checkout="$(cd "${1:?usage: demo_stage_times.sh CHECKOUT OUT}" && pwd)"
out="${2:?usage: demo_stage_times.sh CHECKOUT OUT}"
shift 2
[ -x "$checkout/build/citeforge" ] || { echo "no $checkout/build/citeforge: build it first" >&2; exit 1; }
[ ! -e "$out/run" ] || { echo "$out/run exists: a new run needs a new folder" >&2; exit 1; }
mkdir -p "$out"
out="$(cd "$out" && pwd)"
# Bash's own clock in microseconds, so that stamping starts no process beside the run timed.
started=${EPOCHREALTIME/./}
cd "$checkout"
set +e
build/citeforge run configs/demo.yaml --out "$out/run" "$@" 2>&1 |
  while IFS= read -r line; do
    us=$((${EPOCHREALTIME/./} - started))
    printf '%6d.%d %s\n' $((us / 1000000)) $((us / 100000 % 10)) "$line"
  done >"$out/output.log"
status=${PIPESTATUS[0]}
set -e
us=$((${EPOCHREALTIME/./} - started))
printf '%d.%d\n' $((us / 1000000)) $((us / 100000 % 10)) >"$out/seconds.txt"
grep -v -E '\] \[[#.]{20}\] ' "$out/output.log" >"$out/stages.log" || true
echo "demo_stage_times: exit $status after $(cat "$out/seconds.txt") s; $out/stages.log" >&2
exit "$status"
