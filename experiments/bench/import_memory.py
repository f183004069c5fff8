#!/usr/bin/env python3
"""The memory a GGUF import needs, on a 7B-shaped file: `citeforge import gguf` is run on a
generated Llama GGUF of hidden 4096, 32 layers, 32 / 8 heads, MLP 14336 (Mistral-7B's blocks)
with SmolLM2-135M-Instruct's tokenizer (its 49,152-token vocabulary, so the embedding is
49152 x 4096), every matrix Q4_0 with random codes and random finite scales, norms F32. Its
/proc/PID/status is read every 20 ms: the peak of RssAnon (the process's own memory) and, apart,
of RssFile (pages of the mapped GGUF, which the kernel may drop at any time).

    python3 experiments/bench/import_memory.py --citeforge build/citeforge \
        --vocab-from weights/SmolLM2-135M-Instruct.Q4_1.gguf \
        --work /tmp/import_memory --out experiments/bench/results/import_memory_cpu.md

Needs the PyPI package `gguf` (for the vocabulary; scripts/reference_venv.sh has it) and about
19 GB of disk in --work (4.1 GB of GGUF, 14.6 GB of bf16 safetensors), removed afterwards unless
--keep.
"""
import argparse
import os
import platform
import shutil
import struct
import subprocess
import sys
import time

import numpy as np

HIDDEN, LAYERS, HEADS, KV_HEADS, FFN = 4096, 32, 32, 8, 14336
GGML_F32, GGML_Q4_0 = 0, 2
ALIGN = 32


def put_str(out, s):
    b = s.encode()
    out += struct.pack("<Q", len(b)) + b


def put_kv(out, key, vtype, value):
    put_str(out, key)
    out += struct.pack("<I", vtype)
    if vtype == 8:  # string
        put_str(out, value)
    elif vtype == 4:  # u32
        out += struct.pack("<I", value)
    elif vtype == 6:  # f32
        out += struct.pack("<f", value)
    elif vtype == 7:  # bool
        out += struct.pack("<B", 1 if value else 0)
    elif vtype == 9:  # array: (element type, items)
        etype, items = value
        out += struct.pack("<IQ", etype, len(items))
        for item in items:
            if etype == 8:
                put_str(out, item)
            elif etype == 5:  # i32
                out += struct.pack("<i", item)
    else:
        raise ValueError(vtype)


def vocabulary(path):
    from gguf import GGUFReader  # the reference reader, only for the tokenizer's fields

    reader = GGUFReader(path)

    def field(name):
        return reader.fields[name]

    def strings(name):
        f = field(name)
        return [bytes(f.parts[i]).decode() for i in f.data]

    def scalar(name):
        f = field(name)
        return int(f.parts[f.data[0]][0])

    return {
        "tokens": strings("tokenizer.ggml.tokens"),
        "merges": strings("tokenizer.ggml.merges"),
        "types": [int(field("tokenizer.ggml.token_type").parts[i][0])
                  for i in field("tokenizer.ggml.token_type").data],
        "bos": scalar("tokenizer.ggml.bos_token_id"),
        "eos": scalar("tokenizer.ggml.eos_token_id"),
        "pre": bytes(field("tokenizer.ggml.pre").parts[field("tokenizer.ggml.pre").data[0]]).decode(),
    }


def tensors(vocab_size):
    head_dim = HIDDEN // HEADS
    out = [("token_embd.weight", [HIDDEN, vocab_size], GGML_Q4_0),
           ("output_norm.weight", [HIDDEN], GGML_F32)]
    for i in range(LAYERS):
        b = f"blk.{i}."
        out += [(b + "attn_norm.weight", [HIDDEN], GGML_F32),
                (b + "ffn_norm.weight", [HIDDEN], GGML_F32),
                (b + "attn_q.weight", [HIDDEN, HEADS * head_dim], GGML_Q4_0),
                (b + "attn_k.weight", [HIDDEN, KV_HEADS * head_dim], GGML_Q4_0),
                (b + "attn_v.weight", [HIDDEN, KV_HEADS * head_dim], GGML_Q4_0),
                (b + "attn_output.weight", [HEADS * head_dim, HIDDEN], GGML_Q4_0),
                (b + "ffn_gate.weight", [HIDDEN, FFN], GGML_Q4_0),
                (b + "ffn_up.weight", [HIDDEN, FFN], GGML_Q4_0),
                (b + "ffn_down.weight", [FFN, HIDDEN], GGML_Q4_0)]
    return out


def nbytes(dims, ggml_type):
    count = int(np.prod(dims))
    return count * 4 if ggml_type == GGML_F32 else count // 32 * 18


def write_gguf(path, vocab):
    v = len(vocab["tokens"])
    head = bytearray(b"GGUF") + struct.pack("<I", 3)
    kvs = bytearray()
    meta = [("general.architecture", 8, "llama"), ("general.name", 8, "random 7B-shaped Llama"),
            ("llama.block_count", 4, LAYERS), ("llama.context_length", 4, 4096),
            ("llama.embedding_length", 4, HIDDEN), ("llama.feed_forward_length", 4, FFN),
            ("llama.attention.head_count", 4, HEADS), ("llama.attention.head_count_kv", 4, KV_HEADS),
            ("llama.rope.freq_base", 6, 10000.0),
            ("llama.attention.layer_norm_rms_epsilon", 6, 1e-5),
            ("tokenizer.ggml.model", 8, "gpt2"), ("tokenizer.ggml.pre", 8, vocab["pre"]),
            ("tokenizer.ggml.tokens", 9, (8, vocab["tokens"])),
            ("tokenizer.ggml.token_type", 9, (5, vocab["types"])),
            ("tokenizer.ggml.merges", 9, (8, vocab["merges"])),
            ("tokenizer.ggml.bos_token_id", 4, vocab["bos"]),
            ("tokenizer.ggml.eos_token_id", 4, vocab["eos"])]
    for key, vtype, value in meta:
        put_kv(kvs, key, vtype, value)
    infos = bytearray()
    offset = 0
    layout = tensors(v)
    for name, dims, ggml_type in layout:
        put_str(infos, name)
        infos += struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims)
        infos += struct.pack("<IQ", ggml_type, offset)
        offset += (nbytes(dims, ggml_type) + ALIGN - 1) // ALIGN * ALIGN
    head += struct.pack("<QQ", len(layout), len(meta)) + kvs + infos
    head += b"\0" * ((ALIGN - len(head) % ALIGN) % ALIGN)
    rng = np.random.default_rng(7)
    with open(path, "wb") as out:
        out.write(head)
        for name, dims, ggml_type in layout:
            size = nbytes(dims, ggml_type)
            if ggml_type == GGML_F32:
                data = (1.0 + 0.1 * rng.standard_normal(int(np.prod(dims)))).astype("<f4").tobytes()
            else:
                blocks = size // 18
                block = np.empty((blocks, 18), dtype=np.uint8)
                scales = rng.uniform(0.002, 0.02, blocks).astype("<f2")  # finite, as a model's
                block[:, :2] = scales.view(np.uint8).reshape(blocks, 2)
                block[:, 2:] = rng.integers(0, 256, (blocks, 16), dtype=np.uint8)
                data = block.tobytes()
            out.write(data)
            out.write(b"\0" * ((ALIGN - size % ALIGN) % ALIGN))
    return sum(int(np.prod(d)) for _, d, _ in layout)


def status_kib(pid, keys):
    values = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                key = line.split(":")[0]
                if key in keys:
                    values[key] = int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError):
        return None
    return values


def measure(command):
    keys = ("RssAnon", "RssFile", "VmHWM")
    peak = {k: 0 for k in keys}
    started = time.monotonic()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    while process.poll() is None:
        values = status_kib(process.pid, keys)
        if values:
            for k in keys:
                peak[k] = max(peak[k], values.get(k, 0))
        time.sleep(0.02)
    log = process.stdout.read()
    return process.returncode, time.monotonic() - started, peak, log


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--citeforge", default="build/citeforge")
    parser.add_argument("--vocab-from", default="weights/SmolLM2-135M-Instruct.Q4_1.gguf")
    parser.add_argument("--work", default="/tmp/import_memory")
    parser.add_argument("--dtype", default="source", help="the import's --dtype")
    parser.add_argument("--out", default="experiments/bench/results/import_memory_cpu.md")
    parser.add_argument("--keep", action="store_true", help="keep the GGUF and the import")
    args = parser.parse_args()

    os.makedirs(args.work, exist_ok=True)
    gguf = os.path.join(args.work, "llama-7b-shaped.Q4_0.gguf")
    imported = os.path.join(args.work, "imported")
    shutil.rmtree(imported, ignore_errors=True)
    vocab = vocabulary(args.vocab_from)
    t0 = time.monotonic()
    params = write_gguf(gguf, vocab)
    print(f"wrote {gguf}: {params / 1e9:.2f}B parameters, {os.path.getsize(gguf) / 1e9:.2f} GB "
          f"in {time.monotonic() - t0:.0f} s", file=sys.stderr)
    command = [args.citeforge, "import", "gguf", gguf, "--out", imported, "--dtype", args.dtype]
    rc, seconds, peak, log = measure(command)
    if rc != 0:
        sys.exit(f"import failed (exit {rc}):\n{log}")
    written = os.path.getsize(os.path.join(imported, "model.safetensors"))
    gib = 1024 ** 2  # KiB per GiB
    lines = [
        "# Memory of a GGUF import, 7B-shaped",
        "",
        f"Command: `python3 experiments/bench/import_memory.py --dtype {args.dtype}` "
        f"(`{' '.join(['citeforge'] + command[1:3] + ['FILE.gguf', '--out', 'DIR', '--dtype', args.dtype])}`"
        " under a reader of /proc/PID/status every 20 ms).",
        "",
        f"Machine: {cpu_name()}, {os.cpu_count()} logical CPUs, "
        f"{os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.0f} GiB.",
        "",
        f"The file: a Llama of hidden {HIDDEN}, {LAYERS} layers, {HEADS} / {KV_HEADS} heads, MLP "
        f"{FFN}, SmolLM2's vocabulary ({len(vocab['tokens'])} tokens; embedding tied), "
        f"{params / 1e9:.2f}B parameters: matrices Q4_0 with random codes and random finite scales "
        f"in [0.002, 0.02], norms F32; {os.path.getsize(gguf) / 1e9:.2f} GB.",
        "",
        "| measure | value |",
        "|---|---:|",
        f"| peak RssAnon (the process's own memory) | {peak['RssAnon'] / gib:.2f} GiB |",
        f"| peak RssFile (mapped file pages, reclaimable) | {peak['RssFile'] / gib:.2f} GiB |",
        f"| peak RSS (VmHWM, both) | {peak['VmHWM'] / gib:.2f} GiB |",
        f"| written model.safetensors | {written / 1e9:.2f} GB |",
        f"| wall time | {seconds:.0f} s |",
        "",
        f"Load average at the end: {' '.join(open('/proc/loadavg').read().split()[0:3])} (the wall time "
        "moves with what else runs; the peaks do not).",
        "",
        f"Counted, not run: the importer before the mapped, tensor-by-tensor conversion held the "
        f"whole file in memory, every tensor dequantised to fp32 ({params * 4 / 2**30:.1f} GiB "
        f"here) and then the serialised fp32 safetensors file (as much again) at once.",
        "",
    ]
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out, "w") as f:
        f.write("\n".join(lines))
    print("\n".join(lines))
    if not args.keep:
        shutil.rmtree(imported, ignore_errors=True)
        os.remove(gguf)


if __name__ == "__main__":
    main()
