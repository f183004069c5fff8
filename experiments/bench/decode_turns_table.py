#!/usr/bin/env python3
"""Prints the table of experiments/bench/decode_turns.sh's turns: per turn llama.cpp's batch-1
decode tokens/s and citeforge's (fused path, fp32 and bf16) with their ratios, then the median
ratio, how many turns reached llama.cpp in each dtype, and a one-sided sign test over the paired
turns: the chance of citeforge being faster in at least that many of them if neither side were
faster (turns of exactly equal speed left out). "Faster than llama.cpp" is said where it is below
0.05; single turns of a machine whose speed moves minute to minute fall either way.

    python3 experiments/bench/decode_turns_table.py OUT
"""
import json
import math
import statistics
import sys
from pathlib import Path


def sign_test(ratios):
    """(faster, paired turns, one-sided p): P(at least `faster` of n fair coin flips)."""
    faster = sum(r > 1 for r in ratios)
    n = sum(r != 1 for r in ratios)
    p = sum(math.comb(n, k) for k in range(faster, n + 1)) / 2 ** n if n else 1.0
    return faster, n, p


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    out = Path(sys.argv[1])
    rows, ratios = [], {"float32": [], "bfloat16": []}
    n = 1
    while (out / f"llamacpp_{n}.json").exists() and (out / f"citeforge_{n}.json").exists():
        try:
            llama = json.loads((out / f"llamacpp_{n}.json").read_text())
            ours = json.loads((out / f"citeforge_{n}.json").read_text())
            reference = llama["generate"]["llama_cpp"]["batches"]["batch_1"]["decode_tokens_per_s"]
            fused = {r["dtype"]: r["tokens_per_s"] for r in ours["rows"]
                     if r["batch"] == 1 and r["fused"]}
        except (OSError, ValueError, KeyError, TypeError) as e:
            print(f"{out}: turn {n}: unreadable ({e})", file=sys.stderr)
            return 1
        cells = [f"{n}", f"{reference:.1f}"]
        for dtype in ("float32", "bfloat16"):
            if dtype in fused:
                ratios[dtype].append(fused[dtype] / reference)
                cells += [f"{fused[dtype]:.1f}", f"{fused[dtype] / reference:.2f}x"]
            else:
                cells += ["-", "-"]
        rows.append(cells)
        n += 1
    if not rows:
        print(f"{out}: no turns (llamacpp_N.json and citeforge_N.json)", file=sys.stderr)
        return 1
    print("| turn | llama.cpp tokens/s | citeforge fp32 | ratio | citeforge bf16 | ratio |")
    print("|---|---|---|---|---|---|")
    for cells in rows:
        print("| " + " | ".join(cells) + " |")
    print()
    for dtype, label in (("float32", "fp32"), ("bfloat16", "bf16")):
        r = ratios[dtype]
        if r:
            print(f"{label}: median ratio {statistics.median(r):.2f}x, "
                  f"{sum(x >= 1 for x in r)} of {len(r)} turns at or above llama.cpp "
                  f"(range {min(r):.2f}x to {max(r):.2f}x)")
            faster, n, p = sign_test(r)
            verdict = "faster than llama.cpp" if p < 0.05 else "not shown faster than llama.cpp"
            print(f"{label}: sign test, faster in {faster} of {n} paired turns, one-sided "
                  f"p = {p:.4f}: {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
