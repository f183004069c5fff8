#!/usr/bin/env bash
# The whole GPU build and check in one call, on a CUDA machine with PyTorch installed and no
# network: builds citeforge with CITEFORGE_CUDA=ON against that PyTorch's LibTorch and the
# Debian packages unpacked by scripts/gpu_deps.sh (.gpu-deps/), then
#   1. runs the CUDA tests (the fused NF4 dequantisation kernel against the reference path)
#      and the model tests,
#   2. decodes stories260K on the GPU in bf16 (citeforge generate --device cuda),
#   3. runs the reduced demo pipeline on the GPU with an NF4 base (SFT + PPO + tables),
#   4. runs the reduced demo's PPO over NCCL on one GPU (citeforge launch --nproc 1).
# Logs go to ${OUT:-/tmp/citeforge-gpu}.
#
#   scripts/gpu_check.sh
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
logs="${OUT:-/tmp/citeforge-gpu}"
deps="$repo/.gpu-deps/root"
mkdir -p "$logs"
[ -d "$deps/usr" ] || { echo "run scripts/gpu_deps.sh first (no $deps)" >&2; exit 1; }
torch_prefix="$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')"
export LD_LIBRARY_PATH="$deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
export PKG_CONFIG_PATH="$deps/usr/lib/x86_64-linux-gnu/pkgconfig:$deps/usr/share/pkgconfig"
export CPATH="$deps/usr/include:$deps/usr/include/hdf5/serial"
cmake -S "$repo" -B "$repo/build-gpu" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCITEFORGE_CUDA=ON \
  -DCMAKE_PREFIX_PATH="$torch_prefix;$deps/usr;$deps/usr/lib/x86_64-linux-gnu/cmake" \
  -DHDF5_C_INCLUDE_DIRS="$deps/usr/include/hdf5/serial" \
  -DHDF5_C_LIBRARIES="$deps/usr/lib/x86_64-linux-gnu/hdf5/serial/libhdf5.so" 2>&1 | tee "$logs/configure.log"
cmake --build "$repo/build-gpu" -j "$(nproc)" 2>&1 | tail -n 30 | tee "$logs/build.log"
cd "$repo/build-gpu"
./citeforge_tests "[cuda],[nf4],[llama],[lora]" 2>&1 | tee "$logs/tests.log"
./citeforge generate --model "$repo/tests/fixtures/models/stories260K" --device cuda --greedy \
  --prompt "Once upon a time" --max-new-tokens 64 2>&1 | tee "$logs/generate.log"
cd "$repo"
rm -rf /tmp/citeforge-gpu-run
build-gpu/citeforge run tests/fixtures/configs/tiny.yaml --out /tmp/citeforge-gpu-run \
  --set device=cuda --set model.dtype=bfloat16 --set model.quantization=nf4 \
  --set 'settings=[sft, ppo, sft+ppo]' 2>&1 | tee "$logs/run.log"
rm -rf /tmp/citeforge-gpu-nccl
build-gpu/citeforge launch --nproc 1 -- run tests/fixtures/configs/tiny.yaml \
  --out /tmp/citeforge-gpu-nccl --set device=cuda --set distributed.backend=nccl \
  --set 'settings=[ppo]' 2>&1 | tee "$logs/nccl.log"
echo "[gpu-check] done; logs in $logs"
