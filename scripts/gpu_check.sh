#!/usr/bin/env bash
# The GPU build and check, in two calls that fit a GPU machine's short session (no network
# there; the Debian packages come unpacked by scripts/gpu_deps.sh in .gpu-deps/, PyTorch and
# the CUDA toolkit are the machine's own):
#
#   scripts/gpu_check.sh --build-only   configure + build citeforge and its tests with
#                                       CITEFORGE_CUDA=ON into $GPU_BUILD_DIR (default
#                                       /root/citeforge-build-gpu, which survives between calls
#                                       while the machine is held); about 3 minutes with 16 jobs;
#                                       GPU_BUILD_TARGETS="bench_side_by_side" builds only that
#   scripts/gpu_check.sh                the checks (building first only when nothing is built):
#     std-bindings      the binary's std:: calls bind to libstdc++, not LibTorch's private copies
#     cuda-tests        the [cuda] unit tests: NF4 kernel vs the reference, GPU checkpointing
#     generate          stories260K decoded on the GPU in bf16
#     train-eval-train  a run that trains again after evaluations: 2 SFT epochs, PPO evaluated
#                       between iterations, SFT+PPO; NF4 base, bf16
#     nccl-ppo          the same PPO over NCCL through `citeforge launch --nproc 1`
#     kill-resume       a GPU SFT run killed mid-epoch and resumed equals the uninterrupted one
#                       (the [cuda][resume] test: CUDA generator state in checkpoints)
#
# Logs go to ${OUT:-/tmp/citeforge-gpu}/<check>.log; the last lines say PASS or FAIL per check.
set -uo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
logs="${OUT:-/tmp/citeforge-gpu}"
build="${GPU_BUILD_DIR:-/root/citeforge-build-gpu}"
mkdir -p "$logs"
[ -d "$repo/.gpu-deps/root/usr" ] || { echo "run scripts/gpu_deps.sh first (no .gpu-deps/root)" >&2; exit 1; }
export PATH="/usr/local/cuda/bin:$PATH"

build_citeforge() {
  local started=$SECONDS sp extra=()
  TORCH_PREFIX="$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')" || return 1
  export TORCH_PREFIX
  # shellcheck source=scripts/gpu_env.sh
  source "$repo/scripts/gpu_env.sh"
  sp="$(python3 -c 'import site; print(site.getsitepackages()[0])')"
  export NCCL_INCLUDE_DIR="$sp/nvidia/nccl/include"
  [ -d "$sp/nvidia/cudnn/include" ] && extra+=(-DCUDNN_INCLUDE_PATH="$sp/nvidia/cudnn/include"
    -DCUDNN_LIBRARY_PATH="$(ls "$sp"/nvidia/cudnn/lib/libcudnn.so* | head -n 1)")
  {
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
    python3 -c 'import torch; print("torch", torch.__version__, "CUDA", torch.version.cuda)'
    nvcc --version | tail -n 1
  } >"$logs/machine.log" 2>&1
  if ! cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCITEFORGE_CUDA=ON \
      -DCMAKE_CUDA_COMPILER="$(command -v nvcc)" "${GPU_DEPS_CMAKE_ARGS[@]}" "${extra[@]}" \
      >"$logs/configure.log" 2>&1; then
    tail -n 30 "$logs/configure.log"; echo "[gpu-check] build: FAIL (configure)"; return 1
  fi
  # shellcheck disable=SC2086  # GPU_BUILD_TARGETS is a list (default: all three)
  if ! cmake --build "$build" -j "$(nproc)" --target ${GPU_BUILD_TARGETS:-citeforge citeforge_tests bench_side_by_side} \
      >"$logs/build.log" 2>&1; then
    grep -E "error|FAILED" "$logs/build.log" | head -n 30; echo "[gpu-check] build: FAIL"; return 1
  fi
  echo "[gpu-check] build: PASS in $((SECONDS - started)) s ($build)"
}

if [ "${1:-}" = "--build-only" ]; then
  build_citeforge
  exit $?
fi
if [ ! -x "$build/citeforge" ] || [ ! -x "$build/citeforge_tests" ]; then
  build_citeforge || exit 1
else
  # shellcheck source=scripts/gpu_env.sh
  source "$repo/scripts/gpu_env.sh"
fi

results=()
# check NAME SECONDS COMMAND...: runs one check under a time limit, its output in NAME.log.
check() {
  local name="$1" limit="$2" started=$SECONDS status
  shift 2
  echo "[gpu-check] $name ..."
  (cd "$repo" && timeout "$limit" "$@") >"$logs/$name.log" 2>&1
  status=$?
  tail -n 5 "$logs/$name.log"
  if [ $status -eq 0 ]; then
    results+=("[gpu-check] $name: PASS in $((SECONDS - started)) s")
  else
    results+=("[gpu-check] $name: FAIL (exit $status after $((SECONDS - started)) s; $logs/$name.log)")
    # Killed by a signal (128 + n; 124 and 137 are the time limit): the same command again
    # under the debugger, whose backtrace and raw stack (a jump to address 0 leaves gdb no frame
    # to unwind, but the stack still holds the caller's return address) go to NAME.gdb.log.
    local debugger
    debugger="$(command -v gdb || command -v cuda-gdb)"
    if [ $status -gt 128 ] && [ $status -ne 137 ] && [ -n "$debugger" ]; then
      (cd "$repo" && timeout "$limit" "$debugger" -q -batch -ex 'set pagination off' -ex run \
        -ex 'p $_siginfo._sifields._sigfault.si_addr' -ex bt -ex 'x/64a $sp' \
        -ex 'info registers' -ex 'thread apply all bt 12' --args "$@") >"$logs/$name.gdb.log" 2>&1
      grep -A 12 "received signal" "$logs/$name.gdb.log" | head -n 30
    fi
  fi
}
runs="$(mktemp -d)"
tiny=tests/fixtures/configs/tiny.yaml
check std-bindings 30 scripts/check_std_bindings.sh "$build/citeforge"
check cuda-tests 90 "$build/citeforge_tests" "[cuda]~[pipeline]"
check generate 30 "$build/citeforge" generate --model tests/fixtures/models/stories260K \
  --device cuda --greedy --prompt "Once upon a time" --max-new-tokens 64
check train-eval-train 90 "$build/citeforge" run "$tiny" --out "$runs/nf4" --set device=cuda \
  --set model.dtype=bfloat16 --set model.quantization=nf4 --set 'settings=[sft, ppo, sft+ppo]'
check nccl-ppo 60 "$build/citeforge" launch --nproc 1 -- run "$tiny" --out "$runs/nccl" \
  --set device=cuda --set distributed.backend=nccl --set 'settings=[ppo]'
check kill-resume 90 "$build/citeforge_tests" "[cuda][resume]"
rm -rf "$runs"
printf '%s\n' "${results[@]}" | tee "$logs/summary.log"
! grep -q FAIL "$logs/summary.log"
