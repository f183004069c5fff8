#!/usr/bin/env python3
"""Trains the demo-shaped Llama on copy drills in PyTorch + HF transformers, as a reference for
citeforge's `pretrain.copy_drills`.

A copy drill is BOS, a run of 8-32 random tokens, a gap of 0-64 random tokens, the run again;
the loss is on the repeat after its first token (trainer/sft/lm_data.h). A model that has learned to
copy from its context (an induction head) drives that loss towards 0; one that has not stays
near ln(vocab - 3) = 6.93 (ln of --drill-vocab when that is given). The recipe is the demo's pre-training: hidden 128, MLP 344, 4 layers,
4 heads, 2 KV heads, vocabulary 1024, tied embeddings, N(0, 0.02) initialisation, AdamW lr 3e-3
with 5% warm-up then cosine, batch 16, gradient norm clipped at 1.0.

  python3 scripts/copy_drill_reference.py [--drills 30000] [--lr 3e-3] [--seed 1]

Compare its loss curve with the `pretrain` records of metrics.jsonl of
`citeforge run configs/demo_built.yaml --out DIR --set 'settings=[sft]' --set data.synth.train=50
--set data.synth.pretrain=0 --set pretrain.copy_drills=30000 ...` (experiments/demo_ablations.md).
Uses the venv of scripts/reference_venv.sh; CPU only.
"""
import argparse
import math
import random

import torch

from demo_llama import BOS, VOCAB, demo_llama

FIRST_ID, PAD = 3, 2


def drill(rng, top=VOCAB):
    run = [rng.randrange(FIRST_ID, top) for _ in range(rng.randint(8, 32))]
    gap = [rng.randrange(FIRST_ID, top) for _ in range(rng.randint(0, 64))]
    ids = [BOS] + run + gap + run
    mask = [0] * (len(ids) - len(run) + 1) + [1] * (len(run) - 1)
    return ids, mask


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--drills", type=int, default=30000)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--drill-vocab", type=int, default=VOCAB - FIRST_ID,
                        help="draw drill tokens from the first N ordinary ids only")
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    torch.set_num_threads(2)
    rng = random.Random(args.seed)
    model = demo_llama(max_positions=384, attn_implementation="eager")
    steps = math.ceil(args.drills / args.batch)
    warmup = math.ceil(0.05 * steps)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.999), eps=1e-8,
                                  weight_decay=0.0)
    window = []
    for step in range(steps):
        batch = [drill(rng, FIRST_ID + args.drill_vocab) for _ in range(args.batch)]
        width = max(len(ids) for ids, _ in batch)
        ids = torch.full((args.batch, width), PAD)
        mask = torch.zeros((args.batch, width))
        for b, (i, m) in enumerate(batch):
            ids[b, : len(i)] = torch.tensor(i)
            mask[b, : len(m)] = torch.tensor(m, dtype=torch.float32)
        logits = model(input_ids=ids).logits[:, :-1].float()
        nll = torch.nn.functional.cross_entropy(logits.reshape(-1, VOCAB), ids[:, 1:].reshape(-1),
                                                reduction="none")
        target_mask = mask[:, 1:].reshape(-1)
        loss = (nll * target_mask).sum() / target_mask.sum()
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        factor = (step + 1) / warmup if step < warmup else \
            0.5 * (1 + math.cos(math.pi * (step - warmup) / (steps - warmup)))
        for group in optimizer.param_groups:
            group["lr"] = args.lr * factor
        optimizer.step()
        window.append(loss.item())
        if (step + 1) % 100 == 0 or step + 1 == steps:
            print(f"step {step + 1}/{steps}  drill loss {sum(window) / len(window):.3f}", flush=True)
            window = []


if __name__ == "__main__":
    main()
