#!/usr/bin/env python3
"""The Python side of the side-by-side CPU benchmark on SmolLM2-135M-Instruct.

It measures, on the CPU with a given thread count, what citeforge's C++ benchmarks measure on
the same model, with the usual Python stack:

  sft_step       one QLoRA-style SFT step with transformers + peft: LoRA on every projection
                 (q,k,v,o,gate,up,down), r 16 and r 64, alpha 16, dropout 0, a batch of token id
                 sequences whose loss covers only the answer tokens, AdamW lr 1e-4. The base is
                 fp32: Python has no NF4 on the CPU (bitsandbytes' 4-bit layers need a GPU).
  generate       prefill and decode tokens/s with transformers' generate (greedy, KV cache) at
                 batch 1 and batch 32 (--part generate), and the same with llama.cpp through
                 llama-cpp-python on the model's own Q4_1 GGUF at batch 1 (--part llamacpp).
  ppo_iteration  one PPO iteration on the same model: rollout (sampling at temperature 0.7),
                 scoring pass (policy log-probs + value head, reference log-probs with the
                 adapter disabled), ppo_epochs x minibatch clipped updates. The installed TRL has
                 no PPOTrainer (see ppo_iteration.trl in the JSON), so the steps are written out
                 in plain PyTorch + peft, following TRL's PPO.

It prints ONE JSON object on stdout; progress goes to stderr. `--part all` runs every part in a
fresh subprocess of this script, so that each part's `peak_rss_mib` (getrusage ru_maxrss) is its
own and not the maximum over everything run before it in one process.

Token ids: with --batch-file the C++ side hands both sides the very same ids:
    {"sequences": [{"ids": [...], "loss_mask": [...]}, ...],   SFT batch (loss where mask is 1)
     "prompts":   [[ids...], ...]}                              generation and PPO prompts
Without it a deterministic batch is cut from the tokenizer's ids of fixed English text
(prompt --sft-prompt-tokens + answer --answer-tokens for SFT, --prompt-tokens for prompts).

Random weights of a given shape (experiments/bench/side_by_side_gpu.sh): --write-random-model
DIR --shape small|1b|7b writes DIR/model (config.json + model.safetensors, bf16, seeded) and
DIR/batch.json (seeded random token ids and the workload's settings); --model-dir DIR/model
--batch-file DIR/batch.json then runs the parts on that model, on --device cpu or cuda, with no
tokenizer (pad id 0, PPO's stand-in reward read from the token ids), and --part may name several
parts (sft,generate,ppo), run in one process on one loaded model.

Set up with the commands at the top of requirements-side-by-side.txt beside this file (a venv
in ~/.cache/citeforge/bench-venv; llama-cpp-python is compiled without AMX, which crashes here).

Run (from the repository root):
    ~/.cache/citeforge/bench-venv/bin/python experiments/bench/side_by_side_python.py \
        [--gguf weights/SmolLM2-135M-Instruct.Q4_1.gguf] [--threads 2] [--reps 5] \
        [--part all|sft|generate|llamacpp|ppo] [--batch-file FILE.json] \
        [--prompt-tokens 300] [--new-tokens 40] [--batch 8] [--gen-batches 1,32]
    .../python experiments/bench/side_by_side_python.py --write-random-model DIR --shape 1b \
        [--device cuda] [--seed 1234]
    .../python experiments/bench/side_by_side_python.py --model-dir DIR/model \
        --batch-file DIR/batch.json --device cuda --dtype bfloat16 --lora-dtype base \
        --part sft,generate,ppo
"""

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEFAULT_GGUF = REPO / "weights" / "SmolLM2-135M-Instruct.Q4_1.gguf"
PARTS = ("sft", "generate", "llamacpp", "ppo")
# Every linear layer of a Llama block, as citeforge's QLoRA attaches adapters to.
PROJECTIONS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
LORA_ALPHA = 16

# Fixed English text for the synthetic batch: retrieval-style passages with numbered sources,
# so the ids look like what citeforge trains on. Only its token ids matter to the timings.
SENTENCES = [
    "The river rises in the northern hills and flows south through three market towns.",
    "Its water was used to drive mills for grinding grain until the late nineteenth century.",
    "A survey in 1952 counted more than forty species of fish between the source and the sea.",
    "The old stone bridge was rebuilt after a flood damaged two of its five arches.",
    "Farmers along the lower valley grow barley, potatoes and apples on the fertile soil.",
    "The town council publishes water quality reports every spring and every autumn.",
    "Several studies found that the number of otters has grown since the factories closed.",
    "A footpath follows the bank for most of its length and is popular with walkers.",
    "The first railway station in the valley opened in 1861 and closed a century later.",
    "Local historians disagree about the origin of the river's name.",
    "Heavy rain in winter often raises the level of the river by more than two metres.",
    "The museum in the largest town keeps maps of the valley drawn over four hundred years.",
]
QUESTION = "Question: What do the documents say about the river? Answer with citations."

# Random-weight shapes for side_by_side_gpu.sh: a Llama block each, and the workload on it.
# `prompt` is the generation and PPO prompt length and the SFT sequence length; SFT's loss
# covers the last `answer` tokens of each sequence.
SHAPES = {
    "small": dict(hidden=64, layers=2, heads=4, kv_heads=2, mlp=128, vocab=256, prompt=32,
                  answer=8, new_tokens=16),
    "1b": dict(hidden=2048, layers=16, heads=16, kv_heads=8, mlp=5632, vocab=1024, prompt=512,
               answer=128, new_tokens=32),
    "7b": dict(hidden=4096, layers=32, heads=32, kv_heads=8, mlp=14336, vocab=32000, prompt=512,
               answer=128, new_tokens=32),
}
# The workload every shape shares: SFT on 8 sequences, sampled decoding at batch 1 and 64, PPO
# on 8 prompts in minibatches of 4 for one epoch, LoRA r 64 (alpha 16) on all seven projections.
RANDOM_WORKLOAD = dict(sft_batch=8, gen_batches=[1, 64], temperature=0.7, ppo_batch=8,
                       ppo_minibatch=4, ppo_epochs=1, lora_r=64, lora_alpha=LORA_ALPHA)
SPECIAL_IDS = 3  # ids 0 (pad), 1 (BOS) and 2 (EOS) never occur in the random batch


def log(message):
    print(message, file=sys.stderr, flush=True)


def package_versions():
    """Versions from the installed distributions' metadata: no import, so the llama.cpp part
    does not pull torch into its process (that would inflate its peak RSS)."""
    names = {"torch": "torch", "transformers": "transformers", "peft": "peft", "trl": "trl",
             "gguf": "gguf", "llama_cpp": "llama_cpp_python", "accelerate": "accelerate",
             "tokenizers": "tokenizers", "numpy": "numpy"}
    out = {}
    for key, dist in names.items():
        try:
            out[key] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[key] = None
    out["python"] = sys.version.split()[0]
    return out


def machine_info():
    cpu = None
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    # The load average says whether something else was running: timings on a busy machine
    # are not worth recording.
    return {"cpu": cpu, "logical_cpus": os.cpu_count(), "loadavg_at_start": list(os.getloadavg())}


def peak_rss_mib():
    # On Linux ru_maxrss is in KiB. It survives fork and exec: a child starts from its parent's
    # high-water mark at the fork. That is why no process that starts a part (the --part all
    # driver, or a single part's own process before it runs) imports torch or loads anything
    # large first; the synthetic batch is made in a separate helper process (make_batch_file).
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1)


def median(values):
    return statistics.median(values) if values else None


# ----------------------------------------------------------------------------------------------
# The batch: from a file, or made from the tokenizer on fixed text.


def load_tokenizer(gguf):
    from transformers import AutoTokenizer
    return AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)


def make_synthetic_batch(tokenizer, args):
    """A deterministic batch: one long id stream from the fixed text, cut into windows at fixed
    offsets, so every run (and every machine) gets the very same ids."""
    needed = max(args.batch, max(args.gen_batches)) * 37 + args.sft_prompt_tokens \
        + args.answer_tokens + args.prompt_tokens + 64
    ids, k = [], 0
    while len(ids) < needed:
        passage = f"Document [{k % 7 + 1}]: " + " ".join(
            SENTENCES[(k * 5 + j) % len(SENTENCES)] for j in range(4))
        ids += tokenizer.encode(passage + "\n" + (QUESTION + "\n" if k % 3 == 2 else ""),
                                add_special_tokens=False)
        k += 1
    sequences = []
    for i in range(args.batch):
        start = i * 37
        prompt = ids[start:start + args.sft_prompt_tokens]
        answer = ids[start + args.sft_prompt_tokens:
                     start + args.sft_prompt_tokens + args.answer_tokens]
        sequences.append({"ids": prompt + answer,
                          "loss_mask": [0] * len(prompt) + [1] * len(answer)})
    count = max(args.batch, max(args.gen_batches))
    prompts = [ids[i * 37 + 11:i * 37 + 11 + args.prompt_tokens] for i in range(count)]
    return {"sequences": sequences, "prompts": prompts}


def make_batch_file(args, path):
    """Writes the synthetic batch to `path` from a helper process: making it needs the HF
    tokenizer (and so torch), which would otherwise sit in the measured process's peak RSS
    (the llama.cpp part uses no torch at all)."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--make-batch", str(path),
           "--gguf", str(args.gguf)]
    for name in ("batch", "prompt_tokens", "sft_prompt_tokens", "answer_tokens"):
        cmd += ["--" + name.replace("_", "-"), str(getattr(args, name))]
    cmd += ["--gen-batches", ",".join(map(str, args.gen_batches))]
    # Its stdout goes to our stderr: our stdout carries only the JSON.
    subprocess.run(cmd, check=True, stdout=sys.stderr)


def read_batch_file(path):
    batch = json.loads(Path(path).read_text())
    for i, seq in enumerate(batch["sequences"]):
        if len(seq["ids"]) != len(seq["loss_mask"]):
            raise SystemExit(f"{path}: sequence {i} has {len(seq['ids'])} ids but "
                             f"{len(seq['loss_mask'])} loss_mask entries")
    if not batch.get("prompts"):
        raise SystemExit(f"{path}: no prompts")
    return batch


def describe_batch(batch, source):
    seq_lens = [len(s["ids"]) for s in batch["sequences"]]
    answer = [sum(s["loss_mask"]) for s in batch["sequences"]]
    prompt_lens = [len(p) for p in batch["prompts"]]
    return {"source": source,
            "sft_sequences": len(seq_lens),
            "sft_sequence_tokens_min_max": [min(seq_lens), max(seq_lens)],
            "sft_loss_tokens_total": sum(answer),
            "prompts": len(prompt_lens),
            "prompt_tokens_min_max": [min(prompt_lens), max(prompt_lens)]}


def apply_batch_settings(args, batch):
    """A random-weight batch file (--write-random-model) carries its workload, so that both sides
    read it from one place: it overrides the flags that would say it otherwise."""
    w = batch.get("settings")
    if not w:
        return
    args.new_tokens = w["new_tokens"]
    args.gen_batches = list(w["gen_batches"])
    args.batch = w["ppo_batch"]
    args.ppo_minibatch = w["ppo_minibatch"]
    args.ppo_epochs = w["ppo_epochs"]
    args.ppo_lora_r = w["lora_r"]
    args.lora_ranks = [w["lora_r"]]
    args.decode_temperature = w["temperature"]


def take_prompts(batch, count):
    """The first `count` prompts, cycling when the batch holds fewer (batch 32 from a file of 8)."""
    prompts = batch["prompts"]
    return [prompts[i % len(prompts)] for i in range(count)]


# ----------------------------------------------------------------------------------------------
# Random weights of a given shape (--write-random-model), for side_by_side_gpu.sh


def shape_summary(name):
    """The shape and the parameter counts the table's MFU needs: the blocks' matmul weights, the
    LM head, the embeddings and the LoRA adapters (r on all seven projections)."""
    s = SHAPES[name]
    head_dim = s["hidden"] // s["heads"]
    d, f, r = s["hidden"], s["mlp"], RANDOM_WORKLOAD["lora_r"]
    q, kv = s["heads"] * head_dim, s["kv_heads"] * head_dim
    projections = {"q_proj": (q, d), "k_proj": (kv, d), "v_proj": (kv, d), "o_proj": (d, q),
                   "gate_proj": (f, d), "up_proj": (f, d), "down_proj": (d, f)}
    block = sum(o * i for o, i in projections.values())
    lora = sum(r * (o + i) for o, i in projections.values())
    return dict(s, shape=name, head_dim=head_dim, q_dim=q, kv_dim=kv,
                block_matmul_params=block * s["layers"], lm_head_params=d * s["vocab"],
                embedding_params=d * s["vocab"], lora_params=lora * s["layers"],
                params=(block + 2 * d) * s["layers"] + 2 * d * s["vocab"] + d,
                projections=projections)


def random_model_config(summary):
    """A Llama config.json written out by hand, so that it reads the same in every transformers
    release (and in citeforge's reader) whatever the installed one would write."""
    return {"architectures": ["LlamaForCausalLM"], "model_type": "llama",
            "hidden_size": summary["hidden"], "intermediate_size": summary["mlp"],
            "num_hidden_layers": summary["layers"], "num_attention_heads": summary["heads"],
            "num_key_value_heads": summary["kv_heads"], "head_dim": summary["head_dim"],
            "hidden_act": "silu", "max_position_embeddings": 2048, "rms_norm_eps": 1e-5,
            "rope_theta": 10000.0, "vocab_size": summary["vocab"], "tie_word_embeddings": False,
            "attention_bias": False, "mlp_bias": False, "bos_token_id": 1, "eos_token_id": 2,
            "pad_token_id": 0, "torch_dtype": "bfloat16"}


def write_random_model(args):
    """DIR/model: config.json + model.safetensors in bf16, drawn as HF initialises a Llama
    (normal std 0.02, norms at 1) from --seed on --device (a 7B shape draws in seconds on a
    GPU); DIR/batch.json: random token ids from --seed + 1 and the workload's settings."""
    import torch
    from safetensors.torch import save_file
    start = time.perf_counter()
    summary = shape_summary(args.shape)
    model_dir = args.write_random_model / "model"
    model_dir.mkdir(parents=True, exist_ok=True)
    (model_dir / "config.json").write_text(json.dumps(random_model_config(summary), indent=1))
    device = torch.device(args.device)
    generator = torch.Generator(device=device).manual_seed(args.seed)

    def normal(*shape):
        w = torch.empty(shape, device=device).normal_(0.0, 0.02, generator=generator)
        return w.to(torch.bfloat16).cpu()

    d, vocab = summary["hidden"], summary["vocab"]
    tensors = {"model.embed_tokens.weight": normal(vocab, d)}
    for layer in range(summary["layers"]):
        prefix = f"model.layers.{layer}."
        for name, (rows, cols) in summary["projections"].items():
            module = "mlp" if name in ("gate_proj", "up_proj", "down_proj") else "self_attn"
            tensors[f"{prefix}{module}.{name}.weight"] = normal(rows, cols)
        for norm in ("input_layernorm", "post_attention_layernorm"):
            tensors[f"{prefix}{norm}.weight"] = torch.ones(d, dtype=torch.bfloat16)
    tensors["model.norm.weight"] = torch.ones(d, dtype=torch.bfloat16)
    tensors["lm_head.weight"] = normal(vocab, d)
    save_file(tensors, str(model_dir / "model.safetensors"), metadata={"format": "pt"})
    del tensors

    ids = torch.Generator().manual_seed(args.seed + 1)

    def sequence(n):  # BOS, then ids that are none of the special ones
        return [1] + torch.randint(SPECIAL_IDS, vocab, (n - 1,), generator=ids).tolist()

    w = RANDOM_WORKLOAD
    prompt, answer = summary["prompt"], summary["answer"]
    batch = {"shape": {k: v for k, v in summary.items() if k != "projections"},
             "seed": args.seed,
             "sequences": [{"ids": sequence(prompt),
                            "loss_mask": [0] * (prompt - answer) + [1] * answer}
                           for _ in range(w["sft_batch"])],
             "prompts": [sequence(prompt) for _ in range(max(w["gen_batches"]))],
             "settings": dict(w, new_tokens=summary["new_tokens"], prompt_tokens=prompt,
                              sft_loss_tokens=answer)}
    (args.write_random_model / "batch.json").write_text(json.dumps(batch))
    log(f"random {args.shape} model ({summary['params'] / 1e6:.1f}M parameters) and batch in "
        f"{args.write_random_model} in {time.perf_counter() - start:.1f} s")


# ----------------------------------------------------------------------------------------------
# transformers / peft helpers


def is_cuda(device):
    return str(device).startswith("cuda")


def sync(device):
    """Waits for the device's queued work, so that a timer reads when it ended (CUDA runs
    asynchronously; on the CPU there is nothing to wait for)."""
    if is_cuda(device):
        import torch
        torch.cuda.synchronize()


def reset_peak_memory(device):
    if is_cuda(device):
        import torch
        torch.cuda.reset_peak_memory_stats()


def peak_memory_mib(device):
    """On a GPU the caching allocator's peak of allocated bytes since the part began; on the CPU
    the process's peak RSS (one part per process there)."""
    if is_cuda(device):
        import torch
        return round(torch.cuda.max_memory_allocated() / 2**20, 1)
    return peak_rss_mib()


def token_specials(args):
    """(pad id, EOS id, tokenizer): the GGUF's, or for a --model-dir of random weights no
    tokenizer at all, pad 0 and the config's EOS."""
    if args.model_dir:
        eos = json.loads((args.model_dir / "config.json").read_text()).get("eos_token_id", 2)
        return 0, (eos[0] if isinstance(eos, list) else eos), None
    tokenizer = load_tokenizer(args.gguf)
    pad_id, eos_id = special_ids(tokenizer)
    return pad_id, eos_id, tokenizer


_LOADED = {}


def load_hf_model(args):
    """The GGUF loaded by transformers, which dequantises the Q4_1 weights to --dtype, or the
    --model-dir checkpoint, on --device. Loaded once per process: the parts of a --part list
    share it (SFT takes its adapters off again; PPO, which keeps them, runs last)."""
    if "model" in _LOADED:
        return _LOADED["model"], 0.0
    import torch
    from transformers import AutoModelForCausalLM
    start = time.perf_counter()
    dtype = getattr(torch, args.dtype)
    if args.model_dir:
        model = AutoModelForCausalLM.from_pretrained(str(args.model_dir), dtype=dtype,
                                                     attn_implementation=args.attn)
    else:
        model = AutoModelForCausalLM.from_pretrained(
            str(args.gguf.parent), gguf_file=args.gguf.name, dtype=dtype,
            attn_implementation=args.attn)
    # .to() with the dtype too: a transformers release that does not know `dtype=` loads fp32.
    model.to(device=args.device, dtype=dtype)
    model.eval()
    sync(args.device)
    _LOADED["model"] = model
    return model, time.perf_counter() - start


def special_ids(tokenizer):
    eos = tokenizer.eos_token_id
    # A pad id is needed to batch prompts of different lengths; EOS serves when there is none.
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else eos
    return pad, eos


def left_pad(prompts, pad_id):
    """Prompts left-padded (generation appends on the right) and their attention mask; the
    callers derive position ids from the mask, as generate does."""
    import torch
    width = max(len(p) for p in prompts)
    ids = torch.full((len(prompts), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(prompts), width), dtype=torch.long)
    for i, p in enumerate(prompts):
        ids[i, width - len(p):] = torch.tensor(p, dtype=torch.long)
        mask[i, width - len(p):] = 1
    return ids, mask


def sft_tensors(sequences, pad_id):
    """Right-padded ids, attention mask and labels (-100 wherever no loss is taken: prompt
    tokens and padding). transformers shifts labels by one inside the loss."""
    import torch
    width = max(len(s["ids"]) for s in sequences)
    ids = torch.full((len(sequences), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(sequences), width), dtype=torch.long)
    labels = torch.full((len(sequences), width), -100, dtype=torch.long)
    for i, s in enumerate(sequences):
        n = len(s["ids"])
        row = torch.tensor(s["ids"], dtype=torch.long)
        ids[i, :n] = row
        mask[i, :n] = 1
        keep = torch.tensor(s["loss_mask"], dtype=torch.bool)
        labels[i, :n] = torch.where(keep, row, torch.full_like(row, -100))
    return ids, mask, labels


def lora_config(rank):
    from peft import LoraConfig
    return LoraConfig(r=rank, lora_alpha=LORA_ALPHA, lora_dropout=0.0, bias="none",
                      target_modules=PROJECTIONS, task_type="CAUSAL_LM")


def with_lora(model, rank, args):
    """peft's LoRA on every projection; --lora-dtype base keeps the adapters in the base's dtype
    (peft's default, autocast_adapter_dtype, lifts a bf16 base's adapters to fp32)."""
    from peft import get_peft_model
    return get_peft_model(model, lora_config(rank),
                          autocast_adapter_dtype=args.lora_dtype == "float32")


def adapter_dtype(model):
    return next(str(p.dtype).replace("torch.", "") for n, p in model.named_parameters()
                if "lora_" in n)


def base_description(args):
    if args.model_dir:
        return f"{args.dtype} (random weights, {args.model_dir})"
    return f"{args.dtype} (Q4_1 GGUF dequantised by transformers)"


# ----------------------------------------------------------------------------------------------
# Part: SFT step


def sft_note(args):
    if args.model_dir:
        return ("dense base: no bitsandbytes on the Python side, so this is LoRA over a dense "
                f"{args.dtype} base where citeforge's QLoRA has an NF4 base; adapters in "
                f"{'the base dtype' if args.lora_dtype == 'base' else 'fp32'}")
    return ("dense base: Python has no NF4 on the CPU (bitsandbytes 4-bit needs a GPU), so this "
            "is LoRA over a dense base where citeforge's QLoRA has an NF4 base; peft keeps the "
            "adapters in fp32 on a bf16 base")


def run_sft(args, batch):
    import torch
    pad_id, _, _ = token_specials(args)
    model, load_s = load_hf_model(args)
    ids, mask, labels = (t.to(args.device) for t in sft_tensors(batch["sequences"], pad_id))
    tokens = int(mask.sum())
    loss_tokens = int((labels != -100).sum())
    log(f"sft: batch {tuple(ids.shape)} ({tokens} tokens, {loss_tokens} with loss)")
    ranks = {}
    for rank in args.lora_ranks:
        peft_model = with_lora(model, rank, args)
        peft_model.train()  # dropout is 0 everywhere, so train() changes no arithmetic
        params = [p for p in peft_model.parameters() if p.requires_grad]
        optimizer = torch.optim.AdamW(params, lr=1e-4)
        times, losses = [], []
        for rep in range(args.reps + 1):  # rep 0 warms up (allocator, first AdamW state)
            sync(args.device)
            start = time.perf_counter()
            loss = peft_model(input_ids=ids, attention_mask=mask, labels=labels).loss
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            sync(args.device)
            elapsed = time.perf_counter() - start
            losses.append(loss.item())
            if rep > 0:
                times.append(elapsed)
        step_s = median(times)
        ranks[f"r{rank}"] = {
            "lora_r": rank, "lora_alpha": LORA_ALPHA, "lora_dropout": 0.0,
            "trainable_params": sum(p.numel() for p in params),
            "adapter_dtype": adapter_dtype(peft_model),
            "median_step_s": step_s, "step_s_all": times,
            "tokens_per_s": tokens / step_s,
            "loss_first_last": [losses[0], losses[-1]]}
        log(f"sft r{rank}: median {step_s:.3f} s/step")
        # Strip the adapters so the next rank starts from the bare base, without reloading it.
        model = peft_model.unload()
        del peft_model, optimizer, params
    return {
        "framework": "transformers + peft",
        "note": sft_note(args),
        "base_dtype": base_description(args),
        "attn_implementation": args.attn,
        "target_modules": PROJECTIONS,
        "optimizer": "torch.optim.AdamW lr 1e-4 (other settings torch defaults)",
        "batch_shape": list(ids.shape), "tokens_per_step": tokens, "loss_tokens_per_step": loss_tokens,
        "reps": args.reps, "warmup_steps": 1,
        "tokens_per_s_counts": "all non-padding tokens of the batch per median step",
        "model_load_s": load_s,
        "ranks": ranks,
    }


# ----------------------------------------------------------------------------------------------
# Part: generation with transformers


def step_clock_processor(device="cpu"):
    """A logits processor that only records when it is called. generate calls the processors
    once per new token, right after that token's forward pass (the first call follows the
    prefill), so the time between the first and the last call is T-1 decode steps. On a GPU it
    waits for the forward pass first (generate waits once a step anyway, to test for the end)."""
    from transformers import LogitsProcessor

    class StepClock(LogitsProcessor):
        def __init__(self):
            self.stamps = []

        def __call__(self, input_ids, scores):
            sync(device)
            self.stamps.append(time.perf_counter())
            return scores

    return StepClock()


def run_generate(args, batch):
    import torch
    from transformers import GenerationConfig, LogitsProcessorList
    pad_id, eos_id, _ = token_specials(args)
    model, load_s = load_hf_model(args)
    model.eval()
    new = args.new_tokens
    # min_new_tokens = max_new_tokens: every row produces exactly T tokens (EOS is masked until
    # then), so the work is the same on both sides whatever the model would have said.
    # --decode-temperature > 0 samples (top-k and top-p off), as a PPO rollout does.
    sampled = args.decode_temperature > 0
    sampling = dict(do_sample=True, temperature=args.decode_temperature, top_k=0,
                    top_p=1.0) if sampled else dict(do_sample=False)
    config = GenerationConfig(use_cache=True, max_new_tokens=new, min_new_tokens=new,
                              pad_token_id=pad_id, eos_token_id=eos_id, **sampling)
    results = {}
    for size in args.gen_batches:
        ids, mask = (t.to(args.device) for t in left_pad(take_prompts(batch, size), pad_id))
        prompt_tokens = int(mask.sum())
        # Prefill: one forward pass over the whole prompt batch that builds the KV cache, with
        # logits for the last position only, which is what generate's own first step does
        # (logits_to_keep=1).
        prefill_times = []
        with torch.inference_mode():
            for rep in range(args.reps + 1):
                position_ids = (mask.cumsum(-1) - 1).clamp(min=0)
                sync(args.device)
                start = time.perf_counter()
                model(input_ids=ids, attention_mask=mask, position_ids=position_ids,
                      use_cache=True, logits_to_keep=1)
                sync(args.device)
                elapsed = time.perf_counter() - start
                if rep > 0:
                    prefill_times.append(elapsed)
        # Decode: generate's own steps, timed by the StepClock processor. Its first stamp comes
        # right after the prefill inside generate, its last after the T-th token's logits, so
        # decode time = last - first over T-1 single-token steps of the whole batch. (The
        # alternative, (generate time - prefill time) / (batch * (T-1)), is reported too as a
        # cross-check: it also charges generate's setup to decoding.)
        decode_times, generate_times, in_generate_prefill = [], [], []
        greedy = None
        with torch.inference_mode():
            for rep in range(args.reps + 1):
                torch.manual_seed(args.seed + rep)
                clock = step_clock_processor(args.device)
                sync(args.device)
                start = time.perf_counter()
                out = model.generate(input_ids=ids, attention_mask=mask, generation_config=config,
                                     logits_processor=LogitsProcessorList([clock]))
                end = time.perf_counter()
                if len(clock.stamps) != new or out.shape[1] != ids.shape[1] + new:
                    raise RuntimeError(f"generate made {out.shape[1] - ids.shape[1]} tokens in "
                                       f"{len(clock.stamps)} steps, expected {new}")
                if rep > 0:
                    decode_times.append(clock.stamps[-1] - clock.stamps[0])
                    generate_times.append(end - start)
                    in_generate_prefill.append(clock.stamps[0] - start)
                greedy = out[0, ids.shape[1]:].tolist()
        prefill_s, decode_s, generate_s = median(prefill_times), median(decode_times), median(
            generate_times)
        decode_steps = new - 1
        results[f"batch_{size}"] = {
            "batch": size, "prompt_shape": list(ids.shape), "new_tokens": new,
            "prefill_s": prefill_s, "prefill_tokens_per_s": prompt_tokens / prefill_s,
            "decode_s": decode_s,
            "decode_tokens_per_s": size * decode_steps / decode_s if decode_steps else None,
            "generate_s": generate_s,
            "decode_tokens_per_s_from_generate_minus_prefill":
                size * decode_steps / (generate_s - prefill_s)
                if decode_steps and generate_s > prefill_s else None,
            "prefill_inside_generate_s": median(in_generate_prefill),
            "greedy_ids_row0": greedy,
        }
        log(f"generate batch {size}: prefill {prefill_s:.3f} s, decode {decode_s:.3f} s")
    return {
        "framework": "transformers generate",
        "base_dtype": base_description(args),
        "attn_implementation": args.attn,
        "decoding": f"sampled at temperature {args.decode_temperature}" if sampled else "greedy",
        "method": "prefill: median time of one forward pass over the whole (left-padded) prompt "
                  "batch with use_cache and logits_to_keep=1; decode: inside generate (greedy or "
                  "sampled, use_cache, exactly T new tokens), time from the first to the last call of a "
                  "timestamping logits processor = T-1 single-token steps; tokens/s = "
                  "batch*(T-1)/that time. Median over reps after 1 warm-up.",
        "reps": args.reps, "model_load_s": load_s,
        "batches": results,
    }


# ----------------------------------------------------------------------------------------------
# Part: generation with llama.cpp


def run_llamacpp(args, batch):
    import llama_cpp
    import numpy as np
    from llama_cpp import Llama
    prompt = take_prompts(batch, 1)[0]
    new = args.new_tokens
    # The whole prompt goes through in one batch and one micro-batch, like the single forward
    # pass on the transformers side.
    n_batch = max(512, len(prompt))
    start = time.perf_counter()
    llm = Llama(model_path=str(args.gguf), n_ctx=len(prompt) + new + 8, n_threads=args.threads,
                n_threads_batch=args.threads, n_batch=n_batch, n_ubatch=n_batch,
                logits_all=False, verbose=False)
    load_s = time.perf_counter() - start
    vocab = llm.n_vocab()

    def last_logits():
        # With logits_all=False llama.cpp computes the logits of the last evaluated position
        # only, and llama-cpp-python (0.3.x) no longer copies them into `llm.scores` (its own
        # sampler reads them in C). So read them from the context: a view, no copy.
        return np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(llm.ctx, -1), shape=(vocab,))

    prefill_times, decode_times, greedy = [], [], None
    for rep in range(args.reps + 1):
        # reset() rewinds n_tokens to 0; eval() then drops the KV cache past that point and
        # writes the prompt's entries anew.
        llm.reset()
        start = time.perf_counter()
        llm.eval(prompt)
        next_id = int(np.argmax(last_logits()))
        prefill = time.perf_counter() - start
        # Decode: the first new token comes from the prefill's logits (as in generate); each of
        # the other T-1 is one single-token eval followed by a greedy pick.
        tokens = [next_id]
        start = time.perf_counter()
        for _ in range(new - 1):
            llm.eval([next_id])
            next_id = int(np.argmax(last_logits()))
            tokens.append(next_id)
        decode = time.perf_counter() - start
        if rep > 0:
            prefill_times.append(prefill)
            decode_times.append(decode)
        greedy = tokens
    prefill_s, decode_s = median(prefill_times), median(decode_times)
    log(f"llama.cpp batch 1: prefill {prefill_s:.3f} s, decode {decode_s:.3f} s")
    return {
        "framework": "llama.cpp via llama-cpp-python",
        "weights": "the GGUF's own Q4_1 (no dequantisation)",
        "note": "batch 1 only: llama-cpp-python's Llama evaluates one sequence",
        "method": "prefill: median time of llm.eval(prompt) (one batch, n_batch = n_ubatch = "
                  f"{n_batch}) plus the argmax of its logits; decode: timed loop of T-1 "
                  "single-token llm.eval + argmax; tokens/s = (T-1)/that time. Median over reps "
                  "after 1 warm-up.",
        "n_threads": args.threads, "n_ctx": len(prompt) + new + 8, "reps": args.reps,
        "model_load_s": load_s,
        "batches": {"batch_1": {
            "batch": 1, "prompt_tokens": len(prompt), "new_tokens": new,
            "prefill_s": prefill_s, "prefill_tokens_per_s": len(prompt) / prefill_s,
            "decode_s": decode_s,
            "decode_tokens_per_s": (new - 1) / decode_s if new > 1 else None,
            "greedy_ids_row0": greedy}},
    }


# ----------------------------------------------------------------------------------------------
# Part: PPO iteration (plain PyTorch + peft, the steps of TRL's PPO)


def trl_ppo_status():
    """Whether the installed TRL still has a PPOTrainer (it moved to trl.experimental.ppo in
    the 0.2x/1.0 line and is gone in later releases)."""
    import importlib.util
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # find_spec imports trl.experimental
    try:
        import trl
    except ImportError:
        return {"version": None, "ppo_trainer": None}
    where = None
    if importlib.util.find_spec("trl.experimental.ppo") is not None:
        where = "trl.experimental.ppo.PPOTrainer"
    elif "PPOTrainer" in dir(trl):
        where = "trl.PPOTrainer"
    return {"version": getattr(trl, "__version__", None), "ppo_trainer": where}


def stand_in_reward(texts):
    """A rule-based reward in [0, 1]: the share of up to three bracketed citations [n]. It
    stands in for citeforge's citation precision/recall, which is also a cheap text rule; the
    benchmark times the model work around it, not the reward."""
    return [min(len(re.findall(r"\[\d+\]", t)), 3) / 3.0 for t in texts]


def stand_in_reward_ids(responses, response_mask):
    """The stand-in reward of a model without a tokenizer (random weights): the share of even
    ids among each answer's tokens, in [0, 1]. citeforge's side computes the same."""
    even = ((responses % 2 == 0) & (response_mask > 0)).sum(-1).float()
    return even / response_mask.sum(-1).clamp(min=1).float()


def masked_mean(x, mask):
    return (x * mask).sum() / mask.sum().clamp(min=1)


def masked_whiten(x, mask):
    mean = masked_mean(x, mask)
    var = masked_mean((x - mean) ** 2, mask)
    return (x - mean) * (var + 1e-8).rsqrt() * mask


def run_ppo(args, batch):
    import torch
    from transformers import GenerationConfig
    trl_status = trl_ppo_status()
    pad_id, eos_id, tokenizer = token_specials(args)
    device = args.device
    model, load_s = load_hf_model(args)
    policy = with_lora(model, args.ppo_lora_r, args)
    policy.train()  # dropout 0: the scoring pass and the update compute the same thing
    hidden_size = model.config.hidden_size
    # A value head on the final (normed) hidden state, initialised as citeforge's is
    # (std 1/(hidden+1), so initial values are small against rewards in [0, 1]).
    value_head = torch.nn.Linear(hidden_size, 1).to(device)
    torch.nn.init.normal_(value_head.weight, std=1.0 / (hidden_size + 1))
    torch.nn.init.zeros_(value_head.bias)
    # The final norm's output is the hidden state the LM head reads; a forward hook keeps it
    # without asking for every layer's hidden states.
    captured = {}
    final_norm = policy.get_base_model().model.norm
    final_norm.register_forward_hook(lambda _m, _i, out: captured.__setitem__("h", out))

    params = [p for p in policy.parameters() if p.requires_grad] + list(value_head.parameters())
    # PPO settings: citeforge's defaults (docs/ppo.md), TRL's where they agree.
    temperature, clip, clip_value, value_coef, beta, gamma, lam = 0.7, 0.2, 0.2, 0.1, 0.05, 1.0, 0.95
    if args.model_dir:  # a random-weight batch file names its sampling temperature
        temperature = args.decode_temperature
    optimizer = torch.optim.AdamW(params, lr=1e-4, eps=1e-5)
    new = args.new_tokens
    prompts = take_prompts(batch, args.batch)
    prompt_ids, prompt_mask = (t.to(device) for t in left_pad(prompts, pad_id))
    width = prompt_ids.shape[1]
    gen_config = GenerationConfig(
        do_sample=True, temperature=temperature, top_k=0, top_p=1.0, use_cache=True,
        max_new_tokens=new, min_new_tokens=0 if args.ppo_allow_eos else new,
        pad_token_id=pad_id, eos_token_id=eos_id, output_logits=True, return_dict_in_generate=True)

    def forward(ids, mask):
        """Log-probs at temperature T of the response tokens and the values of the states
        before them. Only the last n+1 positions' logits are computed (logits_to_keep), as the
        n response tokens are predicted by positions width-1 .. width+n-2."""
        position_ids = (mask.cumsum(-1) - 1).clamp(min=0)
        out = policy(input_ids=ids, attention_mask=mask, position_ids=position_ids,
                     logits_to_keep=ids.shape[1] - width + 1)
        logits = out.logits[:, :-1].float() / temperature
        logp = torch.log_softmax(logits, -1).gather(-1, ids[:, width:, None]).squeeze(-1)
        values = value_head(captured.pop("h")[:, width - 1:-1].float()).squeeze(-1)
        return logp, values, logits

    def iteration(seed):
        timings = {}
        # 1. Rollout: sample one answer per prompt with the current policy (adapters on).
        sync(device)
        start = time.perf_counter()
        torch.manual_seed(seed)
        with torch.no_grad():
            out = policy.generate(input_ids=prompt_ids, attention_mask=prompt_mask,
                                  generation_config=gen_config)
        ids = out.sequences
        # Fewer than T columns when every row ended at EOS early (only with --ppo-allow-eos).
        responses = ids[:, width:]
        steps = responses.shape[1]
        # Tokens after the first EOS are padding (when EOS is allowed); the EOS itself counts.
        is_eos = responses == eos_id
        after_eos = (is_eos.cumsum(-1) - is_eos.long()) > 0
        response_mask = (~after_eos).long()
        # The sampler's log-prob of each drawn token under softmax(raw logits / T), for the
        # sampler-vs-learner check: the raw logits, not the processed scores, because with a
        # fixed length the min-new-tokens processor masks EOS, which the learner does not.
        sampler_logp = torch.stack([torch.log_softmax(l.float() / temperature, -1)
                                    for l in out.logits], 1) \
            .gather(-1, responses[:, :, None]).squeeze(-1)
        if tokenizer is None:
            scores = stand_in_reward_ids(responses, response_mask)
        else:
            texts = tokenizer.batch_decode(
                responses * response_mask + pad_id * (1 - response_mask), skip_special_tokens=True)
            scores = torch.tensor(stand_in_reward(texts), device=device)
        sync(device)
        timings["rollout_s"] = time.perf_counter() - start

        # 2. Scoring pass without gradients: policy log-probs and values, reference log-probs
        # with the adapter disabled, KL-shaped rewards, GAE, whitened advantages.
        start = time.perf_counter()
        mask = torch.cat([prompt_mask, response_mask], 1)
        rmask = response_mask.float()
        with torch.no_grad():
            old_logp, old_values, _ = forward(ids, mask)
            with policy.disable_adapter():
                ref_logp, _, _ = forward(ids, mask)
            kl = (old_logp - ref_logp) * rmask  # k1 per token
            rewards = -beta * kl
            last = response_mask.sum(-1) - 1
            rewards[torch.arange(len(last), device=device), last] += scores
            advantages = torch.zeros_like(rewards)
            running = torch.zeros(rewards.shape[0], device=device)
            for t in reversed(range(steps)):
                next_value = old_values[:, t + 1] * rmask[:, t + 1] if t + 1 < steps else 0.0
                delta = rewards[:, t] + gamma * next_value - old_values[:, t]
                running = (delta + gamma * lam * running) * rmask[:, t]
                advantages[:, t] = running
            returns = advantages + old_values
            advantages = masked_whiten(advantages, rmask)
        sync(device)
        timings["reference_value_s"] = time.perf_counter() - start
        gap = ((old_logp - sampler_logp).abs() * rmask).max().item()

        # 3. Update: ppo_epochs passes over shuffled minibatches; clipped policy loss +
        # value_coef x clipped value loss, gradient norm clipped to 1, AdamW.
        start = time.perf_counter()
        first_ratio_dev = None
        for _ in range(args.ppo_epochs):
            order = torch.randperm(ids.shape[0]).to(device)
            for begin in range(0, ids.shape[0], args.ppo_minibatch):
                mb = order[begin:begin + args.ppo_minibatch]
                logp, values, _ = forward(ids[mb], mask[mb])
                m = rmask[mb]
                ratio = torch.exp(logp - old_logp[mb])
                if first_ratio_dev is None:
                    first_ratio_dev = ((ratio - 1).abs() * m).max().item()
                adv = advantages[mb]
                policy_loss = masked_mean(
                    torch.max(-adv * ratio, -adv * ratio.clamp(1 - clip, 1 + clip)), m)
                clipped = old_values[mb] + (values - old_values[mb]).clamp(-clip_value, clip_value)
                value_loss = 0.5 * masked_mean(torch.max((values - returns[mb]) ** 2,
                                                         (clipped - returns[mb]) ** 2), m)
                loss = policy_loss + value_coef * value_loss
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(params, 1.0)
                optimizer.step()
        sync(device)
        timings["update_s"] = time.perf_counter() - start
        timings["total_s"] = timings["rollout_s"] + timings["reference_value_s"] + timings["update_s"]
        tokens = int(prompt_mask.sum() + response_mask.sum())
        checks = {"logprob_gap_max": gap, "first_ratio_deviation": first_ratio_dev,
                  "kl_mean": (kl.sum(-1)).mean().item(), "reward_mean": scores.mean().item(),
                  "response_tokens_mean": response_mask.sum(-1).float().mean().item()}
        return timings, tokens, checks

    runs = []
    for rep in range(args.reps + 1):  # iteration 0 warms up and is not counted
        timings, tokens, checks = iteration(args.seed + rep)
        log(f"ppo iteration {rep}{' (warm-up)' if rep == 0 else ''}: "
            f"{timings['total_s']:.3f} s, gap {checks['logprob_gap_max']:.2e}")
        if rep > 0:
            runs.append((timings, tokens, checks))
    parts = {k: median([r[0][k] for r in runs])
             for k in ("rollout_s", "reference_value_s", "update_s", "total_s")}
    tokens = median([r[1] for r in runs])
    return {
        "implementation": "plain PyTorch + peft, TRL-equivalent steps",
        "trl": trl_status,
        "why_not_trl": "the installed TRL has no PPOTrainer; the one in earlier releases (e.g. "
                       "trl 1.0.0's trl.experimental.ppo) takes a reward model and a separate "
                       "value model (a second backbone) as modules and runs its own episode loop, "
                       "which is not citeforge's iteration (rule reward, value head on the policy)"
        if not trl_status["ppo_trainer"] else "TRL's PPOTrainer needs a separate reward model and a separate value-model "
             "backbone and runs its own episode loop; citeforge's iteration has a rule reward "
             "and a value head on the policy, so the steps are written out instead",
        "base_dtype": base_description(args),
        "lora": {"r": args.ppo_lora_r, "alpha": LORA_ALPHA, "dropout": 0.0,
                 "target_modules": PROJECTIONS, "dtype": adapter_dtype(policy)},
        "settings": {"batch": args.batch, "minibatch": args.ppo_minibatch,
                     "ppo_epochs": args.ppo_epochs, "new_tokens": new,
                     "eos_allowed": args.ppo_allow_eos, "temperature": temperature, "top_p": 1.0,
                     "top_k": 0, "clip_range": clip, "clip_range_value": clip_value,
                     "value_coef": value_coef, "kl_coef": beta, "kl_estimator": "k1",
                     "gamma": gamma, "lambda": lam, "lr": 1e-4, "adam_eps": 1e-5,
                     "max_grad_norm": 1.0,
                     "reward": "stand-in rule reward (share of up to 3 [n] citations)"
                     if tokenizer is not None else
                     "stand-in rule reward on token ids (share of even ids)"},
        "prompt_shape": list(prompt_ids.shape),
        "steps": "rollout = generate (sampling) + decode + reward; reference_value = policy "
                 "log-probs + value head and reference log-probs (adapter disabled), both "
                 "without gradients, then KL-shaped rewards, GAE, whitening; update = "
                 "ppo_epochs x minibatch forward/backward/clip/AdamW",
        "reps": args.reps, "warmup_iterations": 1, "model_load_s": load_s,
        "median_s": parts,
        "share": {k: parts[k] / parts["total_s"] for k in ("rollout_s", "reference_value_s",
                                                            "update_s")},
        "tokens_per_iteration": tokens,
        "tokens_per_s": tokens / parts["total_s"],
        "checks_last_iteration": runs[-1][2],
    }


# ----------------------------------------------------------------------------------------------
# Driver


def fragment_leaves(fragment):
    """The per-part objects of a fragment (generation nests one per framework)."""
    for key, value in fragment.items():
        yield from (value.values() if key == "generate" else [value])


def run_one_part(args, batch, part):
    """Runs one part in this process; returns the JSON fragment that goes into the object, with
    the part's peak memory (see peak_memory_mib)."""
    import torch
    torch.set_num_threads(args.threads)
    reset_peak_memory(args.device)
    if part == "sft":
        fragment = {"sft_step": run_sft(args, batch)}
    elif part == "generate":
        fragment = {"generate": {"transformers": run_generate(args, batch)}}
    elif part == "ppo":
        fragment = {"ppo_iteration": run_ppo(args, batch)}
    else:
        raise ValueError(part)
    for leaf in fragment_leaves(fragment):
        leaf["peak_memory_mib"] = peak_memory_mib(args.device)
        leaf["peak_memory_kind"] = ("CUDA caching allocator, peak allocated bytes during the part"
                                    if is_cuda(args.device) else
                                    "peak RSS of the process (ru_maxrss)")
    if is_cuda(args.device):
        import gc
        gc.collect()
        torch.cuda.empty_cache()
    return fragment


def attach_rss(fragment):
    rss = peak_rss_mib()
    for leaf in fragment_leaves(fragment):
        leaf["peak_rss_mib"] = rss
    return fragment


def merge(into, fragment):
    for key, value in fragment.items():
        if key == "generate":
            into.setdefault("generate", {}).update(value)
        else:
            into[key] = value


def child_command(args, part, batch_file):
    cmd = [sys.executable, str(Path(__file__).resolve()), "--part", part,
           "--batch-file", str(batch_file), "--batch-source", args.batch_source]
    for name in ("gguf", "threads", "reps", "prompt_tokens", "new_tokens", "batch",
                 "ppo_lora_r", "ppo_epochs", "ppo_minibatch", "seed", "attn", "dtype"):
        cmd += ["--" + name.replace("_", "-"), str(getattr(args, name))]
    cmd += ["--gen-batches", ",".join(map(str, args.gen_batches)),
            "--lora-ranks", ",".join(map(str, args.lora_ranks))]
    if args.ppo_allow_eos:
        cmd.append("--ppo-allow-eos")
    return cmd


def greedy_agreement(result):
    """How many leading greedy tokens transformers (fp32 dequantised) and llama.cpp (Q4_1 with
    its quantised activations) share on prompt 0: a check that both sides ran the same model
    on the same ids, not a timing."""
    try:
        hf = result["generate"]["transformers"]["batches"]["batch_1"]["greedy_ids_row0"]
        cpp = result["generate"]["llama_cpp"]["batches"]["batch_1"]["greedy_ids_row0"]
    except KeyError:
        return None
    same = 0
    for a, b in zip(hf, cpp):
        if a != b:
            break
        same += 1
    return {"leading_tokens_equal": same, "of": min(len(hf), len(cpp))}


def parse_int_list(text):
    return [int(x) for x in text.split(",") if x.strip()]


def parse_parts(text):
    """`all`, or one or more parts, comma-separated (run in this process, in run order)."""
    if text == "all":
        return text
    parts = [p.strip() for p in text.split(",") if p.strip()]
    for part in parts:
        if part not in PARTS:
            raise argparse.ArgumentTypeError(
                f"unknown part '{part}' (expected all or a list of {', '.join(PARTS)})")
    return [p for p in PARTS if p in parts]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gguf", type=Path, default=DEFAULT_GGUF,
                        help="the model's GGUF (default: weights/SmolLM2-135M-Instruct.Q4_1.gguf)")
    parser.add_argument("--threads", type=int, default=os.cpu_count(),
                        help="torch.set_num_threads / OMP_NUM_THREADS and llama.cpp's n_threads")
    parser.add_argument("--reps", type=int, default=5, help="timed repetitions after 1 warm-up")
    parser.add_argument("--part", type=parse_parts, default="all",
                        help="all (each part in a fresh process) or a comma-separated list of "
                             f"{', '.join(PARTS)} run in this process")
    parser.add_argument("--batch-file", type=Path,
                        help='JSON {"sequences": [{"ids", "loss_mask"}], "prompts": [[ids]]}; '
                             'prompts are cycled when a batch needs more than the file has')
    parser.add_argument("--prompt-tokens", type=int, default=300,
                        help="prompt length of the synthetic prompts (generation, PPO)")
    parser.add_argument("--new-tokens", type=int, default=40,
                        help="new tokens per answer in generation and PPO rollouts")
    parser.add_argument("--batch", type=int, default=8,
                        help="SFT sequences (synthetic batch) and PPO prompts per iteration")
    parser.add_argument("--sft-prompt-tokens", type=int, default=300,
                        help="prompt part of each synthetic SFT sequence (no loss)")
    parser.add_argument("--answer-tokens", type=int, default=40,
                        help="answer part of each synthetic SFT sequence (loss)")
    parser.add_argument("--gen-batches", type=parse_int_list, default=[1, 32],
                        help="transformers generation batch sizes, comma-separated")
    parser.add_argument("--lora-ranks", type=parse_int_list, default=[16, 64],
                        help="SFT LoRA ranks, comma-separated")
    # PPO defaults as in experiments/bench/bench_ppo.cpp (r 64, 2 epochs, minibatch 8).
    parser.add_argument("--ppo-lora-r", type=int, default=64, help="PPO LoRA rank (alpha 16)")
    parser.add_argument("--ppo-epochs", type=int, default=2)
    parser.add_argument("--ppo-minibatch", type=int, default=8)
    parser.add_argument("--ppo-allow-eos", action="store_true",
                        help="let rollouts stop at EOS (default: exactly --new-tokens each, so "
                             "the work is fixed)")
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--dtype", default="float32", choices=("float32", "bfloat16"),
                        help="the dense base's dtype (LoRA adapters stay fp32, as peft keeps them)")
    parser.add_argument("--attn", default="sdpa", choices=("sdpa", "eager"),
                        help="transformers attention implementation")
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"),
                        help="where the model runs (cuda: --model-dir only)")
    parser.add_argument("--model-dir", type=Path, default=None,
                        help="an HF checkpoint directory to run instead of the GGUF (random "
                             "weights from --write-random-model; no tokenizer needed)")
    parser.add_argument("--decode-temperature", type=float, default=0.0,
                        help="generation part: 0 decodes greedily, above 0 samples")
    parser.add_argument("--lora-dtype", default="float32", choices=("float32", "base"),
                        help="LoRA adapters in fp32 (peft's default) or in the base's dtype")
    parser.add_argument("--write-random-model", type=Path, default=None, metavar="DIR",
                        help="write DIR/model (random weights of --shape) and DIR/batch.json, "
                             "then exit")
    parser.add_argument("--shape", choices=tuple(SHAPES), default="small",
                        help="the shape --write-random-model writes")
    # Set by --part all for its children: where the batch file's ids came from.
    parser.add_argument("--batch-source", default=None, help=argparse.SUPPRESS)
    # Internal: write the synthetic batch to this file and exit (see make_batch_file).
    parser.add_argument("--make-batch", type=Path, default=None, help=argparse.SUPPRESS)
    # Internal, set by --part all: write the JSON to this file instead of stdout.
    parser.add_argument("--json-out", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.gguf = args.gguf.expanduser().resolve()
    random_weights = args.model_dir or args.write_random_model
    if not random_weights and not args.gguf.is_file():
        raise SystemExit(f"no GGUF at {args.gguf}")
    if args.model_dir and not (args.model_dir / "config.json").is_file():
        raise SystemExit(f"--model-dir: no config.json in {args.model_dir}")
    if args.model_dir and (args.part == "all" or "llamacpp" in args.part):
        raise SystemExit("--model-dir: --part takes a list of sft, generate, ppo")
    if args.part != "all" and "llamacpp" in args.part and len(args.part) > 1:
        raise SystemExit("--part llamacpp runs alone: its process holds no torch")
    if is_cuda(args.device) and not random_weights:
        raise SystemExit("--device cuda needs --model-dir or --write-random-model")
    # Before torch is imported anywhere: its OpenMP pool reads this once.
    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    os.environ["MKL_NUM_THREADS"] = str(args.threads)
    if is_cuda(args.device):
        import torch
        if not torch.cuda.is_available():
            raise SystemExit("--device cuda: this torch sees no CUDA device")

    if args.write_random_model:
        write_random_model(args)
        return

    if args.make_batch:
        # Helper mode (see make_batch_file): write the synthetic batch and stop.
        args.make_batch.write_text(json.dumps(make_synthetic_batch(load_tokenizer(args.gguf), args)))
        return

    result = {"benchmark": "citeforge side-by-side, Python side", "threads": args.threads,
              "versions": package_versions(), "machine": machine_info(),
              "device": args.device, "dtype": args.dtype, "lora_dtype": args.lora_dtype,
              "model": {"dir": str(args.model_dir), "name": "random weights"} if args.model_dir
              else {"gguf": str(args.gguf), "name": "SmolLM2-135M-Instruct"},
              "peak_rss_method": "resource.getrusage(RUSAGE_SELF).ru_maxrss of the process that "
                                 "ran the part (a fresh one per part with --part all)"}
    if args.batch_file:
        batch = read_batch_file(args.batch_file)
        apply_batch_settings(args, batch)
        args.batch_source = args.batch_source or f"file {args.batch_file}"
    else:
        with tempfile.TemporaryDirectory() as tmp:
            make_batch_file(args, Path(tmp) / "batch.json")
            batch = read_batch_file(Path(tmp) / "batch.json")
        args.batch_source = (f"synthetic: fixed English text, {args.batch} SFT sequences of "
                             f"{args.sft_prompt_tokens} prompt + {args.answer_tokens} answer "
                             f"tokens, prompts of {args.prompt_tokens} tokens")
    result["batch"] = describe_batch(batch, args.batch_source)
    result["batch"].update({"new_tokens": args.new_tokens, "gen_batches": args.gen_batches,
                            "ppo_batch": args.batch})
    log(f"batch: {json.dumps(result['batch'])}")

    failed = False
    if args.part == "all":
        # Every part in a fresh process of this script, so its peak RSS is its own. The
        # children read the batch from a file so they all use the very same ids.
        with tempfile.TemporaryDirectory() as tmp:
            batch_file = Path(tmp) / "batch.json"
            batch_file.write_text(json.dumps(batch))
            for part in PARTS:
                log(f"--- part {part}")
                # The child writes its JSON to a file, so that anything a library prints on
                # stdout cannot corrupt it; its stdout is passed on to our stderr.
                part_json = Path(tmp) / f"{part}.json"
                proc = subprocess.run(child_command(args, part, batch_file)
                                      + ["--json-out", str(part_json)], stdout=sys.stderr)
                if proc.returncode != 0 or not part_json.is_file():
                    failed = True
                    result.setdefault("errors", {})[part] = f"exit status {proc.returncode}"
                    continue
                merge(result, {k: v for k, v in json.loads(part_json.read_text()).items()
                               if k in ("sft_step", "generate", "ppo_iteration")})
    elif args.part == ["llamacpp"]:
        # No torch in this process: llama.cpp's peak RSS is llama.cpp's.
        merge(result, attach_rss({"generate": {"llama_cpp": run_llamacpp(args, batch)}}))
    else:
        fragment = {}
        for part in args.part:
            log(f"--- part {part}")
            merge(fragment, run_one_part(args, batch, part))
        merge(result, attach_rss(fragment))
        if is_cuda(args.device):
            import torch
            result["machine"]["gpu"] = torch.cuda.get_device_name()
            result["versions"]["torch_cuda"] = torch.version.cuda
    agreement = greedy_agreement(result)
    if agreement:
        result["greedy_agreement_batch1_prompt0"] = agreement
    if args.json_out:
        args.json_out.write_text(json.dumps(result, indent=1))
    else:
        print(json.dumps(result, indent=1))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
