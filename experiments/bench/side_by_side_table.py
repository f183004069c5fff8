#!/usr/bin/env python3
"""Turns the JSON of experiments/bench/side_by_side.sh's parts into the Markdown table with the
ratios (standard library only).

    side_by_side_table.py WORK_DIR COMMAND > side_by_side_cpu.md

WORK_DIR holds citeforge_{sft,generate,ppo}.json and python_{sft,generate,llamacpp,ppo}.json.
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


def main():
    work, command = Path(sys.argv[1]), sys.argv[2]
    cf_sft, cf_gen, cf_ppo = (load(work, f"citeforge_{p}") for p in ("sft", "generate", "ppo"))
    py_sft, py_gen, py_cpp, py_ppo = (load(work, f"python_{p}")
                                      for p in ("sft", "generate", "llamacpp", "ppo"))
    py_versions = py_sft.get("versions", {})
    rows = []  # (workload, citeforge, other, other name, speed-up cell)

    # SFT step: seconds per step; the Python base is fp32 (no NF4 on a CPU).
    sft_py = py_sft.get("sft_step", {})
    for r in (16, 64):
        py_s = sft_py.get("ranks", {}).get(f"r{r}", {}).get("median_step_s")
        for row in cf_sft.get("sft", {}).get("rows", []):
            if row["lora_r"] != r:
                continue
            base = "NF4 base (QLoRA)" if row["base"] == "nf4" else "fp32 base"
            rows.append((f"SFT step, LoRA r {r}, {base}: s/step", fmt(row["seconds"]), fmt(py_s),
                         "transformers + peft (fp32 base)",
                         ratio_cell(py_s / row["seconds"] if py_s else None, 1.5)))

    # Generation: tokens/s; a speed-up is citeforge's tokens/s over the other's.
    tr = py_gen.get("generate", {}).get("transformers", {}).get("batches", {})
    lc = py_cpp.get("generate", {}).get("llama_cpp", {}).get("batches", {})
    for row in cf_gen.get("generate", {}).get("rows", []):
        b, weights = row["batch"], row["weights"]
        for phase, key in (("prefill", "prefill_tokens_per_s"), ("decode", "decode_tokens_per_s")):
            mine = row[key]
            other = tr.get(f"batch_{b}", {}).get(key)
            target = 1.5 if (phase == "prefill" or b > 1) else None
            rows.append((f"{phase} batch {b}, citeforge {weights}: tokens/s", fmt(mine), fmt(other),
                         "transformers (fp32)",
                         ratio_cell(mine / other if other else None, target)))
            cpp = lc.get(f"batch_{b}", {}).get(key)
            if cpp:
                # The target for batch-1 decode is to be within 2x of llama.cpp (ratio >= 0.5).
                target = 0.5 if phase == "decode" else None
                rows.append((f"{phase} batch {b}, citeforge {weights}: tokens/s", fmt(mine),
                             fmt(cpp), "llama.cpp (Q4_1)", ratio_cell(mine / cpp, target)))

    # PPO iteration: seconds per iteration.
    ppo_py = py_ppo.get("ppo_iteration", {})
    py_total = ppo_py.get("median_s", {}).get("total_s")
    py_answer = ppo_py.get("checks_last_iteration", {}).get("response_tokens_mean")
    for row in cf_ppo.get("ppo", {}).get("rows", []):
        base = "NF4 base" if row["base"] == "nf4" else "fp32 base"
        rows.append((f"PPO iteration, LoRA r {row['lora_r']}, {base}: s (answer tokens: "
                     f"citeforge {fmt(row.get('answer_tokens_mean'))}, Python {fmt(py_answer)})",
                     fmt(row["seconds"]), fmt(py_total), "PyTorch + peft, TRL's steps (fp32 base)",
                     ratio_cell(py_total / row["seconds"] if py_total else None, 1.5)))

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
                   cf_sft.get("threads", "?"), cf_sft.get("reps", "?"),
                   cf_sft.get("sft", {}).get("tokens", "?"),
                   cf_sft.get("sft", {}).get("trained_tokens", "?"),
                   cf_gen.get("generate", {}).get("prompt_tokens", "?"),
                   cf_gen.get("generate", {}).get("new_tokens", "?"),
                   cf_ppo.get("ppo", {}).get("new_tokens", "?")))
    out.append("")
    out.append("| workload | citeforge | other | other side | speed-up of citeforge |")
    out.append("|---|---|---|---|---|")
    for r in rows:
        out.append("| %s | %s | %s | %s | %s |" % r)
    out.append("")
    out.append("Peak resident memory of each part's process (MiB):")
    out.append("")
    out.append("| part | citeforge | Python |")
    out.append("|---|---|---|")
    out.append("| SFT step (all rows) | %s | %s |" % (fmt(cf_sft.get("peak_rss_mib"), 4),
                                                    fmt(sft_py.get("peak_rss_mib"), 4)))
    out.append("| generation (citeforge: fp32 and NF4; transformers) | %s | %s |" % (
        fmt(cf_gen.get("peak_rss_mib"), 4),
        fmt(py_gen.get("generate", {}).get("transformers", {}).get("peak_rss_mib"), 4)))
    out.append("| generation, llama.cpp | – | %s |" % fmt(
        py_cpp.get("generate", {}).get("llama_cpp", {}).get("peak_rss_mib"), 4))
    out.append("| PPO iteration (citeforge: fp32 and NF4) | %s | %s |" % (
        fmt(cf_ppo.get("peak_rss_mib"), 4), fmt(ppo_py.get("peak_rss_mib"), 4)))
    out.append("")
    print("\n".join(out))


if __name__ == "__main__":
    main()
