#!/usr/bin/env python3
"""Turns the JSON of experiments/bench/side_by_side_gpu.sh into its Markdown table (standard
library only).

    side_by_side_gpu_table.py WORK_DIR COMMAND > side_by_side_gpu.md

WORK_DIR holds shapes.txt (the shapes in run order), machine.txt, citeforge_version.txt,
notes.txt (steps that failed or ran out of time; may be absent) and a folder per shape with
batch.json (the shape and the workload), citeforge_*.json and python_*.json (one file per part
on the CPU, one for all parts on a GPU). A missing number is "-"."""

import json
import sys
from pathlib import Path

# Dense bf16 tensor-core peaks (NVIDIA's data sheets, without sparsity), by what the device
# name contains; the first match wins.
PEAK_BF16_TFLOPS = [("H100 PCIe", 756.0), ("H100 NVL", 835.0), ("H200 NVL", 835.0),
                    ("H100", 989.0), ("H200", 989.0)]


def read_json(path):
    return json.loads(path.read_text()) if path.is_file() and path.stat().st_size else {}


def merged(folder, prefix):
    """The JSON objects of one side's files, merged: the CPU runs one part per file, and each
    part's results sit under a key of their own."""
    out = {}
    for path in sorted(folder.glob(f"{prefix}_*.json")):
        out.update(read_json(path))
    return out


def fmt(x, digits=3):
    """Three significant digits, without exponents (1010, 36.4, 0.135)."""
    if x is None:
        return "-"
    if abs(x) >= 10 ** digits:
        return f"{x:,.0f}"
    return f"{float(f'{x:.{digits}g}'):g}"


def ratio(faster, slower):
    return f"{faster / slower:.2f}x" if faster and slower else "-"


def get(obj, *keys):
    for key in keys:
        if not isinstance(obj, dict) or key not in obj:
            return None
        obj = obj[key]
    return obj


def peak_tflops(gpu):
    for name, tflops in PEAK_BF16_TFLOPS:
        if gpu and name in gpu:
            return tflops
    return None


def sft_flops_per_token(shape, seq):
    """A LoRA step over a frozen base: the base's matmuls forward and for the activation
    gradients (no weight gradients: 4 per weight), the adapters forward and both gradients (6),
    attention's score and value matmuls forward and backward (3 x 4 per query dimension per key,
    counted over the whole sequence as PaLM's MFU does)."""
    base = shape["block_matmul_params"] + shape["lm_head_params"]
    return 4 * base + 6 * shape["lora_params"] + 12 * shape["layers"] * shape["q_dim"] * seq


def prefill_flops_per_token(shape, seq):
    """The blocks' matmuls forward and attention's (the LM head runs on the last position only)."""
    return 2 * shape["block_matmul_params"] + 4 * shape["layers"] * shape["q_dim"] * seq


def mfu(tokens_per_s, flops_per_token, peak):
    return f"{100 * tokens_per_s * flops_per_token / (peak * 1e12):.1f}%" \
        if tokens_per_s and peak else "-"


def shape_heading(name, shape):
    return (f"## {name}: hidden {shape['hidden']}, {shape['layers']} layers, {shape['heads']} "
            f"heads / {shape['kv_heads']} KV heads, MLP {shape['mlp']}, vocab {shape['vocab']} "
            f"({shape['params'] / 1e6:,.1f}M parameters; LoRA r 64 on all seven projections: "
            f"{shape['lora_params'] / 1e6:,.1f}M)")


def shape_section(name, folder, peak):
    batch = read_json(folder / "batch.json")
    shape, settings = batch.get("shape"), batch.get("settings", {})
    if not shape:
        return [f"## {name}", "", "No results (see the notes above).", ""], {}, {}
    cf, py = merged(folder, "citeforge"), merged(folder, "python")
    sft_rank = get(py, "sft_step", "ranks", f"r{settings['lora_r']}") or {}
    seq, prompt = len(batch["sequences"][0]["ids"]), settings["prompt_tokens"]
    on_gpu = cf.get("device") == "cuda" or py.get("device") == "cuda"
    bf16 = cf.get("dtype") == "bfloat16" and py.get("dtype") == "bfloat16"
    peak = peak if on_gpu and bf16 else None
    rows = []

    def row(label, mine, theirs, speedup, mem_cf=None, mem_py=None, flops=None):
        rows.append((label, fmt(mine), fmt(theirs), speedup, fmt(mem_cf, 4), fmt(mem_py, 4),
                     mfu(mine, flops, peak) if flops else "-",
                     mfu(theirs, flops, peak) if flops else "-"))

    sft_cf = cf.get("sft", {})
    row(f"SFT step, {len(batch['sequences'])} x {seq} tokens (loss on the last "
        f"{settings['sft_loss_tokens']}): tokens/s", sft_cf.get("tokens_per_s"),
        sft_rank.get("tokens_per_s"), ratio(sft_cf.get("tokens_per_s"), sft_rank.get("tokens_per_s")),
        sft_cf.get("peak_memory_mib"), get(py, "sft_step", "peak_memory_mib"),
        sft_flops_per_token(shape, seq))
    gen_cf = cf.get("generate", {})
    gen_py = get(py, "generate", "transformers") or {}
    for key, what, flops in (("prefill_tokens_per_s", "prefill", prefill_flops_per_token(
            shape, prompt)), ("decode_tokens_per_s", "sampled decode", None)):
        for b in settings["gen_batches"]:
            mine = get(gen_cf, "batches", str(b), key)
            theirs = get(gen_py, "batches", f"batch_{b}", key)
            unit = "new tokens/s" if what == "sampled decode" else "tokens/s"
            row(f"{what}, batch {b}: {unit}", mine, theirs, ratio(mine, theirs),
                gen_cf.get("peak_memory_mib"), gen_py.get("peak_memory_mib"), flops)
    ppo_cf, ppo_py = cf.get("ppo", {}), py.get("ppo_iteration", {})
    py_s = get(ppo_py, "median_s") or {}
    py_learner = (py_s["reference_value_s"] + py_s["update_s"]) if py_s else None
    row(f"PPO iteration ({settings['ppo_batch']} prompts, {settings['new_tokens']} new tokens, "
        f"minibatch {settings['ppo_minibatch']}, {settings['ppo_epochs']} epoch): s",
        ppo_cf.get("seconds"), py_s.get("total_s"), ratio(py_s.get("total_s"),
                                                          ppo_cf.get("seconds")),
        ppo_cf.get("peak_memory_mib"), ppo_py.get("peak_memory_mib"))
    row("  PPO rollout: s", ppo_cf.get("rollout_s"), py_s.get("rollout_s"),
        ratio(py_s.get("rollout_s"), ppo_cf.get("rollout_s")))
    row("  PPO learner (scoring pass + update): s", ppo_cf.get("learner_s"), py_learner,
        ratio(py_learner, ppo_cf.get("learner_s")))

    dtypes = (f"citeforge: NF4 base, {cf.get('dtype', '-')} compute, LoRA in "
              f"{sft_cf.get('adapter_dtype', '-')}; transformers + peft: dense "
              f"{py.get('dtype', '-')} base, LoRA in {sft_rank.get('adapter_dtype', '-')}. "
              f"Model load: citeforge {fmt(cf.get('model_load_s'))} s (NF4 quantisation "
              f"included), Python {fmt(get(py, 'sft_step', 'model_load_s'))} s.")
    lines = [shape_heading(name, shape), "", dtypes, ""]
    lines += ["| workload | citeforge | transformers + peft | speed-up of citeforge | "
              "citeforge peak memory (MiB) | Python peak memory (MiB) | citeforge MFU | "
              "Python MFU |", "|" + "---|" * 8]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    lines.append("")
    return lines, cf, py


def main():
    work, command = Path(sys.argv[1]), sys.argv[2]
    shapes = (work / "shapes.txt").read_text().split() if (work / "shapes.txt").is_file() else []
    machine = (work / "machine.txt").read_text().strip() if (work / "machine.txt").is_file() \
        else "-"
    citeforge_version = (work / "citeforge_version.txt").read_text().strip() \
        if (work / "citeforge_version.txt").is_file() else "-"
    notes = (work / "notes.txt").read_text().strip().splitlines() \
        if (work / "notes.txt").is_file() else []

    sections, sides = [], []
    py_any = {}
    gpu = None
    for name in shapes:
        py_gpu = None
        for path in sorted((work / name).glob("python_*.json")):
            data = read_json(path)
            py_any = py_any or data
            py_gpu = py_gpu or get(data, "machine", "gpu")
        gpu = gpu or py_gpu
    peak = peak_tflops(gpu)
    for name in shapes:
        lines, cf, py = shape_section(name, work / name, peak)
        sections += lines
        sides.append((cf, py))
    cf_any = next((cf for cf, _ in sides if cf), {})
    versions = py_any.get("versions", {})
    device = cf_any.get("device") or py_any.get("device") or "-"
    settings = {}
    for name in shapes:
        settings = read_json(work / name / "batch.json").get("settings") or settings
    reps = cf_any.get("reps") or py_any.get("sft_step", {}).get("reps", "-")
    seed = next((read_json(work / n / "batch.json").get("seed") for n in shapes), None)

    out = [f"# citeforge next to transformers + peft on random weights ({device})", ""]
    out.append(f"Command: `{command}`.")
    out.append("")
    out.append(f"Machine: {machine}.")
    out.append("")
    out.append("Versions: %s; torch %s%s, transformers %s, peft %s, Python %s." % (
        citeforge_version, versions.get("torch", "-"),
        f" (CUDA {versions['torch_cuda']})" if versions.get("torch_cuda") else "",
        versions.get("transformers", "-"), versions.get("peft", "-"),
        versions.get("python", "-")))
    out.append("")
    out.append(
        "Both sides run the same checkpoint of random weights (drawn as HF initialises a Llama: "
        f"normal, std 0.02, norms at 1; seed {seed}; stored in bf16) on the same random token ids "
        "and shapes, in the same compute dtype. citeforge's base is NF4 (QLoRA), its LoRA "
        "adapters fp32; the Python side has no bitsandbytes, so its base is dense and its "
        "adapters are in the base's dtype. LoRA r %s, alpha %s, dropout 0 on q, k, v, o, gate, "
        "up and down. Generation runs the base alone, sampling at temperature %s (top-k and top-p "
        "off), exactly the new tokens asked for (EOS never stops a row); prefill = one pass over "
        "the prompt batch. PPO: rollout at the same temperature, scoring pass (policy, values, "
        "reference with the adapters off), minibatch updates with AdamW; the Python side runs "
        "TRL's PPO steps written out in PyTorch + peft; the stand-in reward is the share of even "
        "ids in an answer on both sides. Every number is the median of %s after a warm-up; a "
        "speed-up above 1 means citeforge is faster." % (
            settings.get("lora_r", "-"), settings.get("lora_alpha", "-"),
            settings.get("temperature", "-"), "1 repetition" if reps == 1
            else f"{reps} repetitions"))
    out.append("")
    memory = cf_any.get("peak_memory_kind", "-")
    out.append(f"Peak memory: {memory}, per part (the generation rows share their part's).")
    out.append("")
    if peak:
        out.append(
            f"MFU: model FLOPs per second over {peak:g} TFLOPs, the dense bf16 peak of {gpu} "
            "(without sparsity). An SFT token counts 4 FLOPs per frozen base weight (forward and "
            "activation gradients, no weight gradients; LM head included), 6 per LoRA weight and "
            "12 x layers x query width x sequence length for attention; a prefill token 2 per "
            "block weight and 4 x layers x query width x prompt length.")
    else:
        out.append("MFU: - (no known dense bf16 peak for this device and dtype).")
    out.append("")
    if notes:
        out.append("Notes: " + "; ".join(notes) + ".")
        out.append("")
    out += sections
    print("\n".join(out))


if __name__ == "__main__":
    main()
