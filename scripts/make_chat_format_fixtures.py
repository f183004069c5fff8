#!/usr/bin/env python3
"""Writes tests/fixtures/families/chat_formats.json: what each family's own chat template renders
through transformers' apply_chat_template, for the C++ chat formats llama3, qwen2 and qwen3 to
match (tests/models/test_chat_formats.cpp).

The templates are the ones llama.cpp keeps (models/templates/, fetched from each model's HF
repository), unpacked by scripts/setup.sh into weights/llama.cpp-references/ with the
vocabulary-only GGUFs. Each family's tokenizer is the one transformers builds from that GGUF, so
the recorded ids are HF's encoding of HF's rendering.

- llama3: Llama-3.1-8B-Instruct's template. It writes a system header even when the
  conversation has none, with "Cutting Knowledge Date: December 2023" and the date it is given;
  transformers passes none, so the template's own default, "26 Jul 2024", is what every
  rendering carries. It trims each message.
- qwen2: Qwen2.5-7B-Instruct's template (ChatML; "You are Qwen, created by Alibaba Cloud. You
  are a helpful assistant." when the conversation has no system message).
- qwen3: Qwen3-0.6B's template with enable_thinking=False: the generation prompt ends in an
  empty think block. The vocabulary GGUF at hand is Qwen1.5's, without Qwen3's <think> tokens:
  it renders the text (the template uses no tokenizer token) but records no ids.

Run (venv: scripts/reference_venv.sh):
    ~/.cache/citeforge/pyref-venv/bin/python scripts/make_chat_format_fixtures.py
"""

import hashlib
import json
from pathlib import Path

import transformers
from transformers import AutoTokenizer

REPO = Path(__file__).resolve().parent.parent
REFS = REPO / "weights" / "llama.cpp-references" / "models"
OUT = REPO / "tests" / "fixtures" / "families" / "chat_formats.json"

# (format, template, vocabulary GGUF, template arguments). Llama 3.3's template is the other one
# in llama.cpp's collection that citeforge recognises; it is rendered too, so the recognition is
# checked against what it renders. (Qwen3.5's renders qwen3's text for these conversations only
# when no message has surrounding whitespace: it trims each one, and is refused.)
FAMILIES = [
    ("llama3", "meta-llama-Llama-3.1-8B-Instruct.jinja", "ggml-vocab-llama-bpe.gguf", {}),
    ("llama3", "meta-llama-Llama-3.3-70B-Instruct.jinja", "ggml-vocab-llama-bpe.gguf", {}),
    ("qwen2", "Qwen-Qwen2.5-7B-Instruct.jinja", "ggml-vocab-qwen2.gguf", {}),
    ("qwen3", "Qwen-Qwen3-0.6B.jinja", "ggml-vocab-qwen2.gguf", {"enable_thinking": False}),
]

SYSTEM = "Answer from the numbered documents and cite each claim as [1], [2]."
USER = (
    "Documents:\n[1] Der Äpfelbaum blüht im Mai.\n[2] Photosynthesis needs light (400–700 nm).\n\n"
    "Question: When does the apple tree bloom, and what light does it use?\n"
)  # the final newline: Llama 3's template trims each message, Qwen's keep it
ANSWER = "It blooms in May [1] and uses light of 400 to 700 nm [2]."
# The conversations every family renders: a user turn alone, a system and a user turn (each as a
# generation prompt), and a training pair (system, user, assistant) rendered whole.
CASES = [
    {"name": "user", "messages": [{"role": "user", "content": USER}], "generation_prompt": True},
    {
        "name": "system_user",
        "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": USER}],
        "generation_prompt": True,
    },
    {
        "name": "training_pair",
        "messages": [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": USER},
            {"role": "assistant", "content": ANSWER},
        ],
        "generation_prompt": False,
    },
]


def main():
    renderings = []
    for name, template_file, vocab, kwargs in FAMILIES:
        template = (REFS / "templates" / template_file).read_text()
        tok = AutoTokenizer.from_pretrained(str(REFS), gguf_file=vocab)
        cases = []
        for case in CASES:
            render = dict(chat_template=template, add_generation_prompt=case["generation_prompt"],
                          **kwargs)
            text = tok.apply_chat_template(case["messages"], tokenize=False, **render)
            entry = {"name": case["name"], "messages": case["messages"], "text": text}
            if name != "qwen3":
                entry["ids"] = tok(text, add_special_tokens=False)["input_ids"]
            cases.append(entry)
        renderings.append({
            "format": name,
            "template": template_file,
            "template_sha256": hashlib.sha256(template.encode()).hexdigest(),
            "vocabulary": vocab if name != "qwen3" else None,
            "template_kwargs": kwargs,
            "cases": cases,
        })
    OUT.write_text(json.dumps({"transformers": transformers.__version__, "renderings": renderings},
                              indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
