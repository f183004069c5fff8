#!/usr/bin/env python3
"""Regenerates the numerical reference fixtures in tests/fixtures/models/ with HF transformers.

The C++ model tests load each checkpoint directory and must reproduce `expected.safetensors`
within 1e-4 in fp32. Everything is seeded, runs on CPU in fp32 with eager attention, and the
output directories are recreated from scratch, so a rerun rewrites identical files.

Setup (once; the venv lives outside the repo, versions pinned in requirements-reference.txt):
    scripts/reference_venv.sh
Run from anywhere:
    ~/.cache/citeforge/pyref-venv/bin/python scripts/make_model_fixtures.py
tests/fixtures/models/README.md describes what each fixture covers.
"""

import json
import shutil
from pathlib import Path

import sentencepiece
import torch
from safetensors import safe_open
from safetensors.torch import save_file
from transformers import (
    AutoModelForCausalLM,
    LlamaConfig,
    LlamaForCausalLM,
    MistralConfig,
    MistralForCausalLM,
)

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "tests" / "fixtures" / "models"
# The real stories260K model is committed in its fixture directory; the script adds the expected
# outputs beside it.
STORIES = OUT / "stories260K"

BATCH = 2
# A logit difference above this proves a feature changes the output by far more than the 1e-4
# tolerance of the C++ comparison, so a C++ model that ignores the feature fails the test.
MATTERS = 1e-3
# The config.json fields the C++ config reader consumes; printed per fixture as a checklist.
CONFIG_FIELDS = [
    "architectures", "hidden_size", "intermediate_size", "num_hidden_layers",
    "num_attention_heads", "num_key_value_heads", "head_dim", "rms_norm_eps", "rope_theta",
    "max_position_embeddings", "vocab_size", "tie_word_embeddings", "sliding_window",
    "bos_token_id", "eos_token_id", "torch_dtype",
]


def randomize(model, seed):
    """Overwrites every parameter with seeded noise large enough to give non-trivial logits.

    HF's default init (std 0.02, norms at 1) gives near-zero logits on a 32-wide model and
    would hide a C++ bug that skips a norm weight, so norms get 1 + noise too.
    """
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, param in model.named_parameters():
            noise = torch.randn(param.shape, generator=gen, dtype=torch.float32)
            if name.endswith("norm.weight"):
                param.copy_(1.0 + 0.1 * noise)
            else:
                param.copy_(0.1 * noise)


def random_input_ids(vocab_size, length, seed):
    gen = torch.Generator().manual_seed(seed)
    return torch.randint(0, vocab_size, (BATCH, length), generator=gen, dtype=torch.int64)


def save_checkpoint(model, directory, **save_kwargs):
    """Writes a fresh checkpoint; generation_config.json is dropped as the C++ never reads it."""
    shutil.rmtree(directory, ignore_errors=True)
    model.save_pretrained(directory, **save_kwargs)
    (directory / "generation_config.json").unlink(missing_ok=True)


def load_fp32(directory, **config_overrides):
    """Loads a checkpoint the way the C++ runs it on CPU: weights upcast to fp32, eager attention."""
    model = AutoModelForCausalLM.from_pretrained(
        directory, dtype=torch.float32, attn_implementation="eager", **config_overrides
    )
    return model.eval()


@torch.no_grad()
def logits_of(model, input_ids):
    return model(input_ids).logits.float()


def max_diff(a, b):
    return (a - b).abs().max().item()


def assert_matters(directory, input_ids, logits, what, **config_overrides):
    """Asserts that reloading with `config_overrides` moves the logits by more than MATTERS."""
    diff = max_diff(logits_of(load_fp32(directory, **config_overrides), input_ids), logits)
    assert diff > MATTERS, f"{directory.name}: {what} changes logits by only {diff:.2e}"
    print(f"  {what}: logits move by {diff:.3f}")


def write_expected(directory, **tensors):
    save_file({k: v.contiguous() for k, v in tensors.items()}, directory / "expected.safetensors")


def report(directory, logits):
    """Prints max |logit| and which config.json fields are present, and where rope theta lives."""
    config = json.loads((directory / "config.json").read_text())
    missing = [f for f in CONFIG_FIELDS if f not in config]
    theta = config.get("rope_theta", (config.get("rope_parameters") or {}).get("rope_theta"))
    print(f"  max |logit| = {logits.abs().max().item():.3f}")
    print(f"  config.json lacks: {missing or 'nothing'}; rope theta = {theta}; "
          f"dtype keys: {[k for k in ('torch_dtype', 'dtype') if k in config]}")


def to_legacy_config(directory):
    """Rewrites config.json in the layout of hub checkpoints written by transformers 4.x.

    transformers 5 writes `dtype`, nests theta in `rope_parameters` and always writes
    `head_dim`; Llama-2/3 and Mistral-7B configs on the hub use `torch_dtype`, a top-level
    `rope_theta` and no `head_dim`. One fixture in the old layout makes the C++ reader prove
    it handles both, including the head_dim = hidden_size / num_attention_heads default.
    """
    path = directory / "config.json"
    config = json.loads(path.read_text())
    config["torch_dtype"] = config.pop("dtype")
    config["rope_theta"] = config.pop("rope_parameters")["rope_theta"]
    config["rope_scaling"] = None
    assert config.pop("head_dim") == config["hidden_size"] // config["num_attention_heads"]
    path.write_text(json.dumps(dict(sorted(config.items())), indent=2) + "\n")


def assert_window_convention(directory, window):
    """Pins HF's sliding-window convention: query i sees keys i-window+1 .. i.

    Through L layers the logits at position t then depend on tokens t-L*(window-1) .. t only,
    so changing the token just outside that span must leave them untouched while changing the
    first token inside it must not.
    """
    model = load_fp32(directory)
    length = 16
    reach = model.config.num_hidden_layers * (window - 1)
    last = length - 1
    base = torch.arange(length).unsqueeze(0) % model.config.vocab_size
    reference = logits_of(model, base)[0, last]

    def moved_by_changing(position):
        changed = base.clone()
        changed[0, position] = (changed[0, position] + 1) % model.config.vocab_size
        return max_diff(logits_of(model, changed)[0, last], reference)

    outside, inside = moved_by_changing(last - reach - 1), moved_by_changing(last - reach)
    assert outside == 0.0 and inside > 1e-6, (outside, inside)
    print(f"  window convention: token at t-{reach + 1} moves logit[t] by {outside}, "
          f"token at t-{reach} by {inside:.2e}")


def make_mistral_sliding():
    """Mistral with a sliding window shorter than the sequence, GQA, head_dim != hidden/heads."""
    directory = OUT / "mistral_sliding"
    window, length = 4, 16
    config = MistralConfig(
        vocab_size=96, hidden_size=32, intermediate_size=72, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=16, sliding_window=window,
        max_position_embeddings=64, rms_norm_eps=1e-5, tie_word_embeddings=False,
        rope_parameters={"rope_type": "default", "rope_theta": 1e6}, attn_implementation="eager",
    )
    model = MistralForCausalLM(config)
    randomize(model, seed=1)
    # ~125 kB of fp32 weights, so 50 kB shards give three files and an index.
    save_checkpoint(model, directory, max_shard_size="50KB")
    shards = sorted(p.name for p in directory.glob("model-*-of-*.safetensors"))
    assert len(shards) >= 2 and (directory / "model.safetensors.index.json").exists(), shards

    input_ids = random_input_ids(config.vocab_size, length, seed=101)
    logits = logits_of(load_fp32(directory), input_ids)
    assert max_diff(logits, logits_of(model.eval(), input_ids)) < 1e-6
    assert_matters(directory, input_ids, logits, "sliding_window=None", sliding_window=None)
    assert_matters(directory, input_ids, logits, "rope_theta=1e4",
                   rope_parameters={"rope_type": "default", "rope_theta": 1e4})
    assert_window_convention(directory, window)
    write_expected(directory, input_ids=input_ids, logits=logits)
    report(directory, logits)


def make_llama_bf16():
    """Llama stored in bf16; the reference is those bf16 weights upcast and run in fp32."""
    directory = OUT / "llama_bf16"
    config = LlamaConfig(
        vocab_size=128, hidden_size=64, intermediate_size=160, num_hidden_layers=2,
        num_attention_heads=8, num_key_value_heads=2, max_position_embeddings=128,
        rms_norm_eps=1e-5, tie_word_embeddings=False,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
        attn_implementation="eager",
    )
    model = LlamaForCausalLM(config)
    randomize(model, seed=2)
    fp32_state = {k: v.clone() for k, v in model.state_dict().items()}
    save_checkpoint(model.to(torch.bfloat16), directory)
    with safe_open(directory / "model.safetensors", "pt") as f:
        dtypes = {f.get_slice(k).get_dtype() for k in f.keys()}
        assert dtypes == {"BF16"}, dtypes
        assert "lm_head.weight" in f.keys()

    input_ids = random_input_ids(config.vocab_size, 14, seed=102)
    reloaded = load_fp32(directory)
    # The reference must run on exactly the bf16-rounded weights, upcast, as the C++ will.
    for name, value in reloaded.state_dict().items():
        assert value.dtype == torch.float32
        assert torch.equal(value, fp32_state[name].to(torch.bfloat16).float()), name
    logits = logits_of(reloaded, input_ids)
    model.float().load_state_dict(fp32_state)
    fp32_logits = logits_of(model.eval(), input_ids)
    print(f"  bf16 rounding of the weights moves logits by {max_diff(logits, fp32_logits):.3f}")
    write_expected(directory, input_ids=input_ids, logits=logits)
    report(directory, logits)


def make_llama_tied():
    """Llama with tied embeddings (no lm_head.weight), MHA, theta 5e5, legacy config layout."""
    directory = OUT / "llama_tied"
    config = LlamaConfig(
        vocab_size=64, hidden_size=48, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=64,
        rms_norm_eps=1e-6, tie_word_embeddings=True,
        rope_parameters={"rope_type": "default", "rope_theta": 500000.0},
        attn_implementation="eager",
    )
    model = LlamaForCausalLM(config)
    randomize(model, seed=3)
    assert model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()
    save_checkpoint(model, directory)
    to_legacy_config(directory)
    with safe_open(directory / "model.safetensors", "pt") as f:
        assert "lm_head.weight" not in f.keys()

    input_ids = random_input_ids(config.vocab_size, 12, seed=103)
    logits = logits_of(load_fp32(directory), input_ids)
    assert max_diff(logits, logits_of(model.eval(), input_ids)) < 1e-6
    assert_matters(directory, input_ids, logits, "rope_theta=1e4",
                   rope_parameters={"rope_type": "default", "rope_theta": 1e4})
    write_expected(directory, input_ids=input_ids, logits=logits)
    report(directory, logits)


def make_stories260k():
    """Greedy continuation of a real (tiny) Llama: tokenizer, generation loop and logits."""
    directory = OUT / "stories260K"
    new_tokens = 64
    prompt = "Once upon a time"
    model = load_fp32(STORIES)
    sp = sentencepiece.SentencePieceProcessor(model_file=str(STORIES / "tokenizer.model"))
    prompt_ids = torch.tensor([model.config.bos_token_id] + sp.encode(prompt), dtype=torch.int64)

    # Without an EOS id generate() never stops early, so exactly `new_tokens` plain argmax tokens
    # come out; suppressing EOS instead would alter the argmax whenever EOS wins. It has to be
    # cleared on the model: transformers 5 fills an eos_token_id=None passed to generate() back
    # in from the model's defaults. The explicit attention mask stops generate() from guessing
    # one from a pad id, which masks out BOS when pad and BOS share an id.
    model.generation_config.eos_token_id = None
    with torch.no_grad():
        output = model.generate(prompt_ids.unsqueeze(0), do_sample=False,
                                max_new_tokens=new_tokens,
                                attention_mask=torch.ones(1, prompt_ids.shape[0]))[0]
    assert output.shape[0] == prompt_ids.shape[0] + new_tokens, output.shape
    generated_ids = output[prompt_ids.shape[0]:]

    logits = logits_of(model, output.unsqueeze(0))[0]
    steps = logits[prompt_ids.shape[0] - 1 : -1]
    assert torch.equal(steps.argmax(-1), generated_ids), "generate() is not plain greedy argmax"
    top2 = steps.topk(2, dim=-1).values
    margin = (top2[:, 0] - top2[:, 1]).min().item()
    # A C++ run within 1e-4 of these logits must pick the same tokens.
    assert margin > MATTERS, f"greedy top-2 margin {margin:.2e} is too close to call"
    eos_steps = (generated_ids == model.config.eos_token_id).nonzero().flatten().tolist()

    # The model files stay: only the expected outputs are rewritten.
    for name in ("expected.safetensors", "expected.json"):
        (directory / name).unlink(missing_ok=True)
    write_expected(directory, prompt_ids=prompt_ids, generated_ids=generated_ids, logits=logits)
    summary = {
        "model": "tests/fixtures/models/stories260K",
        "prompt": prompt,
        "prompt_ids": prompt_ids.tolist(),
        "generated_ids": generated_ids.tolist(),
        "continuation": sp.decode(generated_ids.tolist()),
        "eos_token_id": model.config.eos_token_id,
        "eos_argmax_steps": eos_steps,
        "min_greedy_top2_margin": round(margin, 6),
    }
    (directory / "expected.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(f"  continuation: {summary['continuation']!r}")
    print(f"  EOS argmax at steps {eos_steps}; min top-2 margin {margin:.4f}")
    report(STORIES, logits)


def main():
    torch.use_deterministic_algorithms(True)
    OUT.mkdir(parents=True, exist_ok=True)
    for make in (make_mistral_sliding, make_llama_bf16, make_llama_tied, make_stories260k):
        print(make.__name__.removeprefix("make_"))
        make()


if __name__ == "__main__":
    main()
