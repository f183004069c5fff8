#!/usr/bin/env bash
# Breaks the PPO and SFT updates on purpose, one way at a time, rebuilds, runs the [ppo] and
# [sft] tests and prints which tests caught each break; then restores the sources and rebuilds.
# A break that no test catches is reported as "NOT CAUGHT" and the script exits 1.
#
#   scripts/mutation_check.sh            (after scripts/setup.sh; about 10 minutes on 2 cores)
#
# The breaks: the learner reads the state one position late (shift), the PPO loss counts the
# padding after each answer (mask), the clipped policy loss climbs instead of descending (sign),
# and SFT ascends its loss (sft_sign). docs/ppo.md lists what caught each on the record.
set -uo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${CITEFORGE_BUILD_DIR:-$repo/build}"
work="$(mktemp -d)"
status=0

break_and_test() {
  local name="$1" file="$repo/$2" from="$3" to="$4"
  cp "$file" "$work/original"
  python3 - "$file" "$from" "$to" <<'PY' || { echo "$name: pattern not found in $file"; exit 2; }
import sys
path, old, new = sys.argv[1:]
text = open(path).read()
if old not in text:
    sys.exit(1)
open(path, "w").write(text.replace(old, new))
PY
  if ! (cd "$build" && ninja citeforge citeforge_tests >"$work/$name.build" 2>&1); then
    cp "$work/original" "$file"
    echo "$name: build failed (see $work/$name.build)"
    exit 2
  fi
  (cd "$build" && ./citeforge_tests "[ppo],[sft]" >"$work/$name.out" 2>&1)
  cp "$work/original" "$file"
  # Catch2 prints each failing test case's name between two lines of dashes.
  local caught
  caught="$(awk '
    /^-+$/ { if (open && name != "") print "  caught by: " name; open = !open; name = ""; next }
    open { sub(/^ +/, ""); name = name (name == "" ? "" : " ") $0 }' "$work/$name.out" |
    grep -v "caught by: /" | sort -u)"
  if [ -z "$caught" ]; then
    echo "$name: NOT CAUGHT"
    status=1
  else
    echo "$name:"
    echo "$caught"
  fi
}

break_and_test shift trainer/ppo/ppo_learner.cpp \
  'auto states = hidden.narrow(1, P - 1, R);' 'auto states = hidden.narrow(1, P, R);'
break_and_test mask trainer/ppo/ppo_learner.cpp \
  'auto m = mask.index_select(0, rows);' 'auto m = torch::ones_like(mask.index_select(0, rows));'
break_and_test sign trainer/ppo/ppo_math.cpp \
  'auto unclipped = -adv * ratio;
  auto clipped = -adv * torch::clamp(' 'auto unclipped = adv * ratio;
  auto clipped = adv * torch::clamp('
break_and_test sft_sign trainer/sft/lm_trainer.cpp 'loss.backward();' '(-loss).backward();'

(cd "$build" && ninja citeforge citeforge_tests >"$work/restore.build" 2>&1) || status=2
exit $status
