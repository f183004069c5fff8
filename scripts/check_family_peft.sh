#!/usr/bin/env bash
# Checks, with Python peft and transformers, the adapters citeforge trains on the newer model
# families: runs the tiny QLoRA SFT + PPO test of each family ([families][pipeline]: Llama 3 with
# llama3 RoPE, Qwen2.5 with q/k/v biases, Qwen3 with q/k norms) in a fresh temporary folder, then
# scripts/check_peft_export.py on each run's PPO checkpoint: citeforge's logits with the adapter,
# peft's with the exported adapter, and transformers' with the merged export must agree within
# 1e-4. Exits non-zero when any does not.
#
#   scripts/reference_venv.sh && scripts/check_family_peft.sh
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
python="${CITEFORGE_CACHE:-$HOME/.cache/citeforge}/pyref-venv/bin/python"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
TMPDIR="$work" "$repo/build/citeforge_tests" "[families][pipeline]" >"$work/test.log" 2>&1 ||
  { tail -n 30 "$work/test.log"; echo "[family-peft] the family runs failed"; exit 1; }
for family in llama3_rope qwen2 qwen3; do
  run="$(ls -d "$work"/citeforge-test-family_run_"$family"-*)"
  echo "[family-peft] $family"
  "$python" "$repo/scripts/check_peft_export.py" "$run/run/checkpoints/sft+ppo-1" "$run/model" 2>&1 |
    grep -E "adapter moves|vs peft|error|Error" || { echo "[family-peft] $family failed"; exit 1; }
done
echo "[family-peft] all three families: citeforge, peft and the merged export agree"
