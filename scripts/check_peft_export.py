#!/usr/bin/env python3
"""Checks that Python peft and transformers read what `citeforge export` writes.

For a training checkpoint of a run (e.g. runs/demo/checkpoints/sft-3) and the run's base model
(runs/demo/base_model, HF layout with tokenizer.model), it
  1. exports the adapter in peft's format and as a merged HF checkpoint with build/citeforge,
  2. has citeforge write the logits of one prompt with the adapter applied
     (citeforge generate --adapter ... --logits-out),
  3. loads the base with transformers, the exported adapter with peft.PeftModel, and the merged
     checkpoint with transformers alone, and compares all three sets of logits (fp32, CPU).
It exits non-zero when a difference exceeds 1e-4.

    scripts/reference_venv.sh            # once
    ~/.cache/citeforge/pyref-venv/bin/python scripts/check_peft_export.py \
        runs/demo/checkpoints/sft-3 runs/demo/base_model
"""

import subprocess
import sys
import tempfile
from pathlib import Path

import torch
from peft import PeftModel
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM

REPO = Path(__file__).resolve().parents[1]
CITEFORGE = REPO / "build" / "citeforge"
TOLERANCE = 1e-4
PROMPT = "Answer the question using only the documents below. Question: What does the bird eat?"


def citeforge(*args):
    subprocess.run([str(CITEFORGE), *map(str, args)], check=True)


def load_hf(path):
    return AutoModelForCausalLM.from_pretrained(
        path, dtype=torch.float32, attn_implementation="eager"
    ).eval()


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    checkpoint, base = Path(sys.argv[1]), Path(sys.argv[2])
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        citeforge("export", "--checkpoint", checkpoint, "--format", "peft", "--out", tmp / "peft",
                  "--model", base)
        citeforge("export", "--checkpoint", checkpoint, "--format", "merged", "--out",
                  tmp / "merged", "--model", base)
        citeforge("generate", "--model", base, "--adapter", tmp / "peft", "--prompt", PROMPT,
                  "--greedy", "--max-new-tokens", "1", "--quantization", "none",
                  "--logits-out", tmp / "logits.safetensors")
        ours = load_file(tmp / "logits.safetensors")
        ids = ours["input_ids"]
        with torch.no_grad():
            peft_model = PeftModel.from_pretrained(load_hf(base), tmp / "peft").eval()
            peft_logits = peft_model(input_ids=ids).logits
            with peft_model.disable_adapter():
                base_logits = peft_model(input_ids=ids).logits
            merged_logits = load_hf(tmp / "merged")(input_ids=ids).logits
    results = {
        "citeforge vs peft": (ours["logits"] - peft_logits).abs().max().item(),
        "merged export (transformers) vs peft": (merged_logits - peft_logits).abs().max().item(),
    }
    effect = (peft_logits - base_logits).abs().max().item()
    print(f"prompt tokens: {ids.shape[1]}; the adapter moves the logits by up to {effect:.4f}")
    for name, diff in results.items():
        print(f"{name}: max |difference| {diff:.2e} ({'ok' if diff <= TOLERANCE else 'FAIL'})")
    if effect <= 10 * TOLERANCE:
        sys.exit("the adapter barely changes the logits: pick a trained checkpoint")
    if any(diff > TOLERANCE for diff in results.values()):
        sys.exit(1)


if __name__ == "__main__":
    main()
