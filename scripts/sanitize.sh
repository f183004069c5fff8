#!/usr/bin/env bash
# Builds citeforge and its tests with AddressSanitizer + UndefinedBehaviorSanitizer (CMake's
# CITEFORGE_SANITIZE) into their own folder and runs a part of the suite under them. The
# prebuilt LibTorch is not instrumented; what the sanitizers report from inside it is listed,
# one justified entry each, in scripts/sanitize.supp.
#
#   scripts/sanitize.sh                  the default part: recipe, SFT, PPO, evaluation, models
#   scripts/sanitize.sh "[nf4],[lora]"   any Catch2 test spec instead
#   SANITIZE_BUILD_DIR=DIR               the build folder (default build-sanitize/)
#   SANITIZE_JOBS=N                      test processes at once (default: the cores)
#
# Too slow for CI (an instrumented rebuild takes about an hour on 2 cores, the default part's
# 203 tests about 50 minutes): a command to run after changes to memory-handling code, before
# work on a GPU machine, and whenever a crash is not understood. It ends with one line saying how
# many tests ran and whether any sanitizer spoke.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
spec="${1:-[trainer],[models],[eval],[ppo],[sft]}"
build="${SANITIZE_BUILD_DIR:-$repo/build-sanitize}"
jobs="${SANITIZE_JOBS:-$(nproc)}"
logs="$build/sanitize-logs"

# The same dependencies as the ordinary build (and its LibTorch), without building it.
CITEFORGE_SETUP_ONLY_DEPS=1 "$repo/scripts/setup.sh"
source "$repo/scripts/deps.env"
torch_prefix="$(ls -d "${CITEFORGE_CACHE:-$HOME/.cache/citeforge}"/torch-"$TORCH_VERSION"-py*/lib/python*/site-packages/torch/share/cmake | head -n 1)"
if [ ! -f "$build/CMakeCache.txt" ]; then
  # -O1 -g1: line numbers in the reports at a fraction of full debug information's build time.
  cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1" \
    -DCMAKE_PREFIX_PATH="$torch_prefix" -DCITEFORGE_SANITIZE=ON
fi
cmake --build "$build" -j "$(nproc)" --target citeforge citeforge_tests

# halt_on_error: a report fails its test instead of scrolling past. LibTorch's own allocations
# go through ASan's allocator too, so its leaks at exit would be reported as ours: the
# suppressions name them by library. detect_odr_violation=0: LibTorch and the Debian
# libraries it shares symbols with (protobuf, gloo headers) are not ours to fix.
supp="$repo/scripts/sanitize.supp"
# allocator_may_return_null: an allocation too large for the machine fails as LibTorch's own
# allocator would fail it, instead of stopping the run in ASan's allocator.
export ASAN_OPTIONS="halt_on_error=1:detect_odr_violation=0:detect_stack_use_after_return=1:strict_init_order=1:allocator_may_return_null=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:suppressions=$supp"
export LSAN_OPTIONS="suppressions=$supp:print_suppressions=0"

rm -rf "$logs" && mkdir -p "$logs"
cd "$repo"
# (Catch2 exits with the number of tests it listed, hence the `|| true`.)
{ "$build/citeforge_tests" --list-test-names-only "$spec" || true; } | sed '/^$/d' >"$logs/all.txt"
total="$(wc -l <"$logs/all.txt")"
[ "$total" -gt 0 ] || { echo "[sanitize] no test matches $spec" >&2; exit 2; }
echo "[sanitize] $total tests in $jobs processes; logs in $logs"
# Shards of whole test cases, dealt round-robin so the slow end-to-end tests spread out.
# A name in a list is a test spec: its commas and brackets are escaped, as CTest does.
sed -e 's/[],[]/\\&/g' "$logs/all.txt" |
  awk -v n="$jobs" -v dir="$logs" '{ print > (dir "/shard-" (NR % n) ".txt") }'
pids=()
for list in "$logs"/shard-*.txt; do
  name="$(basename "$list" .txt)"
  "$build/citeforge_tests" -f "$list" -r compact >"$logs/$name.log" 2>&1 &
  pids+=("$!")
done
failed=0
for pid in "${pids[@]}"; do wait "$pid" || failed=$((failed + 1)); done

reports="$(grep -l -E "ERROR: (Address|Leak)Sanitizer|runtime error:" "$logs"/shard-*.log || true)"
for log in "$logs"/shard-*.log; do
  if grep -q -E "ERROR: (Address|Leak)Sanitizer|runtime error:|^.*FAILED" "$log"; then
    echo "---- $log"
    grep -E -A 30 "ERROR: (Address|Leak)Sanitizer|runtime error:|FAILED" "$log" | head -n 80
  fi
done
summary="$(grep -h -E "^(Passed|Failed) .*test cases?" "$logs"/shard-*.log | tr '\n' ' ')"
if [ "$failed" -eq 0 ] && [ -z "$reports" ]; then
  echo "[sanitize] clean: $total tests ran under ASan + UBSan ($spec): $summary"
else
  echo "[sanitize] FAILED: $total tests ran ($spec), $failed shard(s) failed, sanitizer reports in: ${reports:-none}: $summary"
  exit 1
fi
