#!/usr/bin/env python3
"""Checks that llama.cpp loads what `citeforge export --format gguf` writes and decodes what
citeforge decodes.

For a checkpoint of a run and its base model directory it
  1. exports the merged model as HF safetensors and as a GGUF (build/citeforge export),
  2. decodes a fixed prompt greedily with citeforge from the merged directory, writing the
     prompt's token ids (generate --logits-out),
  3. loads the GGUF with llama.cpp (PyPI llama-cpp-python), tokenizes the same prompt and
     decodes it greedily,
and requires the same prompt ids and the same continuation. With an F16 or BF16 export the
weights differ from citeforge's fp32 by that rounding only; it says so if the tokens diverge.

    ~/.cache/citeforge/bench-venv/bin/python scripts/check_gguf_export.py \\
        runs/demo/checkpoints/sft-2 BASE_DIR [--gguf-type f16] [--tokens 32]
"""

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

from llama_cpp import Llama
from safetensors.numpy import load_file

REPO = Path(__file__).resolve().parents[1]
CITEFORGE = REPO / "build" / "citeforge"
# (prompt, chat format): plain text, and the demo model's chat format with its special tokens.
PROMPTS = [
    ("Question: Which river flows into the bay? Answer:", "plain"),
    ("Document [1]: The Belnyra river flows into the bay. Which river flows into the bay?",
     "smollm2"),
]


def fail(message):
    print(f"check_gguf_export: {message}", file=sys.stderr)
    sys.exit(1)


def citeforge(*args):
    result = subprocess.run([str(CITEFORGE), *args], cwd=REPO, capture_output=True, text=True)
    if result.returncode != 0:
        fail(f"citeforge {' '.join(args[:2])} failed: {result.stderr.strip()[-500:]}")
    return result.stdout


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("checkpoint")
    parser.add_argument("base")
    parser.add_argument("--gguf-type", default="f16")
    parser.add_argument("--tokens", type=int, default=32)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        merged, gguf = tmp / "merged", tmp / "model.gguf"
        citeforge("export", "--checkpoint", args.checkpoint, "--model", args.base,
                  "--format", "merged", "--out", str(merged))
        citeforge("export", "--checkpoint", args.checkpoint, "--model", args.base,
                  "--format", "gguf", "--gguf-type", args.gguf_type, "--out", str(gguf))
        llm = Llama(model_path=str(gguf), n_ctx=512, n_threads=2, verbose=False)
        for i, (prompt, chat) in enumerate(PROMPTS):
            logits = tmp / f"logits{i}.safetensors"
            ours = citeforge("generate", "--model", str(merged), "--prompt", prompt, "--greedy",
                             "--max-new-tokens", str(args.tokens), "--chat", chat,
                             "--device", "cpu", "--quantization", "none",
                             "--logits-out", str(logits))
            ours = "\n".join(l for l in ours.splitlines() if not l.startswith("[generate]"))
            # The same text tokenized by both, then both decode from the ids citeforge's
            # generate used (its chat format's wrapping included).
            ours_text_ids = [int(x) for x in subprocess.run(
                [str(CITEFORGE), "tokenize", "--model", str(merged)], input=prompt + "\n",
                capture_output=True, text=True, check=True).stdout.split()]
            theirs_text_ids = llm.tokenize(prompt.encode(), add_bos=False, special=True)
            if theirs_text_ids != ours_text_ids:
                fail(f"prompt {i}: llama.cpp tokenizes it as {theirs_text_ids[:12]}..., citeforge "
                     f"as {ours_text_ids[:12]}...")
            ids = [int(x) for x in load_file(str(logits))["input_ids"].reshape(-1)]
            llm.reset()
            out = []
            for token in llm.generate(ids, top_k=1, temp=0.0, repeat_penalty=1.0):
                if token == llm.token_eos() or len(out) == args.tokens:
                    break
                out.append(token)
            theirs = llm.detokenize(out).decode("utf-8", errors="replace")
            if theirs.strip() != ours.strip():
                fail(f"prompt {i}: llama.cpp continues {theirs!r}, citeforge {ours!r}")
            print(f"check_gguf_export: prompt {i}: {len(ours_text_ids)} text ids equal, {len(out)} greedy "
                  f"tokens equal: {theirs.strip()[:70]!r}")
        print(f"check_gguf_export: {args.gguf_type} GGUF of {args.checkpoint} loads in llama.cpp "
              f"(llama-cpp-python {__import__('llama_cpp').__version__}) and decodes as citeforge")


if __name__ == "__main__":
    main()
