#!/usr/bin/env bash
# citeforge next to the machine's own transformers + peft on random weights of a given shape:
# the same checkpoint, token ids, dtype and shapes on both sides. Rows: one SFT step with LoRA
# r 64 on all seven projections (tokens/s, peak memory, MFU on an H100/H200), prefill (tokens/s)
# and sampled decode (new tokens/s) at batch 1 and 64, and one PPO iteration against the same
# steps written in PyTorch + peft. citeforge's base is NF4 (QLoRA); the Python side has no
# bitsandbytes, so its base is dense bf16 with bf16 adapters. Writes the table with the machine,
# the versions and this command.
#
#   experiments/bench/side_by_side_gpu.sh [--device cuda|cpu] [--shape small|1b|7b[,...]]
#       [--reps 3] [--dtype bfloat16|float32] [--threads N] [--budget 330]
#       [--out experiments/bench/results/side_by_side_gpu.md] [--profile] [--keep DIR]
#
# --profile adds, per shape, one more citeforge run of every part (one repetition) that writes
# where each part's time goes by operator (profile_citeforge.json, on a GPU with every launch
# waiting for its kernel); --keep copies each step's JSON and log there (the table only quotes
# them).
#
# On a GPU machine the benchmark is one call of at most 6 minutes; the build (citeforge, its
# tests and bench_side_by_side) comes before it, in a call of its own:
#
#   scripts/gpu_check.sh --build-only
#   experiments/bench/side_by_side_gpu.sh --device cuda --shape 1b,7b
#
# --budget caps the whole run (default 330 s, inside the 6 minutes with room to start): each
# step runs under `timeout` with what is left, and a step that fails or runs out leaves its rows
# "-" and says so in the table's notes. Per shape: the Python side draws the weights (seeded, on
# the device) into a temporary checkpoint and the token ids into a batch file, citeforge runs,
# then the Python side, and the checkpoint is deleted (a 7B one is 13.5 GB). On a GPU each side
# runs all its parts in one process on one loaded model, the peak memory of each part from the
# CUDA caching allocator; on the CPU each part runs in a process of its own, for its peak RSS.
#
# Shapes (hidden, layers, query / KV heads, MLP, vocab; prompt tokens, new tokens):
#   small  64,   2,  4/2, 128,   256;   32, 16   (a check that everything runs, on the CPU)
#   1b     2048, 16, 16/8, 5632,  1024; 512, 32
#   7b     4096, 32, 32/8, 14336, 32000; 512, 32
# The workload (side_by_side_python.py's SHAPES and RANDOM_WORKLOAD): SFT on 8 sequences of the
# prompt length, loss on their last 128 tokens (8 for small); generation at batch 1 and 64,
# temperature 0.7; PPO on 8 prompts, minibatch 4, one epoch.
#
# A check on the CPU, end to end in a few minutes:
#   experiments/bench/side_by_side_gpu.sh --device cpu --shape small --reps 1 --out /tmp/sbs.md
#
# Environment: CITEFORGE_BUILD_DIR (default build/, and with --device cuda $GPU_BUILD_DIR or
# /root/citeforge-build-gpu), CITEFORGE_BENCH_PYTHON (default the venv of
# requirements-side-by-side.txt, and with --device cuda python3: the machine's own torch,
# transformers and peft).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo"
command="experiments/bench/side_by_side_gpu.sh $*"
die() { echo "side_by_side_gpu.sh: $*" >&2; exit 2; }
usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; }

device=cuda shape_list=1b,7b reps=3 dtype=bfloat16 threads="" budget=330 profile=0 keep=""
out=experiments/bench/results/side_by_side_gpu.md
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --profile) profile=1; shift ;;
    --device|--shape|--reps|--dtype|--threads|--budget|--out|--keep)
      [ $# -ge 2 ] || die "$1 needs a value"
      case "$1" in
        --keep) keep="$2" ;;
        --device) device="$2" ;;
        --shape) shape_list="$2" ;;
        --reps) reps="$2" ;;
        --dtype) dtype="$2" ;;
        --threads) threads="$2" ;;
        --budget) budget="$2" ;;
        --out) out="$2" ;;
      esac
      shift 2 ;;
    *) die "unknown option $1 (see --help)" ;;
  esac
done
case "$device" in cpu|cuda) ;; *) die "--device: expected cpu or cuda, got '$device'" ;; esac
case "$dtype" in bfloat16|float32) ;; *) die "--dtype: expected bfloat16 or float32, got '$dtype'" ;; esac
for n in "$reps" "$budget" ${threads:+"$threads"}; do
  [[ "$n" =~ ^[1-9][0-9]*$ ]] || die "--reps, --threads and --budget take a positive whole number, got '$n'"
done
IFS=, read -r -a shapes <<<"$shape_list"
[ ${#shapes[@]} -gt 0 ] || die "--shape: name at least one of small, 1b, 7b"
for s in "${shapes[@]}"; do
  case "$s" in small|1b|7b) ;; *) die "--shape: expected small, 1b or 7b, got '$s'" ;; esac
done
if [ "$device" = cuda ]; then
  build="${CITEFORGE_BUILD_DIR:-${GPU_BUILD_DIR:-/root/citeforge-build-gpu}}"
  python="${CITEFORGE_BENCH_PYTHON:-python3}"
  threads="${threads:-$(nproc)}"
else
  build="${CITEFORGE_BUILD_DIR:-$repo/build}"
  python="${CITEFORGE_BENCH_PYTHON:-${CITEFORGE_CACHE:-$HOME/.cache/citeforge}/bench-venv/bin/python}"
  threads="${threads:-2}"
fi
bench="$build/bench_side_by_side"
[ -x "$bench" ] || die "no $bench: build it first (cmake --build $build --target bench_side_by_side)"
command -v "$python" >/dev/null || die "no Python at $python (set CITEFORGE_BENCH_PYTHON)"
"$python" -c 'import torch, transformers, peft, safetensors' 2>/dev/null ||
  die "$python lacks torch, transformers, peft or safetensors (see requirements-side-by-side.txt)"

# citeforge's binaries on a GPU machine find their Debian libraries through scripts/gpu_env.sh;
# only their processes get that environment, not the Python side's.
citeforge_env=()
if [ -d "$repo/.gpu-deps/root/usr" ]; then
  # shellcheck disable=SC2016  # the inner shell expands them
  citeforge_env=(bash -c 'env_file="$1"; shift; source "$env_file" ""; exec "$@"' _
    "$repo/scripts/gpu_env.sh")
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"/*/model' EXIT
echo "side_by_side_gpu: results of each step in $work" >&2
printf '%s\n' "${shapes[@]}" >"$work/shapes.txt"
started=$SECONDS

# step NAME OUT LOG COMMAND...: runs one step under what is left of the budget, its stdout in
# OUT; a step that fails or runs out leaves a note for the table and the run goes on.
step() {
  local name="$1" out="$2" log="$3" left status=0
  shift 3
  left=$((budget - (SECONDS - started)))
  if [ "$left" -lt 10 ]; then
    echo "$name: not run, the ${budget} s budget was spent" >>"$work/notes.txt"
    return 1
  fi
  echo "side_by_side_gpu: $name (${left} s of the budget left)" >&2
  timeout -k 5 "$left" "$@" >"$out" 2>"$log" || status=$?
  [ $status -eq 0 ] && return 0
  rm -f "$out"
  if [ $status -eq 124 ] || [ $status -eq 137 ]; then
    echo "$name: stopped at the ${budget} s budget" >>"$work/notes.txt"
  else
    echo "$name: failed (exit $status: $(grep -v '^[[:space:]]*$' "$log" | tail -n 1))" \
      >>"$work/notes.txt"
  fi
  tail -n 5 "$log" >&2
  return 1
}

# A GPU runs every part in one process (one load of the model); the CPU one part per process.
if [ "$device" = cuda ]; then part_runs=("sft,generate,ppo"); else part_runs=(sft generate ppo); fi
for shape in "${shapes[@]}"; do
  dir="$work/$shape"
  mkdir -p "$dir"
  step "$shape: random weights" "$dir/write.out" "$dir/write.log" "$python" \
    experiments/bench/side_by_side_python.py --write-random-model "$dir" --shape "$shape" \
    --device "$device" || continue
  for parts in "${part_runs[@]}"; do
    name="${parts//,/_}"
    step "$shape: citeforge $parts" "$dir/citeforge_$name.json" "$dir/citeforge_$name.log" \
      ${citeforge_env[@]+"${citeforge_env[@]}"} "$bench" --model-dir "$dir/model" \
      --batch-file "$dir/batch.json" --device "$device" --dtype "$dtype" --threads "$threads" \
      --reps "$reps" --part "$parts" || true
  done
  if [ "$profile" = 1 ]; then
    step "$shape: citeforge profile" "$dir/profile_citeforge_run.json" "$dir/profile_citeforge.log" \
      env CUDA_LAUNCH_BLOCKING=1 ${citeforge_env[@]+"${citeforge_env[@]}"} "$bench" \
      --model-dir "$dir/model" --batch-file "$dir/batch.json" --device "$device" --dtype "$dtype" \
      --threads "$threads" --reps 1 --part sft,generate,ppo --profile "$dir/profile_citeforge.json" ||
      true
  fi
  for parts in "${part_runs[@]}"; do
    name="${parts//,/_}"
    step "$shape: transformers + peft $parts" "$dir/python_$name.json" "$dir/python_$name.log" \
      "$python" experiments/bench/side_by_side_python.py --model-dir "$dir/model" \
      --batch-file "$dir/batch.json" --device "$device" --dtype "$dtype" --lora-dtype base \
      --threads "$threads" --reps "$reps" --part "$parts" || true
  done
  rm -rf "$dir/model"
done

# The machine and citeforge's version, for the table's header.
{
  printf '%s, %s logical CPUs' "$(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')" "$(nproc)"
  if [ "$device" = cuda ] && command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader |
      awk -F', ' 'NR == 1 { printf "; GPU %s (%s, driver %s)", $1, $2, $3 }'
  fi
  printf '; load average at the end %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
} >"$work/machine.txt"
version="$(${citeforge_env[@]+"${citeforge_env[@]}"} "$build/citeforge" --version 2>/dev/null ||
  echo "citeforge commit $(git describe --always --dirty 2>/dev/null || echo unknown)")"
echo "$version" >"$work/citeforge_version.txt"

mkdir -p "$(dirname "$out")"
python3 experiments/bench/side_by_side_gpu_table.py "$work" "$command" >"$out"
if [ -n "$keep" ]; then  # every step's output but the checkpoints (deleted above)
  mkdir -p "$keep"
  (cd "$work" && find . -type f \( -name '*.json' -o -name '*.log' -o -name '*.txt' \) \
    -exec cp --parents {} "$keep" \;)
fi
echo "side_by_side_gpu: $out in $((SECONDS - started)) s" >&2
cat "$out"
