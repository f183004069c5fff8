#!/usr/bin/env python3
"""Regenerates tests/fixtures/families/: tiny random checkpoints of the model families people
fine-tune today, written by HF transformers, with the logits and greedy tokens transformers
computes for them. The C++ tests ([families]) load each directory and must give logits within
1e-4 in fp32 at every position of every prompt, and the same 32 greedy tokens.

    scripts/reference_venv.sh                       # once (pins: requirements-reference.txt)
    ~/.cache/citeforge/pyref-venv/bin/python scripts/make_family_fixtures.py

Each fixture proves one family's differences from plain Llama, and the script asserts that
each difference moves the logits by more than MATTERS (a C++ model that ignored it would fail):
  llama3_rope   Llama 3.1's "llama3" RoPE scaling, transformers 5's rope_parameters layout
  llama_linear  "linear" RoPE scaling, in transformers 4's layout (rope_scaling, "type")
  llama_dynamic "dynamic" (NTK) RoPE scaling: theta grows with the sequence past the context
  llama_yarn    "yarn" RoPE scaling: blended frequencies and the attention factor on cos/sin
  qwen2         Qwen2/2.5: q/k/v biases (no o_proj bias), tied embeddings, theta 1e6
  qwen3         Qwen3: per-head q/k RMSNorm, head_dim 16 with hidden 32 / 4 heads (8)
The scaled-RoPE fixtures have an original context of 16 tokens and a prompt of 40, so every
scaling type is exercised past it. llama3_rope, qwen2 and qwen3 are also written as GGUF files
by PyPI gguf (<name>/<name>.gguf) in llama.cpp's layout, for the [families][gguf] tests.
"""

import json
import math
import shutil
from pathlib import Path

import gguf
import numpy as np
import torch
from safetensors.torch import load_file, save_file
from transformers import (
    AutoModelForCausalLM,
    LlamaConfig,
    LlamaForCausalLM,
    Qwen2Config,
    Qwen2ForCausalLM,
    Qwen3Config,
    Qwen3ForCausalLM,
)

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "tests" / "fixtures" / "families"
MATTERS = 1e-3
PROMPT_LENGTHS = (5, 12, 40)  # the last past the scaled fixtures' original context of 16
GREEDY_STEPS = 32
SMALL = dict(vocab_size=96, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
             num_attention_heads=4, num_key_value_heads=2, rms_norm_eps=1e-6,
             attn_implementation="eager")


def randomize(model, seed):
    """Seeded noise in every parameter (norms 1 + noise) so that no term hides in the logits."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, param in model.named_parameters():
            noise = torch.randn(param.shape, generator=gen, dtype=torch.float32)
            param.copy_(1.0 + 0.1 * noise if name.endswith("norm.weight") else 0.1 * noise)


def load_fp32(directory, **overrides):
    return AutoModelForCausalLM.from_pretrained(
        directory, dtype=torch.float32, attn_implementation="eager", **overrides).eval()


@torch.no_grad()
def prompt_logits(model, prompts):
    # One prompt per forward pass: dynamic RoPE depends on the pass's longest position.
    return [model(p.unsqueeze(0)).logits[0].float() for p in prompts]


def prompts_for(vocab_size, seed):
    gen = torch.Generator().manual_seed(seed)
    return [torch.randint(0, vocab_size, (n,), generator=gen, dtype=torch.int64)
            for n in PROMPT_LENGTHS]


@torch.no_grad()
def greedy(model, prompt):
    model.generation_config.eos_token_id = None  # plain argmax for every step
    out = model.generate(prompt.unsqueeze(0), do_sample=False, max_new_tokens=GREEDY_STEPS,
                         attention_mask=torch.ones(1, prompt.shape[0]))[0]
    tokens = out[prompt.shape[0]:]
    logits = model(out.unsqueeze(0)).logits[0, prompt.shape[0] - 1:-1]
    top2 = logits.topk(2, dim=-1).values
    margin = (top2[:, 0] - top2[:, 1]).min().item()
    assert margin > MATTERS, f"greedy top-2 margin {margin:.2e} is too close to call"
    return tokens, margin


def max_diff(a, b):
    return max((x - y).abs().max().item() for x, y in zip(a, b))


def write_fixture(name, model, seed, matters):
    """Saves the checkpoint, asserts each named override moves the logits, writes expected."""
    directory = OUT / name
    shutil.rmtree(directory, ignore_errors=True)
    randomize(model, seed)
    model.save_pretrained(directory)
    (directory / "generation_config.json").unlink(missing_ok=True)
    reloaded = load_fp32(directory)
    prompts = prompts_for(model.config.vocab_size, seed + 100)
    logits = prompt_logits(reloaded, prompts)
    assert max_diff(logits, prompt_logits(model.eval(), prompts)) < 1e-6
    for what, change in matters.items():
        changed = change(directory)
        diff = max_diff(logits, prompt_logits(changed, prompts))
        assert diff > MATTERS, f"{name}: {what} moves logits by only {diff:.2e}"
        print(f"  {what}: logits move by {diff:.3f}")
    tokens, margin = greedy(reloaded, prompts[1])
    tensors = {"greedy_prompt": prompts[1].clone(), "greedy_tokens": tokens}
    for i, (p, l) in enumerate(zip(prompts, logits)):
        tensors[f"input_ids_{i}"] = p
        tensors[f"logits_{i}"] = l
    save_file({k: v.contiguous() for k, v in tensors.items()}, directory / "expected.safetensors")
    print(f"  max |logit| {max(l.abs().max().item() for l in logits):.3f}; "
          f"greedy margin {margin:.4f}")
    return directory


def with_rope(parameters):
    """A reload of the checkpoint with other RoPE parameters."""
    return lambda directory: load_fp32(directory, rope_parameters=parameters)


def zeroed(suffix):
    """A reload of the checkpoint with every parameter ending in `suffix` zeroed (or set to 1
    for norm weights), to prove that part matters."""
    def reload(directory):
        model = load_fp32(directory)
        with torch.no_grad():
            for name, param in model.named_parameters():
                if name.endswith(suffix):
                    param.fill_(1.0 if "norm" in suffix else 0.0)
        return model
    return reload


def to_legacy_rope(directory, rope_scaling):
    """Rewrites config.json as transformers 4.x wrote it: rope_theta at the top level and the
    scaling under rope_scaling with the old "type" key, torch_dtype for dtype."""
    path = directory / "config.json"
    config = json.loads(path.read_text())
    config["rope_theta"] = config.pop("rope_parameters")["rope_theta"]
    config["rope_scaling"] = rope_scaling
    config["torch_dtype"] = config.pop("dtype")
    path.write_text(json.dumps(dict(sorted(config.items())), indent=2) + "\n")


def make_llama3_rope():
    rope = {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0, "low_freq_factor": 1.0,
            "high_freq_factor": 4.0, "original_max_position_embeddings": 16}
    config = LlamaConfig(**SMALL, head_dim=16, max_position_embeddings=128,
                         tie_word_embeddings=False, rope_parameters=rope)
    write_fixture("llama3_rope", LlamaForCausalLM(config), seed=11, matters={
        "llama3 scaling off": with_rope({"rope_type": "default", "rope_theta": 500000.0})})


def make_llama_linear():
    rope = {"rope_type": "linear", "rope_theta": 10000.0, "factor": 4.0}
    config = LlamaConfig(**SMALL, max_position_embeddings=64, tie_word_embeddings=False,
                         rope_parameters=rope)
    directory = write_fixture("llama_linear", LlamaForCausalLM(config), seed=12, matters={
        "linear scaling off": with_rope({"rope_type": "default", "rope_theta": 10000.0})})
    to_legacy_rope(directory, {"type": "linear", "factor": 4.0})
    # The legacy layout must load to the same model.
    check = prompt_logits(load_fp32(directory), prompts_for(SMALL["vocab_size"], 112))
    saved = load_file(directory / "expected.safetensors")
    assert max_diff(check, [saved[f"logits_{i}"] for i in range(len(PROMPT_LENGTHS))]) < 1e-6


def make_llama_dynamic():
    rope = {"rope_type": "dynamic", "rope_theta": 10000.0, "factor": 4.0}
    config = LlamaConfig(**SMALL, max_position_embeddings=16, tie_word_embeddings=False,
                         rope_parameters=rope)
    write_fixture("llama_dynamic", LlamaForCausalLM(config), seed=13, matters={
        "dynamic scaling off": with_rope({"rope_type": "default", "rope_theta": 10000.0})})


def make_llama_yarn():
    rope = {"rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0,
            "original_max_position_embeddings": 16}
    config = LlamaConfig(**SMALL, head_dim=16, max_position_embeddings=64,
                         tie_word_embeddings=False, rope_parameters=rope)
    write_fixture("llama_yarn", LlamaForCausalLM(config), seed=14, matters={
        "yarn scaling off": with_rope({"rope_type": "default", "rope_theta": 10000.0})})


def make_qwen2():
    config = Qwen2Config(**SMALL, max_position_embeddings=128, tie_word_embeddings=True,
                         use_sliding_window=False, sliding_window=4096, max_window_layers=2,
                         rope_parameters={"rope_type": "default", "rope_theta": 1000000.0})
    write_fixture("qwen2", Qwen2ForCausalLM(config), seed=15, matters={
        "q/k/v biases zeroed": zeroed("proj.bias")})


def make_qwen3():
    config = Qwen3Config(**SMALL, head_dim=16, max_position_embeddings=128,
                         tie_word_embeddings=False, attention_bias=False,
                         use_sliding_window=False, sliding_window=None,
                         rope_parameters={"rope_type": "default", "rope_theta": 1000000.0})
    write_fixture("qwen3", Qwen3ForCausalLM(config), seed=16, matters={
        "q/k norms at 1": zeroed("_norm.weight")})


# GPT-2's byte alphabet (printable bytes as themselves, the rest from U+0100 on): with one merged
# token, the GGUF fixtures' vocabulary of 257, so the embedding gains zero rows past the 96.
def byte_tokens():
    printable = [b for b in range(256) if 33 <= b <= 126 or 161 <= b <= 172 or b >= 174]
    out, extra = [], 0
    for b in range(256):
        if b in printable:
            out.append(chr(b))
        else:
            out.append(chr(256 + extra))
            extra += 1
    return out


def interleave(w, heads):
    """llama.cpp's row order for q/k of the llama architecture (its RoPE rotates adjacent
    pairs, HF's the two halves of each head)."""
    rows = w.shape[0]
    return w.reshape(heads, 2, rows // heads // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def llama3_rope_factors(config):
    """The per-frequency factors llama.cpp's converter stores for a llama3 scaling."""
    rope = config.rope_parameters
    dim = config.head_dim
    context = rope["original_max_position_embeddings"]
    low, high, factor = rope["low_freq_factor"], rope["high_freq_factor"], rope["factor"]
    freqs = 1.0 / (rope["rope_theta"] ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim))
    out = []
    for freq in freqs.tolist():
        wavelen = 2 * math.pi / freq
        if wavelen < context / high:
            out.append(1.0)
        elif wavelen > context / low:
            out.append(factor)
        else:
            smooth = (context / wavelen - low) / (high - low)
            out.append(1 / ((1 - smooth) / factor + smooth))
    return np.array(out, dtype=np.float32)


def write_gguf(name, arch):
    """The fixture as a GGUF file written by PyPI gguf (llama.cpp's own writer and tensor name
    map), laid out as llama.cpp's converter lays out that architecture, every tensor F32."""
    directory = OUT / name
    model = load_fp32(directory)
    config = model.config
    kind = {"llama": gguf.MODEL_ARCH.LLAMA, "qwen2": gguf.MODEL_ARCH.QWEN2,
            "qwen3": gguf.MODEL_ARCH.QWEN3}[arch]
    names = gguf.get_tensor_name_map(kind, config.num_hidden_layers)
    writer = gguf.GGUFWriter(directory / f"{name}.gguf", arch)
    writer.add_block_count(config.num_hidden_layers)
    writer.add_context_length(config.max_position_embeddings)
    writer.add_embedding_length(config.hidden_size)
    writer.add_feed_forward_length(config.intermediate_size)
    writer.add_head_count(config.num_attention_heads)
    writer.add_head_count_kv(config.num_key_value_heads)
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    writer.add_key_length(head_dim)
    writer.add_value_length(head_dim)
    writer.add_rope_freq_base(config.rope_parameters["rope_theta"])
    writer.add_layer_norm_rms_eps(config.rms_norm_eps)
    tokens = byte_tokens() + ["\u0120t"]  # and one merge: llama.cpp requires the merges key
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("gpt-2")
    writer.add_token_list(tokens)
    writer.add_token_types([gguf.TokenType.NORMAL] * len(tokens))
    writer.add_token_merges(["\u0120 t"])
    for hf_name, tensor in model.state_dict().items():
        if hf_name == "lm_head.weight" and config.tie_word_embeddings:
            continue
        base, suffix = hf_name.rsplit(".", 1)
        w = tensor.numpy().astype(np.float32)
        if arch == "llama" and base.endswith("q_proj"):
            w = interleave(w, config.num_attention_heads)
        if arch == "llama" and base.endswith("k_proj"):
            w = interleave(w, config.num_key_value_heads)
        if base in ("model.embed_tokens", "lm_head"):
            w = np.concatenate([w, np.zeros((len(tokens) - w.shape[0], w.shape[1]), np.float32)])
        writer.add_tensor(f"{names.get_name(base)}.{suffix}", np.ascontiguousarray(w))
    if config.rope_parameters.get("rope_type") == "llama3":
        writer.add_tensor("rope_freqs.weight", llama3_rope_factors(config))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def main():
    torch.use_deterministic_algorithms(True)
    OUT.mkdir(parents=True, exist_ok=True)
    for make in (make_llama3_rope, make_llama_linear, make_llama_dynamic, make_llama_yarn,
                 make_qwen2, make_qwen3):
        print(make.__name__.removeprefix("make_"))
        make()
    for name, arch in (("llama3_rope", "llama"), ("qwen2", "qwen2"), ("qwen3", "qwen3")):
        write_gguf(name, arch)


if __name__ == "__main__":
    main()
