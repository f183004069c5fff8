#!/usr/bin/env python3
"""Trains the demo-shaped Llama from scratch, in PyTorch + HF transformers, directly on the
synthetic world's cited answers, and measures separately whether it learns the *fact* and
whether it learns *which document* to cite.

This asks the question behind the demo's weak SFT (experiments/demo_ablations.md): can a model
of this size, trained for as many steps as a CPU allows, learn to locate the evidence at all
when locating is supervised on every example? Every example is the world's prompt followed by
the gold answer ("The Belbeldor eats crabs [1][3]."), loss on the answer only, all weights
trained (no base, no LoRA). Every --eval-every steps it prints, on the validation split with
teacher forcing:

  fact-nll   mean negative log-likelihood of the answer's other tokens (the words and the fact);
             near 0 only once the model also gets the asked fact right
  cite-nll   mean negative log-likelihood of the citation digits (a digit after "[" or "][")
  cite-acc   share of first citations where the most likely document number is a relevant
             document, next to `chance`, the share of relevant documents among the listed ones
  paired     cite-acc - chance per question: mean, 95% paired bootstrap interval and two-sided
             sign-flip p (both seeded), the test that says whether cite-acc beats chance

Options that change the world or its layout (all off: the demo's world and rage_numeric):
  --synth K=V       a data.synth key for `citeforge data synth` (repeatable), e.g.
                    seemingly_relevant=0 irrelevant=4 passage_min_words=1
  --single-names N  rename the entities of every example to names drawn from a pool of N,
                    each one SentencePiece piece (user-defined symbols); the world's names are
                    2-3 syllables, i.e. 2-4 pieces that other names share
  --key-last        documents as "text [n]" (the rage_numeric_key_last template) instead of
                    "[n]: text"
  --instruction     keep the template's instruction sentence (off: shorter, faster sequences)

  python3 scripts/reading_reference.py --steps 3000 --synth seemingly_relevant=0 \
      --synth irrelevant=4 --synth passage_min_words=1 --single-names 200 --key-last

Needs build/citeforge (for the world) and the venv of scripts/reference_venv.sh; CPU only.
"""
import argparse
import json
import random
import re
import subprocess
import sys
import tempfile
import time

import sentencepiece as spm
import torch

from demo_llama import BOS, EOS, VOCAB, demo_llama

INSTRUCTION = (
    "Answer the question using only the documents below; some of them may be irrelevant. "
    "Cite the documents that support your answer as [n], for example [2] or [1][3]. If no "
    "document answers the question, say so. Answer briefly.")
# data/synth_vocab.cpp: every entity name is 2-3 of these syllables.
SYLLABLES = ("ka lo mi ra ten vo sa bel dor fi nu pa ro si ta ul ven zi mar ko le ny gor "
             "hal").split()
CAPITALISED = re.compile(r"\b[A-Z][a-z]+\b")
ENTITY = re.compile("^(" + "|".join(SYLLABLES) + ")+$")
PAD, UNK = 0, 3


def render(example, key_last, instruction):
    if key_last:
        docs = [f"{s['text']} [{s['key']}]" for s in example["sources"]]
    else:
        docs = [f"[{s['key']}]: {s['text']}" for s in example["sources"]]
    prompt = (INSTRUCTION + "\n\n" if instruction else "") + "Documents:\n" + "\n".join(docs)
    prompt += f"\n\nQuestion: {example['question']}\nAnswer:"
    return prompt, " " + example["references"]["gold"]


def name_pool(size):
    rng = random.Random(7)
    pool = []
    while len(pool) < size:
        name = (rng.choice("BDFGKLMNPRSTVZ") + rng.choice("aeiou") + rng.choice("bdfgklmnprstvz")
                + rng.choice("aeiou") + rng.choice("bdfgklmnprstvz"))
        if name not in pool:
            pool.append(name)
    return pool


def rename_entities(example, pool, rng):
    """Gives each entity of one example its own pool name (consistently within the example)."""
    names = {}

    def substitute(text):
        def one(match):
            word = match.group(0)
            if not ENTITY.match(word.lower()):
                return word
            if word not in names:
                names[word] = rng.choice([p for p in pool if p not in names.values()])
            return names[word]
        return CAPITALISED.sub(one, text)

    example = json.loads(json.dumps(example))
    example["question"] = substitute(example["question"])
    for source in example["sources"]:
        source["text"] = substitute(source["text"])
    example["references"]["gold"] = substitute(example["references"]["gold"])
    return example


def paired_test(differences, resamples=10000, seed=12345):
    """Mean of per-question differences with a 95% paired percentile-bootstrap interval and a
    two-sided sign-flip permutation p-value, the test citeforge's tables use
    (rewards/aggregate.h, paired_test)."""
    if not differences:
        return "n/a"
    d = torch.tensor(differences, dtype=torch.float64)
    generator = torch.Generator().manual_seed(seed)
    n = d.numel()
    boot = d[torch.randint(n, (resamples, n), generator=generator)].mean(1).sort().values
    low, high = boot[int(0.025 * resamples)].item(), boot[int(0.975 * resamples) - 1].item()
    signs = torch.randint(2, (resamples, n), generator=generator, dtype=torch.float64) * 2 - 1
    extreme = ((signs * d).mean(1).abs() >= d.mean().abs() - 1e-12).sum().item()
    p = (extreme + 1) / (resamples + 1)
    return f"{d.mean().item():+.3f} [{low:+.3f}, {high:+.3f}] p {p:.2g}"


def make_world(work, args):
    config = {"seed": args.seed, "train": args.train, "validation": 300, "test": 10,
              "test_ood": 10, "pretrain": 0}
    for item in args.synth:
        key, value = item.split("=", 1)
        config[key] = value
    with open(f"{work}/synth.yaml", "w") as f:
        f.write("".join(f"{k}: {v}\n" for k, v in config.items()))
    subprocess.run([args.citeforge, "data", "synth", "--out", f"{work}/world", "--config",
                    f"{work}/synth.yaml"], check=True, stdout=subprocess.DEVNULL)

    def load(split):
        with open(f"{work}/world/{split}.jsonl") as f:
            return [json.loads(line) for line in f]
    return load("train"), load("validation")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--train", type=int, default=30000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--eval-every", type=int, default=250)
    parser.add_argument("--synth", action="append", default=[])
    parser.add_argument("--single-names", type=int, default=0)
    parser.add_argument("--key-last", action="store_true")
    parser.add_argument("--instruction", action="store_true")
    parser.add_argument("--citeforge", default="build/citeforge")
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    torch.set_num_threads(2)
    rng = random.Random(args.seed)
    work = tempfile.mkdtemp(prefix="reading-reference-")
    train, validation = make_world(work, args)
    pool = name_pool(args.single_names) if args.single_names else []
    if pool:
        train = [rename_entities(e, pool, rng) for e in train]
        validation = [rename_entities(e, pool, rng) for e in validation]

    # The tokenizer: 1024 BPE pieces on the first 5000 training texts with the instruction
    # (as the demo's prompts have it), digits split, as the demo's (models/tokenizer_train.cpp),
    # plus the pool names as whole pieces.
    with open(f"{work}/corpus.txt", "w") as f:
        for example in train[:5000]:
            prompt, answer = render(example, args.key_last, True)
            f.write(prompt + answer + "\n")
    spm.SentencePieceTrainer.train(
        input=f"{work}/corpus.txt", model_prefix=f"{work}/sp", vocab_size=VOCAB,
        model_type="bpe", byte_fallback=True, split_digits=True, pad_id=PAD, bos_id=BOS,
        eos_id=EOS, unk_id=UNK, user_defined_symbols=pool, minloglevel=2)
    sp = spm.SentencePieceProcessor(model_file=f"{work}/sp.model")

    def encode(example):
        prompt, answer = render(example, args.key_last, args.instruction)
        return [BOS] + sp.encode(prompt), sp.encode(answer) + [EOS]
    train_ids = [encode(e) for e in train]
    validation_ids = [(encode(e), e) for e in validation]
    mean_len = sum(len(p) + len(a) for p, a in train_ids) / len(train_ids)
    print(f"world in {work}; mean sequence {mean_len:.0f} tokens", flush=True)

    model = demo_llama(max_positions=512, attn_implementation="sdpa")
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.0)

    def collate(items):
        length = max(len(p) + len(a) for p, a in items)
        ids = torch.full((len(items), length), PAD)
        mask = torch.zeros(len(items), length, dtype=torch.long)
        labels = torch.full((len(items), length), -100)
        for i, (p, a) in enumerate(items):
            ids[i, :len(p) + len(a)] = torch.tensor(p + a)
            mask[i, :len(p) + len(a)] = 1
            labels[i, len(p):len(p) + len(a)] = torch.tensor(a)
        return ids, mask, labels

    digits = {sp.piece_to_id(str(d)): str(d) for d in range(1, 10)}
    opening = {sp.piece_to_id(p) for p in ("[", "▁[", "][")}

    def evaluate():
        model.eval()
        sums = {"fact": [0.0, 0], "cite": [0.0, 0]}
        differences = []  # per question: first citation relevant (0/1) - chance of that
        with torch.no_grad():
            for begin in range(0, len(validation_ids), 32):
                chunk = validation_ids[begin:begin + 32]
                ids, mask, _ = collate([c[0] for c in chunk])
                logp = torch.log_softmax(model(input_ids=ids, attention_mask=mask).logits, -1)
                for j, ((prompt, answer), example) in enumerate(chunk):
                    sequence = prompt + answer
                    relevant = {str(s["key"]) for s in example["sources"]
                                if s["label"] == "relevant"}
                    keys = [str(k) for k in range(1, len(example["sources"]) + 1)]
                    first = True
                    for t in range(len(prompt), len(sequence)):
                        # a digit right after "[" or "][" is a citation; the years of
                        # the facts are digits too
                        cited = sequence[t] in digits and sequence[t - 1] in opening
                        kind = "cite" if cited else "fact"
                        sums[kind][0] -= float(logp[j, t - 1, sequence[t]])
                        sums[kind][1] += 1
                        if cited and first:
                            first = False
                            scores = logp[j, t - 1, [sp.piece_to_id(k) for k in keys]]
                            hit = keys[int(scores.argmax())] in relevant
                            differences.append((float(hit), len(relevant) / len(keys)))
        model.train()
        mean = {k: s / max(n, 1) for k, (s, n) in sums.items()}
        return mean["fact"], mean["cite"], differences

    order, position, smoothed, start = list(range(len(train_ids))), len(train_ids), None, time.time()
    for step in range(1, args.steps + 1):
        if position + args.batch > len(order):
            rng.shuffle(order)
            position = 0
        ids, mask, labels = collate([train_ids[k] for k in order[position:position + args.batch]])
        position += args.batch
        for group in optimizer.param_groups:
            group["lr"] = args.lr * min(1.0, step / args.warmup)
        loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        smoothed = loss.item() if smoothed is None else 0.98 * smoothed + 0.02 * loss.item()
        if step % args.eval_every == 0:
            fact, cite, pairs = evaluate()
            accuracy = sum(h for h, _ in pairs) / max(len(pairs), 1)
            chance = sum(c for _, c in pairs) / max(len(pairs), 1)
            print(f"step {step} loss {smoothed:.3f} fact-nll {fact:.3f} cite-nll {cite:.3f} "
                  f"cite-acc {accuracy:.3f} chance {chance:.3f} "
                  f"paired {paired_test([h - c for h, c in pairs])} n {len(pairs)} "
                  f"({time.time() - start:.0f} s)", flush=True)


if __name__ == "__main__":
    sys.exit(main())
