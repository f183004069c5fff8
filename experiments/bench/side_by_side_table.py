#!/usr/bin/env python3
"""Turns the JSON of experiments/bench/side_by_side.sh's parts into the Markdown table with the
ratios (standard library only).

    side_by_side_table.py WORK_DIR COMMAND > side_by_side_cpu.md

WORK_DIR holds citeforge_{sft,generate,ppo}_{float32,bfloat16}.json,
python_{sft,generate,ppo}_{float32,bfloat16}.json and python_llamacpp.json.
A speed-up is the other side's time over citeforge's (above 1: citeforge is faster)."""

import json
import platform
import sys
from pathlib import Path


def load(work, name):
    path = work / f"{name}.json"
    return json.loads(path.read_text()) if path.exists() and path.stat().st_size else {}


def fmt(x, digits=3):
    """Three significant digits, without exponents (1010, 36.4, 0.135)."""
    if x is None:
        return "–"
    if abs(x) >= 10 ** digits:
        return f"{x:.0f}"
    return f"{float(f'{x:.{digits}g}'):g}"


def ratio_cell(r, target=None):
    if r is None:
        return "–"
    cell = f"{r:.2f}x"
    if target is not None:
        cell += " (target ≥ %.1fx: %s)" % (target, "met" if r >= target else "missed")
    return cell


def table(header, rows):
    """Markdown lines of a table with `header` and `rows` (tuples of cells)."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(row) + " |" for row in rows]


DTYPES = ("float32", "bfloat16")
SHORT = {"float32": "fp32", "bfloat16": "bf16"}


def main():
    if len(sys.argv) != 3 or not Path(sys.argv[1]).is_dir():
        sys.exit("usage: side_by_side_table.py WORK_DIR COMMAND (WORK_DIR: the parts' JSON)")
    work, command = Path(sys.argv[1]), sys.argv[2]
    cf = {(p, d): load(work, f"citeforge_{p}_{d}") for p in ("sft", "generate", "ppo") for d in DTYPES}
    py = {(p, d): load(work, f"python_{p}_{d}") for p in ("sft", "generate", "ppo") for d in DTYPES}
    py_cpp = load(work, "python_llamacpp")
    py_sft = py[("sft", "float32")]
    py_versions = py_sft.get("versions", {})
    # (workload, citeforge, Python same dtype, speed-up, Python fp32, speed-up vs fp32 Python)
    rows = []

    def add(workload, mine, same, fp32, target, faster_is_larger):
        def r(other):
            if not other or not mine:
                return None
            return mine / other if faster_is_larger else other / mine
        rows.append((workload, fmt(mine), fmt(same), ratio_cell(r(same), target), fmt(fp32),
                     ratio_cell(r(fp32))))

    # SFT step: seconds per step; the Python base is dense (no NF4 on a CPU).
    def sft_s(dtype, r):
        ranks = py[("sft", dtype)].get("sft_step", {}).get("ranks", {})
        return ranks.get(f"r{r}", {}).get("median_step_s")

    for dtype in DTYPES:
        for r in (16, 64):
            for row in cf[("sft", dtype)].get("sft", {}).get("rows", []):
                if row["lora_r"] != r:
                    continue
                base = "NF4 base (QLoRA)" if row["base"] == "nf4" else "dense base"
                add(f"SFT step, {SHORT[dtype]}, LoRA r {r}, {base}: s/step", row["seconds"],
                    sft_s(dtype, r), sft_s("float32", r), 1.5, False)

    # Generation: tokens/s; a speed-up is citeforge's tokens/s over the other's.
    def gen(dtype, b, key):
        batches = py[("generate", dtype)].get("generate", {}).get("transformers", {}).get(
            "batches", {})
        return batches.get(f"batch_{b}", {}).get(key)

    lc = py_cpp.get("generate", {}).get("llama_cpp", {}).get("batches", {})
    llama_rows = []
    for dtype in DTYPES:
        for row in cf[("generate", dtype)].get("generate", {}).get("rows", []):
            b, weights = row["batch"], ("NF4" if row["weights"] == "nf4" else "dense")
            for phase, key in (("prefill", "prefill_tokens_per_s"),
                               ("decode", "decode_tokens_per_s")):
                target = 1.5 if (phase == "prefill" or b > 1) else None
                add(f"{phase} batch {b}, {SHORT[dtype]}, {weights} weights: tokens/s", row[key],
                    gen(dtype, b, key), gen("float32", b, key), target, True)
                cpp = lc.get(f"batch_{b}", {}).get(key)
                if cpp:
                    # The target for batch-1 decode: within 2x of llama.cpp (ratio >= 0.5).
                    target = 0.5 if phase == "decode" else None
                    llama_rows.append((f"{phase} batch {b}, {SHORT[dtype]}, {weights} weights",
                                       fmt(row[key]), fmt(cpp), ratio_cell(row[key] / cpp, target)))

    # PPO iteration: seconds per iteration.
    def ppo(dtype):
        it = py[("ppo", dtype)].get("ppo_iteration", {})
        return (it.get("median_s", {}).get("total_s"),
                it.get("checks_last_iteration", {}).get("response_tokens_mean"))

    for dtype in DTYPES:
        for row in cf[("ppo", dtype)].get("ppo", {}).get("rows", []):
            base = "NF4 base" if row["base"] == "nf4" else "dense base"
            add(f"PPO iteration, {SHORT[dtype]}, LoRA r {row['lora_r']}, {base}: s (answer "
                f"tokens: citeforge {fmt(row.get('answer_tokens_mean'))}, Python "
                f"{fmt(ppo(dtype)[1])})", row["seconds"], ppo(dtype)[0], ppo("float32")[0], 1.5,
                False)

    cf_sft32, cf_gen32 = cf[("sft", "float32")], cf[("generate", "float32")]
    out = ["# citeforge next to the Python stack on a CPU", ""]
    out.append(f"Command: `{command}`. Model: SmolLM2-135M-Instruct (the GGUF of the embedded "
               "default). Machine: %s, %s logical CPUs, load average at the start of the Python "
               "side %s. Versions: %s." % (
                   py_sft.get("machine", {}).get("cpu", platform.processor() or "?"),
                   py_sft.get("machine", {}).get("logical_cpus", "?"),
                   py_sft.get("machine", {}).get("loadavg_at_start", "?"),
                   ", ".join(f"{k} {v}" for k, v in py_versions.items())))
    out.append("")
    out.append("Threads: %s on both sides; every number is the median of %s repetitions after "
               "a warm-up, each part in a fresh process. The same token ids on both sides "
               "(`--write-batch`): SFT on 8 of the demo's prompts with their teacher answers "
               "(%s tokens, %s of them answers that carry the loss); generation from prompts of "
               "%s tokens, %s new tokens, EOS never stopping a row; PPO on 8 prompts, %s new "
               "tokens at temperature 0.7, minibatch 4, one epoch." % (
                   cf_sft32.get("threads", "?"), cf_sft32.get("reps", "?"),
                   cf_sft32.get("sft", {}).get("tokens", "?"),
                   cf_sft32.get("sft", {}).get("trained_tokens", "?"),
                   cf_gen32.get("generate", {}).get("prompt_tokens", "?"),
                   cf_gen32.get("generate", {}).get("new_tokens", "?"),
                   cf[("ppo", "float32")].get("ppo", {}).get("new_tokens", "?")))
    out.append("")
    out.append("The Python side is transformers + peft for SFT and generation and PyTorch + peft "
               "running TRL's PPO steps for PPO, with its base in the row's dtype (LoRA "
               "adapters in fp32 on both sides); the last two columns compare with the Python "
               "stack in fp32, the setting the targets were first stated for.")
    out.append("")
    out += table(("workload", "citeforge", "Python, same dtype", "speed-up of citeforge",
                  "Python, fp32", "speed-up vs Python fp32"), rows)
    out.append("")
    out.append("Generation next to llama.cpp (llama-cpp-python) on the GGUF's own Q4_1 weights:")
    out.append("")
    out += table(("workload: tokens/s", "citeforge", "llama.cpp", "ratio"), llama_rows)
    out.append("")
    # Where citeforge's PPO iteration goes: the rollout, and of it the prompts' prefill (the
    # bench times generate with no new token on the same prompts), then the learner.
    phase_rows = []
    for dtype in DTYPES:
        part = cf[("ppo", dtype)].get("ppo", {})
        for row in part.get("rows", []):
            if "rollout_prefill_s" not in row:
                continue
            phase_rows.append((f"{SHORT[dtype]}, {'NF4' if row['base'] == 'nf4' else 'dense'} "
                               "base", fmt(row["rollout_s"]), fmt(row["rollout_prefill_s"]),
                               fmt(row["rollout_s"] - row["rollout_prefill_s"]),
                               fmt(row["learner_s"]), fmt(row["seconds"])))
    if phase_rows:
        ppo32 = cf[("ppo", "float32")].get("ppo", {})
        out.append("citeforge's PPO iteration by phase (s): the rollout's prefill is `generate` "
                   "with no new token on the same %s prompts (%s tokens, left-padded to %s "
                   "slots; the first %s tokens of every prompt are the same), timed after each "
                   "rollout; the rest of the rollout is its decoding steps and sampling:" % (
                       ppo32.get("batch", "?"), ppo32.get("prompt_tokens", "?"),
                       ppo32.get("prompt_slots", "?"), ppo32.get("prompt_shared_prefix", "?")))
        out.append("")
        out += table(("setting", "rollout", "of it prefill", "of it the rest", "learner",
                      "iteration"), phase_rows)
        out.append("")
    out.append("Peak resident memory of each part's process (MiB):")
    out.append("")
    rss_rows = []

    def rss(side, part, dtype, key):
        fragment = side[(part, dtype)].get(key, {}) if key else side[(part, dtype)]
        if part == "generate" and key:
            fragment = fragment.get("transformers", {})
        return fmt(fragment.get("peak_rss_mib"), 4)

    for label, part, key in (("SFT step (all its rows)", "sft", "sft_step"),
                             ("generation (dense and NF4; transformers)", "generate", "generate"),
                             ("PPO iteration (dense and NF4)", "ppo", "ppo_iteration")):
        rss_rows.append((label, rss(cf, part, "float32", None), rss(py, part, "float32", key),
                         rss(cf, part, "bfloat16", None), rss(py, part, "bfloat16", key)))
    rss_rows.append(("generation, llama.cpp", "–", fmt(
        py_cpp.get("generate", {}).get("llama_cpp", {}).get("peak_rss_mib"), 4), "–", "–"))
    out += table(("part", "citeforge fp32", "Python fp32", "citeforge bf16", "Python bf16"),
                 rss_rows)
    out.append("")
    print("\n".join(out))


if __name__ == "__main__":
    main()
