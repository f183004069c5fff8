#!/usr/bin/env bash
# Distributed training on every GPU of one node, started by torchrun (which sets RANK,
# WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT for each rank). NCCL between the GPUs.
#
#   scripts/torchrun_distributed.sh [CONFIG] [RUN_DIR]
#
# CONFIG defaults to configs/distributed_gpu.yaml. Needs a CUDA build (CITEFORGE_CUDA=ON
# scripts/setup.sh) and torchrun (pip install torch). NPROC_PER_NODE overrides the GPU count.
# Without torchrun: build/citeforge launch --nproc N -- run CONFIG --out RUN_DIR
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
config="${1:-$repo/configs/distributed_gpu.yaml}"
out="${2:-$repo/runs/$(basename "$config" .yaml)}"
gpus="${NPROC_PER_NODE:-$(nvidia-smi --list-gpus | wc -l)}"
cd "$repo"  # configs name their templates relative to the repository
exec torchrun --standalone --nnodes 1 --nproc-per-node "$gpus" --no-python \
  "$repo/build/citeforge" run "$config" --out "$out"
