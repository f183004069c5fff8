#!/usr/bin/env python3
"""Regenerates the QLoRA reference fixtures in tests/fixtures/nf4/ and tests/fixtures/lora/.

The C++ NF4 quantiser and LoRA layers are checked against the real `bitsandbytes` and `peft`
packages, run here on CPU:

- tests/fixtures/nf4/nf4_reference.safetensors: bitsandbytes NF4 with double quantisation
  (blocksize 64, absmax re-quantised to 8 bits in blocks of 256) for a few weight shapes.
- tests/fixtures/lora/: a peft LoRA adapter on tests/fixtures/models/llama_tied with the logits
  it produces, and a single nn.Linear wrapped by peft.

Everything is seeded and the output files are rewritten from scratch, so a rerun writes
byte-identical files. The script asserts what each fixture is meant to prove (bnb's codes match
an independent re-derivation of its algorithm, the adapter changes the logits, ...), so a
fixture that stopped covering its point fails to regenerate instead of passing silently.

Setup (once; the venv lives outside the repo, versions pinned in requirements-reference.txt):
    scripts/reference_venv.sh
Run from anywhere:
    ~/.cache/citeforge/pyref-venv/bin/python scripts/make_qlora_fixtures.py
tests/fixtures/nf4/README.md and tests/fixtures/lora/README.md describe the files.
"""

import copy
import functools
import json
import logging
import shutil
from pathlib import Path

import torch
from safetensors import safe_open
from safetensors.torch import save

REPO = Path(__file__).resolve().parents[1]
NF4_OUT = REPO / "tests" / "fixtures" / "nf4"
LORA_OUT = REPO / "tests" / "fixtures" / "lora"
BASE_MODEL = REPO / "tests" / "fixtures" / "models" / "llama_tied"
# Written into adapter_config.json instead of this machine's absolute path.
BASE_MODEL_NAME = "tests/fixtures/models/llama_tied"

BLOCKSIZE = 64  # QLoRA's first-level block
BLOCKSIZE2 = 256  # bitsandbytes' fixed block for the nested (double) absmax quantisation
# A logit difference above this proves the adapter changes the output by far more than the
# 1e-4 tolerance of the C++ comparison.
MATTERS = 1e-3


def save_file(tensors, path, metadata):
    """safetensors' save_file, but with the metadata keys sorted so reruns are byte-identical.

    safetensors keeps metadata in a Rust HashMap whose iteration order is seeded per process,
    so save_file writes the keys in a new order on every run. Rewriting the header with the
    keys sorted keeps its length and JSON layout (asserted) and readers do not care about order.
    """
    blob = save({k: v.contiguous() for k, v in tensors.items()}, metadata=metadata)
    length = int.from_bytes(blob[:8], "little")
    original = blob[8 : 8 + length].rstrip(b" ")
    header = json.loads(original)

    def dump(value):
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()

    assert dump(header) == original, "safetensors header layout changed; revisit save_file"
    header["__metadata__"] = dict(sorted(header["__metadata__"].items()))
    rewritten = dump(header)
    assert len(rewritten) == len(original)
    Path(path).write_bytes(blob[:8] + rewritten.ljust(length, b" ") + blob[8 + length :])
    with safe_open(path, "pt") as f:
        assert f.metadata() == metadata and set(f.keys()) == set(tensors)


# name, shape, dtype, seed. Shapes chosen for the block edge cases, not for realism.
NF4_CASES = [
    ("square", (64, 128), torch.float32, 11),  # 128 full blocks, rows = 2 blocks each
    ("ragged", (33, 7), torch.float32, 12),  # 231 values: last 64-block holds 39; odd count
    ("many_blocks", (300, 70), torch.float32, 13),  # 329 blocks: second 256-block ragged (73)
    ("bf16", (48, 96), torch.bfloat16, 14),  # bf16 input, bf16 dequantised output
]


# --------------------------------------------------------------------------------------------
# NF4
# --------------------------------------------------------------------------------------------


def make_weight(shape, dtype, seed):
    """LLM-like weights: N(0, 0.05^2) plus three large outliers.

    The outliers make a few blocks' absmax far larger than the rest, which is what stresses the
    8-bit nested absmax quantisation (one big absmax dominates its 256-block).
    """
    gen = torch.Generator().manual_seed(seed)
    weight = 0.05 * torch.randn(shape, generator=gen, dtype=torch.float32)
    flat = weight.view(-1)
    positions = torch.randperm(flat.numel(), generator=gen)[:3]
    magnitudes = 0.3 + 0.7 * torch.rand(3, generator=gen)
    flat[positions] = magnitudes * torch.tensor([1.0, -1.0, 1.0])
    return weight.to(dtype)


# The 16 NF4 levels exactly as bitsandbytes hard-codes them (get_4bit_type("nf4")).
NF4_CODE = torch.tensor([
    -1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453,
    -0.28444138169288635, -0.18477343022823334, -0.09105003625154495, 0.0,
    0.07958029955625534, 0.16093020141124725, 0.24611230194568634, 0.33791524171829224,
    0.44070982933044434, 0.5626170039176941, 0.7229568362236023, 1.0,
], dtype=torch.float32)
# fp32 on purpose: the tie case relies on these exact float32 values.
NF4_MIDPOINTS = (NF4_CODE[:-1] + NF4_CODE[1:]) / 2
LUT_SIZE = 65536


def make_ties_weight():
    """[2, 48]: a full 64-block and a ragged 32-block with values exactly on the NF4 midpoints.

    With a power-of-two absmax (0.5, 0.25) the scaled value is exact whether a kernel multiplies
    by 1/absmax or divides, so every midpoint is a genuine tie and the fixture pins which
    neighbour wins. The two blocks cover both of bnb's scaling paths (reciprocal-multiply for
    full blocks, divide for the ragged tail).
    """
    gen = torch.Generator().manual_seed(15)
    flat = 0.05 * torch.randn(96, generator=gen, dtype=torch.float32)
    for start, end, scale in ((0, 64, 0.5), (64, 96, 0.25)):
        # Filler stays below the absmax so the power-of-two value really is the absmax.
        flat[start:end] = flat[start:end].clamp(-0.9 * scale, 0.9 * scale)
        flat[start] = -scale  # negative, so code 0 (-1.0) is covered too
        flat[start + 1 : start + 16] = NF4_MIDPOINTS * scale
    return flat.view(2, 48)


@functools.cache
def dynamic_map():
    """bitsandbytes' signed 8-bit "dynamic" code (create_dynamic_map()), used for the nested absmax.

    Rebuilt here so the re-derivation route does not need bitsandbytes; checked against bnb's
    own state2.code whenever bnb runs.
    """
    data = []
    for i in range(7):
        boundaries = torch.linspace(0.1, 1, 2**i + 1, dtype=torch.float32)
        means = (boundaries[:-1] + boundaries[1:]) / 2.0
        data += ((10 ** (-6 + i)) * means).tolist()
        data += (-(10 ** (-6 + i)) * means).tolist()
    data += [0.0, 1.0]
    assert len(data) == 256
    return torch.tensor(sorted(data), dtype=torch.float32)


@functools.cache
def dynamic_lut():
    """bnb's quantize_cpu table: entry i is the code for the grid value -1 + 2i/65535 (fp32).

    The code is the number of dynamic-code midpoints strictly below the grid value.
    """
    code8 = dynamic_map()
    mids = 0.5 * (code8[:-1] + code8[1:])
    grid = -1.0 + (2.0 * torch.arange(LUT_SIZE, dtype=torch.float32)) / (LUT_SIZE - 1)
    return (mids[None, :] < grid[:, None]).sum(1).to(torch.uint8)


def dynamic_lut_codes(normed):
    """8-bit codes as bnb's C++ CPU library assigns them: through the grid, not the nearest code.

    The slot is trunc(((x + 1) * 0.5) * 65535 + 0.5) in fp32. The grid step (3.05e-5) is much
    coarser than the dynamic code near 0 (steps down to ~1e-7), so small values can land a few
    codes from their nearest, and values within ~1.5e-5 of a midpoint may round either way.
    """
    slot = ((normed.clamp(-1, 1) + 1.0) * 0.5) * (LUT_SIZE - 1) + 0.5
    return dynamic_lut()[slot.trunc().long()]


def nearest_codes(normed):
    # argmin takes the first minimum: the exact nearest code, ties to the lower index.
    return (normed.clamp(-1, 1)[:, None] - dynamic_map()[None, :]).abs().argmin(1).to(torch.uint8)


def blocks_of(flat, blocksize):
    return [flat[i : i + blocksize] for i in range(0, flat.numel(), blocksize)]


def rederive_nf4(weight):
    """A spelled-out statement of what bitsandbytes 0.50.2 computes on CPU, without bitsandbytes.

    It is the fallback route if bnb cannot run; otherwise it must match bnb bit for bit, which
    proves the README's account of the algorithm (scaling, rounding, packing) rather than
    leaving it read off the source.
    """
    flat = weight.reshape(-1).float()
    n = flat.numel()
    absmax = torch.empty(-(-n // BLOCKSIZE), dtype=torch.float32)
    codes = torch.empty(n, dtype=torch.int64)
    for b, block in enumerate(blocks_of(flat, BLOCKSIZE)):
        am = block.abs().max()
        absmax[b] = am
        if block.numel() == BLOCKSIZE:
            # Full blocks multiply by an fp32 reciprocal (bnb's default-backend quantize_4bit) ...
            scaled = block * (1.0 / am.clamp(min=1e-38))
        else:
            # ... while the ragged tail block divides. Both then clamp to [-1, 1].
            scaled = block / am.clamp(min=1e-38)
        # Code = number of midpoints strictly below the value (torch.bucketize, right=False):
        # a value exactly on a midpoint takes the LOWER code.
        codes[b * BLOCKSIZE : b * BLOCKSIZE + block.numel()] = (
            scaled.clamp(-1, 1)[:, None] > NF4_MIDPOINTS[None, :]).sum(1)
    if n % 2:
        # The odd last element is paired with a padding 0.0, which quantises to code 7 (0.0).
        codes = torch.cat([codes, torch.tensor([7])])
    packed = ((codes[0::2] << 4) | codes[1::2]).to(torch.uint8)  # element 2i in the HIGH nibble

    # Double quantisation: subtract the mean absmax (torch's fp32 mean), then 8-bit blockwise
    # (256) with the dynamic code in bnb's C++ CPU library: multiply by an fp32 reciprocal of
    # the block absmax, then the 65536-entry table of dynamic_lut_codes().
    offset = absmax.mean()
    centred = absmax - offset
    absmax2 = torch.empty(-(-centred.numel() // BLOCKSIZE2), dtype=torch.float32)
    absmax_codes = torch.empty(centred.numel(), dtype=torch.uint8)
    off_nearest = 0
    for b, block in enumerate(blocks_of(centred, BLOCKSIZE2)):
        am = block.abs().max()
        absmax2[b] = am
        if am == 0:
            # A single 64-block (or all-equal absmaxes) leaves nothing after the offset; bnb's
            # C++ then writes code 0 without scaling (no fixture hits this).
            absmax_codes[b * BLOCKSIZE2 : b * BLOCKSIZE2 + block.numel()] = 0
            continue
        normed = block * (1.0 / am)
        lut = dynamic_lut_codes(normed)
        absmax_codes[b * BLOCKSIZE2 : b * BLOCKSIZE2 + block.numel()] = lut
        off_nearest += int((lut != nearest_codes(normed)).sum())

    # Dequantisation, fp32, each operation rounded on its own (no fused multiply-add):
    # absmax' = code8[q8] * absmax2 + offset;  w' = code4[q4] * absmax'.
    code8 = dynamic_map()
    absmax_dq = torch.cat([
        code8[blk.long()] * absmax2[b]
        for b, blk in enumerate(blocks_of(absmax_codes, BLOCKSIZE2))]) + offset
    dq = NF4_CODE[codes[:n]] * absmax_dq.repeat_interleave(BLOCKSIZE)[:n]
    # bf16 inputs dequantise to bf16 (round to nearest even), stored here widened to fp32.
    dq = dq.to(weight.dtype).float().reshape(weight.shape)
    return {
        "packed": packed, "absmax_codes": absmax_codes, "absmax_scale": absmax2,
        "absmax_offset": offset.reshape(1), "dequantized": dq,
        "first_level_absmax": absmax, "absmax_codes_off_nearest": off_nearest,
    }


def bnb_nf4(weight):
    import bitsandbytes.functional as F

    packed, state = F.quantize_4bit(
        weight, blocksize=BLOCKSIZE, quant_type="nf4", compress_statistics=True)
    assert packed.dtype == torch.uint8 and packed.shape == ((weight.numel() + 1) // 2, 1)
    assert state.nested and state.state2.blocksize == BLOCKSIZE2
    # bnb 0.50.2's AVX512 CPU dequantize_4bit indexes absmax per row (row * (cols // 64) +
    # col // 64), which is wrong when a row is a multiple of 16 but not of 64 values long: rows
    # then start mid-block and whole runs of values get a neighbouring block's scale. Asking
    # for the same data as one flat row sidesteps that (a single row has no row offset), so
    # the stored reference is bnb's own kernel on a shape it handles; the 2-D answer is kept
    # only to report the bug.
    flat_state = copy.copy(state)
    flat_state.shape = torch.Size([weight.numel()])
    dequantized = F.dequantize_4bit(packed, flat_state).view(weight.shape)
    assert dequantized.dtype == weight.dtype
    shaped = F.dequantize_4bit(packed, state)
    return {
        "shaped_dequantize_agrees": torch.equal(shaped, dequantized),
        "packed": packed.flatten().clone(),
        "absmax_codes": state.absmax.clone(),
        "absmax_scale": state.state2.absmax.clone(),
        "absmax_offset": state.offset.reshape(1).float().clone(),
        "dequantized": dequantized.float(),
        "nf4_code": state.code.float().clone(),
        "dynamic_code": state.state2.code.float().clone(),
    }


def decode_packed(packed, n, high_first):
    high, low = (packed >> 4).long(), (packed & 0xF).long()
    pairs = torch.stack([high, low] if high_first else [low, high], dim=1)
    return pairs.flatten()[:n]


def check_nibble_order(name, weight, out):
    """Proves from the data which nibble holds element 2i: only one order decodes to bnb's output.

    The signs of code4[q] must match the signs of the dequantised weight (which bnb computed
    itself), so this needs no absmax and no trust in the re-derivation.
    """
    dq_sign = torch.sign(out["dequantized"].reshape(-1))
    matches = {
        high_first: torch.equal(
            torch.sign(NF4_CODE[decode_packed(out["packed"], weight.numel(), high_first)]), dq_sign)
        for high_first in (True, False)
    }
    assert matches == {True: True, False: False}, f"{name}: nibble order check {matches}"


def divide_vs_reciprocal(weight):
    """How many full-block values would scale (and code) differently if bnb divided by absmax."""
    flat = weight.reshape(-1).float()
    full = flat[: flat.numel() - flat.numel() % BLOCKSIZE].view(-1, BLOCKSIZE)
    am = full.abs().amax(1, keepdim=True)
    mul, div = (full * (1.0 / am)).clamp(-1, 1), (full / am).clamp(-1, 1)
    return int((mul != div).sum()), int(
        (torch.bucketize(mul, NF4_MIDPOINTS) != torch.bucketize(div, NF4_MIDPOINTS)).sum())


def offset_variants(absmax):
    """Whether a mean summed in another order matches torch's fp32 mean (bnb's offset)."""
    sequential = torch.tensor(0.0)
    for value in absmax:
        sequential = sequential + value  # fp32, left to right
    torch_mean = absmax.mean()
    return {
        "sequential_fp32": bool(sequential / absmax.numel() == torch_mean),
        "fp64_rounded": bool(absmax.double().mean().float() == torch_mean),
    }


def make_nf4():
    cases = [(name, make_weight(shape, dtype, seed)) for name, shape, dtype, seed in NF4_CASES]
    cases.append(("ties", make_ties_weight()))

    route, bnb_version = "bitsandbytes", "not installed"
    try:
        # bnb 0.50 logs a warning on import about an optional AVX512-bf16 gemm kernel package;
        # quantize/dequantize do not use it.
        logging.getLogger("bitsandbytes").setLevel(logging.ERROR)
        import bitsandbytes

        bnb_version = bitsandbytes.__version__
        bnb_nf4(cases[0][1])
    except Exception as error:  # noqa: BLE001 - any failure means: use the re-derivation
        route = "re-derivation"
        print("!" * 100)
        print(f"!!! bitsandbytes is unavailable or cannot quantise here "
              f"({type(error).__name__}: {error}).")
        print("!!! FALLING BACK to this script's re-derivation of bnb's NF4 algorithm: the")
        print("!!! fixture is NOT produced by bitsandbytes. Metadata records route=re-derivation.")
        print("!" * 100)

    tensors = {}
    for name, weight in cases:
        mine = rederive_nf4(weight)
        if route == "bitsandbytes":
            out = bnb_nf4(weight)
            if not out.pop("shaped_dequantize_agrees"):
                print(f"  !!! {name}: bnb's dequantize_4bit with the 2-D shape "
                      f"{list(weight.shape)} is wrong on this CPU (see bnb_nf4); the fixture "
                      "holds the flat-shape result")
            assert torch.equal(out.pop("nf4_code"), NF4_CODE)
            assert torch.equal(out.pop("dynamic_code"), dynamic_map())
            for key in ("packed", "absmax_codes", "absmax_scale", "absmax_offset", "dequantized"):
                assert torch.equal(out[key], mine[key]), f"{name}.{key}: bnb != re-derivation"
        else:
            out = {k: mine[k] for k in
                   ("packed", "absmax_codes", "absmax_scale", "absmax_offset", "dequantized")}
        check_nibble_order(name, weight, out)

        block_absmax = mine["first_level_absmax"].repeat_interleave(BLOCKSIZE)[: weight.numel()]
        err = (out["dequantized"] - weight.float()).abs().reshape(-1)
        scaled_differs, codes_differ = divide_vs_reciprocal(weight)
        print(f"  {name}: {list(weight.shape)} {str(weight.dtype).removeprefix('torch.')}, "
              f"{mine['first_level_absmax'].numel()} blocks, "
              f"{out['absmax_scale'].numel()} absmax blocks; max |w - dq| = {err.max():.4f} "
              f"({(err / block_absmax).max():.3f} of its block absmax)")
        print(f"    absmax codes that are not the nearest dynamic code: "
              f"{mine['absmax_codes_off_nearest']} of {out['absmax_codes'].numel()}; "
              f"dividing instead of 1/absmax would change {scaled_differs} scaled values, "
              f"{codes_differ} codes; offset equals "
              f"{offset_variants(mine['first_level_absmax'])}")
        tensors[f"{name}.weight"] = weight
        for key in ("packed", "absmax_codes", "absmax_scale", "absmax_offset", "dequantized"):
            tensors[f"{name}.{key}"] = out[key]

    # The tie case must really exercise ties: each value on a midpoint gets the lower code.
    ties = decode_packed(tensors["ties.packed"], 96, high_first=True)
    for start in (0, 64):
        assert ties[start] == 0, ties
        assert torch.equal(ties[start + 1 : start + 16], torch.arange(15)), ties

    tensors["nf4_code"] = NF4_CODE
    tensors["dynamic_code"] = dynamic_map()
    metadata = {
        "route": route,
        "bitsandbytes_version": bnb_version,
        "torch_version": torch.__version__,
        "quant_type": "nf4",
        "blocksize": str(BLOCKSIZE),
        "absmax_blocksize": str(BLOCKSIZE2),
        "packing": "element 2i in the high nibble (byte >> 4), element 2i+1 in the low nibble",
        # Which cases bnb's 2-D dequantize gets wrong depends on the CPU (AVX512 or not), so it
        # is printed, not stored: the file must not depend on the machine that made it.
        "dequantized_from": ("bitsandbytes dequantize_4bit on the flattened shape"
                             if route == "bitsandbytes" else "re-derivation"),
    }
    NF4_OUT.mkdir(parents=True, exist_ok=True)
    path = NF4_OUT / "nf4_reference.safetensors"
    save_file(tensors, path, metadata)
    print(f"  route: {route} (bitsandbytes {bnb_version}); wrote {path.stat().st_size} bytes")


# --------------------------------------------------------------------------------------------
# LoRA
# --------------------------------------------------------------------------------------------


def randomize_lora(model, seed):
    """Replaces peft's init (B = 0, a no-op adapter) with N(0, 0.1^2) so the adapter matters."""
    gen = torch.Generator().manual_seed(seed)
    names = []
    with torch.no_grad():
        for name, param in model.named_parameters():
            if ".lora_A." in name or ".lora_B." in name:
                param.copy_(0.1 * torch.randn(param.shape, generator=gen, dtype=torch.float32))
                names.append(name)
    assert names, "no LoRA parameters found"


def lora_config(**overrides):
    from peft import LoraConfig

    return LoraConfig(r=4, lora_alpha=8, lora_dropout=0.0, bias="none", **overrides)


@torch.no_grad()
def logits_of(model, input_ids):
    return model(input_ids=input_ids).logits.float()


def load_base():
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(
        BASE_MODEL, dtype=torch.float32, attn_implementation="eager").eval()


def make_lora_llama():
    from peft import PeftModel, get_peft_model

    adapter_dir = LORA_OUT / "llama_tied_adapter"
    base = load_base()
    gen = torch.Generator().manual_seed(201)
    input_ids = torch.randint(0, base.config.vocab_size, (2, 12), generator=gen, dtype=torch.int64)
    plain_logits = logits_of(base, input_ids)

    torch.manual_seed(0)
    model = get_peft_model(base, lora_config(target_modules="all-linear", task_type="CAUSAL_LM"))
    randomize_lora(model, seed=202)
    model.eval()
    config = model.peft_config["default"]
    # peft expands "all-linear" into a set and saves list(set), whose order follows Python's
    # per-process string hashing; sorting keeps adapter_config.json byte-stable across runs.
    config.target_modules = sorted(config.target_modules)
    config.base_model_name_or_path = BASE_MODEL_NAME

    logits = logits_of(model, input_ids)
    with model.disable_adapter():
        base_logits = logits_of(model, input_ids)
    assert torch.equal(base_logits, plain_logits), "disable_adapter() is not the plain model"
    moved = (logits - base_logits).abs().max().item()
    assert moved > MATTERS, f"the adapter moves logits by only {moved:.2e}"

    shutil.rmtree(adapter_dir, ignore_errors=True)
    model.save_pretrained(adapter_dir)
    (adapter_dir / "README.md").unlink(missing_ok=True)  # peft's model-card template
    files = sorted(p.name for p in adapter_dir.iterdir())
    assert files == ["adapter_config.json", "adapter_model.safetensors"], files

    # The saved adapter alone, on a fresh base, must reproduce the logits: this is what the C++
    # loader will do.
    reloaded = PeftModel.from_pretrained(load_base(), adapter_dir).eval()
    assert torch.equal(logits_of(reloaded, input_ids), logits), "reloaded adapter differs"

    save_file({"input_ids": input_ids, "logits": logits.contiguous(),
               "base_logits": base_logits.contiguous()},
              LORA_OUT / "expected.safetensors",
              metadata={"peft_version": _version("peft"), "torch_version": torch.__version__,
                        "transformers_version": _version("transformers"),
                        "r": str(config.r), "lora_alpha": str(config.lora_alpha)})

    with safe_open(adapter_dir / "adapter_model.safetensors", "pt") as f:
        print("  adapter_model.safetensors:")
        for key in sorted(f.keys()):
            s = f.get_slice(key)
            print(f"    {key} {s.get_dtype()} {s.get_shape()}")
        print(f"    metadata: {f.metadata()}")
    print(f"  adapter moves logits by {moved:.3f}; max |logit| = {logits.abs().max():.3f}")
    print("  adapter_config.json:")
    print("    " + (adapter_dir / "adapter_config.json").read_text().replace("\n", "\n    "))


class OneLinear(torch.nn.Module):
    """peft only wraps submodules, so the bare Linear lives under the name `proj`."""

    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(24, 16, bias=False)

    def forward(self, x):
        return self.proj(x)


def make_lora_linear():
    from peft import get_peft_model

    torch.manual_seed(301)  # the Linear's own init is the base weight
    module = OneLinear()
    model = get_peft_model(module, lora_config(target_modules=["proj"]))
    randomize_lora(model, seed=302)
    model.eval()
    layer = model.base_model.model.proj
    weight = layer.base_layer.weight.detach().clone()
    lora_a = layer.lora_A["default"].weight.detach().clone()
    lora_b = layer.lora_B["default"].weight.detach().clone()
    scaling = layer.scaling["default"]
    assert scaling == 8 / 4, scaling

    gen = torch.Generator().manual_seed(303)
    x = torch.randn(3, 24, generator=gen, dtype=torch.float32)
    with torch.no_grad():
        y = model(x)
    # The formula the C++ implements (peft: base(x) + lora_B(lora_A(x)) * scaling). It matches
    # bit for bit here; allclose leaves room for BLAS builds that round differently.
    by_hand = x @ weight.T + (x @ lora_a.T @ lora_b.T) * scaling
    assert torch.allclose(y, by_hand, atol=1e-6, rtol=0), (y - by_hand).abs().max()
    assert (y - x @ weight.T).abs().max() > MATTERS

    save_file({"x": x, "weight": weight, "lora_A": lora_a, "lora_B": lora_b, "y": y.contiguous()},
              LORA_OUT / "lora_linear.safetensors",
              metadata={"r": "4", "lora_alpha": "8", "scaling": str(scaling),
                        "peft_version": _version("peft"), "torch_version": torch.__version__})
    print(f"  y = x W^T + {scaling} * (x A^T) B^T; |lora term| max "
          f"{(y - x @ weight.T).abs().max():.3f}")


def _version(package):
    from importlib.metadata import version

    return version(package)


def main():
    torch.use_deterministic_algorithms(True)
    print("nf4")
    make_nf4()
    LORA_OUT.mkdir(parents=True, exist_ok=True)
    print("lora_llama")
    make_lora_llama()
    print("lora_linear")
    make_lora_linear()
    for path in sorted((NF4_OUT.glob("*.safetensors"))) + sorted(LORA_OUT.rglob("*.safetensors")):
        assert path.stat().st_size < 1 << 20, f"{path} is over 1 MB"


if __name__ == "__main__":
    main()
