#!/usr/bin/env python3
"""Checks that HF transformers loads a model directory and that it behaves like SmolLM2's GGUF.

DIR is an HF-layout checkpoint (config.json, model.safetensors, tokenizer.json,
tokenizer_config.json), such as the C++ GGUF importer writes. The script loads it with
AutoTokenizer / AutoModelForCausalLM (CPU, float32, eager attention) and compares it with
 - the fixtures in tests/fixtures/smollm2/ (made by scripts/make_smollm2_fixtures.py): token ids
   of 200 of the tokenizer_cases texts, the logits of the three fixture prompts, the chat-template
   renderings in chat.json and the special tokens in model_facts.json;
 - with --gguf PATH, the same GGUF loaded by transformers: the same checks, computed live.
It prints a short report and exits 1 on any mismatch (logits: max abs diff above --atol, 1e-4).

Run with the reference venv (scripts/reference_venv.sh):
    ~/.cache/citeforge/pyref-venv/bin/python scripts/check_hf_loads.py DIR [--gguf PATH]
"""

import argparse
import json
import sys
from pathlib import Path

import torch
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM, AutoTokenizer

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures" / "smollm2"
PROMPTS = 3
STRIDE = 16  # logits_strided holds vocab columns 0, 16, 32, ...
SPECIALS = ("bos", "eos", "pad", "unk")


class Report:
    def __init__(self):
        self.failed = []

    def check(self, name, ok, detail):
        print(f"  [{'ok' if ok else 'FAIL'}] {name}: {detail}")
        if not ok:
            self.failed.append(name)


def load_model(directory, **kwargs):
    return AutoModelForCausalLM.from_pretrained(
        directory, dtype=torch.float32, attn_implementation="eager", **kwargs).eval()


def sample_cases(fixtures, count):
    """`count` cases spread evenly over tokenizer_cases.jsonl, so every category is represented."""
    lines = (fixtures / "tokenizer_cases.jsonl").read_text(encoding="utf-8").rstrip("\n").split("\n")
    cases = [json.loads(line) for line in lines]
    count = min(count, len(cases))
    return [cases[i * len(cases) // count] for i in range(count)]


def special_tokens(tok):
    return {k: [getattr(tok, f"{k}_token"), getattr(tok, f"{k}_token_id")] for k in SPECIALS}


def render(tok, case):
    text = tok.apply_chat_template(case["messages"], add_generation_prompt=case[
        "add_generation_prompt"], tokenize=False)
    ids = list(tok.apply_chat_template(case["messages"], add_generation_prompt=case[
        "add_generation_prompt"], tokenize=True, return_dict=False))
    return text, ids


def compare_ids(report, what, tok, cases, expected_ids):
    bad = [c["text"] for c, ids in zip(cases, expected_ids)
           if tok.encode(c["text"], add_special_tokens=False) != ids]
    report.check(f"token ids vs {what}", not bad,
                 f"{len(cases) - len(bad)}/{len(cases)} identical"
                 + (f"; first differing text {bad[0]!r}" if bad else ""))


def compare_logits(report, what, got, expected, atol):
    diff = max((g - e).abs().max().item() for g, e in zip(got, expected))
    report.check(f"logits vs {what}", diff <= atol, f"max abs diff {diff:.3e} (tolerance {atol:g})")


def compare_chat(report, what, tok, chat_cases, expected):
    bad = []
    for case, (text, ids) in zip(chat_cases, expected):
        if tok.chat_template is None or render(tok, case) != (text, ids):
            bad.append(case["messages"][-1]["content"])
    report.check(f"chat template vs {what}", not bad,
                 f"{len(chat_cases) - len(bad)}/{len(chat_cases)} renderings identical (text and ids)"
                 + ("; DIR has no chat template" if tok.chat_template is None else ""))


@torch.no_grad()
def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dir", type=Path, help="HF-layout model directory")
    parser.add_argument("--gguf", type=Path, help="GGUF file to compare against, loaded by HF")
    parser.add_argument("--fixtures", type=Path, default=FIXTURES)
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--atol", type=float, default=1e-4)
    args = parser.parse_args()
    torch.set_num_threads(1)

    report = Report()
    print(f"loading {args.dir}")
    tok = AutoTokenizer.from_pretrained(args.dir)
    model = load_model(args.dir)
    cfg = model.config
    rope = getattr(cfg, "rope_parameters", None) or {"rope_theta": getattr(cfg, "rope_theta", None)}
    print(f"  {type(model).__name__}: {cfg.num_hidden_layers} layers, hidden {cfg.hidden_size}, "
          f"heads {cfg.num_attention_heads}/{cfg.num_key_value_heads}, vocab {cfg.vocab_size}, "
          f"tie_word_embeddings {cfg.tie_word_embeddings}, rope {rope}; tokenizer "
          f"{type(tok).__name__}, {len(tok)} tokens")

    cases = sample_cases(args.fixtures, args.cases)
    stored = load_file(args.fixtures / "logits.safetensors")
    prompt_ids = [stored[f"prompt{i}.input_ids"] for i in range(PROMPTS)]
    chat_cases = json.loads((args.fixtures / "chat.json").read_text(encoding="utf-8"))["cases"]
    facts = json.loads((args.fixtures / "model_facts.json").read_text(encoding="utf-8"))
    logits = [model(ids.unsqueeze(0)).logits[0].float() for ids in prompt_ids]

    print(f"against the fixtures in {args.fixtures}")
    compare_ids(report, "fixtures", tok, cases, [c["ids"] for c in cases])
    compare_logits(report, "fixtures",
                   [l[-1] for l in logits] + [l[:, ::STRIDE] for l in logits],
                   [stored[f"prompt{i}.logits_last"] for i in range(PROMPTS)]
                   + [stored[f"prompt{i}.logits_strided"] for i in range(PROMPTS)], args.atol)
    compare_chat(report, "fixtures", tok, chat_cases, [(x["text"], x["ids"]) for x in chat_cases])
    want = {k: facts["tokenizer"][k] for k in SPECIALS}
    report.check("special tokens vs fixtures", special_tokens(tok) == want,
                 f"{special_tokens(tok)}" + ("" if special_tokens(tok) == want else f" != {want}"))

    if args.gguf:
        gguf = args.gguf.expanduser().resolve()
        print(f"against {gguf.name} loaded by transformers")
        ref_tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
        ref_model = load_model(gguf.parent, gguf_file=gguf.name)
        compare_ids(report, "GGUF", tok, cases,
                    [ref_tok.encode(c["text"], add_special_tokens=False) for c in cases])
        compare_logits(report, "GGUF", logits,
                       [ref_model(ids.unsqueeze(0)).logits[0].float() for ids in prompt_ids],
                       args.atol)
        compare_chat(report, "GGUF", tok, chat_cases, [render(ref_tok, x) for x in chat_cases])
        want = special_tokens(ref_tok)
        report.check("special tokens vs GGUF", special_tokens(tok) == want,
                     f"{special_tokens(tok)}" + ("" if special_tokens(tok) == want else f" != {want}"))

    if report.failed:
        print(f"MISMATCH: {', '.join(report.failed)}")
        sys.exit(1)
    print("all checks passed")


if __name__ == "__main__":
    main()
