#!/usr/bin/env bash
# Builds the libFuzzer targets in tests/fuzz/ with clang++ (CMake's CITEFORGE_FUZZ: ASan + UBSan,
# the dependency-free parsers only, no LibTorch) into build-fuzz/, seeds them from the real
# SynSciQA files, and runs each for a bounded time. Exits non-zero when a target crashes or
# breaks an invariant.
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET]     (default 60; FUZZ_OUT, FUZZ_BUILD_DIR to override)
set -euo pipefail

cd "$(dirname "$0")/.."
seconds="${1:-60}"
out="${FUZZ_OUT:-/tmp/citeforge-fuzz}"
build="${FUZZ_BUILD_DIR:-build-fuzz}"
cxx="$(command -v clang++-14 || command -v clang++)"
cc="$(command -v clang-14 || command -v clang)"
targets=(fuzz_citations fuzz_synsciqa_instruction)

mkdir -p "$out"
echo "== building ${targets[*]} into $build"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCITEFORGE_FUZZ=ON \
  -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_C_COMPILER="$cc" >"$out/configure.log"
cmake --build "$build" --target "${targets[@]}"
# Undefined behaviour stops the fuzzer like a crash does.
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"

# Seeds: a few real instructions and teacher answers, so the fuzzer starts from valid shapes.
seeds="$out/seeds"
mkdir -p "$seeds/citations" "$seeds/instruction"
printf '\x01Smith et al., 2019, p. 54\nJones, 2020, p.3\nNational Aeronautics and Space Administration, 2010, p. 7\x00A (Smith et al., 2019). According to Jones (2020, p. 3), b. C (NASA, 2010, p. 7; Nobody, 2001).' \
  > "$seeds/citations/named"
printf '\x00a\nb\nc\x00A [1]. B [2, 3]. C [1-3][7]. D [2-1].' > "$seeds/citations/numeric"
if [ -f datasets/synsciqa/SynSciQA++.json ]; then
  python3 - datasets/synsciqa "$seeds" <<'PY' || true
import json, sys
src, seeds = sys.argv[1], sys.argv[2]
items = json.load(open(f"{src}/SynSciQA++.json"))
for i, item in enumerate(items[:20]):
    open(f"{seeds}/instruction/{i}", "w").write(item["instruction"])
    names = [line.split(": ", 1)[0] for line in
             item["instruction"].split("[BEGIN OF SOURCES]")[1].split("[END OF SOURCES]")[0].splitlines()
             if ": " in line]
    open(f"{seeds}/citations/{i}", "wb").write(b"\x01" + "\n".join(names).encode() + b"\x00" +
                                               item["response"].encode())
PY
fi

status=0
for target in "${targets[@]}"; do
  corpus="$out/corpus-$target"
  mkdir -p "$corpus"
  seed_dir="$seeds/citations"
  [ "$target" = fuzz_synsciqa_instruction ] && seed_dir="$seeds/instruction"
  echo "== running $target for ${seconds}s"
  if ! "$build/$target" -max_total_time="$seconds" -max_len=8192 -timeout=10 -rss_limit_mb=2048 \
       -artifact_prefix="$out/$target-" -print_final_stats=1 "$corpus" "$seed_dir" \
       > "$out/$target.log" 2>&1; then
    echo "!! $target failed; see $out/$target.log and $out/$target-*"
    tail -n 40 "$out/$target.log"
    status=1
  else
    grep -E "stat::number_of_executed_units|Done" "$out/$target.log" | tail -n 2 || true
  fi
done
exit $status
